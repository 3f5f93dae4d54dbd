/** @convostore/client: the convostore store from JavaScript, over convostore-server. */
export { ConvostoreClient } from "./client.js";
export { toAnthropicMessages, toAnthropicSystem, toOpenAIInput } from "./converters.js";
export * from "./errors.js";
export { EventParser } from "./events.js";
