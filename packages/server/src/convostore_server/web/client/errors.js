/**
 * The error classes, named as the Python package's (`convostore.errors`), so code ported
 * between the runtimes catches the same things; each one also carries what the server said:
 * its HTTP `status` and stable `code` (see the server README's error table).
 */
/** Base class of every error the client raises. */
export class ConvostoreError extends Error {
    status;
    code;
    argument;
    constructor(message, info = {}) {
        super(message, info.cause === undefined ? undefined : { cause: info.cause });
        this.name = new.target.name;
        this.status = info.status;
        this.code = info.code;
        this.argument = info.argument;
    }
}
/** An argument is malformed or outside its limit (checked here, or by the server: 400, 422);
 * nothing was written. `argument` names it. */
export class MemoryValidationError extends ConvostoreError {
}
/** Content or metadata over its size limit (the server's 413); nothing was written. */
export class ContentTooLargeError extends MemoryValidationError {
}
/** A write would pass a quota (messages per conversation, entries per memory store). */
export class MemoryQuotaExceededError extends ConvostoreError {
}
/** The thing named does not exist (or is another user's: the server answers alike). */
export class NotFoundError extends ConvostoreError {
}
export class ConversationNotFoundError extends NotFoundError {
}
export class MessageNotFoundError extends NotFoundError {
}
export class MemoryStoreNotFoundError extends NotFoundError {
}
export class MemoryEntryNotFoundError extends NotFoundError {
}
export class MemoryVersionNotFoundError extends NotFoundError {
}
/** The write contradicts what is stored; nothing was written. */
export class ConflictError extends ConvostoreError {
}
/** Another user's conversation or memory store. The server tells it only where a write would
 * create the conversation it names (`appendMessage`, `updateConversation` on an id another
 * user holds: 409 `conversation_ownership`); every other call answers as for a missing one
 * (a NotFoundError). Memory store ids are the server's to choose, so no answer makes a
 * `MemoryStoreOwnershipError`: the class exists so ported code compiles and catches. */
export class OwnershipError extends ConflictError {
}
export class ConversationOwnershipError extends OwnershipError {
}
export class MemoryStoreOwnershipError extends OwnershipError {
}
/** A live entry of the memory store already has that path. */
export class MemoryPathConflictError extends ConflictError {
}
/** The entry is no longer at the version given: read it again, then retry. */
export class MemoryVersionConflictError extends ConflictError {
    currentVersion;
    constructor(message, info = {}) {
        super(message, info);
        this.currentVersion = info.currentVersion;
    }
}
/** A conversation with that id already exists. */
export class ConversationExistsError extends ConflictError {
}
/** The conversation is managed by a component (a LangGraph thread's): only it writes. */
export class ConversationManagedError extends ConflictError {
}
/** A message id (or an Idempotency-Key) is already used by a different message. */
export class MessageIdConflictError extends ConflictError {
}
/** The client was used after `close()`. */
export class ClosedError extends ConvostoreError {
}
/** The store cannot be reached or failed: a network error (the cause chained), a 5xx. */
export class StorageError extends ConvostoreError {
}
/** No valid bearer token (the server's 401). */
export class AuthenticationError extends ConvostoreError {
}
/** Not allowed for this token (the server's 403: a user acting as another, a user redacting). */
export class PermissionDeniedError extends ConvostoreError {
}
const NOT_FOUND = [
    ["message_id ", MessageNotFoundError],
    ["memory_store_id ", MemoryStoreNotFoundError],
    ["entry_id ", MemoryEntryNotFoundError],
    ["version_id ", MemoryVersionNotFoundError],
    ["conversation", ConversationNotFoundError],
];
/** The error of a server's answer: `status` and its JSON body
 * (`{"error": {"code", "message", "argument", "currentVersion"}}`). */
export function errorFromResponse(status, body) {
    const error = typeof body === "object" && body !== null && "error" in body
        ? body.error
        : undefined;
    const fields = typeof error === "object" && error !== null ? error : {};
    const code = typeof fields["code"] === "string" ? fields["code"] : undefined;
    const message = typeof fields["message"] === "string" ? fields["message"] : `the server answered ${status}`;
    const argument = typeof fields["argument"] === "string" ? fields["argument"] : undefined;
    const info = { status };
    if (code !== undefined)
        info.code = code;
    if (argument !== undefined)
        info.argument = argument;
    if (status === 404) {
        // The server's 404 names what is missing first (the core's messages): the class follows.
        const found = NOT_FOUND.find(([prefix]) => message.startsWith(prefix));
        return new (found ? found[1] : NotFoundError)(message, info);
    }
    if (status === 413)
        return new ContentTooLargeError(message, info);
    if (status === 400 || status === 422)
        return new MemoryValidationError(message, info);
    if (status === 401)
        return new AuthenticationError(message, info);
    if (status === 403)
        return new PermissionDeniedError(message, info);
    if (status === 409) {
        switch (code) {
            case "version_conflict": {
                const current = fields["currentVersion"];
                return new MemoryVersionConflictError(message, {
                    ...info,
                    ...(typeof current === "number" ? { currentVersion: current } : {}),
                });
            }
            case "message_id_conflict":
                return new MessageIdConflictError(message, info);
            case "path_conflict":
                return new MemoryPathConflictError(message, info);
            case "quota_exceeded":
                return new MemoryQuotaExceededError(message, info);
            case "conversation_exists":
                return new ConversationExistsError(message, info);
            case "conversation_ownership":
                return new ConversationOwnershipError(message, info);
            default:
                return /managed by/.test(message)
                    ? new ConversationManagedError(message, info)
                    : new ConflictError(message, info);
        }
    }
    if (status >= 500)
        return new StorageError(message, info);
    return new ConvostoreError(message, info);
}
