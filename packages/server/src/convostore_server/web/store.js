// The page's one client of the server's API: @convostore/client (packages/client-ts, built
// into client/ by `npm run build:web`), with the bearer token the person signed in with. The
// token is kept in sessionStorage: it lasts as long as the tab and is never sent anywhere
// but to this server.

import { AuthenticationError, ConvostoreClient, ConvostoreError } from "./client/index.js";

export { ConversationNotFoundError, ConvostoreError } from "./client/index.js";

const TOKEN_KEY = "convostore-token";
/** The API is where the page is served from, one level up: /ui/ -> /, /api/ui/ -> /api/. */
const BASE = new URL("../", window.location.href).href;

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** The browser's fetch, never answered from its cache; a 401 anywhere signs the page out. */
async function fetchFresh(input, init) {
  const response = await fetch(input, { ...init, cache: "no-store" });
  if (response.status === 401) window.dispatchEvent(new CustomEvent("convostore:unauthenticated"));
  return response;
}

let client = null;
let clientToken = null;

/** The client for the token signed in with (a new one when the token changes). */
export function store() {
  const value = token.get() ?? "";
  if (client === null || clientToken !== value) {
    client?.close();
    client = new ConvostoreClient({ baseUrl: BASE, token: value, fetch: fetchFresh });
    clientToken = value;
  }
  return client;
}

/** Whether `error` is the server refusing the token. */
export function refusedToken(error) {
  return error instanceof AuthenticationError;
}

/** An error as the page words it: the message, and the server's code where it gave one. */
export function describe(error) {
  if (error instanceof ConvostoreError) return error.code ? `${error.message} (${error.code})` : error.message;
  return String(error?.message ?? error);
}
