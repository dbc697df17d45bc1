"""Real third-party manifests (``../shared/realworld/``) on ``everynode up``, as a user applies them.

For each file of the folder (read from there, never copied into the repository; its README
says what a user expects), in a fresh ``everynode up`` per file and apply mode — the manifests
create cluster-scoped objects and fixed namespaces, and several DaemonSets claim the same host
ports, so sharing one cluster would test their interference, not the server:

1. ``kubectl apply -f FILE`` (client-side), or ``kubectl apply --server-side -f FILE``;
2. every DaemonSet and Deployment of the file reaches all pods available on the nodes it
   selects (``kubectl rollout status``, the user's own check).

What a user does beside ``apply`` is done as they would do it, because a real cluster answers
the same way: a namespace the file uses but does not create (fluent-bit's ``logging``) is
created first; a Secret holding a placeholder instead of base64 (datadog's
``PUT_YOUR_BASE64_ENCODED_API_KEY_HERE``) is refused with kube-apiserver's decoding error, then
applied again with a key filled in; a kustomize base shipped without the selector labels its
kustomization adds (metrics-server's ``manifests/base``) is refused for the missing
``spec.selector``, then applied with ``kubectl apply -k`` over upstream's kustomization.

The folder defaults to ``<project root>/../shared/realworld`` (``EVERYNODE_REALWORLD`` points
elsewhere, e.g. from a worktree); a missing folder skips locally and fails in CI.  A file whose
kinds need a controller this checkout does not have is an expected, strict failure (it fails
the suite once the controller exists and the file passes).
"""

from __future__ import annotations

import base64
import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.up import start_up, stop

ROOT = Path(__file__).resolve().parents[2]
FOLDER = Path(os.environ.get("EVERYNODE_REALWORLD") or ROOT.parent / "shared" / "realworld")
KUBECTL = Path("/usr/lib/google-cloud-sdk/bin/kubectl.1.33")
BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
PLACEHOLDER = "PUT_YOUR_BASE64_ENCODED_API_KEY_HERE"

# The kustomization metrics-server ships beside its base (manifests/base/kustomization.yaml).
METRICS_SERVER_KUSTOMIZATION = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
labels:
- includeSelectors: true
  pairs:
    k8s-app: metrics-server
