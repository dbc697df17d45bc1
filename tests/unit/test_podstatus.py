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


def _node(conditions: list[dict[str, Any]], *, kept: bool, **status: Any) -> dict[str, Any]:
    annotations = {podstatus.NODE_STATUS_ANNOTATION: podstatus.KEPT} if kept else {}
    return {"metadata": {"name": "w1", "uid": "u1", "annotations": annotations},
            "status": {"conditions": conditions, **status}}


def _cond(type_: str, status: str, reason: str = "R", message: str = "M") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": EARLIER, "lastTransitionTime": EARLIER}


REAL_ADDRESSES = [{"type": "InternalIP", "address": "10.128.0.7"}, {"type": "Hostname", "address": "w1"}]
REAL_INFO = {"kubeletVersion": "v1.30.4", "containerRuntimeVersion": "containerd://1.7.20"}


@pytest.mark.parametrize(("given", "kept", "expected"), [
    # (type, status) of the node → (type, status, reason) reported; kept: as found, heartbeat refreshed
    ([("MemoryPressure", "True")], True, {"MemoryPressure": ("True", "R"), "Ready": ("True", "KubeletReady")}),
    ([("MemoryPressure", "True")], False, {"MemoryPressure": ("False", "KubeletHasSufficientMemory")}),
    ([("Ready", "False")], True, {"Ready": ("False", "R")}),
    ([("Ready", "False")], False, {"Ready": ("True", "KubeletReady")}),
    # Unknown is the node lifecycle controller's word, not a kubelet's: a running kubelet reports its own
    ([("Ready", "Unknown"), ("DiskPressure", "Unknown")], True,
     {"Ready": ("True", "KubeletReady"), "DiskPressure": ("False", "KubeletHasNoDiskPressure")}),
    ([], True, {"PIDPressure": ("False", "KubeletHasSufficientPID"), "Ready": ("True", "KubeletReady")}),
])
def test_node_conditions_reported(given: list[tuple[str, str]], kept: bool,
                                  expected: dict[str, tuple[str, str]]) -> None:
    node = _node([_cond(t, s) for t, s in given], kept=kept)
    reported = {c["type"]: c for c in podstatus.node_conditions(node, NOW)}
    assert set(reported) == {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}
    for type_, (status, reason) in expected.items():
        c = reported[type_]
        assert (c["status"], c["reason"], c["lastHeartbeatTime"]) == (status, reason, NOW)
        kept_as_found = kept and (type_, status) in given
        assert c["lastTransitionTime"] == (EARLIER if kept_as_found else NOW)
        if kept_as_found:
            assert c["message"] == "M"


@pytest.mark.parametrize(("given", "kept", "expected"), [
    ([("MemoryPressure", "True")], True, ["MemoryPressure"]),
    ([("MemoryPressure", "True")], False, []),  # a healthy kubelet's reading, whatever the node says
    ([("PIDPressure", "True"), ("DiskPressure", "True"), ("MemoryPressure", "False")], True,
     ["DiskPressure", "PIDPressure"]),  # in the reported order
    ([("DiskPressure", "Unknown"), ("Ready", "True")], True, []),  # Unknown: reported False
    ([("Ready", "False")], True, []),
    ([], True, []),
])
def test_reported_pressures_are_the_true_pressure_conditions_node_conditions_reports(
        given: list[tuple[str, str]], kept: bool, expected: list[str]) -> None:
    """The kubelet's admission reads the pressures without building the four conditions: the
    same answer as reading them off :func:`node_conditions`."""
    node = _node([_cond(t, s) for t, s in given], kept=kept)
    from_conditions = [c["type"] for c in podstatus.node_conditions(node, NOW)
                       if c["type"] != "Ready" and c["status"] == "True"]
    assert podstatus.reported_pressures(node) == from_conditions == expected


def test_a_kept_node_reports_its_own_addresses_and_node_info() -> None:
    resources = {"cpu": "4", "memory": "16Gi", "pods": "110", "nvidia.com/gpu": "8"}
    node = _node([_cond(t, "True" if t in ("MemoryPressure", "Ready") else "False")
                  for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")],
                 kept=True, addresses=REAL_ADDRESSES, nodeInfo=REAL_INFO, capacity=resources,
                 allocatable={**resources, "cpu": "3920m"}, daemonEndpoints={"kubeletEndpoint": {"Port": 10250}})
    report = podstatus.node_status_report(node, ip="10.0.0.2", hostname="w1", now=NOW)
    assert report["addresses"] == REAL_ADDRESSES and report["nodeInfo"] == REAL_INFO
    assert report["allocatable"]["cpu"] == "3920m" and report["allocatable"]["nvidia.com/gpu"] == "8"
    assert podstatus.node_internal_ip(node, "10.0.0.2") == "10.128.0.7"
    assert not podstatus.report_would_change(node, ip="10.0.0.2", hostname="w1")  # only heartbeats
    healthy = _node([_cond("MemoryPressure", "True")], kept=False, addresses=REAL_ADDRESSES, nodeInfo=REAL_INFO)
    report = podstatus.node_status_report(healthy, ip="10.0.0.2", hostname="w1", now=NOW)
    assert report["addresses"][0] == {"type": "InternalIP", "address": "10.0.0.2"}
    assert report["nodeInfo"]["kubeletVersion"] == podstatus.KUBELET_VERSION
    assert podstatus.node_internal_ip(healthy, "10.0.0.2") == "10.0.0.2"
    assert podstatus.report_would_change(healthy, ip="10.0.0.2", hostname="w1")
    bare = _node([], kept=True)  # a kept node that says nothing yet is reported as a healthy one
    report = podstatus.node_status_report(bare, ip="10.0.0.2", hostname="w1", now=NOW)
    assert report["addresses"][0]["address"] == "10.0.0.2" and report["nodeInfo"]["osImage"] == podstatus.OS_IMAGE
