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
* **Delivery is O(watchers of that resource)**: watchers are indexed by resource (plus the ``"*"``
  set used by the garbage collector).  A namespace filter is a string compare.
* **Bounded memory per watcher.**  Each watcher has its own deque; one that falls more than
  ``max_backlog`` events behind is terminated (its iteration ends, as the cacher closes a blocked
  watcher) instead of growing without bound.  The client re-watches or relists.
* A predicate that raises terminates only its own watcher: the write path never fails because of
  a reader.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable
from typing import Any

from everynode.storage.base import ExpiredError, Obj, Predicate, Watch, WatchEvent

log = logging.getLogger(__name__)

ALL_RESOURCES = "*"

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


def with_resource_version(obj: Obj, rv: int) -> Obj:
    """A shallow copy of ``obj`` (top level and ``metadata`` only) carrying ``rv``.

    The nested content stays shared: stored objects are immutable, so sharing is safe and free."""
    out = dict(obj)
    metadata = dict(obj.get("metadata") or {})
    metadata["resourceVersion"] = str(rv)
    out["metadata"] = metadata
    return out


def _namespace_of(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("namespace") or ""


class StoreWatcher(Watch):
    """One open watch: a private queue of shared events and a future to wake the reader."""

    __slots__ = ("resource", "namespace", "predicate", "_hub", "_buffer", "_waiter", "_stopped",
                 "terminated_reason")

    def __init__(self, hub: WatchHub, resource: str, namespace: str | None, predicate: Predicate | None):
        self.resource = resource
        self.namespace = namespace
        self.predicate = predicate
        self._hub = hub
        self._buffer: deque[WatchEvent] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._stopped = False
        # Why iteration ended when the store ended it: "overflow", "predicate error", "closed".
        self.terminated_reason: str | None = None

    @property
    def stopped(self) -> bool:
        return self._stopped

    def pending(self) -> int:
        """Events queued and not yet read (for metrics and tests)."""
        return len(self._buffer)

    def __aiter__(self) -> StoreWatcher:
        return self

    async def __anext__(self) -> WatchEvent:
        while True:
            if self._buffer:
                return self._buffer.popleft()
            if self._stopped:
                raise StopAsyncIteration
            waiter = asyncio.get_running_loop().create_future()
            self._waiter = waiter
            try:
                await waiter
            finally:
                self._waiter = None

    def stop(self) -> None:
        """End the iteration now (queued events are dropped) and unregister from the store."""
        if self._stopped:
            return
        self._stopped = True
        self._buffer.clear()
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
        if len(buffer) == 1:
            self._wake()


class WatchHub:
    """The event history window plus the registry of watchers, indexed by resource."""

    def __init__(self, *, history: int, max_backlog: int) -> None:
        if history < 1:
            raise ValueError("history must be at least 1")
        if max_backlog < 1:
            raise ValueError("max_backlog must be at least 1")
        self._history: deque[WatchEvent] = deque(maxlen=history)
        self._max_backlog = max_backlog
        self._watchers: dict[str, set[StoreWatcher]] = {}
        # rv of the last event published (or the store's rv at start when nothing was published).
        self._last_rv = 0

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
            return sum(len(ws) for ws in self._watchers.values())
        return len(self._watchers.get(resource, ()))

    # -- publishing -------------------------------------------------------------------------------

    def publish(self, event: WatchEvent) -> None:
        self._history.append(event)
        self._last_rv = event.rv
        specific = self._watchers.get(event.resource)
        everything = self._watchers.get(ALL_RESOURCES)
        if not specific and not everything:
            return
        translated: dict[str, WatchEvent] = {}
        max_backlog = self._max_backlog
        for group in (specific, everything):
            if not group:
                continue
            # A watcher may be terminated (and removed from the set) during the loop.
            for watcher in tuple(group):
                if watcher.predicate is None and watcher.namespace is None:
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

    # -- watchers ---------------------------------------------------------------------------------

    def open(self, resource: str, *, namespace: str | None, predicate: Predicate | None,
             since_rv: int | None) -> StoreWatcher:
        watcher = StoreWatcher(self, resource, namespace, predicate)
        if since_rv is not None:
            for event in self._events_after(since_rv):
                if resource != ALL_RESOURCES and event.resource != resource:
                    continue
                out = event
                if namespace is not None or predicate is not None:
                    out = self._filter(watcher, event, {})
                    if watcher.stopped:
                        return watcher
                if out is not None:
                    watcher._buffer.append(out)
        self._watchers.setdefault(resource, set()).add(watcher)
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
        group = self._watchers.get(watcher.resource)
        if group is not None:
            group.discard(watcher)
            if not group:
                del self._watchers[watcher.resource]

    def close_all(self) -> None:
        for group in list(self._watchers.values()):
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
