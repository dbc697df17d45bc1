"""The in-process client's watch stream, in a module of its own because it is an async generator.

Why: the in-process client runs compiled (compiled.py), and this mypyc does not compile async
generators; the stream stays here, in source, and the client returns it.  It flattens the
service's batches itself, one async generator fewer for every event an informer takes in than
``ApiService.watch``, which flattens them through one more.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from everynode.api import errors
from everynode.api.errors import ApiError
from everynode.api.registry import ResourceType
from everynode.storage.base import ExpiredError

Obj = dict[str, Any]


async def watch_events(service: Any, rt: ResourceType, namespace: str | None, *, label_selector: str | None,
                       field_selector: str | None, resource_version: str | None, allow_bookmarks: bool,
                       timeout_seconds: int | None, send_initial_events: bool | None) -> AsyncIterator[Obj]:
    """``Client.watch``'s events from ``service`` (an ``ApiService``): an ERROR event, or a
    resourceVersion older than the history window, is raised as an ApiError (410 Gone)."""
    try:
        events = service.watch_batches(
            rt, namespace, label_selector=label_selector, field_selector=field_selector,
            resource_version=resource_version, allow_bookmarks=allow_bookmarks,
            send_initial_events=send_initial_events, timeout_seconds=timeout_seconds,
            resource_version_match="NotOlderThan" if send_initial_events else None)
    except ExpiredError as exc:
        raise errors.gone(str(exc)) from None
    try:
        async for batch in events:
            for ev in batch:
                if ev.type == "ERROR":
                    raise ApiError(ev.object)
                yield {"type": ev.type, "object": ev.object}
    except ExpiredError as exc:
        raise errors.gone(str(exc)) from None
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
        else:
            stop = getattr(events, "stop", None)
            if stop is not None:
                stop()
