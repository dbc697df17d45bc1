"""The Store contract (storage/base.py), run against every backend."""

from __future__ import annotations

import asyncio
import base64
import random
import sqlite3
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from everynode.storage.base import (
    ConflictError,
    ExpiredError,
    KeyExistsError,
    NotFoundError,
    StorageError,
    Store,
    WatchEvent,
)
from everynode.storage.memory import MemoryStore
from everynode.storage.sqlite import SqliteStore

MakeStore = Callable[..., Store]


@pytest.fixture(params=["memory", "sqlite"])
async def make_store(request: pytest.FixtureRequest, tmp_path) -> AsyncIterator[MakeStore]:
    opened: list[Store] = []

    def make(**options: Any) -> Store:
        if request.param == "memory":
            store: Store = MemoryStore(**options)
        else:
            store = SqliteStore(tmp_path / f"store-{len(opened)}.db", **options)
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()


@pytest.fixture
def store(make_store: MakeStore) -> Store:
    return make_store()


def obj(name: str, namespace: str = "default", *, labels: dict[str, str] | None = None,
        uid: str | None = None, **extra: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if labels is not None:
        metadata["labels"] = labels
    if uid is not None:
        metadata["uid"] = uid
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, **extra}


def rv(o: dict[str, Any]) -> int:
    return int(o["metadata"]["resourceVersion"])


def names(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in items]


async def next_event(watch: Any, timeout: float = 2.0) -> WatchEvent:
    return await asyncio.wait_for(watch.__anext__(), timeout)


def drain(watch: Any) -> list[WatchEvent]:
    """The events already queued for a watch (delivery is synchronous with the write)."""
    out = []
    while watch.pending():
        out.append(watch._buffer.popleft())
    return out


# -- CRUD -----------------------------------------------------------------------------------------


async def test_create_stores_a_shallow_copy_with_the_resource_version(store: Store) -> None:
    given = obj("a", spec={"nodeName": "n1"})
    stored = await store.create("pods", given)
    assert stored["metadata"]["resourceVersion"] == "1"
    assert "resourceVersion" not in given["metadata"]  # the caller's dict is untouched
    assert stored["spec"] is given["spec"]  # nested content is shared, not copied
    assert store.get("pods", "default", "a") is stored
    assert store.current_rv() == 1
    assert store.count("pods") == 1


async def test_cluster_scoped_objects_use_the_empty_namespace(store: Store) -> None:
    node = await store.create("nodes", obj("n1", namespace=""))
    assert store.get("nodes", "", "n1") is node
    assert store.get("pods", "", "n1") is None


@pytest.mark.parametrize("operation, error", [
    ("create-existing", KeyExistsError),
    ("update-missing", NotFoundError),
    ("delete-missing", NotFoundError),
])
async def test_key_errors(store: Store, operation: str, error: type[Exception]) -> None:
    await store.create("pods", obj("a"))
    with pytest.raises(error):
        if operation == "create-existing":
            await store.create("pods", obj("a"))
        elif operation == "update-missing":
            await store.update("pods", obj("b"))
        else:
            await store.delete("pods", "default", "b")
    assert store.current_rv() == 1


async def test_update_replaces_and_bumps_the_resource_version(store: Store) -> None:
    first = await store.create("pods", obj("a", labels={"v": "1"}))
    second = await store.update("pods", obj("a", labels={"v": "2"}), expected_rv=rv(first))
    assert rv(second) == 2
    assert store.get("pods", "default", "a") is second
    assert first["metadata"]["labels"] == {"v": "1"}  # the old stored object is never mutated


async def test_update_with_stale_resource_version_conflicts(store: Store) -> None:
    first = await store.create("pods", obj("a"))
    await store.update("pods", obj("a", labels={"x": "y"}), expected_rv=rv(first))
    with pytest.raises(ConflictError):
        await store.update("pods", obj("a", labels={"x": "z"}), expected_rv=rv(first))
    assert store.get("pods", "default", "a")["metadata"]["labels"] == {"x": "y"}
    assert store.current_rv() == 2


async def test_delete_returns_last_state_with_the_deletion_resource_version(store: Store) -> None:
    created = await store.create("pods", obj("a", uid="u1", labels={"k": "v"}))
    deleted = await store.delete("pods", "default", "a")
    assert rv(deleted) == 2 == store.current_rv()
    assert deleted["metadata"]["labels"] == {"k": "v"}
    assert rv(created) == 1  # the stored object kept its own version
    assert store.get("pods", "default", "a") is None
    assert store.count("pods") == 0


