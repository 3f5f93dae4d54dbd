// Compiled (not run) with `strict` by `npm test`: the published declarations type the
// reference's calls as a TypeScript user writes them, and refuse what they should.
import {
  ConvostoreClient,
  MemoryVersionConflictError,
  toAnthropicMessages,
  toOpenAIInput,
  type ConversationEvent,
  type ConversationMeta,
  type ListConversationsResult,
  type Message,
} from "@convostore/client";

export async function usage(store: ConvostoreClient): Promise<void> {
  const messageId: string = await store.appendMessage({
    conversationId: "c",
    role: "user",
    content: "hi",
    userId: "u_123",
    metadata: { source: "web" },
  });
  const messages: Message[] = await store.getMessages({
    conversationId: "c",
    limit: 50,
    order: "asc",
    after: messageId,
  });
  const createdAt: number = messages[0]!.createdAt;
  const updatedAt: number | undefined = messages[0]!.updatedAt;
  const meta: ConversationMeta | null = await store.getConversation({ conversationId: "c" });
  const title: unknown = meta?.metadata?.["title"];
  const { items, nextCursor }: ListConversationsResult = await store.listConversations({
    userId: "u_123",
    limit: 20,
  });
  const next: string | undefined = nextCursor;
  const merged: ConversationMeta = await store.updateConversation({
    conversationId: "c",
    metadata: { title: "T", tag: null },
  });
  const openai: Array<{ role: string; content: any }> = toOpenAIInput(messages);
  const anthropic: Array<{ role: string; content: unknown }> = toAnthropicMessages(messages);
  for await (const ev of store.events({ conversationId: "c" })) {
    const event: ConversationEvent = ev;
    if (event.kind === "conversation.deleted") {
      const gone: string = event.conversationId;
      void gone;
    } else {
      const seq: number = event.seq;
      void seq;
    }
    break;
  }
  try {
    await store.updateMemory({ memoryStoreId: "s", entryId: "e", content: "x", version: 1 });
  } catch (e) {
    if (e instanceof MemoryVersionConflictError) {
      const current: number | undefined = e.currentVersion;
      void current;
    }
  }
  // @ts-expect-error: a role the reference does not have
  await store.appendMessage({ conversationId: "c", role: "robot", content: "x" });
  // @ts-expect-error: conversationId is required
  await store.getMessages({ limit: 5 });
  // @ts-expect-error: order is 'asc' or 'desc'
  await store.listConversations({ order: "newest" });
  void [createdAt, updatedAt, title, items, next, merged, openai, anthropic];
}
