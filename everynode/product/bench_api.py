"""`everynode bench api`: request rates and latencies of the HTTPS API, measured like a user
sees them.

The server runs as `everynode up` in a child process (no nodes, in memory) and the load comes
from this process, so the two do not share an event loop (python-stack.md §1 measured the same
way).  Figures: single-object GET and PUT latency (p50/p99) and rate, LIST of N pods, and the
fan-out of one write to 1,000 watch streams — all while the 1,000 watchers are connected.
PUT latency is measured twice: saturated (``concurrency`` writers back to back, every write
fanned out to all 1,000 streams) and paced (50 writes/s, one in flight, a GET after each).
It has no storage floor (it measures the HTTP surface itself): ``floor_seconds`` and ``ratio``
are null.

The 1,000 watch streams are read by a *second* child process (``python -m
everynode.product.bench_api watchers``), not by the process that times GET and PUT.  Reading
them in the timing process put the client's own work (decrypting and scanning 1,000 event lines
per write) inside every measured request: a PUT's response waited in the client's socket while
its event loop read the watch traffic that PUT caused, so the figures measured the client.
The reader is a bare ``asyncio.Protocol`` per stream that only looks for a marker name, the
cheapest client that still receives every byte, so it takes as little of the 2 shared cores as
a real, separate watcher would.  Fan-out is the time from sending the write until that process
reports that every stream has carried the new object's name.
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
from typing import Any, cast

import aiohttp
import orjson
import yaml

import everynode

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
        ca = tmp / "ca.crt"
        ca.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
        ctx = ssl.create_default_context(cafile=str(ca))
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        connector = aiohttp.TCPConnector(ssl=ctx, limit=0)
        async with aiohttp.ClientSession(connector=connector, headers=headers,
                                         timeout=aiohttp.ClientTimeout(total=None)) as session:
            await _wait_ready(session, url, proc)
            return await _run(session, url, proc.pid, ca=ca, token=token, pods=pods, requests=requests,
                              concurrency=concurrency)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


async def _run(session: aiohttp.ClientSession, url: str, pid: int, *, ca: Path, token: str, pods: int,
               requests: int, concurrency: int) -> list[dict[str, Any]]:
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

    # 1,000 watchers on the pods of the namespace, read by another process
    watchers = await _WatcherProcess.start(url, ca, token, f"/api/v1/namespaces/{NAMESPACE}/pods", rv, WATCHERS)
    await asyncio.sleep(0.5)
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

    # The same writes at a steady 50/s (one in flight) with a GET between them: the latency a
    # client sees while the server keeps up, as opposed to the saturated figures above.
    paced_bodies = {i: await fetch(i) for i in range(500, min(pods, 800))}
    paced_put: list[float] = []
    paced_get: list[float] = []
    for i, obj in paced_bodies.items():
        start = time.perf_counter()
        obj["metadata"].setdefault("labels", {})["round"] = "paced"
        paced_put.append(await timed("PUT", f"{base}/p{i:05d}", orjson.dumps(obj)))
        paced_get.append(await timed("GET", f"{base}/p{(i * 7) % pods:05d}"))
        await asyncio.sleep(max(0.0, start + 0.02 - time.perf_counter()))

    list_samples = []
    for _ in range(5):
        t = time.perf_counter()
        async with session.get(base) as r:
            data = await r.read()
        list_samples.append(time.perf_counter() - t)
    listed = len(orjson.loads(data)["items"])

    fanout = []
    try:
        for k in range(5):
            name = f"fanout-{k}"
            await watchers.arm(name)
            t = time.perf_counter()
            await create_named(session, base, name)
            await asyncio.wait_for(watchers.all_seen(), 60)
            fanout.append(time.perf_counter() - t)
    finally:
        await watchers.close()
    seconds = time.perf_counter() - t_all
    cpu = _server_cpu(pid) - cpu0
    return [{
        "scenario": "api", "nodes": 0, "transport": "http", "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu, 3), "peak_rss_mib": round(_server_rss_mib(pid), 1),
        "floor_seconds": None, "ratio": None,
        # (the server runs this tree in this environment, so its build state is this process's)
        "compiled": everynode.BUILD == "fresh",
        "watchers": WATCHERS, "pods": listed,
        "get_per_second": round(len(get_samples) / get_wall, 1),
        "get_p50_ms": round(statistics.median(get_samples) * 1e3, 2),
        "get_p99_ms": round(_percentile(get_samples, 0.99) * 1e3, 2),
        "put_per_second": round(len(put_samples) / put_wall, 1),
        "put_p50_ms": round(statistics.median(put_samples) * 1e3, 2),
        "put_p99_ms": round(_percentile(put_samples, 0.99) * 1e3, 2),
        "paced_put_per_second": 50, "paced_put_p50_ms": round(statistics.median(paced_put) * 1e3, 2),
        "paced_put_p99_ms": round(_percentile(paced_put, 0.99) * 1e3, 2),
        "paced_get_p99_ms": round(_percentile(paced_get, 0.99) * 1e3, 2),
        "list_seconds_median": round(statistics.median(list_samples), 3),
        "watch_fanout_ms_median": round(statistics.median(fanout) * 1e3, 1),
    }]


async def create_named(session: aiohttp.ClientSession, base: str, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "registry.example/c:1"}]}}
    async with session.post(base, data=orjson.dumps(body)) as r:
        await r.read()


# -- the watcher process ------------------------------------------------------------------------


class _WatcherProcess:
    """The parent's handle on the child that holds the watch streams (line protocol on its pipes:
    parent ``arm NAME`` → child ``armed``; child ``seen`` once every stream carried NAME)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc

    @classmethod
    async def start(cls, url: str, ca: Path, token: str, path: str, rv: str, count: int) -> _WatcherProcess:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "everynode.product.bench_api", "watchers", url, str(ca), path, rv, str(count),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "EVERYNODE_BENCH_TOKEN": token})
        self = cls(proc)
        await asyncio.wait_for(self._expect(b"ready"), 120)
        return self

    async def _expect(self, word: bytes) -> None:
        assert self._proc.stdout is not None
        line = await self._proc.stdout.readline()
        if line.strip() != word:
            raise RuntimeError(f"watcher process: expected {word!r}, got {line!r}")

    async def arm(self, name: str) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(f"arm {name}\n".encode())
        await self._proc.stdin.drain()
        await self._expect(b"armed")

    async def all_seen(self) -> None:
        await self._expect(b"seen")

    async def close(self) -> None:
        if self._proc.returncode is None:
            self._proc.kill()
        await self._proc.wait()


