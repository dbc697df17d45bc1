"""The eviction subresource's decisions as table tests (``pkg/registry/core/pod/storage/
eviction.go``: canIgnorePDB, getPodDisruptionBudgets, the unhealthy-pod policy, checkAndDecrement)."""

from __future__ import annotations

import pytest

from everynode.api.errors import ApiError
from everynode.apiserver.registry.core.pod.eviction import (
    MAX_DISRUPTED_POD_SIZE,
    VIOLATION,
    budgets_for,
    can_ignore_budgets,
    decremented,
    unhealthy_pod_may_go,
)


def pod(phase: str = "Running", *, ready: bool = True, deleting: bool = False, labels: dict | None = None) -> dict:
    md: dict = {"name": "p", "namespace": "default", "labels": labels if labels is not None else {"app": "web"}}
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": md, "status": {"phase": phase,
                                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def budget(name: str = "web", *, selector: dict | None = None, status: dict | None = None, generation: int = 1,
           spec: dict | None = None, namespace: str = "default") -> dict:
    return {"metadata": {"name": name, "namespace": namespace, "generation": generation},
            "spec": {"selector": selector if selector is not None else {"matchLabels": {"app": "web"}},
                     **(spec or {})},
            "status": status if status is not None else {}}


@pytest.mark.parametrize(("phase", "deleting", "ignored"), [
    ("Pending", False, True), ("Succeeded", False, True), ("Failed", False, True),
    ("Running", True, True), ("Running", False, False), ("Unknown", False, False),
])
def test_pods_no_budget_protects(phase, deleting, ignored) -> None:
    assert can_ignore_budgets(pod(phase, deleting=deleting)) is ignored


def test_budgets_matching_a_pod() -> None:
    web = budget("web")
    everything = budget("all", selector={})
    other_ns = budget("elsewhere", namespace="other")
    db = budget("db", selector={"matchLabels": {"app": "db"}})
    assert budgets_for(pod(), [web, everything, other_ns, db]) == [web]  # an empty selector matches nothing here
    assert budgets_for(pod(labels={}), [web]) == []


@pytest.mark.parametrize(("ready", "policy", "current", "desired", "goes"), [
    (True, None, 5, 3, False),  # a ready pod always costs a disruption
    (False, None, 3, 3, True),  # IfHealthyBudget (default): the budget has what it needs
    (False, "IfHealthyBudget", 2, 3, False),
    (False, None, 0, 0, False),  # desiredHealthy 0: not this path
    (False, "AlwaysAllow", 0, 3, True),
])
def test_unhealthy_pods(ready, policy, current, desired, goes) -> None:
    spec = {"unhealthyPodEvictionPolicy": policy} if policy else {}
    b = budget(spec=spec, status={"currentHealthy": current, "desiredHealthy": desired})
    assert unhealthy_pod_may_go(pod(ready=ready), b) is goes


def refusal(b: dict) -> ApiError:
    with pytest.raises(ApiError) as info:
        decremented(b, "p", now="T", dry_run=False)
    return info.value


def test_no_disruption_left_is_429_with_upstreams_cause() -> None:
    e = refusal(budget(status={"disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2,
                               "observedGeneration": 1}))
    assert e.code == 429 and e.reason == "TooManyRequests" and e.message == VIOLATION
    assert e.status["details"] == {"causes": [{"reason": "DisruptionBudget",
                                               "message": "The disruption budget web needs 2 healthy pods "
                                                          "and has 2 currently"}]}


def test_a_status_behind_the_spec_is_still_being_processed() -> None:
    e = refusal(budget(generation=2, status={"disruptionsAllowed": 3, "observedGeneration": 1}))
    assert e.code == 429 and e.status["details"]["retryAfterSeconds"] == 10
    assert e.status["details"]["causes"][0]["message"] == \
        "The disruption budget web is still being processed by the server."


def test_negative_and_overfull_budgets_are_forbidden() -> None:
    e = refusal(budget(status={"disruptionsAllowed": -1, "observedGeneration": 1}))
    assert e.code == 403
    assert e.message == 'poddisruptionbudget.policy "web" is forbidden: pdb disruptions allowed is negative'
    full = {f"p{i}": "T" for i in range(MAX_DISRUPTED_POD_SIZE + 1)}
    e = refusal(budget(status={"disruptionsAllowed": 1, "observedGeneration": 1, "disruptedPods": full}))
    assert e.code == 403 and "DisruptedPods map too big" in e.message


def test_decrement_records_the_pod_and_flips_the_condition_at_zero() -> None:
    b = budget(status={"disruptionsAllowed": 2, "currentHealthy": 4, "desiredHealthy": 2, "observedGeneration": 1,
                       "conditions": [{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods",
                                       "message": "", "lastTransitionTime": "T0"}]})
    once = decremented(b, "p", now="T1", dry_run=False)
    assert once is not None
    assert once["disruptionsAllowed"] == 1 and once["disruptedPods"] == {"p": "T1"}
    assert once["conditions"][0]["reason"] == "SufficientPods"
    twice = decremented(budget(status=once), "q", now="T2", dry_run=False)
    assert twice is not None and twice["disruptionsAllowed"] == 0
    assert twice["disruptedPods"] == {"p": "T1", "q": "T2"}
    assert twice["conditions"] == [{"type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods",
                                    "message": "", "observedGeneration": 1, "lastTransitionTime": "T2"}]
    assert decremented(b, "p", now="T1", dry_run=True) is None  # checked, nothing to write
