"""The node lifecycle controller's taint rules, as pure functions of a node.

Upstream: ``node_lifecycle_controller.go`` (``doNoScheduleTaintingPass``, the
``nodeConditionToTaintKeyStatusMap``, ``markNodeForTainting`` / ``SwapNodeControllerTaint``).
Kept apart from the controller because these are the decisions (which taints a node must carry
for its conditions) while the controller only schedules and writes them: a table test covers
every row here without an API (tests/unit/test_nodelifecycle_pure.py).  The keys themselves are
the api layer's (:mod:`everynode.api.node`), shared with the scheduler and the DaemonSet
controller.
"""

from __future__ import annotations

from typing import Any

from everynode.api.node import (
    TAINT_NODE_DISK_PRESSURE,
    TAINT_NODE_MEMORY_PRESSURE,
    TAINT_NODE_NETWORK_UNAVAILABLE,
    TAINT_NODE_NOT_READY,
    TAINT_NODE_PID_PRESSURE,
    TAINT_NODE_UNREACHABLE,
    TAINT_NODE_UNSCHEDULABLE,
)

Obj = dict[str, Any]

NOT_READY = TAINT_NODE_NOT_READY
UNREACHABLE = TAINT_NODE_UNREACHABLE
UNSCHEDULABLE = TAINT_NODE_UNSCHEDULABLE
CONDITION_TAINTS: dict[tuple[str, str], str] = {
    ("Ready", "False"): NOT_READY,
    ("Ready", "Unknown"): UNREACHABLE,
    ("MemoryPressure", "True"): TAINT_NODE_MEMORY_PRESSURE,
    ("DiskPressure", "True"): TAINT_NODE_DISK_PRESSURE,
    ("PIDPressure", "True"): TAINT_NODE_PID_PRESSURE,
    ("NetworkUnavailable", "True"): TAINT_NODE_NETWORK_UNAVAILABLE,
}
MANAGED_NOSCHEDULE_KEYS = frozenset(CONDITION_TAINTS.values()) | {UNSCHEDULABLE}
NOEXECUTE_KEYS = (NOT_READY, UNREACHABLE)


def desired_noschedule_keys(node: Obj) -> set[str]:
    """The managed NoSchedule taint keys the node's conditions and cordon call for."""
    keys = set()
    by_type = {c.get("type", ""): c for c in (node.get("status") or {}).get("conditions") or ()}
    for ctype, cond in by_type.items():
        key = CONDITION_TAINTS.get((ctype, cond.get("status", "")))
        if key:
            keys.add(key)
    if (node.get("spec") or {}).get("unschedulable"):
        keys.add(UNSCHEDULABLE)
    return keys


def reconcile_noschedule_taints(node: Obj, *, now: str) -> list[Obj] | None:
    """The node's taints with the managed NoSchedule ones matching its state, or None when they
    already match.  Kept taints stay as they are; added ones carry ``timeAdded``."""
    taints = (node.get("spec") or {}).get("taints") or []
    want = desired_noschedule_keys(node)

    def managed(t: Obj) -> bool:
        return t.get("effect") == "NoSchedule" and t.get("key") in MANAGED_NOSCHEDULE_KEYS

    have = {t.get("key") for t in taints if managed(t)}
    if want == have:
        return None
    kept = [t for t in taints if not managed(t) or t.get("key") in want]
    return kept + [{"key": k, "effect": "NoSchedule", "timeAdded": now} for k in sorted(want - have)]


def swap_noexecute_taint(taints: list[Obj], key: str | None, *, now: str) -> list[Obj] | None:
    """Taints with exactly ``key`` (or neither, for None) among not-ready/unreachable NoExecute;
    None when nothing changes."""
    def managed(t: Obj) -> bool:
        return t.get("effect") == "NoExecute" and t.get("key") in NOEXECUTE_KEYS

    have = {t.get("key") for t in taints if managed(t)}
    if have == ({key} if key else set()):
        return None
    kept = [t for t in taints if not managed(t) or t.get("key") == key]
    if key is not None and key not in have:
        kept.append({"key": key, "effect": "NoExecute", "timeAdded": now})
    return kept


__all__ = [
    "CONDITION_TAINTS",
    "MANAGED_NOSCHEDULE_KEYS",
    "NOEXECUTE_KEYS",
    "NOT_READY",
    "UNREACHABLE",
    "UNSCHEDULABLE",
    "desired_noschedule_keys",
    "reconcile_noschedule_taints",
    "swap_noexecute_taint",
]
