/** @convostore/client: the convostore store from JavaScript, over convostore-server. */

export { ConvostoreClient } from "./client.js";
export type { AppendMessageArgs, AppendMessagesArgs, ClientOptions, NewMessage, PageArgs } from "./client.js";
export { toAnthropicMessages, toAnthropicSystem, toOpenAIInput } from "./converters.js";
export type { ConvertibleMessage } from "./converters.js";
export * from "./errors.js";
export { EventParser } from "./events.js";
export type { StreamOptions, StreamState } from "./events.js";
export type { Fetch } from "./http.js";
export type * from "./types.js";
