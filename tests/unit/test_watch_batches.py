"""Batched watch delivery: the store watcher's ``wait``/``drain``, the hub's sliced waking, the
service's ``watch_batches`` and the HTTP stream that writes one chunk per batch."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson
import pytest

from everynode.api.registry import resource
from everynode.apiserver.server import serve
from everynode.apiserver.service import ApiService, RequestOptions
from everynode.clock import Clock
from everynode.storage import watch as watchmod
from everynode.storage.memory import MemoryStore
from everynode.virtualtime import run_virtual

PODS = resource("pods")


def obj(name: str, namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}}


def api_pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "img:1"}]}}


def names_of(events: list[Any]) -> list[str]:
    return [e.object["metadata"]["name"] for e in events]


async def settle(rounds: int = 20) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


# -- the store watcher ------------------------------------------------------------------------------


async def test_drain_takes_everything_queued_in_order_and_leaves_nothing() -> None:
    store = MemoryStore()
    watch = store.watch("pods")
    assert watch.drain() == []
    for name in ("a", "b", "c"):
        await store.create("pods", obj(name))
    assert await watch.wait() is True  # events are queued: no waiting
    assert names_of(watch.drain()) == ["a", "b", "c"]
    assert watch.drain() == [] and watch.pending() == 0
    watch.stop()


async def test_events_written_while_the_reader_is_busy_arrive_in_one_batch() -> None:
    store = MemoryStore()
    watch = store.watch("pods")
    batches: list[list[str]] = []
    busy = asyncio.Event()
    release = asyncio.Event()

    async def reader() -> None:
        while await watch.wait():
            batch = watch.drain()
            if not batch:
                return  # stopped
            batches.append(names_of(batch))
            if len(batches) == 1:
                busy.set()
                await release.wait()  # the stream is slow: a write is in progress

    task = asyncio.ensure_future(reader())
    await settle()
    await store.create("pods", obj("first"))
    await busy.wait()
    for i in range(5):
        await store.create("pods", obj(f"while-busy-{i}"))
    release.set()
    await settle()
    watch.stop()
    await asyncio.wait_for(task, 2)
    assert batches == [["first"], [f"while-busy-{i}" for i in range(5)]]


async def test_a_slow_watcher_does_not_hold_back_the_others() -> None:
    store = MemoryStore()
    slow, fast = store.watch("pods"), store.watch("pods")
    fast_seen: list[str] = []
    slow_batches: list[list[str]] = []
    release = asyncio.Event()

    async def slow_reader() -> None:
        await slow.wait()
        slow_batches.append(names_of(slow.drain()))
        await release.wait()
        await slow.wait()
        slow_batches.append(names_of(slow.drain()))

    async def fast_reader() -> None:
        while await fast.wait():
            batch = fast.drain()
            if not batch:
                return
            fast_seen.extend(names_of(batch))

    tasks = [asyncio.ensure_future(slow_reader()), asyncio.ensure_future(fast_reader())]
    await settle()
    for i in range(4):
        await store.create("pods", obj(f"p{i}"))
        await settle()
        # The fast reader has every event so far while the slow one still holds its first batch.
        assert fast_seen == [f"p{j}" for j in range(i + 1)]
    release.set()
    await asyncio.wait_for(tasks[0], 2)
    assert slow_batches == [["p0"], ["p1", "p2", "p3"]]
    fast.stop()
    await asyncio.wait_for(tasks[1], 2)


async def test_wait_with_a_timeout_returns_false_without_creating_a_task() -> None:
    store = MemoryStore()
    watch = store.watch("pods")
    tasks_before = len(asyncio.all_tasks())
    waiting = asyncio.ensure_future(watch.wait(0.05))
    await settle()
    assert len(asyncio.all_tasks()) == tasks_before + 1  # only the test's own waiting task
    assert await asyncio.wait_for(waiting, 2) is False
    assert await watch.wait(0) is False
    await store.create("pods", obj("a"))
    assert await watch.wait(0) is True  # queued events answer at once, whatever the timeout
    watch.stop()


def test_waits_for_one_deadline_arm_one_timer_which_still_ends_a_wait() -> None:
    """On virtual time (run_virtual): the deadlines are exact whatever the machine's load."""

    async def scenario() -> None:
        store = MemoryStore()
        watch = store.watch("pods")
        loop = asyncio.get_running_loop()
        armed: list[float] = []
        real_call_at = loop.call_at

        def counting_call_at(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
            if getattr(callback, "__self__", None) is watch:  # the watch's timers, not wait_for's
                armed.append(when)
            return real_call_at(when, callback, *args, **kwargs)

        loop.call_at = counting_call_at  # type: ignore[method-assign]
        try:
            deadline = loop.time() + 30.0
            for name in ("a", "b", "c"):  # the bookmark loop: one deadline, a batch of events each time
                waiting = asyncio.ensure_future(watch.wait_until(deadline))
                await settle()
                await store.create("pods", obj(name))
                assert await waiting is True
                assert names_of(watch.drain()) == [name]
            assert armed == [deadline]
            assert await watch.wait_until(deadline) is False  # the deadline passed
            assert loop.time() == deadline
            assert await watch.wait_until(deadline) is False  # already past: at once, nothing armed
            assert armed == [deadline]
            # A new deadline arms a new timer; the one left by it cannot end a wait without one.
            later = loop.time() + 5.0
            first = asyncio.ensure_future(watch.wait_until(later))
            await settle()
            await store.create("pods", obj("d"))
            assert await first is True
            assert names_of(watch.drain()) == ["d"]
            endless = asyncio.ensure_future(watch.wait())
            await asyncio.sleep(10.0)  # the timer of ``later`` fires: a stale wake-up only
            assert not endless.done()
            assert armed == [deadline, later]
        finally:
            del loop.call_at  # type: ignore[method-assign]
        watch.stop()
        assert await endless is True

    run_virtual(scenario())


async def test_wait_returns_true_when_the_watch_stops() -> None:
    store = MemoryStore()
    watch = store.watch("pods")
    waiting = asyncio.ensure_future(watch.wait())
    await settle()
    watch.stop()
    assert await asyncio.wait_for(waiting, 2) is True
    assert watch.drain() == []


async def test_a_stale_wake_up_does_not_end_a_wait() -> None:
    store = MemoryStore()
    watch = store.watch("pods")
    waiting = asyncio.ensure_future(watch.wait())
    await settle()
    await store.create("pods", obj("a"))  # queues a wake-up for the waiting reader
    assert names_of(watch.drain()) == ["a"]  # someone else takes the event first
    await settle()
    assert not waiting.done()  # woken with nothing queued: it keeps waiting
    await store.create("pods", obj("b"))
    assert await asyncio.wait_for(waiting, 2) is True
    assert names_of(watch.drain()) == ["b"]
    watch.stop()


async def test_waking_is_sliced_per_loop_iteration_and_reaches_every_watcher(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watchmod, "WAKE_SLICE", 2)
    store = MemoryStore()
    watches = [store.watch("pods") for _ in range(7)]
    woken: list[int] = []

    async def reader(i: int) -> list[str]:
        await watches[i].wait()
        woken.append(i)
        return names_of(watches[i].drain())

    tasks = [asyncio.ensure_future(reader(i)) for i in range(7)]
    await settle()
    await store.create("pods", obj("a"))
    await store.create("pods", obj("b"))
    progress = []
    while len(woken) < 7 and len(progress) < 50:
        await asyncio.sleep(0)  # one loop iteration
        progress.append(len(woken))
    steps = [b - a for a, b in zip([0, *progress[:-1]], progress, strict=True)]
    assert max(steps) <= 2  # never more than WAKE_SLICE readers resumed in one iteration
    results = await asyncio.wait_for(asyncio.gather(*tasks), 2)
    assert results == [["a", "b"]] * 7  # each got both events, in order, in one batch
    assert sorted(woken) == list(range(7))


async def test_async_iteration_still_yields_one_event_at_a_time() -> None:
    store = MemoryStore()
    watch = store.watch("pods")
    consumer = asyncio.ensure_future(asyncio.wait_for(watch.__anext__(), 2))
    await settle()
    await store.create("pods", obj("a"))
    await store.create("pods", obj("b"))
    assert (await consumer).object["metadata"]["name"] == "a"
    assert (await watch.__anext__()).object["metadata"]["name"] == "b"
    watch.stop()


async def test_namespace_index_delivers_only_matching_namespaces() -> None:
    store = MemoryStore()
    mine, other, every = store.watch("pods", namespace="a"), store.watch("pods", namespace="b"), store.watch("pods")
    everything = store.watch("*")
    await store.create("pods", obj("x", "a"))
    assert [names_of(w.drain()) for w in (mine, other, every, everything)] == [["x"], [], ["x"], ["x"]]
    assert store.watcher_count("pods") == 3 and store.watcher_count() == 4
    for w in (mine, other, every, everything):
        w.stop()
    assert store.watcher_count() == 0


# -- the service ------------------------------------------------------------------------------------


@pytest.fixture
async def api() -> ApiService:
    service = ApiService(MemoryStore(), clock=Clock())
    await service.start()
    return service


async def test_watch_batches_group_the_events_ready_together(api: ApiService) -> None:
    batches = api.watch_batches(PODS, "default")
    first = asyncio.ensure_future(batches.__anext__())
    await settle()
    for name in ("a", "b", "c"):
        await api.create(PODS, "default", api_pod(name), opts=RequestOptions())
    assert names_of(await asyncio.wait_for(first, 2)) == ["a", "b", "c"]
    await batches.aclose()
    assert api.store.watcher_count() == 0


async def test_initial_events_come_in_bounded_batches_and_flatten_to_watch(api: ApiService,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import everynode.apiserver.registry.watch as watchmod

    monkeypatch.setattr(watchmod, "INITIAL_EVENTS_BATCH", 2)
    for name in ("a", "b", "c"):
        await api.create(PODS, "default", api_pod(name), opts=RequestOptions())
    batches = api.watch_batches(PODS, "default", send_initial_events=True, allow_bookmarks=True,
                                resource_version_match="NotOlderThan", resource_version="")
    got = [await batches.__anext__() for _ in range(3)]
    await batches.aclose()
    assert [[e.type for e in b] for b in got] == [["ADDED", "ADDED"], ["ADDED"], ["BOOKMARK"]]
    events = api.watch(PODS, "default", send_initial_events=True, allow_bookmarks=True,
                       resource_version_match="NotOlderThan", resource_version="")
    flat = [await events.__anext__() for _ in range(4)]
    await events.aclose()  # type: ignore[attr-defined]
    assert [e.type for e in flat] == ["ADDED", "ADDED", "ADDED", "BOOKMARK"]
    assert names_of(flat[:3]) == ["a", "b", "c"]


async def test_bookmark_watch_waits_without_extra_tasks(api: ApiService) -> None:
    api.context.bookmark_interval = 0.05
    events = api.watch(PODS, "default", allow_bookmarks=True)
    tasks_before = len(asyncio.all_tasks())
    pending = asyncio.ensure_future(events.__anext__())
    await settle()
    assert len(asyncio.all_tasks()) == tasks_before + 1  # the consumer only: no waiter task
    await api.create(PODS, "default", api_pod("a"), opts=RequestOptions())
    event = await asyncio.wait_for(pending, 2)
    assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "a")
    bookmark = await asyncio.wait_for(events.__anext__(), 2)
    assert bookmark.type == "BOOKMARK"
    await events.aclose()  # type: ignore[attr-defined]
    assert api.store.watcher_count() == 0


class IterateOnly:
    """A Watch that offers only the interface's iteration (no wait/drain)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __aiter__(self) -> Any:
        return self._inner.__aiter__()

    def stop(self) -> None:
        self._inner.stop()


async def test_a_watch_without_batching_still_streams_events_and_bookmarks(
        api: ApiService, monkeypatch: pytest.MonkeyPatch) -> None:
    store = api.store
    plain_watch = store.watch
    monkeypatch.setattr(store, "watch", lambda *a, **kw: IterateOnly(plain_watch(*a, **kw)))
    api.context.bookmark_interval = 0.05
    events = api.watch(PODS, "default", allow_bookmarks=True)
    pending = asyncio.ensure_future(events.__anext__())
    await settle()
    await api.create(PODS, "default", api_pod("a"), opts=RequestOptions())
    assert (await asyncio.wait_for(pending, 2)).object["metadata"]["name"] == "a"
    assert (await asyncio.wait_for(events.__anext__(), 2)).type == "BOOKMARK"
    await events.aclose()  # type: ignore[attr-defined]
    assert store.watcher_count() == 0


# -- HTTP -------------------------------------------------------------------------------------------


async def test_http_watch_stream_carries_a_batch_as_lines_in_order(api: ApiService) -> None:
    handle = await serve(api, host="127.0.0.1", port=0, certs=None, token="t", ready=True)
    try:
        url = f"http://127.0.0.1:{handle.port}/api/v1/namespaces/default/pods"
        async with aiohttp.ClientSession(headers={"Authorization": "Bearer t"}) as session:
            async with session.get(url, params={"watch": "true", "resourceVersion": str(api.store.current_rv())}) as r:
                assert r.status == 200
                await settle()
                for name in ("a", "b", "c", "d"):  # written back to back: they travel as one batch
                    await api.create(PODS, "default", api_pod(name), opts=RequestOptions())
                lines = [await asyncio.wait_for(r.content.readline(), 5) for _ in range(4)]
        decoded = [orjson.loads(line) for line in lines]
        assert [(d["type"], d["object"]["metadata"]["name"]) for d in decoded] == [
            ("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c"), ("ADDED", "d")]
    finally:
        await handle.stop()
