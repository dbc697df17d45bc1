"""The simulated nodes `everynode up` creates, per the DESIGN contract.

Workers are ``worker-1`` … ``worker-N``; control-plane nodes ``control-plane-1`` … carry the
``node-role.kubernetes.io/control-plane`` label and ``NoSchedule`` taint, as kubeadm sets them.
Status (capacity/allocatable) is set at creation like a kubelet registering itself; the
conditions come from the kubelet simulation.
"""

from __future__ import annotations

from typing import Any

CAPACITY = {"cpu": "4", "memory": "16Gi", "pods": "110"}
CONTROL_PLANE_ROLE = "node-role.kubernetes.io/control-plane"


def node_manifest(name: str, *, control_plane: bool = False, labels: dict[str, str] | None = None,
                  taints: list[dict[str, str]] | None = None,
                  capacity: dict[str, str] | None = None) -> dict[str, Any]:
    node_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
    }
    node_taints = list(taints or [])
    if control_plane:
        node_labels[CONTROL_PLANE_ROLE] = ""
        node_taints.append({"key": CONTROL_PLANE_ROLE, "effect": "NoSchedule"})
    node_labels.update(labels or {})
    cap = dict(CAPACITY)
    cap.update(capacity or {})
    spec: dict[str, Any] = {}
    if node_taints:
        spec["taints"] = node_taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels},
        "spec": spec,
        "status": {"capacity": dict(cap), "allocatable": dict(cap)},
    }


def contract_nodes(*, workers: int, control_planes: int) -> list[dict[str, Any]]:
    nodes = [node_manifest(f"control-plane-{i}", control_plane=True) for i in range(1, control_planes + 1)]
    nodes += [node_manifest(f"worker-{i}") for i in range(1, workers + 1)]
    return nodes
