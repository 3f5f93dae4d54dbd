// One stored message as DOM, whatever shape its content has: plain text, string lists,
// Anthropic content blocks, Chat Completions parts (tool_calls in metadata), OpenAI Responses
// items (the OpenAI Agents SDK's) and Claude Code transcript entries (the Claude adapter's).
// The shapes are those the core's converters read (convostore/convert.py).

import { RESPONSES_CALLS, RESPONSES_OUTPUTS } from "./client/converters.js";
import { h, jsonBlock, pretty, time } from "./dom.js";

/** What wrote a conversation, from the marks the adapters leave on it. */
export function frameworkOf(meta) {
  const md = meta.metadata || {};
  // A LangGraph thread's conversation is kept by the adapter's component (managedBy).
  if (md.managedBy && md.managedBy.component === "convostore-langgraph") return "LangGraph";
  if (meta.conversationId.startsWith("claude/") || "claude_session" in md) return "Claude";
  if ("openai_agents" in md) return "OpenAI Agents";
  if ("crewai" in md) return "CrewAI";
  return "core";
}

/** Where a thread waits for a human (the LangGraph adapter's `interrupt` mark: the node and
 * what it asked), as a badge; null when it does not wait. */
export function waitingBadge(meta) {
  const mark = (meta.metadata || {}).interrupt;
  if (!isObject(mark)) return null;
  const node = typeof mark.node === "string" && mark.node ? mark.node : null;
  const asked = typeof mark.value === "string" ? mark.value : "";
  return h("span", { class: "badge waiting", title: asked }, node ? `waiting at ${node}` : "waiting for a human");
}

const TEXT_KINDS = new Set(["text", "input_text", "output_text"]);
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

function textPart(text) {
  return h("div", { class: "text" }, text);
}

/** An image, shown only from a data: image or an https URL (the page's policy allows no other). */
function imagePart(src) {
  const s = String(src ?? "");
  if (/^data:image\/[a-z0-9.+-]+;base64,/i.test(s) || /^https:\/\//i.test(s)) {
    return h("img", { class: "image", src: s, alt: "image from the message", loading: "lazy" });
  }
  return h("div", { class: "note" }, `[image: ${s.slice(0, 200)}]`);
}

function imageOfSource(source) {
  if (source.type === "base64") return imagePart(`data:${source.media_type};base64,${source.data}`);
  if (source.type === "url") return imagePart(source.url);
  return null;
}

function collapsed(label, body, cls = "aside") {
  return h("details", { class: cls }, h("summary", {}, label), body);
}

/** Parts of a content value (a string, a block, or a list of them), in order. */
function blocks(content, pairing) {
  if (typeof content === "string") return [textPart(content)];
  const list = Array.isArray(content) ? content : [content];
  const out = [];
  for (const block of list) {
    if (typeof block === "string") {
      out.push(textPart(block));
      continue;
    }
    if (!isObject(block)) {
      out.push(h("pre", { class: "raw" }, pretty(block)));
      continue;
    }
    const kind = block.type;
    if (TEXT_KINDS.has(kind) && typeof block.text === "string") out.push(textPart(block.text));
    else if (kind === "refusal") out.push(h("div", { class: "text refusal" }, String(block.refusal ?? "")));
    else if (kind === "image" && isObject(block.source)) out.push(imageOfSource(block.source) ?? jsonBlock("image", block));
    else if (kind === "image_url") out.push(imagePart(isObject(block.image_url) ? block.image_url.url : block.image_url));
    else if (kind === "input_image" && block.image_url) out.push(imagePart(block.image_url));
    else if (kind === "tool_use") out.push(pairing.call(String(block.id), String(block.name), block.input));
    else if (kind === "tool_result") {
      const body = () => h("div", {}, blocks(block.content ?? "", pairing.inner()));
      out.push(pairing.result(String(block.tool_use_id), body, Boolean(block.is_error)));
    } else if (kind === "thinking") out.push(collapsed("thinking", h("div", { class: "text" }, String(block.thinking ?? ""))));
    else if (kind === "redacted_thinking") out.push(h("div", { class: "note" }, "[redacted thinking]"));
    else out.push(jsonBlock(String(kind ?? "block"), block));
  }
  return out;
}

/** A tool's output as parts: text (pretty when it is JSON), or content parts. */
function output(value, pairing) {
  if (typeof value === "string") {
    const shown = pretty(value);
    return shown === value ? textPart(value) : h("pre", {}, shown);
  }
  if (Array.isArray(value)) return h("div", {}, blocks(value, pairing));
  if (isObject(value) && typeof value.image_url === "string") return imagePart(value.image_url);
  return h("pre", {}, pretty(value));
}

/** An OpenAI Responses item, or null if the content is not one. */
function responsesItem(item, pairing) {
  const kind = item.type;
  if (kind in RESPONSES_CALLS) {
    const [key, name] = RESPONSES_CALLS[kind];
    return [pairing.call(String(item.call_id), String(item.name || name), item[key])];
  }
  if (RESPONSES_OUTPUTS.has(kind)) {
    return [pairing.result(String(item.call_id), () => output(item.output ?? "", pairing.inner()), false)];
  }
  if (kind === "reasoning") {
    const summary = (item.summary || []).map((s) => (isObject(s) ? s.text : s)).filter(Boolean);
    return [collapsed("reasoning", h("div", { class: "text" }, summary.join("\n\n") || "(no summary)"))];
  }
  if ((kind === "message" || kind === undefined) && typeof item.role === "string" && "content" in item) {
    return blocks(item.content, pairing);
  }
  if (typeof kind === "string") return [jsonBlock(kind, item)];
  return null;
}

