"""Recording core/v1 Events, fire-and-forget, passed through client-go's event correlator.

Why a correlator: a controller reports the same kind of thing about one object many times.  The
DaemonSet controller says "Created pod: <name>" (reason ``SuccessfulCreate``) about one DaemonSet
once per node; written naively that is 5,000 Event objects for a 5,000-node DaemonSet.  Upstream
writes about 25 for it, and so do we, by reproducing ``client-go/tools/record/events_cache.go``
(``EventCorrelator.EventCorrelate``) step by step, in the same order:

1. *aggregate* (:class:`EventAggregator`): events that differ only in their message are grouped
   by source, involved object (no fieldPath), type, reason and reporting controller/instance.  Each
   group remembers the distinct messages seen and when it was last used; a group untouched for
   more than 600 s starts afresh.  When a group reaches 10 distinct messages, the event is
   replaced by an aggregate event — message ``(combined from similar events): <message>``, a fresh
   name, count 1, no reporting fields — whose correlation key is the group itself, so later similar
   events become count patches of that aggregate (carrying the latest message).  One remembered
   message is dropped again so the group never grows past 10.
2. *observe* (:class:`EventLogger`): an event whose correlation key was seen before is not created
   again; the existing Event is PATCHed (strategic merge) with ``count`` + 1, ``lastTimestamp``
   and ``message`` — recreated under the same name if it was deleted meanwhile.
3. *filter* (:class:`SpamFilter`): a token bucket per source + involved object (kind, namespace,
   name, uid, apiVersion — not type or reason: client-go's default ``getSpamKey``), 25 tokens,
   refilled at one per 300 s.  An event that finds no token is not written at all.  It runs last,
   so a skipped event has still been counted by steps 1 and 2 (the next write that gets through
   carries the full count, as upstream).

The small records here (a group, an observation, a token bucket, a verdict) are plain classes
rather than dataclasses: compiled by mypyc, their constructors are native, where a dataclass's
generated ``__init__`` runs interpreted — several per event, and a rollout records a few per pod.

Every cache is an LRU of 4096 entries (``maxLruCacheEntries``); time is the recorder's injected
clock, read once per event.  The trade-off is upstream's: after a burst an object's later events
are silently lost for minutes, and from the tenth different message on, one "combined" Event
shows only the latest — bounded API and storage load at the cost of detail, which is what a cluster
with thousands of nodes needs.

Recording never blocks and never raises into the controller: :meth:`EventRecorder.event`
correlates at once and only queues the write; a few worker tasks perform them.  All events about
one object go to the same worker, so a create and the patches that count its repeats stay in
order.  When that worker's queue is full the event is dropped before it reaches the correlator
(client-go's broadcaster drops the same way: events are best effort).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar

from everynode.api.errors import ApiError
from everynode.api.meta import random_suffix
from everynode.clock import Clock, format_rfc3339
from everynode.memo import remember

log = logging.getLogger(__name__)

NORMAL: Final = "Normal"
WARNING: Final = "Warning"
MAX_LRU_ENTRIES: Final = 4096  # maxLruCacheEntries
DEFAULT_MAX_QUEUED: Final = 1000
AGGREGATE_MAX_EVENTS: Final = 10  # defaultAggregateMaxEvents
AGGREGATE_INTERVAL_SECONDS: Final = 600.0  # defaultAggregateIntervalInSeconds
SPAM_BURST: Final = 25  # defaultSpamBurst
# defaultSpamQPS is the float32 1/300; kept at float32 precision so that the refill arithmetic
# (300 s → slightly more than one token) matches client-go's.
SPAM_QPS: Final[float] = struct.unpack("f", struct.pack("f", 1.0 / 300.0))[0]
AGGREGATE_MESSAGE_PREFIX: Final = "(combined from similar events): "
# A full queue is logged on the first drop, then at most once per this many seconds (with the
# count so far): 65,000 nodes registering at once would otherwise print a line per thousand.
DROP_LOG_INTERVAL: Final = 30.0
# Involved objects and sources remembered per recorder (emptied when full: the recent ones are
# what the next events repeat).
_PARTS_MAX: Final = 16_384

Obj = dict[str, Any]
Key = tuple[str, ...]
K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """A bounded map that forgets its least recently used entry (groupcache ``lru.Cache``)."""

    __slots__ = ("_entries", "size")

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._entries: collections.OrderedDict[K, V] = collections.OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def peek(self, key: K) -> V | None:
        """The value of ``key``, leaving the order of use as it is."""
        return self._entries.get(key)

    def add(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


# -- keys (client-go: getEventKey, EventAggregatorByReasonFunc, getSpamKey) ---------------------------
# Tuples rather than upstream's separator-less string joins: the same fields, without accidental
# collisions between different field splits.


def event_key(event: Obj) -> Key:
    """The logger's key for an ordinary event: everything but timestamps and count."""
    source = event.get("source") or {}
    return _event_key(source.get("component", ""), source.get("host", ""), event.get("involvedObject") or {},
                      event.get("type", ""), event.get("reason", ""), event.get("message", ""))


