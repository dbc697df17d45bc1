"""The scheduling queue: active pods by priority, unschedulable pods waiting for a cluster change.

Upstream ``pkg/scheduler/backend/queue/scheduling_queue.go`` in miniature:
* activeQ — a heap ordered by priority (higher first), then by when the pod was queued
  (PrioritySort);
* unschedulable pods — parked until an event that may help them: a Node added or changed in a
  way that matters (labels, taints, cordon, allocatable), or a pod leaving a node.  Then they go
  back to activeQ once their back-off has passed (1 s doubling to 10 s per failed attempt,
  ``podInitialBackoffDuration``/``podMaxBackoffDuration``).  Pods parked longer than 5 min are
  retried anyway (``podMaxInUnschedulablePodsDuration``).
* Instead of upstream's queueing hints per plugin, parked pods are indexed by the node they are
  pinned to (DaemonSet pods): a change on node X wakes only the pods pinned to X plus the
  unpinned ones — O(affected), never O(all parked pods) per node heartbeat.  Pods with pod
  affinity or topology spread constraints also wake when a pod is assigned to a node (it may
  be the pod they need next to them, or raise a domain's minimum): upstream's AssignedPodAdd
  event for InterPodAffinity and PodTopologySpread.

All timers are ``loop.call_later`` so the queue runs on virtual time.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from typing import Final

from everynode.client.wakeup import Wakeup

INITIAL_BACKOFF: Final = 1.0
MAX_BACKOFF: Final = 10.0
MAX_UNSCHEDULABLE_SECONDS: Final = 300.0
FLUSH_INTERVAL: Final = 30.0


class SchedulingQueue:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, str]] = []
        self._seq = itertools.count()
        self._active: set[str] = set()
        self._priority: dict[str, int] = {}
        self._attempts: dict[str, int] = {}
        self._last_attempt: dict[str, float] = {}
        # parked: key -> (pinned node names or None, parked at)
        self._parked: dict[str, tuple[frozenset[str] | None, float]] = {}
        self._parked_by_node: dict[str, set[str]] = {}
        self._parked_unpinned: set[str] = set()
        self._parked_for_pods: set[str] = set()  # parked pods that a pod assignment may help
        self._backoff_timers: dict[str, asyncio.TimerHandle] = {}
        self._wakeup = Wakeup()
        self._closed = False
        self._flush_timer: asyncio.TimerHandle | None = None

    def __len__(self) -> int:
        return len(self._active) + len(self._parked) + len(self._backoff_timers)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._flush_timer = loop.call_later(FLUSH_INTERVAL, self._flush)

    def close(self) -> None:
        self._closed = True
        if self._flush_timer is not None:
            self._flush_timer.cancel()
        for t in self._backoff_timers.values():
            t.cancel()
        self._backoff_timers.clear()
        self._wakeup.set()

    # -- adding ---------------------------------------------------------------------------------

    def add(self, key: str, priority: int) -> None:
        """A new (or changed) pending pod: straight to activeQ."""
        self._unpark(key)
        self._cancel_backoff(key)
        self._push(key, priority)

    def _push(self, key: str, priority: int) -> None:
        self._priority[key] = priority
        if key in self._active:
            return
        self._active.add(key)
        heapq.heappush(self._heap, (-priority, next(self._seq), key))
        self._wakeup.set()

    def park(self, key: str, priority: int, pinned: frozenset[str] | None, *,
             on_pod_assigned: bool = False) -> None:
        """The pod failed to schedule: wait for a helpful event (``on_pod_assigned``: a pod
        being assigned to any node is one)."""
        loop = asyncio.get_running_loop()
        self._priority[key] = priority
        self._attempts[key] = self._attempts.get(key, 0) + 1
        self._last_attempt[key] = loop.time()
        self._active.discard(key)
        self._cancel_backoff(key)
        self._unpark(key)
        self._parked[key] = (pinned, loop.time())
        if pinned is None:
            self._parked_unpinned.add(key)
        else:
            for n in pinned:
                self._parked_by_node.setdefault(n, set()).add(key)
        if on_pod_assigned:
            self._parked_for_pods.add(key)

    def requeue_after_error(self, key: str, priority: int) -> None:
        """An error (not a fit failure), e.g. the binding failed: retry after back-off."""
        self._attempts[key] = self._attempts.get(key, 0) + 1
        self._last_attempt[key] = asyncio.get_running_loop().time()
        self._active.discard(key)
        self._priority[key] = priority
        self._backoff_then_activate(key)

    def remove(self, key: str) -> None:
        """The pod is gone or no longer pending."""
        self._active.discard(key)  # its heap entry is skipped lazily
        self._unpark(key)
        self._cancel_backoff(key)
        self._priority.pop(key, None)
        self._attempts.pop(key, None)
        self._last_attempt.pop(key, None)

    def done(self, key: str) -> None:
        """Scheduled successfully: forget its back-off history."""
        self._attempts.pop(key, None)
        self._last_attempt.pop(key, None)

    # -- waking parked pods ---------------------------------------------------------------------

    def node_changed(self, node_name: str) -> int:
        """Wake the pods that a change on this node may help.  Returns how many."""
        keys = list(self._parked_unpinned)
        pinned = self._parked_by_node.get(node_name)
        if pinned:
            keys.extend(pinned)
        for key in keys:
            self._unpark(key)
            self._backoff_then_activate(key)
        return len(keys)

    def pod_assigned(self) -> int:
        """A pod was bound to a node: wake the parked pods that wait for that.  Returns how many."""
        if not self._parked_for_pods:
            return 0
        keys = list(self._parked_for_pods)
        for key in keys:
            self._unpark(key)
            self._backoff_then_activate(key)
        return len(keys)

    def wake_all(self) -> None:
        for key in list(self._parked):
            self._unpark(key)
            self._backoff_then_activate(key)

    def _flush(self) -> None:
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        stale = [k for k, (_, at) in self._parked.items() if now - at >= MAX_UNSCHEDULABLE_SECONDS]
        for key in stale:
            self._unpark(key)
            self._push(key, self._priority.get(key, 0))
        self._flush_timer = loop.call_later(FLUSH_INTERVAL, self._flush)

    def backoff_seconds(self, key: str) -> float:
        attempts = self._attempts.get(key, 0)
        if attempts <= 0:
            return 0.0
        return min(INITIAL_BACKOFF * (2 ** min(attempts - 1, 16)), MAX_BACKOFF)

    def _backoff_then_activate(self, key: str) -> None:
        if key in self._active or key in self._backoff_timers:
            return
        loop = asyncio.get_running_loop()
        ready_at = self._last_attempt.get(key, 0.0) + self.backoff_seconds(key)
        delay = ready_at - loop.time()
        if delay <= 0:
            self._push(key, self._priority.get(key, 0))
            return
        self._backoff_timers[key] = loop.call_later(delay, self._backoff_done, key)

    def _backoff_done(self, key: str) -> None:
        self._backoff_timers.pop(key, None)
        if not self._closed and key in self._priority:
            self._push(key, self._priority[key])

    def _cancel_backoff(self, key: str) -> None:
        t = self._backoff_timers.pop(key, None)
        if t is not None:
            t.cancel()

    def _unpark(self, key: str) -> None:
        entry = self._parked.pop(key, None)
        if entry is None:
            return
        self._parked_for_pods.discard(key)
        pinned = entry[0]
        if pinned is None:
            self._parked_unpinned.discard(key)
        else:
            for n in pinned:
                s = self._parked_by_node.get(n)
                if s is not None:
                    s.discard(key)
                    if not s:
                        del self._parked_by_node[n]

    def pop_ready_count(self) -> int:
        """Pods ready for an attempt now (not parked, not backing off)."""
        return len(self._active)

    def is_parked(self, key: str) -> bool:
        return key in self._parked

    # -- taking ---------------------------------------------------------------------------------

    def pop_nowait(self) -> str | None:
        heap = self._heap
        while heap:
            _, _, key = heapq.heappop(heap)
            if key in self._active:
                self._active.discard(key)
                return key
        return None

    async def pop(self) -> str | None:
        """The next pod to schedule; None once closed."""
        while not self._closed:
            key = self.pop_nowait()
            if key is not None:
                return key
            self._wakeup.clear()
            await self._wakeup.wait()
        return None
