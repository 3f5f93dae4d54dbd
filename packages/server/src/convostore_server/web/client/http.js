/** Requests to the server: URLs, the token, JSON bodies, and errors as the error classes. */
import { ClosedError, StorageError, errorFromResponse } from "./errors.js";
/** A client-chosen id as a path segment: percent-encoded (a `/` as `%2F`); `.` and `..`,
 * which URLs resolve away, go in the query under `name` and the segment is `-`. */
export function chosenId(name, id, query) {
    if (id === "." || id === "..") {
        query[name] = id;
        return "-";
    }
    return encodeURIComponent(id);
}
export function segment(id) {
    return encodeURIComponent(id);
}
export class Http {
    baseUrl;
    token;
    fetchImpl;
    headers;
    closed = false;
    /** The open event streams' stops, which `close()` pulls. */
    streams = new Set();
    constructor(baseUrl, token, fetchImpl, headers) {
        this.baseUrl = baseUrl.replace(/\/+$/, "");
        this.token = token;
        this.fetchImpl = fetchImpl;
        this.headers = headers;
    }
    url(path, query = {}) {
        const params = new URLSearchParams();
        for (const [key, value] of Object.entries(query)) {
            if (value === undefined)
                continue;
            if (Array.isArray(value))
                for (const v of value)
                    params.append(key, String(v));
            else
                params.append(key, String(value));
        }
        const search = params.toString();
        return `${this.baseUrl}${path}${search ? `?${search}` : ""}`;
    }
    /** The response of a request, or the error its answer stands for. */
    async send(method, path, options = {}) {
        if (this.closed)
            throw new ClosedError("the client is closed");
        const headers = { ...this.headers, ...options.headers };
        if (this.token !== undefined)
            headers["Authorization"] = `Bearer ${this.token}`;
        const init = { method, headers };
        if (options.json !== undefined) {
            headers["Content-Type"] = "application/json";
            init.body = options.json;
        }
        if (options.signal !== undefined)
            init.signal = options.signal;
        let response;
        try {
            response = await this.fetchImpl(this.url(path, options.query), init);
        }
        catch (cause) {
            if (isAbort(cause))
                throw cause;
            throw new StorageError(`${method} ${path}: the server cannot be reached (${describe(cause)})`, {
                cause,
            });
        }
        if (!response.ok)
            throw await failure(response);
        return response;
    }
    /** The JSON answer of a request (undefined for 204). */
    async json(method, path, options = {}) {
        const response = await this.send(method, path, options);
        if (response.status === 204)
            return undefined;
        try {
            return await response.json();
        }
        catch (cause) {
            if (isAbort(cause))
                throw cause;
            throw new StorageError(`${method} ${path}: the answer is not JSON (${describe(cause)})`, {
                status: response.status,
                cause,
            });
        }
    }
}
/** The error class of a refused request, from its status and JSON error body. */
export async function failure(response) {
    let body;
    try {
        body = await response.json();
    }
    catch {
        body = undefined;
    }
    return errorFromResponse(response.status, body);
}
export function isAbort(error) {
    return error instanceof Error && error.name === "AbortError";
}
function describe(cause) {
    if (cause instanceof Error) {
        const inner = cause.cause;
        const code = inner instanceof Error ? `: ${inner.message}` : "";
        return `${cause.message}${code}`;
    }
    return String(cause);
}