Parts = tuple[Any, Any, Any, Any, Any]  # (Any: mypyc checks nothing of what a caller gave)
"""An involved object's kind, namespace, name, uid and apiVersion ("" for an empty one): what the
three keys read of its ObjectReference besides ``fieldPath``."""


def _event_key(component: str, host: str, ref: Obj, type: str, reason: str, message: str) -> Key:
    return _parts_event_key(component, host, reference_parts(ref), ref.get("fieldPath", ""), type, reason, message)


def _parts_event_key(component: str, host: str, parts: Parts, field_path: str, type: str, reason: str,
                     message: str) -> Key:
    kind, namespace, name, uid, api_version = parts
    return ("event", component, host, kind, namespace, name, field_path, uid, api_version, type, reason, message)


def reference_parts(ref: Obj) -> Parts:
    """The parts of an ObjectReference (its fields as the keys read them)."""
    return (ref.get("kind", ""), ref.get("namespace", ""), ref.get("name", ""), ref.get("uid", ""),
            ref.get("apiVersion", ""))


def object_parts(obj: Obj, md: dict[str, Any]) -> Parts:
    """``reference_parts(object_reference(obj))`` of an object with metadata ``md``, without the
    reference (which leaves out empty fields: the keys read them as "")."""
    return (obj.get("kind") or "", md.get("namespace") or "", md.get("name") or "", md.get("uid") or "",
            obj.get("apiVersion") or "")


def aggregate_keys(event: Obj) -> tuple[Key, str]:
    """(group key, key within the group): events that differ only by message share a group."""
    source = event.get("source") or {}
    return (_group_key(source.get("component", ""), source.get("host", ""), event.get("involvedObject") or {},
                       event.get("type", ""), event.get("reason", ""), event.get("reportingComponent", ""),
                       event.get("reportingInstance", "")),
            event.get("message", ""))


def _group_key(component: str, host: str, ref: Obj, type: str, reason: str, reporting_component: str,
               reporting_instance: str) -> Key:
    return _parts_group_key(component, host, reference_parts(ref), type, reason, reporting_component,
                            reporting_instance)


def _parts_group_key(component: str, host: str, parts: Parts, type: str, reason: str, reporting_component: str,
                     reporting_instance: str) -> Key:
    kind, namespace, name, uid, api_version = parts
    return ("aggregate", component, host, kind, namespace, name, uid, api_version, type, reason,
            reporting_component, reporting_instance)


def spam_key(event: Obj) -> Key:
    """The spam filter's key: source and involved object only."""
    source, ref = event.get("source") or {}, event.get("involvedObject") or {}
    return _spam_key(source.get("component", ""), source.get("host", ""), ref)


def _spam_key(component: str, host: str, ref: Obj) -> Key:
    return _parts_spam_key(component, host, reference_parts(ref))


def _parts_spam_key(component: str, host: str, parts: Parts) -> Key:
    # (A function returning Key: a tuple display made in place is typed by its items, and
    # compiled, a number among them — an odd object's — fails that type.)
    return (component, host, *parts)


# -- the three steps --------------------------------------------------------------------------------


class _Group:
    def __init__(self, messages: set[str], last_seen: float) -> None:
        self.messages = messages
        self.last_seen = last_seen


def _unix_nano_suffix(now: float) -> str:
    return f"{int(now * 1e9):x}"


