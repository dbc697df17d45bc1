"""The same control plane in real and in virtual time (``everynode.virtualtime``).

Two promises are checked:

1. **Same decisions.**  One scenario — N nodes, a DaemonSet (RollingUpdate, maxUnavailable 1)
   converging, then an image change rolled out — is run once on a real clock and once on the
   virtual one; the ordered lists of pod create/delete decisions (by node name and
   ``controller-revision-hash``), recorded from the API's watch through an informer, are equal.
   Virtual time changes *when* things happen, never *what* happens.
2. **Simulated durations follow the arithmetic.**  With maxUnavailable 1 and maxSurge 0
   (semantics §5.2, §5.4 example A) the rollout is strictly node after node::

       delete old pod → kubelet removes it (no termination delay) → pod gone → DaemonSet
       creates the new pod → scheduler binds it → kubelet: Pending, start-up S → Running+Ready
       → available (minReadySeconds 0) → next node's old pod is deleted

   Every arrow but the start-up is API work, which takes no virtual time (the in-process
   client, event handlers and work queues have no timers on this path), so each step lasts
   exactly S + L with per-step latency L = 0, and the rollout, measured from the image change to
   the last new pod turning Ready, lasts

       T = N × (S + L) = N × S.

   The assertions allow ``SLACK`` (1 s) in total on top — one kubelet conflict-retry timer
   (1 s), the coarsest timer that could legitimately sit on the path — and require every step
   to last at least S.  A per-node requeue or heartbeat wait sneaking onto the path (≥ 0.1 s per
   node) breaks the bound at the sizes used here.

The 5,000-node version of (2) is far beyond this machine's test budget in wall time (the work
per simulated second grows with N — lease renewals, the O(nodes) rolling-update planner — so a
rollout lasting N × 5 s costs O(N²)); the test runs ``LARGE_NODES`` and
``benchmarks/virtual_rollout.py`` runs the 5,000-node case.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from everynode.api.meta import deep_copy
from everynode.product.cluster import Cluster
from everynode.virtualtime import run_virtual

Obj = dict[str, Any]

NS = "default"
DS_NAME = "agent"
HASH_LABEL = "controller-revision-hash"
SLACK = 1.0
LARGE_NODES = 300


def daemonset(image: str) -> Obj:
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": DS_NAME, "namespace": NS},
        "spec": {
            "selector": {"matchLabels": {"app": DS_NAME}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "template": {"metadata": {"labels": {"app": DS_NAME}},
                         "spec": {"containers": [{"name": "agent", "image": image}]}},
        },
    }


def target_node(pod: Obj) -> str:
    """The node a DaemonSet pod is for: its binding, else the controller's matchFields pin."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return spec["nodeName"]
    terms = ((((spec.get("affinity") or {}).get("nodeAffinity") or {})
              .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])
    for term in terms:
        for req in term.get("matchFields") or ():
            if req.get("key") == "metadata.name" and req.get("values"):
                return req["values"][0]
    return ""


def is_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())


@dataclass
class Recorder:
    """Pod decisions and readiness seen through an informer, stamped with the loop's clock."""

    loop: asyncio.AbstractEventLoop
    decisions: list[tuple[str, str, str]] = field(default_factory=list)  # (action, node, hash)
    decided_at: list[float] = field(default_factory=list)
    ready_at: dict[str, float] = field(default_factory=dict)  # pod uid -> first Ready
    node_of: dict[str, tuple[str, str]] = field(default_factory=dict)  # pod uid -> (node, hash)
    available: dict[str, set[str]] = field(default_factory=dict)  # node -> uids Ready, not deleting
    max_unavailable_seen: int = 0
    watching_unavailability: bool = False
    nodes: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def _decide(self, action: str, pod: Obj) -> None:
        self.decisions.append((action, target_node(pod), pod["metadata"]["labels"].get(HASH_LABEL, "")))
        self.decided_at.append(self.loop.time())

    def _availability(self, pod: Obj) -> None:
        uid = pod["metadata"]["uid"]
        node = target_node(pod)
        uids = self.available.setdefault(node, set())
        if is_ready(pod) and not pod["metadata"].get("deletionTimestamp"):
            uids.add(uid)
        else:
            uids.discard(uid)
        if self.watching_unavailability:
            missing = sum(1 for uids in self.available.values() if not uids) + self.nodes - len(self.available)
            self.max_unavailable_seen = max(self.max_unavailable_seen, missing)

    def on_add(self, pod: Obj) -> None:
        if pod["metadata"].get("labels", {}).get("app") != DS_NAME:
            return
        self._decide("create", pod)
        self.node_of[pod["metadata"]["uid"]] = (target_node(pod), pod["metadata"]["labels"].get(HASH_LABEL, ""))
        self.on_update({}, pod)

    def on_update(self, old: Obj, new: Obj) -> None:
        if new["metadata"].get("labels", {}).get("app") != DS_NAME:
            return
        if new["metadata"].get("deletionTimestamp") and not (old.get("metadata") or {}).get("deletionTimestamp"):
            self._decide("delete", new)
        if is_ready(new):
            self.ready_at.setdefault(new["metadata"]["uid"], self.loop.time())
        self._availability(new)
        self.changed.set()

    def on_delete(self, pod: Obj) -> None:
        for uids in self.available.values():
            uids.discard(pod["metadata"]["uid"])
        self.changed.set()

    def ready_count(self, hash_: str) -> int:
        return sum(1 for uid in self.ready_at if self.node_of.get(uid, ("", ""))[1] == hash_)

    async def wait_ready(self, hash_: str | None, count: int) -> None:
        while True:
            hashes = {h for _, h in self.node_of.values()}
            if hash_ is None and len(hashes) == 1:
                hash_ = hashes.pop()
            if hash_ is not None and self.ready_count(hash_) >= count:
                return
            self.changed.clear()
            await self.changed.wait()


