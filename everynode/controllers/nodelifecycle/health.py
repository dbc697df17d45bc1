"""Node health: what the monitor records per node and how a silent node is marked.

Upstream: ``node_lifecycle_controller.go`` (``nodeHealthData``, ``tryUpdateNodeHealth``'s
Unknown conditions) and ``pkg/controller/nodelifecycle`` reading ``kube-node-lease`` Leases.
Kept apart from the monitor because these are the data and the one pure rule (which conditions
turn Unknown, with which reason) that the monitor, the controller and the simulation seam
(:class:`HeartbeatModel`, implemented by the kubelet simulation) share; the monitor's module is
about *when* to look, this one about *what* is recorded and written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from everynode.api.meta import deep_copy
from everynode.clock import parse_rfc3339

Obj = dict[str, Any]

LEASE_NAMESPACE = "kube-node-lease"
UNKNOWN_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


def mark_unknown(node: Obj, *, now: str) -> Obj:
    """A copy of ``node`` with the kubelet-owned conditions set to Unknown (``tryUpdateNodeHealth``)."""
    updated = deep_copy(node)
    status = updated.get("status")
    if not isinstance(status, dict):
        status = updated["status"] = {}
    conds = status.get("conditions")
    if not isinstance(conds, list):
        conds = status["conditions"] = []
    by_type = {c.get("type"): c for c in conds}
    for ctype in UNKNOWN_CONDITIONS:
        cond = by_type.get(ctype)
        if cond is None:
            conds.append({"type": ctype, "status": "Unknown", "lastHeartbeatTime":
                          node["metadata"].get("creationTimestamp"), "lastTransitionTime": now,
                          "reason": "NodeStatusNeverUpdated", "message": "Kubelet never posted node status."})
        elif cond.get("status") != "Unknown":
            cond.update(status="Unknown", reason="NodeStatusUnknown",
                        message="Kubelet stopped posting node status.", lastTransitionTime=now)
    return updated



def renew_time(lease: Obj) -> float | None:
    """A Lease's ``spec.renewTime`` in epoch seconds (None: unset or unreadable)."""
    text = (lease.get("spec") or {}).get("renewTime")
    if not text:
        return None
    try:
        return parse_rfc3339(text)
    except ValueError:
        return None



class HeartbeatModel(Protocol):
    """Simulated kubelets whose Lease renewals are modelled instead of written (see the module
    docstring); the kubelet simulation implements it."""

    def renewing(self, name: str) -> bool:
        """The node's kubelet renews its Lease (so the node is fresh)."""

    def last_renewal(self, name: str) -> float | None:
        """Loop time of the last renewal of a kubelet that stopped renewing (None: unknown)."""

    def subscribe_stops(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(name)`` whenever a node's kubelet stops renewing."""



@dataclass(slots=True)
class NodeHealth:
    probe: float  # controller monotonic time of the last observed heartbeat or lease renewal
    heartbeat: str | None = None  # Ready.lastHeartbeatTime last observed
    lease_renew: float | None = None  # Lease spec.renewTime last observed (epoch seconds)
    deadline: float | None = None  # the node's live entry in the deadline heap (probe + grace)
    name: str = ""
    # Before the running pass observed a renewal (undone if the pass is interrupted before the
    # node; kept here rather than in per-renewal tuples, which would feed the cyclic GC).
    saved_probe: float = 0.0
    saved_renew: float | None = None
    saved_pass: int = -1  # the pass that saved them


__all__ = ["LEASE_NAMESPACE", "UNKNOWN_CONDITIONS", "HeartbeatModel", "NodeHealth", "mark_unknown", "renew_time"]