def event_name(object_name: object, suffix: str) -> str:
    """A new Event's name (``makeEvent``, and an aggregate's): its object's name and the
    instant's suffix, nanoseconds in hex."""
    return f"{object_name}.{suffix}"


class EventAggregator:
    """Step 1: fold events that differ only by message into one aggregate event."""

    def __init__(self, *, cache_size: int = MAX_LRU_ENTRIES, max_events: int = AGGREGATE_MAX_EVENTS,
                 max_interval: float = AGGREGATE_INTERVAL_SECONDS,
                 name_suffix: Callable[[float], str] = _unix_nano_suffix) -> None:
        self.max_events = max_events
        self.max_interval = max_interval
        self._name_suffix = name_suffix
        self._groups: LRU[Key, _Group] = LRU(cache_size)

    def aggregate(self, event: Obj, *, now: float) -> tuple[Obj, Key]:
        """The event to record (``event`` itself or a new aggregate event) and its correlation key."""
        group_key, message = aggregate_keys(event)
        if not self.fold(group_key, message, now=now):
            return event, event_key(event)
        return self.combined(event, message, now=now), group_key

    def combined(self, event: Obj, message: str, *, now: float) -> Obj:
        """The aggregate event that replaces ``event`` (whose group has just been folded)."""
        ref = event["involvedObject"]
        stamp = format_rfc3339(now)
        combined: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": event_name(ref.get("name", ""), self._name_suffix(now)),
                         "namespace": event["metadata"]["namespace"]},
            "involvedObject": ref,
            "reason": event.get("reason", ""),
            "message": AGGREGATE_MESSAGE_PREFIX + message,
            "source": event.get("source") or {},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "type": event.get("type", ""),
        }
        return combined

    def fold(self, group_key: Key, message: str, *, now: float) -> bool:
        """Count ``message`` in its group; True when the event is to be replaced by the group's
        aggregate event (the group has seen ``max_events`` distinct messages)."""
        group = self._groups.get(group_key)  # (a hit is now the most recently used: no add)
        if group is None or now - group.last_seen > self.max_interval:
            group = _Group(set(), now)
            self._groups.add(group_key, group)
        group.messages.add(message)
        group.last_seen = now
        if len(group.messages) < self.max_events:
            return False
        group.messages.pop()  # an arbitrary one, as upstream's PopAny
        return True

    def name_suffix(self, now: float) -> str:
        return self._name_suffix(now)


class Observation:
    """What the logger remembers of a written Event (client-go's ``eventLog``)."""

    def __init__(self, name: str, count: int, first_timestamp: str) -> None:
        self.name = name
        self.count = count
        self.first_timestamp = first_timestamp


class EventLogger:
    """Step 2: repeats of a correlation key become count patches of the first Event."""

    def __init__(self, *, cache_size: int = MAX_LRU_ENTRIES) -> None:
        self._seen: LRU[Key, Observation] = LRU(cache_size)

    def note(self, key: Key) -> Observation | None:
        """Count a repeat of ``key`` (its observation, one more), or None when it is new (the
        caller remembers it, as :meth:`observe` does)."""
        seen = self._seen.get(key)  # (a hit is now the most recently used)
        if seen is not None:
            seen.count += 1
        return seen

    def remember(self, key: Key, seen: Observation) -> Observation:
        """Start counting a new key."""
        self._seen.add(key, seen)
        return seen

    def observe(self, event: Obj, key: Key) -> tuple[Obj, Obj | None, Observation]:
        """(event as it should now look, strategic-merge patch or None to create, the observation)."""
        seen = self.note(key)
        if seen is None:
            md = event["metadata"]
            seen = self.remember(key, Observation(md["name"], event.get("count", 1), event["firstTimestamp"]))
            return event, None, seen
        event = {**event, "metadata": {**event["metadata"], "name": seen.name},
                 "firstTimestamp": seen.first_timestamp, "count": seen.count}
        # What client-go's two-way patch against a zeroed copy comes to.
        patch: Obj = {"count": seen.count, "lastTimestamp": event["lastTimestamp"]}
        if event.get("message"):
            patch["message"] = event["message"]
        return event, patch, seen


class _TokenBucket:
    def __init__(self, tokens: float, last: float) -> None:
        self.tokens = tokens
        self.last = last


