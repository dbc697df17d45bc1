"""What the simulated kubelet shows through real kubectl 1.27 and 1.33: ``kubectl logs`` (node
name via the Downward API, ``-c``, ``--tail``, ``--previous``, ``-f``), the one-line refusal of
``exec``/``attach``/``port-forward``, a pod held in ContainerCreating by a missing ConfigMap with
upstream's FailedMount event in ``kubectl describe``, the kubelet's events in ``kubectl get events``,
and managedFields managers named as on a real cluster.

Each test starts its own small cluster (``everynode.Cluster``, real time, HTTPS); deadlines are
generous and never asserted on."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from everynode.product.cluster import Cluster
from tests.support import waiting

KUBECTL_DIR = "/usr/lib/google-cloud-sdk/bin"
VERSIONS = ("1.27", "1.33")
WAIT = 45.0
wait_until = functools.partial(waiting.wait_until, timeout=WAIT, interval=0.2)

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]


class Kubectl:
    def __init__(self, version: str, kubeconfig: Path, cache_dir: Path) -> None:
        self.binary = f"{KUBECTL_DIR}/kubectl.{version}"
        self.base = [self.binary, "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache_dir)]
        self.env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        self.env["COLUMNS"] = "200"

    def run(self, *args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.base, *args], input=stdin, capture_output=True, text=True, timeout=timeout,
                              env=self.env)

    def __call__(self, *args: str, stdin: str | None = None) -> str:
        r = self.run(*args, stdin=stdin)
        assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
        return r.stdout

    def apply(self, *objects: Obj) -> str:
        return self("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))

    def pod(self, name: str) -> Obj:
        return json.loads(self("get", "pod", name, "-o", "json"))

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([*self.base, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=self.env)


@pytest.fixture(params=VERSIONS)
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Cluster, Kubectl]]:
    c = Cluster(nodes=2, pod_startup=0.2, port=0)
    c.__enter__()
    try:
        yield c, Kubectl(request.param, c.kubeconfig, tmp_path / "cache")
    finally:
        c.__exit__(None, None, None)


def daemonset(name: str, containers: list[Obj], *, annotations: dict[str, str] | None = None,
              volumes: list[Obj] | None = None) -> Obj:
    spec: Obj = {"containers": containers}
    if volumes:
        spec["volumes"] = volumes
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}, "annotations": annotations or {}},
                                  "spec": spec}}}


def bare_pod(name: str, *, annotations: dict[str, str] | None = None, volumes: list[Obj] | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}]}
    if volumes:
        spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}}, "spec": spec}


NODE_ENV = [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]


def phase(k: Kubectl, name: str) -> str:
    return (k.pod(name).get("status") or {}).get("phase") or ""


def ds_pods(k: Kubectl, app: str) -> list[Obj]:
    return json.loads(k("get", "pods", "-l", f"app={app}", "-o", "json"))["items"]


def test_logs_of_a_daemonset_pod_show_its_node_and_honour_c_and_tail(cluster: tuple[Cluster, Kubectl]) -> None:
    _, k = cluster
    k.apply(daemonset("agent", [{"name": "agent", "image": "quay.io/prometheus/node-exporter:v1.8.2", "env": NODE_ENV},
                                {"name": "sidecar", "image": "registry.k8s.io/pause:3.9"}]))
    def running_agents() -> list[Obj] | None:
        ps = ds_pods(k, "agent")
        return ps if len(ps) == 2 and all((p.get("status") or {}).get("phase") == "Running" for p in ps) else None

    pods = wait_until(running_agents, what="two running agent pods")
    for p in pods:
        name, node = p["metadata"]["name"], p["spec"]["nodeName"]
        out = k("logs", name, "-c", "agent")
        assert f"node {node}" in out
        assert f"everynode: env NODE_NAME={node}\n" in out
        assert "image quay.io/prometheus/node-exporter:v1.8.2" in out
        tail = k("logs", name, "-c", "agent", "--tail", "1").splitlines()
        assert tail == [out.splitlines()[-1]]
        stamped = k("logs", name, "-c", "sidecar", "--timestamps").splitlines()
        assert stamped and all(line[:4].isdigit() and line.split(" ", 1)[0].endswith("Z") for line in stamped)
        assert "NODE_NAME" not in k("logs", name, "-c", "sidecar")
    # The raw API names the containers when none is given (kubectl itself picks the first).
    r = k.run("get", "--raw", f"/api/v1/namespaces/default/pods/{pods[0]['metadata']['name']}/log")
    assert r.returncode != 0
    assert (f"a container name must be specified for pod {pods[0]['metadata']['name']}, "
            f"choose one of: [agent sidecar]") in r.stderr


def test_previous_and_follow_after_a_crash_loop(cluster: tuple[Cluster, Kubectl]) -> None:
    _, k = cluster
    k.apply(bare_pod("crasher", annotations={"everynode.io/behavior": "crash-loop"}))
    wait_until(lambda: int(((k.pod("crasher").get("status") or {}).get("containerStatuses") or [{}])[0]
                           .get("restartCount") or 0) >= 1, what="a restart")
    out = k("logs", "crasher", "--previous")
    assert "(attempt 0)" in out
    assert out.splitlines()[-1] == "everynode: exited with code 1 (everynode.io/behavior: crash-loop)"
    # -f on a container that crashes ends when it exits (or at once, between runs).
    followed = k.run("logs", "-f", "crasher", timeout=40)
    assert followed.returncode == 0
    assert followed.stdout.splitlines()[-1] == "everynode: exited with code 1 (everynode.io/behavior: crash-loop)"
    # --previous on a container that never restarted: the kubelet's words.
    k.apply(bare_pod("steady"))
    wait_until(lambda: phase(k, "steady") == "Running", what="steady running")
    r = k.run("logs", "steady", "--previous")
    assert r.returncode == 1
    assert r.stderr.strip() == ('Error from server (BadRequest): previous terminated container "main" '
                                'in pod "steady" not found')


def test_follow_streams_until_the_pod_goes(cluster: tuple[Cluster, Kubectl]) -> None:
    _, k = cluster
    k.apply(bare_pod("follow-me"))
    wait_until(lambda: phase(k, "follow-me") == "Running", what="running")
    proc = k.popen("logs", "-f", "follow-me")
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith('everynode: simulated container "main" started')
        time.sleep(1)
        assert proc.poll() is None  # still following a running container
        k("delete", "pod", "follow-me", "--wait=false")
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_exec_attach_and_port_forward_say_in_one_line_that_no_process_runs(cluster: tuple[Cluster, Kubectl]) -> None:
    _, k = cluster
    k.apply(bare_pod("quiet"))
    wait_until(lambda: phase(k, "quiet") == "Running", what="running")
    node = k.pod("quiet")["spec"]["nodeName"]
    r = k.run("exec", "quiet", "--", "ls", "/")
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        f"Error from server (BadRequest): cannot run a command in pod default/quiet: it runs on simulated node "
        f"{node}, and a simulated node runs no processes (everynode); see kubectl logs for what its kubelet recorded"]
    r = k.run("attach", "quiet")
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1].startswith("Error from server (BadRequest): cannot attach to pod default/quiet")
    r = k.run("port-forward", "pod/quiet", "0:80", timeout=30)
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1].startswith(
        "error: error upgrading connection: cannot forward a port to pod default/quiet: it runs on simulated node")
    assert "could not find the requested resource" not in r.stderr


def test_missing_configmap_holds_the_pod_in_container_creating_until_applied(cluster: tuple[Cluster, Kubectl]) -> None:
    _, k = cluster
    k.apply(bare_pod("needs-config", volumes=[{"name": "config", "configMap": {"name": "app-config"}}]))
    wait_until(lambda: "ContainerCreating" in k("get", "pod", "needs-config"), what="ContainerCreating")
    def described_with_failed_mount() -> str | None:
        out = k("describe", "pod", "needs-config")
        return out if "FailedMount" in out else None

    described = wait_until(described_with_failed_mount, what="a FailedMount event")
    assert 'MountVolume.SetUp failed for volume "config" : configmap "app-config" not found' in described
    assert "Warning  FailedMount" in described
    assert phase(k, "needs-config") == "Pending"
    k.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-config", "namespace": "default"},
             "data": {"a": "1"}})
    wait_until(lambda: phase(k, "needs-config") == "Running", what="running once the ConfigMap exists")


def test_events_and_managed_fields_read_like_a_real_cluster(cluster: tuple[Cluster, Kubectl]) -> None:
    _, k = cluster
    k.apply(daemonset("ev", [{"name": "ev", "image": "registry.k8s.io/pause:3.9"}]))
    def running_pods() -> list[Obj] | None:
        ps = ds_pods(k, "ev")
        return ps if len(ps) == 2 and all((p.get("status") or {}).get("phase") == "Running" for p in ps) else None

    pods = wait_until(running_pods, what="ev pods running")
    name = pods[0]["metadata"]["name"]

    def kubelet_reasons() -> set[str] | None:
        out = k("get", "events", "--field-selector", f"involvedObject.name={name}")
        got = {r for r in ("Pulled", "Created", "Started") if f" {r} " in out}
        return got if len(got) == 3 else None

    wait_until(kubelet_reasons, what="Pulled/Created/Started events")
    events = json.loads(k("get", "events", "--field-selector", f"involvedObject.name={name},reason=Started",
                          "-o", "json"))["items"]
    assert events[0]["source"] == {"component": "kubelet", "host": pods[0]["spec"]["nodeName"]}
    assert events[0]["involvedObject"]["fieldPath"] == "spec.containers{ev}"
    managed = yaml.safe_load(k("get", "pod", name, "-o", "yaml", "--show-managed-fields"))["metadata"]["managedFields"]
    assert [(m["manager"], m["operation"], m.get("subresource")) for m in managed] == [
        ("kube-controller-manager", "Update", None), ("kubelet", "Update", "status")]
    lease = yaml.safe_load(k("get", "lease", "-n", "kube-node-lease", pods[0]["spec"]["nodeName"], "-o", "yaml",
                             "--show-managed-fields"))
    assert {m["manager"] for m in lease["metadata"]["managedFields"]} == {"kubelet"}
