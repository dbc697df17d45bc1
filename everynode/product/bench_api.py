"""`everynode bench api`: request rates and latencies of the HTTPS API, measured like a user
sees them.

The server runs as `everynode up` in a child process (no nodes, in memory) and the load comes
from this process, so the two do not share an event loop (python-stack.md §1 measured the same
way).  Figures: single-object GET and PUT latency (p50/p99) and rate, LIST of N pods, and the
fan-out of one write to 1,000 watch streams — all while the 1,000 watchers are connected.
It has no storage floor (it measures the HTTP surface itself): ``floor_seconds`` and ``ratio``
are null.
"""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

WATCHERS = 1000
NAMESPACE = "bench"


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _wait_ready(session: aiohttp.ClientSession, url: str, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError("everynode up exited during start-up")
        try:
            async with session.get(f"{url}/readyz") as r:
                if r.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)
    raise TimeoutError("API server did not become ready")


def _server_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def _server_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


async def bench_api(*, pods: int = 5000, requests: int = 2000, concurrency: int = 8) -> list[dict[str, Any]]:
    tmp = Path(tempfile.mkdtemp(prefix="everynode-bench-api-"))
    kubeconfig = tmp / "kubeconfig"
    proc = subprocess.Popen(
        [sys.executable, "-m", "everynode.product.cli", "up", "--in-memory", "--port", "0", "--nodes", "0",
         "--control-planes", "0", "--data-dir", str(tmp), "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            if kubeconfig.exists():
                break
            await asyncio.sleep(0.1)
        cfg = yaml.safe_load(kubeconfig.read_text())
        cluster = cfg["clusters"][0]["cluster"]
        token = cfg["users"][0]["user"]["token"]
        url = cluster["server"]
        ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        connector = aiohttp.TCPConnector(ssl=ctx, limit=0)
        async with aiohttp.ClientSession(connector=connector, headers=headers,
                                         timeout=aiohttp.ClientTimeout(total=None)) as session:
            await _wait_ready(session, url, proc)
            return await _run(session, url, proc.pid, pods=pods, requests=requests, concurrency=concurrency)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


async def _run(session: aiohttp.ClientSession, url: str, pid: int, *, pods: int, requests: int,
               concurrency: int) -> list[dict[str, Any]]:
    base = f"{url}/api/v1/namespaces/{NAMESPACE}/pods"
    await session.post(f"{url}/api/v1/namespaces", data=orjson.dumps(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}))
    sem = asyncio.Semaphore(64)

    async def create(i: int) -> None:
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i:05d}", "labels": {"app": "bench"}},
                "spec": {"containers": [{"name": "c", "image": "registry.example/c:1"}]}}
        async with sem, session.post(base, data=orjson.dumps(body)) as r:
            await r.read()

    await asyncio.gather(*(create(i) for i in range(pods)))
    async with session.get(base + "?limit=1") as r:
        rv = (await r.json())["metadata"]["resourceVersion"]

    # 1,000 watchers on the pods of the namespace
    target = {"name": ""}

    async def watcher(ev_list: list[asyncio.Event]) -> None:
        async with session.get(base, params={"watch": "true", "resourceVersion": rv}) as r:
            async for line in r.content:
                if target["name"] and target["name"].encode() in line:
                    ev_list[-1].set()

    watcher_events = [[asyncio.Event()] for _ in range(WATCHERS)]
    tasks = [asyncio.create_task(watcher(evs)) for evs in watcher_events]
    await asyncio.sleep(2.0)
    cpu0 = _server_cpu(pid)
    t_all = time.perf_counter()

    # single-object GET and PUT
    async def timed(method: str, path: str, body: bytes | None = None) -> float:
        t = time.perf_counter()
        async with session.request(method, path, data=body) as r:
            await r.read()
            if r.status >= 300:
                raise RuntimeError(f"{method} {path}: {r.status}")
        return time.perf_counter() - t

    async def load(method: str, n: int, body_for: Any = None) -> tuple[list[float], float]:
        samples: list[float] = []
        queue = list(range(n))

        async def worker() -> None:
            while queue:
                i = queue.pop()
                path = f"{base}/p{i % pods:05d}"
                samples.append(await timed(method, path, body_for(i) if body_for else None))

        t = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return samples, time.perf_counter() - t

    get_samples, get_wall = await load("GET", requests)

    async def fetch(i: int) -> dict[str, Any]:
        async with session.get(f"{base}/p{i % pods:05d}") as r:
            return await r.json()

    # PUT: read-modify-write of distinct pods (no conflicts)
    bodies = {i: await fetch(i) for i in range(min(requests, 500))}

    def put_body(i: int) -> bytes:
        obj = bodies[i]
        obj["metadata"].setdefault("labels", {})["round"] = str(i)
        return orjson.dumps(obj)

    put_samples, put_wall = await load("PUT", len(bodies), put_body)

    list_samples = []
    for _ in range(5):
        t = time.perf_counter()
        async with session.get(base) as r:
            data = await r.read()
        list_samples.append(time.perf_counter() - t)
    listed = len(orjson.loads(data)["items"])

    fanout = []
    for k in range(5):
        for evs in watcher_events:
            evs.append(asyncio.Event())
        target["name"] = f"fanout-{k}"
        t = time.perf_counter()
        await create_named(session, base, target["name"])
        await asyncio.wait_for(asyncio.gather(*(evs[-1].wait() for evs in watcher_events)), 60)
        fanout.append(time.perf_counter() - t)
    seconds = time.perf_counter() - t_all
    cpu = _server_cpu(pid) - cpu0
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return [{
        "scenario": "api", "nodes": 0, "transport": "http", "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu, 3), "peak_rss_mib": round(_server_rss_mib(pid), 1),
        "floor_seconds": None, "ratio": None,
        "watchers": WATCHERS, "pods": listed,
        "get_per_second": round(len(get_samples) / get_wall, 1),
        "get_p50_ms": round(statistics.median(get_samples) * 1e3, 2),
        "get_p99_ms": round(_percentile(get_samples, 0.99) * 1e3, 2),
        "put_per_second": round(len(put_samples) / put_wall, 1),
        "put_p50_ms": round(statistics.median(put_samples) * 1e3, 2),
        "put_p99_ms": round(_percentile(put_samples, 0.99) * 1e3, 2),
        "list_seconds_median": round(statistics.median(list_samples), 3),
        "watch_fanout_ms_median": round(statistics.median(fanout) * 1e3, 1),
    }]


async def create_named(session: aiohttp.ClientSession, base: str, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "registry.example/c:1"}]}}
    async with session.post(base, data=orjson.dumps(body)) as r:
        await r.read()
