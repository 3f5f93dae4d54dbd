/**
 * What the converters need of Python's semantics to give the same output as the Python ones
 * (`convostore.convert`): `str()`, truthiness, `json.dumps` with its default separators.
 */
/** `isinstance(value, Mapping)` for JSON values. */
export function isMapping(value) {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}
/** `mapping.get(key, default)`: a missing key (or an undefined value) is `fallback`. */
export function get(mapping, key, fallback = null) {
    const value = Object.prototype.hasOwnProperty.call(mapping, key) ? mapping[key] : undefined;
    return value === undefined ? fallback : value;
}
/** Python's truthiness of a JSON value. */
export function truthy(value) {
    if (value === null || value === undefined || value === false || value === 0 || value === "")
        return false;
    if (Array.isArray(value))
        return value.length > 0;
    if (isMapping(value))
        return Object.keys(value).length > 0;
    return true;
}
function reprString(text) {
    const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
    let out = "";
    for (const ch of text) {
        if (ch === "\\")
            out += "\\\\";
        else if (ch === quote)
            out += `\\${quote}`;
        else if (ch === "\n")
            out += "\\n";
        else if (ch === "\r")
            out += "\\r";
        else if (ch === "\t")
            out += "\\t";
        else if (ch < " " || ch === "\x7f")
            out += `\\x${ch.charCodeAt(0).toString(16).padStart(2, "0")}`;
        else
            out += ch;
    }
    return `${quote}${out}${quote}`;
}
function number(value) {
    if (Number.isNaN(value))
        return "nan";
    if (!Number.isFinite(value))
        return value > 0 ? "inf" : "-inf";
    return String(value);
}
/** Python's `repr()` of a JSON value. */
export function repr(value) {
    if (value === null || value === undefined)
        return "None";
    if (value === true)
        return "True";
    if (value === false)
        return "False";
    if (typeof value === "number")
        return number(value);
    if (typeof value === "string")
        return reprString(value);
    if (Array.isArray(value))
        return `[${value.map(repr).join(", ")}]`;
    if (isMapping(value)) {
        return `{${Object.entries(value)
            .map(([k, v]) => `${reprString(k)}: ${repr(v)}`)
            .join(", ")}}`;
    }
    return String(value);
}
/** Python's `str()` of a JSON value. */
export function str(value) {
    return typeof value === "string" ? value : repr(value);
}
/** `json.dumps(value, ensure_ascii=False)`: separators `", "` and `": "`. */
export function dumps(value) {
    if (value === null || value === undefined)
        return "null";
    if (typeof value === "number") {
        if (Number.isNaN(value))
            return "NaN";
        if (!Number.isFinite(value))
            return value > 0 ? "Infinity" : "-Infinity";
        return JSON.stringify(value);
    }
    if (typeof value === "string" || typeof value === "boolean")
        return JSON.stringify(value);
    if (Array.isArray(value))
        return `[${value.map(dumps).join(", ")}]`;
    if (isMapping(value)) {
        return `{${Object.entries(value)
            .map(([k, v]) => `${JSON.stringify(k)}: ${dumps(v)}`)
            .join(", ")}}`;
    }
    return "null";
}
