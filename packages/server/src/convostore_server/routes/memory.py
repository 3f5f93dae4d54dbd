"""Memory stores, their entries (by path, versioned) and the entries' versions, with the
reference's paths."""

from typing import Annotated, Any

from convostore import (
    ListMemoriesResult,
    ListMemoryStoresResult,
    ListMemoryVersionsResult,
    MemoryEntry,
    MemoryStore,
    MemoryVersion,
)
from fastapi import APIRouter, Query
from pydantic import Field, TypeAdapter
from pydantic.json_schema import SkipJsonSchema
from starlette.responses import Response

from ..errors import ApiError, dump_json, not_found
from .common import (
    EntryId,
    In,
    Limit,
    MemoryStoreId,
    Out,
    VersionId,
    json_response,
    no_content,
)


class NewMemoryStore(In):
    name: str
    description: str | None = None
    metadata: dict[str, Any] | None = None


class NewMemory(In):
    path: str = Field(description="A relative path: notes/2026/05/daily.md")
    content: str


class MemoryUpdate(In):
    """A new version of the entry, written only if ``version`` is its current version (else
    409 with ``currentVersion``); ``path`` moves it, ``content`` null keeps its content."""

    content: str | None = None
    version: int
    path: str | None = None


class MemoryEntryListed(MemoryEntry):
    """An entry as a listing gives it: without its content (read one entry for it)."""

    content: SkipJsonSchema[None] = None


class MemoryVersionListed(MemoryVersion):
    """A version as a listing gives it: without its content (read one version for it)."""

    content: SkipJsonSchema[None] = None


class MemoryEntryPage(Out):
    """A page of live entries, by path; ``nextCursor`` (pass it as ``after``) when more
    follow."""

    items: list[MemoryEntryListed]
    next_cursor: str | None = None


class MemoryVersionPage(Out):
    """A page of versions, oldest first; ``nextCursor`` (pass it as ``after``) when more
    follow."""

    items: list[MemoryVersionListed]
    next_cursor: str | None = None


def _listing(
    page: ListMemoriesResult | ListMemoryVersionsResult, adapter: TypeAdapter[Any]
) -> Response:
    """A listing as the reference gives it: its items without the field ``content``."""
    data = dump_json(page, adapter, exclude={"items": {"__all__": {"content"}}})
    return Response(data, media_type="application/json")


_STORE = TypeAdapter(MemoryStore)
_STORES = TypeAdapter(ListMemoryStoresResult)
_ENTRY = TypeAdapter(MemoryEntry)
_ENTRIES = TypeAdapter(ListMemoriesResult)
_VERSION = TypeAdapter(MemoryVersion)
_VERSIONS = TypeAdapter(ListMemoryVersionsResult)


