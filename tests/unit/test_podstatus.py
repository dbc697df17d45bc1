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


def _reported(**status_overrides: object) -> dict:
    from everynode.kubelet import podstatus as ps

    node = {"metadata": {"name": "w1", "uid": "u1"}, "status": {}}
    node["status"] = ps.node_status_report(node, ip="10.0.0.1", hostname="w1", now="2024-01-01T00:00:00Z")
    node["status"].update(status_overrides)
    return node


def test_report_would_change_only_for_more_than_heartbeat_times() -> None:
    from everynode.kubelet.podstatus import report_would_change

    healthy = _reported()
    assert not report_would_change(healthy, ip="10.0.0.1", hostname="w1")
    later = _reported(conditions=[dict(c, lastHeartbeatTime="2030-01-01T00:00:00Z")
                                  for c in healthy["status"]["conditions"]])
    assert not report_would_change(later, ip="10.0.0.1", hostname="w1")
    extra = _reported(conditions=[*healthy["status"]["conditions"],
                                  {"type": "NetworkUnavailable", "status": "True"}])
    assert not report_would_change(extra, ip="10.0.0.1", hostname="w1")  # not the kubelet's: merged, kept
    pressure = _reported(conditions=[dict(c, status="True") if c["type"] == "MemoryPressure" else c
                                     for c in healthy["status"]["conditions"]])
    assert report_would_change(pressure, ip="10.0.0.1", hostname="w1")
    assert report_would_change(healthy, ip="10.0.0.2", hostname="w1")  # another address
    assert report_would_change(_reported(capacity={"cpu": "4"}), ip="10.0.0.1", hostname="w1")
    gpu = {**healthy["status"]["capacity"], "gpu": "1"}
    assert report_would_change(_reported(capacity=gpu), ip="10.0.0.1", hostname="w1")  # allocatable gains it
    assert not report_would_change(_reported(capacity=gpu, allocatable=gpu), ip="10.0.0.1", hostname="w1")
