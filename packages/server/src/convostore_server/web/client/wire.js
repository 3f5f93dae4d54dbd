/**
 * The server's JSON as the reference's interfaces: an optional field the server sends as
 * `null` is left out (`message.updatedAt === undefined` until the message is updated, as the
 * reference says), and nothing else changes. Only the models' own fields are touched, never
 * what a caller stored (content, metadata).
 */
function withoutNulls(value, optional) {
    const out = { ...value };
    for (const key of optional)
        if (out[key] === null)
            delete out[key];
    return out;
}
export function message(value) {
    return withoutNulls(value, ["metadata", "updatedAt"]);
}
export function conversation(value) {
    return withoutNulls(value, ["metadata", "userId"]);
}
export function memoryStore(value) {
    return withoutNulls(value, ["description", "metadata", "userId"]);
}
export function memoryEntry(value) {
    return withoutNulls(value, ["content"]);
}
export function memoryVersion(value) {
    return withoutNulls(value, ["content", "redactedAt"]);
}
export function searchHit(value) {
    const hit = value;
    return { ...hit, message: message(hit["message"]) };
}
export function memorySearchHit(value) {
    return value;
}
/** A page `{items, nextCursor, previousCursor}`, each item read by `item`. */
export function page(value, item) {
    const raw = value;
    const out = {
        items: raw["items"].map(item),
    };
    if (typeof raw["nextCursor"] === "string")
        out.nextCursor = raw["nextCursor"];
    if (typeof raw["previousCursor"] === "string")
        out.previousCursor = raw["previousCursor"];
    return out;
}