class SpamFilter:
    """Step 3: a token bucket per source + object; an event without a token is skipped."""

    def __init__(self, *, cache_size: int = MAX_LRU_ENTRIES, burst: int = SPAM_BURST, qps: float = SPAM_QPS) -> None:
        self.burst = burst
        self.qps = qps
        self._buckets: LRU[Key, _TokenBucket] = LRU(cache_size)

    def skip(self, event: Obj, *, now: float) -> bool:
        return self.skip_key(spam_key(event), now=now)

    def skip_key(self, key: Key, *, now: float) -> bool:
        bucket = self._buckets.get(key)  # (a hit is now the most recently used)
        if bucket is None:  # a new (or forgotten) object starts with a full bucket
            bucket = _TokenBucket(float(self.burst), now)
            self._buckets.add(key, bucket)
        tokens = self._tokens(bucket, now)
        if tokens < 1.0:
            return True  # x/time/rate leaves the bucket untouched when it refuses
        bucket.tokens, bucket.last = tokens - 1.0, now
        return False

    def refuses(self, key: Key, *, now: float) -> bool:
        """What :meth:`skip_key` answers for ``key`` now, changing nothing (no token taken, no
        bucket made, the order of use kept)."""
        bucket = self._buckets.peek(key)
        return bucket is not None and self._tokens(bucket, now) < 1.0

    def _tokens(self, bucket: _TokenBucket, now: float) -> float:
        """The bucket's tokens at ``now``, refilled since its last use."""
        return min(float(self.burst), bucket.tokens + max(0.0, now - bucket.last) * self.qps)


class Correlated:
    """The correlator's verdict: skip, or write ``event`` (create, or ``patch`` the existing one)."""

    def __init__(self, *, skip: bool, event: Obj | None = None, patch: Obj | None = None,
                 observation: Observation | None = None) -> None:
        self.skip = skip
        self.event = event
        self.patch = patch
        self.observation = observation


class EventCorrelator:
    """aggregate → observe → filter, as ``EventCorrelator.EventCorrelate``."""

    def __init__(self, *, cache_size: int = MAX_LRU_ENTRIES,
                 name_suffix: Callable[[float], str] = _unix_nano_suffix) -> None:
        self.aggregator = EventAggregator(cache_size=cache_size, name_suffix=name_suffix)
        self.logger = EventLogger(cache_size=cache_size)
        self.spam_filter = SpamFilter(cache_size=cache_size)

    def correlate(self, event: Obj, *, now: float) -> Correlated:
        event, key = self.aggregator.aggregate(event, now=now)
        event, patch, observation = self.logger.observe(event, key)
        if self.spam_filter.skip(event, now=now):
            return Correlated(skip=True)
        return Correlated(skip=False, event=event, patch=patch, observation=observation)

    def correlate_made(self, event: Obj, parts: Parts, spam: Key, *, now: float) -> Correlated:
        """:meth:`correlate` of an Event the recorder made, about an involved object of these
        ``parts``, with spam key ``spam``: its keys are built from the parts it was made of, not
        read back out of it (the same keys, three tuples of a dozen fields an event)."""
        source = event["source"]
        component, host = source["component"], source.get("host", "")
        type, reason, message = event["type"], event["reason"], event["message"]
        key = _parts_group_key(component, host, parts, type, reason, event["reportingComponent"],
                               event["reportingInstance"])
        aggregator = self.aggregator
        if aggregator.fold(key, message, now=now):
            event = aggregator.combined(event, message, now=now)
        else:
            key = _parts_event_key(component, host, parts, event["involvedObject"].get("fieldPath", ""), type,
                                   reason, message)
        event, patch, observation = self.logger.observe(event, key)
        if self.spam_filter.skip_key(spam, now=now):
            return Correlated(skip=True)
        return Correlated(skip=False, event=event, patch=patch, observation=observation)

    def correlate_unwritten(self, component: str, host: str, ref: Obj, type: str, reason: str, message: str, *,
                            now: float) -> bool:
        """:meth:`correlate` for an event that will not be written, from its parts (no Event is
        built): the same three steps with the same keys, so the caches, counts and spam buckets
        end as they would; True when the spam filter refuses it.  The names the event and an
        aggregate of it would take are still drawn, so the written events' names stay those of
        a recorder writing all."""
        parts = reference_parts(ref)
        return self.correlate_parts(component, host, parts, ref.get("fieldPath", ""), type, reason, message,
                                    now=now, spam=_parts_spam_key(component, host, parts))

    def correlate_parts(self, component: str, host: str, parts: Parts, field_path: str, type: str, reason: str,
                        message: str, *, now: float, spam: Key, name: str = "", stamp: str = "") -> bool:
        """:meth:`correlate_unwritten` of an involved object given by its parts (``spam`` is its
        spam key, which the recorder has made already).

        ``name`` and ``stamp``: the name and time the event was given, for one that is written
        when allowed but that the spam filter refuses (:meth:`EventRecorder.event`); a new
        correlation key remembers them (the aggregate's name instead when the event was folded
        into one), so that a later repeat patches, or creates, the Event it would have.  Without
        them the record is unnamed: no Event will carry its name."""
        key = _parts_group_key(component, host, parts, type, reason, component, host)
        if self.aggregator.fold(key, message, now=now):
            suffix = self.aggregator.name_suffix(now)  # the aggregate event's name
            if name:
                name = event_name(parts[2] or "", suffix)
        else:
            key = _parts_event_key(component, host, parts, field_path, type, reason, message)
        if self.logger.note(key) is None:
            self.logger.remember(key, Observation(name, 1, stamp))
        return self.spam_filter.skip_key(spam, now=now)


