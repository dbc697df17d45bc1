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
* for scoring, upstream counts a container that requests no cpu (memory) as requesting
  100m (200Mi) (``NonMissingContainerRequests``); :func:`pod_nonzero_requests` sums those.
* inter-pod affinity terms and topology spread constraints are parsed on first use (most pods
  have none; a DaemonSet pod must not pay for them).
"""

from __future__ import annotations

from typing import Any, Final

from everynode.api.meta import field_of
from everynode.api.podaffinity import PodAffinityTerms, compile_pod_affinity
from everynode.api.quantity import int_value, milli_value
from everynode.api.scheduling import NodeMatcher, compile_required_affinity, pinned_node_name
from everynode.memo import remember

Obj = dict[str, Any]

CPU: Final = "cpu"
MEMORY: Final = "memory"
DEFAULT_MILLI_CPU_REQUEST: Final = 100  # schedutil.DefaultMilliCPURequest (scoring only)
DEFAULT_MEMORY_REQUEST: Final = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest
_NO_LABELS: Final[dict[str, str]] = {}
_UNSET: Final[Any] = object()

# (hostIP, protocol, port)
HostPort = tuple[str, str, int]


class PodInfo:
    """Scheduling view of one pod.  Never mutated after construction, except by :meth:`refresh`."""

    __slots__ = (
        "key", "namespace", "name", "uid", "pod", "spec", "priority", "preempt_never",
        "milli_cpu", "memory", "scalar", "host_ports", "node_name", "tolerations",
        "creation", "terminating", "candidates", "_affinity", "labels", "nonzero_milli_cpu",
        "nonzero_memory", "has_pod_affinity", "_pod_affinity",
    )

    def __init__(self, pod: Obj) -> None:
        md: dict[str, Any] = pod.get("metadata") or {}
        spec: dict[str, Any] = pod.get("spec") or {}
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
        facts = container_facts(spec)
        self.milli_cpu, self.memory, self.scalar = facts.milli_cpu, facts.memory, facts.scalar
        self.host_ports: tuple[HostPort, ...] = facts.host_ports
        self.candidates: frozenset[str] | None = candidate_node_names(spec)
        self._affinity: NodeMatcher | None = None
        self.labels: dict[str, str] = md.get("labels") or _NO_LABELS
        self.nonzero_milli_cpu, self.nonzero_memory = facts.nonzero_milli_cpu, facts.nonzero_memory
        affinity = spec.get("affinity")
        self.has_pod_affinity = bool(affinity and (affinity.get("podAffinity") or affinity.get("podAntiAffinity")))
        self._pod_affinity: Any = _UNSET

    def refresh(self, pod: Obj) -> None:
        """Point at a newer version of the pod whose spec and metadata are equal for scheduling
        (a status update): every derived field stays valid."""
        self.pod = pod
        self.spec = pod.get("spec") or {}

    def matches_node(self, node: Obj) -> bool:
        """nodeSelector AND required node affinity (compiled on first use) hold for ``node``.
        (A method rather than a property returning the matcher: mypyc compiled a call of such a
        property, ``pod.affinity(node)``, as a method call and failed.)"""
        m = self._affinity
        if m is None:
            m = self._affinity = compile_required_affinity(self.spec)
        return m(node)

    @property
    def pod_affinity(self) -> PodAffinityTerms | None:
        """The pod's inter-pod (anti-)affinity terms, parsed on first use; None: it has none."""
        terms = self._pod_affinity
        if terms is _UNSET:
            terms = self._pod_affinity = (compile_pod_affinity(self.spec, self.namespace, self.labels)
                                          if self.has_pod_affinity else None)
        return terms

    @property
    def spread_constraints(self) -> list[Obj]:
        return self.spec.get("topologySpreadConstraints") or []

    @property
    def controller_ref(self) -> Obj | None:
        """The ownerReference with ``controller: true`` (upstream ``GetControllerOf``)."""
        for ref in field_of(self.pod.get("metadata"), "ownerReferences") or ():
            if ref.get("controller"):
                return ref
        return None


class ContainerFacts:
    """What a pod's containers, init containers, overhead and ``hostNetwork`` say for scheduling:
    its requests (as filtered and as scored) and its host ports.  Never mutated."""

    __slots__ = ("milli_cpu", "memory", "scalar", "host_ports", "nonzero_milli_cpu", "nonzero_memory",
                 "containers", "init_containers", "overhead")

    def __init__(self, spec: Obj) -> None:
        self.milli_cpu, self.memory, self.scalar = pod_requests(spec)
        self.host_ports: tuple[HostPort, ...] = pod_host_ports(spec)
        self.nonzero_milli_cpu, self.nonzero_memory = (
            (self.milli_cpu, self.memory) if _every_container_requests_cpu_and_memory(spec)
            else pod_nonzero_requests(spec))
        # (kept: the memo's key holds their ids, which stay theirs while they live)
        self.containers: Any = spec.get("containers")
        self.init_containers: Any = spec.get("initContainers")
        self.overhead: Any = spec.get("overhead")