@pytest.mark.parametrize("precondition, ok", [
    ({"expected_uid": "u1"}, True),
    ({"expected_uid": "other"}, False),
    ({"expected_rv": 1}, True),
    ({"expected_rv": 7}, False),
    ({"expected_rv": 1, "expected_uid": "other"}, False),
])
async def test_delete_preconditions(store: Store, precondition: dict[str, Any], ok: bool) -> None:
    await store.create("pods", obj("a", uid="u1"))
    if ok:
        await store.delete("pods", "default", "a", **precondition)
        assert store.get("pods", "default", "a") is None
    else:
        with pytest.raises(ConflictError):
            await store.delete("pods", "default", "a", **precondition)
        assert store.get("pods", "default", "a") is not None


async def test_recreate_after_delete(store: Store) -> None:
    await store.create("pods", obj("a"))
    await store.delete("pods", "default", "a")
    again = await store.create("pods", obj("a"))
    assert rv(again) == 3
    assert names(store.list("pods").items) == [("default", "a")]


async def test_resource_version_is_global_and_strictly_increasing(store: Store) -> None:
    seen = []
    seen.append(rv(await store.create("pods", obj("a"))))
    seen.append(rv(await store.create("nodes", obj("n", namespace=""))))
    seen.append(rv(await store.update("pods", obj("a"))))
    seen.append(rv(await store.create("daemonsets.apps", obj("ds"))))
    seen.append(rv(await store.delete("nodes", "", "n")))
    assert seen == [1, 2, 3, 4, 5]
    assert store.current_rv() == 5


