// @convostore/client in a browser, from the server's own origin under the web view's
// Content-Security-Policy: the calls a front-end makes, the results written into the page.
import { ConvostoreClient, MemoryValidationError, toAnthropicMessages } from "./dist/index.js";

const out = document.getElementById("out");
const token = new URLSearchParams(location.hash.slice(1)).get("token");
const store = new ConvostoreClient({ baseUrl: location.origin, token });
const conversationId = "browser-1";

async function run() {
  const results = {};
  results.me = await store.me();
  results.messageId = await store.appendMessage({
    conversationId,
    role: "user",
    content: "<img src=x onerror=alert(1)>",
    metadata: { source: "browser" },
  });
  const events = store.events({ conversationId, after: 0 });
  results.event = (await events.next()).value.kind;
  await events.return();
  const messages = await store.getMessages({ conversationId });
  results.contents = messages.map((m) => m.content);
  results.anthropic = toAnthropicMessages(messages);
  results.conversations = (await store.listConversations()).items.map((c) => c.conversationId);
  try {
    await store.getMessages({ conversationId, limit: 0 });
  } catch (error) {
    results.refused = error instanceof MemoryValidationError ? error.message : String(error);
  }
  return results;
}

run().then(
  (results) => {
    out.textContent = JSON.stringify(results);
    document.body.dataset.done = "ok";
  },
  (error) => {
    out.textContent = `${error.name}: ${error.message}`;
    document.body.dataset.done = "failed";
  },
);
