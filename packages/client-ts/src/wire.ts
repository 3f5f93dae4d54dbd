/**
 * The server's JSON as the reference's interfaces: an optional field the server sends as
 * `null` is left out (`message.updatedAt === undefined` until the message is updated, as the
 * reference says), and nothing else changes. Only the models' own fields are touched, never
 * what a caller stored (content, metadata).
 */

import type {
  ConversationMeta,
  MemoryEntry,
  MemorySearchHit,
  MemoryStore,
  MemoryVersion,
  Message,
  Page,
  SearchHit,
} from "./types.js";

type Json = Record<string, unknown>;

function withoutNulls<T>(value: unknown, optional: readonly string[]): T {
  const out: Json = { ...(value as Json) };
  for (const key of optional) if (out[key] === null) delete out[key];
  return out as T;
}

export function message(value: unknown): Message {
  return withoutNulls(value, ["metadata", "updatedAt"]);
}

export function conversation(value: unknown): ConversationMeta {
  return withoutNulls(value, ["metadata", "userId"]);
}

export function memoryStore(value: unknown): MemoryStore {
  return withoutNulls(value, ["description", "metadata", "userId"]);
}

export function memoryEntry(value: unknown): MemoryEntry {
  return withoutNulls(value, ["content"]);
}

export function memoryVersion(value: unknown): MemoryVersion {
  return withoutNulls(value, ["content", "redactedAt"]);
}

export function searchHit(value: unknown): SearchHit {
  const hit = value as Json;
  return { ...(hit as unknown as SearchHit), message: message(hit["message"]) };
}

export function memorySearchHit(value: unknown): MemorySearchHit {
  return value as MemorySearchHit;
}

/** A page `{items, nextCursor, previousCursor}`, each item read by `item`. */
export function page<T>(value: unknown, item: (v: unknown) => T): Page<T> & { previousCursor?: string } {
  const raw = value as Json;
  const out: Page<T> & { previousCursor?: string } = {
    items: (raw["items"] as unknown[]).map(item),
  };
  if (typeof raw["nextCursor"] === "string") out.nextCursor = raw["nextCursor"];
  if (typeof raw["previousCursor"] === "string") out.previousCursor = raw["previousCursor"];
  return out;
}
