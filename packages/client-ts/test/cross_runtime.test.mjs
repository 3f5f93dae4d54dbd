// One scripted session of the reference's calls, made through this client (over a real
// server) and through the Python ConversationStore (test/python_session.py), each on a
// database of its own: the same returned JSON and the same stored conversations and messages,
// ids and times aside.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { ConvostoreClient } from "@convostore/client";
import { SERVER_PYTHON, pgSchema, pgUnreachable, startOn } from "./served.mjs";

const SESSION = fileURLToPath(new URL("./python_session.py", import.meta.url));
const STEPS = [
  { op: "appendMessage", args: { conversationId: "chat-1", role: "system", content: "Be brief." } },
  {
    op: "appendMessage",
    args: {
      conversationId: "chat-1",
      role: "user",
      content: "Hello!",
      metadata: { source: "web", tokens: 3 },
      messageId: "m-user-1",
    },
  },
  {
    op: "appendMessage",
    args: {
      conversationId: "chat-1",
      role: "assistant",
      content: [
        { type: "text", text: "Hi" },
        { type: "image_url", image_url: { url: "https://example.com/a.png" } },
      ],
      messageId: "m-asst-1",
    },
  },
  {
    op: "appendMessage",
    args: {
      conversationId: "chat-1",
      role: "tool",
      content: { result: [1, 2, { deep: null }] },
      metadata: { tool_call_id: "call_1", n: null },
    },
  },
  { op: "getMessages", args: { conversationId: "chat-1" } },
  { op: "getMessages", args: { conversationId: "chat-1", limit: 2, order: "desc" } },
  { op: "getMessages", args: { conversationId: "chat-1", limit: 1, after: "m-user-1" } },
  { op: "getMessages", args: { conversationId: "chat-1", before: "m-asst-1", order: "desc" } },
  {
    op: "updateMessage",
    args: {
      conversationId: "chat-1",
      messageId: "m-user-1",
      content: "corrected",
      metadata: { edited: true },
    },
  },
  {
    op: "updateMessage",
    args: { conversationId: "chat-1", messageId: "m-asst-1", metadata: { only: "metadata" } },
  },
  {
    op: "updateConversation",
    args: { conversationId: "chat-1", metadata: { title: "Product Inquiry", tag: "t", summary: "s" } },
  },
  {
    op: "updateConversation",
    args: { conversationId: "chat-1", metadata: { tag: null, summarizedUntil: "m-asst-1" } },
  },
  { op: "getConversation", args: { conversationId: "chat-1" } },
  { op: "getConversation", args: { conversationId: "never" } },
  { op: "getMessages", args: { conversationId: "never" } },
  { op: "appendMessage", args: { conversationId: "chat-2", role: "user", content: ["a", "b"] } },
  { op: "updateConversation", args: { conversationId: "chat-3", metadata: { created: "by metadata" } } },
  { op: "listConversations", args: {} },
  { op: "listConversations", args: { limit: 1, order: "asc" } },
  { op: "deleteMessage", args: { conversationId: "chat-1", messageId: "m-asst-1" } },
  { op: "deleteMessage", args: { conversationId: "chat-1", messageId: "missing" } },
  { op: "getMessages", args: { conversationId: "chat-1" } },
  { op: "clearMessages", args: { conversationId: "chat-2" } },
  { op: "getConversation", args: { conversationId: "chat-2" } },
  { op: "deleteConversation", args: { conversationId: "chat-3" } },
  { op: "getConversation", args: { conversationId: "chat-3" } },
  // A fork up to a message: the summary, whose summarizedUntil is past the cut, is left out.
  {
    op: "forkConversation",
    args: { conversationId: "chat-1", newConversationId: "chat-1-b", upTo: "m-user-1", metadata: { branch: 1 } },
  },
  { op: "forkConversation", args: { conversationId: "chat-2", newConversationId: "chat-2-b" } },
  { op: "getMessages", args: { conversationId: "chat-1-b" } },
];

/** JSON with ids the store made, times and opaque cursors replaced by placeholders. */
function normalized(value) {
  return JSON.parse(JSON.stringify(value), (key, v) => {
    if (typeof v === "string" && /^msg_/.test(v)) return "msg_*";
    if (["createdAt", "updatedAt", "lastMessageAt"].includes(key) && typeof v === "number") return "<time>";
    if (["nextCursor", "previousCursor"].includes(key) && typeof v === "string") return "<cursor>";
    return v;
  });
}

function python(args, input) {
  const done = spawnSync(SERVER_PYTHON, [SESSION, ...args], { input, encoding: "utf8" });
  assert.equal(done.status, 0, done.stderr);
  return JSON.parse(done.stdout);
}

const pgSkip = pgUnreachable();

for (const backend of ["sqlite", "postgresql"]) {
  describe(`on ${backend}`, { skip: backend === "postgresql" ? (pgSkip ?? false) : false }, () => {
    let server;
    let dir;
    let schema;

    before(async () => {
      server = await startOn(backend);
      dir = mkdtempSync(join(tmpdir(), "convostore-python-side-"));
      if (backend === "postgresql") schema = pgSchema();
    });

    after(async () => {
      await server?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
      schema?.drop();
    });

    test("the same session through this client and the Python store: same answers, same rows", async () => {
      const client = new ConvostoreClient({ baseUrl: server.base, token: server.tokens.alice });
      const results = [];
      for (const { op, args } of STEPS) results.push(await client[op](args));
      const url = schema ? schema.url : `sqlite:///${join(dir, "python.db")}`;
      const viaPython = python([url], JSON.stringify(STEPS));
      const ours = normalized(results);
      const theirs = normalized(viaPython.results);
      assert.equal(ours.length, STEPS.length);
      STEPS.forEach((step, i) =>
        assert.deepEqual(ours[i], theirs[i], `step ${i}: ${step.op} ${JSON.stringify(step.args)}`),
      );
      const stored = python([server.storeUrl, "--dump"]).stored;
      const branch = stored.find((c) => c.conversation.conversationId === "chat-1-b").conversation;
      assert.deepEqual(branch.metadata, {
        title: "Product Inquiry",
        branch: 1,
        forkedFrom: { conversationId: "chat-1", messageId: "m-user-1" },
      });
      assert.deepEqual(normalized(stored), normalized(viaPython.stored));
      assert.deepEqual(
        stored.map((c) => [c.conversation.conversationId, c.messages.length]),
        [
          ["chat-1", 3],
          ["chat-2", 0],
          ["chat-1-b", 2],
          ["chat-2-b", 0],
        ],
      );
    });
  });
}
