// Memory stores and search, against a real convostore-server on SQLite and on PostgreSQL.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { ConvostoreClient, MemoryEntryNotFoundError, PermissionDeniedError } from "@convostore/client";
import { newId, pgUnreachable, startOn } from "./served.mjs";

const pgSkip = pgUnreachable();

for (const backend of ["sqlite", "postgresql"]) {
  describe(`on ${backend}`, { skip: backend === "postgresql" ? (pgSkip ?? false) : false }, () => {
    let server;
    let alice;
    let admin;

    before(async () => {
      server = await startOn(backend);
      alice = new ConvostoreClient({ baseUrl: server.base, token: server.tokens.alice });
      admin = new ConvostoreClient({ baseUrl: server.base, token: server.tokens.admin });
    });

    after(async () => {
      await server?.stop();
    });

    test("a memory store's whole life: create, list, get, versioned update, versions, redact, delete", async () => {
      const store = await alice.createMemoryStore({ name: "acme-project", description: "what we learned" });
      assert.match(store.memoryStoreId, /^memstore_/);
      assert.equal(store.userId, "alice");
      assert.equal(store.metadata, undefined);
      const { memoryStoreId } = store;
      const listed = await alice.listMemoryStores();
      assert.ok(listed.items.some((s) => s.memoryStoreId === memoryStoreId));
      const entry = await alice.createMemory({
        memoryStoreId,
        path: "notes/2026/05/daily.md",
        content: "Deploys on Fridays: no.",
      });
      assert.equal(entry.version, 1);
      assert.equal(entry.content, "Deploys on Fridays: no.");
      await alice.createMemory({ memoryStoreId, path: "other/x.md", content: "x" });
      const counted = await alice.getMemoryStore({ memoryStoreId });
      assert.equal(counted.entryCount, 2);
      assert.equal(counted.totalSize, "Deploys on Fridays: no.".length + 1);
      const notes = await alice.listMemories({ memoryStoreId, pathPrefix: "notes/" });
      assert.deepEqual(
        notes.items.map((e) => e.path),
        ["notes/2026/05/daily.md"],
      );
      assert.equal(notes.items[0].content, undefined, "listings leave content out");
      const { entryId } = entry;
      const updated = await alice.updateMemory({
        memoryStoreId,
        entryId,
        content: "Deploys on Fridays: no. Mondays: yes.",
        version: 1,
      });
      assert.equal(updated.version, 2);
      const moved = await alice.updateMemory({
        memoryStoreId,
        entryId,
        version: 2,
        path: "notes/deploys.md",
      });
      assert.equal(moved.path, "notes/deploys.md");
      assert.equal(moved.content, "Deploys on Fridays: no. Mondays: yes.");
      assert.equal((await alice.getMemory({ memoryStoreId, entryId })).version, 3);
      const versions = await alice.listMemoryVersions({ memoryStoreId, entryId });
      assert.deepEqual(
        versions.items.map((v) => [v.version, v.operation]),
        [
          [1, "create"],
          [2, "update"],
          [3, "update"],
        ],
      );
      const first = versions.items[0];
      assert.equal(
        (await alice.getMemoryVersion({ memoryStoreId, versionId: first.versionId })).content,
        "Deploys on Fridays: no.",
      );
      await assert.rejects(
        alice.redactMemoryVersion({ memoryStoreId, versionId: first.versionId }),
        PermissionDeniedError,
      );
      const redacted = await admin.redactMemoryVersion({ memoryStoreId, versionId: first.versionId });
      assert.equal(redacted.redacted, true);
      assert.equal(typeof redacted.redactedAt, "number");
      assert.equal(
        (await alice.getMemoryVersion({ memoryStoreId, versionId: first.versionId })).content,
        undefined,
      );
      const deletion = await alice.deleteMemory({ memoryStoreId, entryId, version: 3 });
      assert.equal(deletion.operation, "delete");
      await assert.rejects(alice.getMemory({ memoryStoreId, entryId }), MemoryEntryNotFoundError);
      await alice.deleteMemoryStore({ memoryStoreId });
      assert.ok(
        !(await alice.listMemoryStores({ limit: 100 })).items.some((s) => s.memoryStoreId === memoryStoreId),
      );
    });

    test("listings page with limit and nextCursor", async () => {
      const { memoryStoreId } = await alice.createMemoryStore({ name: "paged" });
      for (const path of ["a.md", "b.md", "c.md"])
        await alice.createMemory({ memoryStoreId, path, content: path });
      const first = await alice.listMemories({ memoryStoreId, limit: 2 });
      assert.deepEqual(
        first.items.map((e) => e.path),
        ["a.md", "b.md"],
      );
      const rest = await alice.listMemories({ memoryStoreId, limit: 2, after: first.nextCursor });
      assert.deepEqual(
        rest.items.map((e) => e.path),
        ["c.md"],
      );
      assert.equal(rest.nextCursor, undefined);
    });

    test("searchMessages finds the caller's messages, newest first; searchMemories an entry", async () => {
      const conversationId = newId("search");
      await alice.appendMessage({ conversationId, role: "user", content: "My order number is A-1234" });
      await alice.appendMessage({ conversationId, role: "assistant", content: "Order A-1234 ships today" });
      await alice.appendMessage({ conversationId, role: "user", content: "unrelated" });
      const hits = await alice.searchMessages({ query: 'order "a-1234"' });
      assert.deepEqual(
        hits.items.map((h) => h.message.content),
        ["Order A-1234 ships today", "My order number is A-1234"],
      );
      assert.equal(hits.items[0].conversationId, conversationId);
      assert.equal(typeof hits.items[0].snippet, "string");
      assert.equal(hits.items[0].message.updatedAt, undefined);
      const users = await alice.searchMessages({ query: "order", roles: ["user"], conversationId, limit: 5 });
      assert.deepEqual(
        users.items.map((h) => h.message.role),
        ["user"],
      );
      const paged = await alice.searchMessages({ query: "a-1234", limit: 1 });
      const next = await alice.searchMessages({ query: "a-1234", limit: 1, after: paged.nextCursor });
      assert.equal(next.items[0].message.content, "My order number is A-1234");
      const { memoryStoreId } = await alice.createMemoryStore({ name: "ops" });
      await alice.createMemory({
        memoryStoreId,
        path: "notes/deploys.md",
        content: "Deploys on Fridays: no.",
      });
      const found = await alice.searchMemories({ memoryStoreId, query: "friday", pathPrefix: "notes/" });
      assert.deepEqual(
        found.items.map((h) => [h.path, h.version]),
        [["notes/deploys.md", 1]],
      );
    });
  });
}
