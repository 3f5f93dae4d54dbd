/**
 * Argument checks made before any request, in the Python side's words (`convostore.validation`)
 * with the JavaScript names of the arguments and of the types.
 */
import { MemoryValidationError } from "./errors.js";
export const MAX_ID_BYTES = 256;
export const MAX_PAGE_SIZE = 100;
const ROLES = ["user", "assistant", "system", "tool"];
const encoder = new TextEncoder();
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
function invalid(message, argument) {
    return new MemoryValidationError(message, argument === undefined ? {} : { argument });
}
function typeName(value) {
    if (value === null)
        return "null";
    if (Array.isArray(value))
        return "array";
    return typeof value;
}
/** A string as Python's repr shows it (the quotes the Python messages use). */
export function quoted(value) {
    if (typeof value !== "string")
        return String(value);
    return value.includes("'") && !value.includes('"') ? `"${value}"` : `'${value.replace(/'/g, "\\'")}'`;
}
/** Text both databases store alike: a string without NUL or a lone surrogate. */
export function checkText(name, value) {
    if (typeof value !== "string") {
        throw invalid(`${name} must be a string, got ${typeName(value)}`, name);
    }
    if (LONE_SURROGATE.test(value))
        throw invalid(`${name} is not valid UTF-8 (lone surrogate)`, name);
    if (value.includes("\u0000"))
        throw invalid(`${name} must not contain NUL characters`, name);
    return value;
}
/** An id: a non-empty string of at most 256 bytes of UTF-8, without NUL. */
export function checkId(name, value) {
    const text = checkText(name, value);
    const size = encoder.encode(text).length;
    if (size < 1 || size > MAX_ID_BYTES) {
        throw invalid(`${name} must be 1 to ${MAX_ID_BYTES} bytes of UTF-8, got ${size} bytes`, name);
    }
    return text;
}
export function checkOptionalId(name, value) {
    return value === undefined || value === null ? undefined : checkId(name, value);
}
/** An integer between `minimum` and `maximum` inclusive. */
export function checkInt(name, value, minimum, maximum) {
    if (typeof value !== "number" || !Number.isSafeInteger(value)) {
        const shown = typeof value === "number" ? String(value) : typeName(value);
        throw invalid(`${name} must be an int, got ${shown}`, name);
    }
    if (value < minimum || value > maximum) {
        throw invalid(`${name} must be between ${minimum} and ${maximum}, got ${value}`, name);
    }
    return value;
}
export function checkLimit(value) {
    return value === undefined ? undefined : checkInt("limit", value, 1, MAX_PAGE_SIZE);
}
export function checkOrder(value) {
    if (value === undefined)
        return undefined;
    if (value !== "asc" && value !== "desc") {
        throw invalid(`order must be 'asc' or 'desc', got ${quoted(value)}`, "order");
    }
    return value;
}
export function checkRole(value, name = "role") {
    if (!ROLES.includes(value)) {
        throw invalid(`${name} must be one of ${ROLES.join(", ")}; got ${quoted(value)}`, name);
    }
    return value;
}
export function checkCursors(after, before) {
    if (after !== undefined && after !== null && before !== undefined && before !== null) {
        throw invalid("after and before are mutually exclusive; pass one of them");
    }
}
/** Metadata: a plain object (or absent). */
export function checkMetadata(name, value) {
    if (value === undefined || value === null)
        return undefined;
    if (typeof value !== "object" || Array.isArray(value)) {
        throw invalid(`${name} must be an object, got ${typeName(value)}`, name);
    }
    return value;
}
/** A required plain object (`updateConversation`'s metadata). */
export function checkObject(name, value) {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
        throw invalid(`${name} must be an object, got ${typeName(value)}`, name);
    }
    return value;
}
/** A required array (a batch). */
export function checkArray(name, value) {
    if (!Array.isArray(value))
        throw invalid(`${name} must be an array, got ${typeName(value)}`, name);
    return value;
}
/** Content: a string, an array or a plain object. */
export function checkContent(name, value) {
    if (typeof value === "string" || (typeof value === "object" && value !== null))
        return value;
    throw invalid(`${name} must be a string, an array or an object, got ${typeName(value)}`, name);
}
class NotJson extends Error {
}
function strictly(_key, value) {
    if (typeof value === "number" && !Number.isFinite(value)) {
        throw new NotJson(`${value} is not valid JSON (NaN and Infinity)`);
    }
    if (typeof value === "function" || typeof value === "symbol") {
        throw new NotJson(`a ${typeof value} is not JSON`);
    }
    return value;
}
/** `value` as JSON, or a MemoryValidationError naming `name`: what JSON would alter (NaN,
 * Infinity, functions) or cannot hold (cycles, BigInt, nesting deeper than the stack). */
export function encodeJson(name, value) {
    try {
        return JSON.stringify(value, strictly);
    }
    catch (error) {
        if (error instanceof NotJson)
            throw invalid(`${name}: ${error.message}`, name);
        if (error instanceof RangeError)
            throw invalid(`${name}: nested too deep for JSON`, name);
        const why = error instanceof Error ? error.message : String(error);
        throw invalid(`${name}: not JSON-serializable (${why})`, name);
    }
}
/** A JSON object of `fields` (undefined ones left out), each encoded by `encodeJson` under the
 * name `label(key)`. */
export function encodeObject(fields, label = (k) => k) {
    const parts = [];
    for (const [key, value] of Object.entries(fields)) {
        if (value !== undefined)
            parts.push(`${JSON.stringify(key)}:${encodeJson(label(key), value)}`);
    }
    return `{${parts.join(",")}}`;
}
