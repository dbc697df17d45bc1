"""Whether a simulated kubelet admits a pod bound to its node: the node-pressure rule (pure).

Upstream's kubelet runs admit handlers on every pod it is given before starting it; a refused
pod is not started but failed (``rejectPod``: phase ``Failed``, the handler's reason, message
``Pod was rejected: …``, a Warning event of that reason).  The one handler whose answer depends
on what the node reports is the eviction manager's (``pkg/kubelet/eviction``, ``Admit``): on a
node under pressure only critical pods are admitted (``IsCriticalPod``: static and mirror pods,
priority at least ``system-cluster-critical``'s 2,000,000,000), except that memory pressure
alone still admits pods that are not BestEffort, and BestEffort ones that tolerate the
``memory-pressure`` taint — refused: ``Evicted``, ``The node had condition: [DiskPressure]. ``.

The pressure is the kubelet's own reading, i.e. the conditions it reports
(:func:`everynode.kubelet.podstatus.node_conditions`, read through ``reported_pressures``): a simulated kubelet that reports a
healthy node admits every pod, one that keeps a node's status as found (``plan``'s copy of a
cluster) refuses what the cluster's kubelet would refuse — so a DaemonSet that is not critical
fails, is replaced after the controller's back-off and fails again on a node under disk
pressure, as in the cluster.  The resource and affinity handlers are not repeated here: the
scheduler and the DaemonSet controller already place pods only where they fit.
"""

from __future__ import annotations

from typing import Any

from everynode.api.node import TAINT_NODE_MEMORY_PRESSURE
from everynode.api.scheduling import tolerations_tolerate_taint
from everynode.kubelet.podstatus import reported_pressures

Obj = dict[str, Any]

EVICTED = "Evicted"  # eviction.Reason
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000  # scheduling.SystemCriticalPriority
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
SOURCE_ANNOTATION = "kubernetes.io/config.source"
_MEMORY_PRESSURE_TAINT = {"key": TAINT_NODE_MEMORY_PRESSURE, "effect": "NoSchedule"}


def is_critical(pod: Obj) -> bool:
    """``IsCriticalPod``: a static or mirror pod, or one of system-critical priority."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if MIRROR_ANNOTATION in annotations or annotations.get(SOURCE_ANNOTATION, "api") != "api":
        return True
    priority = (pod.get("spec") or {}).get("priority")
    return isinstance(priority, int) and priority >= SYSTEM_CRITICAL_PRIORITY


def pressure_refusal(pod: Obj, node: Obj) -> str | None:
    """The eviction manager's refusal message for ``pod`` on ``node``, or None when admitted."""
    pressures = reported_pressures(node)
    if not pressures or is_critical(pod):
        return None
    if pressures == ["MemoryPressure"]:
        if (pod.get("status") or {}).get("qosClass") != "BestEffort":
            return None
        if tolerations_tolerate_taint((pod.get("spec") or {}).get("tolerations"), _MEMORY_PRESSURE_TAINT):
            return None
    return f"The node had condition: [{' '.join(pressures)}]. "


def rejected_status(message: str) -> Obj:
    """The status the kubelet writes for a pod it refuses (``rejectPod``)."""
    return {"phase": "Failed", "reason": EVICTED, "message": f"Pod was rejected: {message}"}


__all__ = ["EVICTED", "is_critical", "pressure_refusal", "rejected_status"]