# -- the recorder -------------------------------------------------------------------------------------


class _WriteQueue:
    """One worker's queue of writes: ``asyncio.Queue``'s FIFO with ``task_done``/``join``, for
    one consumer, as a plain class (compiled with this module).  asyncio's own runs interpreted:
    its ``put_nowait``, ``get`` and ``task_done`` with the helpers they call were about 8 K
    instructions an event.  The bound is the recorder's (:meth:`EventRecorder._full` reads the
    length: a full queue drops the event before anything else is done with it)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.jobs: collections.deque[_Job] = collections.deque()
        self.unfinished = 0  # put and not yet done
        self._loop = loop
        self._getter: asyncio.Future[None] | None = None  # the worker, waiting for a job
        self._joiners: list[asyncio.Future[None]] = []

    def put(self, job: _Job) -> None:
        self.jobs.append(job)
        self.unfinished += 1
        getter = self._getter
        if getter is not None:
            self._getter = None
            if not getter.done():
                getter.set_result(None)

    async def get(self) -> _Job:
        while not self.jobs:
            getter = self._loop.create_future()
            self._getter = getter
            await getter
        return self.jobs.popleft()

    def done(self) -> None:
        """One job got from the queue is finished (``task_done``)."""
        self.unfinished -= 1
        if self.unfinished == 0 and self._joiners:
            joiners, self._joiners = self._joiners, []
            for joiner in joiners:
                if not joiner.done():
                    joiner.set_result(None)

    async def join(self) -> None:
        """Until every job put so far is done."""
        if self.unfinished:
            joiner = self._loop.create_future()
            self._joiners.append(joiner)
            await joiner


class _Job:
    """One queued write (a plain class, as the records above: one is made per written event)."""

    def __init__(self, event: Obj, observation: Observation, patch: Obj | None, typed: bool) -> None:
        self.event = event  # the complete Event (used to create, or to recreate if a patch finds it gone)
        self.observation = observation  # shared with the logger: carries the Event's current name
        self.patch = patch  # set when this is a repeat
        self.typed = typed  # made of strings where it should be (_strings_only): created as a typed client's


@dataclass(slots=True)
class RecorderStats:
    created: int = 0
    patched: int = 0
    dropped: int = 0
    skipped: int = 0  # refused by the spam filter
    withheld: int = 0  # correlated, not written: a reason the recorder does not write
    failed: int = 0
    by_reason: collections.Counter[str] = field(default_factory=collections.Counter)


def object_reference(obj: Obj) -> Obj:
    """``ref.GetReference``: an ObjectReference for an object (or an ObjectReference as given)."""
    md = obj.get("metadata")
    if md is None:  # already a reference
        return {k: v for k, v in obj.items() if k in (
            "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath") and v}
    fields: dict[str, Any] = md if isinstance(md, dict) else {}  # (typed: dict lookups when compiled)
    # ObjectReference's fields in its order; empty ones left out (omitempty).  Spelled out: a
    # zip over the field names runs as Python calls even compiled, 17 K instructions an event.
    kind, namespace, name, uid, api_version = object_parts(obj, fields)
    resource_version = fields.get("resourceVersion")
    ref: Obj = {}
    if kind:
        ref["kind"] = kind
    if namespace:
        ref["namespace"] = namespace
    if name:
        ref["name"] = name
    if uid:
        ref["uid"] = uid
    if api_version:
        ref["apiVersion"] = api_version
    if resource_version:
        ref["resourceVersion"] = resource_version
    return ref


def _strings_only(ref: Obj, component: Any, host: Any, reason: Any, message: Any) -> bool:
    """Whether an Event made of these holds strings wherever it should.

    Then it is what a typed client sends — every field the recorder puts in an Event is a string
    (or its count, an int it makes itself), and it puts in no other — and it is created as one
    (``Client.create(..., typed=True)``): the server does not search it for badly typed values or
    unknown fields, as kube-apiserver's decoder finds none in the kubelet's Go structs.  That
    search was an eighth of an Event's create (27 of 218 K instructions, 8,000 Events in process).
    The arguments are typed ``Any`` because this is the check: a caller may pass anything (an
    object with a number for a uid), compiled or not; such an Event is created unvouched, and
    the server's decoder refuses it as before."""
    if type(component) is not str or type(host) is not str or type(reason) is not str or \
            type(message) is not str:
        return False
    for value in ref.values():
        if type(value) is not str:
            return False
    return True


