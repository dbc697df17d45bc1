"""The Deployment and ReplicaSet controllers on the in-process cluster (scheduler, kubelet
simulation, garbage collector), in virtual time: pod start-ups of seconds pass in milliseconds
and every rollout is watched at a 50 ms (virtual) pace, so the budget invariants are checked
at every step a user could observe.

* RollingUpdate never runs more than ``replicas + maxSurge`` pods nor fewer than
  ``replicas - maxUnavailable`` available ones;
* Recreate never runs old and new pods at once;
* ``revisionHistoryLimit`` bounds the old ReplicaSets kept;
* a rollout that never gets Ready ends with ``ProgressDeadlineExceeded``;
* the ReplicaSet controller adopts a matching orphan, releases a relabelled pod, replaces it,
  and reports ``fullyLabeledReplicas`` / ``availableReplicas`` with ``minReadySeconds``;
* deleting a Deployment cascades to its ReplicaSets and pods; ``Orphan`` leaves them, unowned.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from everynode.api.errors import ApiError
from everynode.product.cluster import Cluster
from everynode.virtualtime import run_virtual

Obj = dict[str, Any]
NS = "default"
DEPLOY = "deployments.apps"
RS = "replicasets.apps"


def deployment(name: str = "web", *, replicas: int = 4, image: str = "nginx:1", strategy: Obj | None = None,
               annotations: dict[str, str] | None = None, **spec: Any) -> Obj:
    template_md: Obj = {"labels": {"app": name}}
    if annotations:
        template_md["annotations"] = annotations
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "strategy": strategy or {"type": "RollingUpdate",
                                              "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                     "template": {"metadata": template_md,
                                  "spec": {"containers": [{"name": "c", "image": image}]}}, **spec}}


def run(scenario: Callable[[Cluster], Awaitable[None]], *, nodes: int = 3, pod_startup: float = 3.0) -> None:
    async def main() -> None:
        async with Cluster(nodes=nodes, pod_startup=pod_startup, virtual_time=True) as cluster:
            await scenario(cluster)

    run_virtual(main())


async def eventually(check: Callable[[], Awaitable[Any]], *, seconds: float = 300.0, what: str = "") -> Any:
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        result = await check()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not reached: {what}")
        await asyncio.sleep(0.05)


async def pods(cluster: Cluster, app: str = "web") -> list[Obj]:
    return (await cluster.client.list("pods", namespace=NS, label_selector=f"app={app}"))["items"]


def live(ps: list[Obj]) -> list[Obj]:
    return [p for p in ps if not p["metadata"].get("deletionTimestamp")]


def ready(p: Obj) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (p.get("status") or {}).get("conditions") or ())


def image(p: Obj) -> str:
    return p["spec"]["containers"][0]["image"]


async def rolled_out(cluster: Cluster, name: str = "web") -> Obj | None:
    """kubectl's rollout-status rule."""
    d = await cluster.client.get(DEPLOY, name, namespace=NS)
    st = d.get("status") or {}
    want = d["spec"]["replicas"]
    done = d["metadata"]["generation"] <= st.get("observedGeneration", 0) and st.get("updatedReplicas", 0) == want \
        and st.get("replicas", 0) == want and st.get("availableReplicas", 0) == want
    return d if done else None


def cond(obj: Obj, type_: str) -> Obj | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == type_), None)


async def set_image(cluster: Cluster, new: str, name: str = "web") -> None:
    await cluster.client.patch(DEPLOY, name, {"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": new}]}}}}, namespace=NS, patch_type="strategic")


def test_rolling_update_stays_within_max_surge_and_max_unavailable() -> None:
    async def scenario(cluster: Cluster) -> None:
        await cluster.client.create(DEPLOY, deployment(replicas=4))
        await eventually(lambda: rolled_out(cluster), what="first rollout")
        await set_image(cluster, "nginx:2")
        most, fewest_ready, saw_both = 0, 4, False
        while not await rolled_out(cluster) or {image(p) for p in live(await pods(cluster))} != {"nginx:2"}:
            current = live(await pods(cluster))
            most = max(most, len(current))
            fewest_ready = min(fewest_ready, sum(ready(p) for p in current))
            saw_both = saw_both or len({image(p) for p in current}) == 2
            await asyncio.sleep(0.05)
        assert most == 5            # replicas + maxSurge, reached and never exceeded
        assert fewest_ready == 4    # replicas - maxUnavailable, never less
        assert saw_both             # a rolling update: old and new side by side
        rss = (await cluster.client.list(RS, namespace=NS))["items"]
        assert sorted(r["spec"]["replicas"] for r in rss) == [0, 4]

    run(scenario)


