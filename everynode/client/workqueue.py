"""client-go's rate-limited, de-duplicating work queue, on one asyncio loop.

Upstream: ``staging/src/k8s.io/client-go/util/workqueue`` (``queue.go``, ``delaying_queue.go``,
``rate_limiting_queue.go``, ``default_rate_limiters.go``).  The three guarantees controllers rely
on are kept exactly:

* a key is queued at most once (duplicates collapse while it waits);
* a key is never handed to two workers at once: adding a key that is being processed only marks
  it *dirty*, and ``done()`` puts it back in the queue;
* after ``shutdown()`` no key is accepted; keys still queued are handed out, then ``get()``
  raises :class:`QueueShutDown`.

Design choices: every timer is ``loop.call_later`` and every clock reading is ``loop.time()``, so
the queue runs unchanged on a virtual-time loop (no threads, no ``time.sleep``).  Delayed adds keep
one timer per key (a later ``add_after`` for a key already waiting keeps the earlier deadline, like
upstream's waiting heap), which is O(1) per call instead of a heap plus a polling goroutine.
Metrics are plain counters on :class:`QueueMetrics` plus optional callbacks, so a Prometheus layer
can read or hook them without this module depending on it.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "BucketRateLimiter",
    "ExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "QueueMetrics",
    "QueueShutDown",
    "RateLimiter",
    "WorkQueue",
    "default_controller_rate_limiter",
    "fast_rate_limiter",
]


class QueueShutDown(Exception):
    """Raised by :meth:`WorkQueue.get` once the queue is shut down and empty."""


def _loop_time() -> float:
    return asyncio.get_running_loop().time()


# --------------------------------------------------------------------------------------------------
# Rate limiters (default_rate_limiters.go)


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """Seconds the item must wait before it is queued again (records one more failure)."""

    def forget(self, item: Hashable) -> None:
        """Stop tracking the item (it succeeded)."""

    def num_requeues(self, item: Hashable) -> int: ...


class ExponentialFailureRateLimiter:
    """Per-item exponential backoff: ``base * 2**failures``, capped at ``max_delay``
    (``ItemExponentialFailureRateLimiter``; controllers use 5 ms → 1000 s)."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        if exp > 62:  # 2**exp would overflow a Go int64 upstream; the cap applies long before
            return self.max_delay
        return min(self.base_delay * (2**exp), self.max_delay)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """An overall token bucket (``BucketRateLimiter`` over ``rate.Limiter``): ``qps`` tokens per
    second, at most ``burst`` banked.  Each ``when`` reserves one token and returns how long the
    reservation has to wait; it never tracks items."""

    def __init__(self, qps: float = 10.0, burst: int = 100, *, now: Callable[[], float] = _loop_time) -> None:
        if qps <= 0:
            raise ValueError("qps must be positive")
        self.qps = qps
        self.burst = burst
        self._now = now
        self._tokens = float(burst)
        self._last: float | None = None

    def when(self, item: Hashable) -> float:
        now = self._now()
        if self._last is not None:
            elapsed = max(0.0, now - self._last)
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
        self._last = now
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.qps

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest delay of several limiters (``MaxOfRateLimiter``)."""

    def __init__(self, *limiters: RateLimiter) -> None:
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max((lim.when(item) for lim in self.limiters), default=0.0)

    def forget(self, item: Hashable) -> None:
        for lim in self.limiters:
            lim.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max((lim.num_requeues(item) for lim in self.limiters), default=0)


def default_controller_rate_limiter() -> MaxOfRateLimiter:
    """``workqueue.DefaultControllerRateLimiter()``: per item 5 ms → 1000 s, overall 10 qps burst 100."""
    return MaxOfRateLimiter(ExponentialFailureRateLimiter(0.005, 1000.0), BucketRateLimiter(10.0, 100))


def fast_rate_limiter(*, base_delay: float = 0.001, max_delay: float = 1.0) -> ExponentialFailureRateLimiter:
    """For the embedded cluster and tests: per-item backoff only, capped low, no global bucket."""
    return ExponentialFailureRateLimiter(base_delay, max_delay)


# --------------------------------------------------------------------------------------------------
# Metrics (workqueue/metrics.go: depth, adds, queue latency, work duration, retries, unfinished work)


@dataclass(slots=True)
class QueueMetrics:
    """Plain counters; callbacks (if set) are called synchronously and must be cheap."""

    adds: int = 0
    retries: int = 0
    gets: int = 0
    latency_sum: float = 0.0  # seconds from add to get, summed
    work_duration_sum: float = 0.0  # seconds from get to done, summed
    work_duration_count: int = 0
    on_add: Callable[[], None] | None = None
    on_latency: Callable[[float], None] | None = None
    on_work_duration: Callable[[float], None] | None = None
    on_retry: Callable[[], None] | None = None


@dataclass(slots=True)
class _Waiting:
    ready_at: float
    handle: asyncio.TimerHandle


@dataclass(slots=True)
class _Stats:
    queued_at: dict[Hashable, float] = field(default_factory=dict)
    started_at: dict[Hashable, float] = field(default_factory=dict)


class WorkQueue:
    """``workqueue.NewRateLimitingQueueWithConfig``: see the module docstring for the semantics.

    ``rate_limiter`` defaults to :func:`default_controller_rate_limiter`.  Construct the queue
    inside the loop that uses it (or pass ``loop``); ``add_after`` needs that loop for its timers.
    """

    def __init__(self, name: str = "", *, rate_limiter: RateLimiter | None = None,
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.name = name
        self.rate_limiter: RateLimiter = rate_limiter if rate_limiter is not None else default_controller_rate_limiter()
        self.metrics = QueueMetrics()
        self._loop = loop
        self._queue: collections.deque[Hashable] = collections.deque()
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._waiting: dict[Hashable, _Waiting] = {}
        self._getters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._shutting_down = False
        self._stats = _Stats()

    # -- loop access ----------------------------------------------------------------------------

    def _get_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def _now(self) -> float:
        try:
            return self._get_loop().time()
        except RuntimeError:  # no loop yet (adds before the loop runs): latency starts at 0
            return 0.0

    # -- the basic queue (queue.go) ---------------------------------------------------------------

    def add(self, key: Hashable) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self.metrics.adds += 1
        if self.metrics.on_add is not None:
            self.metrics.on_add()
        self._dirty.add(key)
        if key in self._processing:
            return
        self._stats.queued_at[key] = self._now()
        self._queue.append(key)
        self._wake_one()

    def __len__(self) -> int:
        return len(self._queue)

    def __bool__(self) -> bool:  # a queue object is always "something", even when empty
        return True

    def len(self) -> int:
        """Depth: keys waiting to be handed out (not counting delayed or in-process ones)."""
        return len(self._queue)

    @property
    def depth(self) -> int:
        return len(self._queue)

    @property
    def processing(self) -> int:
        return len(self._processing)

    @property
    def waiting(self) -> int:
        """Keys scheduled by ``add_after`` / ``add_rate_limited`` and not yet due."""
        return len(self._waiting)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    async def get(self) -> Any:
        """The next key; it is *processing* until :meth:`done`.  Raises :class:`QueueShutDown`
        once the queue is shut down and every queued key has been handed out."""
        while not self._queue:
            if self._shutting_down:
                raise QueueShutDown(self.name)
            fut: asyncio.Future[None] = self._get_loop().create_future()
            self._getters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self._wake_one()  # we were woken but will not take the key: pass it on
                else:
                    try:
                        self._getters.remove(fut)
                    except ValueError:
                        pass
                raise
        key = self._queue.popleft()
        self._processing.add(key)
        self._dirty.discard(key)
        now = self._now()
        queued = self._stats.queued_at.pop(key, None)
        self.metrics.gets += 1
        if queued is not None:
            latency = max(0.0, now - queued)
            self.metrics.latency_sum += latency
            if self.metrics.on_latency is not None:
                self.metrics.on_latency(latency)
        self._stats.started_at[key] = now
        return key

    def done(self, key: Hashable) -> None:
        """The worker finished ``key``; if it was added meanwhile it is queued again."""
        self._processing.discard(key)
        started = self._stats.started_at.pop(key, None)
        if started is not None:
            duration = max(0.0, self._now() - started)
            self.metrics.work_duration_sum += duration
            self.metrics.work_duration_count += 1
            if self.metrics.on_work_duration is not None:
                self.metrics.on_work_duration(duration)
        if key in self._dirty:
            self._stats.queued_at[key] = self._now()
            self._queue.append(key)
            self._wake_one()
        elif not self._processing and self._drain_waiters:
            for fut in self._drain_waiters:
                if not fut.done():
                    fut.set_result(None)
            self._drain_waiters.clear()

    def shutdown(self) -> None:
        """Stop accepting keys and cancel pending delayed adds; idle getters raise QueueShutDown."""
        self._shutting_down = True
        for waiting in self._waiting.values():
            waiting.handle.cancel()
        self._waiting.clear()
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)

    async def shutdown_with_drain(self) -> None:
        """``ShutDownWithDrain``: shut down, then wait until every key being processed is done."""
        self.shutdown()
        if self._processing:
            fut: asyncio.Future[None] = self._get_loop().create_future()
            self._drain_waiters.append(fut)
            await fut

    def _wake_one(self) -> None:
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    def __aiter__(self) -> WorkQueue:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.get()
        except QueueShutDown:
            raise StopAsyncIteration from None

    # -- delaying queue (delaying_queue.go) ------------------------------------------------------

    def add_after(self, key: Hashable, delay: float) -> None:
        """Add ``key`` once ``delay`` seconds have passed (at once when ``delay <= 0``).  A key
        already waiting keeps the earlier of its two deadlines."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = self._get_loop()
        ready_at = loop.time() + delay
        existing = self._waiting.get(key)
        if existing is not None:
            if existing.ready_at <= ready_at:
                return
            existing.handle.cancel()
        handle = loop.call_at(ready_at, self._fire, key)
        self._waiting[key] = _Waiting(ready_at, handle)

    def _fire(self, key: Hashable) -> None:
        self._waiting.pop(key, None)
        self.add(key)

    # -- rate limiting queue (rate_limiting_queue.go) --------------------------------------------

    def add_rate_limited(self, key: Hashable) -> None:
        """Add ``key`` after the rate limiter's delay (one more failure recorded for it)."""
        if self._shutting_down:
            return
        self.metrics.retries += 1
        if self.metrics.on_retry is not None:
            self.metrics.on_retry()
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: Hashable) -> None:
        """The key succeeded: reset its failure count (does not remove it from the queue)."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: Hashable) -> int:
        return self.rate_limiter.num_requeues(key)

    # -- introspection ---------------------------------------------------------------------------

    def unfinished_work_seconds(self) -> float:
        """Sum of how long every key currently processing has been at it (upstream metric)."""
        now = self._now()
        return sum(max(0.0, now - t) for t in self._stats.started_at.values())

    def __repr__(self) -> str:
        return (f"WorkQueue({self.name!r}, depth={len(self._queue)}, processing={len(self._processing)}, "
                f"waiting={len(self._waiting)}, shutting_down={self._shutting_down})")


async def run_worker(queue: WorkQueue, sync: Callable[[Any], Awaitable[float | None]], *,
                     max_retries: int | None = None,
                     on_error: Callable[[Any, Exception, bool], None] | None = None) -> None:
    """One worker of a controller: client-go's ``processNextWorkItem`` loop until shutdown.

    ``sync(key)`` succeeding forgets the key's failure history; returning a number asks for the
    key again after that many seconds.  A failure re-queues the key with rate limiting (at most
    ``max_retries`` times when given, then the key is dropped); ``on_error(key, exc, retried)``
    is told either way.  The key is always marked done, so it is never processed twice at once.
    """
    while True:
        try:
            key = await queue.get()
        except QueueShutDown:
            return
        try:
            again = await sync(key)
            queue.forget(key)
            if again is not None:
                queue.add_after(key, again)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure is retried (or dropped) by design
            retry = max_retries is None or queue.num_requeues(key) < max_retries
            if retry:
                queue.add_rate_limited(key)
            else:
                queue.forget(key)
            if on_error is not None:
                on_error(key, exc, retry)
        finally:
            queue.done(key)

