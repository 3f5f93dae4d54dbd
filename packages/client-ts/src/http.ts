/** Requests to the server: URLs, the token, JSON bodies, and errors as the error classes. */

import { ClosedError, ConvostoreError, StorageError, errorFromResponse } from "./errors.js";

export type Fetch = (input: string, init?: RequestInit) => Promise<Response>;

export type Query = Record<string, string | number | readonly string[] | undefined>;

export interface RequestOptions {
  query?: Query;
  /** The request's JSON body, encoded (`encodeObject`). */
  json?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
}

/** A client-chosen id as a path segment: percent-encoded (a `/` as `%2F`); `.` and `..`,
 * which URLs resolve away, go in the query under `name` and the segment is `-`. */
export function chosenId(name: string, id: string, query: Query): string {
  if (id === "." || id === "..") {
    query[name] = id;
    return "-";
  }
  return encodeURIComponent(id);
}

export function segment(id: string): string {
  return encodeURIComponent(id);
}

export class Http {
  readonly baseUrl: string;
  private readonly token: string | undefined;
  private readonly fetchImpl: Fetch;
  private readonly headers: Record<string, string>;
  closed = false;
  /** The open event streams' stops, which `close()` pulls. */
  readonly streams = new Set<AbortController>();

  constructor(baseUrl: string, token: string | undefined, fetchImpl: Fetch, headers: Record<string, string>) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.token = token;
    this.fetchImpl = fetchImpl;
    this.headers = headers;
  }

  url(path: string, query: Query = {}): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) {
      if (value === undefined) continue;
      if (Array.isArray(value)) for (const v of value) params.append(key, String(v));
      else params.append(key, String(value));
    }
    const search = params.toString();
    return `${this.baseUrl}${path}${search ? `?${search}` : ""}`;
  }

  /** The response of a request, or the error its answer stands for. */
  async send(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    if (this.closed) throw new ClosedError("the client is closed");
    const headers: Record<string, string> = { ...this.headers, ...options.headers };
    if (this.token !== undefined) headers["Authorization"] = `Bearer ${this.token}`;
    const init: RequestInit = { method, headers };
    if (options.json !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = options.json;
    }
    if (options.signal !== undefined) init.signal = options.signal;
    let response: Response;
    try {
      response = await this.fetchImpl(this.url(path, options.query), init);
    } catch (cause) {
      if (isAbort(cause)) throw cause;
      throw new StorageError(`${method} ${path}: the server cannot be reached (${describe(cause)})`, {
        cause,
      });
    }
    if (!response.ok) throw await failure(response);
    return response;
  }

  /** The JSON answer of a request (undefined for 204). */
  async json(method: string, path: string, options: RequestOptions = {}): Promise<unknown> {
    const response = await this.send(method, path, options);
    if (response.status === 204) return undefined;
    try {
      return await response.json();
    } catch (cause) {
      if (isAbort(cause)) throw cause;
      throw new StorageError(`${method} ${path}: the answer is not JSON (${describe(cause)})`, {
        status: response.status,
        cause,
      });
    }
  }
}

/** The error class of a refused request, from its status and JSON error body. */
export async function failure(response: Response): Promise<ConvostoreError> {
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    body = undefined;
  }
  return errorFromResponse(response.status, body);
}

export function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === "AbortError";
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = (cause as { cause?: unknown }).cause;
    const code = inner instanceof Error ? `: ${inner.message}` : "";
    return `${cause.message}${code}`;
  }
  return String(cause);
}
