"""The scheduler cache: nodes and the pods bound (or about to be bound) to them.

Upstream ``pkg/scheduler/backend/cache``: one NodeInfo per node, updated incrementally from pod
and node events, plus *assumed* pods — bound by this scheduler a moment ago, their binding not
yet seen in a watch event — so that the next decision already counts them.

Choices:
* Pods may arrive before their node (watch order across resources is not guaranteed): a node
  name seen only on pods gets a placeholder NodeInfo that is not schedulable ("ghost") until the
  Node itself arrives; a deleted Node becomes a ghost again while pods still reference it.
* Terminal pods (phase Succeeded/Failed) free their resources, as upstream's scheduler ignores
  them (its pod informer excludes them).
* The live node list keeps insertion order and supports O(1) removal (swap with the last),
  so sampling "the next k nodes from a rotating start" costs O(k).
"""

from __future__ import annotations

from typing import Any

from everynode.scheduler.nodeinfo import NodeInfo
from everynode.scheduler.podinfo import PodInfo

Obj = dict[str, Any]

TERMINAL_PHASES = frozenset(("Succeeded", "Failed"))


class SchedulerCache:
    def __init__(self) -> None:
        self.infos: dict[str, NodeInfo] = {}  # live nodes and ghosts
        self.live: list[str] = []  # live node names
        self._live_index: dict[str, int] = {}
        self.pod_node: dict[str, str] = {}  # pod key -> node name (bound or assumed)
        self.assumed: set[str] = set()
        self._nominated_on: dict[str, str] = {}  # pod key -> node it was nominated to

    # -- nodes ----------------------------------------------------------------------------------

    def is_live(self, name: str) -> bool:
        return name in self._live_index

    def live_count(self) -> int:
        return len(self.live)

    def set_node(self, node: Obj) -> tuple[NodeInfo, bool]:
        """Add or update a node.  Returns (info, changed-for-scheduling)."""
        name = node["metadata"]["name"]
        info = self.infos.get(name)
        if info is None:
            info = NodeInfo(node)
            self.infos[name] = info
            changed = True
        else:
            before = info.scheduling_signature() if name in self._live_index else None
            info.set_node(node)
            changed = before is None or before != info.scheduling_signature()
        if name not in self._live_index:
            self._live_index[name] = len(self.live)
            self.live.append(name)
        return info, changed

    def remove_node(self, name: str) -> None:
        idx = self._live_index.pop(name, None)
        if idx is not None:
            last = self.live.pop()
            if last != name:
                self.live[idx] = last
                self._live_index[last] = idx
        info = self.infos.get(name)
        if info is not None and not info.pods:
            del self.infos[name]

    def node(self, name: str) -> NodeInfo | None:
        """The live NodeInfo (None for unknown or ghost nodes)."""
        if name in self._live_index:
            return self.infos[name]
        return None

    # -- pods -----------------------------------------------------------------------------------

    def _info_for(self, node_name: str) -> NodeInfo:
        info = self.infos.get(node_name)
        if info is None:
            info = NodeInfo({"metadata": {"name": node_name}})
            self.infos[node_name] = info
        return info

    def assume(self, pi: PodInfo, node_name: str) -> None:
        self.remove_pod(pi.key)
        self._info_for(node_name).add_pod(pi)
        self.pod_node[pi.key] = node_name
        self.assumed.add(pi.key)

    def forget(self, key: str) -> str | None:
        if key not in self.assumed:
            return None
        return self.remove_pod(key)

    def set_pod(self, pi: PodInfo) -> None:
        """A bound pod as observed (replaces an assumed or older entry)."""
        self.remove_pod(pi.key)
        self._info_for(pi.node_name).add_pod(pi)
        self.pod_node[pi.key] = pi.node_name

    def refresh_pod(self, key: str, pod: Obj) -> None:
        """A bound pod's newer version that changes nothing for scheduling (status only): the
        entry points at it, so that the cache does not keep the old version alive (the store
        and the informers moved on) and events about the pod carry its current state."""
        node_name = self.pod_node.get(key)
        info = self.infos.get(node_name) if node_name is not None else None
        pi = info.pods.get(key) if info is not None else None
        if pi is not None:
            pi.refresh(pod)

    def remove_pod(self, key: str) -> str | None:
        """Drop a pod; returns the node it was on (None if unknown)."""
        node_name = self.pod_node.pop(key, None)
        self.assumed.discard(key)
        if node_name is None:
            return None
        info = self.infos.get(node_name)
        if info is not None:
            info.remove_pod(key)
            if not info.pods and node_name not in self._live_index:
                del self.infos[node_name]
        return node_name

    def has_pod(self, key: str) -> bool:
        return key in self.pod_node

    # -- nominations ----------------------------------------------------------------------------

    def nominate(self, pi: PodInfo, node_name: str) -> None:
        self.unnominate(pi.key)
        info = self.node(node_name)
        if info is not None:
            info.nominated[pi.key] = pi
            self._nominated_on[pi.key] = node_name

    def unnominate(self, key: str) -> None:
        node_name = self._nominated_on.pop(key, None)
        if node_name is not None:
            info = self.infos.get(node_name)
            if info is not None:
                info.nominated.pop(key, None)