class _StreamReader(asyncio.Protocol):
    """One watch stream: checks the status line, then scans the bytes for the armed marker."""

    def __init__(self, fleet: _Fleet, request: bytes) -> None:
        self._fleet = fleet
        self._request = request
        self._status_checked = False
        self._tail = b""
        self._seen: bytes | None = None
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        cast(asyncio.Transport, transport).write(self._request)  # a stream connection's transport

    def data_received(self, data: bytes) -> None:
        fleet = self._fleet
        if not self._status_checked:
            self._status_checked = True
            if not data.startswith(b"HTTP/1.1 200"):
                fleet.failed(data[:200])
                return
            fleet.connected()
        marker = fleet.marker
        if marker is None or self._seen is marker:
            return
        window = self._tail + data
        if marker in window:
            self._seen = marker
            self._tail = b""
            fleet.saw()
        else:
            self._tail = window[-len(marker):]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)
        self._fleet.failed(b"connection lost")


class _Fleet:
    def __init__(self, count: int) -> None:
        self.count = count
        self.marker: bytes | None = None
        self._connected = 0
        self._seen = 0
        self.all_connected = asyncio.get_running_loop().create_future()
        self.all_seen: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closing = False

    def connected(self) -> None:
        self._connected += 1
        if self._connected == self.count:
            self.all_connected.set_result(None)

    def arm(self, marker: bytes) -> None:
        self.marker = marker
        self._seen = 0
        self.all_seen = asyncio.get_running_loop().create_future()

    def saw(self) -> None:
        self._seen += 1
        if self._seen == self.count:
            self.all_seen.set_result(None)

    def failed(self, what: bytes) -> None:
        if not self.closing:
            sys.stderr.write(f"watch stream failed: {what!r}\n")
            os._exit(1)


async def _watchers_main(url: str, ca: str, path: str, rv: str, count: int) -> None:
    loop = asyncio.get_running_loop()
    host_port = url.split("://", 1)[1]
    host, port = host_port.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=ca)
    token = os.environ["EVERYNODE_BENCH_TOKEN"]
    request = (f"GET {path}?watch=true&resourceVersion={rv} HTTP/1.1\r\nHost: {host_port}\r\n"
               f"Authorization: Bearer {token}\r\nAccept: application/json\r\n\r\n").encode()
    fleet = _Fleet(count)
    transports: list[asyncio.BaseTransport] = []
    opening = asyncio.Semaphore(32)

    async def open_one() -> None:
        async with opening:
            transport, _protocol = await loop.create_connection(lambda: _StreamReader(fleet, request), host,
                                                                int(port), ssl=ctx, server_hostname=host)
        transports.append(transport)

    await asyncio.gather(*(open_one() for _ in range(count)))
    await fleet.all_connected
    out = sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        command, _, marker = line.strip().partition(b" ")
        if command != b"arm":
            break
        fleet.arm(b'"name":"' + marker + b'"')
        out.write(b"armed\n")
        out.flush()
        await fleet.all_seen
        out.write(b"seen\n")
        out.flush()
    fleet.closing = True
    for transport in transports:
        transport.close()


if __name__ == "__main__" and len(sys.argv) == 7 and sys.argv[1] == "watchers":
    try:
        import uvloop  # noqa: PLC0415

        runner: Any = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is Linux/macOS only
        runner = asyncio.run
    runner(_watchers_main(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])))
