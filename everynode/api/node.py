"""Node helpers: the well-known taint keys and the Ready condition.

Upstream: ``staging/src/k8s.io/api/core/v1/well_known_taints.go`` (the taint keys the node
lifecycle controller, the scheduler and the DaemonSet controller agree on) and
``pkg/api/v1/node`` / ``pkg/controller/util/node`` (``GetNodeCondition``, "is the node Ready").
One home for them: a key spelled twice is a key that can drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from everynode.api.meta import field_of

Obj = dict[str, Any]

# well_known_taints.go
TAINT_NODE_NOT_READY: Final = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE: Final = "node.kubernetes.io/unreachable"
TAINT_NODE_UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"
TAINT_NODE_MEMORY_PRESSURE: Final = "node.kubernetes.io/memory-pressure"
TAINT_NODE_DISK_PRESSURE: Final = "node.kubernetes.io/disk-pressure"
TAINT_NODE_NETWORK_UNAVAILABLE: Final = "node.kubernetes.io/network-unavailable"
TAINT_NODE_PID_PRESSURE: Final = "node.kubernetes.io/pid-pressure"
TAINT_NODE_OUT_OF_SERVICE: Final = "node.kubernetes.io/out-of-service"


def node_condition(node: Mapping[str, Any], type_: str) -> Obj | None:
    """``GetNodeCondition``: the node's condition of that type, or None."""
    for cond in field_of(node.get("status"), "conditions") or ():
        if cond.get("type") == type_:
            return cond
    return None


def is_node_ready(node: Mapping[str, Any]) -> bool:
    """The node's Ready condition is ``True`` (False, Unknown and absent are not Ready)."""
    cond = node_condition(node, "Ready")
    return cond is not None and cond.get("status") == "True"


def ready_status(node: Mapping[str, Any]) -> str | None:
    """The status of the node's Ready condition — "True", "False" or "Unknown" (a condition
    without a status reads as Unknown) — or None when the node never posted one."""
    cond = node_condition(node, "Ready")
    return cond.get("status", "Unknown") if cond is not None else None


def has_taint(node: Mapping[str, Any], key: str, effect: str) -> bool:
    """The node carries a taint with this key and effect."""
    return any(t.get("key") == key and t.get("effect") == effect
               for t in field_of(node.get("spec"), "taints") or ())


def has_taint_key(node: Mapping[str, Any], key: str) -> bool:
    """The node carries a taint with this key (any value, any effect)."""
    return any(t.get("key") == key for t in field_of(node.get("spec"), "taints") or ())
