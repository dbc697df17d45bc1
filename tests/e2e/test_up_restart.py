"""`everynode up` survives kill -9: every write a client saw acknowledged is there after a restart
on the same data dir, resourceVersions keep increasing, and nodes are not duplicated."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from everynode.api.errors import ApiError
from everynode.client.http import HttpClient
from tests.support.up import start_up, stop, wait_ready

pytestmark = pytest.mark.e2e


def configmap(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"burst-{i}", "namespace": "default"},
            "data": {"i": str(i)}}


async def burst_until_killed(kubeconfig: Path, proc: subprocess.Popen[bytes], *, kill_after: int) -> tuple[set[str], int]:
    acked: set[str] = set()
    max_rv = 0
    async with HttpClient.from_kubeconfig(kubeconfig) as client:
        await wait_ready(client)
        counter = iter(range(10**6))

        async def writer() -> None:
            nonlocal max_rv
            while True:
                i = next(counter)
                try:
                    obj = await client.create("configmaps", configmap(i))
                except Exception:
                    return  # the server is gone
                acked.add(obj["metadata"]["name"])
                max_rv = max(max_rv, int(obj["metadata"]["resourceVersion"]))
                if len(acked) == kill_after:
                    os.kill(proc.pid, signal.SIGKILL)

        await asyncio.gather(*(writer() for _ in range(8)))
    return acked, max_rv


def test_kill9_during_write_burst_loses_no_acknowledged_write(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    proc = start_up(data_dir)
    try:
        acked, max_rv = asyncio.run(burst_until_killed(data_dir / "kubeconfig", proc, kill_after=300))
        proc.wait(10)
        assert proc.returncode == -signal.SIGKILL
        assert len(acked) >= 300

        proc = start_up(data_dir)

        async def check() -> None:
            async with HttpClient.from_kubeconfig(data_dir / "kubeconfig") as client:
                await wait_ready(client)
                stored = {cm["metadata"]["name"] for cm in (await client.list("configmaps", namespace="default"))["items"]}
                missing = acked - stored
                assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {sorted(missing)[:5]}"
                nodes = (await client.list("nodes"))["items"]
                assert sorted(n["metadata"]["name"] for n in nodes) == ["control-plane-1", "worker-1", "worker-2"]
                after = await client.create("configmaps", configmap(10**7))
                assert int(after["metadata"]["resourceVersion"]) > max_rv
                with pytest.raises(ApiError) as err:
                    await client.create("configmaps", configmap(10**7))
                assert err.value.code == 409

        asyncio.run(check())
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert proc.returncode == 0, "SIGTERM must stop `everynode up` cleanly"


def test_busy_port_is_a_one_line_error(tmp_path: Path) -> None:
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    try:
        result = subprocess.run(
            [sys.executable, "-m", "everynode.product.cli", "up", "--in-memory", "--port", str(port),
             "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=60)
    finally:
        sock.close()
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr


def test_unwritable_data_dir_is_a_one_line_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = subprocess.run(
        [sys.executable, "-m", "everynode.product.cli", "up", "--port", "0", "--data-dir", str(blocker / "sub")],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    assert "data dir" in result.stderr and "not writable" in result.stderr


def banner_line(proc: subprocess.Popen[bytes]) -> str:
    assert proc.stdout is not None
    seen: list[str] = []
    while True:
        line = proc.stdout.readline().decode()
        if not line:
            raise AssertionError("everynode up ended before its banner:\n" + "".join(seen))
        seen.append(line)
        if line.startswith("everynode is up:"):
            return line.strip()


def test_banner_after_a_restart_counts_the_nodes_that_persisted(tmp_path: Path) -> None:
    from everynode.product.nodes import node_manifest

    data_dir = tmp_path / "data"
    proc = start_up(data_dir)
    try:
        assert banner_line(proc) == "everynode is up: 1 control-plane node(s), 2 worker node(s)"

        async def add_nodes() -> None:
            async with HttpClient.from_kubeconfig(data_dir / "kubeconfig") as client:
                await wait_ready(client)
                for name in ("extra-1", "extra-2", "extra-3"):
                    await client.create("nodes", node_manifest(name))

        asyncio.run(add_nodes())
    finally:
        stop(proc)
    proc = start_up(data_dir)  # the same --nodes 2 as before
    try:
        assert banner_line(proc) == "everynode is up: 1 control-plane node(s), 5 worker node(s)"
    finally:
        stop(proc)
