"""Pure parts of the node lifecycle controller: condition taints, NoExecute swaps, zone keys,
zone states and rates, the token bucket, and marking a node Unknown."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.controllers.nodelifecycle import (
    FULL_DISRUPTION,
    NORMAL,
    NOT_READY,
    PARTIAL_DISRUPTION,
    UNREACHABLE,
    TokenBucket,
    desired_noschedule_keys,
    mark_unknown,
    reconcile_noschedule_taints,
    swap_noexecute_taint,
    zone_key,
    zone_rate,
    zone_state,
)

Obj = dict[str, Any]
NOW = "2024-01-01T00:00:00Z"


def node(conditions: dict[str, str] | None = None, *, unschedulable: bool = False, taints: list[Obj] | None = None,
         labels: dict[str, str] | None = None) -> Obj:
    n: Obj = {"metadata": {"name": "n1", "labels": labels or {}, "creationTimestamp": "2023-12-31T23:00:00Z"},
              "spec": {}, "status": {"conditions": [{"type": t, "status": s} for t, s in (conditions or {}).items()]}}
    if unschedulable:
        n["spec"]["unschedulable"] = True
    if taints is not None:
        n["spec"]["taints"] = taints
    return n


@pytest.mark.parametrize(("conditions", "unschedulable", "expected"), [
    ({"Ready": "True"}, False, set()),
    ({"Ready": "False"}, False, {NOT_READY}),
    ({"Ready": "Unknown"}, False, {UNREACHABLE}),
    ({"Ready": "True", "MemoryPressure": "True"}, False, {"node.kubernetes.io/memory-pressure"}),
    ({"Ready": "True", "DiskPressure": "True", "PIDPressure": "True"}, False,
     {"node.kubernetes.io/disk-pressure", "node.kubernetes.io/pid-pressure"}),
    ({"Ready": "True", "NetworkUnavailable": "True"}, False, {"node.kubernetes.io/network-unavailable"}),
    ({"Ready": "True", "MemoryPressure": "False", "DiskPressure": "Unknown"}, False, set()),
    ({"Ready": "True"}, True, {"node.kubernetes.io/unschedulable"}),
    ({}, False, set()),  # no conditions yet: no condition taints
])
def test_desired_noschedule_keys(conditions: dict[str, str], unschedulable: bool, expected: set[str]) -> None:
    assert desired_noschedule_keys(node(conditions, unschedulable=unschedulable)) == expected


def test_reconcile_adds_with_time_keeps_others_and_removes_stale() -> None:
    user = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    user_noexec = {"key": NOT_READY, "effect": "NoExecute", "timeAdded": "old"}
    kept = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "earlier"}
    stale = {"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}
    n = node({"Ready": "False"}, unschedulable=True, taints=[user, kept, stale, user_noexec])
    assert reconcile_noschedule_taints(n, now=NOW) == [
        user, kept, user_noexec, {"key": NOT_READY, "effect": "NoSchedule", "timeAdded": NOW}]


def test_reconcile_returns_none_when_in_sync() -> None:
    n = node({"Ready": "True"}, unschedulable=True,
             taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "t"}])
    assert reconcile_noschedule_taints(n, now=NOW) is None
    assert reconcile_noschedule_taints(node({"Ready": "True"}), now=NOW) is None


def test_uncordon_removes_only_the_unschedulable_taint() -> None:
    other = {"key": "example.com/x", "effect": "NoSchedule"}
    n = node({"Ready": "True"}, taints=[other, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}])
    assert reconcile_noschedule_taints(n, now=NOW) == [other]


@pytest.mark.parametrize(("taints", "key", "expected"), [
    ([], UNREACHABLE, [{"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": NOW}]),
    ([{"key": NOT_READY, "effect": "NoExecute", "timeAdded": "t0"}], UNREACHABLE,
     [{"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": NOW}]),  # swapped
    ([{"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": "t0"}], UNREACHABLE, None),  # already there
    ([{"key": UNREACHABLE, "effect": "NoExecute"}, {"key": "u", "effect": "NoExecute"}], None,
     [{"key": "u", "effect": "NoExecute"}]),  # user NoExecute kept
    ([{"key": UNREACHABLE, "effect": "NoSchedule"}], None, None),  # NoSchedule is not ours here
])
def test_swap_noexecute_taint(taints: list[Obj], key: str | None, expected: list[Obj] | None) -> None:
    assert swap_noexecute_taint(taints, key, now=NOW) == expected


@pytest.mark.parametrize(("labels", "expected"), [
    ({}, ""),
    ({"topology.kubernetes.io/zone": "a"}, ":\x00:a"),
    ({"topology.kubernetes.io/zone": "a", "topology.kubernetes.io/region": "r"}, "r:\x00:a"),
    ({"failure-domain.beta.kubernetes.io/zone": "beta", "topology.kubernetes.io/zone": "ga"}, ":\x00:beta"),
    ({"topology.kubernetes.io/region": "r"}, "r:\x00:"),
])
def test_zone_key(labels: dict[str, str], expected: str) -> None:
    assert zone_key(node(labels=labels)) == expected


@pytest.mark.parametrize(("ready", "not_ready", "expected"), [
    (0, 0, (0, NORMAL)),
    (2, 0, (0, NORMAL)),
    (0, 1, (1, FULL_DISRUPTION)),  # Unknown
    (0, 2, (2, FULL_DISRUPTION)),  # never posted, False
    (1, 2, (2, NORMAL)),  # not more than 2 not ready
    (1, 3, (3, PARTIAL_DISRUPTION)),  # 75 %
    (2, 3, (3, PARTIAL_DISRUPTION)),  # 60 %
    (3, 3, (3, NORMAL)),  # 50 % < 55 %
])
def test_zone_state(ready: int, not_ready: int, expected: tuple[int, str]) -> None:
    """``ComputeZoneState`` from the counts of Ready nodes and of the others (False, Unknown, or
    no Ready condition yet)."""
    assert zone_state(ready, not_ready) == expected


@pytest.mark.parametrize(("state", "size", "expected"), [
    (NORMAL, 3, 0.1),
    (FULL_DISRUPTION, 3, 0.1),
    (PARTIAL_DISRUPTION, 50, 0.0),
    (PARTIAL_DISRUPTION, 51, 0.01),
])
def test_zone_rate(state: str, size: int, expected: float) -> None:
    assert zone_rate(state, size) == expected


def test_token_bucket_burst_one_then_rate() -> None:
    bucket = TokenBucket(0.1, now=0.0)
    assert bucket.try_accept(0.0)  # starts full
    assert not bucket.try_accept(5.0)
    assert bucket.try_accept(10.0)
    assert not bucket.try_accept(10.0)
    assert bucket.try_accept(100.0)
    assert not bucket.try_accept(100.0)  # burst 1: idle time does not bank tokens


def test_token_bucket_zero_rate_never_accepts_and_swap_refills() -> None:
    bucket = TokenBucket(0.1, now=0.0)
    assert bucket.try_accept(0.0)
    bucket.swap(0.0, 1.0)
    assert not bucket.try_accept(1000.0)
    bucket.swap(0.01, 1000.0)
    assert bucket.try_accept(1000.0)  # a new limiter starts full
    bucket.swap(0.01, 1001.0)  # same rate: unchanged
    assert not bucket.try_accept(1001.0)


def test_mark_unknown() -> None:
    n = node({"Ready": "True", "MemoryPressure": "False", "NetworkUnavailable": "False"})
    n["status"]["conditions"][0].update(reason="KubeletReady", lastHeartbeatTime="hb", lastTransitionTime="tt")
    out = mark_unknown(n, now=NOW)
    conds = {c["type"]: c for c in out["status"]["conditions"]}
    assert conds["Ready"] == {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                              "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": "hb",
                              "lastTransitionTime": NOW}
    assert conds["MemoryPressure"]["status"] == "Unknown"
    assert conds["NetworkUnavailable"]["status"] == "False"  # not the controller's to touch
    for never in ("DiskPressure", "PIDPressure"):
        assert conds[never] == {"type": never, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                                "message": "Kubelet never posted node status.",
                                "lastHeartbeatTime": "2023-12-31T23:00:00Z", "lastTransitionTime": NOW}
    assert n["status"]["conditions"][0]["status"] == "True"  # input untouched


def test_mark_unknown_keeps_existing_unknown_conditions() -> None:
    n = node({"Ready": "Unknown"})
    n["status"]["conditions"][0].update(reason="Custom", lastTransitionTime="t0")
    out = mark_unknown(n, now=NOW)
    assert out["status"]["conditions"][0] == {"type": "Ready", "status": "Unknown", "reason": "Custom",
                                              "lastTransitionTime": "t0"}
