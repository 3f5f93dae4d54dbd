// Every error class the server can make the client raise, each from a real server response
// (bad arguments refused before any request: hostile.test.mjs).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, before, describe, test } from "node:test";

import {
  AuthenticationError,
  ClosedError,
  ConflictError,
  ContentTooLargeError,
  ConversationExistsError,
  ConversationManagedError,
  ConversationNotFoundError,
  ConversationOwnershipError,
  ConvostoreClient,
  ConvostoreError,
  MemoryEntryNotFoundError,
  MemoryPathConflictError,
  MemoryQuotaExceededError,
  MemoryStoreNotFoundError,
  MemoryValidationError,
  MemoryVersionConflictError,
  MemoryVersionNotFoundError,
  MessageIdConflictError,
  MessageNotFoundError,
  NotFoundError,
  OwnershipError,
  PermissionDeniedError,
  StorageError,
} from "@convostore/client";

import { SERVER_PYTHON, newId, startServer } from "./served.mjs";

let server;
let alice;
let bob;

before(async () => {
  server = await startServer({ extra: ["--max-body-bytes", "2000000"] });
  alice = new ConvostoreClient({ baseUrl: server.base, token: server.tokens.alice });
  bob = new ConvostoreClient({ baseUrl: server.base, token: server.tokens.bob });
});

after(async () => {
  await server?.stop();
});

/** `call` rejects with an instance of `cls` (and not of a sibling class). */
async function raises(call, cls, fields = {}) {
  const error = await call().then(
    () => assert.fail(`expected ${cls.name}`),
    (e) => e,
  );
  assert.equal(error.constructor, cls, `${error.constructor.name}: ${error.message}`);
  assert.ok(error instanceof ConvostoreError);
  for (const [key, value] of Object.entries(fields)) assert.deepEqual(error[key], value, key);
  return error;
}

