"""The rolling-update planner (daemonset-semantics.md §5), incl. the worked examples A–E of §5.4."""

from __future__ import annotations

import pytest

from everynode.clock import format_rfc3339
from everynode.controllers.daemonset.budgets import allows_surge
from everynode.controllers.daemonset.update import UpdateError, find_updated_pods_on_node, plan_rolling_update

NOW = 10_000.0
NEW, OLD = "new", "old"


def ds(max_unavailable=1, max_surge=0, min_ready=0):
    return {"metadata": {"name": "ds", "namespace": "default", "uid": "u"},
            "spec": {"minReadySeconds": min_ready,
                     "updateStrategy": {"type": "RollingUpdate",
                                        "rollingUpdate": {"maxUnavailable": max_unavailable,
                                                          "maxSurge": max_surge}}}}


def pod(name, rev, *, available=True, ready=None, terminating=False, since=NOW - 100):
    ready = available if ready is None else ready
    md = {"name": name, "labels": {"controller-revision-hash": rev}}
    if terminating:
        md["deletionTimestamp"] = format_rfc3339(NOW)
    return {"metadata": md, "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "lastTransitionTime": format_rfc3339(since)}]}}


def plan(d, pods_by_node, eligibility=None):
    if eligibility is None:
        eligibility = {n: True for n in pods_by_node}
    return plan_rolling_update(d, hash_=NEW, node_eligibility=eligibility, node_to_pods=pods_by_node, now=NOW)


def names(n):
    return [f"n{i}" for i in range(1, n + 1)]


# ---- Example A: defaults, 5 nodes, all old available --------------------------------------------

def test_example_a_first_step_deletes_one_old_pod_in_node_order():
    p = plan(ds(), {n: [pod(f"{n}-old", OLD)] for n in names(5)})
    assert (p.max_surge, p.max_unavailable, p.desired) == (0, 1, 5)
    assert p.pods_to_delete == ["n1-old"] and p.nodes_to_create == []


def test_example_a_terminating_pod_counts_as_unavailable():
    pods = {n: [pod(f"{n}-old", OLD)] for n in names(5)}
    pods["n1"] = [pod("n1-old", OLD, terminating=True)]
    assert plan(ds(), pods).empty


def test_example_a_node_without_pod_blocks_until_new_pod_available():
    pods = {n: [pod(f"{n}-old", OLD)] for n in names(5)}
    del pods["n1"]  # the old pod is gone; manage will create the new one
    assert plan(ds(), pods, {n: True for n in names(5)}).empty
    pods["n1"] = [pod("n1-new", NEW, available=False)]
    assert plan(ds(), pods).empty
    pods["n1"] = [pod("n1-new", NEW)]
    assert plan(ds(), pods).pods_to_delete == ["n2-old"]


# ---- Example B: maxUnavailable 30% ----------------------------------------------------------------

@pytest.mark.parametrize("desired,expected", [(10, 3), (7, 3), (3, 1)])
def test_example_b_percent_rounds_up(desired, expected):
    p = plan(ds("30%"), {n: [pod(f"{n}-old", OLD)] for n in names(desired)})
    assert p.max_unavailable == expected
    assert p.pods_to_delete == [f"{n}-old" for n in sorted(names(desired))[:expected]]  # name order


def test_example_b_zero_desired_does_nothing():
    p = plan(ds("30%"), {})
    assert p.max_unavailable == 0 and p.empty


def test_example_b_unavailable_old_pod_always_replaced_budget_exhausted():
    pods = {n: [pod(f"{n}-old", OLD)] for n in names(10)}
    pods["n2"] = [pod("n2-new", NEW, available=False)]
    pods["n5"] = [pod("n5-new", NEW, available=False)]
    pods["n9"] = [pod("n9-old", OLD, available=False)]
    p = plan(ds("30%"), pods)
    assert p.pods_to_delete == ["n9-old"]  # numUnavailable = 3, nothing else


def test_unavailable_old_pods_ignore_the_budget():
    pods = {n: [pod(f"{n}-old", OLD, available=False)] for n in names(4)}
    assert plan(ds(1), pods).pods_to_delete == ["n1-old", "n2-old", "n3-old", "n4-old"]


def test_duplicates_and_both_count_unavailable():
    pods = {n: [pod(f"{n}-old", OLD)] for n in names(4)}
    pods["n1"] = [pod("n1-a", OLD), pod("n1-b", OLD)]          # not ok
    pods["n2"] = [pod("n2-old", OLD), pod("n2-new", NEW)]     # both: manage decides
    p = plan(ds(3), pods)
    assert p.pods_to_delete == ["n3-old"]


def test_pods_on_ineligible_or_vanished_nodes_are_candidates_without_surge():
    pods = {"gone": [pod("gone-old", OLD)], "n1": [pod("n1-new", NEW)]}
    p = plan(ds(1), pods, {"n1": True})
    assert p.pods_to_delete == ["gone-old"]


# ---- Example C: maxSurge 1, 3 nodes --------------------------------------------------------------

def test_example_c_surge_creates_one_new_pod_first():
    p = plan(ds(0, 1), {n: [pod(f"{n}-old", OLD)] for n in names(3)})
    assert (p.max_surge, p.max_unavailable) == (1, 0)
    assert p.nodes_to_create == ["n1"] and p.pods_to_delete == []


def test_example_c_waits_for_new_pod_then_deletes_old():
    pods = {n: [pod(f"{n}-old", OLD)] for n in names(3)}
    pods["n1"] = [pod("n1-old", OLD), pod("n1-new", NEW, available=False)]
    assert plan(ds(0, 1), pods).empty
    pods["n1"] = [pod("n1-old", OLD), pod("n1-new", NEW)]
    p = plan(ds(0, 1), pods)
    assert p.pods_to_delete == ["n1-old"]
    assert p.nodes_to_create == ["n2"]  # the surge slot is free again in the same pass


# ---- Example D: maxSurge 25%, 10 nodes, one old pod NotReady mid-rollout ---------------------------

def test_example_d_unavailable_old_pod_gets_new_pod_beyond_budget():
    pods = {n: [pod(f"{n}-old", OLD)] for n in names(10)}
    for n in ("n1", "n10", "n2"):  # three surges in flight (sorted: n1, n10, n2)
        pods[n] = [pod(f"{n}-old", OLD), pod(f"{n}-new", NEW, available=False)]
    pods["n7"] = [pod("n7-old", OLD, available=False)]
    p = plan(ds(0, "25%"), pods)
    assert p.max_surge == 3
    assert p.nodes_to_create == ["n7"] and p.pods_to_delete == []


def test_surge_unavailable_old_pod_on_ineligible_node_is_deleted():
    pods = {"n1": [pod("n1-old", OLD, available=False)], "n2": [pod("n2-new", NEW)]}
    p = plan(ds(0, 1), pods, {"n1": False, "n2": True})
    assert p.pods_to_delete == ["n1-old"] and p.nodes_to_create == []


def test_surge_available_old_pod_on_ineligible_node_waits_for_availability_elsewhere():
    eligibility = {"n1": False, "n2": True}
    pods = {"n1": [pod("n1-old", OLD)], "n2": [pod("n2-new", NEW, available=False)]}
    assert plan(ds(0, 1), pods, eligibility).pods_to_delete == []
    pods["n2"] = [pod("n2-new", NEW)]
    assert plan(ds(0, 1), pods, eligibility).pods_to_delete == ["n1-old"]


def test_surge_vanished_node_is_an_error():
    with pytest.raises(UpdateError, match='couldn\'t get node for nodeName "gone"'):
        plan(ds(0, 1), {"gone": [pod("gone-old", OLD)]}, {})


# ---- Example E: any positive surge enables surge behaviour ---------------------------------------

@pytest.mark.parametrize("surge,expected", [(1, True), ("1%", True), ("100%", True), (0, False), ("0%", False)])
def test_example_e_allows_surge(surge, expected):
    assert allows_surge(ds(0 if expected else 1, surge)) is expected


# ---- findUpdatedPodsOnNode ----------------------------------------------------------------------

@pytest.mark.parametrize("pods,expected", [
    ([], (None, None, True)),
    ([pod("a", NEW)], ("a", None, True)),
    ([pod("a", OLD)], (None, "a", True)),
    ([pod("a", OLD), pod("b", NEW)], ("b", "a", True)),
    ([pod("a", OLD), pod("b", OLD)], (None, None, False)),
    ([pod("a", NEW), pod("b", NEW)], (None, None, False)),
    ([pod("a", OLD, terminating=True), pod("b", OLD)], (None, "b", True)),
])
def test_find_updated_pods_on_node(pods, expected):
    new, old, ok = find_updated_pods_on_node(pods, NEW, None)
    got = (new["metadata"]["name"] if new else None, old["metadata"]["name"] if old else None, ok)
    assert got == expected


def test_min_ready_seconds_delays_availability():
    pods = {"n1": [pod("n1-new", NEW, since=NOW - 5)], "n2": [pod("n2-old", OLD)]}
    assert plan(ds(1, 0, min_ready=10), pods).empty
    pods["n1"] = [pod("n1-new", NEW, since=NOW - 11)]
    assert plan(ds(1, 0, min_ready=10), pods).pods_to_delete == ["n2-old"]
