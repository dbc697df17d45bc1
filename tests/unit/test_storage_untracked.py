"""Stored objects outside the cyclic garbage collector (storage/untracked.py, storage/_untrack.c).

The C function needs the build; CI runs on it (``test_ci_runs_the_compiled_build`` asserts
``untracked.ACTIVE``), so these tests skip only where there is no build at all.  The fallback
without one is checked in test_compiled.py (``EVERYNODE_PURE=1``)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from everynode.api.meta import deep_copy
from everynode.storage.memory import MemoryStore
from everynode.storage.sqlite import SqliteStore
from everynode.storage.untracked import ACTIVE, untrack
from tests.support.values import containers_of

pytestmark = pytest.mark.skipif(not ACTIVE, reason="no build of the C extension (sources only)")


def tracked(value: Any) -> list[Any]:
    return [c for c in containers_of(value) if gc.is_tracked(c)]


class Opaque:
    """Not JSON: an object of a class, which may take part in a cycle."""


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "agent"},
                         "ownerReferences": [{"kind": "DaemonSet", "name": "agent", "uid": "u1"}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "agent", "image": "agent:1", "ports": []}]},
            "status": {"phase": "Pending", "conditions": []}}


def nested(depth: int) -> list[Any]:
    top: list[Any] = []
    level = top
    for _ in range(depth):
        inner: list[Any] = []
        level.append(inner)
        level = inner
    return top


@pytest.mark.parametrize(("value", "whole"), [
    ("text", True),
    (1, True),
    (None, True),
    ([], True),  # an empty list is tracked from birth
    ({"a": [1, "x", 2.5, True, None]}, True),
    ({"a": {"b": [{"c": [[]]}]}}, True),
    (nested(100), True),
    (nested(200), False),  # deeper than the walk goes: all of it stays tracked
    ({"a": [Opaque()]}, False),
    ({"a": [tuple([[]])]}, False),
    ({1: []}, False),  # a key that is not a string
])
def test_untrack_takes_json_trees_out_whole_and_leaves_anything_else_tracked(value: Any, whole: bool) -> None:
    assert untrack(value) is whole
    containers = containers_of(value)
    if whole:
        assert tracked(value) == []
    elif containers:
        assert gc.is_tracked(value)  # the top, above what stays tracked


def test_only_the_path_above_what_stays_tracked_stays_tracked() -> None:
    value = {"keep": {"inner": [Opaque()]}, "free": {"list": [{"x": 1}, []]}}
    assert untrack(value) is False
    assert gc.is_tracked(value) and gc.is_tracked(value["keep"]) and gc.is_tracked(value["keep"]["inner"])
    assert tracked(value["free"]) == []


def test_an_untracked_subtree_is_not_entered_again() -> None:
    shared = {"containers": [{"name": "agent", "ports": []}]}
    assert untrack(shared) is True
    parent = {"spec": shared, "status": {"conditions": []}}
    assert untrack(parent) is True
    assert tracked(parent) == []


def test_a_deep_tree_neither_recurses_without_bound_nor_is_untracked() -> None:
    value = nested(100_000)
    assert untrack(value) is False
    assert gc.is_tracked(value)


def test_cpython_tracks_a_dict_again_when_a_container_is_put_in_it() -> None:
    value: dict[str, Any] = {"a": {}}
    assert untrack(value) is True and not gc.is_tracked(value)
    value["b"] = []
    assert gc.is_tracked(value)


def test_untracked_objects_stay_alive_and_whole_through_full_collections() -> None:
    value = {"a": [{"b": "c"}], "d": {"e": [1, 2]}}
    expected = deep_copy(value)
    inner = value["a"]
    untrack(value)
    gc.collect()
    assert value == expected and value["a"] is inner


# -- the stores ------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_what_a_store_keeps_is_untracked(backend: str, tmp_path: Path) -> None:
    store = MemoryStore() if backend == "memory" else SqliteStore(tmp_path / "s.db")
    try:
        created = await store.create("pods", deep_copy(pod("a")))
        assert tracked(created) == []
        assert tracked(await store.create("pods", deep_copy(pod("b")))) == []
        updated = await store.update("pods", {**deep_copy(created), "status": {"phase": "Running",
                                                                              "conditions": [{"type": "Ready"}]}})
        assert tracked(updated) == [] and tracked(store.get("pods", "default", "a")) == []
        deleted = await store.delete("pods", "default", "b")
        assert tracked(deleted) == []
    finally:
        await store.close()
    if backend == "sqlite":  # and what it loads from disk
        reopened = SqliteStore(tmp_path / "s.db")
        try:
            assert tracked(reopened.get("pods", "default", "a")) == []
        finally:
            await reopened.close()


async def test_a_stored_object_leaves_the_collectors_passes() -> None:
    """What the change is for: storing a hundred pods adds next to nothing for the collector to
    walk (their versions were about 36 tracked containers a pod)."""
    def tracked_json() -> int:
        return sum(1 for o in gc.get_objects() if type(o) in (dict, list))

    store = MemoryStore()
    await store.create("pods", deep_copy(pod("first")))  # the store's own tables made
    gc.collect()
    before = tracked_json()
    for i in range(100):
        await store.create("pods", deep_copy(pod(f"p{i}")))
    gc.collect()
    assert tracked_json() - before < 20
