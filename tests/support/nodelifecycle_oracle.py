"""Upstream's node health monitor pass — a walk over every node — kept as the test oracle for
the product's incremental pass (everynode/controllers/nodelifecycle/monitor.py).

:class:`FullWalkNodeLifecycleController` is the product's controller with one method replaced:
the pass visits every cached node in the informer's order, registers the new ones, forgets the
removed ones, runs the per-node step on each and counts every zone afresh from the node list —
``monitorNodeHealth`` as upstream writes it.  Nothing of the incremental bookkeeping (dirty
sets, deadline heap, zone tallies) is read, so when
tests/integration/test_nodelifecycle_incremental.py finds the same writes, events and zone
decisions in both, the bookkeeping has skipped only nodes the walk would have left alone.

It lives under tests/ on purpose: the product has one algorithm; this is the reference.
"""

from __future__ import annotations

from typing import Any

from everynode.controllers.nodelifecycle import EXCLUDE_DISRUPTION_LABEL, NodeLifecycleController, zone_key
from everynode.controllers.nodelifecycle.monitor import FAILED

Obj = dict[str, Any]


class FullWalkNodeLifecycleController(NodeLifecycleController):
    async def _monitor_pass(self, now: float) -> None:
        nodes = self._nodes.list()
        names = {n["metadata"]["name"] for n in nodes}
        for node in nodes:
            name = node["metadata"]["name"]
            if name not in self._known:
                self._register(node)
                self._add_zone(zone_key(node), now)
                await self._mark_reachable(node)
            else:
                self._add_zone(zone_key(node), now)
        for name in sorted(self._known - names):
            self._forget(name)
        counts: dict[str, list[int]] = {}
        for node in nodes:
            current = await self._update_node(node, now)
            if current is FAILED:
                continue
            if EXCLUDE_DISRUPTION_LABEL not in (node["metadata"].get("labels") or {}):
                c = counts.setdefault(zone_key(node), [0, 0])
                c[0] += 1
                if current == "True":
                    c[1] += 1
        await self._handle_disruption(counts, lambda: nodes, now)


__all__ = ["FullWalkNodeLifecycleController"]
