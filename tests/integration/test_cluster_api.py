"""``everynode.Cluster`` as the Python API promises (DESIGN.md, "Python API"), and the pytest
plugin as a user meets it.

* Both ways in × both clocks: a plain ``with`` (private loop in a thread, blocking client
  proxy) and ``async with`` (the caller's loop, the async client), in real time and in virtual
  time (``run_virtual`` for the async form).
* Real time serves HTTPS: the kubeconfig exists before the ``with`` body runs and the official
  ``kubernetes`` client works with it unchanged.
* Virtual time serves no HTTP (nothing but the in-process client can keep up with a jumping
  clock); a plain ``with`` freezes the virtual clock between the driving thread's calls, so time
  moves only while the driver waits for the cluster.
* The ``everynode_cluster`` fixture, from the ``pytest11`` entry point, in a separate pytest
  run (``pytester.runpytest_subprocess``): a user's test applies a DaemonSet manifest with
  kubectl and waits for it to converge — under ``-W error`` and without any configuration of
  its own, so a warning from the plugin or from pytest-asyncio about it fails the run; a user's
  own ``asyncio_default_fixture_loop_scope`` still wins.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import everynode
from everynode.product.cluster import Cluster
from everynode.virtualtime import run_virtual

pytest_plugins = ["pytester"]

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
NS = "default"
Obj = dict[str, Any]


def daemonset(name: str, *, startup: float | None = None) -> Obj:
    template_md: Obj = {"labels": {"app": name}}
    if startup is not None:
        template_md["annotations"] = {"everynode.io/startup-seconds": str(startup)}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": template_md,
                                  "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}}}}


def converged(ds: Obj, nodes: int) -> bool:
    st = ds.get("status") or {}
    return (st.get("observedGeneration") == ds["metadata"].get("generation")
            and st.get("desiredNumberScheduled") == nodes and st.get("numberReady") == nodes
            and st.get("numberAvailable") == nodes and st.get("updatedNumberScheduled") == nodes)


async def wait_converged(client: Any, name: str, nodes: int, *, timeout: float = 60.0) -> Obj:
    """Polls on the loop's clock (virtual or real); the timeout is in that clock's seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        ds = await client.get("daemonsets.apps", name, namespace=NS)
        if converged(ds, nodes):
            return ds
        if loop.time() > deadline:
            raise AssertionError(f"DaemonSet {name} did not converge: {ds.get('status')}")
        await asyncio.sleep(0.05)


def test_cluster_is_exported_from_the_package() -> None:
    assert everynode.Cluster is Cluster


# -- plain `with`, real time ------------------------------------------------------------------

def test_sync_real_time_kubeconfig_works_with_the_official_client() -> None:
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    with Cluster(nodes=2, pod_startup=0.1) as cluster:
        assert cluster.kubeconfig.exists()
        assert cluster.url is not None and cluster.url.startswith("https://127.0.0.1:")

        # The blocking proxy: plain calls, plain results.
        names = sorted(n["metadata"]["name"] for n in cluster.client.list("nodes")["items"])
        assert names == ["control-plane-1", "worker-1", "worker-2"]
        cluster.client.create("daemonsets.apps", daemonset("agent"))

        api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
        try:
            core = k8s.CoreV1Api(api_client)
            assert sorted(n.metadata.name for n in core.list_node().items) == names
            apps = k8s.AppsV1Api(api_client)
            deadline = time.monotonic() + 30
            while True:
                ds = apps.read_namespaced_daemon_set("agent", NS)
                if ds.status.number_ready == 2 and ds.status.desired_number_scheduled == 2:
                    break
                assert time.monotonic() < deadline, ds.status
                time.sleep(0.05)
            pods = core.list_namespaced_pod(NS, label_selector="app=agent").items
            assert sorted(p.spec.node_name for p in pods) == ["worker-1", "worker-2"]
        finally:
            api_client.close()
        # run(): a coroutine on the cluster's loop, from synchronous code.
        assert cluster.run(wait_converged(cluster.plane.client, "agent", 2))["metadata"]["name"] == "agent"
    assert cluster.plane is None
    with pytest.raises(RuntimeError, match="not running"):
        _ = cluster.client


# -- `async with`, real time ------------------------------------------------------------------

async def test_async_real_time_serves_https_and_the_async_client() -> None:
    from everynode.client.http import HttpClient

    async with Cluster(nodes=1, pod_startup=0.1) as cluster:
        assert cluster.kubeconfig.exists()
        await cluster.client.create("daemonsets.apps", daemonset("agent"))
        await wait_converged(cluster.client, "agent", 1)
        http = HttpClient.from_kubeconfig(cluster.kubeconfig)
        try:
            ds = await http.get("daemonsets.apps", "agent", namespace=NS)
        finally:
            await http.close()
        assert ds["status"]["numberReady"] == 1


async def test_async_virtual_time_on_a_real_loop_is_refused() -> None:
    with pytest.raises(RuntimeError, match="virtual-time loop"):
        async with Cluster(nodes=1, virtual_time=True):
            pass


# -- virtual time ------------------------------------------------------------------------------

