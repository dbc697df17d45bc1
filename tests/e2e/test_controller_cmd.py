"""`everynode controller` end to end: two replicas over HTTPS, one leader, takeover on SIGTERM.

The embedded control plane runs everything except its own DaemonSet controller
(``Cluster(disable=["daemonset"])``); two ``everynode controller`` processes campaign for the
Lease.  Checked: exactly one holds it and only that one starts a controller; the seed example's
DaemonSet converges; SIGTERM to the leader stops it cleanly (exit 0, Lease released) and the
standby takes over — the Lease holder changes and the new leader keeps reconciling (a node added
afterwards gets its pod); a second SIGTERM leaves the Lease released.

Leader-election timings are shortened (lease 6 s, renew 4 s, retry 0.5 s) so a takeover takes
about a second; the logic is the same as with upstream's 15/10/2 s defaults.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import everynode
from everynode.product.nodes import node_manifest
from tests.support.waiting import wait_until as wait_for

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "node-exporter.yaml"
EVERYNODE = str(Path(sys.executable).with_name("everynode"))
LEASE = ("leases.coordination.k8s.io", "everynode-daemonset-controller", "kube-system")
ELECTION_FLAGS = ["--leader-elect-lease-duration", "6", "--leader-elect-renew-deadline", "4",
                  "--leader-elect-retry-period", "0.5"]


class Replica:
    """One `everynode controller` process; stderr goes to a file the test reads."""

    def __init__(self, kubeconfig: Path, log: Path, *, flags: tuple[str, ...] = tuple(ELECTION_FLAGS)) -> None:
        self.log = log
        self._file = log.open("wb")
        self.proc = subprocess.Popen([EVERYNODE, "controller", "--kubeconfig", str(kubeconfig), *flags],
                                     stdout=subprocess.DEVNULL, stderr=self._file)

    def output(self) -> str:
        return self.log.read_text()

    @property
    def identity(self) -> str | None:
        for line in self.output().splitlines():
            if line.endswith(" campaigning for lease kube-system/everynode-daemonset-controller"):
                return line.split(": ", 1)[1].split(" ", 1)[0]
        return None

    @property
    def leading(self) -> bool:
        return "acquired lease" in self.output()

    def terminate(self, timeout: float = 20.0) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            self._file.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._file.close()


@pytest.fixture
def cluster() -> Iterator[Any]:
    with everynode.Cluster(nodes=2, control_planes=1, pod_startup=0.1, disable=["daemonset"], port=0) as c:
        yield c


def lease_holder(cluster: Any) -> str:
    resource, name, namespace = LEASE
    try:
        lease = cluster.client.get(resource, name, namespace=namespace)
    except Exception:  # noqa: BLE001 - not created yet
        return ""
    return (lease.get("spec") or {}).get("holderIdentity") or ""


def converged(cluster: Any, nodes: int, *, namespace: str = "monitoring") -> bool:
    try:
        ds = cluster.client.get("daemonsets.apps", "node-exporter", namespace=namespace)
    except Exception:  # noqa: BLE001
        return False
    st = ds.get("status") or {}
    return (st.get("observedGeneration") == ds["metadata"]["generation"]
            and all(st.get(k) == nodes for k in ("desiredNumberScheduled", "currentNumberScheduled", "numberReady",
                                                 "updatedNumberScheduled", "numberAvailable")))


def pod_nodes(cluster: Any) -> list[str]:
    pods = cluster.client.list("pods", namespace="monitoring")["items"]
    return sorted(p["spec"].get("nodeName") or "" for p in pods if not p["metadata"].get("deletionTimestamp"))


def test_two_replicas_one_leader_then_takeover(cluster, tmp_path):
    replicas = [Replica(cluster.kubeconfig, tmp_path / f"replica-{i}.log") for i in range(2)]
    try:
        identities = wait_for(lambda: all(r.identity for r in replicas) and [r.identity for r in replicas],
                              what="both replicas campaigning")
        holder = wait_for(lambda: lease_holder(cluster) in identities and lease_holder(cluster),
                          what="a leader")
        leader = next(r for r in replicas if r.identity == holder)
        standby = next(r for r in replicas if r is not leader)

        cluster.run(cluster.plane.apply_manifests([EXAMPLE]))
        wait_for(lambda: converged(cluster, 3), what="the DaemonSet to converge on 3 nodes")
        assert pod_nodes(cluster) == ["control-plane-1", "worker-1", "worker-2"]
        # Only the Lease holder ever started a controller; the standby saw who leads.
        assert leader.leading and not standby.leading
        # The standby reports the holder on its next retry (retry period), which can come after
        # the DaemonSet converged: wait for it rather than race it.
        wait_for(lambda: f"is held by {holder}" in standby.output(), what="the standby to see who leads")
        assert not standby.leading
        assert lease_holder(cluster) == holder

        assert leader.terminate() == 0
        assert "stopped; lease released" in leader.output()
        new_holder = wait_for(lambda: lease_holder(cluster) == standby.identity and lease_holder(cluster),
                              timeout=20, what="the standby to take the Lease over")
        assert new_holder != holder and standby.leading

        cluster.client.create("nodes", node_manifest("worker-3"))
        wait_for(lambda: converged(cluster, 4), what="the new node's pod")
        assert pod_nodes(cluster) == ["control-plane-1", "worker-1", "worker-2", "worker-3"]

        assert standby.terminate() == 0
        assert lease_holder(cluster) == ""  # released, not left to expire
    finally:
        for r in replicas:
            r.kill()


def test_a_leader_that_lost_its_lease_stops_and_exits(cluster, tmp_path):
    """A leader frozen past the lease duration (SIGSTOP) is replaced; once it runs again its renewals
    fail, and after the renew deadline it stops its controller and exits 1 — never acting beside the
    new leader for longer than that (upstream's guarantee, without fencing)."""
    first = Replica(cluster.kubeconfig, tmp_path / "first.log")
    second: Replica | None = None
    try:
        wait_for(lambda: first.leading, what="the first replica to lead")
        second = Replica(cluster.kubeconfig, tmp_path / "second.log")
        wait_for(lambda: second.identity, what="the second replica to campaign")
        first.proc.send_signal(signal.SIGSTOP)
        wait_for(lambda: lease_holder(cluster) == second.identity, timeout=30,
                 what="the standby to take over the expired Lease")
        first.proc.send_signal(signal.SIGCONT)
        assert first.proc.wait(30) == 1
        assert "error: leader election lost" in first.output()
        assert lease_holder(cluster) == second.identity
        cluster.run(cluster.plane.apply_manifests([EXAMPLE]))
        wait_for(lambda: converged(cluster, 3), what="the new leader to run the DaemonSet")
        assert second.terminate() == 0
    finally:
        first.kill()
        if second is not None:
            second.kill()


def test_namespace_flag_limits_the_controller_without_leader_election(cluster, tmp_path):
    """``--no-leader-elect --namespace team-a``: acts at once, only on DaemonSets of team-a."""
    manifest = EXAMPLE.read_text()
    other = tmp_path / "team-a.yaml"
    other.write_text(manifest.replace("name: monitoring", "name: team-a").replace("namespace: monitoring",
                                                                                   "namespace: team-a"))
    cluster.run(cluster.plane.apply_manifests([EXAMPLE, other]))
    replica = Replica(cluster.kubeconfig, tmp_path / "replica.log", flags=("--no-leader-elect", "--namespace", "team-a"))
    try:
        wait_for(lambda: converged(cluster, 3, namespace="team-a"), what="team-a's DaemonSet to converge")
        assert cluster.client.list("pods", namespace="monitoring")["items"] == []
        assert "leader election disabled" in replica.output()
        assert lease_holder(cluster) == ""  # no Lease involved
        assert replica.terminate() == 0
    finally:
        replica.kill()
