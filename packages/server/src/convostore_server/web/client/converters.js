/**
 * Stored messages to Anthropic Messages input and OpenAI Chat Completions input: a port of the
 * Python package's `convostore.convert`, which it matches output for output (a shared corpus
 * of messages, `tests/fixtures/converters.json`, is checked by both test suites).
 *
 * Content is read in any of the shapes an adapter or a caller stores: plain text, string
 * lists, Anthropic content blocks, Chat Completions parts (with `metadata.tool_calls` on
 * assistant messages and `metadata.tool_call_id` on tool messages), OpenAI Responses items and
 * Claude Code transcript entries. Both outputs come from one neutral form, so tool calls are
 * paired the same way: a call is kept only if the next turn answers it, and an answer only if
 * the turn before asked for it.
 */
import { dumps, get, isMapping, str, truthy } from "./python.js";
class Text {
    text;
    constructor(text) {
        this.text = text;
    }
}
class Image {
    url;
    constructor(url) {
        this.url = url;
    }
}
class Call {
    id;
    name;
    args;
    constructor(id, name, args) {
        this.id = id;
        this.name = name;
        this.args = args;
    }
}
class Result {
    callId;
    content;
    isError;
    constructor(callId, content, isError = false) {
        this.callId = callId;
        this.content = content;
        this.isError = isError;
    }
}
class Raw {
    block;
    constructor(block) {
        this.block = block;
    }
}
class Turn {
    kind;
    parts;
    plain;
    constructor(kind, parts = [], plain = false) {
        this.kind = kind;
        this.parts = parts;
        this.plain = plain;
    }
}
const DROPPED = new Set(["reasoning", "compaction", "item_reference"]);
const THINKING = new Set(["thinking", "redacted_thinking"]);
function parseArguments(raw) {
    if (typeof raw === "string") {
        try {
            return JSON.parse(raw);
        }
        catch {
            return raw;
        }
    }
    return raw;
}
function imageFromSource(source) {
    const kind = get(source, "type");
    if (kind === "base64") {
        return new Image(`data:${str(get(source, "media_type"))};base64,${str(get(source, "data"))}`);
    }
    if (kind === "url")
        return new Image(str(get(source, "url")));
    return null;
}
function parts(content) {
    if (typeof content === "string")
        return [new Text(content)];
    const blocks = isMapping(content) ? [content] : Array.isArray(content) ? content : [];
    const out = [];
    for (const block of blocks) {
        if (typeof block === "string") {
            out.push(new Text(block));
            continue;
        }
        if (!isMapping(block))
            continue;
        const kind = get(block, "type");
        const text = get(block, "text");
        if ((kind === "text" || kind === "input_text" || kind === "output_text") && typeof text === "string") {
            out.push(new Text(text));
        }
        else if (kind === "refusal") {
            out.push(new Text(str(get(block, "refusal", ""))));
        }
        else if (kind === "image" && isMapping(get(block, "source"))) {
            const image = imageFromSource(get(block, "source"));
            out.push(image ?? new Raw({ ...block }));
        }
        else if (kind === "image_url") {
            const url = get(block, "image_url");
            out.push(new Image(str(isMapping(url) ? get(url, "url") : url)));
        }
        else if (kind === "input_image" && truthy(get(block, "image_url"))) {
            out.push(new Image(str(get(block, "image_url"))));
        }
        else if (kind === "input_image" || kind === "input_file") {
            const candidates = [get(block, "filename"), get(block, "file_id"), get(block, "file_url")];
            const label = candidates.find(truthy) ?? candidates[2];
            out.push(new Text(`[${kind.slice(6)}: ${truthy(label) ? str(label) : "attached"}]`));
        }
        else if (kind === "tool_use") {
            out.push(new Call(str(get(block, "id")), str(get(block, "name")), get(block, "input")));
        }
        else if (kind === "tool_result") {
            out.push(new Result(str(get(block, "tool_use_id")), get(block, "content", ""), truthy(get(block, "is_error", false))));
        }
        else if (typeof kind !== "string" || !DROPPED.has(kind)) {
            out.push(new Raw({ ...block }));
        }
    }
    return out;
}
// -- OpenAI Responses items (the OpenAI Agents SDK's session items) -------------------------
/** Each Responses call item's kind: the field holding its input, and the name it takes when
 * the item has none. The web view renders calls by it too. */
