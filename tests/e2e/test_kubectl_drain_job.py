"""`kubectl drain` held back by a PodDisruptionBudget, and Jobs, with real kubectl 1.33 and 1.27.

The whole control plane runs (scheduler, kubelet simulation, disruption and Job controllers), as
on `everynode up`.  What a user sees on a real cluster, and what is checked here:

* ``kubectl drain NODE --ignore-daemonsets --force --delete-emptydir-data`` cordons the node,
  skips the DaemonSet's pod (kubectl looks its controller up), and retries every eviction the
  budget refuses — ``error when evicting pods/"web-0" -n "shop" (will retry after 5s): Cannot
  evict pod as it would violate the pod's disruption budget.`` — until a replacement elsewhere
  is Ready and the budget allows it; then the node is drained and ``kubectl uncordon`` undoes the
  cordon.
* ``kubectl create job`` (protobuf from 1.32 on) runs to ``Complete`` (``kubectl wait
  --for=condition=complete``); a Job whose container fails reaches its backoffLimit
  (``Failed``, ``BackoffLimitExceeded``) after the back-off between its retries.
* ``kubectl create pdb`` (protobuf too) and ``kubectl get pdb,jobs`` with upstream's columns.

Two workloads are drained: two bare pods with ``--force``, whose replacements the test creates
(:meth:`BareWorkload.replace`), so each refusal and retry is under the test's control; and a
Deployment without ``--force``, as users drain: its ReplicaSet replaces the evicted pod on another
node, and the budget lets the second eviction through once that replacement is Ready.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import everynode

pytestmark = pytest.mark.e2e

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.{version}"
NS = "shop"
NODE = "worker-1"
OTHER = "worker-2"
RETRY = ('(will retry after 5s): Cannot evict pod as it would violate the pod\'s disruption budget.')

AGENT = f"""
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: {NS}}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      containers: [{{name: agent, image: "registry.k8s.io/pause:3.9"}}]
"""



def with_budget(min_available: int) -> str:
    """The namespace, a budget on ``app=web`` and the DaemonSet ``agent``."""
    return f"""
apiVersion: v1
kind: Namespace
metadata: {{name: {NS}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: web, namespace: {NS}}}
spec:
  minAvailable: {min_available}
  selector: {{matchLabels: {{app: web}}}}
---""" + AGENT


MANIFESTS = with_budget(2)


class Kubectl:
    def __init__(self, version: str, kubeconfig: Path, cache_dir: Path) -> None:
        binary = KUBECTL.format(version=version)
        assert Path(binary).exists(), "kubectl comes with the machine image"
        self.base = [binary, "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache_dir)]

    def __call__(self, *args: str, input: str | None = None, ok: bool = True,
                 timeout: float = 60) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([*self.base, *args], input=input, capture_output=True, text=True, timeout=timeout)
        if ok:
            assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([*self.base, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_until(predicate: Any, *, timeout: float = 30, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


class BareWorkload:
    """Pods labelled ``app=web`` — bare pods here, a Deployment's later (see the module doc)."""

    def __init__(self, cluster: everynode.Cluster) -> None:
        self.client = cluster.client
        self.count = 0

    def _pod(self, node: str) -> None:
        name = f"web-{self.count}"
        self.count += 1
        self.client.create("pods", {"apiVersion": "v1", "kind": "Pod",
                                    "metadata": {"name": name, "namespace": NS, "labels": {"app": "web"}},
                                    "spec": {"nodeName": node, "containers": [{"name": "web", "image": "nginx"}],
                                             "volumes": [{"name": "scratch", "emptyDir": {}}]}})

    def apply(self, replicas: int, node: str) -> None:
        for _ in range(replicas):
            self._pod(node)

    def replace(self) -> None:
        """A replacement on the node that stays (a ReplicaSet's job for a Deployment)."""
        self._pod(OTHER)

    def pods(self) -> list[dict[str, Any]]:
        return self.client.list("pods", namespace=NS, label_selector="app=web")["items"]

    def on(self, node: str) -> list[str]:
        return sorted(p["metadata"]["name"] for p in self.pods() if p["spec"].get("nodeName") == node)


