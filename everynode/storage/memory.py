"""The in-memory store: the working set, its indexes and the write rules every backend shares.

Why it looks like this:

* **Objects stay as the dicts callers gave us** (after a shallow copy that stamps
  ``metadata.resourceVersion``) and are handed out as-is: no copy per read, no per-object wrapper.
  At 65k nodes + 65k pods the dicts themselves dominate memory (python-stack.md §2), so before
  an object is kept its sub-trees are replaced by equal ones already stored (canonical.py:
  every DaemonSet pod then shares its containers, tolerations and managedFields field sets with
  the others; a pod costs ~6 KB instead of ~17 KB).  The indexes add one key tuple and one list
  slot per object.  Each version is shared as it is written, even one the next write replaces
  moments later (a pod's create, binding and Pending status): sharing a version only once it had
  outlived 1,024 later writes, and never one replaced before, took 5.6% off ``api_floor``'s
  instructions but added wall time — 2.17 → 2.48 s for ``bench converge --nodes 5000`` (medians
  of seven interleaved runs) — as a version shared that late is walked out of the CPU's caches,
  and the queue kept every replaced version alive past the young collections.
* **What the store keeps leaves the cyclic garbage collector** (untracked.py): each object's
  dicts and lists are untracked when it is applied, so the collector's passes no longer walk
  every version the history and the informers hold — JSON trees, which cannot form a cycle.
* **Events expire** ``EVENT_TTL`` (kube-apiserver ``--event-ttl``, 1 h) after their last write,
  as their etcd lease does upstream, so a long run does not accumulate them (``_after_write``).
* **Per-resource index** ``{(namespace, name): obj}`` with a **lazily maintained sorted key list**
  for etcd key order.  Creates and deletes only record the key in an "added"/"removed" set; the
  next list folds them in (a few ``insort``/``del`` for small changes, otherwise one linear merge:
  Timsort merges the old sorted run with the sorted additions in O(n)).  Updates do not touch the
  order at all.  A namespace is a contiguous slice of that list, found by bisection, so a
  namespaced list costs O(log n + page) and needs no second index.
* **Writes are split into prepare / commit / apply** so the SQLite backend can reuse everything:
  *prepare* checks preconditions against the latest (possibly not yet durable) state and assigns
  the next resourceVersion; *commit* makes it durable (nothing to do here); *apply* updates the
  indexes, advances :meth:`current_rv` and publishes the watch event.  Readers only ever see
  applied state.
* **Pagination** follows the apiserver: the continue token is opaque base64 of
  ``{"v": "meta.k8s.io/v1", "rv": <list rv>, "start": [namespace, name]}`` (the last key
  returned); later pages report the first page's resourceVersion.  Pages are served from the
  current state (there are no old snapshots in memory), so a page may include changes newer than
  that rv; a client watching from the list rv then receives those changes again, which informers
  handle.  A token whose rv fell out of the watch window raises ExpiredError, as a token past
  etcd's compaction does.  ``remaining`` (remainingItemCount) is given only without a predicate,
  as upstream gives it only without selectors.
* resourceVersion ``0`` as "any version" is an API-level rule: the service turns it into a list
  plus a watch from :meth:`current_rv`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
from bisect import bisect_left, bisect_right, insort
from collections import deque
from typing import Final

import orjson

from everynode.api.meta import field_of
from everynode.storage.base import (
    ConflictError,
    ExpiredError,
    KeyExistsError,
    ListResult,
    NotFoundError,
    Obj,
    Predicate,
    StorageError,
    Store,
    Watch,
    WatchEvent,
)
from everynode.storage.canonical import DEFAULT_CAPACITY, Canonicalizer
from everynode.storage.untracked import untrack
from everynode.storage.watch import ADDED, DELETED, MODIFIED, WatchHub, with_resource_version

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace, name)

# Up to this many pending creates/deletes are folded into the sorted key list one by one
# (bisect + memmove); more are merged in one linear pass.
_INCREMENTAL_LIMIT: Final = 64

_CONTINUE_VERSION: Final = "meta.k8s.io/v1"

# kube-apiserver ``--event-ttl`` default: an Event lives one hour after its last write.
EVENT_TTL: Final = 3600.0
TTL_RESOURCES: Final = ("events", "events.events.k8s.io")


def object_key(obj: Obj) -> Key:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        raise ValueError("object has no metadata")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("object has no metadata.name")
    namespace = metadata.get("namespace") or ""
    if not isinstance(namespace, str):
        raise ValueError("metadata.namespace must be a string")
    return namespace, name


def resource_version_of(obj: Obj) -> int:
    return int(obj["metadata"]["resourceVersion"])


def encode_continue(rv: int, last_key: Key) -> str:
    raw = orjson.dumps({"v": _CONTINUE_VERSION, "rv": rv, "start": [last_key[0], last_key[1]]})
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode_continue(token: str) -> tuple[int, Key]:
    """(list rv, last key returned).  Raises ValueError for anything we did not produce."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise ValueError(f"continue key is not valid: {exc}") from None
    if not isinstance(data, dict) or data.get("v") != _CONTINUE_VERSION:
        raise ValueError("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    rv, start = data.get("rv"), data.get("start")
    if (not isinstance(rv, int) or isinstance(rv, bool) or rv < 0 or not isinstance(start, list)
            or len(start) != 2 or not all(isinstance(part, str) for part in start)):
        raise ValueError("continue key is not valid: malformed token")
    return rv, (start[0], start[1])


class ResourceIndex:
    """The objects of one resource, with their keys kept in (namespace, name) order lazily."""

    __slots__ = ("objects", "_sorted", "_added", "_removed")

    def __init__(self) -> None:
        self.objects: dict[Key, Obj] = {}
        self._sorted: list[Key] = []
        self._added: set[Key] = set()
        self._removed: set[Key] = set()

    def put(self, key: Key, obj: Obj) -> None:
        if key not in self.objects:
            if key in self._removed:  # deleted and re-created before the order was refreshed
                self._removed.discard(key)
            else:
                self._added.add(key)
        self.objects[key] = obj

    def remove(self, key: Key) -> None:
        del self.objects[key]
        if key in self._added:
            self._added.discard(key)
        else:
            self._removed.add(key)

    def load_sorted(self, items: list[tuple[Key, Obj]]) -> None:
        """Bulk load (keys already in order, e.g. from SQLite's primary key)."""
        for key, obj in items:
            untrack(obj)
            self.objects[key] = obj
        keys = [key for key, _ in items]
        keys.sort()  # linear when already sorted; guards against a collation surprise
        self._sorted = keys

    def sorted_keys(self) -> list[Key]:
        keys = self._sorted
        removed = self._removed
        if removed:
            if len(removed) <= _INCREMENTAL_LIMIT:
                for key in removed:
                    del keys[bisect_left(keys, key)]
            else:
                keys = self._sorted = [key for key in keys if key not in removed]
            removed.clear()
        added = self._added
        if added:
            if len(added) <= _INCREMENTAL_LIMIT:
                for key in added:
                    insort(keys, key)
            else:
                keys.extend(sorted(added))
                keys.sort()  # two sorted runs: Timsort merges them in linear time
            added.clear()
        return keys


# Resources kept out of structural sharing.  A node's Lease is rewritten every 10 s by its kubelet
# (6,500 writes/s at 65,000 nodes), and each write brings new content (renewTime, the managedFields
# time) in freshly decoded containers: sharing looked up and serialised most of it on every write
# for ~1.4 KB saved per Lease.  Measured on an idle 5,000-node cluster: 92–112 µs of CPU per
# renewal with sharing, 60–69 µs without; the memory is ~90 MB at 65,000 nodes.
UNSHARED_RESOURCES: Final = frozenset({"leases.coordination.k8s.io"})


class MemoryStore(Store):
    """All objects in memory; nothing survives the process.  Also the base of :class:`SqliteStore`."""

    def __init__(self, *, history: int = 10_000, watcher_backlog: int = 100_000,
                 share_capacity: int = DEFAULT_CAPACITY, event_ttl: float | None = EVENT_TTL,
                 unshared: frozenset[str] = UNSHARED_RESOURCES, share_updates: bool = True) -> None:
        self._indexes: dict[str, ResourceIndex] = {}
        # Objects that expire (Events, as etcd leases expire them upstream): resource -> seconds.
        self._ttl: dict[str, float] = {r: event_ttl for r in TTL_RESOURCES} if event_ttl else {}
        # (deadline in loop time, resource, key, rv of the write that set it), oldest first.
        self._expiry: deque[tuple[float, str, Key, int]] = deque()
        self._expiring = False
        self._expiry_loaded: list[tuple[str, Key, int]] = []  # loaded from disk, TTL not started
        # Equal sub-trees of stored objects are kept once (canonical.py); 0 turns sharing off.
        self._canonical = Canonicalizer(capacity=share_capacity) if share_capacity > 0 else None
        self._unshared = unshared  # resources stored as written (UNSHARED_RESOURCES)
        # False: an update keeps what it carries over of the stored version (canonical already)
        # and stores what it brings as written; only creates are shared (``_shared``).
        self._share_updates = share_updates
        self._writes: dict[str, int] = {}  # resource -> writes applied (Store.writes)
        self._rv = 0  # last applied (visible) resourceVersion
        self._assigned_rv = 0  # last resourceVersion handed to a write (>= _rv)
        self._hub = WatchHub(history=history, max_backlog=watcher_backlog)
        self._closed = False

    # -- reads --------------------------------------------------------------------------------------

    def current_rv(self) -> int:
        return self._rv

    def get(self, resource: str, namespace: str, name: str) -> Obj | None:
        index = self._indexes.get(resource)
        if index is None:
            return None
        return index.objects.get((namespace, name))

    def count(self, resource: str) -> int:
        index = self._indexes.get(resource)
        return 0 if index is None else len(index.objects)

    def writes(self, resource: str) -> int:
        return self._writes.get(resource, 0)

    def list(self, resource: str, *, namespace: str | None = None, predicate: Predicate | None = None,
             limit: int | None = None, continue_token: str | None = None) -> ListResult:
        list_rv = self._rv
        start_after: Key | None = None
        if continue_token:
            list_rv, start_after = decode_continue(continue_token)
            oldest = self._hub.oldest_rv
            if list_rv < oldest - 1:
                raise ExpiredError(list_rv, oldest - 1)
        if limit is not None and limit <= 0:
            limit = None  # limit=0 means "no limit" in the API
        index = self._indexes.get(resource)
        if index is None or not index.objects:
            return ListResult(items=[], rv=list_rv)
        keys = index.sorted_keys()
        objects = index.objects
        lo, hi = 0, len(keys)
        if namespace is not None:
            lo = bisect_left(keys, (namespace,))
            hi = bisect_left(keys, (namespace + "\x00",), lo)
        if start_after is not None:
            lo = max(lo, bisect_right(keys, start_after, lo, hi))
        if limit is None:
            if predicate is None:
                return ListResult(items=[objects[key] for key in keys[lo:hi]], rv=list_rv)
            items = [obj for obj in (objects[key] for key in keys[lo:hi]) if predicate(obj)]
            return ListResult(items=items, rv=list_rv)
        items = []
        i = lo
        while i < hi:
            obj = objects[keys[i]]
            i += 1
            if predicate is None or predicate(obj):
                items.append(obj)
                if len(items) >= limit:
                    break
        if i >= hi:
            return ListResult(items=items, rv=list_rv)
        return ListResult(items=items, rv=list_rv, continue_token=encode_continue(list_rv, keys[i - 1]),
                          remaining=(hi - i) if predicate is None else None)

    def watch(self, resource: str, *, namespace: str | None = None, predicate: Predicate | None = None,
              since_rv: int | None = None) -> Watch:
        self._check_open()
        return self._hub.open(resource, namespace=namespace, predicate=predicate, since_rv=since_rv)

    def watcher_count(self, resource: str | None = None) -> int:
        """Open watches (of one resource, or all); for metrics and leak tests."""
        return self._hub.watcher_count(resource)

    # -- writes -------------------------------------------------------------------------------------

    async def create(self, resource: str, obj: Obj) -> Obj:
        self._check_open()
        event = self._prepare_create(resource, obj)
        await self._commit(event)
        await self._after_write(event)
        return event.object

    async def update(self, resource: str, obj: Obj, *, expected_rv: int | None = None) -> Obj:
        self._check_open()
        event = self._prepare_update(resource, obj, expected_rv)
        await self._commit(event)
        await self._after_write(event)
        return event.object

    # -- expiry (Events' TTL) ----------------------------------------------------------------------

    async def _after_write(self, event: WatchEvent) -> None:
        """Start the TTL of an expiring object, then delete what has expired.

        Upstream every Event write attaches an etcd lease of ``--event-ttl``; when it runs out
        etcd deletes the key (watchers see DELETED).  Here each write of such an object records
        a deadline (one FIFO: the TTL is constant, so deadlines come in order) and writes delete
        what is due, so the cost is O(1) amortised and nothing runs while nothing is written —
        when nothing is written, nothing grows either.  A deadline is stale when the object was
        written again since (another, later deadline exists for it).  Time is the event loop's,
        so it is virtual under a virtual-time loop, like every other timer."""
        ttl = self._ttl.get(event.resource)
        if ttl is None and not self._expiry and not self._expiry_loaded:
            return
        now = asyncio.get_running_loop().time()
        if self._expiry_loaded:
            for resource, key, rv in self._expiry_loaded:
                self._expiry.append((now + self._ttl[resource], resource, key, rv))
            self._expiry_loaded.clear()
        if ttl is not None:
            self._expiry.append((now + ttl, event.resource, object_key(event.object), event.rv))
        if self._expiry and self._expiry[0][0] <= now and not self._expiring:
            await self._expire(now)

    def track_expiry(self, resource: str, key: Key, rv: int) -> None:
        """Start the TTL of a stored object at the next write (durable backends call this for
        the objects they load: the deadline of the previous run is not known, so a restart gives
        them a full TTL, as an etcd lease's TTL restarts with a new leader)."""
        if resource in self._ttl:
            self._expiry_loaded.append((resource, key, rv))

    async def _expire(self, now: float) -> None:
        self._expiring = True
        try:
            expiry = self._expiry
            while expiry and expiry[0][0] <= now and not self._closed:
                _deadline, resource, key, rv = expiry.popleft()
                current = self._lookup(resource, key)
                if current is None or resource_version_of(current) != rv:
                    continue  # deleted, or written again (a later deadline covers it)
                try:
                    await self.delete(resource, key[0], key[1], expected_rv=rv)
                except (NotFoundError, ConflictError):
                    continue
                except Exception:  # best effort: the write that got here has succeeded
                    log.exception("could not delete expired %s %s; retrying after the next write",
                                  resource, _display(key))
                    expiry.appendleft((now, resource, key, rv))
                    break
        finally:
            self._expiring = False

    async def delete(self, resource: str, namespace: str, name: str, *,
                     expected_rv: int | None = None, expected_uid: str | None = None) -> Obj:
        self._check_open()
        event = self._prepare_delete(resource, (namespace, name), expected_rv, expected_uid)
        await self._commit(event)
        return event.object

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._hub.close_all()

    # -- the write pipeline (overridden by durable backends) ----------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError("store is closed")

    def _lookup(self, resource: str, key: Key) -> Obj | None:
        """The latest state a new write must be checked against (durable backends add pending writes)."""
        index = self._indexes.get(resource)
        return None if index is None else index.objects.get(key)

    def _next_rv(self) -> int:
        self._assigned_rv += 1
        return self._assigned_rv

    def _shared(self, obj: Obj, previous: Obj | None = None, resource: str = "") -> Obj:
        """The object about to be stored, its sub-trees replaced by equal ones already stored
        (``previous``: the stored version it replaces, whose carried-over parts are kept as are)."""
        canonical = self._canonical
        if canonical is None or resource in self._unshared or (previous is not None and not self._share_updates):
            return obj
        return canonical.object(obj, previous)

    def _prepare_create(self, resource: str, obj: Obj) -> WatchEvent:
        key = object_key(obj)
        if self._lookup(resource, key) is not None:
            raise KeyExistsError(f"{resource} {_display(key)} already exists")
        rv = self._next_rv()
        return WatchEvent(ADDED, self._shared(with_resource_version(obj, rv), None, resource), rv, resource, None)

    def _prepare_update(self, resource: str, obj: Obj, expected_rv: int | None) -> WatchEvent:
        key = object_key(obj)
        current = self._lookup(resource, key)
        if current is None:
            raise NotFoundError(f"{resource} {_display(key)} not found")
        if expected_rv is not None and resource_version_of(current) != expected_rv:
            raise ConflictError(f"{resource} {_display(key)}: resourceVersion {expected_rv} is stale "
                                f"(stored {resource_version_of(current)})")
        rv = self._next_rv()
        return WatchEvent(MODIFIED, self._shared(with_resource_version(obj, rv), current, resource), rv, resource, current)

    def _prepare_delete(self, resource: str, key: Key, expected_rv: int | None,
                        expected_uid: str | None) -> WatchEvent:
        current = self._lookup(resource, key)
        if current is None:
            raise NotFoundError(f"{resource} {_display(key)} not found")
        if expected_uid is not None and field_of(current["metadata"], "uid") != expected_uid:
            raise ConflictError(f"{resource} {_display(key)}: uid {expected_uid} does not match "
                                f"stored uid {current['metadata'].get('uid')}")
        if expected_rv is not None and resource_version_of(current) != expected_rv:
            raise ConflictError(f"{resource} {_display(key)}: resourceVersion {expected_rv} is stale "
                                f"(stored {resource_version_of(current)})")
        rv = self._next_rv()
        return WatchEvent(DELETED, with_resource_version(current, rv), rv, resource, current)

    async def _commit(self, event: WatchEvent) -> None:
        """Make the write durable, then apply it.  In memory there is nothing to wait for."""
        self._apply(event)

    def _apply(self, event: WatchEvent) -> None:
        index = self._indexes.get(event.resource)
        if index is None:
            index = self._indexes[event.resource] = ResourceIndex()
        key = object_key(event.object)
        untrack(event.object)  # kept from now on by the index, the history, the informers (untracked.py)
        if event.type == DELETED:
            index.remove(key)
        else:
            index.put(key, event.object)
        writes = self._writes
        writes[event.resource] = writes.get(event.resource, 0) + 1
        self._rv = event.rv
        self._hub.publish(event)


def _display(key: Key) -> str:
    return f"{key[0]}/{key[1]}" if key[0] else key[1]
