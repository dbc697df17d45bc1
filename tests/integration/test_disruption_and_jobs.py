"""PodDisruptionBudgets, the eviction subresource and Jobs on a whole in-process control plane
(scheduler, kubelet simulation, disruption and Job controllers), through the Python client.

Virtual time where the rules wait (the Job back-off between retries, ttlSecondsAfterFinished),
so the test is quick and the delays are exact."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import everynode
from everynode.api.errors import ApiError
from everynode.clock import parse_rfc3339

NS = "default"


def bare_pod(name: str, *, labels: dict[str, str] | None = None, behavior: str | None = None,
             node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": NS, "labels": labels or {"app": "web"}}
    if behavior:
        md["annotations"] = {"everynode.io/behavior": behavior}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


def budget(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("selector", {"matchLabels": {"app": "web"}})
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": NS},
            "spec": spec}


def eviction(name: str, **delete_options: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": NS}}
    if delete_options:
        body["deleteOptions"] = delete_options
    return body


def evict(cluster: everynode.Cluster, name: str, **delete_options: Any) -> Any:
    return cluster.client.create_subresource("pods", name, "eviction", eviction(name, **delete_options), namespace=NS)


def refused(cluster: everynode.Cluster, name: str) -> ApiError:
    with pytest.raises(ApiError) as info:
        evict(cluster, name)
    return info.value


def healthy(n: int):
    return lambda pdb: (pdb.get("status") or {}).get("currentHealthy") == n and \
        (pdb.get("status") or {}).get("observedGeneration") == pdb["metadata"]["generation"]


@pytest.fixture(scope="module")
def cluster():
    with everynode.Cluster(nodes=2, control_planes=1, pod_startup=0.2, port=0) as c:
        yield c


@pytest.fixture
def clean(cluster):
    yield cluster
    for resource in ("poddisruptionbudgets.policy", "pods", "jobs.batch"):
        cluster.client.delete_collection(resource, namespace=NS)


def test_budget_status_and_evictions(clean) -> None:
    c = clean
    for i in range(3):
        c.client.create("pods", bare_pod(f"web-{i}"))
    c.client.create("pods", bare_pod("web-unready", behavior="never-ready"))
    c.client.create("poddisruptionbudgets.policy", budget("web", minAvailable=2))
    pdb = c.wait_for("poddisruptionbudgets.policy", "web", healthy(3), namespace=NS, timeout=20)
    status = pdb["status"]
    assert (status["disruptionsAllowed"], status["desiredHealthy"], status["expectedPods"]) == (1, 2, 4)
    assert [(x["type"], x["status"], x["reason"]) for x in status["conditions"]] == \
        [("DisruptionAllowed", "True", "SufficientPods")]

    # a dry run checks and changes nothing
    assert evict(c, "web-0", dryRun=["All"])["status"] == "Success"
    assert c.client.get("pods", "web-0", namespace=NS)["metadata"].get("deletionTimestamp") is None
    assert c.client.get("poddisruptionbudgets.policy", "web", namespace=NS)["status"]["disruptionsAllowed"] == 1

    # the one disruption allowed is spent and recorded
    assert evict(c, "web-0")["status"] == "Success"
    assert c.client.get("poddisruptionbudgets.policy", "web", namespace=NS)["status"]["disruptionsAllowed"] == 0
    c.wait_for("poddisruptionbudgets.policy", "web", healthy(2), namespace=NS, timeout=20)

    # none left: 429 with upstream's words
    e = refused(c, "web-1")
    assert (e.code, e.reason, e.message) == (429, "TooManyRequests",
                                             "Cannot evict pod as it would violate the pod's disruption budget.")
    assert e.status["details"]["causes"] == [{"reason": "DisruptionBudget",
                                              "message": "The disruption budget web needs 2 healthy pods and has "
                                                         "2 currently"}]
    # an unready pod costs nothing while the budget has its healthy pods (IfHealthyBudget)
    assert evict(c, "web-unready")["status"] == "Success"

    # a second budget over the same pods: upstream's 500
    c.client.create("poddisruptionbudgets.policy", budget("web-too", maxUnavailable=1))
    e = refused(c, "web-1")
    assert (e.code, e.message) == (500, "This pod has more than one PodDisruptionBudget, which the eviction "
                                        "subresource does not support.")


def test_pending_pods_and_preconditions(clean) -> None:
    c = clean
    c.client.create("pods", bare_pod("nowhere", node_selector={"no-such": "node"}))  # stays Pending
    c.client.create("poddisruptionbudgets.policy", budget("strict", maxUnavailable=0))
    c.wait_for("poddisruptionbudgets.policy", "strict", lambda p: (p.get("status") or {}).get("observedGeneration") == 1,
               namespace=NS, timeout=20)
    with pytest.raises(ApiError) as info:
        evict(c, "nowhere", preconditions={"uid": "not-the-uid"})
    assert info.value.code == 409
    assert evict(c, "nowhere")["status"] == "Success"  # Pending: no budget consulted
    with pytest.raises(ApiError) as info:
        evict(c, "nowhere")
    assert info.value.code == 404


def test_pods_of_a_controller_without_scale_fail_safe(clean) -> None:
    """A percentage needs the controllers' scale; a DaemonSet has none: SyncFailed, as upstream."""
    c = clean
    c.client.create("daemonsets.apps", {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": NS},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}},
                              "spec": {"containers": [{"name": "a", "image": "agent"}]}}}})
    c.client.create("poddisruptionbudgets.policy", budget("agent", minAvailable="50%",
                                                          selector={"matchLabels": {"app": "agent"}}))
    pdb = c.wait_for("poddisruptionbudgets.policy", "agent",
                     lambda p: any(x.get("reason") == "SyncFailed" for x in (p.get("status") or {}).get("conditions") or ()),
                     namespace=NS, timeout=20)
    cond = pdb["status"]["conditions"][0]
    assert cond["status"] == "False"
    assert cond["message"] == "daemonsets.apps does not implement the scale subresource"
    assert pdb["status"]["disruptionsAllowed"] == 0
    c.client.delete("daemonsets.apps", "agent", namespace=NS)