def test_recreate_never_runs_old_and_new_pods_together() -> None:
    async def scenario(cluster: Cluster) -> None:
        await cluster.client.create(DEPLOY, deployment(replicas=3, strategy={"type": "Recreate"}))
        await eventually(lambda: rolled_out(cluster), what="first rollout")
        await set_image(cluster, "nginx:2")
        while not await rolled_out(cluster) or {image(p) for p in await pods(cluster)} != {"nginx:2"}:
            current = await pods(cluster)  # terminating pods count: Recreate waits for them
            assert len({image(p) for p in current}) <= 1, [image(p) for p in current]
            await asyncio.sleep(0.05)
        events = (await cluster.client.list("events", namespace=NS))["items"]
        messages = [e["message"] for e in events if e["reason"] == "ScalingReplicaSet"]
        assert any(m.startswith("Scaled down replica set web-") and m.endswith("from 3 to 0") for m in messages)

    run(scenario)


def test_revision_history_limit_keeps_that_many_old_replica_sets() -> None:
    async def scenario(cluster: Cluster) -> None:
        await cluster.client.create(DEPLOY, deployment(replicas=1, revisionHistoryLimit=1))
        for tag in ("2", "3", "4"):
            await eventually(lambda: rolled_out(cluster), what="rollout")
            await set_image(cluster, f"nginx:{tag}")
        await eventually(lambda: rolled_out(cluster), what="last rollout")

        async def trimmed() -> list[Obj] | None:
            rss = (await cluster.client.list(RS, namespace=NS))["items"]
            return rss if len(rss) == 2 else None

        rss = await eventually(trimmed, what="history trimmed to one old ReplicaSet")
        revisions = sorted(int(r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]) for r in rss)
        assert revisions == [3, 4]
        d = await cluster.client.get(DEPLOY, "web", namespace=NS)
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "4"

    run(scenario)


