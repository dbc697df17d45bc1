"""Durability attack, scaled down for CI: ``kill -9`` of ``everynode up`` (SQLite data dir)
twice, each time in the middle of a DaemonSet rolling update while six writers create
ConfigMaps.  After each restart every write a client saw acknowledged is there, and all along —
before the kill and after the restart — no node ever has two live pods of the DaemonSet and no
more nodes than ``maxUnavailable`` are without an available one.  The full-size run (8 kills)
is the same code with a larger count."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from everynode.client.http import HttpClient
from tests.support.up import start_up, stop, wait_ready

pytestmark = pytest.mark.e2e

KILLS, NODES, MAX_UNAVAILABLE = 2, 3, 1
UP_ARGS = ("--nodes", str(NODES), "--pod-startup", "0.3")
NS, DS = "default", "agent"
WORKERS = {f"worker-{i}" for i in range(1, NODES + 1)}


def daemonset(image: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": DS, "namespace": NS},
            "spec": {"selector": {"matchLabels": {"app": DS}},
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": MAX_UNAVAILABLE}},
                     "template": {"metadata": {"labels": {"app": DS}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


class Invariants:
    """Snapshots of the DaemonSet's pods (one consistent list each) and what broke in them."""

    def __init__(self) -> None:
        self.snapshots = 0
        self.broken: list[str] = []

    async def watch_over(self, client: HttpClient) -> None:
        while True:
            try:
                pods = (await client.list("pods", namespace=NS, label_selector=f"app={DS}"))["items"]
            except Exception:
                return  # the server is gone
            self.snapshots += 1
            live: dict[str, int] = {}
            available: set[str] = set()
            for pod in pods:
                node = pod["spec"].get("nodeName")
                if node is None or pod["metadata"].get("deletionTimestamp"):
                    continue
                live[node] = live.get(node, 0) + 1
                if any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", [])):
                    available.add(node)
            self.broken += [f"two live pods on {node}" for node, n in live.items() if n > 1]
            if len(WORKERS - available) > MAX_UNAVAILABLE:
                self.broken.append(f"{sorted(WORKERS - available)} unavailable at once")
            await asyncio.sleep(0.03)


async def rolled_out(client: HttpClient, image: str) -> None:
    for _ in range(600):
        ds = await client.get("daemonsets", DS, namespace=NS)
        status = ds.get("status", {})
        if (ds["spec"]["template"]["spec"]["containers"][0]["image"] == image
                and status.get("observedGeneration") == ds["metadata"]["generation"]
                and status.get("updatedNumberScheduled") == status.get("numberAvailable") == NODES):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the rollout of {image} never finished: {status}")


async def first_rollout(kubeconfig: Path) -> None:
    async with HttpClient.from_kubeconfig(kubeconfig) as client:
        await wait_ready(client)
        await client.create("daemonsets", daemonset("img:0"), namespace=NS)
        await rolled_out(client, "img:0")


async def roll_and_kill(kubeconfig: Path, proc: subprocess.Popen[bytes], image: str, acked: set[str],
                        invariants: Invariants) -> None:
    async with HttpClient.from_kubeconfig(kubeconfig) as client:
        await wait_ready(client)
        observer = asyncio.create_task(invariants.watch_over(client))
        await client.patch("daemonsets", DS, {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}},
                           namespace=NS, patch_type="strategic")

        async def writer() -> None:
            while True:
                name = f"cm-{len(acked)}-{random.getrandbits(32):x}"
                try:
                    await client.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                                       "metadata": {"name": name}}, namespace=NS)
                except Exception:
                    return  # the server is gone
                acked.add(name)

        writers = [asyncio.create_task(writer()) for _ in range(6)]
        await asyncio.sleep(random.uniform(0.3, 0.8))  # a 3-node rollout at 0.3 s per pod takes about 1 s
        os.kill(proc.pid, signal.SIGKILL)
        await asyncio.gather(*writers)
        observer.cancel()


async def check_after_restart(kubeconfig: Path, image: str, acked: set[str], invariants: Invariants) -> None:
    async with HttpClient.from_kubeconfig(kubeconfig) as client:
        await wait_ready(client)
        observer = asyncio.create_task(invariants.watch_over(client))
        stored = {cm["metadata"]["name"] for cm in (await client.list("configmaps", namespace=NS))["items"]}
        missing = acked - stored
        assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {sorted(missing)[:3]}"
        await rolled_out(client, image)
        observer.cancel()


def test_kill9_during_rollouts_loses_no_write_and_keeps_one_pod_per_node_and_the_budget(tmp_path: Path) -> None:
    data_dir, kubeconfig = tmp_path / "data", tmp_path / "data" / "kubeconfig"
    invariants = Invariants()
    acked: set[str] = set()
    proc = start_up(data_dir, *UP_ARGS)
    try:
        asyncio.run(first_rollout(kubeconfig))
        for kill in range(1, KILLS + 1):
            asyncio.run(roll_and_kill(kubeconfig, proc, f"img:{kill}", acked, invariants))
            proc.wait(10)
            assert proc.returncode == -signal.SIGKILL
            started = time.monotonic()
            proc = start_up(data_dir, *UP_ARGS)
            asyncio.run(check_after_restart(kubeconfig, f"img:{kill}", acked, invariants))
            assert time.monotonic() - started < 30
    finally:
        stop(proc)
    assert len(acked) > 50 and invariants.snapshots > 20
    assert not invariants.broken, invariants.broken[:5]