def budget(cluster: everynode.Cluster) -> dict[str, Any]:
    return cluster.client.get("poddisruptionbudgets.policy", "web", namespace=NS)["status"]


@pytest.mark.parametrize("version", ["1.33", "1.27"])
def test_drain_waits_for_the_disruption_budget(version: str, tmp_path: Path) -> None:
    with everynode.Cluster(nodes=2, control_planes=1, pod_startup=0.5, port=0) as cluster:
        kubectl = Kubectl(version, cluster.kubeconfig, tmp_path / "cache")
        kubectl("apply", "-f", "-", input=MANIFESTS)
        web = BareWorkload(cluster)
        web.apply(2, NODE)
        wait_until(lambda: budget(cluster).get("currentHealthy") == 2, what="two healthy pods")

        table = kubectl("get", "pdb", "-n", NS).stdout.splitlines()
        assert table[0].split() == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]
        assert table[1].split()[:4] == ["web", "2", "N/A", "0"]

        drain = kubectl.start("drain", NODE, "--ignore-daemonsets", "--force", "--delete-emptydir-data",
                              "--timeout=120s")
        try:
            wait_until(lambda: cluster.client.get("nodes", NODE)["spec"].get("unschedulable"), what="the cordon")
            time.sleep(6)  # at least one refusal and one retry
            assert web.on(NODE) == ["web-0", "web-1"], "the budget let a pod go"
            assert all(not p["metadata"].get("deletionTimestamp") for p in web.pods())

            web.replace()  # web-2, Ready elsewhere: one disruption allowed
            wait_until(lambda: len(web.on(NODE)) == 1, timeout=30, what="the first eviction")
            web.replace()  # web-3: the second
            out, err = drain.communicate(timeout=60)
        finally:
            if drain.poll() is None:
                drain.kill()
        assert drain.returncode == 0, (out, err)
        assert out.splitlines()[0] == f"node/{NODE} cordoned"
        assert out.splitlines()[-1] == f"node/{NODE} drained"
        assert f"evicting pod {NS}/web-0" in out and f"evicting pod {NS}/web-1" in out
        assert "pod/web-0 evicted" in out and "pod/web-1 evicted" in out
        refusals = [line for line in err.splitlines() if line.endswith(RETRY)]
        assert refusals and all(line.startswith('error when evicting pods/"web-') for line in refusals), err
        warning = next(line for line in err.splitlines() if line.startswith("Warning: "))
        parts = sorted(warning.removeprefix("Warning: ").split("; "))  # kubectl joins them in map order
        assert parts[0] == f"deleting Pods that declare no controller: {NS}/web-0, {NS}/web-1", warning
        assert parts[1].startswith(f"ignoring DaemonSet-managed Pods: {NS}/agent-"), warning
        assert web.on(NODE) == []
        agents = cluster.client.list("pods", namespace=NS, label_selector="app=agent")["items"]
        assert NODE in {p["spec"].get("nodeName") for p in agents}, "the DaemonSet's pod stays"

        assert kubectl("uncordon", NODE).stdout.strip() == f"node/{NODE} uncordoned"
        assert not cluster.client.get("nodes", NODE)["spec"].get("unschedulable")