@pytest.mark.parametrize("bad", [{}, {"metadata": {}}, {"metadata": {"name": ""}}])
async def test_object_without_name_is_rejected(store: Store, bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        await store.create("pods", bad)
    assert store.current_rv() == 0


# -- list -----------------------------------------------------------------------------------------

KEYS = [("b", "x"), ("a", "z"), ("a", "y"), ("c", "a"), ("b", "a"), ("a", "a"), ("ab", "m"), ("b", "b")]


async def populated(store: Store) -> None:
    for i, (namespace, name) in enumerate(KEYS):
        await store.create("pods", obj(name, namespace, labels={"even": str(i % 2 == 0).lower()}))
    await store.create("configmaps", obj("cm", "a"))


async def test_list_is_ordered_by_namespace_then_name(store: Store) -> None:
    await populated(store)
    result = store.list("pods")
    assert names(result.items) == sorted(KEYS)
    assert result.rv == store.current_rv()
    assert result.continue_token is None and result.remaining is None


@pytest.mark.parametrize("namespace, expected", [
    ("a", [("a", "a"), ("a", "y"), ("a", "z")]),
    ("ab", [("ab", "m")]),
    ("b", [("b", "a"), ("b", "b"), ("b", "x")]),
    ("zz", []),
    ("", []),
])
async def test_list_one_namespace(store: Store, namespace: str, expected: list[tuple[str, str]]) -> None:
    await populated(store)
    assert names(store.list("pods", namespace=namespace).items) == expected


async def test_list_with_predicate_and_unknown_resource(store: Store) -> None:
    await populated(store)
    even = store.list("pods", predicate=lambda o: o["metadata"]["labels"]["even"] == "true")
    assert names(even.items) == sorted(KEYS[0::2])
    assert store.list("services").items == []
    assert store.count("services") == 0


@pytest.mark.parametrize("limit", [1, 2, 3, 7, 8, 100])
@pytest.mark.parametrize("namespace", [None, "a", "b"])
@pytest.mark.parametrize("filtered", [False, True])
async def test_pages_concatenate_to_the_full_list(store: Store, limit: int, namespace: str | None,
                                                  filtered: bool) -> None:
    await populated(store)
    predicate = (lambda o: o["metadata"]["labels"]["even"] == "true") if filtered else None
    full = store.list("pods", namespace=namespace, predicate=predicate).items
    pages: list[dict[str, Any]] = []
    token = None
    first_rv = store.current_rv()
    for _ in range(20):
        page = store.list("pods", namespace=namespace, predicate=predicate, limit=limit, continue_token=token)
        assert page.rv == first_rv
        assert len(page.items) <= limit
        pages.extend(page.items)
        token = page.continue_token
        if token is None:
            assert page.remaining is None
            break
        if filtered:
            assert page.remaining is None  # unknown with a predicate, as upstream with selectors
        else:
            assert page.remaining == len(full) - len(pages)
        await store.create("secrets", obj(f"s{len(pages)}"))  # writes between pages keep the list rv
    assert pages == full


async def test_limit_zero_means_no_limit(store: Store) -> None:
    await populated(store)
    result = store.list("pods", limit=0)
    assert len(result.items) == len(KEYS) and result.continue_token is None


async def test_continue_serves_the_current_state_after_the_last_key(store: Store) -> None:
    await populated(store)
    first = store.list("pods", limit=2)
    assert names(first.items) == [("a", "a"), ("a", "y")]
    await store.delete("pods", "a", "z")
    await store.create("pods", obj("b", "a"))  # sorts before the token's key: not repeated
    await store.create("pods", obj("zz", "a"))
    rest = store.list("pods", continue_token=first.continue_token)
    assert names(rest.items)[:2] == [("a", "zz"), ("ab", "m")]


@pytest.mark.parametrize("token", [
    "%%%not-base64",
    base64.urlsafe_b64encode(b"not json").decode(),
    base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":"1","start":["a","b"]}').decode(),
    base64.urlsafe_b64encode(b'{"v":"other","rv":1,"start":["a","b"]}').decode(),
    base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":1,"start":"a/b"}').decode(),
    base64.urlsafe_b64encode(b"[1,2]").decode(),
])
async def test_bad_continue_token_is_a_value_error(store: Store, token: str) -> None:
    await populated(store)
    with pytest.raises(ValueError):
        store.list("pods", limit=1, continue_token=token)


async def test_continue_token_past_the_history_window_expires(make_store: MakeStore) -> None:
    store = make_store(history=3)
    await populated(store)
    token = store.list("pods", limit=1).continue_token
    for i in range(5):
        await store.create("secrets", obj(f"s{i}"))
    with pytest.raises(ExpiredError):
        store.list("pods", limit=1, continue_token=token)


async def test_sorted_order_survives_random_churn(store: Store) -> None:
    """Creates and deletes between lists, small and large bursts, against a reference model."""
    rng = random.Random(7)
    model: set[tuple[str, str]] = set()
    universe = [(f"ns{n}", f"p{i:03d}") for n in range(4) for i in range(60)]
    for burst in [1, 3, 70, 5, 150, 2, 90, 1]:
        for _ in range(burst):
            key = rng.choice(universe)
            if key in model:
                await store.delete("pods", *key)
                model.discard(key)
            else:
                await store.create("pods", obj(key[1], key[0]))
                model.add(key)
        assert names(store.list("pods").items) == sorted(model)
        assert names(store.list("pods", namespace="ns2").items) == sorted(k for k in model if k[0] == "ns2")
        assert store.count("pods") == len(model)


# -- watch ----------------------------------------------------------------------------------------


async def test_watch_from_resource_version_replays_then_follows(store: Store) -> None:
    a = await store.create("pods", obj("a"))
    await store.update("pods", obj("a", labels={"v": "2"}))
    await store.create("pods", obj("b"))
    watch = store.watch("pods", since_rv=rv(a))
    replayed = [await next_event(watch), await next_event(watch)]
    assert [(e.type, e.rv) for e in replayed] == [("MODIFIED", 2), ("ADDED", 3)]
    assert replayed[0].prev is a and replayed[0].resource == "pods"
    deleted = await store.delete("pods", "default", "b")
    event = await next_event(watch)
    assert (event.type, event.rv, event.object) == ("DELETED", 4, deleted)
    watch.stop()


async def test_watch_from_the_current_version_and_from_none_see_only_new_events(store: Store) -> None:
    await store.create("pods", obj("a"))
    from_now = store.watch("pods")
    from_current = store.watch("pods", since_rv=store.current_rv())
    assert from_now.pending() == 0 and from_current.pending() == 0
    await store.create("pods", obj("b"))
    for watch in (from_now, from_current):
        event = await next_event(watch)
        assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "b")