export const RESPONSES_CALLS = {
    function_call: ["arguments", null],
    custom_tool_call: ["input", null],
    computer_call: ["action", "computer"],
    local_shell_call: ["action", "local_shell"],
    shell_call: ["action", "shell"],
    apply_patch_call: ["operation", "apply_patch"],
};
/** The Responses item kinds that are a call's output. */
export const RESPONSES_OUTPUTS = new Set(Object.keys(RESPONSES_CALLS).map((k) => `${k}_output`));
const RESPONSES_DROPPED = new Set([
    ...DROPPED,
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_list_tools",
    "mcp_call",
    "mcp_approval_request",
    "mcp_approval_response",
    "tool_search_call",
    "tool_search_output",
    "additional_tools",
    "configuration_update",
    "program",
    "program_output",
]);
const MESSAGE_ROLES = new Set(["user", "assistant", "system", "developer"]);
function responsesOutput(output) {
    if (typeof output === "string" || output === null)
        return truthy(output) ? output : "";
    if (isMapping(output)) {
        const url = get(output, "image_url");
        if (typeof url === "string")
            return [{ type: "input_image", image_url: url }];
        return dumps(output);
    }
    if (Array.isArray(output) && output.every(isMapping))
        return output;
    return dumps(output);
}
function responsesItem(item) {
    const kind = get(item, "type");
    if (typeof kind === "string" && Object.prototype.hasOwnProperty.call(RESPONSES_CALLS, kind)) {
        const [key, defaultName] = RESPONSES_CALLS[kind];
        const name = truthy(get(item, "name")) ? get(item, "name") : defaultName;
        return new Turn("assistant", [new Call(str(get(item, "call_id")), str(name), get(item, key))]);
    }
    if (typeof kind === "string" && RESPONSES_OUTPUTS.has(kind)) {
        return new Turn("results", [new Result(str(get(item, "call_id")), responsesOutput(get(item, "output")))]);
    }
    if (typeof kind === "string" && RESPONSES_DROPPED.has(kind))
        return new Turn("assistant", []);
    const role = get(item, "role");
    if ((kind === "message" || kind === null) &&
        typeof role === "string" &&
        MESSAGE_ROLES.has(role) &&
        "content" in item) {
        const turnKind = role === "system" || role === "developer" ? "system" : role;
        const inner = item["content"];
        return new Turn(turnKind, parts(inner), typeof inner === "string");
    }
    return null;
}
function transcriptEntry(entry) {
    const kind = get(entry, "type");
    const marked = ["uuid", "sessionId", "parentUuid"].some((k) => k in entry);
    if (typeof kind !== "string" || !(marked || kind === "agent_metadata"))
        return null;
    const inner = get(entry, "message");
    if ((kind !== "user" && kind !== "assistant") || !isMapping(inner))
        return [];
    const innerRole = get(inner, "role");
    const role = innerRole === "user" || innerRole === "assistant" ? innerRole : kind;
    return turns({ role, content: get(inner, "content", ""), metadata: {} });
}
function turns(message) {
    const content = message.content === undefined ? null : message.content;
    const metadata = truthy(message.metadata) ? message.metadata : {};
    if (isMapping(content)) {
        const entry = transcriptEntry(content);
        if (entry !== null)
            return entry;
        const turn = responsesItem(content);
        if (turn !== null)
            return [turn];
    }
    const found = parts(content);
    const plain = typeof content === "string";
    if (message.role === "tool") {
        const callId = get(metadata, "tool_call_id");
        if (callId !== null && !found.some((p) => p instanceof Result)) {
            return [new Turn("results", [new Result(str(callId), content)])];
        }
        return [
            new Turn("results", found.filter((p) => p instanceof Result)),
        ];
    }
    if (message.role === "assistant") {
        const calls = get(metadata, "tool_calls");
        for (const call of Array.isArray(calls) ? calls : []) {
            if (isMapping(call) && isMapping(get(call, "function"))) {
                const fn = get(call, "function");
                found.push(new Call(str(get(call, "id")), str(get(fn, "name")), get(fn, "arguments")));
            }
        }
        return [new Turn("assistant", found, plain)];
    }
    if (message.role === "system")
        return [new Turn("system", found, plain)];
    const results = found.filter((p) => p instanceof Result);
    const rest = found.filter((p) => !(p instanceof Result));
    const out = results.length ? [new Turn("results", results)] : [];
    return rest.length ? [...out, new Turn("user", rest, plain)] : out;
}
function merge(all, kinds) {
    const merged = [];
    for (const turn of all) {
        if (!turn.parts.length)
            continue;
        const last = merged[merged.length - 1];
        if (last !== undefined && last.kind === turn.kind && kinds.has(turn.kind)) {
            merged[merged.length - 1] = new Turn(turn.kind, [...last.parts, ...turn.parts]);
        }
        else {
            merged.push(turn);
        }
    }
    return merged;
}
const PAIRED = new Set(["assistant", "results"]);
/** Neutral turns, consecutive assistant and result turns merged and tool calls paired. */
function paired(messages) {
    const all = merge(messages.flatMap((m) => turns(m)), PAIRED);
    all.forEach((turn, i) => {
        const next = all[i + 1];
        const previous = all[i - 1];
        if (turn.kind === "assistant") {
            const after = next !== undefined && next.kind === "results" ? next : undefined;
            const answered = new Set(after ? after.parts.flatMap((p) => (p instanceof Result ? [p.callId] : [])) : []);
            turn.parts = turn.parts.filter((p) => !(p instanceof Call) || answered.has(p.id));
            if (turn.parts.every((p) => p instanceof Text && !p.text))
                turn.parts = [];
        }
        else if (turn.kind === "results") {
            const before = previous !== undefined && previous.kind === "assistant" ? previous : undefined;
            const asked = new Set(before ? before.parts.flatMap((p) => (p instanceof Call ? [p.id] : [])) : []);
            turn.parts = turn.parts.filter((p) => p instanceof Result && asked.has(p.callId));
        }
    });
    return merge(all, PAIRED);
}
function textOf(content) {
    if (typeof content === "string")
        return content;
    return parts(content)
        .flatMap((p) => (p instanceof Text ? [p.text] : []))
        .join("\n");
}
// -- Anthropic -------------------------------------------------------------------------------
function anthropicImage(image) {
    if (image.url.startsWith("data:") && image.url.includes(";base64,")) {
        const rest = image.url.slice(5);
        const at = rest.indexOf(";base64,");
        const source = { type: "base64", media_type: rest.slice(0, at), data: rest.slice(at + 8) };
        return { type: "image", source };
    }
    return { type: "image", source: { type: "url", url: image.url } };
}
function anthropicBlock(part) {
    if (part instanceof Text)
        return part.text ? { type: "text", text: part.text } : null;
    if (part instanceof Image)
        return anthropicImage(part);
    if (part instanceof Call) {
        const args = parseArguments(part.args === undefined ? null : part.args);
        return {
            type: "tool_use",
            id: part.id,
            name: part.name,
            input: isMapping(args) ? args : { arguments: args },
        };
    }
    if (part instanceof Result) {
        let content = part.content;
        if (typeof content !== "string") {
            content = parts(content)
                .map(anthropicBlock)
                .filter((b) => b !== null);
        }
        const block = { type: "tool_result", tool_use_id: part.callId, content };
        if (part.isError)
            block["is_error"] = true;
        return block;
    }
    return part.block;
}
/** The system messages' text, for the Messages API's separate `system` parameter. */
export function toAnthropicSystem(messages) {
    const texts = paired(messages)
        .filter((t) => t.kind === "system")
        .flatMap((t) => t.parts.flatMap((p) => (p instanceof Text ? [p.text] : [])));
    return texts.filter((t) => t).join("\n\n") || null;
}
/** Messages for `anthropic.messages.create({ messages })`: system text left out (see
 * `toAnthropicSystem`), tool results as user `tool_result` blocks, consecutive turns of one
 * role merged. */
