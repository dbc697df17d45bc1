"""`kubectl rollout` against the embedded cluster with real kubectl 1.33 and 1.27.

The full control plane runs (DaemonSet controller, scheduler, kubelet simulation with a 1 s pod
start-up, so a three-node rollout takes a few seconds and kubectl has time to watch it).  The seed
example is applied, then the rollout commands are driven exactly as a user would, and their output
is compared with upstream's wording (daemonset-semantics.md §7.6, §10.3;
``staging/src/k8s.io/kubectl/pkg/polymorphichelpers/{rollout_status,history,rollback}.go``):

* ``rollout status`` prints only upstream's waiting lines and ends with
  ``daemon set "node-exporter" successfully rolled out``; during an image change it reports
  ``N out of 3 new pods have been updated``;
* ``rollout history`` lists revisions 1 and 2, then 2 and 3 after an undo (the reused revision is
  renumbered to the highest number);
* ``rollout undo`` rolls back; undo to the revision that is already current is skipped;
  undo with a single revision fails with ``no last revision to roll back to``;
* ``describe ds`` shows the controller's ``SuccessfulCreate`` events;
* ``rollout status`` on an OnDelete DaemonSet fails with upstream's error.

Every kubectl call uses a fresh ``--cache-dir`` per test (discovery is cached for 6 h per host:port).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

import everynode

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "node-exporter.yaml"
KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.{version}"
DS = "ds/node-exporter"
NEW_IMAGE = "quay.io/prometheus/node-exporter:v1.8.0"
OLD_IMAGE = "quay.io/prometheus/node-exporter:latest"

WAITING = re.compile(
    r'Waiting for daemon set "node-exporter" rollout to finish: '
    r"(\d+ out of \d+ new pods have been updated|\d+ of \d+ updated pods are available)\.\.\."
    r"|Waiting for daemon set spec update to be observed\.\.\.")
DONE = 'daemon set "node-exporter" successfully rolled out'


class Kubectl:
    def __init__(self, version: str, kubeconfig: Path, cache_dir: Path) -> None:
        self.binary = KUBECTL.format(version=version)
        self.base = [self.binary, "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache_dir)]

    def __call__(self, *args: str, ok: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([*self.base, *args], capture_output=True, text=True, timeout=timeout)
        if ok:
            assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result

    def ns(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return self("-n", "monitoring", *args, **kwargs)

    def rollout_status(self) -> list[str]:
        lines = self.ns("rollout", "status", DS, "--timeout=120s").stdout.splitlines()
        assert lines[-1] == DONE, lines
        assert all(WAITING.fullmatch(line) for line in lines[:-1]), lines
        return lines


def images(cluster: Any) -> list[str]:
    pods = cluster.client.list("pods", namespace="monitoring")["items"]
    return sorted(p["spec"]["containers"][0]["image"] for p in pods if not p["metadata"].get("deletionTimestamp"))


@pytest.mark.parametrize("version", ["1.33", "1.27"])
def test_rollout_status_history_undo(version, tmp_path):
    assert Path(KUBECTL.format(version=version)).exists(), "kubectl comes with the machine image"
    with everynode.Cluster(nodes=2, control_planes=1, pod_startup=1.0, port=0) as cluster:
        kubectl = Kubectl(version, cluster.kubeconfig, tmp_path / "cache")

        out = kubectl("apply", "-f", str(EXAMPLE)).stdout
        assert out.splitlines() == ["namespace/monitoring created", "daemonset.apps/node-exporter created"]
        kubectl.rollout_status()
        assert images(cluster) == [OLD_IMAGE] * 3

        single = kubectl.ns("rollout", "undo", DS, ok=False)
        assert single.returncode != 0
        assert single.stderr.strip() == "error: no last revision to roll back to"

        out = kubectl.ns("set", "image", DS, f"node-exporter={NEW_IMAGE}").stdout
        assert out.strip() == "daemonset.apps/node-exporter image updated"
        lines = kubectl.rollout_status()
        assert any("new pods have been updated" in line for line in lines), lines
        assert images(cluster) == [NEW_IMAGE] * 3

        history = kubectl.ns("rollout", "history", DS).stdout
        assert history == "daemonset.apps/node-exporter \nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n\n"
        detail = kubectl.ns("rollout", "history", DS, "--revision=2").stdout
        assert detail.startswith("daemonset.apps/node-exporter with revision #2\nPod Template:\n")
        assert NEW_IMAGE in detail

        out = kubectl.ns("rollout", "undo", DS).stdout
        assert out.strip() == "daemonset.apps/node-exporter rolled back"
        kubectl.rollout_status()
        assert images(cluster) == [OLD_IMAGE] * 3
        history = kubectl.ns("rollout", "history", DS).stdout
        assert history == "daemonset.apps/node-exporter \nREVISION  CHANGE-CAUSE\n2         <none>\n3         <none>\n\n"

        out = kubectl.ns("rollout", "undo", DS, "--to-revision=3").stdout
        assert out.strip() == ("daemonset.apps/node-exporter skipped rollback "
                               "(current template already matches revision 3)")

        described = kubectl.ns("describe", "ds", "node-exporter").stdout
        created = [line.split() for line in described.splitlines() if "SuccessfulCreate" in line]
        assert len(created) >= 3, described
        assert all(words[0] == "Normal" and "daemonset-controller" in words and
                   " ".join(words[-3:-1]) == "Created pod:" and words[-1].startswith("node-exporter-")
                   for words in created), created

        kubectl.ns("patch", DS, "-p", '{"spec":{"updateStrategy":{"type":"OnDelete","rollingUpdate":null}}}')
        on_delete = kubectl.ns("rollout", "status", DS, "--timeout=20s", ok=False)
        assert on_delete.returncode != 0
        assert on_delete.stderr.strip() == "error: rollout status is only available for RollingUpdate strategy type"
