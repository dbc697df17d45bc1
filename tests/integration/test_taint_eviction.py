"""The taint eviction controller against the in-process API, on a virtual-time loop, so that
300-second tolerations pass instantly."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from everynode.api.errors import ApiError
from everynode.apiserver.service import ApiService
from everynode.client.informer import SharedInformerFactory
from everynode.client.inprocess import InProcessClient
from everynode.controllers.tainteviction import TaintEvictionController
from everynode.product.cluster import Cluster
from everynode.storage.memory import MemoryStore
from everynode.virtualtime import run_virtual, virtual_clock
from tests.support.waiting import wait_until

Obj = dict[str, Any]
NS = "default"
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}


def run(scenario: Callable[[InProcessClient, TaintEvictionController], Awaitable[None]]) -> None:
    async def main() -> None:
        clock = virtual_clock()
        client = InProcessClient(ApiService(MemoryStore(), clock=clock))
        informers = SharedInformerFactory(client)
        controller = TaintEvictionController(client, informers=informers, clock=clock)
        await controller.start()
        await client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
        try:
            await scenario(client, controller)
        finally:
            await controller.stop()
            await informers.stop()

    run_virtual(main())


async def make_pod(client: InProcessClient, name: str, tolerations: list[Obj], *, grace: int = 0) -> Obj:
    return await client.create("pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
        "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": grace, "tolerations": tolerations,
                 "containers": [{"name": "c", "image": "busybox"}]}})


async def taint(client: InProcessClient, taints: list[Obj] | None) -> None:
    await client.patch("nodes", "n1", {"spec": {"taints": taints}}, patch_type="merge")


async def pod_state(client: InProcessClient, name: str) -> Obj | None:
    try:
        return await client.get("pods", name, namespace=NS)
    except ApiError as e:
        assert e.code == 404
        return None


def now() -> float:
    return asyncio.get_running_loop().time()


def test_untolerated_taint_deletes_at_once_with_a_disruption_condition() -> None:
    async def scenario(client: InProcessClient, controller: TaintEvictionController) -> None:
        await make_pod(client, "victim", [], grace=30)
        await make_pod(client, "quick", [])
        await asyncio.sleep(1)
        await taint(client, [TAINT])
        await asyncio.sleep(1)
        assert await pod_state(client, "quick") is None
        victim = await pod_state(client, "victim")
        assert victim is not None and victim["metadata"].get("deletionTimestamp")  # graceful: kubelet finishes
        conditions = {c["type"]: c for c in victim["status"].get("conditions") or ()}
        assert conditions["DisruptionTarget"]["status"] == "True"
        assert conditions["DisruptionTarget"]["reason"] == "DeletionByTaintManager"
        assert conditions["DisruptionTarget"]["message"] == "Taint manager: deleting due to NoExecute taint"

    run(scenario)


def test_toleration_seconds_delay_the_deletion() -> None:
    async def scenario(client: InProcessClient, controller: TaintEvictionController) -> None:
        await make_pod(client, "patient", [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute",
                                            "tolerationSeconds": 300}])
        await asyncio.sleep(1)
        await taint(client, [TAINT])
        await asyncio.sleep(0.5)
        tainted_at = now()
        assert set(controller.pending) == {f"{NS}/patient"}
        await asyncio.sleep(tainted_at + 295 - now())
        assert await pod_state(client, "patient") is not None
        # Unrelated pod updates do not push the deadline back.
        await client.patch("pods", "patient", {"metadata": {"labels": {"touched": "yes"}}}, namespace=NS)
        await asyncio.sleep(tainted_at + 302 - now())
        assert await pod_state(client, "patient") is None

    run(scenario)


def test_toleration_without_seconds_never_evicts() -> None:
    async def scenario(client: InProcessClient, controller: TaintEvictionController) -> None:
        await make_pod(client, "forever", [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}])
        await asyncio.sleep(1)
        await taint(client, [TAINT])
        await asyncio.sleep(3600)
        assert await pod_state(client, "forever") is not None
        assert controller.pending == {}

    run(scenario)


def test_removing_the_taint_before_the_deadline_cancels() -> None:
    async def scenario(client: InProcessClient, controller: TaintEvictionController) -> None:
        await make_pod(client, "lucky", [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute",
                                          "tolerationSeconds": 300}])
        await asyncio.sleep(1)
        await taint(client, [TAINT])
        await asyncio.sleep(200)
        assert controller.pending
        await taint(client, None)
        await asyncio.sleep(1)
        assert controller.pending == {}
        await asyncio.sleep(600)
        assert await pod_state(client, "lucky") is not None

    run(scenario)


def test_pod_bound_to_an_already_tainted_node_is_evicted() -> None:
    async def scenario(client: InProcessClient, controller: TaintEvictionController) -> None:
        await taint(client, [TAINT])
        await asyncio.sleep(1)
        await make_pod(client, "late", [])
        await asyncio.sleep(1)
        assert await pod_state(client, "late") is None

    run(scenario)


def test_daemonset_pod_evicted_by_a_noexecute_taint_without_failed_delete(tmp_path: Path) -> None:
    """The whole control plane on SQLite (as `everynode up` runs it): the taint eviction
    controller and the DaemonSet controller both delete the pod that a new NoExecute taint
    drives off its node, while the eviction's status patch lands.  Neither delete carries a
    precondition (upstream's taint_eviction.go and pod control), so neither is a conflict: the
    pod goes, with ``TaintManagerEviction`` and no ``FailedDelete`` Warning."""
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": NS},
          "spec": {"selector": {"matchLabels": {"app": "agent"}},
                   "template": {"metadata": {"labels": {"app": "agent"}},
                                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}}}}
    with Cluster(nodes=2, control_planes=0, pod_startup=0.05, data_dir=tmp_path) as cluster:
        cluster.apply(ds)
        cluster.wait_for_rollout("agent", namespace=NS, timeout=30)
        cluster.client.patch("nodes", "worker-1", {"spec": {"taints": [TAINT]}})

        def on_worker_1() -> list[Obj]:
            return cluster.client.list("pods", namespace=NS, field_selector="spec.nodeName=worker-1")["items"]

        wait_until(lambda: not on_worker_1(), what="the pod on worker-1 deleted", timeout=30)
        reasons = [(e["reason"], e["message"]) for e in cluster.client.list("events", namespace=NS)["items"]]
        assert any(r == "TaintManagerEviction" for r, _ in reasons), reasons
        assert not [m for r, m in reasons if r == "FailedDelete"], reasons
