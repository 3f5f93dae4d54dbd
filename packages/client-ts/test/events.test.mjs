// Live events from the server's SSE stream, and the reconnection with Last-Event-ID.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { ConvostoreClient, EventParser, MemoryValidationError } from "@convostore/client";
import { newId, pgUnreachable, startOn } from "./served.mjs";

const pgSkip = pgUnreachable();

/** The next `n` events of an iterator. */
async function take(iterator, n) {
  const out = [];
  while (out.length < n) {
    const { value, done } = await iterator.next();
    if (done) break;
    out.push(value);
  }
  return out;
}

for (const backend of ["sqlite", "postgresql"]) {
  describe(`on ${backend}`, { skip: backend === "postgresql" ? (pgSkip ?? false) : false }, () => {
    let server;
    let alice;

    before(async () => {
      server = await startOn(backend);
      alice = new ConvostoreClient({ baseUrl: server.base, token: server.tokens.alice });
    });

    after(async () => {
      await server?.stop();
    });

    test("events() yields every change of the conversation, whoever writes it", async () => {
      const conversationId = newId("live");
      const messageId = await alice.appendMessage({ conversationId, role: "user", content: "before" });
      const stream = alice.events({ conversationId, after: 0 });
      const [created] = await take(stream, 1);
      assert.equal(created.kind, "message.created");
      assert.equal(created.messageId, messageId);
      assert.equal(created.message.content, "before");
      assert.equal(created.id, String(created.seq));
      // Each event carries the message (or conversation) as it is when the server reads it:
      // read each one before the next write.
      await alice.updateMessage({ conversationId, messageId, content: "edited" });
      const [updated] = await take(stream, 1);
      await alice.updateConversation({ conversationId, metadata: { title: "T" } });
      const [meta] = await take(stream, 1);
      await alice.deleteMessage({ conversationId, messageId });
      const [deleted] = await take(stream, 1);
      assert.equal(updated.kind, "message.updated");
      assert.equal(updated.message.content, "edited");
      assert.equal(typeof updated.message.updatedAt, "number");
      assert.equal(meta.kind, "conversation.updated");
      assert.deepEqual(meta.conversation.metadata, { title: "T" });
      assert.equal(deleted.kind, "message.deleted");
      assert.equal(deleted.message, undefined);
      await alice.deleteConversation({ conversationId });
      const [gone] = await take(stream, 1);
      assert.deepEqual(gone, { kind: "conversation.deleted", id: "0", conversationId });
      await stream.return();
    });

    test("a broken connection is resumed with Last-Event-ID: nothing lost, nothing twice", async () => {
      const conversationId = newId("resume");
      const requests = [];
      let cut = true;
      // A fetch that ends the first event stream after its first event, as a dropped connection.
      const fetch = async (url, init) => {
        requests.push({ url, lastEventId: init.headers["Last-Event-ID"] });
        const response = await globalThis.fetch(url, init);
        if (!url.includes("/events") || !cut) return response;
        cut = false;
        const reader = response.body.getReader();
        let seen = "";
        const body = new ReadableStream({
          async pull(controller) {
            const { value, done } = await reader.read();
            if (done) return controller.close();
            controller.enqueue(value);
            seen += new TextDecoder().decode(value);
            if (/\bid: ?[1-9]\d*\r?\n/.test(seen)) {
              await reader.cancel();
              controller.close();
            }
          },
        });
        return new Response(body, { status: response.status, headers: response.headers });
      };
      const client = new ConvostoreClient({ baseUrl: server.base, token: server.tokens.alice, fetch });
      const states = [];
      const stream = client.events({ conversationId, after: 0, onState: (state) => states.push(state) });
      const ids = [await alice.appendMessage({ conversationId, role: "user", content: "one" })];
      const events = await take(stream, 1); // then the first connection ends
      for (const content of ["two", "three"]) {
        ids.push(await alice.appendMessage({ conversationId, role: "user", content }));
      }
      events.push(...(await take(stream, 2)));
      await stream.return();
      assert.deepEqual(
        events.map((e) => e.messageId),
        ids,
      );
      const streams = requests.filter((r) => r.url.includes("/events"));
      assert.equal(streams.length, 2, "one reconnection");
      assert.equal(streams[0].lastEventId, "0");
      assert.equal(streams[1].lastEventId, events[0].id);
      assert.deepEqual(states, ["live", "reconnecting", "live"]);
    });

    test("onState says when the server has taken the subscription: a write after it is never missed", async () => {
      const conversationId = newId("opened");
      let live;
      const opened = new Promise((resolve) => (live = resolve));
      const stream = alice.events({ conversationId, onState: (state) => state === "live" && live() });
      const first = stream.next(); // connects
      await opened;
      const messageId = await alice.appendMessage({ conversationId, role: "user", content: "right after" });
      assert.equal((await first).value.messageId, messageId);
      await stream.return();
    });

    test("an AbortSignal ends the iteration", async () => {
      const controller = new AbortController();
      const stream = alice.events({ conversationId: newId("abort"), signal: controller.signal });
      const pending = stream.next();
      setTimeout(() => controller.abort(), 100);
      assert.deepEqual(await pending, { value: undefined, done: true });
    });

    test("close() ends the open event streams", async () => {
      const client = new ConvostoreClient({ baseUrl: server.base, token: server.tokens.alice });
      const stream = client.events({ conversationId: newId("closing") });
      const pending = stream.next();
      setTimeout(() => client.close(), 100);
      assert.deepEqual(await pending, { value: undefined, done: true });
      assert.deepEqual(await client.events({ conversationId: "c" }).next(), { value: undefined, done: true });
    });

    test("a refused subscription is thrown, not retried", async () => {
      const stranger = new ConvostoreClient({ baseUrl: server.base, token: "wrong" });
      await assert.rejects(stranger.events({ conversationId: "c" }).next(), { name: "AuthenticationError" });
      assert.throws(() => alice.events({ conversationId: "c", after: -1 }), MemoryValidationError);
      const resumed = alice.events({ conversationId: "c", after: "x" });
      await assert.rejects(resumed.next(), {
        name: "MemoryValidationError",
        argument: "Last-Event-ID",
        status: 400,
      });
    });
  });
}

test("EventParser follows the SSE rules: CRLF, comments, multi-line data, ids, retry", () => {
  const parser = new EventParser();
  const text = ": subscribed\r\nretry: 1000\r\n\r\nevent: a\r\ndata: 1\r\ndata:2\r\nid: 7\r\n\r\ndata: x\n\n";
  const events = [];
  for (const ch of text) events.push(...parser.feed(ch)); // split anywhere, even inside \r\n
  assert.deepEqual(events, [
    { event: "a", data: "1\n2", id: "7" },
    { event: "message", data: "x", id: "7" },
  ]);
  assert.equal(parser.retry, 1000);
});
