"""langgraph-checkpoint-conformance, every capability, on every backend, through both surfaces.

The suite drives the async methods only; the sync surface is checked by running the same suite
against a subclass whose async methods call the sync ones directly on the event loop thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import pytest
from convostore_langgraph import ConvostoreSaver
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.conformance import checkpointer_test, validate


class SyncSurface(ConvostoreSaver):
    """The async names bound to the blocking methods, so the suite exercises the sync code."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.prune(thread_ids, strategy=strategy)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return self.get_delta_channel_history(config=config, channels=channels)


@pytest.mark.parametrize("surface", [ConvostoreSaver, SyncSurface], ids=["async", "sync"])
def test_conformance_full(backend_url: str, surface: type[ConvostoreSaver]) -> None:
    @checkpointer_test(name=f"convostore-{surface.__name__}")
    async def factory() -> AsyncIterator[ConvostoreSaver]:
        saver = surface(backend_url)
        yield saver
        saver.close()

    report = asyncio.run(validate(factory))
    failures = {name: result.failures for name, result in report.results.items() if result.failures}
    assert failures == {}
    assert report.conformance_level() == "FULL"
    assert all(result.detected and result.passed for result in report.results.values())
