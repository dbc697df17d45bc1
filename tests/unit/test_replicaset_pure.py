"""The ReplicaSet controller's pure decisions: slow-start batches, which pods go first
(``ActivePodsWithRanks``, the cases of upstream's ``controller_utils_test.go``
``TestSortingActivePods`` / ``TestSortingActivePodsWithRanks``), the pod a ReplicaSet creates
(``GetPodFromTemplate``) and its status (``calculateStatus``)."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.controllers.replicaset import (
    pod_deletion_less,
    pod_from_template,
    pods_to_delete,
    replica_set_status,
    slow_start_batches,
)

Obj = dict[str, Any]
NOW = 1_800_000_000.0


def stamp(seconds_ago: float) -> str:
    from everynode.clock import format_rfc3339

    return format_rfc3339(NOW - seconds_ago)


def pod(name: str, *, node: str = "", phase: str = "Running", ready_since: float | None = None,
        created_ago: float = 1000, restarts: int = 0, cost: int | None = None, labels: dict[str, str] | None = None,
        uid: str | None = None) -> Obj:
    md: Obj = {"name": name, "namespace": "default", "uid": uid or f"uid-{name}",
               "creationTimestamp": stamp(created_ago), "labels": labels or {"app": "web"}}
    if cost is not None:
        md["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": str(cost)}
    status: Obj = {"phase": phase, "containerStatuses": [{"name": "c", "restartCount": restarts}]}
    if ready_since is not None:
        status["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": stamp(ready_since)}]
    return {"metadata": md, "spec": {"nodeName": node} if node else {}, "status": status}


@pytest.mark.parametrize(("count", "batches"), [(0, []), (1, [1]), (2, [1, 1]), (3, [1, 2]), (10, [1, 2, 4, 3]),
                                                (500, [1, 2, 4, 8, 16, 32, 64, 128, 245])])
def test_slow_start_batches(count: int, batches: list[int]) -> None:
    assert slow_start_batches(count) == batches
    assert sum(batches) == count


def test_deletion_order_follows_active_pods_with_ranks() -> None:
    # TestSortingActivePods: each pod "beats" (is deleted before) the ones after it.
    ordered = [
        pod("unassigned", phase="Pending"),
        pod("pending", node="n1", phase="Pending"),
        pod("unknown", node="n1", phase="Unknown"),
        pod("running-not-ready", node="n1"),
        pod("ready-cheap", node="n1", ready_since=2000, cost=-10),
        pod("ready-recently", node="n1", ready_since=10),
        pod("ready-long-restarted", node="n1", ready_since=1_000_000, restarts=5),
        pod("ready-long-new", node="n1", ready_since=1_000_000, created_ago=1_000_000),
        pod("ready-long-old", node="n1", ready_since=1_000_000, created_ago=100_000_000),
    ]
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            assert pod_deletion_less(a, b, 0, 0, NOW), (a["metadata"]["name"], b["metadata"]["name"])
            assert not pod_deletion_less(b, a, 0, 0, NOW), (b["metadata"]["name"], a["metadata"]["name"])


def test_doubled_up_pods_go_first_and_logarithmic_buckets_fall_back_to_uid() -> None:
    a = pod("a", node="n1", ready_since=100)
    b = pod("b", node="n2", ready_since=100)
    assert pod_deletion_less(a, b, 2, 1, NOW)  # more related pods on a's node
    # ready 100 s vs 110 s ago: the same power-of-two bucket of nanoseconds → uid decides
    c = pod("c", node="n1", ready_since=100, uid="b-uid")
    d = pod("d", node="n1", ready_since=110, uid="a-uid")
    assert pod_deletion_less(d, c, 0, 0, NOW) and not pod_deletion_less(c, d, 0, 0, NOW)


def test_pods_to_delete_prefers_the_node_with_more_related_pods() -> None:
    pods = [pod("on-busy", node="busy", ready_since=5000), pod("on-quiet", node="quiet", ready_since=5000)]
    related = [*pods, pod("sibling", node="busy", ready_since=5000)]
    assert [p["metadata"]["name"] for p in pods_to_delete(pods, related, 1, now=NOW)] == ["on-busy"]
    assert len(pods_to_delete(pods, related, 2, now=NOW)) == 2


def test_pod_from_template() -> None:
    rs = {"metadata": {"name": "web-abc", "namespace": "default", "uid": "rs-uid"},
          "spec": {"template": {"metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}},
                                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    got = pod_from_template(rs)
    assert got["metadata"]["generateName"] == "web-abc-"
    assert got["metadata"]["labels"] == {"app": "web"} and got["metadata"]["annotations"] == {"a": "b"}
    ref = got["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["uid"], ref["controller"], ref["blockOwnerDeletion"]) == \
        ("ReplicaSet", "rs-uid", True, True)
    assert got["spec"] == {"containers": [{"name": "c", "image": "nginx"}]}


def test_replica_set_status_counts_and_replica_failure() -> None:
    rs = {"metadata": {"name": "r", "generation": 2},
          "spec": {"replicas": 3, "minReadySeconds": 30,
                   "template": {"metadata": {"labels": {"app": "web", "tier": "fe"}}}},
          "status": {"replicas": 0, "observedGeneration": 1}}
    pods = [pod("a", labels={"app": "web", "tier": "fe"}, ready_since=100),
            pod("b", labels={"app": "web"}, ready_since=10),
            pod("c", labels={"app": "web", "tier": "fe"})]
    status = replica_set_status(rs, pods, None, now=NOW, stamp="t")
    assert status == {"replicas": 3, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 1,
                      "observedGeneration": 1}
    failed = replica_set_status(rs, pods[:1], ValueError("quota"), now=NOW, stamp="t")
    cond = failed["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == \
        ("ReplicaFailure", "True", "FailedCreate", "quota")
    # a later success removes the condition
    assert "conditions" not in replica_set_status({**rs, "status": failed}, pods, None, now=NOW, stamp="t")
