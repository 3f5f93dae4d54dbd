/**
 * `ConvostoreClient`: the reference's Node API (`appendMessage`, `getMessages`, ...) and the
 * rest of convostore-server's API (memory stores, search, live events), method for method as
 * the Python store names them, in camelCase.
 */

import {
  checkArray,
  checkContent,
  checkCursors,
  checkId,
  checkInt,
  checkLimit,
  checkMetadata,
  checkObject,
  checkOptionalId,
  checkOrder,
  checkRole,
  checkText,
  encodeObject,
} from "./checks.js";
import { toAnthropicMessages, toOpenAIInput } from "./converters.js";
import { NotFoundError } from "./errors.js";
import { streamEvents, type StreamOptions } from "./events.js";
import { Http, chosenId, segment, type Fetch, type Query } from "./http.js";
import type {
  Content,
  ConversationEvent,
  ConversationMeta,
  ListConversationsResult,
  ListMessagesResult,
  Me,
  MemoryEntry,
  MemorySearchHit,
  MemoryStore,
  MemoryVersion,
  Message,
  Order,
  Page,
  Role,
  SearchHit,
} from "./types.js";
import * as wire from "./wire.js";

export interface ClientOptions {
  /** The server's address, e.g. `http://127.0.0.1:8000` (a path prefix is kept). */
  baseUrl: string;
  /** A bearer token of the server's token table. */
  token?: string;
  /** The `fetch` to use (tests, edge runtimes); the platform's by default. */
  fetch?: Fetch;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

/** `userId`: an admin's token acts as this user; a user's token may give only its own. */
interface AsUser {
  userId?: string | undefined;
}

interface InConversation extends AsUser {
  conversationId: string;
}

interface InMessage extends InConversation {
  messageId: string;
}

export interface AppendMessageArgs extends InConversation {
  role: Role;
  content: Content;
  metadata?: Record<string, any> | undefined;
  /** The message's id (a retry with it stores nothing twice); `msg_...` is made otherwise. */
  messageId?: string | undefined;
}

export interface NewMessage {
  role: Role;
  content: Content;
  metadata?: Record<string, any> | undefined;
  messageId?: string | undefined;
}

export interface AppendMessagesArgs extends InConversation {
  messages: NewMessage[];
  /** Makes a retry safe: the batch's n-th message without an id gets `<key>:<n>`. */
  idempotencyKey?: string | undefined;
}

export interface PageArgs {
  limit?: number | undefined;
  order?: Order | undefined;
  after?: string | undefined;
  before?: string | undefined;
}

export interface InStore extends AsUser {
  memoryStoreId: string;
}

export interface InEntry extends InStore {
  entryId: string;
}

function validPage(args: PageArgs): Query {
  checkLimit(args.limit);
  checkOrder(args.order);
  checkCursors(args.after, args.before);
  if (args.after != null) checkText("after", args.after);
  if (args.before != null) checkText("before", args.before);
  return {
    limit: args.limit,
    order: args.order,
    after: args.after ?? undefined,
    before: args.before ?? undefined,
  };
}

function asUser(args: AsUser): Query {
  return { userId: checkOptionalId("userId", args.userId) };
}

function conversationPath(args: InConversation, query: Query, rest = ""): string {
  return `/conversations/${chosenId("conversationId", checkId("conversationId", args.conversationId), query)}${rest}`;
}

function messagePath(args: InMessage, query: Query): string {
  const mid = chosenId("messageId", checkId("messageId", args.messageId), query);
  return conversationPath(args, query, `/messages/${mid}`);
}

function storePath(args: InStore, rest = ""): string {
  return `/memory_stores/${segment(checkId("memoryStoreId", args.memoryStoreId))}${rest}`;
}

function entryPath(args: InEntry, rest = ""): string {
  return storePath(args, `/memories/${segment(checkId("entryId", args.entryId))}${rest}`);
}

/** A client of convostore-server. `new ConvostoreClient({ baseUrl, token })`. */
export class ConvostoreClient {
  private readonly http: Http;

  constructor(options: ClientOptions) {
    checkText("baseUrl", options.baseUrl);
    if (options.token !== undefined) checkText("token", options.token);
    const fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.http = new Http(options.baseUrl, options.token, fetchImpl, options.headers ?? {});
  }

  /** Refuse every call from now on (`ClosedError`) and end the open event streams (their
   * iterations finish). */
  close(): void {
    this.http.closed = true;
    for (const stop of this.http.streams) stop.abort();
  }

  /** Who the token is for. */
  async me(): Promise<Me> {
    const me = (await this.http.json("GET", "/me")) as { userId: string | null; admin: boolean };
    return me.userId == null ? { admin: me.admin } : { userId: me.userId, admin: me.admin };
  }

  // -- messages --------------------------------------------------------------------------

