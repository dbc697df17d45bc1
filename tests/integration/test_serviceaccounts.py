"""The ServiceAccount controller, the root-CA publisher, ServiceAccount admission and the
ClusterRole aggregation controller inside the control plane (``everynode.Cluster``), on a
virtual-time loop: what is there when the cluster says it is ready, the race of a pod created
right after its namespace, the components switched off, and TokenRequest in process."""

from __future__ import annotations

import asyncio
from typing import Any

from everynode.product.cluster import Cluster
from everynode.virtualtime import run_virtual

Obj = dict[str, Any]


def _pod(name: str, namespace: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def test_ready_means_every_namespace_has_its_account_and_ca() -> None:
    async def scenario() -> None:
        async with Cluster(nodes=1, control_planes=0, virtual_time=True, authorization="rbac") as cluster:
            client = cluster.plane.client
            assert cluster.plane.service.authorizer.mode == "rbac"
            for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
                await client.get("serviceaccounts", "default", namespace=ns)  # no wait: there at ready
                cm = await client.get("configmaps", "kube-root-ca.crt", namespace=ns)
                assert cm["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")
            # a namespace and a pod at once: admission waits for the controller's account
            await client.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "new"}})
            pod = await client.create("pods", _pod("p", "new"))
            assert pod["spec"]["volumes"][0]["name"].startswith("kube-api-access-")
            # the bootstrap policy's aggregated roles are already current: the controller writes nothing
            admin = await client.get("clusterroles.rbac.authorization.k8s.io", "admin")
            managers = {m["manager"] for m in admin["metadata"].get("managedFields") or ()}
            assert "clusterrole-aggregation-controller" not in managers
            # TokenRequest through the in-process client
            request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
            answer = await client.create_subresource("serviceaccounts", "default", "token", request, namespace="new")
            assert answer["spec"] == {"audiences": ["https://kubernetes.default.svc.cluster.local"],
                                      "expirationSeconds": 3600, "boundObjectRef": None}
            assert answer["status"]["token"].count(".") == 2

    run_virtual(scenario())


def test_switched_off_the_pods_get_no_token_volume() -> None:
    async def scenario() -> None:
        async with Cluster(nodes=1, control_planes=0, virtual_time=True,
                           disable=("serviceaccount", "root-ca-publisher")) as cluster:
            client = cluster.plane.client
            assert (await client.list("serviceaccounts"))["items"] == []
            pod = await client.create("pods", _pod("p", "default"))
            assert "volumes" not in pod["spec"]

    run_virtual(scenario())


def test_aggregation_follows_the_selected_roles() -> None:
    async def scenario() -> None:
        async with Cluster(nodes=0, control_planes=0, virtual_time=True) as cluster:
            client = cluster.plane.client
            roles = "clusterroles.rbac.authorization.k8s.io"
            await client.create(roles, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                        "metadata": {"name": "monitoring"},
                                        "aggregationRule": {"clusterRoleSelectors": [
                                            {"matchLabels": {"example.com/aggregate-to-monitoring": "true"}}]}})
            await client.create(roles, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                        "metadata": {"name": "part",
                                                     "labels": {"example.com/aggregate-to-monitoring": "true"}},
                                        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]})
            for _ in range(100):
                role = await client.get(roles, "monitoring")
                if role.get("rules"):
                    break
                await asyncio.sleep(0.1)
            assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
            assert {m["manager"] for m in role["metadata"]["managedFields"]} >= {"clusterrole-aggregation-controller"}

    run_virtual(scenario())


def test_a_daemonset_whose_account_appears_later_converges() -> None:
    """Pods naming a missing account are refused; the DaemonSet controller retries (as upstream's
    does after FailedCreate) and converges once the account exists."""
    async def scenario() -> None:
        async with Cluster(nodes=2, control_planes=0, virtual_time=True) as cluster:
            client = cluster.plane.client
            await client.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "late"}})
            await client.create("daemonsets.apps", {
                "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "late"},
                "spec": {"selector": {"matchLabels": {"app": "agent"}},
                         "template": {"metadata": {"labels": {"app": "agent"}},
                                      "spec": {"serviceAccountName": "agent",
                                               "containers": [{"name": "a", "image": "agent:1"}]}}}})
            await asyncio.sleep(5)
            assert (await client.list("pods", namespace="late"))["items"] == []
            events = (await client.list("events", namespace="late"))["items"]
            assert any(e["reason"] == "FailedCreate" and 'serviceaccount "agent" not found' in e["message"]
                       for e in events)
            await client.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                                    "metadata": {"name": "agent", "namespace": "late"}})
            for _ in range(600):
                ds = await client.get("daemonsets.apps", "agent", namespace="late")
                if (ds.get("status") or {}).get("numberReady") == 2:
                    break
                await asyncio.sleep(0.5)
            assert ds["status"]["numberReady"] == 2

    run_virtual(scenario())
