"""The simulated kubelet's admission of a pod on a node under pressure (everynode.kubelet.admission),
upstream's eviction manager ``Admit`` as a table."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.kubelet import admission, podstatus

MEMORY = "MemoryPressure"
DISK = "DiskPressure"
PID = "PIDPressure"


def _node(*pressures: str, kept: bool = True) -> dict[str, Any]:
    annotations = {podstatus.NODE_STATUS_ANNOTATION: podstatus.KEPT} if kept else {}
    return {"metadata": {"name": "w1", "annotations": annotations},
            "status": {"conditions": [{"type": t, "status": "True", "reason": "R"} for t in pressures]}}


def _pod(*, qos: str = "Burstable", priority: int = 0, tolerates_memory: bool = False,
         annotations: dict[str, str] | None = None) -> dict[str, Any]:
    tolerations = [{"key": "node.kubernetes.io/memory-pressure", "operator": "Exists",
                    "effect": "NoSchedule"}] if tolerates_memory else []
    return {"metadata": {"name": "p", "annotations": annotations or {}},
            "spec": {"priority": priority, "tolerations": tolerations}, "status": {"qosClass": qos}}


@pytest.mark.parametrize(("node", "pod", "refusal"), [
    (_node(), _pod(qos="BestEffort"), None),
    (_node(MEMORY), _pod(), None),  # memory pressure alone admits what is not BestEffort
    (_node(MEMORY), _pod(qos="BestEffort"), "The node had condition: [MemoryPressure]. "),
    (_node(MEMORY), _pod(qos="BestEffort", tolerates_memory=True), None),  # a DaemonSet's pods do
    (_node(DISK), _pod(qos="Guaranteed", tolerates_memory=True), "The node had condition: [DiskPressure]. "),
    (_node(PID), _pod(), "The node had condition: [PIDPressure]. "),
    (_node(MEMORY, DISK), _pod(tolerates_memory=True), "The node had condition: [MemoryPressure DiskPressure]. "),
    # critical pods are always admitted: system-cluster-critical and above, static and mirror pods
    (_node(DISK), _pod(priority=2_000_000_000), None),
    (_node(DISK), _pod(priority=1_999_999_999), "The node had condition: [DiskPressure]. "),
    (_node(DISK), _pod(annotations={"kubernetes.io/config.mirror": "x"}), None),
    (_node(DISK), _pod(annotations={"kubernetes.io/config.source": "file"}), None),
    # the kubelet's own readings: one that reports a healthy node (no kept status) is under no pressure
    (_node(DISK, kept=False), _pod(qos="BestEffort"), None),
])
def test_pressure_refusal(node: dict[str, Any], pod: dict[str, Any], refusal: str | None) -> None:
    assert admission.pressure_refusal(pod, node) == refusal


def test_a_refused_pod_fails_as_rejectPod_writes_it() -> None:
    assert admission.rejected_status("The node had condition: [DiskPressure]. ") == {
        "phase": "Failed", "reason": "Evicted", "message": "Pod was rejected: The node had condition: [DiskPressure]. "}
