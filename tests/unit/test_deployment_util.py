"""The Deployment controller's pure decisions, with the cases of upstream's
``pkg/controller/deployment/util/deployment_util_test.go`` and ``rolling_test.go``
(``TestResolveFenceposts``, ``TestMaxUnavailable``, ``TestNewRSNewReplicas``,
``TestGetReplicaSetFraction``/``TestGetProportion``, ``TestDeploymentComplete``,
``TestDeploymentProgressing``, ``TestDeploymentTimedOut``, ``TestFindNewReplicaSet``,
``TestFindOldReplicaSets``, ``TestAnnotationUtils``, ``TestDeploymentController_reconcileOldReplicaSets``,
``TestDeploymentController_cleanupUnhealthyReplicas``,
``TestDeploymentController_scaleDownOldReplicaSetsForRollingUpdate``) and the proportional
scaling cases of ``sync_test.go`` (``TestScale``)."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.controllers.deployment import util

Obj = dict[str, Any]


def deployment(replicas: int = 3, *, surge: Any = "25%", unavailable: Any = "25%", strategy: str = "RollingUpdate",
               generation: int = 1, status: Obj | None = None, deadline: int | None = 600,
               template_image: str = "nginx", annotations: dict[str, str] | None = None) -> Obj:
    spec: Obj = {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": template_image}]}},
                 "strategy": {"type": strategy}}
    if strategy == "RollingUpdate":
        spec["strategy"]["rollingUpdate"] = {"maxSurge": surge, "maxUnavailable": unavailable}
    if deadline is not None:
        spec["progressDeadlineSeconds"] = deadline
    md: Obj = {"name": "web", "namespace": "default", "generation": generation, "uid": "d-uid"}
    if annotations:
        md["annotations"] = annotations
    return {"metadata": md, "spec": spec, "status": status or {}}


def rs(name: str, replicas: int, *, available: int = 0, created: str = "2026-01-01T00:00:00Z",
       image: str = "nginx", annotations: dict[str, str] | None = None, status_replicas: int | None = None) -> Obj:
    md: Obj = {"name": name, "namespace": "default", "uid": f"uid-{name}", "creationTimestamp": created}
    if annotations:
        md["annotations"] = annotations
    return {"metadata": md,
            "spec": {"replicas": replicas,
                     "template": {"metadata": {"labels": {"app": "web", "pod-template-hash": name}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}},
            "status": {"replicas": replicas if status_replicas is None else status_replicas,
                       "availableReplicas": available, "readyReplicas": available}}


# -- ResolveFenceposts (deployment_util_test.go TestResolveFenceposts) ----------------------------

@pytest.mark.parametrize(("surge", "unavailable", "desired", "expected"), [
    ("0%", "0%", 0, (0, 1)),
    ("39%", "39%", 10, (4, 3)),
    ("oops", "39%", 10, ValueError),
    ("55%", "urg", 10, ValueError),
    ("5", "1", 10, ValueError),  # a string that is not a percentage
    (5, 1, 10, (5, 1)),
    ("25%", "25%", 3, (1, 0)),
    ("25%", "25%", 5, (2, 1)),
    (0, 0, 4, (0, 1)),
])
def test_resolve_fenceposts(surge: Any, unavailable: Any, desired: int, expected: Any) -> None:
    if expected is ValueError:
        with pytest.raises(ValueError):
            util.resolve_fenceposts(surge, unavailable, desired)
    else:
        assert util.resolve_fenceposts(surge, unavailable, desired) == expected


# -- MaxUnavailable (TestMaxUnavailable) ---------------------------------------------------------

@pytest.mark.parametrize(("replicas", "surge", "unavailable", "strategy", "expected"), [
    (10, 0, 1, "RollingUpdate", 1),          # maxUnavailable less than replicas
    (10, 0, 10, "RollingUpdate", 10),        # equal
    (5, 0, 10, "RollingUpdate", 5),          # greater than replicas: capped
    (10, 0, "10%", "RollingUpdate", 1),      # percent
    (5, 0, "100%", "RollingUpdate", 5),
    (5, 0, "300%", "RollingUpdate", 5),      # percent greater than 100: capped at replicas
    (0, 0, 1, "RollingUpdate", 0),           # no replicas
    (10, 0, 1, "Recreate", 0),               # not a rolling update
])
def test_max_unavailable(replicas: int, surge: Any, unavailable: Any, strategy: str, expected: int) -> None:
    d = deployment(replicas, surge=surge, unavailable=unavailable, strategy=strategy)
    assert util.max_unavailable(d) == expected


# -- NewRSNewReplicas (TestNewRSNewReplicas) ------------------------------------------------------

@pytest.mark.parametrize(("strategy", "d_replicas", "new_replicas", "surge", "expected"), [
    ("RollingUpdate", 1, 5, 1, 5),   # "can not scale up - to newRSReplicas"
    ("RollingUpdate", 6, 2, 10, 6),  # "scale up - to depReplicas"
    ("Recreate", 3, 1, 1, 3),        # "recreate - to depReplicas"
])
def test_new_rs_new_replicas(strategy: str, d_replicas: int, new_replicas: int, surge: int, expected: int) -> None:
    d = deployment(d_replicas, surge=surge, unavailable=1, strategy=strategy)
    new = rs("new", new_replicas)
    # upstream passes allRSs = [rs5]: another ReplicaSet of five replicas
    assert util.new_rs_new_replicas(d, [rs("rs5", 5)], new) == expected


# -- getReplicaSetFraction / GetProportion (TestGetReplicaSetFraction) ----------------------------

@pytest.mark.parametrize(("d_replicas", "surge", "rs_replicas", "max_annotation", "d_status_replicas", "expected"), [
    (10, 0, 10, 10, 10, 0),            # no scaling
    (0, 0, 10, 10, 10, -10),           # scaling down to zero: the whole size
    (20, 0, 10, 10, 10, 10),           # scaling up: doubles
    (5, 0, 10, 10, 10, -5),            # scaling down: halves
    (4, 0, 4, None, 3, 1),             # no max-replicas annotation: the deployment's status replicas
    (5, 0, 5, 2, 3, 8),                # round(5*5/2)=13 → +8 (rounding .5 away from zero)
])
def test_replica_set_fraction(d_replicas: int, surge: int, rs_replicas: int, max_annotation: int | None,
                              d_status_replicas: int, expected: int) -> None:
    d = deployment(d_replicas, surge=surge, unavailable=1, status={"replicas": d_status_replicas})
    ann = {util.MAX_REPLICAS: str(max_annotation)} if max_annotation is not None else None
    assert util.replica_set_fraction(rs("a", rs_replicas, annotations=ann), d) == expected


def test_proportion_stays_within_what_is_left() -> None:
    d = deployment(20, surge=0, unavailable=1, status={"replicas": 10})
    a = rs("a", 10, annotations={util.MAX_REPLICAS: "10"})
    assert util.proportion(a, d, 10, 0) == 10
    assert util.proportion(a, d, 10, 7) == 3       # min(fraction, allowed) scaling up
    smaller = deployment(5, surge=0, unavailable=1)
    assert util.proportion(a, smaller, -5, -3) == -2      # max(fraction, allowed) scaling down
    assert util.proportion(None, d, 10, 0) == 0
    assert util.proportion(rs("z", 0), d, 10, 0) == 0


# -- proportional scaling (sync_test.go TestScale) ------------------------------------------------

@pytest.mark.parametrize(("d_replicas", "old_d_replicas", "new_size", "old_size", "expected_new", "expected_old"), [
    (10, 5, 2, 3, 4, 6),   # "proportional scaling: 5 -> 10"
    (3, 5, 2, 3, 1, 2),    # "proportional scaling: 5 -> 3"
    (4, 9, 8, 1, 4, 0),    # "proportional scaling: 9 -> 4"
])
def test_proportional_scaling_as_upstream(d_replicas: int, old_d_replicas: int, new_size: int, old_size: int,
                                          expected_new: int, expected_old: int) -> None:
    # upstream's newDeployment: maxSurge 0, maxUnavailable 0; the ReplicaSets carry the old
    # deployment's desired and max (replicas + surge) annotations
    d = deployment(d_replicas, surge=0, unavailable=0)
    ann = {util.MAX_REPLICAS: str(old_d_replicas), util.DESIRED_REPLICAS: str(old_d_replicas)}
    new = rs("new", new_size, created="2026-01-02T00:00:00Z", annotations=ann)
    old = rs("old", old_size, created="2026-01-01T00:00:00Z", annotations=ann)
    sizes = {r["metadata"]["name"]: size for r, size in util.proportional_sizes(d, new, [old])}
    assert sizes == {"new": expected_new, "old": expected_old}


# -- FindNewReplicaSet / FindOldReplicaSets ------------------------------------------------------

def test_find_new_and_old_replica_sets() -> None:
    d = deployment(3)
    new_older = rs("a", 1, created="2026-01-01T00:00:00Z")
    new_newer = rs("b", 1, created="2026-01-02T00:00:00Z")
    old = rs("c", 2, image="nginx:1.0")
    idle = rs("e", 0, image="nginx:0.9")
    # The oldest of two equal templates is the new one (upstream: sorted by creation first).
    assert util.find_new_replica_set(d, [new_newer, old, new_older])["metadata"]["name"] == "a"
    assert util.find_new_replica_set(d, [old]) is None
    required, every = util.find_old_replica_sets(d, [new_older, old, idle])
    assert [r["metadata"]["name"] for r in required] == ["c"]
    assert [r["metadata"]["name"] for r in every] == ["c", "e"]


def test_equal_ignore_hash_ignores_the_hash_label_and_a_null_creation_timestamp() -> None:
    a = {"metadata": {"labels": {"app": "web", "pod-template-hash": "x"}}, "spec": {"containers": []}}
    b = {"metadata": {"labels": {"app": "web"}, "creationTimestamp": None}, "spec": {"containers": []}}
    assert util.equal_ignore_hash(a, b)
    assert not util.equal_ignore_hash(a, {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": []}})


def test_find_active_or_latest() -> None:
    new = rs("new", 0, created="2026-01-03T00:00:00Z")
    older = rs("older", 0, created="2026-01-01T00:00:00Z")
    newest_old = rs("newest-old", 0, created="2026-01-02T00:00:00Z")
    assert util.find_active_or_latest(None, [older, newest_old])["metadata"]["name"] == "newest-old"
    assert util.find_active_or_latest(new, [older])["metadata"]["name"] == "new"
    running = rs("running", 2)
    assert util.find_active_or_latest(new, [running])["metadata"]["name"] == "running"
    assert util.find_active_or_latest(rs("n", 1), [running]) is None
    assert util.find_active_or_latest(None, []) is None


# -- rolling_test.go ----------------------------------------------------------------------------

@pytest.mark.parametrize(("old_replicas", "ready", "unhealthy_cleanup", "max_cleanup", "expected"), [
    # TestDeploymentController_cleanupUnhealthyReplicas
    (10, 8, 2, 2, 2),
    (10, 8, 2, 1, 1),
    (10, 8, 2, 3, 2),
    (10, 8, 2, 0, 0),
    (10, 10, 0, 3, 0),
])
def test_cleanup_unhealthy_replicas(old_replicas: int, ready: int, unhealthy_cleanup: int, max_cleanup: int,
                                    expected: int) -> None:
    old = rs("old", old_replicas, available=ready)
    plan = util.cleanup_unhealthy_plan([old], max_cleanup)
    assert sum(util.replicas(r) - size for r, size in plan) == expected


@pytest.mark.parametrize(("d_replicas", "unavailable", "old_replicas", "expected_old"), [
    # TestDeploymentController_scaleDownOldReplicaSetsForRollingUpdate (all old pods available)
    (10, 0, 10, 10),      # maxUnavailable 0: nothing may go
    (10, 1, 10, 9),
    (10, 2, 10, 8),
    (10, 11, 10, 0),      # capped at the replicas: everything may go
])
def test_scale_down_old_for_rolling_update(d_replicas: int, unavailable: int, old_replicas: int,
                                           expected_old: int) -> None:
    d = deployment(d_replicas, surge=1 if unavailable == 0 else 0, unavailable=unavailable)
    old = rs("old", old_replicas, available=old_replicas)
    plan = util.scale_down_old_plan(d, [old], [old])
    got = plan[0][1] if plan else old_replicas
    assert got == expected_old


@pytest.mark.parametrize(("old_replicas", "new_replicas", "ready_old", "ready_new", "unavailable", "scaled_down"), [
    # TestDeploymentController_reconcileOldReplicaSets (10 replicas, surge 0)
    (10, 0, 10, 0, 0, 0),   # no unavailability allowed, nothing ready beyond min: no scale down
    (10, 0, 10, 0, 1, 1),
    (10, 0, 10, 0, 2, 2),
    (10, 0, 10, 0, 3, 3),   # upstream's "scale down 3"
    (10, 0, 9, 0, 3, 3),    # one unhealthy old replica: cleaned up first, then 2 scaled down
])
def test_reconcile_old_replica_sets_budget(old_replicas: int, new_replicas: int, ready_old: int, ready_new: int,
                                           unavailable: int, scaled_down: int) -> None:
    d = deployment(10, surge=0 if unavailable else 1, unavailable=unavailable)
    old = rs("old", old_replicas, available=ready_old)
    new = rs("new", new_replicas, available=ready_new, created="2026-01-02T00:00:00Z")
    budget = util.max_scaled_down(d, [old, new], new)
    total = 0
    if budget > 0:
        plan = util.cleanup_unhealthy_plan([old], budget)
        total += sum(util.replicas(r) - size for r, size in plan)
        after = [rs("old", size, available=ready_old) for _, size in plan] or [old]
        plan2 = util.scale_down_old_plan(d, [*after, new], after)
        total += sum(util.replicas(r) - size for r, size in plan2)
    assert total == scaled_down


# -- conditions: complete, progressing, timed out -------------------------------------------------

def test_deployment_complete() -> None:
    d = deployment(5, generation=2)
    ok = {"replicas": 5, "updatedReplicas": 5, "availableReplicas": 5, "observedGeneration": 2}
    assert util.deployment_complete(d, ok)
    assert not util.deployment_complete(d, {**ok, "availableReplicas": 4})       # not all available
    assert not util.deployment_complete(d, {**ok, "updatedReplicas": 4})         # not all updated
    assert not util.deployment_complete(d, {**ok, "replicas": 6})                # old pods remain
    assert not util.deployment_complete(d, {**ok, "observedGeneration": 1})      # spec not observed


@pytest.mark.parametrize(("old", "new", "expected"), [
    ({"updatedReplicas": 1}, {"updatedReplicas": 2}, True),
    ({"replicas": 2, "updatedReplicas": 1}, {"replicas": 1, "updatedReplicas": 1}, True),   # fewer old
    ({"readyReplicas": 1}, {"readyReplicas": 2}, True),
    ({"availableReplicas": 1}, {"availableReplicas": 2}, True),
    ({"replicas": 2, "updatedReplicas": 1, "availableReplicas": 2},
     {"replicas": 2, "updatedReplicas": 1, "availableReplicas": 2}, False),
])
def test_deployment_progressing(old: Obj, new: Obj, expected: bool) -> None:
    assert util.deployment_progressing(deployment(3, status=old), new) is expected


def _progressing(reason: str, updated: str) -> Obj:
    return {"conditions": [{"type": "Progressing", "status": "True", "reason": reason,
                            "lastUpdateTime": updated, "lastTransitionTime": updated}]}


def test_deployment_timed_out() -> None:
    now = util.timestamp_seconds("2026-01-01T00:10:00Z")
    d = deployment(3, deadline=300)
    assert util.deployment_timed_out(d, _progressing(util.REPLICA_SET_UPDATED, "2026-01-01T00:00:00Z"), now=now)
    assert not util.deployment_timed_out(d, _progressing(util.REPLICA_SET_UPDATED, "2026-01-01T00:09:00Z"), now=now)
    assert not util.deployment_timed_out(d, _progressing(util.NEW_RS_AVAILABLE, "2026-01-01T00:00:00Z"), now=now)
    assert util.deployment_timed_out(d, _progressing(util.TIMED_OUT, "2026-01-01T00:09:59Z"), now=now)
    assert not util.deployment_timed_out(deployment(3, deadline=None),
                                         _progressing(util.REPLICA_SET_UPDATED, "2026-01-01T00:00:00Z"), now=now)
    assert not util.deployment_timed_out(d, {}, now=now)


def test_set_condition_keeps_transition_time_and_skips_same_reason() -> None:
    status: Obj = {}
    util.set_condition(status, util.new_condition("Available", "True", "A", "m", now="t1"))
    util.set_condition(status, util.new_condition("Available", "True", "A", "m2", now="t2"))
    assert status["conditions"][0]["message"] == "m"  # same status and reason: unchanged
    util.set_condition(status, util.new_condition("Available", "True", "B", "m3", now="t3"))
    assert status["conditions"][0]["lastTransitionTime"] == "t1" and status["conditions"][0]["reason"] == "B"
    util.set_condition(status, util.new_condition("Available", "False", "C", "m4", now="t4"))
    assert status["conditions"][0]["lastTransitionTime"] == "t4"


def test_calculate_status_counts_and_availability() -> None:
    d = deployment(4, surge=1, unavailable=1, generation=3)
    new = rs("new", 2, available=2)
    old = rs("old", 2, available=1)
    status = util.calculate_status([old, new], new, d, now="t")
    assert status["observedGeneration"] == 3 and status["replicas"] == 4 and status["updatedReplicas"] == 2
    assert status["availableReplicas"] == 3 and status["unavailableReplicas"] == 1
    available = util.get_condition(status, "Available")
    assert (available["status"], available["reason"], available["message"]) == \
        ("True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
    status = util.calculate_status([rs("old", 4, available=1)], None, d, now="t")
    available = util.get_condition(status, "Available")
    assert (available["status"], available["reason"], available["message"]) == \
        ("False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")
    assert "updatedReplicas" not in status  # omitempty


# -- annotations (TestAnnotationUtils, SetNewReplicaSetAnnotations) -------------------------------

def test_new_rs_annotations_revision_history_and_copy() -> None:
    d = deployment(3, annotations={"kubernetes.io/change-cause": "set image", util.REVISION: "7",
                                   util.LAST_APPLIED: "{}"})
    ann: dict[str, str] = {}
    assert util.new_rs_annotations(d, ann, 1, exists=False)
    assert ann == {"kubernetes.io/change-cause": "set image", util.REVISION: "1",
                   util.DESIRED_REPLICAS: "3", util.MAX_REPLICAS: "4"}
    # a rollback to this ReplicaSet: the old revision goes to the history
    assert util.new_rs_annotations(d, ann, 3, exists=True)
    assert ann[util.REVISION] == "3" and ann[util.REVISION_HISTORY] == "1"
    assert util.new_rs_annotations(d, ann, 5, exists=True)
    assert ann[util.REVISION_HISTORY] == "1,3"
    # a lower revision never replaces a higher one
    assert not util.new_rs_annotations(d, ann, 2, exists=True)
    assert ann[util.REVISION] == "5"


def test_max_revision_and_order() -> None:
    a = rs("a", 0, annotations={util.REVISION: "3"})
    b = rs("b", 0, annotations={util.REVISION: "10"})
    c = rs("c", 0)
    assert util.max_revision([a, b, c]) == 10
    assert [r["metadata"]["name"] for r in util.sorted_by_revision([b, a, c])] == ["c", "a", "b"]


def test_stuck_recheck_waits_for_the_deadline() -> None:
    d = deployment(3, deadline=600, status=_progressing(util.REPLICA_SET_UPDATED, "2026-01-01T00:00:00Z"))
    now = util.timestamp_seconds("2026-01-01T00:03:00Z")
    assert util.stuck_recheck(d, {"replicas": 3}, now=now) == pytest.approx(420.0)
    done = {"replicas": 3, "updatedReplicas": 3, "availableReplicas": 3, "observedGeneration": 1}
    assert util.stuck_recheck(d, done, now=now) is None
