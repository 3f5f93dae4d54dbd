// The reference's conversation and message API, driven against a real convostore-server on
// SQLite and on PostgreSQL (a schema of its own; skipped where none is reachable, except under
// CI=true).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { ConvostoreClient } from "@convostore/client";
import { newId, pgUnreachable, startOn } from "./served.mjs";

const pgSkip = pgUnreachable();

for (const backend of ["sqlite", "postgresql"]) {
  describe(`on ${backend}`, { skip: backend === "postgresql" ? (pgSkip ?? false) : false }, () => {
    let server;
    let alice;
    let bob;
    let admin;

    before(async () => {
      server = await startOn(backend);
      alice = new ConvostoreClient({ baseUrl: server.base, token: server.tokens.alice });
      bob = new ConvostoreClient({ baseUrl: server.base, token: server.tokens.bob });
      admin = new ConvostoreClient({ baseUrl: server.base, token: server.tokens.admin });
    });

    after(async () => {
      await server?.stop();
    });

    describe("messages", () => {
      test("appendMessage returns the msg_ id and getMessages the reference's Message", async () => {
        const conversationId = newId();
        const start = Date.now();
        const messageId = await alice.appendMessage({
          conversationId,
          role: "user",
          content: "Hello!",
          userId: "alice",
          metadata: { source: "web" },
        });
        assert.match(messageId, /^msg_/);
        await alice.appendMessage({
          conversationId,
          role: "assistant",
          content: [{ type: "text", text: "Hi" }],
        });
        const messages = await alice.getMessages({ conversationId });
        assert.equal(messages.length, 2);
        const [first, second] = messages;
        assert.deepEqual(Object.keys(first).sort(), [
          "content",
          "createdAt",
          "messageId",
          "metadata",
          "role",
        ]);
        assert.equal(first.messageId, messageId);
        assert.equal(first.role, "user");
        assert.equal(first.content, "Hello!");
        assert.deepEqual(first.metadata, { source: "web" });
        assert.ok(first.createdAt >= start - 1000 && first.createdAt <= Date.now() + 1000, "createdAt in ms");
        assert.equal(second.updatedAt, undefined);
        assert.equal(second.metadata, undefined, "no metadata: the field is absent, not null");
        assert.deepEqual(second.content, [{ type: "text", text: "Hi" }]);
      });

      test("getMessages pages with limit, order, after and before; [] for an unknown conversation", async () => {
        const conversationId = newId();
        const ids = await alice.appendMessages({
          conversationId,
          messages: ["m0", "m1", "m2", "m3", "m4"].map((content) => ({ role: "user", content })),
        });
        assert.equal(ids.length, 5);
        const text = (ms) => ms.map((m) => m.content);
        assert.deepEqual(text(await alice.getMessages({ conversationId, limit: 2 })), ["m0", "m1"]);
        assert.deepEqual(text(await alice.getMessages({ conversationId, limit: 2, order: "desc" })), [
          "m4",
          "m3",
        ]);
        assert.deepEqual(text(await alice.getMessages({ conversationId, limit: 2, after: ids[1] })), [
          "m2",
          "m3",
        ]);
        assert.deepEqual(text(await alice.getMessages({ conversationId, limit: 2, before: ids[3] })), [
          "m1",
          "m2",
        ]);
        const page = await alice.getMessagesPage({ conversationId, limit: 2, after: ids[0] });
        assert.deepEqual(text(page.items), ["m1", "m2"]);
        assert.equal(page.nextCursor, ids[2]);
        assert.equal(page.previousCursor, ids[1]);
        const last = await alice.getMessagesPage({ conversationId, limit: 2, after: ids[2] });
        assert.deepEqual(text(last.items), ["m3", "m4"]);
        assert.equal(last.nextCursor, undefined);
        assert.deepEqual(await alice.getMessages({ conversationId: newId("never") }), []);
      });

      test("updateMessage overwrites what it is given and sets updatedAt; deleteMessage removes one", async () => {
        const conversationId = newId();
        const messageId = await alice.appendMessage({
          conversationId,
          role: "assistant",
          content: "wrong",
          metadata: { a: 1 },
        });
        const updated = await alice.updateMessage({
          conversationId,
          messageId,
          content: "corrected answer",
          metadata: { edited: true },
        });
        assert.equal(updated.content, "corrected answer");
        assert.deepEqual(updated.metadata, { edited: true });
        assert.equal(typeof updated.updatedAt, "number");
        const kept = await alice.updateMessage({ conversationId, messageId, metadata: { again: 1 } });
        assert.equal(kept.content, "corrected answer");
        assert.deepEqual(await alice.getMessage({ conversationId, messageId }), kept);
        await alice.deleteMessage({ conversationId, messageId });
        assert.equal(await alice.getMessage({ conversationId, messageId }), null);
        await alice.deleteMessage({ conversationId, messageId }); // a missing one: nothing happens
      });

      test("clearMessages keeps the conversation's metadata", async () => {
        const conversationId = newId();
        await alice.appendMessage({ conversationId, role: "user", content: "x" });
        await alice.updateConversation({ conversationId, metadata: { title: "kept" } });
        await alice.clearMessages({ conversationId });
        assert.deepEqual(await alice.getMessages({ conversationId }), []);
        const meta = await alice.getConversation({ conversationId });
        assert.equal(meta.messageCount, 0);
        assert.deepEqual(meta.metadata, { title: "kept" });
      });

      test("ids a path cannot carry as they are: '/', '.', '..', '-', '%', spaces and non-ASCII", async () => {
        for (const conversationId of ["claude/abc/def", ".", "..", "-", "100%", "a b?c#d", "対話"]) {
          const messageId = await alice.appendMessage({
            conversationId,
            role: "user",
            content: conversationId,
          });
          const messages = await alice.getMessages({ conversationId });
          assert.deepEqual(
            messages.map((m) => m.content),
            [conversationId],
            conversationId,
          );
          assert.equal((await alice.getConversation({ conversationId })).conversationId, conversationId);
          await alice.deleteMessage({ conversationId, messageId });
          await alice.deleteConversation({ conversationId });
          assert.equal(await alice.getConversation({ conversationId }), null);
        }
        const conversationId = newId();
        for (const messageId of [".", "..", "a/b", "-"]) {
          assert.equal(
            await alice.appendMessage({ conversationId, role: "user", content: messageId, messageId }),
            messageId,
          );
          assert.equal((await alice.getMessage({ conversationId, messageId })).content, messageId);
          assert.equal(
            (await alice.updateMessage({ conversationId, messageId, content: "new" })).content,
            "new",
          );
        }
      });

      test("appendMessages with an idempotencyKey stores a retry once", async () => {
        const conversationId = newId();
        const batch = [
          { role: "assistant", content: "Hi!" },
          { role: "user", content: "Weather?" },
        ];
        const ids = await alice.appendMessages({ conversationId, messages: batch, idempotencyKey: "turn-7" });
        assert.deepEqual(ids, ["turn-7:0", "turn-7:1"]);
        assert.deepEqual(
          await alice.appendMessages({ conversationId, messages: batch, idempotencyKey: "turn-7" }),
          ids,
        );
        assert.equal((await alice.getMessages({ conversationId })).length, 2);
      });
    });

    describe("conversations", () => {
      test("getConversation gives the ConversationMeta, null for a missing one", async () => {
        const conversationId = newId();
        await alice.appendMessage({ conversationId, role: "user", content: "x" });
        const meta = await alice.getConversation({ conversationId });
        assert.equal(meta.conversationId, conversationId);
        assert.equal(meta.messageCount, 1);
        assert.equal(typeof meta.createdAt, "number");
        assert.ok(meta.lastMessageAt >= meta.createdAt);
        assert.equal(meta.metadata, undefined);
        assert.equal(meta.userId, "alice");
        assert.equal(await alice.getConversation({ conversationId: newId("missing") }), null);
      });

      test("updateConversation merges shallowly and null deletes a key", async () => {
        const conversationId = newId();
        await alice.updateConversation({ conversationId, metadata: { title: "Old", tag: "t", keep: 1 } });
        const meta = await alice.updateConversation({
          conversationId,
          metadata: { title: "Product Inquiry", tag: null },
        });
        assert.deepEqual(meta.metadata, { title: "Product Inquiry", keep: 1 });
        assert.deepEqual((await alice.getConversation({ conversationId })).metadata, meta.metadata);
      });

      test("listConversations pages by lastMessageAt with nextCursor and previousCursor", async () => {
        const user = new ConvostoreClient({ baseUrl: server.base, token: server.tokens.bob });
        const made = [];
        for (let i = 0; i < 5; i++) {
          const conversationId = newId("list");
          await user.appendMessage({ conversationId, role: "user", content: `n${i}` });
          made.push(conversationId);
        }
        const first = await user.listConversations({ limit: 2 });
        assert.deepEqual(Object.keys(first).sort(), ["items", "nextCursor"]);
        assert.deepEqual(
          first.items.map((c) => c.conversationId),
          [made[4], made[3]],
        );
        const second = await user.listConversations({ limit: 2, after: first.nextCursor });
        assert.deepEqual(
          second.items.map((c) => c.conversationId),
          [made[2], made[1]],
        );
        assert.equal(typeof second.previousCursor, "string");
        const back = await user.listConversations({ limit: 2, before: second.previousCursor });
        assert.deepEqual(
          back.items.map((c) => c.conversationId),
          [made[4], made[3]],
        );
        const asc = await user.listConversations({ limit: 100, order: "asc" });
        assert.deepEqual(
          asc.items.map((c) => c.conversationId),
          made,
        );
        assert.equal(asc.nextCursor, undefined);
        // An admin lists a user's with userId; a user lists only their own.
        const bobs = await admin.listConversations({ userId: "bob", limit: 100 });
        assert.deepEqual(bobs.items.map((c) => c.conversationId).sort(), [...made].sort());
        const alices = await alice.listConversations({ limit: 100 });
        assert.ok(alices.items.every((c) => !made.includes(c.conversationId)));
      });

      test("deleteConversation removes it and its messages; another user's is as a missing one", async () => {
        const conversationId = newId();
        await alice.appendMessage({ conversationId, role: "user", content: "mine" });
        assert.equal(await bob.getConversation({ conversationId }), null);
        assert.deepEqual(await bob.getMessages({ conversationId }), []);
        await bob.deleteConversation({ conversationId });
        assert.equal((await alice.getConversation({ conversationId })).messageCount, 1);
        await alice.deleteConversation({ conversationId });
        assert.equal(await alice.getConversation({ conversationId }), null);
        assert.deepEqual(await alice.getMessages({ conversationId }), []);
      });

      test("forkConversation copies up to a message into a new conversation, as the caller's", async () => {
        const conversationId = newId();
        const first = await alice.appendMessage({ conversationId, role: "user", content: "Plan 3 days" });
        const second = await alice.appendMessage({ conversationId, role: "assistant", content: "Day 1" });
        await alice.appendMessage({ conversationId, role: "user", content: "Make it 5" });
        await alice.updateConversation({ conversationId, metadata: { title: "Kyoto", tag: "x" } });
        const newConversationId = newId();
        const branch = await alice.forkConversation({
          conversationId,
          newConversationId,
          upTo: second,
          metadata: { tag: null, b: 1 },
        });
        assert.equal(branch.conversationId, newConversationId);
        assert.equal(branch.messageCount, 2);
        assert.equal(branch.userId, "alice");
        assert.deepEqual(branch.metadata, {
          title: "Kyoto",
          b: 1,
          forkedFrom: { conversationId, messageId: second },
        });
        assert.deepEqual(await alice.getConversation({ conversationId: newConversationId }), branch);
        const copied = await alice.getMessages({ conversationId: newConversationId });
        assert.deepEqual(copied, (await alice.getMessages({ conversationId })).slice(0, 2));
        assert.deepEqual(copied.map((m) => m.messageId), [first, second]);
        assert.equal((await alice.getConversation({ conversationId })).messageCount, 3);
        const whole = await alice.forkConversation({ conversationId, newConversationId: newId() });
        assert.equal(whole.messageCount, 3);
        // An admin forks a user's conversation for that user; the copy is the source owner's.
        const forAlice = await admin.forkConversation({ conversationId, newConversationId: newId() });
        assert.equal(forAlice.userId, "alice");
        // Another user's conversation is as a missing one: nothing is copied.
        const stolen = newId();
        await assert.rejects(
          bob.forkConversation({ conversationId, newConversationId: stolen }),
          (e) => e.constructor.name === "ConversationNotFoundError",
        );
        assert.equal(await admin.getConversation({ conversationId: stolen }), null);
      });

      test("me() tells who the token is for", async () => {
        assert.deepEqual(await alice.me(), { userId: "alice", admin: false });
        assert.deepEqual(await admin.me(), { admin: true });
      });
    });
  });
}