  /** Append a message (the conversation is created if it does not exist); its `msg_` id. */
  async appendMessage(args: AppendMessageArgs): Promise<string> {
    const query = asUser(args);
    const path = conversationPath(args, query, "/messages");
    const body: Record<string, unknown> = {
      role: checkRole(args.role),
      content: checkContent("content", args.content),
    };
    const metadata = checkMetadata("metadata", args.metadata);
    if (metadata !== undefined) body["metadata"] = metadata;
    const mid = checkOptionalId("messageId", args.messageId);
    if (mid !== undefined) body["messageId"] = mid;
    const answer = (await this.http.json("POST", path, { query, json: encodeObject(body) })) as {
      messageId: string;
    };
    return answer.messageId;
  }

  /** Append a batch atomically (all or none); the ids in order. */
  async appendMessages(args: AppendMessagesArgs): Promise<string[]> {
    const query = asUser(args);
    const path = conversationPath(args, query, "/messages");
    checkArray("messages", args.messages);
    const messages = args.messages.map((m, i) => {
      const one: Record<string, unknown> = {
        role: checkRole(m.role, `messages[${i}].role`),
        content: checkContent(`messages[${i}].content`, m.content),
      };
      const metadata = checkMetadata(`messages[${i}].metadata`, m.metadata);
      if (metadata !== undefined) one["metadata"] = metadata;
      const mid = checkOptionalId(`messages[${i}].messageId`, m.messageId);
      if (mid !== undefined) one["messageId"] = mid;
      return one;
    });
    const headers: Record<string, string> = {};
    const key = checkOptionalId("idempotencyKey", args.idempotencyKey);
    if (key !== undefined) headers["Idempotency-Key"] = key;
    const json = `{"messages":[${messages.map((m, i) => encodeObject(m, (k) => `messages[${i}].${k}`)).join(",")}]}`;
    const answer = (await this.http.json("POST", path, { query, json, headers })) as {
      messageIds: string[];
    };
    return answer.messageIds;
  }

  /** A page of messages, oldest first by default; `[]` for a conversation that does not exist. */
  async getMessages(args: InConversation & PageArgs): Promise<Message[]> {
    return (await this.getMessagesPage(args)).items;
  }

  /** `getMessages` with the page's cursors: `nextCursor` (pass it as `after`) when later
   * messages exist, `previousCursor` (as `before`) when earlier ones do. */
  async getMessagesPage(args: InConversation & PageArgs): Promise<ListMessagesResult> {
    const query = { ...asUser(args), ...validPage(args) };
    const path = conversationPath(args, query, "/messages");
    return wire.page(await this.http.json("GET", path, { query }), wire.message);
  }

  /** One message, or null. */
  async getMessage(args: InMessage): Promise<Message | null> {
    const query = asUser(args);
    const path = messagePath(args, query);
    try {
      return wire.message(await this.http.json("GET", path, { query }));
    } catch (error) {
      if (error instanceof NotFoundError) return null;
      throw error;
    }
  }

  /** Overwrite a message's content and/or metadata (metadata replaced, not merged). */
  async updateMessage(
    args: InMessage & { content?: Content | undefined; metadata?: Record<string, any> | undefined },
  ): Promise<Message> {
    const query = asUser(args);
    const path = messagePath(args, query);
    const body: Record<string, unknown> = {};
    if (args.content !== undefined) body["content"] = checkContent("content", args.content);
    const metadata = checkMetadata("metadata", args.metadata);
    if (metadata !== undefined) body["metadata"] = metadata;
    return wire.message(await this.http.json("PATCH", path, { query, json: encodeObject(body) }));
  }

  /** Delete one message (a missing one: nothing happens). */
  async deleteMessage(args: InMessage): Promise<void> {
    const query = asUser(args);
    await this.http.json("DELETE", messagePath(args, query), { query });
  }

  /** Delete every message of the conversation; its metadata stays. */
  async clearMessages(args: InConversation): Promise<void> {
    const query = asUser(args);
    await this.http.json("DELETE", conversationPath(args, query, "/messages"), { query });
  }

  // -- conversations ---------------------------------------------------------------------

  /** The conversation's metadata and counters, or null if it does not exist. */
  async getConversation(args: InConversation): Promise<ConversationMeta | null> {
    const query = asUser(args);
    const path = conversationPath(args, query);
    try {
      return wire.conversation(await this.http.json("GET", path, { query }));
    } catch (error) {
      if (error instanceof NotFoundError) return null;
      throw error;
    }
  }

  /** Conversations by last activity, newest first by default, a page at a time. */
  async listConversations(args: AsUser & PageArgs = {}): Promise<ListConversationsResult> {
    const query = { ...asUser(args), ...validPage(args) };
    return wire.page(await this.http.json("GET", "/conversations", { query }), wire.conversation);
  }

