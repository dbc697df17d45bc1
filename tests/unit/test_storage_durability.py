"""An acknowledged write survives kill -9 (DESIGN.md, "Quality bar").

A child process writes through a :class:`SqliteStore` (concurrent writers, so group commit is
exercised) and prints a line only after each ``await`` returned.  The test kills it with SIGKILL
mid-stream, reopens the database and checks that every acknowledged write is there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from everynode.storage.sqlite import SqliteStore

WRITER = textwrap.dedent("""
    import asyncio, sys
    from everynode.storage.sqlite import SqliteStore

    async def main(path, fsync):
        store = SqliteStore(path, fsync=fsync)
        await store.create("configmaps", {"metadata": {"name": "counter", "namespace": "d"}, "data": {"n": "0"}})
        print("ready", flush=True)

        async def create(i):
            await store.create("pods", {"metadata": {"name": f"p{i:06d}", "namespace": "d"}, "spec": {"i": i}})
            print("pod", i, flush=True)

        async def bump(n):
            await store.update("configmaps", {"metadata": {"name": "counter", "namespace": "d"}, "data": {"n": str(n)}})
            print("counter", n, flush=True)

        for round in range(20_000):  # bounded: the test kills us long before the end
            await asyncio.gather(*(create(round * 8 + k) for k in range(8)), bump(round + 1))

    asyncio.run(main(sys.argv[1], sys.argv[2] == "1"))
""")


@pytest.mark.parametrize("fsync", [False, True])
async def test_acknowledged_writes_survive_sigkill(tmp_path: Path, fsync: bool) -> None:
    path = tmp_path / "store.db"
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(path), "1" if fsync else "0"],
                             stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    acknowledged_pods: list[int] = []
    last_counter = 0
    try:
        assert child.stdout is not None
        for line in child.stdout:
            kind, _, value = line.strip().partition(" ")
            if kind == "pod":
                acknowledged_pods.append(int(value))
            elif kind == "counter":
                last_counter = int(value)
            if len(acknowledged_pods) >= 400:
                break
        child.send_signal(signal.SIGKILL)  # mid-stream: more writes are in flight
    finally:
        child.kill()
        child.wait(timeout=10)
        if child.stdout is not None:
            child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    assert len(acknowledged_pods) >= 400

    store = SqliteStore(path)
    try:
        missing = [i for i in acknowledged_pods if store.get("pods", "d", f"p{i:06d}") is None]
        assert missing == []
        counter = store.get("configmaps", "d", "counter")
        assert counter is not None and int(counter["data"]["n"]) >= last_counter
        before = store.current_rv()
        highest = max(int(o["metadata"]["resourceVersion"]) for o in store.list("pods").items)
        assert before >= max(highest, int(counter["metadata"]["resourceVersion"]))
        after = await store.create("pods", {"metadata": {"name": "after-restart", "namespace": "d"}})
        assert int(after["metadata"]["resourceVersion"]) == before + 1
    finally:
        await store.close()