def test_async_virtual_time_under_run_virtual() -> None:
    startup = 120.0  # two simulated minutes of start-up, no wall-clock wait

    async def main() -> tuple[float, Obj]:
        async with Cluster(nodes=3, pod_startup=startup, virtual_time=True) as cluster:
            assert cluster.url is None  # no HTTP server on a jumping clock
            assert cluster.plane is not None and cluster.plane.server is None
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            await cluster.client.create("daemonsets.apps", daemonset("agent"))
            ds = await wait_converged(cluster.client, "agent", 3, timeout=10 * startup)
            return loop.time() - t0, ds

    simulated, ds = run_virtual(main())
    assert startup <= simulated < startup + 1.0
    assert ds["status"]["numberAvailable"] == 3


def test_sync_virtual_time_freezes_between_calls() -> None:
    with Cluster(nodes=2, pod_startup=30.0, virtual_time=True) as cluster:
        assert cluster.url is None
        async def now() -> float:  # the cluster loop's clock, read on that loop through run()
            return asyncio.get_running_loop().time()

        cluster.client.create("daemonsets.apps", daemonset("agent"))
        t0 = cluster.run(now())
        time.sleep(0.3)  # the driving thread is busy: virtual time must not jump meanwhile
        assert cluster.run(now()) == t0

        ds = cluster.run(wait_converged(cluster.plane.client, "agent", 2, timeout=300))
        assert ds["status"]["numberReady"] == 2
        elapsed = cluster.run(now()) - t0
        assert 30.0 <= elapsed < 31.0
        # The blocking proxy works the same on a virtual loop.
        pods = cluster.client.list("pods", namespace=NS, label_selector="app=agent")["items"]
        assert sorted(p["spec"]["nodeName"] for p in pods) == ["worker-1", "worker-2"]
        # A per-pod start-up annotation overrides the cluster's pod_startup.
        cluster.client.create("daemonsets.apps", daemonset("quick", startup=2.0))
        t1 = cluster.run(now())
        cluster.run(wait_converged(cluster.plane.client, "quick", 2, timeout=300))
        assert 2.0 <= cluster.run(now()) - t1 < 3.0


# -- the pytest plugin -------------------------------------------------------------------------

USER_MANIFEST = """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: node-exporter
  namespace: default
spec:
  selector:
    matchLabels: {app: node-exporter}
  template:
    metadata:
      labels: {app: node-exporter}
    spec:
      tolerations:
      - key: node-role.kubernetes.io/control-plane
        operator: Exists
        effect: NoSchedule
      containers:
      - name: exporter
        image: quay.io/prometheus/node-exporter:v1.8.1
        ports: [{containerPort: 9100, hostPort: 9100}]
"""

USER_TEST = '''\
import json
import pathlib
import subprocess
import time

import pytest

KUBECTL = {kubectl!r}


@pytest.mark.everynode(nodes=2)
def test_my_daemonset_converges(everynode_cluster, tmp_path):
    manifest = pathlib.Path(__file__).with_name("daemonset.yaml")
    base = [KUBECTL, "--kubeconfig", str(everynode_cluster.kubeconfig), "--cache-dir", str(tmp_path)]
    out = subprocess.run(base + ["apply", "-f", str(manifest)], capture_output=True, text=True, check=True)
    assert "daemonset.apps/node-exporter created" in out.stdout
    deadline = time.monotonic() + 60
    while True:
        ds = json.loads(subprocess.run(base + ["get", "ds", "node-exporter", "-o", "json"],
                                       capture_output=True, text=True, check=True).stdout)
        status = ds.get("status", {{}})
        # Two workers plus the control plane (tolerated by the manifest).
        if status.get("numberReady") == 3 and status.get("desiredNumberScheduled") == 3:
            break
        assert time.monotonic() < deadline, status
        time.sleep(0.1)
    pods = everynode_cluster.client.list("pods", namespace="default", label_selector="app=node-exporter")
    assert sorted(p["spec"]["nodeName"] for p in pods["items"]) == ["control-plane-1", "worker-1", "worker-2"]
'''


def test_pytest_plugin_fixture_in_a_users_test_run(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", daemonset=USER_MANIFEST)
    pytester.makepyfile(test_user=USER_TEST.format(kubectl=KUBECTL))
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "-W", "error")
    result.assert_outcomes(passed=1)
    assert "PytestDeprecationWarning" not in result.stdout.str() + result.stderr.str()
    assert "warning" not in result.stdout.str().lower()


def test_pytest_plugin_leaves_a_users_asyncio_loop_scope_alone(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = module\n")
    pytester.makepyfile(test_scope="""
        def test_scope(pytestconfig):
            assert pytestconfig.getini("asyncio_default_fixture_loop_scope") == "module"
        """)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "-W", "error")
    result.assert_outcomes(passed=1)


def test_pytest_plugin_gives_the_asyncio_loop_scope_a_default(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_scope="""
        def test_scope(pytestconfig):
            assert pytestconfig.getini("asyncio_default_fixture_loop_scope") == "function"
        """)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "-W", "error")
    result.assert_outcomes(passed=1)
