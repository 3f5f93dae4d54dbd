/**
 * A conversation's live events: the server's Server-Sent Events read with `fetch` and a
 * stream reader (`EventSource` cannot send the token's header), resumed with `Last-Event-ID`
 * whenever the connection ends.
 */
import { StorageError } from "./errors.js";
import { isAbort } from "./http.js";
import * as wire from "./wire.js";
/** Server-Sent Events parsing (the HTML standard's rules): feed text, get whole events. */
export class EventParser {
    buffer = "";
    data = [];
    event = "";
    id;
    /** The `retry:` field's delay, when the stream set one. */
    retry;
    constructor(lastId) {
        this.id = lastId;
    }
    feed(text) {
        this.buffer += text;
        const out = [];
        for (;;) {
            const match = /\r\n|\r|\n/.exec(this.buffer);
            // A lone \r at the end may be the first half of \r\n: wait for more.
            if (match === null || (match[0] === "\r" && match.index === this.buffer.length - 1))
                break;
            const line = this.buffer.slice(0, match.index);
            this.buffer = this.buffer.slice(match.index + match[0].length);
            const event = this.line(line);
            if (event !== undefined)
                out.push(event);
        }
        return out;
    }
    line(line) {
        if (line === "") {
            const data = this.data;
            const event = this.event;
            this.data = [];
            this.event = "";
            if (data.length === 0)
                return undefined;
            return { event: event || "message", data: data.join("\n"), id: this.id };
        }
        if (line.startsWith(":"))
            return undefined;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" "))
            value = value.slice(1);
        if (field === "data")
            this.data.push(value);
        else if (field === "event")
            this.event = value;
        else if (field === "id" && !value.includes("\u0000"))
            this.id = value;
        else if (field === "retry" && /^[0-9]+$/.test(value))
            this.retry = Number(value);
        return undefined;
    }
}
/** A stream event as the client gives it. */
export function toEvent(raw) {
    const data = JSON.parse(raw.data);
    const id = raw.id ?? "";
    if (raw.event === "conversation.deleted") {
        return { kind: "conversation.deleted", id, conversationId: String(data["conversationId"]) };
    }
    const event = { ...data, id };
    if (data["message"] == null)
        delete event["message"];
    else
        event["message"] = wire.message(data["message"]);
    if (data["conversation"] == null)
        delete event["conversation"];
    else
        event["conversation"] = wire.conversation(data["conversation"]);
    if (data["messageId"] == null)
        delete event["messageId"];
    return event;
}
function parsed(raw, path) {
    try {
        return toEvent(raw);
    }
    catch (cause) {
        throw new StorageError(`GET ${path}: the stream sent a ${raw.event} event that is not JSON`, { cause });
    }
}
function sleep(ms, signal) {
    return new Promise((resolve) => {
        if (signal.aborted)
            return resolve();
        const timer = setTimeout(done, ms);
        function done() {
            clearTimeout(timer);
            signal.removeEventListener("abort", done);
            resolve();
        }
        signal.addEventListener("abort", done);
    });
}
/** The events of `path`, reconnecting with `Last-Event-ID` until the caller stops (a
 * `break`, or `signal`). A refusal (4xx) is thrown; a failure to reconnect `maxRetries` times
 * in a row is thrown as a StorageError. */
export async function* streamEvents(http, path, query, options = {}) {
    const stop = new AbortController();
    const outer = options.signal;
    const forward = () => stop.abort();
    if (outer?.aborted || http.closed)
        return;
    outer?.addEventListener("abort", forward);
    http.streams.add(stop);
    let lastId = options.after === undefined ? undefined : String(options.after);
    let retryMs = options.retryMs ?? 1000;
    const maxRetries = options.maxRetries ?? 5;
    let failures = 0;
    try {
        while (!stop.signal.aborted) {
            let response;
            try {
                const headers = { Accept: "text/event-stream" };
                if (lastId !== undefined)
                    headers["Last-Event-ID"] = lastId;
                response = await http.send("GET", path, { query, headers, signal: stop.signal });
            }
            catch (error) {
                if (stop.signal.aborted || isAbort(error))
                    return;
                if (!(error instanceof StorageError) || ++failures > maxRetries)
                    throw error;
                options.onState?.("reconnecting");
                await sleep(retryMs, stop.signal);
                continue;
            }
            failures = 0;
            options.onState?.("live");
            const parser = new EventParser(lastId);
            const body = response.body;
            if (body === null)
                throw new StorageError(`GET ${path}: the event stream has no body`);
            const reader = body.pipeThrough(new TextDecoderStream()).getReader();
            try {
                for (;;) {
                    let chunk;
                    try {
                        chunk = await reader.read();
                    }
                    catch (error) {
                        if (stop.signal.aborted || isAbort(error))
                            return;
                        break; // the connection broke: resume after the last event received
                    }
                    if (chunk.done)
                        break;
                    for (const raw of parser.feed(chunk.value)) {
                        const event = parsed(raw, path);
                        lastId = raw.id;
                        yield event;
                    }
                }
            }
            finally {
                reader.cancel().catch(() => undefined);
            }
            retryMs = parser.retry ?? retryMs;
            if (stop.signal.aborted)
                return;
            options.onState?.("reconnecting");
            await sleep(retryMs, stop.signal);
        }
    }
    finally {
        outer?.removeEventListener("abort", forward);
        http.streams.delete(stop);
        stop.abort();
    }
}
