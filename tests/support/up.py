"""A real ``everynode up`` process on port 0 with a data dir, for tests that kill, restart and
load it: start it (waiting for its kubeconfig), wait until it answers, stop it with SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

from everynode.client.http import HttpClient


def start_up(data_dir: Path, *extra: str) -> subprocess.Popen[bytes]:
    """``everynode up --port 0 --data-dir DATA_DIR --nodes 2 EXTRA…`` (a later ``--nodes`` in
    ``extra`` wins), returned once its kubeconfig is written."""
    kubeconfig = data_dir / "kubeconfig"
    if kubeconfig.exists():
        kubeconfig.unlink()
    proc = subprocess.Popen(
        [sys.executable, "-m", "everynode.product.cli", "up", "--port", "0", "--data-dir", str(data_dir),
         "--nodes", "2", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not kubeconfig.exists():
        if proc.poll() is not None:
            raise AssertionError(f"everynode up exited: {proc.stdout.read().decode()}")  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("no kubeconfig written")
        time.sleep(0.05)
    return proc


async def wait_ready(client: HttpClient) -> None:
    for _ in range(600):
        try:
            await client.list("namespaces")
            return
        except Exception:
            await asyncio.sleep(0.05)
    raise AssertionError("API server never answered")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