def routes(router: APIRouter, Who: Any) -> None:

    @router.post(
        "/memory_stores", status_code=201, response_model=MemoryStore, tags=["memory stores"]
    )
    async def create_memory_store(*, who: Who, body: NewMemoryStore) -> Response:
        """Create an empty memory store, owned by the caller."""
        created = await who.store.create_memory_store(
            body.name, description=body.description, metadata=body.metadata, user_id=who.user_id
        )
        return json_response(created, _STORE, 201)

    @router.get("/memory_stores", response_model=ListMemoryStoresResult, tags=["memory stores"])
    async def list_memory_stores(
        *,
        who: Who,
        limit: Limit = 20,
        after: Annotated[str | None, Query(description="A nextCursor")] = None,
    ) -> Response:
        """Memory stores, oldest first (a user's own only)."""
        page = await who.store.list_memory_stores(limit=limit, after=after, user_id=who.user_id)
        return json_response(page, _STORES)

    @router.get(
        "/memory_stores/{memoryStoreId}", response_model=MemoryStore, tags=["memory stores"]
    )
    async def get_memory_store(*, who: Who, memory_store_id: MemoryStoreId) -> Response:
        """The memory store with its ``entryCount`` and ``totalSize``."""
        found = await who.call(lambda s: s.get_memory_store(memory_store_id, user_id=who.user_id))
        if found is None:
            raise not_found(f"memory_store_id {memory_store_id!r} not found")
        return json_response(found, _STORE)

    @router.delete("/memory_stores/{memoryStoreId}", status_code=204, tags=["memory stores"])
    async def delete_memory_store(*, who: Who, memory_store_id: MemoryStoreId) -> Response:
        """Delete the memory store with every entry and version (deleting a missing one does
        nothing)."""
        await who.call(lambda s: s.delete_memory_store(memory_store_id, user_id=who.user_id))
        return no_content()

    @router.post(
        "/memory_stores/{memoryStoreId}/memories",
        status_code=201,
        response_model=MemoryEntry,
        tags=["memories"],
    )
    async def create_memory(
        *, who: Who, memory_store_id: MemoryStoreId, body: NewMemory
    ) -> Response:
        """Create an entry at a path (version 1); a live path is 409 ``path_conflict``."""
        entry = await who.call(
            lambda s: s.create_memory(memory_store_id, body.path, body.content, user_id=who.user_id)
        )
        return json_response(entry, _ENTRY, 201)

    @router.get(
        "/memory_stores/{memoryStoreId}/memories",
        response_model=MemoryEntryPage,
        tags=["memories"],
    )
    async def list_memories(
        *,
        who: Who,
        memory_store_id: MemoryStoreId,
        path_prefix: Annotated[
            str | None, Query(alias="pathPrefix", description="Only paths starting with it")
        ] = None,
        limit: Limit = 20,
        after: Annotated[str | None, Query(description="A nextCursor")] = None,
    ) -> Response:
        """Live entries by path, without their content."""
        page = await who.call(
            lambda s: s.list_memories(
                memory_store_id,
                path_prefix=path_prefix,
                limit=limit,
                after=after,
                user_id=who.user_id,
            )
        )
        return _listing(page, _ENTRIES)

    @router.get(
        "/memory_stores/{memoryStoreId}/memories/{entryId}",
        response_model=MemoryEntry,
        tags=["memories"],
    )
    async def get_memory(
        *, who: Who, memory_store_id: MemoryStoreId, entry_id: EntryId
    ) -> Response:
        """One live entry with its content."""
        entry = await who.call(
            lambda s: s.get_memory(memory_store_id, entry_id, user_id=who.user_id)
        )
        if entry is None:
            raise not_found(
                f"entry_id {entry_id!r} is not a live entry of memory store {memory_store_id!r}"
            )
        return json_response(entry, _ENTRY)

    @router.put(
        "/memory_stores/{memoryStoreId}/memories/{entryId}",
        response_model=MemoryEntry,
        tags=["memories"],
    )
    async def update_memory(
        *, who: Who, memory_store_id: MemoryStoreId, entry_id: EntryId, body: MemoryUpdate
    ) -> Response:
        """A new version of the entry if ``version`` is current, else 409 ``version_conflict``
        with ``currentVersion``."""
        entry = await who.call(
            lambda s: s.update_memory(
                memory_store_id,
                entry_id,
                body.content,
                body.version,
                path=body.path,
                user_id=who.user_id,
            )
        )
        return json_response(entry, _ENTRY)

    @router.delete(
        "/memory_stores/{memoryStoreId}/memories/{entryId}",
        response_model=MemoryVersion,
        tags=["memories"],
    )
    async def delete_memory(
        *,
        who: Who,
        memory_store_id: MemoryStoreId,
        entry_id: EntryId,
        version: Annotated[
            int | None, Query(description="Delete only if this is the entry's current version")
        ] = None,
    ) -> Response:
        """Delete the entry: returns the deletion version (the same one again on a retry)."""
        deleted = await who.call(
            lambda s: s.delete_memory(
                memory_store_id, entry_id, version=version, user_id=who.user_id
            )
        )
        return json_response(deleted, _VERSION)

    @router.get(
        "/memory_stores/{memoryStoreId}/versions",
        response_model=MemoryVersionPage,
        tags=["memory versions"],
    )
    async def list_memory_versions(
        *,
        who: Who,
        memory_store_id: MemoryStoreId,
        entry_id: Annotated[
            str | None, Query(alias="entryId", description="Only this entry's versions")
        ] = None,
        limit: Limit = 20,
        after: Annotated[str | None, Query(description="A nextCursor")] = None,
    ) -> Response:
        """Versions without their content, oldest first."""
        page = await who.call(
            lambda s: s.list_memory_versions(
                memory_store_id, entry_id=entry_id, limit=limit, after=after, user_id=who.user_id
            )
        )
        return _listing(page, _VERSIONS)

    @router.get(
        "/memory_stores/{memoryStoreId}/versions/{versionId}",
        response_model=MemoryVersion,
        tags=["memory versions"],
    )
    async def get_memory_version(
        *, who: Who, memory_store_id: MemoryStoreId, version_id: VersionId
    ) -> Response:
        """One version with its content (none for a deletion or a redacted version)."""
        found = await who.call(
            lambda s: s.get_memory_version(memory_store_id, version_id, user_id=who.user_id)
        )
        if found is None:
            raise not_found(
                f"version_id {version_id!r} not found in memory store {memory_store_id!r}"
            )
        return json_response(found, _VERSION)

    @router.post(
        "/memory_stores/{memoryStoreId}/versions/{versionId}/redact",
        response_model=MemoryVersion,
        tags=["memory versions"],
    )
    async def redact_memory_version(
        *, who: Who, memory_store_id: MemoryStoreId, version_id: VersionId
    ) -> Response:
        """Admins only: erase one version's content for good (its metadata stays)."""
        if not who.principal.admin:
            raise ApiError(403, "forbidden", "redaction is for admins only")
        redacted = await who.call(
            lambda s: s.redact_memory_version(memory_store_id, version_id, user_id=who.user_id)
        )
        return json_response(redacted, _VERSION)
