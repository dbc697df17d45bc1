"""Recorder of the write-path golden: every watch event and the final objects of a converge.

Why: the write path (defaulting, validation, pruning, managedFields, structural sharing) is
optimised by memoising and skipping work; the promise is that no byte of what clients see
changes.  This records one converge — a DaemonSet on ``NODES`` simulated nodes, from the
DaemonSet's create until every pod is Ready, plus ``SETTLE`` simulated seconds, then a rolling
update of its image likewise (the ``plan`` engine's path) — as the ordered
stream of watch events the store publishes (type, resource, the object as JSON in its own key
order) and every stored object at the end.  ``tests/integration/test_golden_converge.py``
re-runs it and compares with the recording checked in (``tests/golden/converge50.jsonl.gz``),
made once from the code before the optimisations.

What is made repeatable rather than normalised: time is the virtual clock's (fixed epoch, no
wall time enters the objects), ``random`` is seeded, uids come from a seeded generator and the
5-character suffixes of generated names from a seeded choice (both are drawn from
``secrets``/``uuid4`` in production); the recorder runs in a child process with
``PYTHONHASHSEED=0`` so that set iteration orders repeat.  Nothing else is normalised.

Record with ``python -m tests.support.golden_converge --write`` (from the repository root).
"""

from __future__ import annotations

import asyncio
import gzip
import os
import random
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

NODES = 50
SETTLE = 20.0  # simulated seconds after the last pod is Ready (heartbeats, status writes)
GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "converge50.jsonl.gz"
NS = "default"
NAME = "agent"


