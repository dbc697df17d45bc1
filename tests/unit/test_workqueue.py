"""The work queue: de-duplication, dirty-while-processing, delays, rate limiting, shutdown."""

from __future__ import annotations

import asyncio

import pytest

from everynode.client.workqueue import (
    BucketRateLimiter,
    ExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    QueueShutDown,
    WorkQueue,
    default_controller_rate_limiter,
    fast_rate_limiter,
)


async def test_duplicates_collapse_and_order_is_fifo():
    q = WorkQueue("t")
    for key in ("a", "b", "a", "c", "b"):
        q.add(key)
    assert q.len() == 3
    assert [await q.get() for _ in range(3)] == ["a", "b", "c"]
    assert q.metrics.adds == 3


async def test_key_being_processed_is_not_handed_out_twice():
    q = WorkQueue("t")
    q.add("a")
    key = await q.get()
    q.add("a")  # while processing: only marked dirty
    assert q.len() == 0
    getter = asyncio.ensure_future(q.get())
    await asyncio.sleep(0)
    assert not getter.done()
    q.done(key)  # dirty → queued again → handed to the waiting worker
    assert await asyncio.wait_for(getter, 1) == "a"
    q.done("a")
    assert q.len() == 0 and q.processing == 0


async def test_dirty_key_added_many_times_while_processing_is_requeued_once():
    q = WorkQueue("t")
    q.add("a")
    await q.get()
    for _ in range(5):
        q.add("a")
    q.done("a")
    assert q.len() == 1
    await q.get()
    q.done("a")
    assert q.len() == 0


async def test_done_without_readd_does_not_requeue():
    q = WorkQueue("t")
    q.add("a")
    await q.get()
    q.done("a")
    assert q.len() == 0


async def test_many_workers_each_key_once():
    q = WorkQueue("t")
    seen: list[str] = []
    active: set[str] = set()

    async def worker():
        while True:
            try:
                key = await q.get()
            except QueueShutDown:
                return
            assert key not in active
            active.add(key)
            await asyncio.sleep(0)
            if len(seen) < 20:
                q.add(key)  # re-added while processing: must wait for done()
            seen.append(key)
            active.discard(key)
            q.done(key)

    for i in range(4):
        q.add(f"k{i % 2}")
    workers = [asyncio.ensure_future(worker()) for _ in range(3)]
    while len(seen) < 22:
        await asyncio.sleep(0.001)
    q.shutdown()
    await asyncio.wait_for(asyncio.gather(*workers), 2)


async def test_add_after_delays_and_keeps_earliest_deadline():
    q = WorkQueue("t")
    q.add_after("a", 0.05)
    q.add_after("a", 10)  # later deadline: ignored
    assert q.len() == 0 and q.waiting == 1
    assert await asyncio.wait_for(q.get(), 2) == "a"
    assert q.waiting == 0


async def test_add_after_earlier_deadline_replaces_later():
    q = WorkQueue("t")
    q.add_after("a", 100)
    q.add_after("a", 0.01)
    assert q.waiting == 1
    assert await asyncio.wait_for(q.get(), 2) == "a"


async def test_add_after_non_positive_adds_now():
    q = WorkQueue("t")
    q.add_after("a", 0)
    assert q.len() == 1


async def test_shutdown_hands_out_remaining_then_raises():
    q = WorkQueue("t")
    q.add("a")
    q.shutdown()
    q.add("b")  # ignored after shutdown
    assert await q.get() == "a"
    with pytest.raises(QueueShutDown):
        await q.get()


async def test_shutdown_wakes_idle_getters_and_cancels_timers():
    q = WorkQueue("t")
    q.add_after("later", 0.01)
    getters = [asyncio.ensure_future(q.get()) for _ in range(3)]
    await asyncio.sleep(0)
    q.shutdown()
    results = await asyncio.gather(*getters, return_exceptions=True)
    assert all(isinstance(r, QueueShutDown) for r in results)
    assert q.waiting == 0


async def test_async_iteration_stops_at_shutdown():
    q = WorkQueue("t")
    q.add("a")
    q.add("b")
    q.shutdown()
    got = []
    async for key in q:
        got.append(key)
        q.done(key)
    assert got == ["a", "b"]


async def test_shutdown_with_drain_waits_for_processing():
    q = WorkQueue("t")
    q.add("a")
    await q.get()
    drain = asyncio.ensure_future(q.shutdown_with_drain())
    await asyncio.sleep(0.01)
    assert not drain.done()
    q.done("a")
    await asyncio.wait_for(drain, 1)


async def test_cancelled_getter_does_not_lose_a_key():
    q = WorkQueue("t")
    g1 = asyncio.ensure_future(q.get())
    await asyncio.sleep(0)
    g1.cancel()
    q.add("a")
    assert await asyncio.wait_for(q.get(), 1) == "a"


