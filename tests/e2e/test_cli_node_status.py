"""`everynode node …` and `everynode status` as a user runs them: a real process against the
embedded cluster's HTTPS API, and the one-line errors for a cluster that is not there."""

from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from everynode.api.errors import ApiError
from everynode.product.cluster import Cluster
from tests.support import waiting

CLI = [sys.executable, "-m", "everynode.product.cli"]
WAIT = 30.0  # generous deadlines for convergence on a loaded machine (never asserted on)
wait_until = functools.partial(waiting.wait_until, timeout=WAIT, interval=0.05)


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["COLUMNS"] = "120"
    return env


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=3, control_planes=1, pod_startup=0.2, port=0) as c:
        yield c


def cli(cluster: Cluster | None, *args: str, cwd: Path | None = None, kubeconfig: str | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    command = [*CLI, *args]
    if kubeconfig is not None:
        command += ["--kubeconfig", kubeconfig]
    elif cluster is not None:
        command += ["--kubeconfig", str(cluster.kubeconfig)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=clean_env(), cwd=cwd)


def get_or_none(cluster: Cluster, resource: str, name: str, namespace: str = "") -> dict[str, Any] | None:
    try:
        return cluster.client.get(resource, name, namespace=namespace)
    except ApiError as e:
        if e.code == 404:
            return None
        raise


def node_ready(node: dict[str, Any] | None) -> bool:
    if node is None:
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node.get("status") or {}).get("conditions") or ())


def daemonset(name: str, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "main", "image": image}]}}},
    }


def rolled_out(cluster: Cluster, name: str) -> bool:
    ds = cluster.client.get("daemonsets.apps", name, namespace="default")
    st = ds.get("status") or {}
    desired = st.get("desiredNumberScheduled", -1)
    return (st.get("observedGeneration", 0) >= ds["metadata"]["generation"] and desired > 0
            and st.get("updatedNumberScheduled") == desired and st.get("numberAvailable") == desired)


# --------------------------------------------------------------------------- node commands

def test_node_add_list_stop_start_remove(cluster: Cluster) -> None:
    r = cli(cluster, "node", "add", "gpu-1", "--label", "accelerator=gpu", "--taint", "gpu=true:NoSchedule",
            "--cpu", "8", "--memory", "32Gi", "--pods", "50")
    assert (r.returncode, r.stdout, r.stderr) == (0, "node/gpu-1 created\n", "")
    node = cluster.client.get("nodes", "gpu-1")
    labels = node["metadata"]["labels"]
    assert labels["accelerator"] == "gpu" and labels["kubernetes.io/hostname"] == "gpu-1"
    assert node["spec"]["taints"] == [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    assert node["status"]["capacity"] == {"cpu": "8", "memory": "32Gi", "pods": "50"}
    wait_until(lambda: node_ready(get_or_none(cluster, "nodes", "gpu-1")), what="gpu-1 Ready")

    r = cli(cluster, "node", "add", "gpu-1")
    assert r.returncode == 1
    assert r.stderr == 'Error from server (AlreadyExists): nodes "gpu-1" already exists\n'

    r = cli(cluster, "node", "list")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "ROLES", "TAINTS", "PODS", "AGE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert list(rows) == ["control-plane-1", "gpu-1", "worker-1", "worker-2", "worker-3"]
    assert rows["gpu-1"][1:5] == ["Ready", "<none>", "gpu=true:NoSchedule", "0/50"]
    assert rows["control-plane-1"][1:4] == ["Ready", "control-plane",
                                            "node-role.kubernetes.io/control-plane:NoSchedule"]

    r = cli(cluster, "node", "stop", "gpu-1")
    assert (r.returncode, r.stdout) == (0, "node/gpu-1 kubelet stopped\n")
    annotations = cluster.client.get("nodes", "gpu-1")["metadata"].get("annotations") or {}
    assert annotations.get("everynode.io/kubelet") == "stopped"
    assert "kubelet stopped" in cli(cluster, "node", "list").stdout

    r = cli(cluster, "node", "start", "gpu-1")
    assert (r.returncode, r.stdout) == (0, "node/gpu-1 kubelet started\n")
    annotations = cluster.client.get("nodes", "gpu-1")["metadata"].get("annotations") or {}
    assert "everynode.io/kubelet" not in annotations

    r = cli(cluster, "node", "remove", "gpu-1")
    assert (r.returncode, r.stdout) == (0, 'node "gpu-1" deleted\n')
    wait_until(lambda: get_or_none(cluster, "nodes", "gpu-1") is None, what="gpu-1 gone")

    r = cli(cluster, "node", "remove", "gpu-1")
    assert (r.returncode, r.stderr) == (1, 'Error from server (NotFound): nodes "gpu-1" not found\n')


def test_node_add_rejects_bad_flags_before_calling_the_server(cluster: Cluster) -> None:
    r = cli(cluster, "node", "add", "x", "--taint", "gpu=true:Sometimes")
    assert r.returncode == 2
    assert "invalid taint effect: Sometimes" in r.stderr
    r = cli(cluster, "node", "add", "x", "--memory", "lots")
    assert r.returncode == 2
    assert "quantities must match the regular expression" in r.stderr
    assert get_or_none(cluster, "nodes", "x") is None


# --------------------------------------------------------------------------- status

def test_status_once(cluster: Cluster) -> None:
    cluster.client.create("daemonsets.apps", daemonset("once", "agent:1"))
    try:
        wait_until(lambda: rolled_out(cluster, "once"), what="DaemonSet rolled out")
        r = cli(cluster, "status")
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE",
                                    "SELECTOR", "AGE"]
        row = next(line.split() for line in lines if line.startswith("once "))
        assert row[1:7] == ["3", "3", "3", "3", "3", "<none>"]
        assert 'daemon set "once" successfully rolled out' in r.stdout
        assert "once  revision 1 (" in r.stdout
        for cell in ("· control-plane-1", "● worker-1", "● worker-2", "● worker-3"):
            assert cell in r.stdout
        assert "● updated, ready" in r.stdout  # the legend

        r = cli(cluster, "status", "-A")
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[0].split()[:2] == ["NAMESPACE", "NAME"]
        assert "default/once  revision 1" in r.stdout

        r = cli(cluster, "status", "-n", "empty-namespace")
        assert (r.returncode, r.stdout.strip()) == (0, "No resources found in empty-namespace namespace.")
    finally:
        cluster.client.delete("daemonsets.apps", "once", namespace="default")