  /** Shallow-merge `metadata` into the conversation's (`null` deletes a key); the result. */
  async updateConversation(
    args: InConversation & { metadata: Record<string, any> },
  ): Promise<ConversationMeta> {
    const query = asUser(args);
    const path = conversationPath(args, query);
    const metadata = checkObject("metadata", args.metadata);
    return wire.conversation(
      await this.http.json("PATCH", path, { query, json: encodeObject({ metadata }) }),
    );
  }

  /** Copy the conversation into a new one, `newConversationId`, in one transaction: every
   * message, or those up to and including `upTo` (a message id), with their ids, contents,
   * metadata and times. The copy's metadata is the source's (less a summary past the cut)
   * shallow-merged with `metadata`, plus `forkedFrom`; returns the copy's. A taken id is a
   * ConversationExistsError, a missing (or another user's) source a ConversationNotFoundError. */
  async forkConversation(
    args: InConversation & {
      newConversationId: string;
      upTo?: string | undefined;
      metadata?: Record<string, any> | undefined;
    },
  ): Promise<ConversationMeta> {
    const query = asUser(args);
    const path = conversationPath(args, query, "/fork");
    const body: Record<string, unknown> = {
      newConversationId: checkId("newConversationId", args.newConversationId),
    };
    const upTo = checkOptionalId("upTo", args.upTo);
    if (upTo !== undefined) body["upTo"] = upTo;
    const metadata = checkMetadata("metadata", args.metadata);
    if (metadata !== undefined) body["metadata"] = metadata;
    return wire.conversation(await this.http.json("POST", path, { query, json: encodeObject(body) }));
  }

  /** Delete the conversation and its messages (irrecoverable; a missing one: nothing). */
  async deleteConversation(args: InConversation): Promise<void> {
    const query = asUser(args);
    await this.http.json("DELETE", conversationPath(args, query), { query });
  }

  /** The conversation's live events, from now (or after `after`, an event's id), for as long
   * as the caller reads: `for await (const ev of client.events({ conversationId }))`. */
  events(args: InConversation & StreamOptions): AsyncGenerator<ConversationEvent, void, undefined> {
    const query = asUser(args);
    const path = conversationPath(args, query, "/events");
    if (typeof args.after === "number") checkInt("after", args.after, 0, Number.MAX_SAFE_INTEGER);
    else if (args.after !== undefined) checkText("after", args.after);
    return streamEvents(this.http, path, query, args);
  }

  // -- search ----------------------------------------------------------------------------

  /** The caller's messages holding every term of `query`, newest first. */
  async searchMessages(
    args: AsUser & {
      query: string;
      conversationId?: string | undefined;
      roles?: Role[] | undefined;
      limit?: number | undefined;
      after?: string | undefined;
    },
  ): Promise<Page<SearchHit>> {
    const query: Query = {
      ...asUser(args),
      q: checkText("query", args.query),
      conversationId: checkOptionalId("conversationId", args.conversationId),
      role: args.roles?.map((r, i) => checkRole(r, `roles[${i}]`)),
      limit: checkLimit(args.limit),
      after: args.after == null ? undefined : checkText("after", args.after),
    };
    return wire.page(await this.http.json("GET", "/search/messages", { query }), wire.searchHit);
  }

  // -- memory stores ---------------------------------------------------------------------

  async createMemoryStore(
    args: AsUser & {
      name: string;
      description?: string | undefined;
      metadata?: Record<string, any> | undefined;
    },
  ): Promise<MemoryStore> {
    const body: Record<string, unknown> = { name: checkText("name", args.name) };
    if (args.description != null) body["description"] = checkText("description", args.description);
    const metadata = checkMetadata("metadata", args.metadata);
    if (metadata !== undefined) body["metadata"] = metadata;
    const query = asUser(args);
    return wire.memoryStore(
      await this.http.json("POST", "/memory_stores", { query, json: encodeObject(body) }),
    );
  }

  async listMemoryStores(
    args: AsUser & { limit?: number | undefined; after?: string | undefined } = {},
  ): Promise<Page<MemoryStore>> {
    const query = { ...asUser(args), limit: checkLimit(args.limit), after: args.after ?? undefined };
    return wire.page(await this.http.json("GET", "/memory_stores", { query }), wire.memoryStore);
  }

  /** The memory store with its entryCount and totalSize (MemoryStoreNotFoundError if none). */
  async getMemoryStore(args: InStore): Promise<MemoryStore> {
    const query = asUser(args);
    return wire.memoryStore(await this.http.json("GET", storePath(args), { query }));
  }

  async deleteMemoryStore(args: InStore): Promise<void> {
    const query = asUser(args);
    await this.http.json("DELETE", storePath(args), { query });
  }

