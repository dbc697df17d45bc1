"""Waiting for an object's state, as ``kubectl rollout status`` and ``kubectl wait`` do.

The predicates are kubectl's rules, as pure functions of one object:

* :func:`rolled_out` — ``kubectl rollout status daemonset/NAME``'s DaemonSet status viewer: the
  controller has observed the current generation, every desired pod is of the update revision
  and available.  Like kubectl it refuses an ``OnDelete`` DaemonSet (nothing rolls out there
  until pods are deleted).
* :func:`has_condition` / :func:`ready` — ``kubectl wait --for=condition=Ready``: the object's
  condition of that type has status ``True`` (pods, nodes).  A DaemonSet has no conditions; for
  it "ready" means what kubectl's READY column shows complete: every desired pod Ready, as
  observed for the current generation.

:func:`wait_for` watches the one object (a field-selected watch from the resourceVersion of a
first GET) instead of polling: nothing is read while nothing changes, and on a virtual-time loop
the clock can jump straight to the next event.  The timeout is in the loop's seconds (simulated
seconds in virtual time).  A watch that expires (410) or ends is resumed with a fresh GET.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from everynode.api.errors import ApiError
from everynode.client.base import Client, resolve_resource

Obj = dict[str, Any]
Condition = Callable[[Obj], bool]

ON_DELETE_MESSAGE = "rollout status is only available for RollingUpdate strategy type"


def _observed(obj: Obj) -> bool:
    status = obj.get("status") or {}
    return int((obj.get("metadata") or {}).get("generation") or 0) <= int(status.get("observedGeneration") or 0)


def rolled_out(ds: Obj) -> bool:
    """kubectl's DaemonSet rollout rule; ``ValueError`` (kubectl's words) for ``OnDelete``."""
    strategy = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("type") or "RollingUpdate"
    if strategy != "RollingUpdate":
        raise ValueError(ON_DELETE_MESSAGE)
    status = ds.get("status") or {}
    desired = int(status.get("desiredNumberScheduled") or 0)
    return (_observed(ds) and int(status.get("updatedNumberScheduled") or 0) >= desired
            and int(status.get("numberAvailable") or 0) >= desired)


def has_condition(obj: Obj, condition_type: str, status: str = "True") -> bool:
    """``kubectl wait --for=condition=TYPE[=STATUS]``."""
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == condition_type:
            return bool(cond.get("status") == status)
    return False


def ready(obj: Obj) -> bool:
    """A Pod or Node with ``Ready=True``; a DaemonSet with every desired pod Ready."""
    if obj.get("kind") == "DaemonSet":
        status = obj.get("status") or {}
        return _observed(obj) and int(status.get("numberReady") or 0) >= int(status.get("desiredNumberScheduled") or 0)
    return has_condition(obj, "Ready")


async def wait_for(client: Client, resource: str, name: str, condition: Condition, *, namespace: str = "",
                   timeout: float = 60.0) -> Obj:
    """The object once ``condition(object)`` holds; ``TimeoutError`` after ``timeout`` seconds.

    A missing object is waited for too (it may be about to be created)."""
    rt = resolve_resource(resource)
    namespace = namespace if rt.namespaced else ""
    try:
        async with asyncio.timeout(timeout):
            while True:
                try:
                    obj = await client.get(rt.key, name, namespace=namespace)
                    rv = obj["metadata"].get("resourceVersion")
                    if condition(obj):
                        return obj
                except ApiError as e:
                    if e.code != 404:
                        raise
                    rv = None
                try:
                    async for event in client.watch(rt.key, namespace=namespace or None,
                                                    field_selector=f"metadata.name={name}",
                                                    resource_version=rv, allow_bookmarks=False):
                        if event["type"] in ("ADDED", "MODIFIED") and condition(event["object"]):
                            return event["object"]
                except ApiError as e:
                    if e.code != 410:
                        raise
    except TimeoutError:
        where = f" in namespace {namespace}" if namespace else ""
        raise TimeoutError(f"timed out after {timeout:g}s waiting for {rt.key} {name}{where}") from None
