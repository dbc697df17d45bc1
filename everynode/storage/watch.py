"""Watch machinery shared by every backend: the bounded event history and the fan-out to watchers.

Why it looks like this:

* **One ring buffer over all resources** (``collections.deque(maxlen=history)``).  Every write gets
  the next global resourceVersion and produces exactly one event, so the rvs in the ring are
  consecutive: the position of ``since_rv`` is arithmetic, no search.  A watch from an rv older
  than the ring answers ``too old resource version: X (Y)`` with ``Y = oldest - 1``, the words and
  numbers of the apiserver's watch cache (``storage/cacher/watch_cache.go``,
  ``getAllEventsSinceLocked``).  An empty ring (fresh or reopened store) starts at
  ``current_rv + 1``, as the watch cache does after a relist.
* **No copies on fan-out.**  All watchers of a resource receive the *same* :class:`WatchEvent`
  instance, so its ``encoded`` cache is filled once by the HTTP layer however many streams carry it
  (python-stack.md, design note 2).
* **Filtered watches translate like the cacher** (``cacheWatcher.convertToWatchEvent``): a MODIFIED
  whose old state matched and new state does not becomes DELETED carrying the *previous* content
  stamped with the event's resourceVersion; new matches but old did not becomes ADDED; neither
  matches, nothing is sent.  Translated events are built once per (event, translated type) and
  shared by the watchers that need the same translation.
* **Delivery is O(watchers of that resource and namespace)**: watchers are indexed by resource
  (plus the ``"*"`` set used by the garbage collector) and then by their namespace filter, so a
  write reaches the watchers of all namespaces and those of its own namespace without a
  per-watcher compare.
* **Bounded memory per watcher.**  Each watcher has its own deque; one that falls more than
  ``max_backlog`` events behind is terminated (its iteration ends, as the cacher closes a blocked
  watcher) instead of growing without bound.  The client re-watches or relists.
* A predicate that raises terminates only its own watcher: the write path never fails because of
  a reader.
* **Waking is deferred, sliced and coalesced.**  A write does not wake its watchers' tasks
  itself: a watcher that is idle (waiting) and gets its first queued event joins the hub's wake
  queue, and one loop callback wakes at most ``WAKE_SLICE`` watchers per event-loop iteration,
  then yields so that pending requests run in between.  A woken reader takes *every* event
  queued by then (:meth:`StoreWatcher.drain`) and the HTTP layer sends them in one socket write.
  So when writes arrive faster than 1,000 streams can be written, each stream's write carries
  several events instead of the loop spending one task wake-up and one TLS record plus send
  system call per event per watcher (about 20 µs each on loopback, almost all of it the send)
  before it reads the next request.  A busy watcher (its socket is slow) is not in the queue; it
  finds its events when it waits again, so it never delays the others.  Order is kept: a queue
  per watcher, woken FIFO.
* **Timed waits without tasks** (:meth:`StoreWatcher.wait`): a watch that asks for bookmarks
  waits with a deadline through a ``call_later`` on its own future, not an ``asyncio.wait`` on a
  new task per wait.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable
from typing import Any, Final

from everynode.api.meta import field_of
from everynode.storage.base import ExpiredError, Obj, Predicate, Watch, WatchEvent

log = logging.getLogger(__name__)

ALL_RESOURCES: Final = "*"

ADDED: Final = "ADDED"
MODIFIED: Final = "MODIFIED"
DELETED: Final = "DELETED"

# Watchers woken per event-loop iteration by the hub's waker before it lets other callbacks and
# I/O run.  `everynode bench api` (1,000 watchers, 8 concurrent PUTs), 2 runs each: 10 → PUT
# p99 77–107 ms, 30 → 46–59 ms, 100 → 44 ms, 1,000 (no slicing) → 220–230 ms and a third of
# the PUT rate, since the woken streams then run back to back and carry fewer events per write.
WAKE_SLICE = 100


def with_resource_version(obj: Obj, rv: int) -> Obj:
    """A shallow copy of ``obj`` (top level and ``metadata`` only) carrying ``rv``.

    The nested content stays shared: stored objects are immutable, so sharing is safe and free."""
    out = dict(obj)
    metadata = dict(obj.get("metadata") or {})
    metadata["resourceVersion"] = str(rv)
    out["metadata"] = metadata
    return out


def _namespace_of(obj: Obj) -> str:
    return field_of(obj.get("metadata"), "namespace") or ""


class StoreWatcher(Watch):
    """One open watch: a private queue of shared events and a future to wake the reader.

    Read it one event at a time (``async for``) or in batches: ``await wait()`` then
    ``drain()``.  Both see the same queue in the same order."""

    __slots__ = ("resource", "namespace", "predicate", "_hub", "_buffer", "_waiter", "_stopped",
                 "_wake_queued", "terminated_reason", "_deadline", "_timer")

    def __init__(self, hub: WatchHub, resource: str, namespace: str | None, predicate: Predicate | None):
        self.resource = resource
        self.namespace = namespace
        self.predicate = predicate
        self._hub = hub
        self._buffer: deque[WatchEvent] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._stopped = False
        self._wake_queued = False  # in the hub's wake queue
        # Why iteration ended when the store ended it: "overflow", "predicate error", "closed".
        self.terminated_reason: str | None = None
        # The armed deadline of :meth:`wait_until` and its timer, kept across waits (see there).
        self._deadline: float | None = None
        self._timer: asyncio.TimerHandle | None = None

    @property
    def stopped(self) -> bool:
        return self._stopped

    def pending(self) -> int:
        """Events queued and not yet read (for metrics and tests)."""
        return len(self._buffer)

    def drain(self) -> list[WatchEvent]:
        """Every event queued now, oldest first, without waiting (empty when none are)."""
        buffer = self._buffer
        if not buffer:
            return []
        out = list(buffer)
        buffer.clear()
        return out

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait until an event is queued or the watch has stopped (True), or ``timeout`` seconds
        have passed (False).  Returns at once when either is already the case."""
        return await self.wait_until(None if timeout is None else asyncio.get_running_loop().time() + timeout)

    async def wait_until(self, deadline: float | None) -> bool:
        """Wait until an event is queued or the watch has stopped (True), or the loop's time
        reaches ``deadline`` (False).  Returns at once when either is already the case.

        The deadline is one timer on the watch itself, armed once per distinct deadline and
        kept across waits: the bookmark loop waits for the same deadline between every batch of
        events, and a timer made and cancelled per batch was 2–3% of a virtual rollout (the
        timer's construction, and the loop's heap of cancelled timers).  A timer left from an
        earlier deadline can only wake a waiter early, which waits again (as for any stale
        wake-up)."""
        if self._buffer or self._stopped:
            return True
        loop = asyncio.get_running_loop()
        if deadline is not None:
            if loop.time() >= deadline:
                return False
            if deadline != self._deadline:
                if self._timer is not None:
                    self._timer.cancel()
                self._deadline = deadline
                self._timer = loop.call_at(deadline, self._expire)
        while True:
            waiter = loop.create_future()
            self._waiter = waiter
            try:
                await waiter
            finally:
                self._waiter = None
            if self._buffer or self._stopped:
                return True
            # A wake-up can be stale (queued before a read emptied the queue): wait again.
            if deadline is not None and loop.time() >= deadline:
                return False

    def _expire(self) -> None:
        self._deadline = None
        self._timer = None
        self._wake()

    def __aiter__(self) -> StoreWatcher:
        return self

    async def __anext__(self) -> WatchEvent:
        while True:
            if self._buffer:
                return self._buffer.popleft()
            if self._stopped:
                raise StopAsyncIteration
            await self.wait()

    def stop(self) -> None:
        """End the iteration now (queued events are dropped) and unregister from the store."""
        if self._stopped:
            return
        self._stopped = True
        self._buffer.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._hub._unregister(self)
        self._wake()

    def _terminate(self, reason: str) -> None:
        if not self._stopped:
            self.terminated_reason = reason
            self.stop()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _push(self, event: WatchEvent, max_backlog: int) -> None:
        buffer = self._buffer
        if len(buffer) >= max_backlog:
            log.warning("watch on %s terminated: more than %d events behind", self.resource, max_backlog)
            self._terminate("overflow")
            return
        buffer.append(event)
        # Only an idle reader needs waking; a busy one finds the event when it waits again.
        if self._waiter is not None and not self._wake_queued:
            self._wake_queued = True
            self._hub._queue_wake(self)


