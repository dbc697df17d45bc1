"""What the scheduler needs to know about a pod, computed once per pod version.

Why a separate record: every filter reads the same few facts (requests, host ports, priority,
the node pin), and a DaemonSet rollout schedules thousands of pods per second.  Parsing
quantities and walking containers once per pod version, not once per (pod, node), keeps a
decision for a pinned pod to a handful of dictionary reads.

Upstream rules reproduced here:
* requests (``pkg/api/v1/resource``, ``PodRequests``): the sum over regular containers and
  restartable ("sidecar") init containers, at least the largest init-container request (with the
  sidecars started before it), plus ``spec.overhead``.  No request means 0 for filtering.
* host ports (``schedutil.GetHostPorts``): every container port with a ``hostPort``; default
  protocol TCP, default host IP ``0.0.0.0``.  For ``hostNetwork`` pods the API defaults
  ``hostPort`` to ``containerPort``; we apply the same rule here in case an object arrives
  undefaulted.
* priority is ``spec.priority`` (resolved by admission); absent means 0.
"""

from __future__ import annotations

from typing import Any

from everynode.api.quantity import int_value, milli_value
from everynode.api.scheduling import NodeMatcher, compile_required_affinity, pinned_node_name

Obj = dict[str, Any]

CPU = "cpu"
MEMORY = "memory"

# (hostIP, protocol, port)
HostPort = tuple[str, str, int]


class PodInfo:
    """Scheduling view of one pod.  Never mutated after construction, except by :meth:`refresh`."""

    __slots__ = (
        "key", "namespace", "name", "uid", "pod", "spec", "priority", "preempt_never",
        "milli_cpu", "memory", "scalar", "host_ports", "node_name", "tolerations",
        "creation", "terminating", "candidates", "_affinity",
    )

    def __init__(self, pod: Obj) -> None:
        md = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        self.pod = pod
        self.spec = spec
        self.namespace: str = md.get("namespace") or ""
        self.name: str = md.get("name") or ""
        self.key = f"{self.namespace}/{self.name}"
        self.uid: str = md.get("uid") or ""
        self.creation: str = md.get("creationTimestamp") or ""
        self.terminating = bool(md.get("deletionTimestamp"))
        self.priority: int = int(spec.get("priority") or 0)
        self.preempt_never = spec.get("preemptionPolicy") == "Never"
        self.node_name: str = spec.get("nodeName") or ""
        self.tolerations: list[Obj] = spec.get("tolerations") or []
        self.milli_cpu, self.memory, self.scalar = pod_requests(spec)
        self.host_ports: tuple[HostPort, ...] = pod_host_ports(spec)
        self.candidates: frozenset[str] | None = candidate_node_names(spec)
        self._affinity: NodeMatcher | None = None

    def refresh(self, pod: Obj) -> None:
        """Point at a newer version of the pod whose spec and metadata are equal for scheduling
        (a status update): every derived field stays valid."""
        self.pod = pod
        self.spec = pod.get("spec") or {}

    @property
    def affinity(self) -> NodeMatcher:
        """nodeSelector AND required node affinity, compiled on first use."""
        m = self._affinity
        if m is None:
            m = self._affinity = compile_required_affinity(self.spec)
        return m


def candidate_node_names(spec: Obj) -> frozenset[str] | None:
    """The only nodes the pod may go to by its required affinity's ``metadata.name`` pins
    (upstream NodeAffinity PreFilter), or None: every node is a candidate.

    The DaemonSet pin (one name) takes the O(1) path of ``pinned_node_name``; other shapes
    follow upstream: every term must pin names, the result is the union over terms of each
    term's intersection; an empty set means the terms contradict each other."""
    if not spec.get("affinity"):
        return None
    name = pinned_node_name(spec)
    if name is not None:
        return frozenset((name,))
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or ()
    if not terms:
        return None
    names: set[str] = set()
    for term in terms:
        term_names: set[str] | None = None
        for req in term.get("matchFields") or ():
            if req.get("key") == "metadata.name" and req.get("operator") == "In":
                values = set(req.get("values") or ())
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names |= term_names
    return frozenset(names)


def _requests_of(container: Obj) -> dict[str, Any] | None:
    res = container.get("resources")
    if not res:
        return None
    return res.get("requests") or None


def _add(total: dict[str, int], requests: dict[str, Any] | None) -> None:
    if not requests:
        return
    for name, value in requests.items():
        total[name] = total.get(name, 0) + _amount(name, value)


def _amount(name: str, value: Any) -> int:
    text = str(value)
    try:
        return milli_value(text) if name == CPU else int_value(text)
    except (ValueError, ArithmeticError):
        return 0


def pod_requests(spec: Obj) -> tuple[int, int, dict[str, int]]:
    """(milli-CPU, memory bytes, other resources) a pod requests, as upstream sums them."""
    total: dict[str, int] = {}
    for c in spec.get("containers") or ():
        _add(total, _requests_of(c))
    init = spec.get("initContainers") or ()
    if init:
        sidecars: dict[str, int] = {}
        peak: dict[str, int] = {}
        for c in init:
            req = _requests_of(c)
            if c.get("restartPolicy") == "Always":
                _add(sidecars, req)
                _add(total, req)
                continue
            cur = dict(sidecars)
            _add(cur, req)
            for name, v in cur.items():
                if v > peak.get(name, 0):
                    peak[name] = v
        for name, v in peak.items():
            if v > total.get(name, 0):
                total[name] = v
    _add(total, spec.get("overhead"))
    if not total:
        return 0, 0, {}
    milli_cpu = total.pop(CPU, 0)
    memory = total.pop(MEMORY, 0)
    return milli_cpu, memory, total


def pod_host_ports(spec: Obj) -> tuple[HostPort, ...]:
    host_network = bool(spec.get("hostNetwork"))
    ports: list[HostPort] = []
    for group in ("initContainers", "containers"):
        for c in spec.get(group) or ():
            for p in c.get("ports") or ():
                hp = p.get("hostPort") or 0
                if not hp and host_network:
                    hp = p.get("containerPort") or 0
                if hp:
                    ports.append((p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", int(hp)))
    return tuple(ports)