  /** A new entry at `path`, version 1. */
  async createMemory(args: InStore & { path: string; content: string }): Promise<MemoryEntry> {
    const query = asUser(args);
    const body = { path: checkText("path", args.path), content: checkText("content", args.content) };
    return wire.memoryEntry(
      await this.http.json("POST", storePath(args, "/memories"), { query, json: encodeObject(body) }),
    );
  }

  /** Live entries by path, without their content. */
  async listMemories(
    args: InStore & {
      pathPrefix?: string | undefined;
      limit?: number | undefined;
      after?: string | undefined;
    },
  ): Promise<Page<MemoryEntry>> {
    const query: Query = {
      ...asUser(args),
      pathPrefix: args.pathPrefix == null ? undefined : checkText("pathPrefix", args.pathPrefix),
      limit: checkLimit(args.limit),
      after: args.after ?? undefined,
    };
    return wire.page(await this.http.json("GET", storePath(args, "/memories"), { query }), wire.memoryEntry);
  }

  async getMemory(args: InEntry): Promise<MemoryEntry> {
    const query = asUser(args);
    return wire.memoryEntry(await this.http.json("GET", entryPath(args), { query }));
  }

  /** A new version of the entry, written only if `version` is its current one (else
   * MemoryVersionConflictError, with `currentVersion`); `path` moves it. */
  async updateMemory(
    args: InEntry & { version: number; content?: string | undefined; path?: string | undefined },
  ): Promise<MemoryEntry> {
    const query = asUser(args);
    const body: Record<string, unknown> = {
      version: checkInt("version", args.version, 1, Number.MAX_SAFE_INTEGER),
    };
    if (args.content != null) body["content"] = checkText("content", args.content);
    if (args.path != null) body["path"] = checkText("path", args.path);
    return wire.memoryEntry(
      await this.http.json("PUT", entryPath(args), { query, json: encodeObject(body) }),
    );
  }

  /** Delete the entry (only at `version`, when given); the deletion's version. */
  async deleteMemory(args: InEntry & { version?: number | undefined }): Promise<MemoryVersion> {
    const query: Query = { ...asUser(args) };
    if (args.version != null)
      query["version"] = checkInt("version", args.version, 1, Number.MAX_SAFE_INTEGER);
    return wire.memoryVersion(await this.http.json("DELETE", entryPath(args), { query }));
  }

  /** Versions oldest first (of one entry, with `entryId`), without their content. */
  async listMemoryVersions(
    args: InStore & { entryId?: string | undefined; limit?: number | undefined; after?: string | undefined },
  ): Promise<Page<MemoryVersion>> {
    const query: Query = {
      ...asUser(args),
      entryId: checkOptionalId("entryId", args.entryId),
      limit: checkLimit(args.limit),
      after: args.after ?? undefined,
    };
    return wire.page(
      await this.http.json("GET", storePath(args, "/versions"), { query }),
      wire.memoryVersion,
    );
  }

  async getMemoryVersion(args: InStore & { versionId: string }): Promise<MemoryVersion> {
    const query = asUser(args);
    const path = storePath(args, `/versions/${segment(checkId("versionId", args.versionId))}`);
    return wire.memoryVersion(await this.http.json("GET", path, { query }));
  }

  /** Erase a version's content for good (admins only). */
  async redactMemoryVersion(args: InStore & { versionId: string }): Promise<MemoryVersion> {
    const query = asUser(args);
    const path = storePath(args, `/versions/${segment(checkId("versionId", args.versionId))}/redact`);
    return wire.memoryVersion(await this.http.json("POST", path, { query }));
  }

  /** Live entries whose path and content hold every term of `query`, by path. */
  async searchMemories(
    args: InStore & {
      query: string;
      pathPrefix?: string | undefined;
      limit?: number | undefined;
      after?: string | undefined;
    },
  ): Promise<Page<MemorySearchHit>> {
    const query: Query = {
      ...asUser(args),
      q: checkText("query", args.query),
      pathPrefix: args.pathPrefix == null ? undefined : checkText("pathPrefix", args.pathPrefix),
      limit: checkLimit(args.limit),
      after: args.after ?? undefined,
    };
    return wire.page(
      await this.http.json("GET", storePath(args, "/search"), { query }),
      wire.memorySearchHit,
    );
  }

  // -- converters (pure; also named exports) -------------------------------------------

  /** Messages for `anthropic.messages.create({ messages })`. */
  toAnthropicMessages(messages: readonly Message[]): Array<{ role: string; content: unknown }> {
    return toAnthropicMessages(messages);
  }

  /** Messages for `openai.chat.completions.create({ messages })`. */
  toOpenAIInput(messages: readonly Message[]): Array<{ role: string; content: any }> {
    return toOpenAIInput(messages);
  }
}