def job(name: str, *, behavior: str | None = None, **spec: Any) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}
    if behavior:
        template["metadata"] = {"annotations": {"everynode.io/behavior": behavior}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NS},
            "spec": {"template": template, **spec}}


def condition(job_obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((x for x in (job_obj.get("status") or {}).get("conditions") or ()
                 if x["type"] == type_ and x["status"] == "True"), None)


def test_a_job_runs_its_pods_to_completion(clean) -> None:
    c = clean
    c.client.create("jobs.batch", job("three", completions=3, parallelism=2))
    done = c.wait_for("jobs.batch", "three", lambda j: condition(j, "Complete"), namespace=NS, timeout=30)
    status = done["status"]
    assert status["succeeded"] == 3 and "failed" not in status and "active" not in status
    assert status["uncountedTerminatedPods"] == {} and status["completionTime"] >= status["startTime"]
    assert [x["type"] for x in status["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert condition(done, "Complete")["reason"] == "CompletionsReached"
    pods = c.client.list("pods", namespace=NS, label_selector="batch.kubernetes.io/job-name=three")["items"]
    assert len(pods) == 3
    for p in pods:
        assert p["status"]["phase"] == "Succeeded" and not p["metadata"].get("finalizers")
        terminated = p["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (terminated["reason"], terminated["exitCode"]) == ("Completed", 0)


def test_deleting_a_job_frees_its_pods_of_the_tracking_finalizer(clean) -> None:
    c = clean
    c.client.create("jobs.batch", job("long", parallelism=2, completions=2, behavior="never-ready"))
    c.wait_for("jobs.batch", "long", lambda j: (j.get("status") or {}).get("active") == 2, namespace=NS, timeout=30)
    c.client.delete("jobs.batch", "long", namespace=NS, propagation_policy="Background")

    async def pods_gone() -> None:
        client = c.plane.client
        for _ in range(300):
            left = (await client.list("pods", namespace=NS, label_selector="batch.kubernetes.io/job-name=long"))["items"]
            if not left:
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"pods left: {[(p['metadata']['name'], p['metadata'].get('finalizers')) for p in left]}")

    c.run(pods_gone(), timeout=60)


def test_a_failing_job_stops_at_its_backoff_limit() -> None:
    with everynode.Cluster(nodes=1, control_planes=1, pod_startup=1.0, virtual_time=True) as c:
        c.client.create("jobs.batch", job("flaky", behavior="fail", backoffLimit=2, ttlSecondsAfterFinished=100))
        failed = c.wait_for("jobs.batch", "flaky", lambda j: condition(j, "Failed"), namespace=NS, timeout=300)
        status = failed["status"]
        assert status["failed"] == 3 and "succeeded" not in status and "completionTime" not in status
        assert [x["type"] for x in status["conditions"]] == ["FailureTarget", "Failed"]
        cond = condition(failed, "Failed")
        assert (cond["reason"], cond["message"]) == ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
        pods = sorted(c.client.list("pods", namespace=NS)["items"], key=lambda p: p["metadata"]["creationTimestamp"])
        starts = [parse_rfc3339(p["metadata"]["creationTimestamp"]) for p in pods]
        # the back-off: 10 s after the first failure, 20 s after the second (plus the 1 s start-up)
        assert [round(b - a) for a, b in zip(starts, starts[1:], strict=False)] == [11, 21]
        # ttlSecondsAfterFinished: gone 100 s after it failed
        c.run(_gone(c, "flaky"), timeout=200)


async def _gone(c: everynode.Cluster, name: str) -> None:
    client = c.plane.client
    for _ in range(400):
        try:
            await client.get("jobs.batch", name, namespace=NS)
        except ApiError as e:
            if e.code == 404:
                return
        await asyncio.sleep(1)
    raise AssertionError("the finished Job was not deleted")


def test_a_job_past_its_active_deadline_fails() -> None:
    with everynode.Cluster(nodes=1, control_planes=1, pod_startup=1.0, virtual_time=True) as c:
        slow = job("slow", activeDeadlineSeconds=30)
        slow["spec"]["template"]["metadata"] = {"annotations": {"everynode.io/startup-seconds": "600"}}
        c.client.create("jobs.batch", slow)
        failed = c.wait_for("jobs.batch", "slow", lambda j: condition(j, "Failed"), namespace=NS, timeout=120)
        cond = condition(failed, "Failed")
        assert (cond["reason"], cond["message"]) == ("DeadlineExceeded", "Job was active longer than specified deadline")
        took = parse_rfc3339(cond["lastTransitionTime"]) - parse_rfc3339(failed["status"]["startTime"])
        assert 30 <= took < 32
        assert failed["status"]["failed"] == 1  # its pod, deleted before it finished
        assert "active" not in failed["status"]
