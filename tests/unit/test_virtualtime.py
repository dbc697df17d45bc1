"""Virtual-time event loop: idle waits become clock jumps, order and results stay asyncio's."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest

from everynode.virtualtime import DEFAULT_EPOCH, VirtualTimeEventLoop, run_virtual, virtual_clock


def test_hour_long_sleep_is_instant_and_advances_loop_time() -> None:
    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await asyncio.sleep(3600)
        return t0, loop.time()

    wall0 = time.monotonic()
    t0, t1 = run_virtual(main())
    assert t1 - t0 == pytest.approx(3600)
    # Not a timing assertion on speed: an hour of real sleep would simply never finish the suite.
    assert time.monotonic() - wall0 < 600


def test_runs_on_a_virtual_loop() -> None:
    async def main() -> bool:
        return isinstance(asyncio.get_running_loop(), VirtualTimeEventLoop)

    assert run_virtual(main())


def test_timers_fire_in_order_at_their_virtual_times() -> None:
    async def main() -> list[tuple[str, float]]:
        loop = asyncio.get_running_loop()
        fired: list[tuple[str, float]] = []
        done = asyncio.Event()
        loop.call_later(30, lambda: fired.append(("c", loop.time())))
        loop.call_later(10, lambda: fired.append(("a", loop.time())))
        loop.call_later(20, lambda: fired.append(("b", loop.time())))
        loop.call_later(40, done.set)
        await done.wait()
        return fired

    assert run_virtual(main()) == [("a", 10.0), ("b", 20.0), ("c", 30.0)]


def test_wait_for_times_out_in_virtual_time() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.Event().wait(), timeout=300)
        return loop.time() - t0

    assert run_virtual(main()) == pytest.approx(300)


def test_queue_with_delayed_producer() -> None:
    async def main() -> list[tuple[int, float]]:
        loop = asyncio.get_running_loop()
        q: asyncio.Queue[int] = asyncio.Queue()

        async def producer() -> None:
            for i in range(3):
                await asyncio.sleep(60)
                await q.put(i)

        task = asyncio.create_task(producer())
        got = [(await q.get(), loop.time()) for _ in range(3)]
        await task
        return got

    assert run_virtual(main()) == [(0, 60.0), (1, 120.0), (2, 180.0)]


def test_virtual_clock_tracks_the_loop_from_the_given_start() -> None:
    async def main() -> tuple[float, float, str]:
        clock = virtual_clock()
        t0 = clock.now()
        await asyncio.sleep(90)
        return t0, clock.now(), clock.rfc3339()

    t0, t1, text = run_virtual(main(), start=1_000_000_000.0)
    assert t0 == 1_000_000_000.0
    assert t1 == 1_000_000_090.0
    assert text == "2001-09-09T01:48:10Z"


def test_default_epoch_makes_timestamps_repeatable() -> None:
    async def main() -> float:
        await asyncio.sleep(5)
        return virtual_clock().now()

    assert run_virtual(main()) == run_virtual(main()) == DEFAULT_EPOCH + 5


def test_same_inputs_give_the_same_interleaving() -> None:
    async def main() -> list[tuple[str, float]]:
        loop = asyncio.get_running_loop()
        log: list[tuple[str, float]] = []

        async def worker(name: str, period: float) -> None:
            for _ in range(5):
                await asyncio.sleep(period)
                log.append((name, loop.time()))

        await asyncio.gather(worker("x", 3), worker("y", 2), worker("z", 3))
        return log

    first = run_virtual(main())
    assert first == run_virtual(main())
    assert [t for _, t in first] == sorted(t for _, t in first)


def test_thread_work_freezes_virtual_time() -> None:
    async def main() -> tuple[float, str]:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        sleeper = asyncio.ensure_future(asyncio.sleep(1000))
        result = await asyncio.to_thread(lambda: (time.sleep(0.05), "done")[1])
        elapsed = loop.time() - t0
        sleeper.cancel()
        return elapsed, result

    elapsed, result = run_virtual(main())
    assert result == "done"
    assert elapsed < 1000


def test_pending_tasks_are_cancelled_at_the_end() -> None:
    cancelled = []

    async def forever() -> None:
        try:
            await asyncio.sleep(10**9)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def main() -> None:
        asyncio.create_task(forever())
        await asyncio.sleep(0)

    run_virtual(main())
    assert cancelled == [True]


def test_frozen_loop_does_not_jump() -> None:
    async def main() -> tuple[float, float, float]:
        import threading

        loop = asyncio.get_running_loop()
        assert isinstance(loop, VirtualTimeEventLoop)
        t0 = loop.time()
        seen: list[float] = []

        def thaw() -> None:
            seen.append(loop.time())  # the loop's time when a real wake-up thaws it
            loop.thaw()

        loop.freeze()
        threading.Timer(0.05, lambda: loop.call_soon_threadsafe(thaw)).start()
        await asyncio.sleep(100)
        return t0, seen[0], loop.time()

    t0, at_thaw, t1 = run_virtual(main())
    assert at_thaw == t0  # no jump while frozen, though a timer was due
    assert t1 - t0 == pytest.approx(100)


def test_timer_due_within_clock_resolution_sees_its_deadline_while_other_work_runs() -> None:
    """Two tasks that wait on a timer and re-arm it until ``loop.time() >= deadline`` (the store's
    watch waits), with deadlines a few ulps apart: asyncio runs a timer early when it is due
    within the clock's resolution and other work is ready; the two tasks' wake-ups keep work
    ready for each other, so unless the virtual clock then reads the timer's time they re-arm
    forever and time never advances (the loop hangs)."""
    import threading

    async def wait_until(deadline: float, *, stagger: int) -> float:
        loop = asyncio.get_running_loop()
        for _ in range(stagger):
            await asyncio.sleep(0)  # arm one loop iteration after the other task
        while True:
            waiter = loop.create_future()
            loop.call_at(deadline, waiter.set_result, None)
            await waiter
            if loop.time() >= deadline:
                return loop.time()

    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(120.1)
        now = loop.time()
        return await asyncio.gather(*(wait_until(now + 1e-12 * k, stagger=k) for k in (1, 2)))

    result: list[list[float]] = []
    worker = threading.Thread(target=lambda: result.append(run_virtual(main())), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "virtual loop spun without advancing time"
    assert result and all(t > 120.1 for t in result[0])


def test_timers_due_at_the_same_instant_run_in_scheduling_order() -> None:
    """Ties are FIFO whatever else is in the heap (asyncio alone orders them by heap shape)."""
    async def scenario() -> list[int]:
        loop = asyncio.get_running_loop()
        order: list[int] = []
        for far in (3600.0, 7.0, 86400.0, 2.0):  # unrelated timers that reshape the heap
            loop.call_later(far, lambda: None)
        for i in range(40):
            loop.call_later(1.0, order.append, i)
            if i % 3 == 0:
                loop.call_later(0.5 + i / 100, lambda: None)
        await asyncio.sleep(1.5)
        return order

    assert run_virtual(scenario()) == list(range(40))


class _CountingSelector:
    """Stands in for a virtual loop's real selector (``_VirtualSelector.inner``), counting polls."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.polls = 0

    def select(self, timeout: float | None = None) -> Any:
        self.polls += 1
        return self.real.select(timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def test_a_busy_loop_polls_its_sockets_every_few_turns() -> None:
    """While callbacks keep the loop busy, the real selector is polled one turn in
    POLL_EVERY_BUSY_TURNS, and a socket that became readable is still served within that."""
    from everynode import virtualtime

    async def main() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        selector = loop._selector  # type: ignore[attr-defined]
        real = selector.inner
        counting = _CountingSelector(real)
        selector.inner = counting
        a, b = socket.socketpair()
        readable = asyncio.Event()
        loop.add_reader(a, readable.set)
        try:
            for _ in range(10 * virtualtime.POLL_EVERY_BUSY_TURNS):  # busy: no socket event yet
                await asyncio.sleep(0)
            busy_polls = counting.polls
            b.send(b"x")
            turns = 0
            while not readable.is_set():
                turns += 1
                await asyncio.sleep(0)
        finally:
            loop.remove_reader(a)
            selector.inner = real
            a.close()
            b.close()
        return busy_polls, turns

    busy_polls, turns = run_virtual(main())
    assert busy_polls <= 11
    assert turns <= virtualtime.POLL_EVERY_BUSY_TURNS + 1


def test_jumps_poll_only_when_a_poll_can_find_something() -> None:
    """With no socket watched, no signal handler and no ``call_soon_threadsafe`` since the last
    poll, the selector has nothing to report: time jumps without a poll.  A wake-up from another
    thread, or a watched socket, makes the turns poll again."""
    import threading

    async def main() -> tuple[int, int, int, list[float]]:
        loop = asyncio.get_running_loop()
        selector = loop._selector  # type: ignore[attr-defined]
        real = selector.inner
        counting = _CountingSelector(real)
        selector.inner = counting
        try:
            for _ in range(50):
                await asyncio.sleep(10)  # a jump each
            quiet = counting.polls
            woken: list[float] = []
            thread = threading.Thread(target=loop.call_soon_threadsafe, args=(lambda: woken.append(loop.time()),))
            thread.start()
            thread.join()
            before = counting.polls
            await asyncio.sleep(10)
            after_wake = counting.polls - before
            a, b = socket.socketpair()
            loop.add_reader(a, lambda: None)
            before = counting.polls
            for _ in range(5):
                await asyncio.sleep(10)
            watching = counting.polls - before
            loop.remove_reader(a)
            a.close()
            b.close()
        finally:
            selector.inner = real
        return quiet, after_wake, watching, woken

    quiet, after_wake, watching, woken = run_virtual(main())
    assert quiet == 0
    assert after_wake >= 1 and len(woken) == 1
    assert watching >= 5


def test_failing_callbacks_reach_the_exception_handler_and_cancelled_timers_never_run() -> None:
    """The loop's own turn (compiled, asyncio's steps) keeps ``Handle._run``'s rule — a callback's
    exception goes to the loop's exception handler with asyncio's words, the loop goes on — and
    asyncio's timer bookkeeping: a cancelled timer never runs, and once most of the heap is
    cancelled it is swept out."""
    async def main() -> tuple[list[tuple[str, str, str]], list[int], int, int]:
        loop = asyncio.get_running_loop()
        failures: list[tuple[str, str, str]] = []
        loop.set_exception_handler(lambda _loop, ctx: failures.append(
            (ctx["message"].split(" at ")[0], type(ctx["exception"]).__name__, type(ctx["handle"]).__name__)))
        ran: list[int] = []

        def fail_later() -> None:
            raise ZeroDivisionError

        def fail_soon() -> None:
            raise IndexError

        loop.call_later(1, fail_later)
        loop.call_soon(fail_soon)
        timers = [loop.call_later(100 + i, ran.append, i) for i in range(300)]
        for timer in timers[:200]:
            timer.cancel()
        await asyncio.sleep(2)
        swept = len(loop._scheduled)  # type: ignore[attr-defined]
        await asyncio.sleep(500)
        return failures, ran, swept, round(loop.time())

    failures, ran, swept, now = run_virtual(main())
    assert failures == [
        ("Exception in callback test_failing_callbacks_reach_the_exception_handler_and_cancelled_timers_never_run."
         "<locals>.main.<locals>.fail_soon()", "IndexError", "Handle"),
        ("Exception in callback test_failing_callbacks_reach_the_exception_handler_and_cancelled_timers_never_run."
         "<locals>.main.<locals>.fail_later()", "ZeroDivisionError", "TimerHandle"),
    ]
    assert ran == list(range(200, 300))
    assert swept == 100
    assert now == 502