class _Reader:
    """Collects a process's stdout in a thread, so the test can wait for text without blocking."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.chunks: list[str] = []
        assert proc.stdout is not None
        self._stdout = proc.stdout
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for line in self._stdout:
            self.chunks.append(line)

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    def join(self) -> None:
        self._thread.join(10)


def test_status_watch_follows_a_rollout_and_exits_on_sigint(cluster: Cluster) -> None:
    cluster.client.create("daemonsets.apps", daemonset("watched", "agent:1"))
    proc = subprocess.Popen([*CLI, "status", "--watch", "--kubeconfig", str(cluster.kubeconfig)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
    try:
        reader = _Reader(proc)
        wait_until(lambda: rolled_out(cluster, "watched"), what="first rollout")
        wait_until(lambda: 'daemon set "watched" successfully rolled out' in reader.text, what="a frame")
        cluster.client.patch("daemonsets.apps", "watched",
                             {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "agent:2"}]}}}},
                             namespace="default", patch_type="strategic")
        wait_until(lambda: "watched  revision 2 (" in reader.text, what="a frame of the new revision")
        wait_until(lambda: rolled_out(cluster, "watched"), what="second rollout")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        reader.join()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        cluster.client.delete("daemonsets.apps", "watched", namespace="default")
    assert proc.returncode == 0
    assert err == ""
    text = reader.text
    # Piped output: successive frames under time lines, each a complete view.
    assert text.count("── ") >= 2
    assert text.count("NAME ") == text.count("── ")
    assert "watched  revision 2 (" in text


# --------------------------------------------------------------------------- one-line errors

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_kubeconfig(path: Path, server: str, *, ca_data: str | None = None, token: str = "t") -> Path:
    cluster_entry: dict[str, Any] = {"server": server}
    if ca_data:
        cluster_entry["certificate-authority-data"] = ca_data
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
           "clusters": [{"name": "c", "cluster": cluster_entry}],
           "users": [{"name": "u", "user": {"token": token}}],
           "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    path.write_text(yaml.safe_dump(doc))
    return path


def assert_one_line_error(r: subprocess.CompletedProcess[str], expected: str) -> None:
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr == expected + "\n"
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("command", [["status"], ["status", "--watch"], ["node", "list"],
                                     ["node", "add", "n1"], ["node", "stop", "n1"]])
def test_unreachable_api_server(tmp_path: Path, command: list[str]) -> None:
    port = free_port()
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{port}")
    r = cli(None, *command, kubeconfig=str(kubeconfig), cwd=tmp_path)
    assert_one_line_error(r, f"error: cannot reach the API server at https://127.0.0.1:{port}: connection refused")


def test_unknown_host(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "https://nowhere.invalid:6443")
    r = cli(None, "status", kubeconfig=str(kubeconfig), cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.startswith("error: cannot reach the API server at https://nowhere.invalid:6443: "
                               "unknown host nowhere.invalid")
    assert r.stderr.count("\n") == 1


def test_untrusted_certificate(cluster: Cluster, tmp_path: Path) -> None:
    assert cluster.url is not None
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", cluster.url)  # no CA: system roots only
    r = cli(None, "node", "list", kubeconfig=str(kubeconfig), cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.startswith(f"error: cannot reach the API server at {cluster.url}: "
                               "TLS certificate verification failed: ")
    assert r.stderr.count("\n") == 1


def test_wrong_token(cluster: Cluster, tmp_path: Path) -> None:
    assert cluster.url is not None
    doc = yaml.safe_load(cluster.kubeconfig.read_text())
    ca = doc["clusters"][0]["cluster"]["certificate-authority-data"]
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", cluster.url, ca_data=ca, token="wrong")
    r = cli(None, "node", "list", kubeconfig=str(kubeconfig), cwd=tmp_path)
    assert_one_line_error(r, "error: You must be logged in to the server (Unauthorized)")


def test_missing_kubeconfig(tmp_path: Path) -> None:
    r = cli(None, "status", kubeconfig=str(tmp_path / "nope"), cwd=tmp_path)
    assert_one_line_error(r, f"error: no kubeconfig at {tmp_path / 'nope'} (start one with `everynode up`)")
    env_home = tmp_path / "home"
    env_home.mkdir()
    r = subprocess.run([*CLI, "node", "list"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                       env={**clean_env(), "HOME": str(env_home)})
    assert_one_line_error(r, "error: no kubeconfig at .everynode/kubeconfig or ~/.kube/config "
                             "(start one with `everynode up`)")


def test_default_kubeconfig_is_the_one_up_writes(cluster: Cluster, tmp_path: Path) -> None:
    local = tmp_path / ".everynode" / "kubeconfig"
    local.parent.mkdir()
    local.write_text(cluster.kubeconfig.read_text())
    r = subprocess.run([*CLI, "node", "list"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                       env={**clean_env(), "HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert "worker-1" in r.stdout