resources:
- manifest.yaml
"""


def _files() -> list[Path]:
    if not FOLDER.is_dir():
        if os.environ.get("CI"):
            raise AssertionError(f"{FOLDER} is missing: the real-world manifests are required in CI")
        return []
    return sorted(FOLDER.glob("*.yaml"))


FILES = _files()


def _controller_missing(kind: str) -> bool:
    """Whether this checkout runs no controller for ``kind`` (its workload never converges)."""
    import importlib.util

    module = {"Deployment": "everynode.controllers.deployment"}.get(kind)
    return module is not None and importlib.util.find_spec(module) is None


@dataclass
class Cluster:
    proc: subprocess.Popen[bytes]
    kubeconfig: Path
    home: Path

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 120) -> subprocess.CompletedProcess[str]:
        cmd = [str(KUBECTL), "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.home / "cache"), *args]
        result = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout,
                                env=dict(os.environ, HOME=str(self.home)))
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n"
                                 f"stdout: {result.stdout}\nstderr: {result.stderr}")
        return result


def _wait_up(proc: subprocess.Popen[bytes], deadline: float) -> None:
    """Until ``everynode up`` prints that it is up (its nodes registered and Ready)."""
    assert proc.stdout is not None
    buffered = b""
    while b"everynode is up" not in buffered:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or proc.poll() is not None:
            raise AssertionError(f"everynode up did not come up: {buffered.decode(errors='replace')}")
        ready, _, _ = select.select([proc.stdout], [], [], remaining)
        if ready:
            buffered += os.read(proc.stdout.fileno(), 65536)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    if not KUBECTL.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{KUBECTL} not installed")
        pytest.skip(f"{KUBECTL} not installed")
    proc = start_up(tmp_path / "data", "--nodes", "3", "--pod-startup", "0.2", "--in-memory")
    try:
        _wait_up(proc, time.monotonic() + 60)
        yield Cluster(proc, tmp_path / "data" / "kubeconfig", tmp_path)
    finally:
        stop(proc)


def _documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind")]


def _missing_namespaces(docs: list[dict[str, Any]]) -> list[str]:
    created = {d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"}
    used = {(d.get("metadata") or {}).get("namespace") for d in docs} - {None}
    return sorted(used - created - BUILTIN_NAMESPACES)


def _apply_args(mode: str) -> list[str]:
    return ["apply", "--server-side"] if mode == "server-side" else ["apply"]


def _apply(cluster: Cluster, path: Path, text: str, docs: list[dict[str, Any]], mode: str, tmp: Path) -> None:
    """``kubectl apply`` the file, doing what a user does about the answers a real cluster gives."""
    for ns in _missing_namespaces(docs):
        cluster.kubectl("create", "namespace", ns)
    first = cluster.kubectl(*_apply_args(mode), "-f", str(path), check=False)
    if PLACEHOLDER in text:
        assert first.returncode != 0
        assert ('Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3'
                in first.stderr), first.stderr
        key = base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()
        cluster.kubectl(*_apply_args(mode), "-f", "-", input=text.replace(PLACEHOLDER, key))
        return
    unselected = [d for d in docs if d["kind"] == "Deployment" and not (d.get("spec") or {}).get("selector")]
    if unselected:  # a kustomize base: what plain apply gets, then the kustomization's labels
        assert first.returncode != 0
        assert "spec.selector: Required value" in first.stderr, first.stderr
        base = tmp / "kustomize"
        base.mkdir()
        shutil.copyfile(path, base / "manifest.yaml")  # a temporary directory, not the repository
        (base / "kustomization.yaml").write_text(METRICS_SERVER_KUSTOMIZATION)
        cluster.kubectl(*_apply_args(mode), "-k", str(base))
        return
    assert first.returncode == 0, first.stderr


# Found by the first run on the merged tree (session 6), each to be resolved (issue #13):
KNOWN_FAILURES = {
    # The placeholder Secret is refused (not base64, as by a real API server), so the pods wait
    # for a Secret that never comes (FailedMount) — upstream's behaviour; the test must apply a
    # valid key the way a user would.
    "07-datadog-agent.yaml": "pods wait for the refused placeholder Secret (FailedMount)",
    # A kustomize base: the ServiceAccount subject has no namespace, which upstream's RBAC
    # validation refuses for a ClusterRoleBinding; to be applied with -k as 19 is.
    "09-aws-ebs-csi-node.yaml": "ClusterRoleBinding subject without namespace (kustomize base)",
    # Pods never become available since the kubelet honours mounts: cause not yet found.
    "13-kube-router.yaml": "pods not available after the mount checks landed (under investigation)",
}


@pytest.mark.parametrize("mode", ["client-side", "server-side"])
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_manifest_applies_and_converges(cluster: Cluster, path: Path, mode: str, tmp_path: Path,
                                        request: pytest.FixtureRequest) -> None:
    text = path.read_text()
    docs = _documents(text)
    workloads = [d for d in docs if d["kind"] in ("DaemonSet", "Deployment")]
    missing = sorted({d["kind"] for d in workloads if _controller_missing(d["kind"])})
    if path.name in KNOWN_FAILURES:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_FAILURES[path.name], strict=True))
    if missing:
        request.applymarker(pytest.mark.xfail(reason=f"no {', '.join(missing)} controller in this checkout",
                                              strict=True))
    _apply(cluster, path, text, docs, mode, tmp_path)
    for d in workloads:
        md = d["metadata"]
        cluster.kubectl("rollout", "status", f"{d['kind'].lower()}/{md['name']}", "-n",
                        md.get("namespace") or "default", "--timeout=90s")
    for d in workloads:  # every selected node runs an available pod of each DaemonSet
        if d["kind"] == "DaemonSet":
            md = d["metadata"]
            status = yaml.safe_load(cluster.kubectl("get", "daemonset", md["name"], "-n",
                                                    md.get("namespace") or "default", "-o", "yaml").stdout)["status"]
            assert status["numberAvailable"] == status["desiredNumberScheduled"] == status["updatedNumberScheduled"]


def test_the_folder_is_there_in_ci() -> None:
    """In CI the folder must exist and hold the manifests (a missing folder must not pass silently)."""
    if not os.environ.get("CI") and not FOLDER.is_dir():
        pytest.skip(f"{FOLDER} not found (set EVERYNODE_REALWORLD)")
    assert len(FILES) >= 10
