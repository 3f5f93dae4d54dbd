// The client with an injected fetch (as tests and edge runtimes give one): the requests it
// makes, and the answers it turns into errors.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ConvostoreClient, MemoryValidationError, NotFoundError, StorageError } from "@convostore/client";

function recorder(answer) {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, method: init.method, headers: init.headers, body: init.body && JSON.parse(init.body) });
    return answer(url, init);
  };
  return { calls, fetch };
}

const json = (status, body) =>
  new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json" },
  });

test("appendMessage: POST /conversations/{id}/messages with the token and a camelCase body", async () => {
  const { calls, fetch } = recorder(() => json(201, { messageId: "msg_1" }));
  const client = new ConvostoreClient({ baseUrl: "https://api.example.com/base/", token: "tok", fetch });
  const id = await client.appendMessage({
    conversationId: "a/b",
    role: "user",
    content: "hi",
    metadata: { source: "web" },
    userId: "u_1",
  });
  assert.equal(id, "msg_1");
  assert.equal(calls.length, 1);
  const [call] = calls;
  assert.equal(call.method, "POST");
  assert.equal(call.url, "https://api.example.com/base/conversations/a%2Fb/messages?userId=u_1");
  assert.equal(call.headers.Authorization, "Bearer tok");
  assert.equal(call.headers["Content-Type"], "application/json");
  assert.deepEqual(call.body, { role: "user", content: "hi", metadata: { source: "web" } });
});

test("getMessages: the query holds only what was given; '.' goes in the query", async () => {
  const { calls, fetch } = recorder(() => json(200, { items: [], nextCursor: null, previousCursor: null }));
  const client = new ConvostoreClient({ baseUrl: "http://h", fetch });
  await client.getMessages({ conversationId: ".", limit: 5, order: "desc", before: "m 1" });
  assert.equal(
    calls[0].url,
    "http://h/conversations/-/messages?limit=5&order=desc&before=m+1&conversationId=.",
  );
  assert.equal(calls[0].headers.Authorization, undefined);
  const page = await client.listConversations();
  assert.deepEqual(page, { items: [] });
  assert.equal(calls[1].url, "http://h/conversations");
});

test("searchMessages repeats role; the query goes as q", async () => {
  const { calls, fetch } = recorder(() => json(200, { items: [], nextCursor: null }));
  const client = new ConvostoreClient({ baseUrl: "http://h", fetch });
  await client.searchMessages({ query: 'order "a-1"', roles: ["user", "assistant"], limit: 5 });
  assert.equal(calls[0].url, "http://h/search/messages?q=order+%22a-1%22&role=user&role=assistant&limit=5");
});

test("a 5xx is a StorageError with the server's code; a 4xx without a JSON body keeps its status", async () => {
  let answer = json(503, { error: { code: "storage_unavailable", message: "the database is unavailable" } });
  const client = new ConvostoreClient({ baseUrl: "http://h", fetch: async () => answer });
  const unavailable = await client.me().catch((e) => e);
  assert.ok(unavailable instanceof StorageError);
  assert.equal(unavailable.status, 503);
  assert.equal(unavailable.code, "storage_unavailable");
  assert.equal(unavailable.message, "the database is unavailable");
  answer = new Response("<html>bad gateway</html>", { status: 502 });
  const gateway = await client.me().catch((e) => e);
  assert.ok(gateway instanceof StorageError);
  assert.equal(gateway.message, "the server answered 502");
  answer = new Response("nope", { status: 404 });
  assert.equal(await client.getConversation({ conversationId: "x" }), null);
  answer = new Response("nope", { status: 404 });
  assert.ok((await client.getMemoryStore({ memoryStoreId: "x" }).catch((e) => e)) instanceof NotFoundError);
  answer = json(422, { error: { code: "invalid_request", message: "role: bad", argument: "role" } });
  const invalid = await client.me().catch((e) => e);
  assert.ok(invalid instanceof MemoryValidationError);
  assert.equal(invalid.argument, "role");
});

test("a fetch that throws is a StorageError with the cause; an abort stays an abort", async () => {
  const cause = new TypeError("fetch failed");
  const failing = new ConvostoreClient({
    baseUrl: "http://h",
    fetch: async () => {
      throw cause;
    },
  });
  const error = await failing.me().catch((e) => e);
  assert.ok(error instanceof StorageError);
  assert.equal(error.cause, cause);
  assert.match(error.message, /GET \/me: the server cannot be reached \(fetch failed\)/);
  const abort = new DOMException("stopped", "AbortError");
  const aborting = new ConvostoreClient({
    baseUrl: "http://h",
    fetch: async () => {
      throw abort;
    },
  });
  assert.equal(await aborting.me().catch((e) => e), abort);
});

test("an answer that is not JSON is a StorageError", async () => {
  const client = new ConvostoreClient({
    baseUrl: "http://h",
    fetch: async () => new Response("{", { status: 200 }),
  });
  const error = await client.me().catch((e) => e);
  assert.ok(error instanceof StorageError);
  assert.match(error.message, /the answer is not JSON/);
});

test("an event stream whose data is not JSON is a StorageError, not a SyntaxError", async () => {
  const body = "retry: 5\n\nevent: message.created\nid: 1\ndata: {not json\n\n";
  const fetch = async () =>
    new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
  const client = new ConvostoreClient({ baseUrl: "http://h", fetch });
  const error = await client
    .events({ conversationId: "c" })
    .next()
    .catch((e) => e);
  assert.ok(error instanceof StorageError, String(error));
  assert.match(error.message, /the stream sent a message.created event that is not JSON/);
  assert.ok(error.cause instanceof SyntaxError);
});

test("an event stream that ends is resumed after its last id, with the stream's retry delay", async () => {
  const seen = [];
  const streams = [
    'retry: 5\n\nevent: message.created\nid: 1\ndata: {"seq":1,"kind":"message.created","createdAt":5,"messageId":"m1","message":null}\n\n',
    'event: conversation.deleted\nid: 0\ndata: {"conversationId":"c"}\n\n',
  ];
  const fetch = async (url, init) => {
    seen.push(init.headers["Last-Event-ID"]);
    return new Response(streams.shift() ?? "", { status: 200 });
  };
  const client = new ConvostoreClient({ baseUrl: "http://h", fetch });
  const stream = client.events({ conversationId: "c" });
  const first = (await stream.next()).value;
  const second = (await stream.next()).value;
  await stream.return();
  assert.deepEqual(first, { seq: 1, kind: "message.created", createdAt: 5, messageId: "m1", id: "1" });
  assert.deepEqual(second, { kind: "conversation.deleted", id: "0", conversationId: "c" });
  assert.deepEqual(seen, [undefined, "1"]);
});

test("a server that stays away: maxRetries reconnections in a row, then a StorageError", async () => {
  let calls = 0;
  const fetch = async () => {
    calls += 1;
    if (calls === 1) return new Response(": subscribed\n\n", { status: 200 });
    throw new TypeError("fetch failed");
  };
  const client = new ConvostoreClient({ baseUrl: "http://h", fetch });
  const error = await client
    .events({ conversationId: "c", maxRetries: 3, retryMs: 1 })
    .next()
    .catch((e) => e);
  assert.ok(error instanceof StorageError, String(error));
  assert.equal(error.cause.message, "fetch failed");
  assert.equal(calls, 1 + 4, "the stream, then the first try and 3 retries");
});
