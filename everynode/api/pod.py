"""Pod helpers every layer asks: is the pod Ready, since when, is it available, is it terminal.

Upstream: ``pkg/api/v1/pod/util.go`` (``GetPodReadyCondition``, ``IsPodReady``,
``IsPodAvailable``) and ``pkg/apis/core/helper`` (terminal phases).  One home for them, so the
DaemonSet controller, the endpoints controllers, the kubelet simulation and the CLI cannot drift
apart on what "ready" means.  Pure: "now" is an argument.

Timestamps are parsed once per distinct text (a bounded memo): a rollout over N nodes asks for
the same Ready transition times again and again, and RFC 3339 parsing is the costly part.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from everynode.api.meta import field_of
from everynode.clock import parse_rfc3339
from everynode.memo import remember

Obj = Mapping[str, Any]  # read-only: any JSON-shaped object

TERMINAL_PHASES: Final = ("Succeeded", "Failed")

_EPOCH_CACHE: Final[dict[str, float]] = {}


def timestamp_seconds(text: str) -> float:
    """An RFC 3339 timestamp as seconds since the epoch (memoised)."""
    value = _EPOCH_CACHE.get(text)
    if value is None:
        value = remember(_EPOCH_CACHE, text, parse_rfc3339(text), limit=100_000)
    return value


def pod_ready_condition(pod: Obj) -> Obj | None:
    """``GetPodReadyCondition``: the pod's ``Ready`` condition, or None.  (Read with
    :func:`~everynode.api.meta.field_of`: every controller asks this of every pod event.)"""
    for cond in field_of(field_of(pod, "status"), "conditions") or ():
        if field_of(cond, "type") == "Ready":
            return cond
    return None


def is_pod_ready(pod: Obj) -> bool:
    """``IsPodReady``: the Ready condition is ``True``."""
    cond = pod_ready_condition(pod)
    return cond is not None and field_of(cond, "status") == "True"


def is_pod_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    """``IsPodAvailable``: Ready, and Ready since *strictly* more than ``min_ready_seconds``."""
    cond = pod_ready_condition(pod)
    if cond is None or cond.get("status") != "True":
        return False
    if not min_ready_seconds:
        return True
    since = cond.get("lastTransitionTime")
    if not since:
        return False
    return timestamp_seconds(since) + min_ready_seconds < now


def available_at(pod: Obj, min_ready_seconds: int) -> float | None:
    """When a Ready pod becomes available (None if it is not Ready or has no transition time)."""
    cond = pod_ready_condition(pod)
    if cond is None or cond.get("status") != "True":
        return None
    since = cond.get("lastTransitionTime")
    return timestamp_seconds(since) + min_ready_seconds if since else None


def is_pod_terminal(pod: Obj) -> bool:
    """Phase ``Succeeded`` or ``Failed``: no container will run again."""
    return field_of(pod.get("status"), "phase") in TERMINAL_PHASES
