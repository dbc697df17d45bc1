"""Recording core/v1 Events, fire-and-forget, with repeats folded into a count.

Upstream: ``client-go/tools/record`` (``event.go``, ``events_cache.go``).  What is kept:

* the Event's shape: ``involvedObject`` (kind, namespace, name, uid, apiVersion, resourceVersion),
  ``source.component``/``host``, ``firstTimestamp``/``lastTimestamp``, ``count``, ``type``,
  ``reason``, ``message``, ``reportingComponent``/``reportingInstance``; the name
  ``<object name>.<hex nanoseconds>``; the namespace of the object (``default`` for cluster-scoped
  objects);
* the correlator's *logger* step: an event identical to a recent one (same source, object, type,
  reason and message) is not created again; the existing Event is PATCHed (strategic merge) with
  ``count`` + 1 and a new ``lastTimestamp`` — recreated under the same name if it was deleted
  meanwhile.  Recent events live in a bounded LRU (4096 entries, ``maxLruCacheEntries``).

What is left out: the aggregator that folds *similar* messages ("(combined from similar events)")
and the per-object spam filter (token bucket): controllers here emit few distinct messages.

Recording never blocks and never raises into the controller: :meth:`EventRecorder.event` only
queues the write; a few worker tasks perform them.  Events of one correlation key always go to the
same worker, so a create and the patches that count its repeats stay in order.  When the queue is
full the event is dropped and logged (client-go drops too: events are best effort).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from dataclasses import dataclass, field
from typing import Any

from everynode.api.errors import ApiError
from everynode.api.meta import random_suffix
from everynode.clock import Clock

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
MAX_LRU_ENTRIES = 4096
DEFAULT_MAX_QUEUED = 1000

Obj = dict[str, Any]
_Key = tuple[str, ...]


@dataclass(slots=True)
class _Seen:
    name: str
    namespace: str
    count: int
    first_timestamp: str


@dataclass(slots=True)
class _Job:
    event: Obj  # the complete Event (used to create, or to recreate if a patch finds it gone)
    patch: Obj | None = None  # set when this is a repeat


@dataclass(slots=True)
class RecorderStats:
    created: int = 0
    patched: int = 0
    dropped: int = 0
    failed: int = 0
    by_reason: collections.Counter[str] = field(default_factory=collections.Counter)


def object_reference(obj: Obj) -> Obj:
    """``ref.GetReference``: an ObjectReference for an object (or an ObjectReference as given)."""
    md = obj.get("metadata")
    if md is None:  # already a reference
        return {k: v for k, v in obj.items() if k in (
            "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath") and v}
    ref: Obj = {}
    for key, value in (("kind", obj.get("kind")), ("namespace", md.get("namespace")), ("name", md.get("name")),
                       ("uid", md.get("uid")), ("apiVersion", obj.get("apiVersion")),
                       ("resourceVersion", md.get("resourceVersion"))):
        if value:
            ref[key] = value
    return ref


class EventRecorder:
    def __init__(self, client: Any, *, component: str, host: str | None = None, clock: Clock | None = None,
                 workers: int = 4, max_queued: int = DEFAULT_MAX_QUEUED, cache_size: int = MAX_LRU_ENTRIES) -> None:
        self.client = client
        self.component = component
        self.host = host
        self.clock = clock if clock is not None else Clock()
        self.cache_size = cache_size
        self.stats = RecorderStats()
        self._workers = max(1, workers)
        self._per_worker = max(1, max_queued // self._workers)
        self._queues: list[asyncio.Queue[_Job]] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._seen: collections.OrderedDict[_Key, _Seen] = collections.OrderedDict()
        self._last_ns = 0
        self._closed = False

    # -- public API ------------------------------------------------------------------------------

    def event(self, obj: Obj, type: str, reason: str, message: str) -> None:
        """Record an Event about ``obj`` (fire-and-forget)."""
        if self._closed:
            return
        if type not in (NORMAL, WARNING):
            log.error("unsupported event type %r (reason %s)", type, reason)
            return
        try:
            self._ensure_workers()
        except RuntimeError:
            log.warning("no running event loop; dropping event %s %s", reason, message)
            self.stats.dropped += 1
            return
        ref = object_reference(obj)
        key: _Key = (self.component, self.host or "", ref.get("kind", ""), ref.get("namespace", ""),
                     ref.get("name", ""), ref.get("fieldPath", ""), ref.get("uid", ""), ref.get("apiVersion", ""),
                     type, reason, message)
        now = self.clock.rfc3339()
        seen = self._seen.get(key)
        if seen is not None:
            self._seen.move_to_end(key)
            seen.count += 1
            event = self._make_event(ref, type, reason, message, name=seen.name, namespace=seen.namespace,
                                     first=seen.first_timestamp, last=now, count=seen.count)
            job = _Job(event, {"count": seen.count, "lastTimestamp": now, "message": message})
        else:
            namespace = ref.get("namespace") or "default"
            name = f"{ref.get('name', '')}.{self._suffix()}"
            event = self._make_event(ref, type, reason, message, name=name, namespace=namespace,
                                     first=now, last=now, count=1)
            self._seen[key] = _Seen(name, namespace, 1, now)
            if len(self._seen) > self.cache_size:
                self._seen.popitem(last=False)
            job = _Job(event)
        queue = self._queues[hash(key) % self._workers]
        try:
            queue.put_nowait(job)
        except asyncio.QueueFull:
            self.stats.dropped += 1
            if self.stats.dropped == 1 or self.stats.dropped % 1000 == 0:  # a burst must not flood the log
                log.warning("event queue full; dropped %d event(s) so far, latest %s/%s %s: %s",
                            self.stats.dropped, ref.get("namespace", ""), ref.get("name", ""), reason, message)

    def eventf(self, obj: Obj, type: str, reason: str, fmt: str, *args: Any) -> None:
        self.event(obj, type, reason, fmt % args if args else fmt)

    async def flush(self) -> None:
        """Wait until every queued event has been written (or has failed)."""
        for q in self._queues:
            await q.join()

    async def close(self, *, flush: bool = True) -> None:
        if flush and not self._closed:
            await self.flush()
        self._closed = True
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            try:
                await t
            except asyncio.CancelledError:
                pass
        self._tasks.clear()

    # -- internals -------------------------------------------------------------------------------

    def _suffix(self) -> str:
        # Nanoseconds in hex as upstream; strictly increasing so that events recorded at the same
        # (virtual) instant still get distinct names.
        ns = max(int(self.clock.now() * 1e9), self._last_ns + 1)
        self._last_ns = ns
        return f"{ns:x}"

    def _make_event(self, ref: Obj, type: str, reason: str, message: str, *, name: str, namespace: str,
                    first: str, last: str, count: int) -> Obj:
        source: Obj = {"component": self.component}
        if self.host:
            source["host"] = self.host
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "source": source,
            "firstTimestamp": first,
            "lastTimestamp": last,
            "count": count,
            "type": type,
            "reportingComponent": self.component,
            "reportingInstance": self.host or "",
        }

    def _ensure_workers(self) -> None:
        if self._tasks:
            return
        loop = asyncio.get_running_loop()
        self._queues = [asyncio.Queue(self._per_worker) for _ in range(self._workers)]
        self._tasks = [loop.create_task(self._worker(q), name=f"events:{self.component}:{i}")
                       for i, q in enumerate(self._queues)]

    async def _worker(self, queue: asyncio.Queue[_Job]) -> None:
        while True:
            job = await queue.get()
            try:
                await self._write(job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # never into the controller
                self.stats.failed += 1
                log.warning("unable to write event %s/%s (%s): %r", job.event["metadata"]["namespace"],
                            job.event["metadata"]["name"], job.event["reason"], exc)
            finally:
                queue.task_done()

    async def _write(self, job: _Job) -> None:
        md = job.event["metadata"]
        if job.patch is not None:
            try:
                await self.client.patch("events", md["name"], job.patch, namespace=md["namespace"],
                                        patch_type="strategic")
                self.stats.patched += 1
                return
            except ApiError as exc:
                if exc.code != 404:
                    raise
            # Deleted (or never created) meanwhile: create it with the aggregated count.
        event = job.event
        for attempt in range(3):
            try:
                await self.client.create("events", event, namespace=md["namespace"])
                break
            except ApiError as exc:
                if exc.reason != "AlreadyExists" or attempt == 2:
                    raise
                # Another component named an event about the same object at the same instant
                # (likely under virtual time, where much happens at one instant): take a fresh
                # name rather than lose the event.
                fresh = f"{event['involvedObject'].get('name', '')}.{self._suffix()}{random_suffix(3)}"
                event = {**event, "metadata": {**event["metadata"], "name": fresh}}
        self.stats.created += 1
        self.stats.by_reason[job.event["reason"]] += 1
