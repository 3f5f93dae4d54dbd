/** The data model, as the reference's interfaces and the server's camelCase JSON give it. */

export type Role = "user" | "assistant" | "system" | "tool";
export type Order = "asc" | "desc";
/** A message's body: plain text, a list (of strings or blocks), or one object (multimodal). */
export type Content = string | unknown[] | Record<string, unknown>;
export type Metadata = Record<string, unknown>;

/** One stored message; times are epoch milliseconds. */
export interface Message {
  messageId: string;
  role: Role;
  content: any;
  createdAt: number;
  metadata?: Record<string, any>;
  /** Present only after updateMessage. */
  updatedAt?: number;
}

/** A conversation's bookkeeping and its free-form metadata. */
export interface ConversationMeta {
  conversationId: string;
  createdAt: number;
  lastMessageAt: number;
  messageCount: number;
  metadata?: Record<string, any>;
  /** The user who owns it, where one does. */
  userId?: string;
}

/** A page of conversations: pass nextCursor as `after`, previousCursor as `before`. */
export interface ListConversationsResult {
  items: ConversationMeta[];
  nextCursor?: string;
  previousCursor?: string;
}

/** A page of messages (getMessagesPage): the cursors are message ids, in time. */
export interface ListMessagesResult {
  items: Message[];
  nextCursor?: string;
  previousCursor?: string;
}

/** A memory store; entryCount and totalSize are exact. */
export interface MemoryStore {
  memoryStoreId: string;
  name: string;
  description?: string;
  metadata?: Record<string, any>;
  userId?: string;
  createdAt: number;
  updatedAt: number;
  entryCount: number;
  totalSize: number;
}

/** A live memory entry at its current version; no content in listings or when redacted. */
export interface MemoryEntry {
  entryId: string;
  memoryStoreId: string;
  path: string;
  version: number;
  size: number;
  createdAt: number;
  updatedAt: number;
  content?: string;
  redacted: boolean;
}

export type MemoryOperation = "create" | "update" | "delete";

/** One immutable version of an entry. */
export interface MemoryVersion {
  versionId: string;
  memoryStoreId: string;
  entryId: string;
  version: number;
  operation: MemoryOperation;
  path: string;
  size: number;
  createdAt: number;
  redacted: boolean;
  redactedAt?: number;
  content?: string;
}

/** A page of a one-way listing: pass nextCursor as `after`. */
export interface Page<T> {
  items: T[];
  nextCursor?: string;
}

/** A message a search found, with its conversation and a snippet around the first match. */
export interface SearchHit {
  conversationId: string;
  message: Message;
  snippet: string;
}

/** A memory entry a search found (without its content). */
export interface MemorySearchHit {
  entryId: string;
  path: string;
  version: number;
  snippet: string;
}

export type ChangeKind =
  | "message.created"
  | "message.updated"
  | "message.deleted"
  | "messages.cleared"
  | "conversation.updated";

/** One event of a conversation's stream (`events()`): `id` resumes the stream. */
export type ConversationEvent =
  | {
      kind: ChangeKind;
      id: string;
      seq: number;
      createdAt: number;
      messageId?: string;
      /** The message as it is now (message.created, message.updated). */
      message?: Message;
      /** The conversation as it is now (conversation.updated). */
      conversation?: ConversationMeta;
    }
  | {
      /** The conversation went (deleted, or deleted and made again); the stream goes on. */
      kind: "conversation.deleted";
      id: string;
      conversationId: string;
    };

/** Who the client's token is for. */
export interface Me {
  userId?: string;
  admin: boolean;
}
