// Hostile and bad arguments, refused before any request (an injected fetch records none) with
// a MemoryValidationError naming the argument, in the Python side's words: wrong types, ids
// over 256 bytes, NUL, lone surrogates, huge and infinite numbers, NaN, functions, cycles,
// BigInt, nesting deeper than the stack, a batch's items by their place.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ConvostoreError, ConvostoreClient, MemoryValidationError } from "@convostore/client";

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

function cyclic() {
  const value = { a: [] };
  value.a.push(value);
  return value;
}

function deep(levels) {
  let value = "bottom";
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

describe("bad arguments are refused before any request", () => {
  const calls = [];
  const recording = new ConvostoreClient({
    baseUrl: "http://127.0.0.1:9",
    fetch: async (url) => {
      calls.push(url);
      throw new Error("no request should be made");
    },
  });
  const cases = [
    [
      "a limit of 0",
      () => recording.getMessages({ conversationId: "c", limit: 0 }),
      "limit must be between 1 and 100, got 0",
      "limit",
    ],
    [
      "a limit of 101",
      () => recording.listConversations({ limit: 101 }),
      "limit must be between 1 and 100, got 101",
      "limit",
    ],
    [
      "a limit that is not an int",
      () => recording.getMessages({ conversationId: "c", limit: 1.5 }),
      "limit must be an int, got 1.5",
      "limit",
    ],
    [
      "after with before",
      () => recording.getMessages({ conversationId: "c", after: "a", before: "b" }),
      "after and before are mutually exclusive; pass one of them",
      undefined,
    ],
    [
      "after with before (conversations)",
      () => recording.listConversations({ after: "a", before: "b" }),
      "after and before are mutually exclusive; pass one of them",
      undefined,
    ],
    [
      "an order",
      () => recording.getMessages({ conversationId: "c", order: "up" }),
      "order must be 'asc' or 'desc', got 'up'",
      "order",
    ],
    [
      "a non-string id",
      () => recording.getMessages({ conversationId: 42 }),
      "conversationId must be a string, got number",
      "conversationId",
    ],
    [
      "an empty id",
      () => recording.appendMessage({ conversationId: "", role: "user", content: "x" }),
      "conversationId must be 1 to 256 bytes of UTF-8, got 0 bytes",
      "conversationId",
    ],
    [
      "an id over 256 bytes",
      () => recording.deleteConversation({ conversationId: "é".repeat(129) }),
      "conversationId must be 1 to 256 bytes of UTF-8, got 258 bytes",
      "conversationId",
    ],
    [
      "a NUL in an id",
      () => recording.getConversation({ conversationId: "a\u0000b" }),
      "conversationId must not contain NUL characters",
      "conversationId",
    ],
    [
      "a lone surrogate in an id",
      () => recording.getConversation({ conversationId: "a\ud800" }),
      "conversationId is not valid UTF-8 (lone surrogate)",
      "conversationId",
    ],
    [
      "a role",
      () => recording.appendMessage({ conversationId: "c", role: "bot", content: "x" }),
      "role must be one of user, assistant, system, tool; got 'bot'",
      "role",
    ],
    [
      "content",
      () => recording.appendMessage({ conversationId: "c", role: "user", content: 5 }),
      "content must be a string, an array or an object, got number",
      "content",
    ],
    [
      "metadata",
      () => recording.updateConversation({ conversationId: "c", metadata: [1] }),
      "metadata must be an object, got array",
      "metadata",
    ],
    [
      "a version",
      () => recording.updateMemory({ memoryStoreId: "s", entryId: "e", version: 0, content: "x" }),
      "version must be between 1 and 9007199254740991, got 0",
      "version",
    ],
    [
      "a huge limit",
      () => recording.getMessages({ conversationId: "c", limit: 2 ** 80 }),
      "limit must be an int, got 1.2089258196146292e+24",
      "limit",
    ],
    [
      "an infinite limit",
      () => recording.getMessages({ conversationId: "c", limit: Infinity }),
      "limit must be an int, got Infinity",
      "limit",
    ],
    [
      "NaN in metadata",
      () =>
        recording.appendMessage({ conversationId: "c", role: "user", content: "x", metadata: { n: NaN } }),
      "metadata: NaN is not valid JSON (NaN and Infinity)",
      "metadata",
    ],
    [
      "Infinity in content",
      () => recording.updateMessage({ conversationId: "c", messageId: "m", content: [1, -Infinity] }),
      "content: -Infinity is not valid JSON (NaN and Infinity)",
      "content",
    ],
    [
      "a function in metadata",
      () => recording.updateConversation({ conversationId: "c", metadata: { f() {} } }),
      "metadata: a function is not JSON",
      "metadata",
    ],
    [
      "a BigInt in content",
      () => recording.appendMessage({ conversationId: "c", role: "user", content: { n: 10n } }),
      /^content: not JSON-serializable \(.*BigInt/,
      "content",
    ],
    [
      "a cycle in content",
      () => recording.appendMessage({ conversationId: "c", role: "user", content: cyclic() }),
      /^content: not JSON-serializable \(.*circular/,
      "content",
    ],
    [
      "content nested deeper than the stack",
      () => recording.appendMessage({ conversationId: "c", role: "user", content: deep(200_000) }),
      "content: nested too deep for JSON",
      "content",
    ],
    [
      "a batch's message, named by its place",
      () =>
        recording.appendMessages({
          conversationId: "c",
          messages: [
            { role: "user", content: "ok" },
            { role: "user", content: "x", metadata: { n: NaN } },
          ],
        }),
      "messages[1].metadata: NaN is not valid JSON (NaN and Infinity)",
      "messages[1].metadata",
    ],
    [
      "no metadata to merge",
      () => recording.updateConversation({ conversationId: "c" }),
      "metadata must be an object, got undefined",
      "metadata",
    ],
    [
      "a fork without a new id",
      () => recording.forkConversation({ conversationId: "c" }),
      "newConversationId must be a string, got undefined",
      "newConversationId",
    ],
    [
      "a fork's upTo that is not an id",
      () => recording.forkConversation({ conversationId: "c", newConversationId: "d", upTo: "" }),
      "upTo must be 1 to 256 bytes of UTF-8, got 0 bytes",
      "upTo",
    ],
    [
      "a fork's metadata that is not an object",
      () => recording.forkConversation({ conversationId: "c", newConversationId: "d", metadata: [1] }),
      /^metadata must be/,
      "metadata",
    ],
    [
      "a batch that is not an array",
      () => recording.appendMessages({ conversationId: "c", messages: "x" }),
      "messages must be an array, got string",
      "messages",
    ],
    [
      "a batch's role",
      () => recording.appendMessages({ conversationId: "c", messages: [{ role: "robot", content: "x" }] }),
      "messages[0].role must be one of user, assistant, system, tool; got 'robot'",
      "messages[0].role",
    ],
  ];
  for (const [what, call, message, argument] of cases) {
    test(what, async () => {
      const error = await raises(call, MemoryValidationError, { argument });
      if (message instanceof RegExp) assert.match(error.message, message);
      else assert.equal(error.message, message);
      assert.equal(error.status, undefined);
      assert.deepEqual(calls, []);
    });
  }
});
