// The server's JSON API, called with the bearer token the person signed in with. The token is
// kept in sessionStorage: it lasts as long as the tab and is never sent anywhere but here.

const TOKEN_KEY = "convostore-token";
/** The API is where the page is served from, one level up: /ui/ -> /, /api/ui/ -> /api/. */
export const BASE = new URL("../", window.location.href);

export class ApiError extends Error {
  constructor(status, body) {
    const detail = body && body.error ? body.error : {};
    super(detail.message || `the server answered ${status}`);
    this.status = status;
    this.code = detail.code || "http_error";
  }
}

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** A path segment: an id holding '/' (claude/...) is sent as %2F, as the server expects. */
export const seg = (id) => encodeURIComponent(id);

/** Ids a path segment cannot carry: URLs resolve "." and ".." away, even as %2E. */
const DOT_SEGMENTS = new Set([".", ".."]);

/** A conversation's API path (with `rest` after it) and the query it needs: an id a path
 * segment cannot carry goes in the query, the path holding "-" (the server reads it there). */
export function conversationPath(id, rest = "") {
  if (DOT_SEGMENTS.has(id)) return [`/conversations/-${rest}`, { conversationId: id }];
  return [`/conversations/${seg(id)}${rest}`, {}];
}

export function url(path, params = {}) {
  const u = new URL(path.replace(/^\//, ""), BASE);
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") u.searchParams.set(name, value);
  }
  return u;
}

export function authHeaders(extra = {}) {
  return { Authorization: `Bearer ${token.get() ?? ""}`, ...extra };
}

/** Call the API: the decoded JSON answer, null for 204, an ApiError for any error status. */
export async function api(path, { method = "GET", params, body, signal } = {}) {
  const headers = authHeaders(body === undefined ? {} : { "Content-Type": "application/json" });
  const response = await fetch(url(path, params), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    cache: "no-store",
  });
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const error = new ApiError(response.status, data);
    if (response.status === 401) window.dispatchEvent(new CustomEvent("convostore:unauthenticated"));
    throw error;
  }
  return data;
}
