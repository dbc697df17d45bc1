"""Structural sharing of stored objects (storage/canonical.py) and the Events TTL (storage/memory.py)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import orjson
import pytest

from everynode.api.meta import deep_copy
from everynode.storage import canonical
from everynode.storage.canonical import Canonicalizer
from everynode.storage.memory import EVENT_TTL, MemoryStore
from everynode.storage.sqlite import SqliteStore
from everynode.virtualtime import run_virtual
from tests.support.values import containers_of


def pod(name: str, node: str, *, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {"app": "agent"}},
        "spec": {"nodeName": node, "containers": [{"name": "agent", "image": "agent:1", "resources": {}}],
                 "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                  "effect": "NoExecute", "tolerationSeconds": 300}]},
        "status": {"phase": "Running", "ready": True, "restarts": 1, "ratio": 1.0},
    }


# -- the canonicalizer ----------------------------------------------------------------------------


def test_equal_subtrees_of_different_objects_become_one() -> None:
    canon = Canonicalizer()
    a = canon.object(deep_copy(pod("a", "n1")))
    b = canon.object(deep_copy(pod("b", "n2")))
    assert a["spec"]["containers"] is b["spec"]["containers"]
    assert a["spec"]["tolerations"] is b["spec"]["tolerations"]
    assert a["metadata"]["labels"] is b["metadata"]["labels"]
    assert a["status"] is b["status"]
    assert a["spec"] is not b["spec"]  # nodeName differs
    assert a["metadata"]["namespace"] is b["metadata"]["namespace"]  # strings are shared too


def test_values_are_unchanged() -> None:
    canon = Canonicalizer()
    originals = [pod(f"p{i}", f"n{i % 3}") for i in range(20)]
    stored = [canon.object(deep_copy(p)) for p in originals]
    for given, kept in zip(originals, stored, strict=True):
        assert orjson.dumps(kept) == orjson.dumps(given)  # same content, same key order, same types


@pytest.mark.parametrize(("first", "second"), [
    ({"v": True}, {"v": 1}),
    ({"v": 1}, {"v": 1.0}),
    ({"v": False}, {"v": 0}),
    ({"v": [1]}, {"v": [True]}),
    ({"v": "1"}, {"v": 1}),
    ({"v": {}}, {"v": []}),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),  # key order is part of the content kept
])
def test_only_identical_json_is_shared(first: dict[str, Any], second: dict[str, Any]) -> None:
    canon = Canonicalizer()
    a = canon.object({"metadata": {"name": "a"}, "spec": deep_copy(first)})
    b = canon.object({"metadata": {"name": "b"}, "spec": deep_copy(second)})
    assert a["spec"] is not b["spec"]
    assert orjson.dumps(a["spec"]) == orjson.dumps(first)
    assert orjson.dumps(b["spec"]) == orjson.dumps(second)


@pytest.mark.parametrize(("first", "second", "shared"), [
    ({"v": {}}, {"v": {}}, True),
    ({"v": []}, {"v": []}, True),
    ({"v": {}}, {"v": []}, False),  # same place, other type: never one for the other
    ({"v": []}, {"v": {}}, False),
    ({"v": {}}, {"w": {}}, True),  # a place is a position (the path of indexes), not a key
    ({"v": {}}, {"y": 1, "v": {}}, False),  # other place (another position)
])
def test_empty_containers_are_shared_per_place_and_type(first: dict[str, Any], second: dict[str, Any],
                                                        shared: bool) -> None:
    """``{}`` and ``[]`` skip serialisation (canonical.py): the same rules as any container."""
    canon = Canonicalizer()
    a = canon.object({"metadata": {"name": "a"}, "spec": {"x": 0, **deep_copy(first)}})
    b = canon.object({"metadata": {"name": "b"}, "spec": {"x": 0, **deep_copy(second)}})
    assert orjson.dumps(a["spec"]) == orjson.dumps({"x": 0, **first})
    assert orjson.dumps(b["spec"]) == orjson.dumps({"x": 0, **second})
    empty_a = next(v for v in a["spec"].values() if v == {} or v == [])
    empty_b = next(v for v in b["spec"].values() if v == {} or v == [])
    assert (empty_a is empty_b) is shared
    assert type(empty_a) is type(first[next(iter(first))])


def test_an_empty_container_canonical_elsewhere_is_copied() -> None:
    canon = Canonicalizer()
    first = canon.object({"metadata": {"name": "a"}, "spec": {"x": {}}})
    inner = first["spec"]["x"]
    second = canon.object({"metadata": {"name": "b"}, "spec": {"x": inner, "y": inner, "z": []}})
    assert second["spec"]["x"] is inner
    assert second["spec"]["y"] == {} and second["spec"]["y"] is not inner
    third = canon.object({"metadata": {"name": "c"}, "spec": {"x": {}, "y": {}, "z": []}})
    assert third["spec"]["y"] is second["spec"]["y"] and third["spec"]["z"] is second["spec"]["z"]


def test_no_container_appears_twice_in_one_object() -> None:
    """Equal sub-trees at different places of one object stay distinct: copy.deepcopy (jsonpatch)
    keeps aliases, and a patch of one place would otherwise change the other."""
    canon = Canonicalizer()
    labels = {"app": "ds"}
    shared_by_caller = {"x": {"y": 1}}
    obj = {"metadata": {"name": "ds", "labels": dict(labels)},
           "spec": {"selector": {"matchLabels": dict(labels)},
                    "template": {"metadata": {"labels": dict(labels)}}},
           "a": shared_by_caller, "b": shared_by_caller}
    for _ in range(2):  # the second time every sub-tree is already known
        stored = canon.object(deep_copy(obj) if _ else obj)
        found = containers_of({k: v for k, v in stored.items() if k != "metadata"}) + \
            containers_of([v for v in stored["metadata"].values()])
        assert len({id(c) for c in found}) == len(found)
        patched = copy.deepcopy(stored)
        patched["metadata"]["labels"]["x"] = "y"
        assert patched["spec"]["selector"]["matchLabels"] == {"app": "ds"}


def test_an_already_canonical_subtree_is_kept_as_is() -> None:
    canon = Canonicalizer()
    first = canon.object(deep_copy(pod("a", "n1")))
    again = {**first, "metadata": dict(first["metadata"])}  # an update carrying sub-trees over
    second = canon.object(again)
    assert second["spec"] is first["spec"]
    assert second["status"] is first["status"]


def _identity_pattern(objects: list[dict[str, Any]]) -> list[int]:
    """Which containers are the same object, across ``objects``: each container's ordinal of
    first appearance, in walk order."""
    seen: dict[int, int] = {}
    out: list[int] = []
    for obj in objects:
        for c in containers_of(obj):
            out.append(seen.setdefault(id(c), len(seen)))
    return out


_UPDATES = {
    "carry everything": lambda prev: {**prev, "metadata": dict(prev["metadata"])},
    "new status": lambda prev: {**prev, "metadata": dict(prev["metadata"]),
                                "status": {**prev["status"], "phase": "Failed"}},
    "carried child also placed elsewhere": lambda prev: {**prev, "metadata": dict(prev["metadata"]),
                                                         "extra": prev["spec"]},
    "keys reordered": lambda prev: {"status": prev["status"], "metadata": dict(prev["metadata"]),
                                    "spec": prev["spec"], "kind": "Pod", "apiVersion": "v1"},
    "metadata child moved": lambda prev: {**prev, "metadata": {"x": 1, **prev["metadata"]}},
    "metadata labels carried, spec new": lambda prev: {**prev, "metadata": dict(prev["metadata"]),
                                                       "spec": deep_copy(prev["spec"])},
    "labels placed in spec too": lambda prev: {**prev, "metadata": dict(prev["metadata"]),
                                               "spec": {**prev["spec"], "l": prev["metadata"]["labels"]}},
}


@pytest.mark.parametrize("update", list(_UPDATES), ids=list(_UPDATES))
def test_skipping_carried_over_children_is_the_plain_computation(update: str) -> None:
    """``object(obj, previous)`` gives the same values and the same sharing as ``object(obj)``."""
    results = []
    for use_previous in (True, False):
        canon = Canonicalizer()
        stored = []
        prev = canon.object(deep_copy(pod("a", "n1")))
        stored.append(prev)
        for step in range(3):
            obj = _UPDATES[update](prev)
            obj["metadata"]["resourceVersion"] = str(step)
            prev = canon.object(obj, prev) if use_previous else canon.object(obj)
            stored.append(prev)
            stored.append(canon.object(deep_copy(pod(f"o{step}", "n2"))))  # another object meanwhile
        results.append(stored)
    with_previous, plain = results
    assert [orjson.dumps(o) for o in with_previous] == [orjson.dumps(o) for o in plain]
    assert _identity_pattern(with_previous) == _identity_pattern(plain)
    for obj in with_previous:  # still no container twice in one object
        found = containers_of(obj)
        assert len({id(c) for c in found}) == len(found)


def test_a_canonical_subtree_moved_to_another_place_is_copied() -> None:
    canon = Canonicalizer()
    first = canon.object({"metadata": {"name": "a"}, "spec": {"x": {"k": "v"}}})
    inner = first["spec"]["x"]
    second = canon.object({"metadata": {"name": "b"}, "spec": {"x": inner, "y": inner}})
    assert second["spec"]["x"] is inner
    assert second["spec"]["y"] == inner and second["spec"]["y"] is not inner


def test_tables_are_bounded() -> None:
    canon = Canonicalizer(capacity=50)
    for i in range(500):
        canon.object({"metadata": {"name": f"p{i}"}, "spec": {"unique": {"n": i, "s": f"s{i}"}, "same": {"a": [1]}}})
    assert canon.entries() <= 3 * 2 * 50
    # Sub-trees written all along stay shared across generations.
    a = canon.object({"metadata": {"name": "x"}, "spec": {"same": {"a": [1]}}})
    b = canon.object({"metadata": {"name": "y"}, "spec": {"same": {"a": [1]}}})
    assert a["spec"]["same"] is b["spec"]["same"]


def test_the_identity_table_holds_the_containers_it_names() -> None:
    """An id in the table of canonical containers is the id of the container entered under it,
    even after every object holding that container is gone: the table keeps its containers, so
    no later object allocated at a freed address passes for canonical (and is skipped)."""
    canon = Canonicalizer(capacity=8)
    for i in range(100):  # each object dropped at once; generations turn over every few objects
        canon.object({"metadata": {"name": f"p{i}"}, "spec": {"unique": {"n": i}, "list": [i]}})
    table = canon._canonical
    named = set(table.new) | set(table.old)
    assert len(named) > 8  # both generations in use
    assert named <= {id(c) for c in [*table.held, *table.held_old]}
    # Fresh containers (at a place that repeats) are still looked up and shared.
    a = canon.object({"metadata": {"name": "a"}, "status": {"same": {"k": [1]}}})
    b = canon.object({"metadata": {"name": "b"}, "status": {"same": {"k": [1]}}})
    assert a["status"] is b["status"]


def test_a_hit_keeps_its_text_for_the_next_confirmation() -> None:
    """A container found by a look-up is confirmed on its JSON text; the text is kept from its
    first hit on (bounded), so the next hits compare bytes instead of serialising it again."""
    canon = Canonicalizer(capacity=16)
    first = canon.object({"metadata": {"name": "a"}, "status": {"conditions": [{"type": "Ready"}]}})
    for name in ("b", "c"):
        again = canon.object({"metadata": {"name": name}, "status": {"conditions": [{"type": "Ready"}]}})
        assert again["status"] is first["status"]
    kept = [pair for pair in canon._texts.values() if pair[0] is first["status"]]
    assert kept and kept[0][1] == orjson.dumps(first["status"])
    for i in range(100):  # many distinct hits: the texts stay bounded
        for name in ("x", "y"):
            canon.object({"metadata": {"name": name}, "status": {"n": i}})
    assert len(canon._texts) <= 16 // 4
    # A different text under a kept one's place is not taken for it.
    other = canon.object({"metadata": {"name": "d"}, "status": {"conditions": [{"type": True}]}})
    assert other["status"] is not first["status"] and other["status"]["conditions"][0]["type"] is True


def test_a_place_keeps_its_statistics_per_container_size() -> None:
    """One place holding small containers that repeat and larger ones that never do (a pod's
    status after its binding and after the kubelet's write): the repeating ones' hits do not
    reset the others' streak of misses, so the unique ones stop being looked up (and entered)."""
    canon = Canonicalizer()
    for i in range(100):
        canon.object({"metadata": {"name": f"a{i}"}, "status": {"phase": "Pending", "qos": "B", "n": 0}})
        canon.object({"metadata": {"name": f"b{i}"}, "status": {"phase": "Running", "ip": f"10.0.0.{i}", "a": 1,
                                                                  "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7}})
    assert len(canon._containers) < 30  # about 8 misses and a probe or two, not all 100


@pytest.mark.parametrize("at", [0, 1, 12345, (1 << 62) - 1, 0x3C2B_9A18_7F00_0001])
@pytest.mark.parametrize("n", [0, 1, 7, -1, hash("metadata"), -(1 << 63), (1 << 63) - 1])
def test_a_path_step_is_the_masked_exact_mix(at: int, n: int) -> None:
    # Compiled, the step multiplies native 64-bit ints and wraps; from source it is exact.  Both
    # must key the tables alike (the same 62 low bits), whatever the hash mixed in.
    step = canonical._step(at, n)
    assert step == (at * canonical._MIX + n) & canonical._MASK
    assert 0 <= step <= canonical._MASK


def test_sibling_and_nested_steps_stay_apart() -> None:
    # The positions of one level and of two levels below one root give distinct path hashes.
    root = hash("Pod") & canonical._MASK
    one = {canonical._step(root, n) for n in range(64)}
    two = {canonical._step(canonical._step(root, i), j) for i in range(64) for j in range(64)}
    assert len(one) == 64 and len(two) == 64 * 64 and not one & two


def test_values_that_are_not_json_pass_through() -> None:
    canon = Canonicalizer()
    odd = {1: "int key"}
    stored = canon.object({"metadata": {"name": "a"}, "spec": {"odd": odd, "none": None, "f": 1.5}})
    assert stored["spec"]["odd"] is odd
    assert stored["spec"]["none"] is None and stored["spec"]["f"] == 1.5


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Canonicalizer(capacity=0)


# -- the stores share --------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_stores_share_equal_subtrees(backend: str, tmp_path) -> None:
    store = MemoryStore() if backend == "memory" else SqliteStore(tmp_path / "s.db")
    try:
        a = await store.create("pods", deep_copy(pod("a", "n1")))
        b = await store.create("pods", deep_copy(pod("b", "n2")))
        assert a["spec"]["containers"] is b["spec"]["containers"]
        updated = await store.update("pods", {**deep_copy(b), "status": {"phase": "Failed"}})
        assert updated["spec"]["containers"] is a["spec"]["containers"]
        assert store.get("pods", "default", "b")["status"] == {"phase": "Failed"}
    finally:
        await store.close()
    if backend == "sqlite":  # objects loaded from disk are shared too
        reopened = SqliteStore(tmp_path / "s.db")
        try:
            a, b = reopened.get("pods", "default", "a"), reopened.get("pods", "default", "b")
            assert a["spec"]["containers"] is b["spec"]["containers"]
        finally:
            await reopened.close()


async def test_sharing_can_be_turned_off() -> None:
    store = MemoryStore(share_capacity=0)
    a = await store.create("pods", deep_copy(pod("a", "n1")))
    b = await store.create("pods", deep_copy(pod("b", "n2")))
    assert a["spec"]["containers"] is not b["spec"]["containers"]


async def test_updates_can_be_kept_out_of_sharing() -> None:
    """``share_updates=False`` (plan's copy): creates are shared, an update keeps what it carries
    over and stores what it brings as written, with the same content."""
    store = MemoryStore(share_updates=False)
    a = await store.create("pods", deep_copy(pod("a", "n1")))
    b = await store.create("pods", deep_copy(pod("b", "n2")))
    assert a["spec"]["containers"] is b["spec"]["containers"]
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    await store.update("pods", {**a, "status": deep_copy(status)})
    brought = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    updated = await store.update("pods", {**b, "status": brought})
    assert updated["status"] is brought and updated["status"] == status
    assert store.get("pods", "default", "a")["status"]["conditions"] is not brought["conditions"]
    assert updated["spec"] is b["spec"]
    shared = MemoryStore()
    a = await shared.create("pods", deep_copy(pod("a", "n1")))
    b = await shared.create("pods", deep_copy(pod("b", "n2")))
    await shared.update("pods", {**a, "status": deep_copy(status)})
    updated = await shared.update("pods", {**b, "status": deep_copy(status)})
    assert updated["status"]["conditions"] is shared.get("pods", "default", "a")["status"]["conditions"]


def lease(name: str) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": "2026-01-01T00:00:00.000000Z"},
            "extra": {"same": ["for", "every", "lease"]}}


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_leases_are_stored_as_written(backend: str, tmp_path) -> None:
    """Leases are rewritten every 10 s per node: kept out of sharing (UNSHARED_RESOURCES)."""
    def open_store(name: str, **options: Any) -> MemoryStore:
        return MemoryStore(**options) if backend == "memory" else SqliteStore(tmp_path / name, **options)

    store = open_store("default.db")
    a = await store.create("leases.coordination.k8s.io", deep_copy(lease("a")))
    b = await store.create("leases.coordination.k8s.io", deep_copy(lease("b")))
    assert a["extra"] == b["extra"] and a["extra"] is not b["extra"]
    await store.close()
    shared = open_store("shared.db", unshared=frozenset())
    a = await shared.create("leases.coordination.k8s.io", deep_copy(lease("a")))
    b = await shared.create("leases.coordination.k8s.io", deep_copy(lease("b")))
    assert a["extra"] is b["extra"]
    await shared.close()


# -- Events expire ----------------------------------------------------------------------------------


def event(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
            "reason": "Test", "message": name}


def test_events_expire_after_the_ttl_since_their_last_write() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        store = MemoryStore()
        watch = store.watch("events")
        await store.create("events", event("old"))
        await store.create("events", event("renewed"))
        await asyncio.sleep(EVENT_TTL / 2)
        renewed = store.get("events", "default", "renewed")
        await store.update("events", {**renewed, "count": 2})  # a repeat: its TTL starts again
        await asyncio.sleep(EVENT_TTL / 2 + 1)
        assert store.get("events", "default", "old") is not None  # nothing written since: still there
        await store.create("pods", pod("p", "n1"))  # any write deletes what has expired
        assert store.get("events", "default", "old") is None
        assert store.get("events", "default", "renewed") is not None
        await asyncio.sleep(EVENT_TTL / 2)
        await store.create("events", event("new"))
        assert store.get("events", "default", "renewed") is None
        assert store.get("events", "default", "new") is not None
        types = [(e.type, e.object["metadata"]["name"]) for e in watch.drain()]
        assert ("DELETED", "old") in types and ("DELETED", "renewed") in types
        assert store.count("pods") == 1  # other resources never expire
        assert loop.time() >= 1.5 * EVENT_TTL
        await store.close()

    run_virtual(scenario())


def test_events_loaded_from_disk_get_a_full_ttl(tmp_path) -> None:
    async def write() -> None:
        store = SqliteStore(tmp_path / "e.db")
        await store.create("events", event("e1"))
        await store.close()

    async def reopen() -> None:
        store = SqliteStore(tmp_path / "e.db")
        await store.create("pods", pod("p", "n1"))  # starts the loaded events' TTL
        await asyncio.sleep(EVENT_TTL - 1)
        await store.create("pods", pod("q", "n1"))
        assert store.get("events", "default", "e1") is not None
        await asyncio.sleep(2)
        await store.create("pods", pod("r", "n1"))
        assert store.get("events", "default", "e1") is None
        await store.close()

    run_virtual(write())
    run_virtual(reopen())


async def test_event_ttl_can_be_turned_off() -> None:
    store = MemoryStore(event_ttl=None)
    await store.create("events", event("e1"))
    assert not store._expiry


def test_places_where_nothing_repeats_are_left_alone_until_they_repeat() -> None:
    canon = Canonicalizer()
    first = None
    for i in range(200):  # "pin" is new every time, "same" never changes
        obj = canon.object({"metadata": {"name": f"p{i}"},
                            "spec": {"pin": {"terms": [{"values": [f"node-{i}"]}]}, "same": {"a": [1]}}})
        assert orjson.dumps(obj["spec"]) == orjson.dumps({"pin": {"terms": [{"values": [f"node-{i}"]}]},
                                                          "same": {"a": [1]}})
        first = first or obj
        assert obj["spec"]["same"] is first["spec"]["same"]
    # The place starts repeating: within a few probes its containers are shared again.
    repeated = [canon.object({"metadata": {"name": f"q{i}"},
                              "spec": {"pin": {"terms": [{"values": ["everywhere"]}]}, "same": {"a": [1]}}})
                for i in range(200)]
    assert repeated[-1]["spec"]["pin"] is repeated[-2]["spec"]["pin"]


async def test_an_update_shares_its_managed_fields_entries_and_keeps_the_carried_ones() -> None:
    """An update's managedFields list is new, its unchanged entries are the stored ones: those stay
    as they are, and a new entry equal to another object's is shared with it."""
    def entry(manager: str, time: str) -> dict[str, Any]:
        return {"manager": manager, "operation": "Update", "apiVersion": "v1", "time": time,
                "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}}}

    store = MemoryStore()
    stored = []
    for name in ("a", "b"):
        body = deep_copy(pod(name, "n1"))
        body["metadata"]["managedFields"] = [entry("creator", "2026-01-01T00:00:00Z")]
        stored.append(await store.create("pods", body))
    updated = []
    for before in stored:
        md = dict(before["metadata"])
        md["managedFields"] = [before["metadata"]["managedFields"][0], entry("kubelet", "2026-01-01T00:00:05Z")]
        updated.append(await store.update("pods", {**before, "metadata": md, "status": {"phase": "Failed"}}))
    a, b = (u["metadata"]["managedFields"] for u in updated)
    assert a[0] is stored[0]["metadata"]["managedFields"][0] and b[0] is stored[1]["metadata"]["managedFields"][0]
    assert a[1] is b[1] and a[1] == entry("kubelet", "2026-01-01T00:00:05Z")
    assert store.get("pods", "default", "b")["metadata"]["managedFields"] == b
