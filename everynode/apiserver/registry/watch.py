"""Watch streaming for every resource: the initial events, the store's events in batches,
bookmarks, the timeout, and the wait for a future resourceVersion.

Why batches: events that were ready together go out in one transport write (the HTTP layer
encodes each event once, in the store's shared ``encoded`` cache, for every watcher); flattened,
the batches are exactly the events.  Upstream: ``staging/src/k8s.io/apiserver/pkg/storage/
cacher`` (``waitUntilFreshAndBlock``, bookmarks, ``sendInitialEvents`` with the
``k8s.io/initial-events-end`` bookmark) and ``endpoints/handlers/watch.go`` (the timeout of
``--min-request-timeout`` × [1, 2) when the client gives none).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from everynode.api import errors
from everynode.api import meta as apimeta
from everynode.api.registry import ResourceType
from everynode.apiserver.registry.context import ServerContext
from everynode.apiserver.registry.options import (
    check_watch_options,
    parse_rv,
    selection_predicate,
    too_large_rv,
)
from everynode.storage.base import ExpiredError, Predicate, WatchEvent
from everynode.storage.watch import StoreWatcher

Obj = dict[str, Any]
Batch = list[WatchEvent]
"""Events that were ready together, in order (sent in one transport write)."""
Batches = AsyncGenerator[Batch, None]
"""A watch in batches; ``aclose()`` ends it at once (a transport whose client went away)."""

MIN_WATCH_TIMEOUT = 1800.0  # --min-request-timeout; an unbounded watch ends after 1-2× this
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
INITIAL_EVENTS_BATCH = 256  # synthetic ADDED events per watch batch (bounds one write's size)
FRESHNESS_WAIT = 3.0  # cacher.go: blockTimeout, how long a watch waits for a future resourceVersion
FRESHNESS_POLL = 0.05


def watch_batches(ctx: ServerContext, rt: ResourceType, namespace: str | None, *,
                  label_selector: str | None = None, field_selector: str | None = None,
                  resource_version: str | None = None, allow_bookmarks: bool = False,
                  send_initial_events: bool | None = None, timeout_seconds: float | None = None,
                  resource_version_match: str | None = None) -> Batches:
    """A watch in batches: each item is a non-empty list of the events that were ready together
    (in order).  Bad selectors and options raise ApiError here, before any event; a
    resourceVersion older than the history window yields one ERROR event (410 Expired) and ends,
    as upstream streams it."""
    predicate, _ = selection_predicate(rt, label_selector, field_selector)
    check_watch_options(resource_version_match, send_initial_events)
    requested = parse_rv(resource_version)
    if send_initial_events is None:
        initial = requested is None or requested == 0
    else:
        initial = send_initial_events
    if timeout_seconds is None or timeout_seconds <= 0:
        timeout_seconds = MIN_WATCH_TIMEOUT * (1 + random.random())
    ns = namespace if rt.namespaced else None
    return _stream(ctx, rt, ns, predicate, requested, initial,
                   bool(allow_bookmarks and send_initial_events), allow_bookmarks, float(timeout_seconds))


async def wait_for_resource_version(ctx: ServerContext, resource_version: str | None) -> None:
    """A watch from a resourceVersion the store has not reached yet waits for it up to
    :data:`FRESHNESS_WAIT` seconds (the cacher's ``waitUntilFreshAndBlock``), then fails with
    504 ``Too large resource version``.  Called before the watch stream starts, so the
    client gets the Status as the response, not as a stream event."""
    requested = parse_rv(resource_version)
    if requested is None:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + FRESHNESS_WAIT
    while (current := ctx.store.current_rv()) < requested:
        if loop.time() >= deadline:
            raise too_large_rv(requested, current)
        await asyncio.sleep(FRESHNESS_POLL)


async def _stream(ctx: ServerContext, rt: ResourceType, ns: str | None, predicate: Predicate | None,
                  requested: int | None, initial: bool, end_bookmark: bool, bookmarks: bool,
                  timeout: float) -> Batches:
    await ctx.ready()
    store = ctx.store
    initial_items: list[Obj] = []
    try:
        if initial:
            # List and open the watch with no await in between: nothing can slip through.
            result = store.list(rt.key, namespace=ns, predicate=predicate)
            initial_items = result.items
            since = result.rv
            watch = store.watch(rt.key, namespace=ns, predicate=predicate, since_rv=since)
        else:
            since = requested if requested else store.current_rv()
            watch = store.watch(rt.key, namespace=ns, predicate=predicate, since_rv=since)
    except ExpiredError as e:
        yield [WatchEvent("ERROR", errors.gone(str(e)).status, 0, rt.key)]
        return
    loop = asyncio.get_running_loop()
    timer = loop.call_later(timeout, watch.stop)
    try:
        for start in range(0, len(initial_items), INITIAL_EVENTS_BATCH):
            yield [WatchEvent("ADDED", obj, apimeta.resource_version(obj), rt.key)
                   for obj in initial_items[start:start + INITIAL_EVENTS_BATCH]]
        initial_items = []
        if end_bookmark:
            yield [bookmark(rt, since, initial_end=True)]
        if not isinstance(watch, StoreWatcher):  # a Watch that only iterates (a custom resource's view)
            async for event in _with_bookmarks(watch, ctx, rt, bookmarks):
                yield [event]
            return
        wait, wait_until, drain = watch.wait, watch.wait_until, watch.drain
        if not bookmarks:
            while True:
                await wait()
                batch = drain()
                if not batch:
                    return  # stopped
                yield batch
        interval = ctx.bookmark_interval
        next_bookmark = loop.time() + interval
        while True:
            await wait_until(next_bookmark)
            batch = drain()
            if batch:
                yield batch
                continue
            if watch.stopped:
                return
            # Nothing queued and the deadline passed (a stale wake-up just loops).
            if loop.time() >= next_bookmark:
                next_bookmark = loop.time() + interval
                yield [bookmark(rt, store.current_rv())]
    finally:
        timer.cancel()
        watch.stop()


def bookmark(rt: ResourceType, rv: int, *, initial_end: bool = False) -> WatchEvent:
    md: Obj = {"resourceVersion": str(rv)}
    if initial_end:
        md["annotations"] = {INITIAL_EVENTS_END: "true"}
    return WatchEvent("BOOKMARK", {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": md}, rv, rt.key)


async def one_by_one(batches: Batches) -> AsyncIterator[WatchEvent]:
    """The events of a batched watch one at a time; closing it closes the batches at once."""
    try:
        async for batch in batches:
            for event in batch:
                yield event
    finally:
        await batches.aclose()


async def _with_bookmarks(watch: Any, ctx: ServerContext, rt: ResourceType,
                          bookmarks: bool) -> AsyncIterator[WatchEvent]:
    """Events of a Watch that offers only iteration, with a bookmark after each quiet interval."""
    iterator = watch.__aiter__()
    if not bookmarks:
        async for event in iterator:
            yield event
        return
    loop = asyncio.get_running_loop()
    next_bookmark = loop.time() + ctx.bookmark_interval
    pending: asyncio.Future[WatchEvent] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(iterator.__anext__())
            delay = next_bookmark - loop.time()
            done = (await asyncio.wait((pending,), timeout=delay))[0] if delay > 0 else set()
            if pending in done:
                try:
                    event = pending.result()
                except StopAsyncIteration:
                    return
                pending = None
                yield event
                continue
            next_bookmark = loop.time() + ctx.bookmark_interval
            yield bookmark(rt, ctx.store.current_rv())
    finally:
        if pending is not None:
            pending.cancel()
