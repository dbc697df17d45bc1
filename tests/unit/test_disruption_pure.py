"""The disruption controller's arithmetic as table tests — the cases of upstream's
``pkg/controller/disruption/disruption_test.go`` (TestNoSelector, TestUnavailable,
TestIntegerMaxUnavailable, TestReplicaSet, TestTwoControllers, TestUpdateDisruptedPods, …)
restated on the pure functions, plus the status and condition the controller writes."""

from __future__ import annotations

import asyncio

import pytest

from everynode.clock import format_rfc3339
from everynode.controllers.disruption import (
    DELETION_TIMEOUT,
    ExpectedCountError,
    budget_status,
    count_healthy,
    disrupted_pod_map,
    disruptions_allowed,
    expected_and_desired,
    expected_scale,
    fail_safe_status,
    pdb_selects,
)

NOW = 1_700_000_000.0


def pod(name: str, *, ready: bool = True, deleting: bool = False, owner: str | None = None,
        labels: dict[str, str] | None = None, namespace: str = "default") -> dict:
    md: dict = {"name": name, "namespace": namespace, "labels": labels if labels is not None else {"app": "web"}}
    if deleting:
        md["deletionTimestamp"] = format_rfc3339(NOW)
    if owner:
        md["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": owner,
                                  "controller": True}]
    return {"metadata": md, "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


@pytest.mark.parametrize(("spec", "pods", "scale", "expected", "desired"), [
    # integer minAvailable: no controller needed, expected = matching pods (TestNoSelector / TestUnavailable)
    ({"minAvailable": 3}, 0, None, 0, 3),
    ({"minAvailable": 3}, 4, None, 4, 3),
    ({"minAvailable": 0}, 2, None, 2, 0),
    # maxUnavailable: the controllers' scale (TestIntegerMaxUnavailable, TestReplicaSet)
    ({"maxUnavailable": 1}, 3, 3, 3, 2),
    ({"maxUnavailable": 5}, 3, 3, 3, 0),  # never negative
    ({"maxUnavailable": "30%"}, 10, 10, 10, 7),  # 3 rounded up
    ({"maxUnavailable": "25%"}, 3, 3, 3, 2),  # 0.75 rounds up to 1
    ({"maxUnavailable": 0}, 2, 2, 2, 2),
    # percentage minAvailable (TestReplicaSet: 28% of 10 rounds up to 3; TestTwoControllers: 28% of 22)
    ({"minAvailable": "28%"}, 10, 10, 10, 3),
    ({"minAvailable": "28%"}, 22, 22, 22, 7),
    ({"minAvailable": "100%"}, 4, 4, 4, 4),
])
def test_expected_and_desired(spec, pods, scale, expected, desired) -> None:
    assert expected_and_desired(spec, pods, scale) == (expected, desired)


def test_a_bad_percent_is_an_error() -> None:
    with pytest.raises(ValueError):
        expected_and_desired({"maxUnavailable": "x%"}, 1, 1)


@pytest.mark.parametrize(("healthy", "desired", "expected", "allowed"), [
    (4, 3, 4, 1),
    (3, 3, 3, 0),
    (2, 3, 3, 0),  # below the budget: 0, never negative
    (5, 0, 5, 5),
    (3, 0, 0, 0),  # no pod expected yet: safe (updatePdbStatus's expectedCount > 0 rule)
])
def test_disruptions_allowed(healthy, desired, expected, allowed) -> None:
    assert disruptions_allowed(healthy, desired, expected) == allowed


def test_healthy_pods_are_ready_not_deleting_not_just_evicted() -> None:
    pods = [pod("a"), pod("b", ready=False), pod("c", deleting=True), pod("d"), pod("e")]
    recent = format_rfc3339(NOW - 10)
    assert count_healthy(pods, {}, NOW) == 3
    assert count_healthy(pods, {"d": recent}, NOW) == 2
    expired = format_rfc3339(NOW - DELETION_TIMEOUT - 1)
    assert count_healthy(pods, {"d": expired}, NOW) == 3


def test_disrupted_pods_keep_pending_entries_and_say_when_to_look_again() -> None:
    """TestUpdateDisruptedPods: entries of pods gone, deleting or expired are dropped."""
    pods = [pod("kept"), pod("deleting", deleting=True), pod("expired")]
    recent = format_rfc3339(NOW - 10)
    stored = {"kept": recent, "deleting": recent, "expired": format_rfc3339(NOW - DELETION_TIMEOUT - 5),
              "gone": recent}
    kept, recheck = disrupted_pod_map(pods, stored, NOW)
    assert kept == {"kept": recent}
    assert recheck == pytest.approx(NOW - 10 + DELETION_TIMEOUT)
    assert disrupted_pod_map(pods, None, NOW) == ({}, None)


def pdb(spec: dict, status: dict | None = None, generation: int = 1) -> dict:
    return {"metadata": {"name": "web", "namespace": "default", "generation": generation},
            "spec": spec, "status": status or {}}


def test_status_and_condition_as_upstream_writes_them() -> None:
    status = budget_status(pdb({"minAvailable": 3}), current_healthy=4, desired_healthy=3, expected=4,
                           disrupted={}, now="T1")
    assert status == {"disruptionsAllowed": 1, "currentHealthy": 4, "desiredHealthy": 3, "expectedPods": 4,
                      "observedGeneration": 1,
                      "conditions": [{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods",
                                      "message": "", "observedGeneration": 1, "lastTransitionTime": "T1"}]}
    # the same numbers again: nothing to write
    assert budget_status(pdb({"minAvailable": 3}, status), current_healthy=4, desired_healthy=3, expected=4,
                         disrupted={}, now="T2") is None
    # one pod less: InsufficientPods, the transition time moves
    lower = budget_status(pdb({"minAvailable": 3}, status), current_healthy=3, desired_healthy=3, expected=4,
                          disrupted={}, now="T3")
    assert lower is not None and lower["disruptionsAllowed"] == 0
    assert lower["conditions"][0] == {"type": "DisruptionAllowed", "status": "False",
                                      "reason": "InsufficientPods", "message": "", "observedGeneration": 1,
                                      "lastTransitionTime": "T3"}
    # a spec change (generation 2) is written even with the same numbers
    assert budget_status(pdb({"minAvailable": 3}, status, generation=2), current_healthy=4, desired_healthy=3,
                         expected=4, disrupted={}, now="T4")["observedGeneration"] == 2


def test_fail_safe_allows_nothing_and_says_why() -> None:
    status = fail_safe_status(pdb({"maxUnavailable": 1}, {"disruptionsAllowed": 2, "observedGeneration": 1}),
                              'found no controllers for pod "a"', "T")
    assert status["disruptionsAllowed"] == 0
    assert status["conditions"] == [{"type": "DisruptionAllowed", "status": "False", "reason": "SyncFailed",
                                     "message": 'found no controllers for pod "a"', "observedGeneration": 1,
                                     "lastTransitionTime": "T"}]


def test_expected_scale_counts_each_controller_once() -> None:
    scales = {"rs1": 3, "rs2": 4}

    async def lookup(ref: dict, namespace: str):
        uid = ref["uid"]
        return (uid, scales[uid]) if uid in scales else None

    pods = [pod("a", owner="rs1"), pod("b", owner="rs1"), pod("c", owner="rs2"), pod("bare")]
    assert asyncio.run(expected_scale(pods, lookup)) == (7, ["bare"])
    with pytest.raises(ExpectedCountError, match='found no controllers for pod "x"'):
        asyncio.run(expected_scale([pod("x", owner="unknown")], lookup))


@pytest.mark.parametrize(("selector", "labels", "namespace", "selected"), [
    ({"matchLabels": {"app": "web"}}, {"app": "web"}, "default", True),
    ({"matchLabels": {"app": "web"}}, {"app": "db"}, "default", False),
    ({"matchLabels": {"app": "web"}}, {"app": "web"}, "other", False),
    ({}, {"app": "db"}, "default", True),  # policy/v1: an empty selector matches every pod
    (None, {"app": "web"}, "default", False),
    ({"matchExpressions": [{"key": "app", "operator": "Bogus"}]}, {"app": "web"}, "default", False),
])
def test_which_pods_a_budget_selects(selector, labels, namespace, selected) -> None:
    budget = {"metadata": {"name": "b", "namespace": "default"}, "spec": {"selector": selector}}
    assert pdb_selects(budget, pod("p", labels=labels, namespace=namespace)) is selected