describe("errors from the server's answers", () => {
  test("MemoryValidationError (400) with the server's argument", async () => {
    const conversationId = newId();
    const messageId = await alice.appendMessage({ conversationId, role: "user", content: "x" });
    const error = await raises(
      () => alice.updateMessage({ conversationId, messageId }),
      MemoryValidationError,
      {
        status: 400,
        code: "invalid_argument",
      },
    );
    assert.match(error.message, /update_message needs content, metadata or both/);
    const cursor = await raises(
      () => alice.getMessages({ conversationId, after: "msg_not_in_it" }),
      MemoryValidationError,
      { status: 400 },
    );
    assert.match(cursor.message, /^after: no message 'msg_not_in_it' in conversation/);
    // Nesting JSON can carry but the store refuses (deeper than 900 levels): the server says so.
    const nested = await raises(
      () => alice.appendMessage({ conversationId, role: "user", content: deep(1000) }),
      MemoryValidationError,
      { status: 400 },
    );
    assert.match(nested.message, /nested/);
  });

  test("ContentTooLargeError (413)", async () => {
    await raises(
      () => alice.appendMessage({ conversationId: newId(), role: "user", content: "x".repeat(3_000_000) }),
      ContentTooLargeError,
      { status: 413, code: "too_large" },
    );
  });

  test("AuthenticationError (401) and PermissionDeniedError (403)", async () => {
    const stranger = new ConvostoreClient({ baseUrl: server.base, token: "not-a-token" });
    await raises(() => stranger.listConversations(), AuthenticationError, {
      status: 401,
      code: "unauthenticated",
    });
    await raises(() => new ConvostoreClient({ baseUrl: server.base }).me(), AuthenticationError);
    await raises(() => alice.listConversations({ userId: "bob" }), PermissionDeniedError, {
      status: 403,
      argument: "userId",
    });
  });

  test("ConversationNotFoundError and MessageNotFoundError (404)", async () => {
    const conversationId = newId();
    await alice.appendMessage({ conversationId, role: "user", content: "alice's" });
    // Another user's conversation answers as a missing one (but to a write that would
    // create it: ConversationOwnershipError, below).
    await raises(
      () => bob.forkConversation({ conversationId, newConversationId: newId() }),
      ConversationNotFoundError,
      {
        status: 404,
        code: "not_found",
      },
    );
    await raises(
      () => alice.updateMessage({ conversationId, messageId: "msg_missing", content: "y" }),
      MessageNotFoundError,
    );
    assert.ok(MessageNotFoundError.prototype instanceof NotFoundError);
  });

  test("MessageIdConflictError (409)", async () => {
    const conversationId = newId();
    await alice.appendMessage({ conversationId, role: "user", content: "one", messageId: "m-1" });
    await raises(
      () => alice.appendMessage({ conversationId, role: "user", content: "another", messageId: "m-1" }),
      MessageIdConflictError,
      { status: 409, code: "message_id_conflict" },
    );
  });

  test("ConversationExistsError (409): a fork's new id is taken", async () => {
    const conversationId = newId();
    const taken = newId();
    await alice.appendMessage({ conversationId, role: "user", content: "one" });
    await bob.appendMessage({ conversationId: taken, role: "user", content: "bob's" });
    await raises(
      () => alice.forkConversation({ conversationId, newConversationId: taken }),
      ConversationExistsError,
      { status: 409, code: "conversation_exists" },
    );
    await raises(
      () => alice.forkConversation({ conversationId, newConversationId: newId(), upTo: "msg_none" }),
      MemoryValidationError,
      { status: 400, argument: "up_to" },
    );
  });

  test("ConversationOwnershipError (409): a write that would create an id another user holds", async () => {
    const conversationId = newId();
    await alice.appendMessage({ conversationId, role: "user", content: "alice's" });
    for (const call of [
      () => bob.appendMessage({ conversationId, role: "user", content: "bob's" }),
      () => bob.appendMessages({ conversationId, messages: [{ role: "user", content: "bob's" }] }),
      () => bob.updateConversation({ conversationId, metadata: { title: "bob's" } }),
    ]) {
      const error = await raises(call, ConversationOwnershipError, {
        status: 409,
        code: "conversation_ownership",
        argument: "conversationId",
      });
      assert.ok(error instanceof OwnershipError && error instanceof ConflictError);
    }
    // Every other call answers as for a missing conversation.
    assert.equal(await bob.getConversation({ conversationId }), null);
    assert.deepEqual(await bob.getMessages({ conversationId }), []);
    const messages = await alice.getMessages({ conversationId });
    assert.deepEqual(messages.map((m) => m.content), ["alice's"]);
  });

  test("ConversationManagedError (409): a conversation a component keeps", async () => {
    // A LangGraph thread's conversation, as the adapter writes it (the Python store acting
    // for its component, on the server's database).
    const code = [
      "import sys",
      "from convostore import ConversationStore",
      "with ConversationStore(sys.argv[1]) as store:",
      "    store.as_component('convostore-langgraph').sync_messages(",
      "        conversation_id='thread-1', user_id='alice',",
      "        messages=[{'role': 'user', 'content': 'hi', 'message_id': 'lg-1'}])",
    ].join("\n");
    const done = spawnSync(SERVER_PYTHON, ["-c", code, server.storeUrl], { encoding: "utf8" });
    assert.equal(done.status, 0, done.stderr);
    assert.equal((await alice.getMessages({ conversationId: "thread-1" }))[0].content, "hi");
    const error = await raises(
      () => alice.appendMessage({ conversationId: "thread-1", role: "user", content: "x" }),
      ConversationManagedError,
      { status: 409, code: "conflict" },
    );
    assert.match(error.message, /is managed by 'convostore-langgraph'/);
  });

  test("MemoryQuotaExceededError (409) past 10,000 messages", async () => {
    const conversationId = newId("full");
    const messages = Array.from({ length: 10_000 }, (_, i) => ({ role: "user", content: `${i}` }));
    const ids = await alice.appendMessages({ conversationId, messages });
    assert.equal(ids.length, 10_000);
    await raises(
      () => alice.appendMessage({ conversationId, role: "user", content: "one more" }),
      MemoryQuotaExceededError,
      {
        status: 409,
        code: "quota_exceeded",
      },
    );
  });

  test("memory stores: MemoryStoreNotFoundError, MemoryEntryNotFoundError, MemoryVersionNotFoundError, MemoryPathConflictError, MemoryVersionConflictError", async () => {
    await raises(
      () => alice.getMemoryStore({ memoryStoreId: "memstore_missing" }),
      MemoryStoreNotFoundError,
      { status: 404 },
    );
    const store = await alice.createMemoryStore({ name: "errors" });
    const { memoryStoreId } = store;
    await raises(() => bob.getMemoryStore({ memoryStoreId }), MemoryStoreNotFoundError);
    await raises(() => alice.getMemory({ memoryStoreId, entryId: "mem_missing" }), MemoryEntryNotFoundError);
    await raises(
      () => alice.getMemoryVersion({ memoryStoreId, versionId: "memver_missing" }),
      MemoryVersionNotFoundError,
    );
    const entry = await alice.createMemory({ memoryStoreId, path: "a.md", content: "v1" });
    await raises(
      () => alice.createMemory({ memoryStoreId, path: "a.md", content: "again" }),
      MemoryPathConflictError,
      {
        status: 409,
        code: "path_conflict",
      },
    );
    await alice.updateMemory({ memoryStoreId, entryId: entry.entryId, content: "v2", version: 1 });
    await raises(
      () => alice.updateMemory({ memoryStoreId, entryId: entry.entryId, content: "stale", version: 1 }),
      MemoryVersionConflictError,
      { status: 409, code: "version_conflict", currentVersion: 2 },
    );
  });

  test("StorageError: a server that cannot be reached, with the cause", async () => {
    const closed = new ConvostoreClient({ baseUrl: "http://127.0.0.1:9", token: "t" });
    const error = await raises(() => closed.listConversations(), StorageError);
    assert.ok(error.cause instanceof Error, "the network error is chained");
    assert.equal(error.status, undefined);
  });

  test("ClosedError after close(), before any request", async () => {
    const client = new ConvostoreClient({ baseUrl: server.base, token: server.tokens.alice });
    client.close();
    await raises(() => client.me(), ClosedError);
  });
});

function deep(levels) {
  let value = "bottom";
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}
