// The client's types against the server's OpenAPI document: a field added to, renamed in or
// removed from one side and not the other fails here. The TypeScript side is read from the
// sources with the TypeScript compiler (src/types.ts, and NewMessage in src/client.ts).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import ts from "typescript";

import { startServer } from "./served.mjs";

/** Every interface of a source file: its fields, and whether each is optional. */
function interfaces(file) {
  const path = new URL(`../src/${file}`, import.meta.url);
  const source = ts.createSourceFile(file, readFileSync(path, "utf8"), ts.ScriptTarget.ES2022, true);
  const found = {};
  source.forEachChild((node) => {
    if (!ts.isInterfaceDeclaration(node)) return;
    found[node.name.text] = Object.fromEntries(
      node.members
        .filter(ts.isPropertySignature)
        .map((m) => [m.name.getText(source), Boolean(m.questionToken)]),
    );
  });
  return found;
}

const TYPES = { ...interfaces("types.ts"), NewMessage: interfaces("client.ts").NewMessage };

// The server's schema for each client type (a Page<T> is the one-way listings' shape).
const SAME = {
  Message: "Message",
  ConversationMeta: "ConversationMeta",
  ListConversationsResult: "ListConversationsResult",
  ListMessagesResult: "ListMessagesResult",
  MemoryStore: "MemoryStore",
  MemoryEntry: "MemoryEntry",
  MemoryVersion: "MemoryVersion",
  SearchHit: "SearchHit",
  MemorySearchHit: "MemorySearchHit",
  Me: "Me",
  NewMessage: "NewMessage",
  Page: [
    "ListMemoryStoresResult",
    "MemoryEntryPage",
    "MemoryVersionPage",
    "SearchResult",
    "MemorySearchResult",
  ],
};
// Schemas the client has no type of its own for, and why.
const ELSEWHERE = {
  Appended: "appendMessage returns its messageId",
  AppendedBatch: "appendMessages returns its messageIds",
  ErrorBody: "read by errorFromResponse",
  ErrorDetail: "read by errorFromResponse",
  ConversationPatch: "updateConversation's metadata",
  ConversationFork: "forkConversation's arguments",
  MessagePatch: "updateMessage's content and metadata",
  NewMessages: "appendMessages' messages",
  NewMemoryStore: "createMemoryStore's arguments",
  NewMemory: "createMemory's arguments",
  MemoryUpdate: "updateMemory's arguments",
  MemoryEntryListed: "a MemoryEntry without content",
  MemoryVersionListed: "a MemoryVersion without content",
  // OpenAI's Conversations API under /v1: its clients are OpenAI's own (the openai packages)
  Conversation: "/v1, for OpenAI's clients",
  ConversationDeleted: "/v1, for OpenAI's clients",
  ConversationUpdate: "/v1, for OpenAI's clients",
  ItemList: "/v1, for OpenAI's clients",
  NewConversation: "/v1, for OpenAI's clients",
  NewItems: "/v1, for OpenAI's clients",
  OpenAIErrorBody: "/v1, for OpenAI's clients",
  OpenAIErrorDetail: "/v1, for OpenAI's clients",
  Health: "/healthz and /readyz, for probes, not for a client",
};

let schemas;

before(async () => {
  const server = await startServer();
  try {
    const response = await fetch(`${server.base}/openapi.json`, {
      headers: { Authorization: `Bearer ${server.tokens.alice}` },
    });
    assert.equal(response.status, 200);
    schemas = (await response.json()).components.schemas;
  } finally {
    await server.stop();
  }
});

test("every schema of the server is a client type or accounted for", () => {
  const mapped = new Set(Object.values(SAME).flat());
  const unknown = Object.keys(schemas).filter((name) => !mapped.has(name) && !(name in ELSEWHERE));
  assert.deepEqual(unknown, [], "a new schema: give the client its type (src/types.ts) or say why not");
  const gone = [...mapped, ...Object.keys(ELSEWHERE)].filter((name) => !(name in schemas));
  assert.deepEqual(gone, [], "a schema the client knows is gone from the server");
});

for (const [type, names] of Object.entries(SAME)) {
  for (const name of [names].flat()) {
    test(`${type} has the fields of the server's ${name}`, () => {
      const fields = TYPES[type];
      assert.ok(fields, `no interface ${type}`);
      const schema = schemas[name];
      assert.deepEqual(Object.keys(fields).sort(), Object.keys(schema.properties).sort());
      for (const required of schema.required ?? []) {
        assert.equal(fields[required], false, `${type}.${required} is always there: not optional`);
      }
    });
  }
}
