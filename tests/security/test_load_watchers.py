"""Load attack, scaled down for CI: 5 writers × 50 writes (creates, then merge patches) with 20
watchers on a real ``everynode up`` over its SQLite data dir.  Every watcher must see every
acknowledged write exactly once, as the (type, name, resourceVersion) the writer was answered,
in resourceVersion order — the full-size run (20 × 200, 100 watchers) is the same code."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from everynode.client.http import HttpClient
from tests.support.up import start_up, stop, wait_ready

pytestmark = pytest.mark.e2e

WRITERS, WRITES, WATCHERS = 5, 50, 20
NS = "load"

Event = tuple[str, str, int]


async def _load(kubeconfig: Path) -> tuple[list[Event], list[list[Event]]]:
    async with HttpClient.from_kubeconfig(kubeconfig) as client:
        await wait_ready(client)
        await client.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        start_rv = (await client.list("configmaps", namespace=NS))["metadata"]["resourceVersion"]
        total = WRITERS * WRITES
        seen: list[list[Event]] = [[] for _ in range(WATCHERS)]
        opened = asyncio.Semaphore(0)

        async def watcher(events: list[Event]) -> None:
            stream = client.watch("configmaps", namespace=NS, resource_version=start_rv, allow_bookmarks=False,
                                  timeout_seconds=600)
            opened.release()  # the request is sent when the stream is first awaited; start_rv covers the gap
            async for ev in stream:
                meta = ev["object"]["metadata"]
                if meta["name"] == "kube-root-ca.crt":  # the root-CA publisher's, in every namespace
                    continue
                events.append((ev["type"], meta["name"], int(meta["resourceVersion"])))
                if len(events) >= total:
                    return

        watchers = [asyncio.create_task(watcher(events)) for events in seen]
        for _ in range(WATCHERS):
            await opened.acquire()
        acked: list[Event] = []

        async def writer(w: int) -> None:
            for j in range(WRITES // 2):
                obj = await client.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                                         "metadata": {"name": f"w{w}-{j}"}, "data": {"v": "0"}},
                                          namespace=NS)
                acked.append(("ADDED", f"w{w}-{j}", int(obj["metadata"]["resourceVersion"])))
            for j in range(WRITES - WRITES // 2):
                obj = await client.patch("configmaps", f"w{w}-{j}", {"data": {"v": "1"}}, namespace=NS)
                acked.append(("MODIFIED", f"w{w}-{j}", int(obj["metadata"]["resourceVersion"])))

        await asyncio.gather(*(writer(w) for w in range(WRITERS)))
        done, pending = await asyncio.wait(watchers, timeout=30)
        for task in pending:
            task.cancel()
        for task in done:
            task.result()
        return sorted(acked, key=lambda e: e[2]), seen


def test_every_watcher_sees_every_write_once_in_order(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    proc = start_up(data_dir, "--nodes", "1", "--disable", "daemonset,scheduler,garbage-collector")
    try:
        acked, seen = asyncio.run(_load(data_dir / "kubeconfig"))
    finally:
        stop(proc)
    assert len(acked) == WRITERS * WRITES
    for i, events in enumerate(seen):
        missing = set(acked) - set(events)
        assert not missing, f"watcher {i} lost {len(missing)} events, e.g. {sorted(missing)[:3]}"
        assert len(events) == len(set(events)), f"watcher {i} got duplicates"
        assert events == acked, f"watcher {i}: events out of resourceVersion order"