def test_a_rollout_that_never_gets_ready_exceeds_its_progress_deadline() -> None:
    async def scenario(cluster: Cluster) -> None:
        await cluster.client.create(DEPLOY, deployment(replicas=2, progressDeadlineSeconds=30,
                                                       annotations={"everynode.io/behavior": "never-ready"}))

        async def timed_out() -> Obj | None:
            d = await cluster.client.get(DEPLOY, "web", namespace=NS)
            c = cond(d, "Progressing")
            return d if c is not None and c["reason"] == "ProgressDeadlineExceeded" else None

        loop = asyncio.get_running_loop()
        t0 = loop.time()
        d = await eventually(timed_out, what="ProgressDeadlineExceeded")
        assert 30 <= loop.time() - t0 < 40  # requeued at the deadline, not at a resync
        rs = (await cluster.client.list(RS, namespace=NS))["items"][0]
        c = cond(d, "Progressing")
        assert (c["status"], c["message"]) == ("False", f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.')
        available = cond(d, "Available")
        assert (available["status"], available["reason"]) == ("False", "MinimumReplicasUnavailable")

    run(scenario)


def test_replica_set_adopts_releases_and_reports_status() -> None:
    async def scenario(cluster: Cluster) -> None:
        orphan = {"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "orphan", "namespace": NS, "labels": {"app": "rs", "tier": "x"}},
                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        await cluster.client.create("pods", orphan)
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": NS},
              "spec": {"replicas": 3, "minReadySeconds": 20, "selector": {"matchLabels": {"app": "rs"}},
                       "template": {"metadata": {"labels": {"app": "rs", "tier": "x"}},
                                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
        created = await cluster.client.create(RS, rs)

        async def three() -> list[Obj] | None:
            ps = live(await pods(cluster, "rs"))
            return ps if len(ps) == 3 else None

        ps = await eventually(three, what="three pods")
        assert any(p["metadata"]["name"] == "orphan" for p in ps)  # adopted, not duplicated
        adopted = await cluster.client.get("pods", "orphan", namespace=NS)
        assert adopted["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]

        async def status(**want: int) -> Obj | None:
            got = await cluster.client.get(RS, "rs", namespace=NS)
            st = got.get("status") or {}
            return got if all(st.get(k, 0) == v for k, v in want.items()) else None

        got = await eventually(lambda: status(replicas=3, readyReplicas=3, fullyLabeledReplicas=3),
                               what="three ready")
        assert got["status"].get("availableReplicas", 0) < 3  # minReadySeconds not yet over for all
        await eventually(lambda: status(availableReplicas=3), what="available after minReadySeconds")
        assert got["status"]["observedGeneration"] == 1

        # relabelled: released (no controller ref), and replaced
        await cluster.client.patch("pods", "orphan", {"metadata": {"labels": {"app": "gone"}}}, namespace=NS)
        released = await eventually(
            lambda: _no_owner(cluster, "orphan"), what="orphan released")
        assert released["metadata"]["labels"]["app"] == "gone"
        await eventually(three, what="a replacement pod")
        await cluster.client.patch(RS, "rs", {"spec": {"replicas": 1}}, namespace=NS)
        await eventually(lambda: status(replicas=1), what="scaled down to one")

    run(scenario)


async def _no_owner(cluster: Cluster, name: str) -> Obj | None:
    p = await cluster.client.get("pods", name, namespace=NS)
    return p if not p["metadata"].get("ownerReferences") else None


def test_deleting_a_deployment_cascades_and_orphan_keeps_the_replica_set() -> None:
    async def scenario(cluster: Cluster) -> None:
        for name in ("web", "keep"):
            await cluster.client.create(DEPLOY, deployment(name, replicas=2))
            await eventually(lambda name=name: rolled_out(cluster, name), what=f"{name} rolled out")
        await cluster.client.delete(DEPLOY, "web", namespace=NS)

        async def gone() -> bool:
            rss = [r for r in (await cluster.client.list(RS, namespace=NS))["items"]
                   if r["metadata"]["labels"]["app"] == "web"]
            return not rss and not await pods(cluster, "web")

        await eventually(gone, what="web's ReplicaSet and pods deleted")
        await cluster.client.delete(DEPLOY, "keep", namespace=NS, propagation_policy="Orphan")

        async def orphaned() -> list[Obj] | None:
            try:
                await cluster.client.get(DEPLOY, "keep", namespace=NS)
                return None
            except ApiError:
                pass
            rss = [r for r in (await cluster.client.list(RS, namespace=NS))["items"]
                   if r["metadata"]["labels"]["app"] == "keep"]
            return rss if rss and not rss[0]["metadata"].get("ownerReferences") else None

        await eventually(orphaned, what="keep's ReplicaSet orphaned")
        assert len(live(await pods(cluster, "keep"))) == 2

    run(scenario)


def test_pods_that_cannot_be_created_show_as_replica_failure_on_both() -> None:
    async def scenario(cluster: Cluster) -> None:
        d = deployment(replicas=2)
        d["spec"]["template"]["spec"]["priorityClassName"] = "missing"
        await cluster.client.create(DEPLOY, d)

        async def failing() -> Obj | None:
            got = await cluster.client.get(DEPLOY, "web", namespace=NS)
            return got if cond(got, "ReplicaFailure") is not None else None

        got = await eventually(failing, what="ReplicaFailure on the Deployment")
        rs = (await cluster.client.list(RS, namespace=NS))["items"][0]
        rs_cond = cond(rs, "ReplicaFailure")
        assert (rs_cond["status"], rs_cond["reason"]) == ("True", "FailedCreate")
        assert "no PriorityClass with name missing was found" in rs_cond["message"]
        d_cond = cond(got, "ReplicaFailure")
        assert (d_cond["reason"], d_cond["message"]) == (rs_cond["reason"], rs_cond["message"])
        events = (await cluster.client.list("events", namespace=NS))["items"]
        assert any(e["reason"] == "FailedCreate" and e["involvedObject"]["kind"] == "ReplicaSet"
                   and e["message"].startswith("Error creating: ") for e in events)

    run(scenario)
