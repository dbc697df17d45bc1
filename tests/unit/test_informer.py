"""Informer: list + watch into a cache, handlers, incremental indexes, relist on 410 / broken streams.

Runs against a small fake client (below) so that stream breaks, history compaction and bookmarks
can be produced at will.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from everynode.api import errors
from everynode.client import informer as informer_mod
from everynode.client.informer import Informer, SharedInformerFactory, index_by_namespace

Obj = dict[str, Any]

_END = object()
_BREAK = object()


class FakeClient:
    """Just enough of the Client interface for informers: one resource, paginated list, watch with
    a history window that can be compacted, streams that can be ended or broken."""

    def __init__(self) -> None:
        self.rv = 0
        self.objects: dict[str, Obj] = {}
        self.history: list[tuple[int, str, Obj]] = []
        self.oldest = 0  # watches from an rv below this get 410
        self.watchers: list[asyncio.Queue] = []
        self.list_calls: list[dict[str, Any]] = []
        self.watch_calls: list[str | None] = []
        self.expire_continue = False

    # -- mutations ---------------------------------------------------------------------------------

    def _emit(self, etype: str, obj: Obj) -> None:
        self.history.append((self.rv, etype, obj))
        for q in self.watchers:
            q.put_nowait({"type": etype, "object": obj})

    def put(self, name: str, *, ns: str = "default", labels: dict[str, str] | None = None) -> Obj:
        self.rv += 1
        key = f"{ns}/{name}"
        etype = "MODIFIED" if key in self.objects else "ADDED"
        obj = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": ns, "resourceVersion": str(self.rv),
                            "labels": dict(labels or {})}}
        self.objects[key] = obj
        self._emit(etype, obj)
        return obj

    def remove(self, name: str, *, ns: str = "default") -> Obj:
        self.rv += 1
        old = self.objects.pop(f"{ns}/{name}")
        last = {**old, "metadata": {**old["metadata"], "resourceVersion": str(self.rv)}}
        self._emit("DELETED", last)
        return last

    def bookmark(self) -> None:
        for q in self.watchers:
            q.put_nowait({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1",
                                                         "metadata": {"resourceVersion": str(self.rv)}}})

    def compact(self) -> None:
        self.oldest = self.rv
        self.history.clear()

    def end_streams(self) -> None:
        for q in self.watchers:
            q.put_nowait(_END)

    def break_streams(self) -> None:
        for q in self.watchers:
            q.put_nowait(_BREAK)

    # -- the Client surface --------------------------------------------------------------------------

    async def list(self, resource: str, *, namespace: str | None = None, label_selector: str | None = None,
                   field_selector: str | None = None, limit: int | None = None, continue_token: str | None = None,
                   resource_version: str | None = None) -> Obj:
        self.list_calls.append({"limit": limit, "continue": continue_token})
        if continue_token and self.expire_continue:
            self.expire_continue = False
            raise errors.gone("The provided continue parameter is too old")
        keys = sorted(self.objects)
        start = int(continue_token) if continue_token else 0
        end = len(keys) if not limit else min(len(keys), start + limit)
        md: Obj = {"resourceVersion": str(self.rv)}
        if end < len(keys):
            md["continue"] = str(end)
        # List items without kind/apiVersion, as real servers send them.
        items = [{k: v for k, v in self.objects[k].items() if k not in ("kind", "apiVersion")}
                 for k in keys[start:end]]
        return {"kind": "PodList", "apiVersion": "v1", "metadata": md, "items": items}

    async def watch(self, resource: str, *, namespace: str | None = None, label_selector: str | None = None,
                    field_selector: str | None = None, resource_version: str | None = None,
                    allow_bookmarks: bool = True, timeout_seconds: int | None = None,
                    send_initial_events: bool | None = None) -> AsyncIterator[Obj]:
        self.watch_calls.append(resource_version)
        since = int(resource_version or self.rv)
        if since < self.oldest:
            raise errors.gone(f"too old resource version: {since} ({self.oldest})")
        q: asyncio.Queue = asyncio.Queue()
        for rv, etype, obj in self.history:
            if rv > since:
                q.put_nowait({"type": etype, "object": obj})
        self.watchers.append(q)
        try:
            while True:
                item = await q.get()
                if item is _END:
                    return
                if item is _BREAK:
                    raise ConnectionResetError("stream broken")
                yield item
        finally:
            if q in self.watchers:
                self.watchers.remove(q)


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def on_add(self, obj: Obj) -> None:
        self.calls.append(("add", obj["metadata"]["name"]))

    def on_update(self, old: Obj, new: Obj) -> None:
        self.calls.append(("update", new["metadata"]["name"], old["metadata"]["resourceVersion"],
                           new["metadata"]["resourceVersion"]))

    def on_delete(self, obj: Obj) -> None:
        self.calls.append(("delete", obj["metadata"]["name"], obj["metadata"]["resourceVersion"]))

    def register(self, inf: Informer) -> None:
        inf.add_handler(on_add=self.on_add, on_update=self.on_update, on_delete=self.on_delete)


async def until(cond: Callable[[], bool], timeout: float = 3.0) -> None:
    async def poll() -> None:
        while not cond():
            await asyncio.sleep(0.001)
    await asyncio.wait_for(poll(), timeout)


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    monkeypatch.setattr(informer_mod, "BACKOFF_INITIAL", 0.001)
    monkeypatch.setattr(informer_mod, "BACKOFF_MAX", 0.01)


def by_app(obj: Obj) -> list[str]:
    app = obj["metadata"].get("labels", {}).get("app")
    return [app] if app else []


@pytest.fixture
async def running():
    informers: list[Informer] = []

    def start(inf: Informer) -> Informer:
        informers.append(inf)
        inf.start()
        return inf

    yield start
    for inf in informers:
        await inf.stop()


async def test_paginated_list_fills_cache_and_calls_add(running):
    fc = FakeClient()
    for i in range(5):
        fc.put(f"p{i}")
    inf = Informer(fc, "pods", page_size=2)
    rec = Recorder()
    rec.register(inf)
    assert not inf.has_synced
    running(inf)
    await asyncio.wait_for(inf.wait_synced(), 2)
    assert sorted(inf.keys()) == [f"default/p{i}" for i in range(5)]
    assert [c["limit"] for c in fc.list_calls] == [2, 2, 2]
    assert sorted(rec.calls) == [("add", f"p{i}") for i in range(5)]
    assert inf.last_sync_resource_version == "5"
    # Items lacking kind/apiVersion got them in the cache.
    assert inf.get("default/p0")["kind"] == "Pod"


async def test_expired_continue_token_falls_back_to_full_list(running):
    fc = FakeClient()
    for i in range(5):
        fc.put(f"p{i}")
    fc.expire_continue = True
    inf = running(Informer(fc, "pods", page_size=2))
    await asyncio.wait_for(inf.wait_synced(), 2)
    assert len(inf) == 5
    assert fc.list_calls[-1] == {"limit": None, "continue": None}


async def test_watch_events_update_cache_and_handlers(running):
    fc = FakeClient()
    fc.put("a")
    inf = running(Informer(fc, "pods"))
    rec = Recorder()
    rec.register(inf)
    await inf.wait_synced()
    await until(lambda: fc.watchers)
    fc.put("b")
    fc.put("a")
    fc.remove("b")
    await until(lambda: len(rec.calls) == 4)
    assert rec.calls == [("add", "a"), ("add", "b"), ("update", "a", "1", "3"), ("delete", "b", "4")]
    assert inf.keys() == ["default/a"]
    assert inf.last_sync_resource_version == "4"
    assert fc.watch_calls[0] == "1"  # watch started from the list's resourceVersion


async def test_late_handler_receives_existing_objects(running):
    fc = FakeClient()
    fc.put("a")
    fc.put("b")
    inf = running(Informer(fc, "pods"))
    await inf.wait_synced()
    rec = Recorder()
    rec.register(inf)
    assert sorted(rec.calls) == [("add", "a"), ("add", "b")]


async def test_indexes_are_maintained_incrementally(running):
    fc = FakeClient()
    fc.put("a", labels={"app": "x"})
    fc.put("b", labels={"app": "x"}, ns="other")
    inf = running(Informer(fc, "pods", indexers={"app": by_app, "namespace": index_by_namespace}))
    await inf.wait_synced()
    await until(lambda: fc.watchers)
    assert sorted(o["metadata"]["name"] for o in inf.by_index("app", "x")) == ["a", "b"]
    assert [o["metadata"]["name"] for o in inf.by_index("namespace", "other")] == ["b"]

    # Replace the index function's view: count calls to prove no rebuild happens per event.
    calls = {"n": 0}

    def counting(obj: Obj) -> list[str]:
        calls["n"] += 1
        return by_app(obj)

    inf._indexers["app"] = counting  # white-box: same values, counted
    for i in range(20):
        fc.put(f"n{i}", labels={"app": "y"})
    await until(lambda: len(inf) == 22)
    assert calls["n"] == 20  # one evaluation per added object, not per cached object
    fc.put("a", labels={"app": "y"})  # relabel: moves between index values
    await until(lambda: len(inf.by_index("app", "y")) == 21)
    assert [o["metadata"]["name"] for o in inf.by_index("app", "x")] == ["b"]
    fc.remove("b", ns="other")
    await until(lambda: inf.by_index("app", "x") == [])
    assert "x" not in inf.index_values("app")
    assert inf.by_index("namespace", "other") == []
    with pytest.raises(KeyError):
        inf.by_index("missing", "x")


async def test_indexer_added_after_start_indexes_existing_objects(running):
    fc = FakeClient()
    fc.put("a", labels={"app": "x"})
    inf = running(Informer(fc, "pods"))
    await inf.wait_synced()
    inf.add_indexers({"app": by_app})
    assert [o["metadata"]["name"] for o in inf.by_index("app", "x")] == ["a"]


async def test_relist_after_410_delivers_only_the_differences(running):
    fc = FakeClient()
    fc.put("keep")
    fc.put("change")
    fc.put("gone")
    inf = running(Informer(fc, "pods", indexers={"app": by_app}))
    rec = Recorder()
    rec.register(inf)
    await inf.wait_synced()
    await until(lambda: fc.watchers)
    rec.calls.clear()
    # Changes the informer does not see on its stream, then history compaction, then a clean end
    # of the stream: re-watching from the old rv answers 410 → relist.
    saved = fc.watchers[:]
    fc.watchers.clear()
    fc.put("change", labels={"app": "z"})
    fc.remove("gone")
    fc.put("new")
    fc.compact()
    for q in saved:
        q.put_nowait(_END)
    await until(lambda: inf.relists == 1)
    assert sorted(rec.calls) == [("add", "new"), ("delete", "gone", "3"), ("update", "change", "2", "4")]
    assert sorted(inf.keys()) == ["default/change", "default/keep", "default/new"]
    assert [o["metadata"]["name"] for o in inf.by_index("app", "z")] == ["change"]
    assert inf.last_error is not None and inf.last_error.code == 410
    # Handled inside the informer, gone from here: compiled, a ``finally`` that awaited left it in
    # the thread's exception state, and a later test's clean stream end raised it again.
    assert sys.exc_info() == (None, None, None)
    # After the relist the informer watches again from the new list's rv.
    await until(lambda: fc.watchers)
    fc.put("after")
    await until(lambda: "default/after" in inf)


async def test_clean_stream_end_resumes_from_last_rv_without_relist(running):
    fc = FakeClient()
    fc.put("a")
    inf = running(Informer(fc, "pods"))
    await inf.wait_synced()
    await until(lambda: fc.watchers)
    fc.put("b")
    await until(lambda: "default/b" in inf)
    fc.end_streams()
    await until(lambda: len(fc.watch_calls) == 2)
    assert fc.watch_calls == ["1", "2"]
    assert inf.lists == 1 and inf.relists == 0


async def test_broken_stream_relists(running):
    fc = FakeClient()
    fc.put("a")
    inf = running(Informer(fc, "pods"))
    rec = Recorder()
    rec.register(inf)
    await inf.wait_synced()
    await until(lambda: fc.watchers)
    saved = fc.watchers[:]
    fc.watchers.clear()
    fc.remove("a")
    for q in saved:
        q.put_nowait(_BREAK)
    await until(lambda: inf.relists == 1)
    assert ("delete", "a", "1") in rec.calls  # last known state delivered
    assert len(inf) == 0
    assert isinstance(inf.last_error, ConnectionResetError)
    assert sys.exc_info() == (None, None, None)


async def test_bookmark_advances_resource_version(running):
    fc = FakeClient()
    fc.put("a")
    inf = running(Informer(fc, "pods"))
    await inf.wait_synced()
    await until(lambda: fc.watchers)
    fc.rv = 42  # writes to other resources
    fc.bookmark()
    await until(lambda: inf.last_sync_resource_version == "42")
    fc.end_streams()
    await until(lambda: len(fc.watch_calls) == 2)
    assert fc.watch_calls[-1] == "42"


async def test_handler_errors_do_not_stop_the_informer(running):
    fc = FakeClient()
    inf = running(Informer(fc, "pods"))
    seen: list[str] = []

    def bad(obj: Obj) -> None:
        raise RuntimeError("boom")

    inf.add_handler(on_add=bad)
    inf.add_handler(on_add=lambda o: seen.append(o["metadata"]["name"]))
    await inf.wait_synced()
    await until(lambda: fc.watchers)
    fc.put("a")
    fc.put("b")
    await until(lambda: seen == ["a", "b"])


async def test_removed_handler_gets_nothing(running):
    fc = FakeClient()
    inf = running(Informer(fc, "pods"))
    rec = Recorder()
    reg = inf.add_handler(on_add=rec.on_add)
    await inf.wait_synced()
    await until(lambda: fc.watchers)
    reg.remove()
    fc.put("a")
    await until(lambda: "default/a" in inf)
    assert rec.calls == []


async def test_resync_redelivers_updates(running):
    fc = FakeClient()
    fc.put("a")
    inf = running(Informer(fc, "pods", resync_period=0.01))
    rec = Recorder()
    rec.register(inf)
    await until(lambda: any(c[0] == "update" for c in rec.calls))
    assert ("update", "a", "1", "1") in rec.calls


async def test_stop_ends_the_watch(running):
    fc = FakeClient()
    inf = Informer(fc, "pods")
    inf.start()
    await inf.wait_synced()
    await until(lambda: fc.watchers)
    await inf.stop()
    assert fc.watchers == []


async def test_shared_factory_shares_informers():
    fc = FakeClient()
    factory = SharedInformerFactory(fc)
    a = factory.informer("pods")
    b = factory.informer("pods", indexers={"app": by_app})
    c = factory.informer("pods", label_selector="app=x")
    assert a is b and a is not c
    assert "app" in a._indexers
    factory.start()
    await asyncio.wait_for(factory.wait_for_sync(), 2)
    await factory.stop()
    assert not a.started


def test_a_namespaced_factory_scopes_namespaced_resources_only():
    """``namespace`` (client-go's WithNamespace, ``everynode controller --namespace``): a
    namespaced resource asked for without a namespace is watched in that one; a cluster-scoped
    resource whole; an explicit namespace is kept."""
    factory = SharedInformerFactory(FakeClient(), namespace="team-a")
    assert factory.informer("daemonsets.apps").namespace == "team-a"
    assert factory.informer("pods") is factory.informer("pods", namespace="team-a")
    assert factory.informer("nodes").namespace is None
    assert factory.informer("pods", namespace="other").namespace == "other"
    assert SharedInformerFactory(FakeClient()).informer("pods").namespace is None


@pytest.mark.parametrize(("ops", "expected"), [
    ([("+", "a")], "a"),  # one key: kept as a plain str
    ([("+", "a"), ("+", "a")], "a"),
    ([("+", "a"), ("+", "b")], {"a", "b"}),
    ([("+", "a"), ("+", "b"), ("-", "a")], "b"),  # back to one key
    ([("+", "a"), ("+", "b"), ("+", "c"), ("-", "a")], {"b", "c"}),
    ([("+", "a"), ("-", "a")], None),
    ([("+", "a"), ("-", "b")], "a"),
    ([("-", "a")], None),
    ([("+", "a"), ("+", "b"), ("-", "a"), ("-", "b")], None),
])
def test_index_entries_hold_one_key_as_a_str(ops: list[tuple[str, str]], expected: Any) -> None:
    index: dict[str, Any] = {}
    for op, key in ops:
        (informer_mod._index_put if op == "+" else informer_mod._index_drop)(index, "v", key)
    assert index.get("v") == expected