def _with_field_path(ref: Obj, field_path: str | None) -> Obj:
    if field_path:
        ref["fieldPath"] = field_path
    return ref


class EventRecorder:
    def __init__(self, client: Any, *, component: str, host: str | None = None, clock: Clock | None = None,
                 workers: int = 4, max_queued: int = DEFAULT_MAX_QUEUED, cache_size: int = MAX_LRU_ENTRIES,
                 written_reasons: frozenset[str] | None = None) -> None:
        """``written_reasons``: write only the events of these reasons (None: all).  Every event
        is still correlated, so the spam filter and the aggregation of the written ones are what
        they are when all are written (``plan``'s copy writes only what its answer reads); one
        that will not be written is correlated from its parts, without building its Event
        (:meth:`EventCorrelator.correlate_unwritten`)."""
        self.client = client
        self.component = component
        self.written_reasons = written_reasons
        self.host = host
        self.clock = clock if clock is not None else Clock()
        self.cache_size = cache_size
        self.stats = RecorderStats()
        self.correlator = EventCorrelator(cache_size=cache_size, name_suffix=self._suffix)
        self._workers = max(1, workers)
        self._per_worker = max(1, max_queued // self._workers)
        self._queues: list[_WriteQueue] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._last_ns = 0
        self._closed = False
        self._drop_logged_at: float | None = None  # clock time of the last "queue full" line
        # The parts its events share — the involvedObject of a version of an object (the
        # kubelet's Pulled, Created and Started events of a pod), the source of a host — as one
        # dict each, never changed once made: the store shares equal sub-trees of what it keeps
        # (storage/canonical.py), and knows one it has kept by identity, where an equal new dict
        # costs it a serialisation to look up and another to confirm the hit.
        self._references: dict[tuple[Any, ...], Obj] = {}
        self._sources: dict[str, Obj] = {}

    # -- public API ------------------------------------------------------------------------------

    def event(self, obj: Obj, type: str, reason: str, message: str, *, host: str | None = None,
              field_path: str | None = None) -> None:
        """Record an Event about ``obj`` (fire-and-forget).  ``host`` overrides the recorder's
        source host (one recorder speaking for many nodes, as the simulated kubelets do: each
        upstream kubelet's recorder has its node name as host and reporting instance);
        ``field_path`` names the part of the object, e.g. ``spec.containers{app}``."""
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
        host = host or self.host
        md = obj.get("metadata")
        if self.written_reasons is not None and reason not in self.written_reasons and isinstance(md, dict):
            # Not to be written: correlated from the object's parts, no reference built.
            parts = object_parts(obj, md)
            spam = _parts_spam_key(self.component, host or "", parts)
            if self._full(spam, parts[1], parts[2], reason, message):
                return
            now = self.clock.now()
            self._next_ns(now)  # the name its Event would have had (names of the written ones stay as they are)
            if self.correlator.correlate_parts(self.component, host or "", parts, field_path or "", type, reason,
                                               message, now=now, spam=spam):
                self.stats.skipped += 1
            else:
                self.stats.withheld += 1
            return
        ref = self._reference(obj, md, field_path)
        parts = reference_parts(ref)
        spam = _parts_spam_key(self.component, host or "", parts)
        if self._full(spam, ref.get("namespace", ""), ref.get("name", ""), reason, message):
            return
        now = self.clock.now()
        if self.written_reasons is not None and reason not in self.written_reasons:  # (a reference given)
            self._next_ns(now)
            if self.correlator.correlate_unwritten(self.component, host or "", ref, type, reason, message, now=now):
                self.stats.skipped += 1
            else:
                self.stats.withheld += 1
            return
        stamp = format_rfc3339(now)
        if self.correlator.spam_filter.refuses(spam, now=now):
            # Refused whatever it says (the spam filter reads only the object and the time): it
            # is correlated as the Event would be, from its parts, names and time, but not built
            # — a DaemonSet's "Created pod" from the 26th pod of a burst on, for instance.
            # (correlate_parts asks the filter again, last as upstream: nothing between the two
            # has used it, so it refuses again)
            self.correlator.correlate_parts(self.component, host or "", parts, ref.get("fieldPath", ""), type,
                                            reason, message, now=now, spam=spam,
                                            name=event_name(ref.get("name", ""), self._suffix(now)),
                                            stamp=stamp)
            self.stats.skipped += 1
            return
        result = self.correlator.correlate_made(self._make_event(ref, type, reason, message, now=now, stamp=stamp,
                                                                 host=host), parts, spam, now=now)
        if result.skip:
            self.stats.skipped += 1
            return
        assert result.event is not None and result.observation is not None
        self._queues[hash(spam) % self._workers].put(
            _Job(result.event, result.observation, result.patch,
                 _strings_only(ref, self.component, host or "", reason, message)))

    async def write_first(self, obj: Obj, type: str, reason: str, message: str, *, host: str | None = None,
                          field_path: str | None = None) -> None:
        """Write at once the Event that :meth:`event` writes for a first occurrence: the same
        reference, source, name and typed flag, created by the same call (:meth:`_write`), but
        with no correlator, queue or worker around it.

        For ``bench``'s API floor with Events, which makes a converge's writes through the API
        alone; never for a component, whose repeats the correlator has to see."""
        host = host or self.host
        ref = self._reference(obj, obj.get("metadata"), field_path)
        now = self.clock.now()
        event = self._make_event(ref, type, reason, message, now=now, stamp=format_rfc3339(now), host=host)
        seen = Observation(event["metadata"]["name"], 1, event["firstTimestamp"])
        await self._write(_Job(event, seen, None, _strings_only(ref, self.component, host or "", reason, message)))

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

    def _full(self, spam: Key, namespace: Any, name: Any, reason: str, message: str) -> bool:
        """Whether the worker queue of this event's object is full: then the event is dropped
        (counted, and logged at most every :data:`DROP_LOG_INTERVAL` seconds) before the
        correlator sees it.  (The object's namespace and name are taken as it has them, only to
        be logged: compiled, a ``str`` here raised into the controller for an object with a
        number for a name.)"""
        if len(self._queues[hash(spam) % self._workers].jobs) < self._per_worker:
            return False
        self.stats.dropped += 1
        at = self.clock.monotonic()
        if self._drop_logged_at is None or at - self._drop_logged_at >= DROP_LOG_INTERVAL:
            self._drop_logged_at = at
            log.warning("event queue full; dropped %d event(s) so far, latest %s/%s %s: %s",
                        self.stats.dropped, namespace, name, reason, message)
        return True

    def _suffix(self, now: float | None = None) -> str:
        # Nanoseconds in hex as upstream; strictly increasing so that events recorded at the same
        # (virtual) instant still get distinct names.
        return hex(self._next_ns(now))[2:]  # (hex(): compiled, a format spec is a slow call)

    def _next_ns(self, now: float | None = None) -> int:
        ns = max(int((self.clock.now() if now is None else now) * 1e9), self._last_ns + 1)
        self._last_ns = ns
        return ns

    def _reference(self, obj: Obj, md: Any, field_path: str | None) -> Obj:
        """The involvedObject of an event about ``obj`` (``field_path``: the part of it): the
        same dict for every event about the same version of the same part (``__init__`` says why)."""
        if not isinstance(md, dict):  # a reference given
            return _with_field_path(object_reference(obj), field_path)
        fields: dict[str, Any] = md
        kind, namespace, name, uid, api_version = object_parts(obj, fields)
        key = (kind, namespace, name, uid, api_version, fields.get("resourceVersion") or "", field_path or "")
        references = self._references
        try:
            known = references.get(key)
        except TypeError:  # an unhashable field (no such object is ever stored): made every time
            return _with_field_path(object_reference(obj), field_path)
        if known is not None:
            return known
        return remember(references, key, _with_field_path(object_reference(obj), field_path), limit=_PARTS_MAX)

    def _source(self, host: str | None) -> Obj:
        """The EventSource of this recorder's events from ``host``: one dict per host
        (``__init__`` says why)."""
        source = self._sources.get(host or "")
        if source is None:
            source = {"component": self.component}
            if host:
                source["host"] = host
            remember(self._sources, host or "", source, limit=_PARTS_MAX)
        return source

    def _make_event(self, ref: Obj, type: str, reason: str, message: str, *, now: float, stamp: str,
                    host: str | None = None) -> Obj:
        """``recorder.makeEvent``: a new Event, count 1, named after the object and the instant."""
        source = self._source(host)
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": event_name(ref.get("name", ""), self._suffix(now)),
                         "namespace": ref.get("namespace") or "default"},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "source": source,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "type": type,
            "reportingComponent": self.component,
            "reportingInstance": host or "",
        }

    def _ensure_workers(self) -> None:
        if self._tasks:
            return
        loop = asyncio.get_running_loop()
        self._queues = [_WriteQueue(loop) for _ in range(self._workers)]
        self._tasks = [loop.create_task(self._worker(q), name=f"events:{self.component}:{i}")
                       for i, q in enumerate(self._queues)]

    async def _worker(self, queue: _WriteQueue) -> None:
        while True:
            job = await queue.get()
            try:
                await self._write(job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # never into the controller
                self.stats.failed += 1
                log.warning("unable to write event %s/%s (%s): %r", job.event["metadata"]["namespace"],
                            job.observation.name, job.event["reason"], exc)
            finally:
                queue.done()

    async def _write(self, job: _Job) -> None:
        seen = job.observation
        namespace = job.event["metadata"]["namespace"]
        if job.patch is not None:
            try:
                await self.client.patch("events", seen.name, job.patch, namespace=namespace,
                                        patch_type="strategic")
                self.stats.patched += 1
                return
            except ApiError as exc:
                if exc.code != 404:
                    raise
            # Deleted (or never created) meanwhile: create it with the aggregated count.
        event = job.event
        reason = event["reason"]
        if event["metadata"]["name"] != seen.name:
            event = {**event, "metadata": {**event["metadata"], "name": seen.name}}
        for attempt in range(3):
            try:
                # Handed over: the event was made for this write (a failed attempt may have
                # had the server fill in its uid and creation time, which it sets again).
                await self.client.create("events", event, namespace=namespace, handed_over=True,
                                         typed=job.typed)
                break
            except ApiError as exc:
                if exc.reason != "AlreadyExists" or attempt == 2:
                    raise
                # Another component named an event about the same object at the same instant
                # (likely under virtual time, where much happens at one instant): take a fresh
                # name rather than lose the event, and let later patches follow it (what
                # client-go's UpdateState does with the server's answer).
                fresh = f"{event['involvedObject'].get('name', '')}.{self._suffix()}{random_suffix(3)}"
                event = {**event, "metadata": {**event["metadata"], "name": fresh}}
                seen.name = fresh
        self.stats.created += 1
        self.stats.by_reason[reason] += 1