# (ids of containers, initContainers, overhead; hostNetwork) -> their facts.  The pods of one
# template share those very objects (the template creates store them once: templates.py), and a
# PodInfo is made for each version of each pod the scheduler sees, so summing the requests and
# collecting the host ports again was most of making one.  Stored objects are immutable
# (storage/base.py): identity is enough, and the facts keep the objects, so the ids cannot be
# reused while their entry lives.
_FACTS: Final[dict[tuple[int, int, int, bool], ContainerFacts]] = {}
_FACTS_MAX: Final = 4096


def container_facts(spec: Obj) -> ContainerFacts:
    """:class:`ContainerFacts` of ``spec``, remembered by the identity of its parts."""
    containers = spec.get("containers")
    init = spec.get("initContainers")
    overhead = spec.get("overhead")
    key = (id(containers), id(init), id(overhead), bool(spec.get("hostNetwork")))
    known = _FACTS.get(key)
    if known is not None and known.containers is containers and known.init_containers is init \
            and known.overhead is overhead:
        return known
    return remember(_FACTS, key, ContainerFacts(spec), limit=_FACTS_MAX)


# spec.affinity -> its candidates, by identity (the affinity object is kept with its answer, so
# its id cannot be reused meanwhile).  A PodInfo is made for each version of a pod the scheduler
# sees (pending, bound, terminating), and the versions of a stored pod share its spec's affinity
# object: its terms were compiled again for each (1.2% of a virtual rollout, py-spy).  Stored
# objects are immutable (storage/base.py), which is what makes identity enough.
_CANDIDATES: Final[dict[int, tuple[Obj, frozenset[str] | None]]] = {}
_CANDIDATES_MAX: Final = 65_536


def candidate_node_names(spec: Obj) -> frozenset[str] | None:
    """The only nodes the pod may go to by its required affinity's ``metadata.name`` pins
    (upstream NodeAffinity PreFilter), or None: every node is a candidate.

    The DaemonSet pin (one name) takes the O(1) path of ``pinned_node_name``; other shapes
    follow upstream: every term must pin names, the result is the union over terms of each
    term's intersection; an empty set means the terms contradict each other."""
    affinity = spec.get("affinity")
    if not affinity:
        return None
    hit = _CANDIDATES.get(id(affinity))
    if hit is not None and hit[0] is affinity:
        return hit[1]
    return remember(_CANDIDATES, id(affinity), (affinity, _candidates(spec)), limit=_CANDIDATES_MAX)[1]


def _candidates(spec: Obj) -> frozenset[str] | None:
    name = pinned_node_name(spec)
    if name is not None:
        return frozenset((name,))
    affinity = field_of(spec.get("affinity"), "nodeAffinity") or {}
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


def _nonzero(container: Obj) -> tuple[int, int]:
    req = _requests_of(container) or {}
    cpu = _amount(CPU, req[CPU]) if CPU in req else DEFAULT_MILLI_CPU_REQUEST
    mem = _amount(MEMORY, req[MEMORY]) if MEMORY in req else DEFAULT_MEMORY_REQUEST
    return cpu, mem


def _every_container_requests_cpu_and_memory(spec: Obj) -> bool:
    """Then the non-zero requests equal the requests (no quantity is parsed twice)."""
    for group in ("containers", "initContainers"):
        for c in spec.get(group) or ():
            req = _requests_of(c)
            if not req or CPU not in req or MEMORY not in req:
                return False
    return True


def pod_nonzero_requests(spec: Obj) -> tuple[int, int]:
    """(milli-CPU, memory) as the scoring plugins count them: :func:`pod_requests` with every
    container that requests no cpu (memory) counted at the default request."""
    cpu = mem = 0
    for c in spec.get("containers") or ():
        a, b = _nonzero(c)
        cpu += a
        mem += b
    init = spec.get("initContainers")
    if init:
        side_cpu = side_mem = peak_cpu = peak_mem = 0
        for c in init:
            a, b = _nonzero(c)
            if c.get("restartPolicy") == "Always":
                side_cpu += a
                side_mem += b
                cpu += a
                mem += b
                continue
            peak_cpu = max(peak_cpu, side_cpu + a)
            peak_mem = max(peak_mem, side_mem + b)
        cpu = max(cpu, peak_cpu)
        mem = max(mem, peak_mem)
    overhead = spec.get("overhead")
    if overhead:
        cpu += _amount(CPU, overhead[CPU]) if CPU in overhead else 0
        mem += _amount(MEMORY, overhead[MEMORY]) if MEMORY in overhead else 0
    return cpu, mem


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
