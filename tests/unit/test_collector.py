"""The collector's pace, the deferred passes and the frozen heap of everynode's own processes
(product/collector.py)."""

from __future__ import annotations

import gc

import pytest

from everynode.product.collector import (
    GC_THRESHOLDS,
    PLAN_YOUNG_LIMIT,
    deferred_passes,
    frozen_heap,
    own_pace,
)


def test_own_pace_holds_within_the_block_and_restores_the_callers_thresholds() -> None:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        with own_pace():
            assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_threshold() == (700, 10, 10)
        with pytest.raises(RuntimeError), own_pace():
            raise RuntimeError("boom")
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)


def _collected(obj: object) -> bool:
    """Whether the collector's passes see ``obj`` (frozen objects are in none of its generations)."""
    return any(o is obj for o in gc.get_objects())


def test_frozen_objects_leave_the_collectors_passes_until_the_block_ends() -> None:
    assert gc.get_freeze_count() == 0
    long_lived = [[i] for i in range(1000)]
    with frozen_heap() as freeze:
        assert _collected(long_lived)  # nothing frozen until asked
        freeze()
        frozen = gc.get_freeze_count()
        assert not _collected(long_lived) and frozen >= len(long_lived)
        more = [[i] for i in range(500)]
        assert _collected(more)
        freeze()  # what was built since joins them
        assert not _collected(more) and gc.get_freeze_count() >= frozen + len(more)
    assert gc.get_freeze_count() == 0  # handed back to the collector
    assert _collected(long_lived) and _collected(more)


def test_frozen_heap_hands_back_even_when_the_block_fails() -> None:
    with pytest.raises(ValueError), frozen_heap() as freeze:
        freeze()
        assert gc.get_freeze_count() > 0
        raise ValueError("the plan failed")
    assert gc.get_freeze_count() == 0


def test_an_embedding_programs_own_freeze_is_left_alone() -> None:
    gc.freeze()  # the program froze its own start-up heap before calling us
    try:
        theirs = gc.get_freeze_count()
        with frozen_heap() as freeze:
            freeze()
        assert gc.get_freeze_count() >= theirs  # gc.unfreeze() would have undone theirs
    finally:
        gc.unfreeze()


def test_deferred_passes_raise_only_the_young_limit_and_restore_the_callers_thresholds() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(*GC_THRESHOLDS)
        with deferred_passes():
            assert gc.get_threshold() == (PLAN_YOUNG_LIMIT, *GC_THRESHOLDS[1:])
            with deferred_passes(young_limit=1000):  # never lowers what the caller set
                assert gc.get_threshold() == (PLAN_YOUNG_LIMIT, *GC_THRESHOLDS[1:])
        assert gc.get_threshold() == GC_THRESHOLDS
        with pytest.raises(RuntimeError), deferred_passes():
            raise RuntimeError("the plan failed")
        assert gc.get_threshold() == GC_THRESHOLDS
        gc.set_threshold(0, 10, 10)  # automatic passes switched off by the caller: they stay off
        with deferred_passes():
            assert gc.get_threshold() == (0, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_no_pass_runs_before_the_young_limit() -> None:
    passes: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    before = gc.get_threshold()
    gc.collect()
    gc.callbacks.append(seen)
    try:
        gc.set_threshold(*GC_THRESHOLDS)
        with deferred_passes(young_limit=400_000):
            kept = [[i] for i in range(300_000)]  # six passes at our own pace
            assert passes == []
        more = [[i] for i in range(200_000)]
        assert passes  # the own pace again
        del kept, more
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*before)