def test_exponential_backoff_grows_and_caps():
    lim = ExponentialFailureRateLimiter(0.005, 1.0)
    delays = [lim.when("k") for _ in range(10)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[-1] == 1.0
    assert all(a <= b for a, b in zip(delays, delays[1:], strict=False))
    assert lim.num_requeues("k") == 10
    assert lim.when("other") == 0.005  # per item
    lim.forget("k")
    assert lim.num_requeues("k") == 0
    assert lim.when("k") == 0.005


def test_exponential_backoff_huge_failure_counts_stay_capped():
    lim = ExponentialFailureRateLimiter(0.005, 1000.0)
    for _ in range(200):
        d = lim.when("k")
    assert d == 1000.0


def test_token_bucket_burst_then_rate():
    t = [0.0]
    bucket = BucketRateLimiter(10.0, 3, now=lambda: t[0])
    assert [bucket.when(i) for i in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.when(3) == pytest.approx(0.1)
    assert bucket.when(4) == pytest.approx(0.2)
    t[0] = 10.0  # refilled (capped at the burst)
    assert [bucket.when(i) for i in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.when(9) == pytest.approx(0.1)


def test_max_of_limiters():
    t = [0.0]
    lim = MaxOfRateLimiter(ExponentialFailureRateLimiter(0.005, 1000), BucketRateLimiter(10, 1, now=lambda: t[0]))
    assert lim.when("a") == 0.005
    assert lim.when("b") == pytest.approx(0.1)  # the bucket is empty now
    assert lim.num_requeues("a") == 1
    lim.forget("a")
    assert lim.num_requeues("a") == 0


async def test_add_rate_limited_uses_limiter_and_forget_resets():
    q = WorkQueue("t", rate_limiter=fast_rate_limiter(base_delay=0.001, max_delay=0.004))
    for expected in (1, 2, 3):
        q.add_rate_limited("k")
        assert q.num_requeues("k") == expected
        assert await asyncio.wait_for(q.get(), 2) == "k"
        q.done("k")
    assert q.metrics.retries == 3
    q.forget("k")
    assert q.num_requeues("k") == 0


async def test_default_rate_limiter_is_max_of_exponential_and_bucket():
    lim = default_controller_rate_limiter()
    assert lim.when("x") == 0.005
    assert lim.when("x") == 0.01


async def test_metrics_hooks():
    latencies: list[float] = []
    durations: list[float] = []
    q = WorkQueue("t")
    q.metrics.on_latency = latencies.append
    q.metrics.on_work_duration = durations.append
    q.add("a")
    assert q.depth == 1
    await q.get()
    q.done("a")
    assert len(latencies) == 1 and len(durations) == 1
    assert q.metrics.gets == 1 and q.metrics.work_duration_count == 1


def test_default_backoff_under_virtual_time():
    """The upstream limiter's real delays (5 ms doubling per failure) pass on a virtual loop."""
    from everynode.virtualtime import run_virtual

    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        q = WorkQueue("t")
        waits = []
        for _ in range(12):
            t0 = loop.time()
            q.add_rate_limited("k")
            key = await q.get()
            waits.append(round(loop.time() - t0, 6))
            q.done(key)
        return waits

    waits = run_virtual(main())
    assert waits == [round(0.005 * 2**i, 6) for i in range(12)]  # 5 ms … 10.24 s


async def test_run_worker_forgets_on_success_requeues_on_failure_and_drops_after_max_retries():
    from everynode.client.workqueue import fast_rate_limiter, run_worker

    q = WorkQueue("t", rate_limiter=fast_rate_limiter(base_delay=0.001, max_delay=0.001))
    seen: list[str] = []
    errors: list[tuple[str, bool]] = []

    async def sync(key: str) -> float | None:
        seen.append(key)
        if key == "bad":
            raise RuntimeError("boom")
        if key == "again" and seen.count("again") == 1:
            return 0.001  # ask to be looked at again
        return None

    task = asyncio.create_task(run_worker(q, sync, max_retries=2,
                                          on_error=lambda k, e, retried: errors.append((k, retried))))
    for key in ("ok", "bad", "again"):
        q.add(key)
    for _ in range(200):
        await asyncio.sleep(0.002)
        if seen.count("bad") == 3 and seen.count("again") == 2:
            break
    q.shutdown()
    await asyncio.wait_for(task, 1)
    assert seen.count("ok") == 1
    assert seen.count("again") == 2
    assert seen.count("bad") == 3  # first try + 2 retries, then dropped
    assert errors == [("bad", True), ("bad", True), ("bad", False)]
    assert q.num_requeues("bad") == 0 and q.processing == 0