class _SeededChoices(random.Random):
    """Stands in for ``meta.suffix_source``: draws a suffix one ``choice`` per character, the
    sequence the recording was made with (it drew through ``secrets.choice`` then)."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self._rng = rng

    def choices(self, population: Any, weights: Any = None, *, cum_weights: Any = None, k: int = 1) -> list[Any]:
        return [self._rng.choice(population) for _ in range(k)]


@contextmanager
def seeded_draws(rng: random.Random) -> Iterator[None]:
    """Uids and name suffixes drawn from ``rng``, in the order the recording drew them."""
    from everynode.api import meta

    real_uuid4, real_source, real_new_uid = uuid.uuid4, meta.suffix_source, meta.new_uid
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)  # type: ignore[assignment]
    meta.suffix_source = _SeededChoices(rng)
    meta.new_uid = lambda: str(uuid.uuid4())  # the seeded uuid4 above
    try:
        yield
    finally:
        uuid.uuid4 = real_uuid4  # type: ignore[assignment]
        meta.suffix_source = real_source
        meta.new_uid = real_new_uid


@contextmanager
def _seeded(seed: int = 16) -> Iterator[None]:
    from everynode.api import rbac_bootstrap

    random.seed(seed)
    rng = random.Random(seed)
    # The recording predates the seeded RBAC bootstrap policy; seeding it would draw uids and
    # resourceVersions before the converge and shift every byte after it, so the recorder's
    # server starts without it (the policy has its own tests; this one is about the write path).
    real_roles, real_bindings = rbac_bootstrap.cluster_roles, rbac_bootstrap.cluster_role_bindings
    rbac_bootstrap.cluster_roles = lambda *, aggregated=False: []  # type: ignore[assignment]
    rbac_bootstrap.cluster_role_bindings = lambda: []  # type: ignore[assignment]
    try:
        with seeded_draws(rng):
            yield
    finally:
        rbac_bootstrap.cluster_roles = real_roles  # type: ignore[assignment]
        rbac_bootstrap.cluster_role_bindings = real_bindings  # type: ignore[assignment]


def _daemonset() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": NS},
        "spec": {
            "selector": {"matchLabels": {"app": NAME}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {"metadata": {"labels": {"app": NAME}},
                         "spec": {"containers": [{"name": "agent", "image": "registry.example/agent:1"}]}},
        },
    }


async def _converge(lines: list[bytes]) -> None:
    from everynode.product.cluster import Cluster
    from everynode.storage.watch import StoreWatcher

    # The root-CA publisher's ConfigMaps hold a CA generated at start (fresh key, wall-clock
    # validity): not repeatable, and no part of the write path this records.  Without them
    # the kube-api-access volume could never mount (the kubelet waits for kube-root-ca.crt),
    # so ServiceAccount admission — on only with the ServiceAccount controller — stays off
    # too; tests/integration/test_serviceaccounts.py covers that path.
    cluster = Cluster(nodes=NODES, control_planes=0, pod_startup=1.0, virtual_time=True,
                      disable=("root-ca-publisher", "serviceaccount"))
    async with cluster:
        assert cluster.plane is not None and cluster.plane.client is not None
        store = cluster.plane.store
        assert store is not None
        # Every event the store publishes, in order: a watch of all resources from the first
        # (the start's few writes are still in the history window).  Nobody waits on it, so it
        # wakes no task and the run is the same as without it; it is read once, at the end.
        # (A watch, not a wrapper of the hub's publish: the store calls that from compiled code.)
        events = store.watch("*", since_rv=0)
        assert isinstance(events, StoreWatcher)
        client = cluster.plane.client
        await client.create("daemonsets.apps", _daemonset())
        await _settled(client, generation=1)
        # Then a rolling update (the `plan` engine's path): a strategic merge patch of the
        # template, old pods deleted and new ones created, bound and Ready node by node.
        await client.patch("daemonsets.apps", NAME, {"spec": {"template": {"spec": {"containers": [
            {"name": "agent", "image": "registry.example/agent:2"}]}}}}, namespace=NS, patch_type="strategic")
        await _settled(client, generation=2)
        resources: set[str] = set()
        for event in events.drain():
            resources.add(event.resource)
            lines.append(orjson.dumps([event.type, event.resource, event.rv, event.object]))
        events.stop()
        lines.append(b'"final objects"')
        for resource in sorted(resources):
            for obj in store.list(resource).items:
                lines.append(orjson.dumps([resource, obj]))


async def _settled(client: Any, *, generation: int) -> None:
    """Wait until the DaemonSet has every pod of ``generation`` updated and available, then
    ``SETTLE`` simulated seconds more."""
    for _ in range(100_000):
        ds = await client.get("daemonsets.apps", NAME, namespace=NS)
        status = ds.get("status") or {}
        if (status.get("observedGeneration") == generation and status.get("numberAvailable") == NODES
                and status.get("updatedNumberScheduled") == NODES):
            break
        await asyncio.sleep(0.5)
    else:
        raise TimeoutError("the golden converge did not converge")
    await asyncio.sleep(SETTLE)


def record() -> list[bytes]:
    """The recording, made in this process (call it in a child with PYTHONHASHSEED=0)."""
    from everynode.virtualtime import run_virtual

    lines: list[bytes] = []
    with _seeded():
        run_virtual(_converge(lines))
    return lines


def record_in_child() -> list[bytes]:
    """The recording, made in a fresh interpreter with a fixed hash seed."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    root = Path(__file__).resolve().parent.parent.parent
    out = subprocess.run([sys.executable, "-m", "tests.support.golden_converge"], cwd=root, env=env,
                         check=True, capture_output=True, timeout=600)
    return gzip.decompress(out.stdout).splitlines()


def load_golden() -> list[bytes]:
    return gzip.decompress(GOLDEN.read_bytes()).splitlines()


def main(argv: list[str]) -> None:
    if "--write" in argv:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_bytes(gzip.compress(b"\n".join(record_in_child()) + b"\n", mtime=0))
        return
    sys.stdout.buffer.write(gzip.compress(b"\n".join(record()) + b"\n", mtime=0))


if __name__ == "__main__":
    main(sys.argv[1:])