class WatchHub:
    """The event history window plus the registry of watchers, indexed by resource."""

    def __init__(self, *, history: int, max_backlog: int) -> None:
        if history < 1:
            raise ValueError("history must be at least 1")
        if max_backlog < 1:
            raise ValueError("max_backlog must be at least 1")
        self._history: deque[WatchEvent] = deque(maxlen=history)
        self._max_backlog = max_backlog
        # resource → namespace filter (None: all namespaces) → watchers.
        self._watchers: dict[str, dict[str | None, set[StoreWatcher]]] = {}
        # rv of the last event published (or the store's rv at start when nothing was published).
        self._last_rv = 0
        # Idle watchers with new events, woken WAKE_SLICE per loop iteration (module docstring).
        self._wake_queue: deque[StoreWatcher] = deque()
        self._waker_scheduled = False

    def reset(self, rv: int) -> None:
        """Start the window after ``rv`` (a store loaded from disk has no event history)."""
        self._history.clear()
        self._last_rv = rv

    @property
    def oldest_rv(self) -> int:
        """The rv of the oldest event a watch can still receive."""
        return self._history[0].rv if self._history else self._last_rv + 1

    def watcher_count(self, resource: str | None = None) -> int:
        if resource is None:
            return sum(len(ws) for by_ns in self._watchers.values() for ws in by_ns.values())
        return sum(len(ws) for ws in self._watchers.get(resource, {}).values())

    # -- publishing -------------------------------------------------------------------------------

    def publish(self, event: WatchEvent) -> None:
        self._history.append(event)
        self._last_rv = event.rv
        specific = self._watchers.get(event.resource)
        everything = self._watchers.get(ALL_RESOURCES)
        if not specific and not everything:
            return
        namespace = _namespace_of(event.object)
        translated: dict[str, WatchEvent] = {}
        max_backlog = self._max_backlog
        for by_ns in (specific, everything):
            if not by_ns:
                continue
            # Watchers of all namespaces, then those of the event's namespace: no per-watcher compare.
            for group in (by_ns.get(None), by_ns.get(namespace)):
                if not group:
                    continue
                # A watcher may be terminated (and removed from the set) during the loop.
                for watcher in tuple(group):
                    if watcher.predicate is None:
                        watcher._push(event, max_backlog)
                        continue
                    out = self._filter(watcher, event, translated)
                    if out is not None:
                        watcher._push(out, max_backlog)

    @staticmethod
    def _filter(watcher: StoreWatcher, event: WatchEvent, translated: dict[str, WatchEvent]) -> WatchEvent | None:
        if watcher.namespace is not None and _namespace_of(event.object) != watcher.namespace:
            return None
        predicate = watcher.predicate
        if predicate is None:
            return event
        try:
            if event.type == DELETED:
                return event if predicate(event.prev if event.prev is not None else event.object) else None
            current = predicate(event.object)
            previous = event.prev is not None and predicate(event.prev)
        except Exception:  # a reader's bad predicate must not break the writer
            log.exception("watch predicate failed; terminating the watch on %s", watcher.resource)
            watcher._terminate("predicate error")
            return None
        if current and previous:
            return event
        if current:
            if event.type == ADDED:
                return event
            return _translated(event, ADDED, translated)
        if previous:
            return _translated(event, DELETED, translated)
        return None

    # -- waking -----------------------------------------------------------------------------------

    def _queue_wake(self, watcher: StoreWatcher) -> None:
        self._wake_queue.append(watcher)
        if not self._waker_scheduled:
            waiter = watcher._waiter
            assert waiter is not None
            self._waker_scheduled = True
            waiter.get_loop().call_soon(self._wake_some)

    def _wake_some(self) -> None:
        queue = self._wake_queue
        for _ in range(min(WAKE_SLICE, len(queue))):
            watcher = queue.popleft()
            watcher._wake_queued = False
            watcher._wake()
        if queue:
            asyncio.get_running_loop().call_soon(self._wake_some)
        else:
            self._waker_scheduled = False

    # -- watchers ---------------------------------------------------------------------------------

    def open(self, resource: str, *, namespace: str | None, predicate: Predicate | None,
             since_rv: int | None) -> StoreWatcher:
        watcher = StoreWatcher(self, resource, namespace, predicate)
        if since_rv is not None:
            for event in self._events_after(since_rv):
                if resource != ALL_RESOURCES and event.resource != resource:
                    continue
                out: WatchEvent | None = event
                if namespace is not None or predicate is not None:
                    out = self._filter(watcher, event, {})
                    if watcher.stopped:
                        return watcher
                if out is not None:
                    watcher._buffer.append(out)
        self._watchers.setdefault(resource, {}).setdefault(namespace, set()).add(watcher)
        return watcher

    def _events_after(self, since_rv: int) -> Iterable[WatchEvent]:
        oldest = self.oldest_rv
        if since_rv < oldest - 1:
            raise ExpiredError(since_rv, oldest - 1)
        history = self._history
        count = len(history) - max(0, since_rv + 1 - oldest)
        if count <= 0:
            return ()
        # The rvs in the ring are consecutive: the last ``count`` events are exactly those > since_rv.
        tail = []
        it = reversed(history)
        for _ in range(count):
            tail.append(next(it))
        tail.reverse()
        return tail

    def _unregister(self, watcher: StoreWatcher) -> None:
        by_ns = self._watchers.get(watcher.resource)
        if by_ns is None:
            return
        group = by_ns.get(watcher.namespace)
        if group is not None:
            group.discard(watcher)
            if not group:
                del by_ns[watcher.namespace]
                if not by_ns:
                    del self._watchers[watcher.resource]

    def close_all(self) -> None:
        for by_ns in list(self._watchers.values()):
            for group in list(by_ns.values()):
                for watcher in list(group):
                    watcher._terminate("closed")
        self._watchers.clear()


def _translated(event: WatchEvent, kind: str, cache: dict[str, Any]) -> WatchEvent:
    out = cache.get(kind)
    if out is None:
        if kind == DELETED:
            # The cacher sends the previous content with the event's resourceVersion.
            assert event.prev is not None
            obj = with_resource_version(event.prev, event.rv)
        else:
            obj = event.object
        out = WatchEvent(kind, obj, event.rv, event.resource, event.prev)
        cache[kind] = out
    return out