/** A Claude Code transcript entry (what the Claude adapter stores), or null. */
function transcriptEntry(entry, pairing) {
  const kind = entry.type;
  const marked = "uuid" in entry || "sessionId" in entry || "parentUuid" in entry;
  if (typeof kind !== "string" || !(marked || kind === "agent_metadata")) return null;
  const inner = entry.message;
  if ((kind === "user" || kind === "assistant") && isObject(inner)) {
    return blocks(inner.content ?? "", pairing);
  }
  return [jsonBlock(`transcript entry: ${kind}`, entry)];
}

/** The parts of one message's content, with tool calls and results handed to `pairing`. */
export function contentParts(message, pairing) {
  const { content } = message;
  const metadata = message.metadata || {};
  let parts = null;
  if (isObject(content)) parts = transcriptEntry(content, pairing) ?? responsesItem(content, pairing);
  if (parts === null) {
    if (message.role === "tool" && metadata.tool_call_id !== undefined) {
      const name = metadata.name ? String(metadata.name) : null;
      parts = [pairing.result(String(metadata.tool_call_id), () => output(content, pairing.inner()), false, name)];
    } else {
      parts = blocks(content, pairing);
    }
  }
  if (message.role === "assistant" && Array.isArray(metadata.tool_calls)) {
    for (const call of metadata.tool_calls) {
      if (isObject(call) && isObject(call.function)) {
        parts.push(pairing.call(String(call.id), String(call.function.name), call.function.arguments));
      }
    }
  }
  // An empty text next to a tool call says nothing.
  return parts.filter((p) => !(p.classList?.contains("text") && p.textContent === ""));
}

/**
 * Tool calls paired with their results by call id. A call shows its result inside it; the
 * message holding the result then shows a short link to the call. A result whose call is
 * not on the page (not loaded yet) is shown where it is, and moves into the call when the
 * call's page loads.
 */
export class Pairing {
  constructor() {
    this.calls = new Map(); // call id -> {slot, details, name}
    this.results = new Map(); // call id -> {render, holder, isError, name}
  }

  /** A pairing for content nested in a result (its calls are not paired again). */
  inner() {
    return new Pairing();
  }

  call(id, name, args) {
    const slot = h("div", { class: "tool-result-slot" }, h("span", { class: "note" }, "no result yet"));
    const details = h(
      "details",
      { class: "tool-call", dataset: { callId: id } },
      h("summary", {}, h("span", { class: "tool-icon", "aria-hidden": "true" }, "⚙"), " ", h("strong", {}, name), h("span", { class: "note" }, ` call ${id}`)),
      h("div", { class: "tool-label" }, "arguments"),
      h("pre", { class: "tool-args" }, pretty(args ?? {})),
      h("div", { class: "tool-label" }, "result"),
      slot,
    );
    this.calls.set(id, { slot, details, name });
    const result = this.results.get(id);
    if (result) this.#pair(id, result);
    return details;
  }

  result(id, render, isError, name = null) {
    const holder = h("div", { class: "tool-result", dataset: { resultFor: id } });
    const result = { render, holder, isError, name };
    this.results.set(id, result);
    const call = this.calls.get(id);
    if (call) this.#pair(id, result);
    else {
      holder.append(
        collapsed(
          `${isError ? "error result" : "result"} of ${name ?? "a tool call"} (call ${id}, not loaded)`,
          render(),
          "tool-call orphan",
        ),
      );
    }
    return holder;
  }

  #pair(id, result) {
    const call = this.calls.get(id);
    const body = result.render();
    if (result.isError) body.classList.add("error");
    call.slot.replaceChildren(body);
    call.details.classList.add("paired");
    const jump = h(
      "button",
      {
        type: "button",
        class: "link",
        onclick: () => {
          call.details.open = true;
          call.details.scrollIntoView({ block: "center" });
          call.details.querySelector("summary").focus();
        },
      },
      `↳ ${result.isError ? "error result" : "result"} of ${call.name}: shown with its call`,
    );
    result.holder.replaceChildren(jump);
  }
}

/** A message as an <article>: role, time, parts, metadata. */
export function messageElement(message, pairing) {
  const metadata = message.metadata;
  const hasMetadata = metadata && Object.keys(metadata).length > 0;
  return h(
    "article",
    { class: `msg role-${message.role}`, dataset: { messageId: message.messageId }, "aria-label": `${message.role} message` },
    h(
      "header",
      {},
      h("span", { class: "role" }, message.role),
      " ",
      time(message.createdAt),
      message.updatedAt ? h("span", { class: "note" }, " (edited ", time(message.updatedAt), ")") : null,
      h("span", { class: "msg-id" }, message.messageId),
    ),
    h("div", { class: "parts" }, contentParts(message, pairing)),
    hasMetadata ? jsonBlock("metadata", metadata, { cls: "json meta" }) : null,
  );
}
