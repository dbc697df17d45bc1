"""Informers: list + watch into an indexed in-memory cache, with event handlers.

Upstream: ``client-go/tools/cache`` (``reflector.go``, ``shared_informer.go``, ``thread_safe_store.go``,
``delta_fifo.go``).  What is kept and what is simplified:

* **Reflector loop.**  List (paginated, ``limit`` = ``page_size``) then watch from the list's
  resourceVersion.  A watch that ends cleanly (server ``timeoutSeconds``) is resumed from the last
  resourceVersion seen; bookmarks advance it.  A 410 ``Expired`` or any other failure (a broken
  stream, a refused connection, an API error) leads to a fresh list, with exponential backoff
  (0.8 s → 30 s, as the reflector) except after 410, which relists at once.  A continue token that
  expires mid-pagination falls back to one unpaginated list (client-go's pager does the same).
* **Replace = diff.**  A relist is compared with the cache: objects gone are delivered to
  ``on_delete`` with their last known state, new ones to ``on_add``, changed ones (different
  resourceVersion) to ``on_update(old, new)``.  Unchanged objects produce nothing — cheaper than
  upstream's "update everything on relist"; a periodic ``resync_period`` re-delivers
  ``on_update(obj, obj)`` for controllers that want it.
* **No DeltaFIFO, no processor goroutines.**  Everything runs on one asyncio loop, so the cache is
  updated and handlers are called directly in the informer's task, synchronously: handlers must be
  cheap (controllers enqueue keys).  A handler's exception is logged and does not stop the informer.
* **Indexes** are maintained incrementally: each event recomputes the index values of the old and
  the new object only (O(1) per event in the cache size), never a rebuild.  An index value that
  names a single object (pods by node: one per node at 65k nodes) holds its key as a plain str
  rather than a one-element set (~200 bytes less each); a set appears from the second key on.
* Objects in the cache are the ones delivered by the client: shared and read-only.  List items that
  lack ``kind``/``apiVersion`` (real API servers omit them in lists) get them in a shallow copy so
  every cached object carries its type, as watch objects do.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from everynode.api.errors import ApiError
from everynode.api.meta import field_of, key_of
from everynode.api.registry import resource as lookup_resource
from everynode.client.base import Client, Obj

log = logging.getLogger(__name__)

IndexFunc = Callable[[Obj], list[str]]
AddHandler = Callable[[Obj], None]
UpdateHandler = Callable[[Obj, Obj], None]
DeleteHandler = Callable[[Obj], None]

NAMESPACE_INDEX: Final = "namespace"
DEFAULT_PAGE_SIZE: Final = 500
MIN_WATCH_TIMEOUT: Final = 300  # seconds; the reflector picks a random timeout in [5, 10) minutes
BACKOFF_INITIAL = 0.8
BACKOFF_MAX = 30.0


def index_by_namespace(obj: Obj) -> list[str]:
    """``cache.MetaNamespaceIndexFunc``."""
    return [obj.get("metadata", {}).get("namespace") or ""]


NODE_NAME_INDEX: Final = "spec.nodeName"


def index_pod_by_node_name(pod: Obj) -> list[str]:
    """Pods informer index: the node a pod is bound to (none for unscheduled pods).  Shared by
    every component that asks "which pods are on node X" — one function object, so that they
    can all register it on the one shared pods informer."""
    node = field_of(pod.get("spec"), "nodeName")
    return [node] if node else []


def _rv(obj: Obj) -> str | None:
    return field_of(obj.get("metadata"), "resourceVersion")


def _index_put(index: dict[str, str | set[str]], value: str, key: str) -> None:
    keys = index.get(value)
    if keys is None:
        index[value] = key
    elif isinstance(keys, str):
        if keys != key:
            index[value] = {keys, key}
    else:
        keys.add(key)


def _index_drop(index: dict[str, str | set[str]], value: str, key: str) -> None:
    keys = index.get(value)
    if keys is None:
        return
    if isinstance(keys, str):
        if keys == key:
            del index[value]
        return
    keys.discard(key)
    if len(keys) == 1:
        index[value] = next(iter(keys))
    elif not keys:
        del index[value]


@dataclass(slots=True)
class HandlerRegistration:
    on_add: AddHandler | None
    on_update: UpdateHandler | None
    on_delete: DeleteHandler | None
    informer: Informer | None = None

    def remove(self) -> None:
        if self.informer is not None:
            self.informer.remove_handler(self)
            self.informer = None


class Informer:
    def __init__(self, client: Client, resource: str, *, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 indexers: Mapping[str, IndexFunc] | None = None, resync_period: float | None = None,
                 page_size: int = DEFAULT_PAGE_SIZE) -> None:
        rt = lookup_resource(resource)
        self.client = client
        self.resource = rt.key  # canonical: "ds" and "daemonsets.apps" are one resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.resync_period = resync_period
        self.page_size = page_size
        self._kind = rt.kind
        self._api_version = rt.api_version
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = {}
        # index name -> value -> the keys with that value: one key as a plain str (most values
        # index one object, e.g. pods by node: a set per value would cost ~200 bytes each), a set
        # from two keys on.
        self._indices: dict[str, dict[str, str | set[str]]] = {}
        self._handlers: tuple[HandlerRegistration, ...] = ()
        self._rv: str | None = None
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._resync_task: asyncio.Task[None] | None = None
        self._stopped = False
        # Counters for tests, diagnostics and metrics.
        self.lists = 0
        self.relists = 0
        self.watches = 0
        self.events = 0
        self.last_error: BaseException | None = None
        if indexers:
            self.add_indexers(indexers)

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        """Start the list/watch task (idempotent).  Must be called inside the running loop."""
        if self._task is None:
            self._stopped = False
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"informer:{self.resource}")
            if self.resync_period:
                self._resync_task = asyncio.get_running_loop().create_task(
                    self._resync_loop(self.resync_period), name=f"informer-resync:{self.resource}")
        return self._task

    @property
    def started(self) -> bool:
        return self._task is not None

    def stop(self) -> Awaitable[None]:
        """Cancel the informer's tasks.  The result may be awaited to wait until they have ended."""
        self._stopped = True
        tasks = [t for t in (self._task, self._resync_task) if t is not None]
        for t in tasks:
            t.cancel()
        self._task = self._resync_task = None

        async def _wait() -> None:
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t

        return asyncio.ensure_future(_wait())

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        """Wait until the first list has been loaded into the cache."""
        await self._synced.wait()

    @property
    def last_sync_resource_version(self) -> str | None:
        return self._rv

    # -- handlers --------------------------------------------------------------------------------

    def add_handler(self, on_add: AddHandler | None = None, on_update: UpdateHandler | None = None,
                    on_delete: DeleteHandler | None = None) -> HandlerRegistration:
        """Register handlers.  Objects already cached are delivered to ``on_add`` at once, as a
        shared informer does for late handlers."""
        reg = HandlerRegistration(on_add, on_update, on_delete, self)
        self._handlers = (*self._handlers, reg)
        if on_add is not None:
            for obj in list(self._items.values()):
                self._call(on_add, obj)
        return reg

    def remove_handler(self, reg: HandlerRegistration) -> None:
        self._handlers = tuple(h for h in self._handlers if h is not reg)

    @staticmethod
    def _call(fn: Callable[..., None], *args: Obj) -> None:
        try:
            fn(*args)
        except Exception:  # a faulty handler must not stop the informer
            log.exception("informer event handler %r failed", fn)

    # -- indexes ---------------------------------------------------------------------------------

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes (also after start: existing objects are indexed once, then incrementally)."""
        for name, fn in indexers.items():
            if name in self._indexers:
                if self._indexers[name] is fn:
                    continue
                raise ValueError(f"indexer {name!r} already exists")
            self._indexers[name] = fn
            index: dict[str, str | set[str]] = {}
            self._indices[name] = index
            for key, obj in self._items.items():
                for value in self._index_values(fn, obj):
                    _index_put(index, value, key)

    @staticmethod
    def _index_values(fn: IndexFunc, obj: Obj) -> Iterable[str]:
        try:
            return fn(obj) or ()
        except Exception:
            log.exception("index function %r failed", fn)
            return ()

    def _index_add(self, key: str, obj: Obj) -> None:
        for name, fn in self._indexers.items():
            index = self._indices[name]
            for value in self._index_values(fn, obj):
                _index_put(index, value, key)

    def _index_remove(self, key: str, obj: Obj) -> None:
        for name, fn in self._indexers.items():
            index = self._indices[name]
            for value in self._index_values(fn, obj):
                _index_drop(index, value, key)

    def _index_update(self, key: str, old: Obj, new: Obj) -> None:
        for name, fn in self._indexers.items():
            old_values = self._index_values(fn, old)
            new_values = self._index_values(fn, new)
            if old_values == new_values:
                continue
            index = self._indices[name]
            old_set, new_set = set(old_values), set(new_values)
            for value in old_set - new_set:
                _index_drop(index, value, key)
            for value in new_set - old_set:
                _index_put(index, value, key)

    # -- cache reads -----------------------------------------------------------------------------

    def get(self, key: str) -> Obj | None:
        """The cached object for ``namespace/name`` (or ``name`` when cluster-scoped)."""
        return self._items.get(key)

    def get_by_name(self, namespace: str, name: str) -> Obj | None:
        return self._items.get(f"{namespace}/{name}" if namespace else name)

    def list(self) -> builtins.list[Obj]:
        return list(self._items.values())

    def keys(self) -> builtins.list[str]:
        return list(self._items.keys())

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return True

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def by_index(self, index_name: str, value: str) -> builtins.list[Obj]:
        try:
            index = self._indices[index_name]
        except KeyError:
            raise KeyError(f"index {index_name!r} does not exist") from None
        keys = index.get(value)
        if not keys:
            return []
        items = self._items
        if type(keys) is str:
            return [items[keys]]
        return [items[k] for k in keys]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        try:
            keys = self._indices[index_name].get(value, ())
        except KeyError:
            raise KeyError(f"index {index_name!r} does not exist") from None
        return [keys] if type(keys) is str else list(keys)

    def index_values(self, index_name: str) -> builtins.list[str]:
        return list(self._indices[index_name])

    # -- cache writes (one event each) -----------------------------------------------------------

    def _typed(self, obj: Obj) -> Obj:
        if "kind" in obj and "apiVersion" in obj:
            return obj
        return {"apiVersion": self._api_version, "kind": self._kind, **obj}

    # The three below call each handler with its typed arguments (compiled: a vector call)
    # rather than through ``_call``'s ``*args`` (a tuple and a generic call per handler and event).

    def _on_added(self, key: str, obj: Obj) -> None:
        self._items[key] = obj
        self._index_add(key, obj)
        for h in self._handlers:
            on_add = h.on_add
            if on_add is not None:
                try:
                    on_add(obj)
                except Exception:  # a faulty handler must not stop the informer
                    log.exception("informer event handler %r failed", on_add)

    def _on_updated(self, key: str, old: Obj, new: Obj) -> None:
        self._items[key] = new
        self._index_update(key, old, new)
        for h in self._handlers:
            on_update = h.on_update
            if on_update is not None:
                try:
                    on_update(old, new)
                except Exception:
                    log.exception("informer event handler %r failed", on_update)

    def _on_deleted(self, key: str, last: Obj) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self._index_remove(key, old)
        for h in self._handlers:
            on_delete = h.on_delete
            if on_delete is not None:
                try:
                    on_delete(last)
                except Exception:
                    log.exception("informer event handler %r failed", on_delete)

    def _apply_event(self, etype: str, obj: Obj) -> None:
        if etype == "BOOKMARK":
            rv = _rv(obj)
            if rv:
                self._rv = rv
            return
        obj = self._typed(obj)
        key = key_of(obj)
        old = self._items.get(key)
        if etype in ("ADDED", "MODIFIED"):
            if old is None:
                self._on_added(key, obj)
            elif _rv(obj) is None or _rv(old) != _rv(obj):
                self._on_updated(key, old, obj)
            # else: a state already cached (a list page newer than its rv, then the watch from
            # that rv): nothing changed, nothing to deliver.
        elif etype == "DELETED":
            if old is not None:
                self._on_deleted(key, obj)
        else:
            log.warning("informer %s: unknown watch event type %r", self.resource, etype)
            return
        rv = _rv(obj)
        if rv:
            self._rv = rv

    def _replace(self, items: builtins.list[Obj], rv: str | None) -> None:
        """Make the cache equal to a fresh list, delivering only the differences."""
        fresh: dict[str, Obj] = {}
        for item in items:
            item = self._typed(item)
            fresh[key_of(item)] = item
        for key, old in list(self._items.items()):
            if key not in fresh:
                self._on_deleted(key, old)
        for key, obj in fresh.items():
            cached = self._items.get(key)
            if cached is None:
                self._on_added(key, obj)
            elif cached is not obj and _rv(cached) != _rv(obj):
                self._on_updated(key, cached, obj)
        self._rv = rv
        self._synced.set()

    # -- the reflector ---------------------------------------------------------------------------

    async def _list(self) -> tuple[builtins.list[Obj], str | None]:
        items: builtins.list[Obj] = []
        rv: str | None = None
        cont: str | None = None
        while True:
            try:
                page: Obj | None = await self.client.list(self.resource, namespace=self.namespace,
                                                          label_selector=self.label_selector,
                                                          field_selector=self.field_selector,
                                                          limit=self.page_size or None, continue_token=cont)
            except ApiError as exc:
                if exc.code != 410 or cont is None:
                    raise
                page = None  # listed again below, outside the handler (no await in one: see _watch)
            if page is None:
                log.info("informer %s: continue token expired; listing without pagination", self.resource)
                page = await self.client.list(self.resource, namespace=self.namespace,
                                              label_selector=self.label_selector,
                                              field_selector=self.field_selector)
                md = page.get("metadata") or {}
                return list(page.get("items") or ()), md.get("resourceVersion")
            md = page.get("metadata") or {}
            if rv is None:
                rv = md.get("resourceVersion")
            items.extend(page.get("items") or ())
            cont = md.get("continue") or None
            if not cont:
                return items, rv

    async def _watch(self) -> int:
        """One watch from the current rv until the stream ends; returns the number of events.

        The stream is closed after the loop, the failure (if any) held and raised again, rather
        than in a ``finally``: this module is compiled, and mypyc's ``finally`` around an
        ``await`` leaves the exception it handled in ``sys.exc_info()`` and, on the way out of
        any later such ``finally``, raises whatever ``sys.exc_info()`` holds — a 410 of a watch
        long gone turned a clean end of the stream into a relist (compiled.py)."""
        self.watches += 1
        count = 0
        stream = self.client.watch(self.resource, namespace=self.namespace, label_selector=self.label_selector,
                                   field_selector=self.field_selector, resource_version=self._rv,
                                   allow_bookmarks=True,
                                   timeout_seconds=random.randint(MIN_WATCH_TIMEOUT, 2 * MIN_WATCH_TIMEOUT - 1))
        failure: BaseException | None = None
        try:
            async for ev in stream:
                count += 1
                self.events += 1
                self._apply_event(ev.get("type", ""), ev.get("object") or {})
        except BaseException as exc:  # cancellation too: the stream is closed first, below
            failure = exc
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
        if failure is not None:
            raise failure
        return count

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        need_list = True
        backoff = BACKOFF_INITIAL
        while not self._stopped:
            delay = 0.0
            try:
                if need_list:
                    items, rv = await self._list()
                    self.lists += 1
                    if self._synced.is_set():
                        self.relists += 1
                    self._replace(items, rv)
                    need_list = False
                started = loop.time()
                n = await self._watch()
                backoff = BACKOFF_INITIAL
                if n == 0 and loop.time() - started < 1.0:
                    delay = BACKOFF_INITIAL  # "very short watch": do not spin against the server
            except asyncio.CancelledError:
                raise
            except ApiError as exc:
                self.last_error = exc
                need_list = True
                if exc.code == 410:
                    log.info("informer %s: %s; relisting", self.resource, exc.message)
                else:
                    log.warning("informer %s: %r; relisting in %.1fs", self.resource, exc, backoff)
                    delay, backoff = backoff, min(backoff * 2, BACKOFF_MAX)
            except Exception as exc:  # broken stream, connection refused, timeouts ...
                self.last_error = exc
                need_list = True
                log.warning("informer %s: watch failed (%r); relisting in %.1fs", self.resource, exc, backoff)
                delay, backoff = backoff, min(backoff * 2, BACKOFF_MAX)
            if delay:
                await asyncio.sleep(delay * (1.0 + random.random() * 0.1))

    async def _resync_loop(self, period: float) -> None:
        while not self._stopped:
            await asyncio.sleep(period)
            if not self._synced.is_set():
                continue
            for obj in list(self._items.values()):
                for h in self._handlers:
                    if h.on_update is not None:
                        self._call(h.on_update, obj, obj)

    def __repr__(self) -> str:
        return (f"Informer({self.resource!r}, namespace={self.namespace!r}, items={len(self._items)}, "
                f"synced={self.has_synced}, rv={self._rv!r})")


class SharedInformerFactory:
    """One informer per (resource, namespace, label selector, field selector), shared by every
    component in the process (DESIGN.md: one informer per kind, not one watch per consumer).

    ``namespace`` scopes the factory as client-go's ``WithNamespace`` does: an informer of a
    namespaced resource asked for without a namespace watches that one only (``everynode
    controller --namespace``); cluster-scoped resources are watched whole.  An option rather than
    a subclass: this module is compiled, and a compiled class has no interpreted subclasses."""

    def __init__(self, client: Client, *, resync_period: float | None = None,
                 page_size: int = DEFAULT_PAGE_SIZE, namespace: str | None = None) -> None:
        self.client = client
        self.resync_period = resync_period
        self.page_size = page_size
        self.namespace = namespace
        self._informers: dict[tuple[str, str | None, str | None, str | None], Informer] = {}

    def informer(self, resource: str, *, namespace: str | None = None, label_selector: str | None = None,
                 field_selector: str | None = None, indexers: Mapping[str, IndexFunc] | None = None) -> Informer:
        rt = lookup_resource(resource)
        if namespace is None and self.namespace is not None and rt.namespaced:
            namespace = self.namespace
        key = (rt.key, namespace or None, label_selector or None, field_selector or None)
        inf = self._informers.get(key)
        if inf is None:
            inf = Informer(self.client, resource, namespace=namespace, label_selector=label_selector,
                           field_selector=field_selector, indexers=indexers, resync_period=self.resync_period,
                           page_size=self.page_size)
            self._informers[key] = inf
        elif indexers:
            inf.add_indexers(indexers)
        return inf

    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    def start(self) -> None:
        """Start every informer not yet started (call again after creating more)."""
        for inf in self._informers.values():
            if not inf.started:
                inf.start()

    async def wait_for_sync(self) -> None:
        await asyncio.gather(*(inf.wait_synced() for inf in self._informers.values()))

    async def stop(self) -> None:
        waits = [inf.stop() for inf in self._informers.values() if inf.started]
        for w in waits:
            await w


def informer_key(obj: Obj) -> str:
    """The cache key of an object (``namespace/name`` or ``name``)."""
    return key_of(obj)


__all__ = [
    "NAMESPACE_INDEX",
    "HandlerRegistration",
    "Informer",
    "SharedInformerFactory",
    "index_by_namespace",
    "informer_key",
]