@dataclass
class Run:
    decisions: list[tuple[str, str, str]]
    decided_at: list[float]
    update_at: float
    last_ready_at: float
    new_hash: str
    max_unavailable_seen: int


async def rollout(*, nodes: int, startup: float, virtual: bool) -> Run:
    """Converge a DaemonSet on ``nodes`` nodes, change its image, wait for the rollout."""
    async with Cluster(nodes=nodes, control_planes=0, pod_startup=startup, virtual_time=virtual,
                       serve_http=False) as cluster:
        loop = asyncio.get_running_loop()
        rec = Recorder(loop, nodes=nodes)
        assert cluster.plane is not None
        pods = cluster.plane.informers.informer("pods")
        pods.add_handler(rec.on_add, rec.on_update, rec.on_delete)
        await pods.wait_synced()

        client = cluster.client
        await client.create("daemonsets.apps", daemonset("agent:1"))
        await rec.wait_ready(None, nodes)
        old_hash = next(iter({h for _, h in rec.node_of.values()}))

        ds = deep_copy(await client.get("daemonsets.apps", DS_NAME, namespace=NS))
        ds["spec"]["template"]["spec"]["containers"][0]["image"] = "agent:2"
        rec.watching_unavailability = True
        update_at = loop.time()
        await client.update("daemonsets.apps", ds)

        def new_hash() -> str | None:
            return next((h for _, h in rec.node_of.values() if h != old_hash), None)

        while new_hash() is None:
            rec.changed.clear()
            await rec.changed.wait()
        hash_ = new_hash()
        assert hash_ is not None
        await rec.wait_ready(hash_, nodes)
        last_ready = max(t for uid, t in rec.ready_at.items() if rec.node_of[uid][1] == hash_)

        # The DaemonSet's own status agrees once the controller has caught up.
        while True:
            status = (await client.get("daemonsets.apps", DS_NAME, namespace=NS)).get("status") or {}
            if status.get("observedGeneration") == 2 and status.get("updatedNumberScheduled") == nodes \
                    and status.get("numberAvailable") == nodes:
                break
            await asyncio.sleep(0.1)
        return Run(rec.decisions, rec.decided_at, update_at, last_ready, hash_, rec.max_unavailable_seen)


def rollout_decisions(run: Run) -> list[tuple[str, str, str]]:
    return [d for d, t in zip(run.decisions, run.decided_at, strict=True) if t >= run.update_at]


def check_arithmetic(run: Run, *, nodes: int, startup: float) -> None:
    """T = N × S (+ SLACK), every step at least S, never more than one node unavailable."""
    deletes = [t for (action, _, _), t in zip(run.decisions, run.decided_at, strict=True)
               if action == "delete" and t >= run.update_at]
    assert len(deletes) == nodes
    steps = [b - a for a, b in zip(deletes, deletes[1:], strict=False)]
    assert all(step >= startup - 1e-9 for step in steps), min(steps)
    duration = run.last_ready_at - run.update_at
    expected = nodes * startup
    assert expected - 1e-6 <= duration <= expected + SLACK, (duration, expected)
    assert run.max_unavailable_seen == 1


# -- (a) the same decisions in real and virtual time ---------------------------------------------

def test_real_and_virtual_time_make_the_same_decisions() -> None:
    nodes, startup = 6, 0.3
    real = asyncio.run(rollout(nodes=nodes, startup=startup, virtual=False))
    virtual = run_virtual(rollout(nodes=nodes, startup=startup, virtual=True))

    assert real.decisions == virtual.decisions
    assert real.new_hash == virtual.new_hash
    # The shape of the rollout: after the initial creates, node by node (sorted names), the old
    # pod is deleted, then the new one created.
    workers = [f"worker-{i}" for i in range(1, nodes + 1)]
    initial = virtual.decisions[:nodes]
    old_hash = initial[0][2]
    assert sorted(initial) == [("create", n, old_hash) for n in workers]
    expected_rollout = []
    for n in workers:
        expected_rollout += [("delete", n, old_hash), ("create", n, virtual.new_hash)]
    assert rollout_decisions(virtual) == expected_rollout
    assert virtual.decisions == initial + expected_rollout
    assert real.max_unavailable_seen == virtual.max_unavailable_seen == 1
    # Virtual time is exact; real time is only checked for the decisions (no wall-time asserts).
    check_arithmetic(virtual, nodes=nodes, startup=startup)


def test_virtual_rollout_duration_with_five_second_startup() -> None:
    nodes, startup = 6, 5.0
    run = run_virtual(rollout(nodes=nodes, startup=startup, virtual=True))
    check_arithmetic(run, nodes=nodes, startup=startup)


# -- (b) a large rollout in virtual time ----------------------------------------------------------

def test_large_virtual_rollout_duration_matches_arithmetic() -> None:
    """``LARGE_NODES`` nodes, maxUnavailable 1, 5 s start-up: T = N × (5 s + 0) (module docstring)."""
    nodes, startup = LARGE_NODES, 5.0
    run = run_virtual(rollout(nodes=nodes, startup=startup, virtual=True))
    check_arithmetic(run, nodes=nodes, startup=startup)
    assert [node for action, node, _ in rollout_decisions(run) if action == "delete"] == \
        sorted(f"worker-{i}" for i in range(1, nodes + 1))
