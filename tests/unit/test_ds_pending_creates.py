"""manage.PendingCreates: the nodes waiting for a pod beyond the burst, handed out in name order."""

from __future__ import annotations

import random

import pytest

from everynode.controllers.daemonset.manage import PendingCreates


def _filled(*names: str) -> PendingCreates:
    pending = PendingCreates()
    for name in names:
        pending.add(name)
    return pending


@pytest.mark.parametrize("adds,discards,count,taken,left", [
    (["n3", "n1", "n2"], [], 2, ["n1", "n2"], {"n3"}),
    (["n3", "n1", "n2"], [], 10, ["n1", "n2", "n3"], set()),
    (["n3", "n1", "n2"], ["n1"], 2, ["n2", "n3"], set()),
    (["b", "a", "a", "b"], [], 5, ["a", "b"], set()),           # a second add is no second entry
    (["a", "b"], ["a", "b"], 5, [], set()),
    ([], [], 3, [], set()),
    (["a", "b", "c"], [], 0, [], {"a", "b", "c"}),
])
def test_take_returns_the_smallest_names_once(adds, discards, count, taken, left):
    pending = _filled(*adds)
    for name in discards:
        pending.discard(name)
    assert pending.take(count) == taken
    assert {n for n in ("a", "b", "c", "n1", "n2", "n3") if n in pending} == left
    assert len(pending) == len(left)


def test_a_node_removed_and_added_again_is_taken_once():
    pending = _filled("a", "b")
    pending.discard("a")
    pending.add("a")  # the heap now holds "a" twice (one stale entry)
    assert pending.take(5) == ["a", "b"]
    assert pending.take(5) == []
    pending.add("a")
    assert pending.take(1) == ["a"]


def test_random_operations_match_a_sorted_set():
    rng = random.Random(7)
    pending, model = PendingCreates(), set()
    for _ in range(5000):
        name = f"n{rng.randrange(60):02d}"
        op = rng.random()
        if op < 0.5:
            pending.add(name)
            model.add(name)
        elif op < 0.8:
            pending.discard(name)
            model.discard(name)
        else:
            k = rng.randrange(4)
            expected = sorted(model)[:k]
            assert pending.take(k) == expected
            model -= set(expected)
        assert len(pending) == len(model)


def test_stale_entries_are_dropped():
    pending = PendingCreates()
    for i in range(3000):
        pending.add(f"n{i:05d}")
        pending.discard(f"n{i:05d}")
    pending.add("z")
    assert pending.take(1) == ["z"]
    assert len(pending._heap) <= 1024