export function toAnthropicMessages(messages) {
    const out = [];
    for (const turn of paired(messages)) {
        if (turn.kind === "system")
            continue;
        const role = turn.kind === "assistant" ? "assistant" : "user";
        const shown = turn.parts.filter((p) => turn.kind !== "assistant" || !(p instanceof Result));
        const only = shown[0];
        let content;
        if (turn.plain && shown.length === 1 && only instanceof Text && only.text) {
            content = only.text;
        }
        else {
            const blocks = shown.map(anthropicBlock).filter((b) => b !== null);
            if (!blocks.length)
                continue;
            content = blocks;
        }
        const last = out[out.length - 1];
        if (last !== undefined && last.role === role) {
            const asBlocks = (c) => typeof c === "string" ? [{ type: "text", text: c }] : c;
            out[out.length - 1] = { role, content: [...asBlocks(last.content), ...asBlocks(content)] };
        }
        else {
            out.push({ role, content });
        }
    }
    return out;
}
// -- OpenAI Chat Completions -----------------------------------------------------------------
function openaiPart(part) {
    if (part instanceof Text)
        return { type: "text", text: part.text };
    if (part instanceof Image)
        return { type: "image_url", image_url: { url: part.url } };
    if (part instanceof Raw) {
        const kind = get(part.block, "type");
        return typeof kind === "string" && THINKING.has(kind) ? null : part.block;
    }
    return null;
}
/** Messages for `openai.chat.completions.create({ messages })`: roles kept, plain content
 * passed through, tool calls as `tool_calls` and their results as `tool` messages. */
export function toOpenAIInput(messages) {
    const out = [];
    for (const turn of paired(messages)) {
        if (turn.kind === "results") {
            for (const p of turn.parts) {
                if (p instanceof Result)
                    out.push({ role: "tool", tool_call_id: p.callId, content: textOf(p.content) });
            }
            continue;
        }
        const calls = turn.parts.filter((p) => p instanceof Call);
        const shown = turn.parts.filter((p) => !(calls.length && p instanceof Text && !p.text));
        const blocks = shown.map(openaiPart).filter((b) => b !== null);
        const first = blocks[0];
        let content;
        if (turn.plain && blocks.length === 1 && first !== undefined && get(first, "type") === "text") {
            content = first["text"];
        }
        else {
            content = blocks.length ? blocks : null;
        }
        const message = { role: turn.kind, content };
        if (calls.length) {
            message["tool_calls"] = calls.map((c) => ({
                id: c.id,
                type: "function",
                function: { name: c.name, arguments: typeof c.args === "string" ? c.args : dumps(c.args) },
            }));
        }
        if (content === null && !calls.length)
            continue;
        out.push(message);
    }
    return out;
}