DEPLOYMENT = f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {NS}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: web, image: nginx}}]
"""


@pytest.mark.parametrize("version", ["1.33", "1.27"])
def test_drain_a_deployment_waits_for_its_replacement(version: str, tmp_path: Path) -> None:
    with everynode.Cluster(nodes=2, control_planes=1, pod_startup=1.0, port=0) as cluster:
        kubectl = Kubectl(version, cluster.kubeconfig, tmp_path / "cache")
        kubectl("cordon", OTHER)  # both replicas on NODE first
        kubectl("apply", "-f", "-", input=with_budget(1) + "---" + DEPLOYMENT)
        kubectl("rollout", "status", "deployment/web", "-n", NS, "--timeout=60s")
        web = BareWorkload(cluster)
        first = web.on(NODE)
        assert len(first) == 2
        kubectl("uncordon", OTHER)
        wait_until(lambda: budget(cluster).get("disruptionsAllowed") == 1, what="one disruption allowed")

        drained = kubectl("drain", NODE, "--ignore-daemonsets", "--timeout=120s", timeout=150)
        out, err = drained.stdout, drained.stderr
        assert out.splitlines()[0] == f"node/{NODE} cordoned"
        assert out.splitlines()[-1] == f"node/{NODE} drained"
        assert all(f"pod/{name} evicted" in out for name in first), out
        # the two evictions go together: the budget allows one, the other waits for its replacement
        refusals = [line for line in err.splitlines() if line.endswith(RETRY)]
        assert refusals and all(line.startswith('error when evicting pods/"web-') for line in refusals), err
        assert "declare no controller" not in err
        kubectl("rollout", "status", "deployment/web", "-n", NS, "--timeout=60s")
        assert web.on(NODE) == [] and len(web.on(OTHER)) == 2
        agents = cluster.client.list("pods", namespace=NS, label_selector="app=agent")["items"]
        assert NODE in {p["spec"].get("nodeName") for p in agents}, "the DaemonSet's pod stays"


FAILING_JOB = f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: flaky, namespace: {NS}}}
spec:
  backoffLimit: 1
  template:
    metadata:
      annotations: {{everynode.io/behavior: fail}}
    spec:
      restartPolicy: Never
      containers: [{{name: main, image: busybox}}]
"""


@pytest.mark.parametrize("version", ["1.33", "1.27"])
def test_jobs_complete_and_fail(version: str, tmp_path: Path) -> None:
    with everynode.Cluster(nodes=1, control_planes=1, pod_startup=0.5, port=0) as cluster:
        kubectl = Kubectl(version, cluster.kubeconfig, tmp_path / "cache")
        kubectl("create", "namespace", NS)
        created = kubectl("create", "job", "pi", "-n", NS, "--image=perl:5.34", "--", "perl", "-e", "print 42")
        assert created.stdout.strip() == "job.batch/pi created"
        waited = kubectl("wait", "-n", NS, "--for=condition=complete", "job/pi", "--timeout=60s")
        assert waited.stdout.strip() == "job.batch/pi condition met"
        job = cluster.client.get("jobs.batch", "pi", namespace=NS)
        container = job["spec"]["template"]["spec"]["containers"][0]
        assert (container["image"], container["command"]) == ("perl:5.34", ["perl", "-e", "print 42"])
        assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
        assert job["status"]["succeeded"] == 1

        kubectl("apply", "-f", "-", input=FAILING_JOB)
        failed = kubectl("wait", "-n", NS, "--for=condition=failed", "job/flaky", "--timeout=90s", timeout=120)
        assert failed.stdout.strip() == "job.batch/flaky condition met"
        status = cluster.client.get("jobs.batch", "flaky", namespace=NS)["status"]
        assert status["failed"] == 2
        reasons = {c["type"]: c["reason"] for c in status["conditions"]}
        assert reasons == {"FailureTarget": "BackoffLimitExceeded", "Failed": "BackoffLimitExceeded"}

        # kubectl create pdb posts protobuf from 1.32 on (an IntOrString inside), JSON before
        created = kubectl("create", "pdb", "web", "-n", NS, "--selector=app=web", "--min-available=2")
        assert created.stdout.strip() == "poddisruptionbudget.policy/web created"
        spec = cluster.client.get("poddisruptionbudgets.policy", "web", namespace=NS)["spec"]
        assert spec == {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}
        lines = kubectl("get", "pdb,jobs", "-n", NS).stdout.splitlines()
        assert lines[0].split() == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]
        assert lines[1].split()[:4] == ["poddisruptionbudget.policy/web", "2", "N/A", "0"]
        assert lines[2] == ""
        assert lines[3].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
        rows = {line.split()[0]: line.split()[1:3] for line in lines[4:]}
        assert rows == {"job.batch/flaky": ["Failed", "0/1"], "job.batch/pi": ["Complete", "1/1"]}
