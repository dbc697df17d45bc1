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
* Inter-pod affinity must not cost pods without it (DaemonSet pods, thousands a second): the
  cache keeps, incrementally, the pods of each namespace (affinity and spreading count only the
  namespaces a term names), the pods that carry any pod (anti-)affinity (scoring reads their
  terms), and for the *required anti-affinity terms of existing pods* — the only affinity rule
  that constrains a pod which has none itself — one group per distinct term with its count per
  topology value.  A pod's check against existing anti-affinity then costs O(distinct terms),
  not O(pods), and nothing when no pod in the cluster has such a term (upstream's
  ``HavePodsWithRequiredAntiAffinityList`` plus PreFilter counts, kept up to date instead of
  rebuilt per pod).  Counts follow the node's labels: a label change re-counts its pods.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from everynode.api.podaffinity import AffinityTerm
from everynode.scheduler.nodeinfo import NodeInfo
from everynode.scheduler.podinfo import PodInfo

Obj = dict[str, Any]

TERMINAL_PHASES: Final = frozenset(("Succeeded", "Failed"))

TopologyPair = tuple[str, str]


class ExistingAntiTerm:
    """One distinct required anti-affinity term of existing pods: per topology value, how many
    pods carry it (on nodes that have the term's topology label)."""

    __slots__ = ("term", "counts", "pods")

    def __init__(self, term: AffinityTerm) -> None:
        self.term = term
        self.counts: dict[str, int] = {}
        self.pods = 0

    def add(self, value: str | None, delta: int) -> None:
        self.pods += delta
        if value is None:
            return
        n = self.counts.get(value, 0) + delta
        if n > 0:
            self.counts[value] = n
        else:
            self.counts.pop(value, None)


class SchedulerCache:
    def __init__(self) -> None:
        self.infos: dict[str, NodeInfo] = {}  # live nodes and ghosts
        self.live: list[str] = []  # live node names
        self._live_index: dict[str, int] = {}
        self.pod_node: dict[str, str] = {}  # pod key -> node name (bound or assumed)
        self.assumed: set[str] = set()
        self._nominated_on: dict[str, str] = {}  # pod key -> node it was nominated to
        self.ns_pods: dict[str, dict[str, PodInfo]] = {}  # namespace -> pod key -> pod
        self.affinity_pods: dict[str, PodInfo] = {}  # pods with any pod (anti-)affinity term
        self.anti_terms: dict[tuple[Any, ...], ExistingAntiTerm] = {}
        # pod key -> the (group, topology value) pairs it added to ``anti_terms``
        self._anti_contrib: dict[str, list[tuple[ExistingAntiTerm, str | None]]] = {}
        self.ns_labels: dict[str, dict[str, str]] = {}  # namespace -> labels

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
            old_labels = info.labels
            info.set_node(node)
            changed = before is None or before != info.scheduling_signature()
            if self._anti_contrib and before is not None and old_labels != info.labels:
                self._recount_anti(info)
        relabel = self._anti_contrib and name not in self._live_index and info.pods
        if name not in self._live_index:
            self._live_index[name] = len(self.live)
            self.live.append(name)
        if relabel:
            self._recount_anti(info)  # a ghost became a node: its pods now have topology
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
        elif info is not None and idx is not None and self._anti_contrib:
            self._recount_anti(info)  # a ghost again: its pods count in no topology

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
        self._add(pi, node_name)
        self.assumed.add(pi.key)

    def _add(self, pi: PodInfo, node_name: str) -> None:
        info = self._info_for(node_name)
        info.add_pod(pi)
        self.pod_node[pi.key] = node_name
        ns = self.ns_pods.get(pi.namespace)
        if ns is None:
            ns = self.ns_pods[pi.namespace] = {}
        ns[pi.key] = pi
        if pi.has_pod_affinity:
            terms = pi.pod_affinity
            if terms is not None:
                self.affinity_pods[pi.key] = pi
                if terms.required_anti:
                    self._count_anti(pi, info)

    def forget(self, key: str) -> str | None:
        if key not in self.assumed:
            return None
        return self.remove_pod(key)

    def set_pod(self, pi: PodInfo) -> None:
        """A bound pod as observed (replaces an assumed or older entry)."""
        self.remove_pod(pi.key)
        self._add(pi, pi.node_name)

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
            pi = info.remove_pod(key)
            if pi is not None:
                ns = self.ns_pods.get(pi.namespace)
                if ns is not None:
                    ns.pop(key, None)
                    if not ns:
                        del self.ns_pods[pi.namespace]
                if self.affinity_pods.pop(key, None) is not None:
                    self._uncount_anti(key)
            if not info.pods and node_name not in self._live_index:
                del self.infos[node_name]
        return node_name

    def has_pod(self, key: str) -> bool:
        return key in self.pod_node

    def live_pods(self, namespaces: frozenset[str] | None = None) -> Iterator[tuple[PodInfo, NodeInfo]]:
        """Pods on live nodes with their node, of the given namespaces (None: all)."""
        pod_node = self.pod_node
        live = self._live_index
        infos = self.infos
        groups = (self.ns_pods.values() if namespaces is None
                  else (self.ns_pods[ns] for ns in namespaces if ns in self.ns_pods))
        for group in groups:
            for key, pi in group.items():
                name = pod_node[key]
                if name in live:
                    yield pi, infos[name]

    # -- required anti-affinity of existing pods ------------------------------------------------

    def _count_anti(self, pi: PodInfo, info: NodeInfo) -> None:
        terms = pi.pod_affinity
        assert terms is not None
        contrib = []
        labels = info.labels if info.name in self._live_index else {}
        for t in terms.required_anti:
            group = self.anti_terms.get(t.key)
            if group is None:
                group = self.anti_terms[t.key] = ExistingAntiTerm(t)
            value = labels.get(t.topology_key)
            group.add(value, 1)
            contrib.append((group, value))
        self._anti_contrib[pi.key] = contrib

    def _uncount_anti(self, key: str) -> None:
        for group, value in self._anti_contrib.pop(key, ()):
            group.add(value, -1)
            if group.pods <= 0:
                self.anti_terms.pop(group.term.key, None)

    def _recount_anti(self, info: NodeInfo) -> None:
        for key, pi in info.pods.items():
            if key in self._anti_contrib:
                self._uncount_anti(key)
                self._count_anti(pi, info)

    def existing_anti_affinity(self, pod: PodInfo, ns_labels: Mapping[str, str] | None) -> dict[TopologyPair, int]:
        """Topology pairs where an existing pod's required anti-affinity term matches ``pod``,
        with how many such pods there are (upstream ``getExistingAntiAffinityCounts``)."""
        out: dict[TopologyPair, int] = {}
        if not self.anti_terms:
            return out
        for group in self.anti_terms.values():
            if not group.counts:
                continue
            t = group.term
            if t.matches(pod.namespace, pod.labels, ns_labels):
                tk = t.topology_key
                for value, n in group.counts.items():
                    pair = (tk, value)
                    out[pair] = out.get(pair, 0) + n
        return out

    # -- namespaces -----------------------------------------------------------------------------

    def set_namespace(self, ns: Obj) -> None:
        md: dict[str, Any] = ns.get("metadata") or {}
        self.ns_labels[md.get("name") or ""] = md.get("labels") or {}

    def remove_namespace(self, name: str) -> None:
        self.ns_labels.pop(name, None)

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
