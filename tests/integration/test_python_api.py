"""``Cluster.apply``, the waits and kubectl's resource names, through the real surface (DESIGN.md,
"Python API"): every form of ``apply``'s source (YAML text with several documents, one-line JSON,
a path as ``str`` and as ``Path``, a dict, a list of dicts, a ``v1 List``) stores the objects by
server-side apply and applying twice is harmless; kinds, plurals and short names work in the
in-process client and in the HTTP client from the kubeconfig alike; the waits follow kubectl's
``rollout status`` and ``wait`` rules, time out with ``TimeoutError`` and refuse OnDelete as
kubectl does.  The predicates are also checked as a table on hand-made objects."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from everynode.api.errors import ApiError
from everynode.client.http import HttpClient
from everynode.product.cluster import Cluster
from everynode.product.manifests import ManifestError
from everynode.product.waiting import ON_DELETE_MESSAGE, ready, rolled_out
from everynode.virtualtime import run_virtual

Obj = dict[str, Any]

CM_YAML = """\
apiVersion: v1
kind: Namespace
metadata: {name: py}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: from-yaml, namespace: py}
data: {a: "1"}
"""


def configmap(name: str, **data: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "py"}, "data": data}


def daemonset(name: str, *, strategy: str = "RollingUpdate") -> Obj:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": "py"},
            "spec": {"selector": {"matchLabels": {"app": name}}, "updateStrategy": {"type": strategy},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}}}}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=2, pod_startup=0.1) as c:
        c.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "py"}})
        yield c


def test_apply_every_source_form(cluster: Cluster, tmp_path: Path) -> None:
    applied = cluster.apply(CM_YAML)
    assert [o["metadata"]["name"] for o in applied] == ["py", "from-yaml"]
    cluster.apply('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-json", "namespace": "py"}}')
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-path, namespace: py}\n")
    cluster.apply(path)
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-str-path, namespace: py}\n")
    cluster.apply(str(path))
    cluster.apply(configmap("from-dict"))
    cluster.apply([configmap("from-list-1"), configmap("from-list-2")])
    cluster.apply({"apiVersion": "v1", "kind": "List", "items": [configmap("from-v1-list")]})
    names = {o["metadata"]["name"] for o in cluster.client.list("cm", namespace="py")["items"]}
    assert {"from-yaml", "from-json", "from-path", "from-str-path", "from-dict", "from-list-1", "from-list-2",
            "from-v1-list"} <= names


def test_apply_is_server_side_and_idempotent(cluster: Cluster) -> None:
    [first] = cluster.apply(configmap("twice", a="1"))
    [second] = cluster.apply(configmap("twice", a="1"))
    assert first["metadata"]["resourceVersion"] == second["metadata"]["resourceVersion"]
    [changed] = cluster.apply(configmap("twice", a="2"))
    assert changed["data"] == {"a": "2"}
    managers = [(m["manager"], m["operation"]) for m in changed["metadata"]["managedFields"]]
    assert managers == [("everynode", "Apply")]


def test_apply_refuses_what_is_not_a_manifest(cluster: Cluster, tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match='no matches for kind "Deployment" in version "apps/v1beta2"'):
        cluster.apply({"apiVersion": "apps/v1beta2", "kind": "Deployment", "metadata": {"name": "x"}})
    with pytest.raises(ManifestError, match="every document needs apiVersion and kind"):
        cluster.apply("metadata:\n  name: x\n")
    with pytest.raises(ManifestError, match="cannot read"):
        cluster.apply(str(tmp_path / "missing.yaml"))
    with pytest.raises(ApiError) as info:  # the server's validation, as kubectl would show it
        cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name", "namespace": "py"}})
    assert info.value.code == 422


@pytest.mark.parametrize(("number", "name"), list(enumerate(["DaemonSet", "daemonsets", "daemonsets.apps", "ds", "daemonset"])))
def test_kubectl_names_in_the_in_process_client(cluster: Cluster, number: int, name: str) -> None:
    cluster.client.create(name, daemonset(f"named-{number}"))
    assert cluster.client.get(name, f"named-{number}", namespace="py")["kind"] == "DaemonSet"
    listed = cluster.client.list(name, namespace="py")
    assert listed["kind"] == "DaemonSetList" and f"named-{number}" in {i["metadata"]["name"] for i in listed["items"]}
    cluster.client.patch(name, f"named-{number}", {"metadata": {"labels": {"n": str(number)}}}, namespace="py")
    cluster.client.delete(name, f"named-{number}", namespace="py")


def test_kubectl_names_in_the_http_client(cluster: Cluster) -> None:
    cluster.apply(daemonset("over-http"))

    async def main() -> list[str]:
        async with HttpClient.from_kubeconfig(cluster.kubeconfig) as client:
            kinds = [(await client.get(n, "over-http", namespace="py"))["kind"]
                     for n in ("DaemonSet", "ds", "daemonsets", "daemonsets.apps")]
            with pytest.raises(ApiError) as info:
                await client.get("dsx", "over-http", namespace="py")
            assert info.value.code == 404
            return kinds

    assert asyncio.run(main()) == ["DaemonSet"] * 4


def test_waits(cluster: Cluster) -> None:
    cluster.apply(daemonset("waited"))
    ds = cluster.wait_for_rollout("waited", namespace="py", timeout=30)
    assert ds["status"]["numberAvailable"] == ds["status"]["desiredNumberScheduled"] == 2
    assert ready(cluster.wait_for_ready("ds", "waited", namespace="py", timeout=30))
    pods = cluster.client.list("po", namespace="py", label_selector="app=waited")["items"]
    assert ready(cluster.wait_for_ready("pod", pods[0]["metadata"]["name"], namespace="py"))
    assert cluster.wait_for_ready("Node", "worker-2", namespace="ignored-for-nodes")["metadata"]["name"] == "worker-2"

    async def later() -> None:  # the object appears after the wait has begun
        await asyncio.sleep(0.2)
        await cluster.plane.client.create("cm", configmap("later", k="v"))  # type: ignore[union-attr]

    assert cluster._loop is not None
    asyncio.run_coroutine_threadsafe(later(), cluster._loop)
    cm = cluster.wait_for("cm", "later", lambda o: (o.get("data") or {}).get("k") == "v", namespace="py", timeout=10)
    assert cm["data"] == {"k": "v"}


def test_wait_times_out_and_refuses_on_delete(cluster: Cluster) -> None:
    with pytest.raises(TimeoutError, match="timed out after 0.3s waiting for daemonsets.apps never in namespace py"):
        cluster.wait_for_rollout("never", namespace="py", timeout=0.3)
    cluster.apply(daemonset("manual", strategy="OnDelete"))
    with pytest.raises(ValueError, match=ON_DELETE_MESSAGE):
        cluster.wait_for_rollout("manual", namespace="py", timeout=5)


def test_async_forms_in_virtual_time() -> None:
    async def main() -> float:
        async with Cluster(nodes=3, pod_startup=40.0, virtual_time=True) as cluster:
            loop = asyncio.get_running_loop()
            await cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "py"}},
                                 daemonset("slow")])
            t0 = loop.time()
            ds = await cluster.wait_for_rollout("slow", namespace="py", timeout=600)
            assert ds["status"]["numberAvailable"] == 3
            return loop.time() - t0

    assert 40.0 <= run_virtual(main()) < 45.0


def _ds(generation: int, observed: int, desired: int, updated: int, available: int, ready_: int,
        strategy: str = "RollingUpdate") -> Obj:
    return {"kind": "DaemonSet", "metadata": {"generation": generation},
            "spec": {"updateStrategy": {"type": strategy}},
            "status": {"observedGeneration": observed, "desiredNumberScheduled": desired,
                       "updatedNumberScheduled": updated, "numberAvailable": available, "numberReady": ready_}}


@pytest.mark.parametrize(("ds", "expected"), [
    (_ds(2, 2, 3, 3, 3, 3), True),
    (_ds(2, 1, 3, 3, 3, 3), False),  # spec change not yet observed
    (_ds(2, 2, 3, 2, 3, 3), False),  # a pod of the old revision
    (_ds(2, 2, 3, 3, 2, 3), False),  # updated, not yet available
    (_ds(1, 1, 0, 0, 0, 0), True),   # no node wants a pod: nothing to roll out
])
def test_rolled_out_table(ds: Obj, expected: bool) -> None:
    assert rolled_out(ds) is expected


def test_rolled_out_refuses_on_delete() -> None:
    with pytest.raises(ValueError, match=ON_DELETE_MESSAGE):
        rolled_out(_ds(1, 1, 1, 1, 1, 1, strategy="OnDelete"))


@pytest.mark.parametrize(("obj", "expected"), [
    ({"kind": "Pod", "status": {"conditions": [{"type": "Ready", "status": "True"}]}}, True),
    ({"kind": "Pod", "status": {"conditions": [{"type": "Ready", "status": "False"}]}}, False),
    ({"kind": "Node", "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}, False),
    ({"kind": "Pod", "status": {}}, False),
    (_ds(1, 1, 2, 0, 0, 2), True),
    (_ds(1, 1, 2, 2, 2, 1), False),
])
def test_ready_table(obj: Obj, expected: bool) -> None:
    assert ready(obj) is expected
