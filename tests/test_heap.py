"""The collector's settings in a relaying process (mcptape.proxy.heap): set once started up."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from typing import Any

import pytest

from mcptape.cli.record_run import _watch_store
from mcptape.proxy.heap import THRESHOLDS, settle_heap


@pytest.fixture
def collector() -> Iterator[None]:
    """Give the test process its collector back as it was."""
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_settle_heap_freezes_what_exists_and_collects_young_objects_less_often(collector: None) -> None:
    gc.unfreeze()
    kept = [object() for _ in range(10)]
    settle_heap()
    assert gc.get_threshold() == THRESHOLDS
    assert THRESHOLDS[0] > 700  # fewer young collections than CPython's default
    assert gc.get_freeze_count() > len(kept)


def test_record_settles_its_heap_once_the_store_is_open(collector: None) -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    opened = asyncio.Event()

    class Store:
        error = None

        async def opened(self) -> None:
            await opened.wait()

    async def run() -> tuple[Any, Any]:
        watch = asyncio.ensure_future(_watch_store(Store(), None, "forward"))  # type: ignore[arg-type]
        await asyncio.sleep(0.01)
        before = gc.get_threshold()  # the store is still opening: nothing changed yet
        opened.set()
        await watch
        return before, gc.get_threshold()

    before, after = asyncio.run(run())
    assert before == (700, 10, 10)
    assert after == THRESHOLDS and gc.get_freeze_count() > 0