async def test_watch_iteration_waits_for_the_next_write(store: Store) -> None:
    watch = store.watch("pods")
    waiting = asyncio.ensure_future(next_event(watch))
    await asyncio.sleep(0)
    assert not waiting.done()
    await store.create("pods", obj("a"))
    assert (await waiting).type == "ADDED"


async def test_watch_older_than_the_window_is_expired(make_store: MakeStore) -> None:
    store = make_store(history=5)
    for i in range(10):
        await store.create("pods", obj(f"p{i}"))
    # The window holds rv 6..10: a watch from 5 gets 6..10, a watch from 4 would miss 5.
    with pytest.raises(ExpiredError) as info:
        store.watch("pods", since_rv=4)
    assert str(info.value) == "too old resource version: 4 (5)"
    assert (info.value.requested, info.value.oldest) == (4, 5)
    watch = store.watch("pods", since_rv=5)
    assert [e.rv for e in drain(watch)] == [6, 7, 8, 9, 10]


async def test_watch_only_sees_its_resource_and_namespace(store: Store) -> None:
    pods = store.watch("pods")
    in_a = store.watch("pods", namespace="a")
    await store.create("pods", obj("x", "a"))
    await store.create("pods", obj("x", "b"))
    await store.create("configmaps", obj("x", "a"))
    assert [e.object["metadata"]["namespace"] for e in drain(pods)] == ["a", "b"]
    assert [e.object["metadata"]["namespace"] for e in drain(in_a)] == ["a"]


async def test_watch_all_resources(store: Store) -> None:
    everything = store.watch("*")
    await store.create("pods", obj("x"))
    await store.create("nodes", obj("n", namespace=""))
    await store.delete("pods", "default", "x")
    assert [(e.type, e.resource) for e in drain(everything)] == [
        ("ADDED", "pods"), ("ADDED", "nodes"), ("DELETED", "pods")]
    replay = store.watch("*", since_rv=1, namespace="")
    assert [(e.type, e.resource) for e in drain(replay)] == [("ADDED", "nodes")]


def app_is(value: str) -> Callable[[dict[str, Any]], bool]:
    return lambda o: (o["metadata"].get("labels") or {}).get("app") == value


LABEL_STEPS: list[tuple[str, dict[str, str] | None, str | None]] = [
    # (operation, labels after it, event the app=web watcher sees)
    ("create", {"app": "db"}, None),
    ("update", {"app": "web"}, "ADDED"),
    ("update", {"app": "web", "v": "2"}, "MODIFIED"),
    ("update", {"app": "db"}, "DELETED"),
    ("update", {"app": "db", "v": "3"}, None),
    ("update", {"app": "web"}, "ADDED"),
    ("delete", None, "DELETED"),
    ("create", {"app": "db"}, None),
    ("delete", None, None),
    ("create", {"app": "web"}, "ADDED"),
]


async def _run_label_steps(store: Store) -> list[tuple[str, dict[str, Any] | None, dict[str, Any]]]:
    """Applies LABEL_STEPS; returns (op, state before, result) per step."""
    out = []
    for operation, labels, _ in LABEL_STEPS:
        before = store.get("pods", "default", "a")
        if operation == "create":
            result = await store.create("pods", obj("a", labels=labels))
        elif operation == "update":
            result = await store.update("pods", obj("a", labels=labels))
        else:
            result = await store.delete("pods", "default", "a")
        out.append((operation, before, result))
    return out


def _check_translations(events: list[WatchEvent], steps: list[tuple[str, Any, dict[str, Any]]]) -> None:
    expected = [(i, kind) for i, (_, _, kind) in enumerate(LABEL_STEPS) if kind is not None]
    assert [e.type for e in events] == [kind for _, kind in expected]
    for event, (i, kind) in zip(events, expected, strict=True):
        operation, before, result = steps[i]
        assert event.rv == rv(result)
        if kind == "DELETED" and operation == "update":
            # stopped matching: the previous content, stamped with the event's resourceVersion
            assert event.object["metadata"]["labels"] == before["metadata"]["labels"]
            assert rv(event.object) == rv(result)
        else:
            assert event.object is result


async def test_filtered_watch_translates_label_changes(store: Store) -> None:
    watch = store.watch("pods", predicate=app_is("web"))
    steps = await _run_label_steps(store)
    _check_translations(drain(watch), steps)


