"""The collector's pace and the frozen heap of everynode's own processes (product/collector.py)."""

from __future__ import annotations

import gc

import pytest

from everynode.product.collector import GC_THRESHOLDS, frozen_heap, own_pace


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
