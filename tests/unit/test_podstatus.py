"""The pod status documents the simulated kubelet writes (pure functions of everynode.kubelet.podstatus)."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.kubelet import podstatus

NOW = "2026-11-30T10:00:00Z"
EARLIER = "2026-11-30T09:59:00Z"


def _pod(*containers: str, conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    pod: dict[str, Any] = {"metadata": {"name": "p", "uid": "u-1"},
                           "spec": {"containers": [{"name": c, "image": f"{c}:1"} for c in containers]}}
    if conditions is not None:
        pod["status"] = {"conditions": conditions}
    return pod


@pytest.mark.parametrize(("pod_ip", "expected"), [
    (None, {"hostIP": "10.0.0.7", "hostIPs": [{"ip": "10.0.0.7"}], "startTime": NOW}),
    ("", {"hostIP": "10.0.0.7", "hostIPs": [{"ip": "10.0.0.7"}], "startTime": NOW}),
    ("10.244.7.3", {"hostIP": "10.0.0.7", "hostIPs": [{"ip": "10.0.0.7"}], "startTime": NOW,
                    "podIP": "10.244.7.3", "podIPs": [{"ip": "10.244.7.3"}]}),
])
def test_placement(pod_ip: str | None, expected: dict[str, Any]) -> None:
    assert podstatus.placement("10.0.0.7", NOW, pod_ip) == expected


@pytest.mark.parametrize(("ready", "ready_status", "reason"), [
    (True, "True", None),
    (False, "False", "ContainersNotReady"),
])
def test_running(ready: bool, ready_status: str, reason: str | None) -> None:
    status = podstatus.running(_pod("a", "b"), "u-1", NOW, ready=ready)
    assert list(status) == ["phase", "conditions", "containerStatuses"]
    assert status["phase"] == "Running"
    by_type = {c["type"]: c for c in status["conditions"]}
    assert list(by_type) == ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    assert by_type["PodReadyToStartContainers"]["status"] == "True"
    assert by_type["Ready"]["status"] == by_type["ContainersReady"]["status"] == ready_status
    assert by_type["Ready"]["reason"] == reason
    if not ready:
        assert by_type["Ready"]["message"] == "containers with unready status: [a b]"
    assert [(s["name"], s["ready"], s["started"], s["state"]) for s in status["containerStatuses"]] == [
        ("a", ready, True, {"running": {"startedAt": NOW}}),
        ("b", ready, True, {"running": {"startedAt": NOW}}),
    ]
    assert all(s["image"].startswith("docker.io/library/") and s["containerID"].startswith("everynode://")
               for s in status["containerStatuses"])


def test_running_keeps_the_scheduler_condition_and_unchanged_transition_times() -> None:
    previous = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": EARLIER},
                {"type": "Initialized", "status": "True", "lastTransitionTime": EARLIER},
                {"type": "Ready", "status": "False", "lastTransitionTime": EARLIER}]
    status = podstatus.running(_pod("a", conditions=previous), "u-1", NOW, ready=True)
    by_type = {c["type"]: c for c in status["conditions"]}
    assert "PodScheduled" not in by_type  # the scheduler's condition is left to the merge
    assert by_type["Initialized"]["lastTransitionTime"] == EARLIER  # status unchanged
    assert by_type["Ready"]["lastTransitionTime"] == NOW  # False -> True