async def test_filtered_watch_translates_replayed_history_too(store: Store) -> None:
    steps = await _run_label_steps(store)
    watch = store.watch("pods", predicate=app_is("web"), since_rv=0)
    _check_translations(drain(watch), steps)


async def test_watchers_share_one_event_instance(store: Store) -> None:
    plain = [store.watch("pods") for _ in range(50)]
    filtered = [store.watch("pods", predicate=app_is("web")) for _ in range(20)]
    everything = store.watch("*")
    await store.create("pods", obj("a", labels={"app": "db"}))
    await store.update("pods", obj("a", labels={"app": "web"}))
    events = [drain(w) for w in plain] + [drain(everything)]
    assert all(len(e) == 2 for e in events)
    assert len({id(e[0]) for e in events}) == 1 and len({id(e[1]) for e in events}) == 1
    translated = [drain(w) for w in filtered]
    assert all(len(e) == 1 and e[0].type == "ADDED" for e in translated)
    assert len({id(e[0]) for e in translated}) == 1  # one translated event shared by all


async def test_stop_ends_iteration_and_unregisters(store: Store) -> None:
    watch = store.watch("pods")
    other = store.watch("*")
    assert store.watcher_count() == 2

    async def consume() -> list[WatchEvent]:
        return [event async for event in watch]

    consumer = asyncio.ensure_future(consume())
    await store.create("pods", obj("a"))
    await asyncio.sleep(0)
    watch.stop()
    assert [e.type for e in await asyncio.wait_for(consumer, 2)] == ["ADDED"]
    assert store.watcher_count("pods") == 0 and store.watcher_count() == 1
    watch.stop()  # idempotent
    other.stop()
    assert store.watcher_count() == 0
    await store.create("pods", obj("b"))  # publishing with no watchers left


async def test_watch_that_falls_too_far_behind_is_terminated(make_store: MakeStore) -> None:
    store = make_store(watcher_backlog=3)
    slow = store.watch("pods")
    fast = store.watch("pods")
    for i in range(5):
        await store.create("pods", obj(f"p{i}"))
        await next_event(fast)
    assert [event async for event in slow] == []
    assert slow.terminated_reason == "overflow"
    assert store.watcher_count() == 1


async def test_failing_predicate_ends_only_that_watch(store: Store) -> None:
    def broken(o: dict[str, Any]) -> bool:
        raise KeyError("boom")

    bad = store.watch("pods", predicate=broken)
    good = store.watch("pods")
    await store.create("pods", obj("a"))
    assert [event async for event in bad] == []
    assert bad.terminated_reason == "predicate error"
    assert (await next_event(good)).type == "ADDED"


async def test_close_is_idempotent_ends_watches_and_refuses_writes(store: Store) -> None:
    watch = store.watch("pods")
    await store.create("pods", obj("a"))
    await store.close()
    await store.close()
    assert [event async for event in watch] == []  # stopped: queued events are dropped
    with pytest.raises(StorageError):
        await store.create("pods", obj("b"))


# -- group commit (both backends must give the same answers) -------------------------------------


async def test_concurrent_writers_get_distinct_versions_and_exact_conflicts(store: Store) -> None:
    created = await asyncio.gather(*(store.create("pods", obj(f"p{i}")) for i in range(50)))
    assert sorted(rv(o) for o in created) == list(range(1, 51))
    base = rv(created[0])
    results = await asyncio.gather(
        *(store.update("pods", obj("p0", labels={"w": str(i)}), expected_rv=base) for i in range(5)),
        return_exceptions=True)
    assert sum(not isinstance(r, Exception) for r in results) == 1
    assert sum(isinstance(r, ConflictError) for r in results) == 4
    duplicates = await asyncio.gather(*(store.create("pods", obj("dup")) for _ in range(3)),
                                      return_exceptions=True)
    assert sum(isinstance(r, KeyExistsError) for r in duplicates) == 2
    assert store.count("pods") == 51


# -- SQLite specifics -----------------------------------------------------------------------------


