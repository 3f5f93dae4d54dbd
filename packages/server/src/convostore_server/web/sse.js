// A conversation's live events (Server-Sent Events) read with fetch and a stream reader:
// EventSource cannot send the Authorization header. Reconnects after a drop with the last
// event id (Last-Event-ID), so nothing is missed.

import { ApiError, authHeaders, url } from "./api.js";

/** Parse an event stream, calling `dispatch({event, id, data})` for each event, `onRetry(ms)`
 * for a retry field and `onId(id)` for each id field (the point to resume from). */
export async function readEvents(body, dispatch, onRetry, onId = () => {}) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let event = { data: [] };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    // A '\r' at the end may be the first half of '\r\n': keep it for the next chunk.
    const end = buffer.endsWith("\r") ? buffer.length - 1 : buffer.length;
    const lines = buffer.slice(0, end).split(/\r\n|\r|\n/);
    buffer = lines.pop() + buffer.slice(end);
    for (const line of lines) {
      if (line === "") {
        if (event.id !== undefined) onId(event.id); // an id alone moves the resume point too
        if (event.data.length) {
          dispatch({ event: event.event || "message", id: event.id, data: event.data.join("\n") });
        }
        event = { data: [] };
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let text = colon < 0 ? "" : line.slice(colon + 1);
      if (text.startsWith(" ")) text = text.slice(1);
      if (field === "data") event.data.push(text);
      else if (field === "event") event.event = text;
      else if (field === "id") event.id = text;
      else if (field === "retry" && /^\d+$/.test(text)) onRetry(Number(text));
    }
  }
}

/**
 * Subscribe to `path` (with the query `params`): `onEvent({event, id, data})` for each event
 * (data parsed from JSON),
 * `onState("live" | "reconnecting" | "closed", error, reconnected)`: after a reconnection,
 * what happened while away comes as events only if an event id had been received before;
 * a view re-reads what it shows then. `opened` settles once the server
 * has taken the subscription (from then on nothing is missed); `close()` ends it.
 */
export function subscribe(path, { onEvent, onState, params = {} }) {
  const controller = new AbortController();
  let lastId = null;
  let retry = 1000;
  let closed = false;
  let reconnected = false; // false for the first connection
  let settle;
  const opened = new Promise((resolve, reject) => {
    settle = { resolve, reject };
  });

  async function connect() {
    const headers = authHeaders({ Accept: "text/event-stream" });
    if (lastId !== null) headers["Last-Event-ID"] = lastId;
    const response = await fetch(url(path, params), { headers, signal: controller.signal, cache: "no-store" });
    if (!response.ok) {
      throw new ApiError(response.status, await response.json().catch(() => null));
    }
    settle.resolve();
    onState("live", null, reconnected);
    reconnected = true;
    await readEvents(
      response.body,
      (raw) => {
        let data = raw.data;
        try {
          data = JSON.parse(raw.data);
        } catch {
          // not JSON: passed on as text
        }
        onEvent({ event: raw.event, id: raw.id, data });
      },
      (ms) => {
        retry = ms;
      },
      (id) => {
        lastId = id;
      },
    );
  }

  (async () => {
    while (!closed) {
      try {
        await connect();
      } catch (error) {
        if (closed || error.name === "AbortError") break;
        if (error instanceof ApiError && error.status < 500) {
          settle.reject(error); // refused (not found, unauthenticated): retrying cannot help
          onState("closed", error);
          return;
        }
      }
      if (closed) break;
      onState("reconnecting");
      await new Promise((resolve) => setTimeout(resolve, retry));
    }
    settle.resolve();
  })();

  return {
    opened,
    close() {
      closed = true;
      controller.abort();
    },
  };
}