async def test_sqlite_reopen_keeps_objects_and_versions_continue(tmp_path) -> None:
    path = tmp_path / "data" / "store.db"
    store = SqliteStore(path)
    await store.create("nodes", obj("n1", namespace="", labels={"a": "b"}))
    for i in range(20):
        await store.create("pods", obj(f"p{i:02d}", f"ns{i % 3}"))
    await store.update("pods", obj("p00", "ns0", labels={"x": "y"}))
    await store.delete("pods", "ns1", "p01")
    await store.create("secrets", obj("gone"))
    await store.delete("secrets", "default", "gone")  # the last write is a deletion
    expected = {r: store.list(r).items for r in ("nodes", "pods", "secrets")}
    last = store.current_rv()
    await store.close()

    reopened = SqliteStore(path)
    try:
        assert reopened.current_rv() == last
        for resource, items in expected.items():
            assert reopened.list(resource).items == items
        assert reopened.get("pods", "ns0", "p00")["metadata"]["labels"] == {"x": "y"}
        assert names(reopened.list("pods", namespace="ns2").items) == [
            ("ns2", f"p{i:02d}") for i in range(2, 20, 3)]
        # No history survives a restart: older versions are expired, the current one is fine.
        with pytest.raises(ExpiredError):
            reopened.watch("pods", since_rv=last - 1)
        watch = reopened.watch("pods", since_rv=last)
        created = await reopened.create("pods", obj("new"))
        assert rv(created) == last + 1
        assert (await next_event(watch)).object is created
    finally:
        await reopened.close()


async def test_sqlite_second_open_of_the_same_database_fails(tmp_path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    try:
        with pytest.raises(StorageError, match="in use"):
            SqliteStore(tmp_path / "s.db")
    finally:
        await store.close()


def test_sqlite_file_that_is_not_a_database_is_a_storage_error(tmp_path) -> None:
    path = tmp_path / "s.db"
    path.write_bytes(b"definitely not sqlite" * 100)
    with pytest.raises(StorageError, match="not a database"):
        SqliteStore(path)


@pytest.mark.parametrize("fsync", [False, True])
async def test_sqlite_pending_write_is_invisible_until_committed(tmp_path, fsync: bool) -> None:
    store = SqliteStore(tmp_path / "s.db", fsync=fsync)
    try:
        writing = asyncio.ensure_future(store.create("pods", obj("a")))
        await asyncio.sleep(0)  # the write is prepared and queued, its commit has not run yet
        assert not writing.done()
        assert store.get("pods", "default", "a") is None and store.current_rv() == 0
        with pytest.raises(KeyExistsError):  # but preconditions see it
            await store.create("pods", obj("a"))
        stored = await writing
        assert store.get("pods", "default", "a") is stored and store.current_rv() == 1
    finally:
        await store.close()


def _deny_writes(action: int, *_: object) -> int:
    """A SQLite authorizer under which every row write fails (as on a full disk), at commit."""
    writes = (sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE)
    return sqlite3.SQLITE_DENY if action in writes else sqlite3.SQLITE_OK


async def test_sqlite_failed_commit_fails_the_writes_and_rewinds(tmp_path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    try:
        await store.create("pods", obj("a"))
        watch = store.watch("pods")
        # (The store is compiled: its methods cannot be replaced, its connection can refuse.)
        store._conn.set_authorizer(_deny_writes)
        results = await asyncio.gather(store.create("pods", obj("b")), store.update("pods", obj("a")),
                                       return_exceptions=True)
        store._conn.set_authorizer(None)
        assert all(isinstance(r, StorageError) for r in results)
        assert store.get("pods", "default", "b") is None and store.current_rv() == 1
        assert watch.pending() == 0
        again = await store.create("pods", obj("b"))
        assert rv(again) == 2
    finally:
        await store.close()

    reopened = SqliteStore(tmp_path / "s.db")
    try:
        assert reopened.current_rv() == 2
        assert names(reopened.list("pods").items) == [("default", "a"), ("default", "b")]
    finally:
        await reopened.close()


async def test_sqlite_close_waits_for_pending_writes(tmp_path) -> None:
    store = SqliteStore(tmp_path / "s.db", fsync=True)
    writes = [asyncio.ensure_future(store.create("pods", obj(f"p{i}"))) for i in range(30)]
    await asyncio.sleep(0)
    await store.close()
    assert all(w.done() and not w.exception() for w in writes)
    reopened = SqliteStore(tmp_path / "s.db")
    try:
        assert reopened.count("pods") == 30 and reopened.current_rv() == 30
    finally:
        await reopened.close()
