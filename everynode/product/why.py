"""`everynode why`: for every node, why a DaemonSet's pod runs there, waits, fails or is not there.

A pure function from one cluster snapshot (:class:`~everynode.product.clusterdump.ClusterObjects`)
and "now" to an :class:`Explanation`: exactly one verdict per node and the reasons behind it,
each with a code (DESIGN.md, "everynode why") and a message that names the exact label, term,
taint, quantity, port, pod or node.  Rendering (table, wide, one node's story) lives in
:mod:`everynode.product.why_render`; fetching in :mod:`everynode.product.clusterdump`.

**The same predicates as the cluster, not a second copy.**  Every decision here is taken by the
code that takes it in the cluster, called with the snapshot's objects:

* eligibility (``NodeShouldRunDaemonPod``): :meth:`Placement.fit` of the DaemonSet controller,
  which also says which row refused the node; the messages then name the nodeSelector label or
  the affinity term (each requirement checked with the API layer's matcher) and the taints;
* the update revision: the controller's history code (the revision whose data match the
  template, else the hash the controller will give it); "updated", "ready", "available" and
  "oldest first" from the controller's eligibility module;
* the rollout budget: the controller's planner (:class:`RolloutIndex` fed by
  :func:`classify_node`, exactly as ``plan_rolling_update`` feeds it), so "waiting for budget"
  means the planner did not pick this node, and the nodes named are the ones it counts as
  unavailable (or surging);
* a pod the scheduler has not bound: the scheduler's own cache of the snapshot, PreFilter state
  and filters (:func:`run_filters_with_nominated`: inter-pod affinity, spreading and the pods
  nominated ahead of it included), its scheduling gates and nomination, and its last
  ``FailedScheduling`` event (else its ``PodScheduled`` condition's message).

Verdict rules (one per node), where "pods" are the DaemonSet's pods targeting the node, terminal
pods being deleted left out (as the controller leaves them out):

* not shouldRun: ``misscheduled`` when pods are there (upstream's ``numberMisscheduled``), else
  ``excluded``;
* shouldRun and no pod: ``missing``;
* a pod of the update revision: its state decides — ``ok`` (available), ``pending`` (not bound or
  not started), ``unhealthy`` (image pull errors, restarts, not Ready, Ready but within
  minReadySeconds), ``missing`` (Failed: the controller replaces it after its backoff);
* only a pod of an older revision: ``outdated`` (with the pod's own problems, if any, and why the
  rollout has not replaced it yet: OnDelete or the budget);
* only terminating pods: ``outdated`` when of an older revision, else ``missing`` (the
  replacement waits for the pod to go).

``NodeNotReady`` is added to any verdict of a node whose Ready condition is not True.

Cost: O(nodes + pods + events) — pods, revisions and events are indexed once; the scheduler's
view of a node is built only for a node with an unbound pod, and its whole cache only when such a
pod needs cluster-wide filters (inter-pod affinity, spreading).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from everynode.api.meta import metadata_of
from everynode.api.pod import available_at, is_pod_available, is_pod_ready
from everynode.api.scheduling import node_selector_requirement_matches, tolerations_tolerate_taint
from everynode.apiserver.tables import human_duration, parse_time
from everynode.controllers.daemonset.backoff import INITIAL_DELAY, MAX_DELAY
from everynode.controllers.daemonset.daemonpods import (
    is_pod_updated,
    pod_hash,
    sort_oldest_first,
    target_node_or_none,
    template_generation,
)
from everynode.controllers.daemonset.history import (
    collision_count,
    compute_hash,
    pick_current,
    split_revisions,
)
from everynode.controllers.daemonset.manage import FAILED_DAEMON_POD
from everynode.controllers.daemonset.placement import Placement
from everynode.controllers.daemonset.update import (
    RollingUpdatePlan,
    RolloutIndex,
    UpdateError,
    classify_node,
    find_updated_pods_on_node,
)
from everynode.kubelet.mounts import FAILED_MOUNT
from everynode.product.clusterdump import ClusterObjects
from everynode.product.commands_node import format_taint
from everynode.scheduler.cache import TERMINAL_PHASES, SchedulerCache
from everynode.scheduler.cycle import prefilter
from everynode.scheduler.filters import (
    REASON_ANTI_AFFINITY_RULES,
    REASON_NODE_PORTS,
    REASON_TOO_MANY_PODS,
    run_filters_with_nominated,
)
from everynode.scheduler.nodeinfo import ANY_IP, NodeInfo
from everynode.scheduler.podinfo import PodInfo
from everynode.scheduler.scheduler import FAILED_SCHEDULING
from everynode.scheduler.topologyspread import hard_constraints

Obj = dict[str, Any]

# Verdicts (DESIGN.md), in the order the summary counts them.
OK = "ok"
EXCLUDED = "excluded"
MISSING = "missing"
PENDING = "pending"
UNHEALTHY = "unhealthy"
OUTDATED = "outdated"
MISSCHEDULED = "misscheduled"
VERDICTS = (OK, EXCLUDED, MISSING, PENDING, UNHEALTHY, OUTDATED, MISSCHEDULED)

# Reason codes (DESIGN.md table).
NODE_SELECTOR_MISMATCH = "NodeSelectorMismatch"
NODE_AFFINITY_MISMATCH = "NodeAffinityMismatch"
TAINT_NOT_TOLERATED = "TaintNotTolerated"
INSUFFICIENT_RESOURCES = "InsufficientResources"
HOST_PORT_CONFLICT = "HostPortConflict"
UNSCHEDULABLE = "Unschedulable"
PREEMPTING = "Preempting"
IMAGE_PULL_ERROR = "ImagePullError"
CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"
NOT_READY = "NotReady"
FAILED_BACKOFF = "FailedBackoff"
MIN_READY_SECONDS = "MinReadySeconds"
TERMINATING = "Terminating"
NODE_NOT_READY = "NodeNotReady"
WAITING_FOR_BUDGET = "WaitingForBudget"
ON_DELETE_STRATEGY = "OnDeleteStrategy"
ROLLOUT_STEP = "RolloutStep"

IMAGE_PULL_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"})
_TAINT_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
_FAILED_POD_NODE = re.compile(r" on node (\S+), will try to kill it")
NAMED_BUDGET_USERS = 3  # nodes named in a WaitingForBudget message before "and N more"


@dataclass(frozen=True, slots=True)
class Reason:
    code: str
    message: str
    short: str = ""  # a few words for summaries ("not Ready for 4m"); the message when empty

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass(slots=True)
class NodeVerdict:
    """One node's answer, plus what its story (``--node``) shows."""

    node: str
    verdict: str
    pod: str | None = None
    revision: str | None = None
    reasons: list[Reason] = field(default_factory=list)
    should_run: bool = False
    should_continue: bool = False
    pods: list[Obj] = field(default_factory=list)  # the DaemonSet's pods targeting this node
    state: str = ""  # the pod's state when no reason says it ("pod x Pending: container main ContainerCreating")
    state_short: str = ""  # the same in a few words, for summaries ("ContainerCreating")
    scheduler_message: str = ""  # the pod's last FailedScheduling message

    @property
    def line(self) -> str:
        """One line: the first reason, or the state."""
        if self.reasons:
            return self.reasons[0].message
        return self.state or DEFAULT_LINES[self.verdict]

    @property
    def short(self) -> str:
        if self.reasons:
            return self.reasons[0].short or self.reasons[0].message
        return self.state_short or self.state or DEFAULT_LINES[self.verdict]

    def codes(self) -> list[str]:
        return [r.code for r in self.reasons]

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "verdict": self.verdict, "pod": self.pod, "revision": self.revision,
                "reasons": [r.to_json() for r in self.reasons]}


DEFAULT_LINES: Mapping[str, str] = {
    OK: "up to date and available",
    EXCLUDED: "the DaemonSet does not want a pod here",
    MISSING: "no pod yet: the controller creates it",
    PENDING: "pod not started yet",
    UNHEALTHY: "pod not healthy",
    OUTDATED: "old revision: the rollout replaces it next",
    MISSCHEDULED: "a pod where the DaemonSet no longer wants one",
}


@dataclass(slots=True)
class Summary:
    nodes: int = 0
    desired: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    updated: int = 0
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nodes": self.nodes, "desired": self.desired}
        for verdict in VERDICTS:
            out[verdict] = self.counts.get(verdict, 0)
        out["message"] = self.message
        return out


@dataclass(slots=True)
class Explanation:
    daemonset: Obj
    update_revision: str
    nodes: list[NodeVerdict]
    summary: Summary
    strategy: str = "RollingUpdate"
    budget: RollingUpdatePlan | None = None
    budget_text: str = ""  # "maxUnavailable 1" / "maxSurge 10% (1 of 6 nodes)"

    @property
    def namespace(self) -> str:
        return (self.daemonset.get("metadata") or {}).get("namespace") or ""

    @property
    def name(self) -> str:
        return (self.daemonset.get("metadata") or {}).get("name") or ""

    def node(self, name: str) -> NodeVerdict | None:
        for nv in self.nodes:
            if nv.node == name:
                return nv
        return None

    def to_json(self) -> dict[str, Any]:
        return {"daemonset": {"namespace": self.namespace, "name": self.name, "updateRevision": self.update_revision},
                "summary": self.summary.to_json(),
                "nodes": [nv.to_json() for nv in self.nodes]}


# ------------------------------------------------------------------------------------------ small facts


def _name(obj: Mapping[str, Any]) -> str:
    return metadata_of(obj).get("name") or ""


def _controller_uid(obj: Mapping[str, Any]) -> str | None:
    for ref in metadata_of(obj).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == "DaemonSet":
            return ref.get("uid")
    return None


def _ago(text: Any, now: float) -> str:
    t = parse_time(text)
    return "a while" if t is None else human_duration(now - t)


def condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    """The ``status.conditions`` entry of ``type_`` (Pod or Node), or None."""
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return cond
    return None


def update_revision(ds: Obj, revisions: Iterable[Obj]) -> str:
    """The hash the controller labels updated pods with: the revision whose data match the
    template (``constructHistory``), else the hash it will give the new revision."""
    uid = metadata_of(ds).get("uid")
    owned = [r for r in revisions if _controller_uid(r) == uid]
    current, _ = split_revisions(ds, owned)
    if current:
        labels = metadata_of(pick_current(current)).get("labels") or {}
        label = labels.get("controller-revision-hash")
        if label:
            return str(label)
    template = (ds.get("spec") or {}).get("template") or {}
    return compute_hash(template, collision_count(ds))


# ------------------------------------------------------------------------------------------ events

def _event_time(event: Mapping[str, Any]) -> float:
    for key in ("lastTimestamp", "deprecatedLastTimestamp", "eventTime", "firstTimestamp"):
        t = parse_time(event.get(key))
        if t is not None:
            return t
    series = event.get("series") or {}
    t = parse_time(series.get("lastObservedTime"))
    return t if t is not None else parse_time(metadata_of(event).get("creationTimestamp")) or 0.0


def _event_count(event: Mapping[str, Any]) -> int:
    series = event.get("series") or {}
    return int(event.get("count") or event.get("deprecatedCount") or series.get("count") or 1)


def _event_subject(event: Mapping[str, Any]) -> Mapping[str, Any]:
    return event.get("involvedObject") or event.get("regarding") or {}


def _event_message(event: Mapping[str, Any]) -> str:
    return str(event.get("message") or event.get("note") or "")


@dataclass(slots=True)
class _Events:
    failed_scheduling: dict[tuple[str, str], tuple[float, str]] = field(default_factory=dict)  # pod -> (t, msg)
    failed_mount: dict[tuple[str, str], tuple[float, str]] = field(default_factory=dict)  # pod -> (t, msg)
    failed_daemon_pod: dict[str, tuple[float, int, str]] = field(default_factory=dict)  # node -> (t, count, msg)


# The Event reasons read here (``plan``'s copy writes no others).
EVENT_REASONS = frozenset({FAILED_SCHEDULING, FAILED_MOUNT, FAILED_DAEMON_POD})


def _keep_newest(held: dict[tuple[str, str], tuple[float, str]], event: Mapping[str, Any]) -> None:
    """Keep the newest message of a reason per pod (the event's subject)."""
    subject = _event_subject(event)
    key = (subject.get("namespace") or metadata_of(event).get("namespace") or "", subject.get("name") or "")
    t = _event_time(event)
    kept = held.get(key)
    if kept is None or t >= kept[0]:
        held[key] = (t, _event_message(event))


def _index_events(events: Iterable[Obj], ds: Obj) -> _Events:
    ds_md = metadata_of(ds)
    ds_uid, ds_ns, ds_name = ds_md.get("uid"), ds_md.get("namespace") or "", ds_md.get("name") or ""
    out = _Events()
    for event in events:
        reason = event.get("reason")
        if reason == FAILED_SCHEDULING:
            _keep_newest(out.failed_scheduling, event)
        elif reason == FAILED_MOUNT:
            _keep_newest(out.failed_mount, event)
        elif reason == FAILED_DAEMON_POD:
            subject = _event_subject(event)
            if subject.get("uid") != ds_uid and (subject.get("namespace"), subject.get("name")) != (ds_ns, ds_name):
                continue
            message = _event_message(event)
            m = _FAILED_POD_NODE.search(message)
            if m is None:
                continue
            t = _event_time(event)
            node = m.group(1)
            held_node = out.failed_daemon_pod.get(node)
            count = _event_count(event) + (held_node[1] if held_node is not None else 0)
            if held_node is None or t >= held_node[0]:
                out.failed_daemon_pod[node] = (t, count, message)
            else:
                out.failed_daemon_pod[node] = (held_node[0], count, held_node[2])
    return out


# ------------------------------------------------------------------------------------------ eligibility

def _requirement_text(req: Mapping[str, Any]) -> str:
    op = req.get("operator") or ""
    values = req.get("values") or []
    if op in ("Exists", "DoesNotExist"):
        return f"{req.get('key', '')} {op}"
    return f"{req.get('key', '')} {op} [{', '.join(map(str, values))}]"


def _label_text(labels: Mapping[str, str], key: str) -> str:
    return f"node has {key}={labels[key]}" if key in labels else f"node has no label {key}"


def _term_failure(term: Mapping[str, Any], node: Mapping[str, Any]) -> str | None:
    """What in one node selector term does not match the node (None: the term matches)."""
    labels = metadata_of(node).get("labels") or {}
    expressions = term.get("matchExpressions") or ()
    fields_ = term.get("matchFields") or ()
    if not expressions and not fields_:
        return "the term is empty (an empty term matches no node)"
    for req in expressions:
        if not node_selector_requirement_matches(req, labels):
            return f"{_requirement_text(req)} ({_label_text(labels, req.get('key') or '')})"
    name = _name(node)
    for req in fields_:
        values = req.get("values") or []
        if req.get("key") != "metadata.name" or req.get("operator") not in ("In", "NotIn") or len(values) != 1:
            return f"{_requirement_text(req)} (an invalid field requirement)"
        if (name == values[0]) != (req.get("operator") == "In"):
            return f"{_requirement_text(req)} (node is {name})"
    return None


def exclusion_reasons(ds: Obj, placement: Placement, node: Obj, failed: str, first_taint: Mapping[str, Any] | None
                      ) -> list[Reason]:
    """Why ``NodeShouldRunDaemonPod`` said no, naming the label, the term or the taints."""
    spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    labels = metadata_of(node).get("labels") or {}
    reasons: list[Reason] = []
    if failed == "nodeName":
        reasons.append(Reason(NODE_AFFINITY_MISMATCH, f"the template's nodeName is {spec.get('nodeName')}",
                              f"nodeName {spec.get('nodeName')}"))
    elif failed == "affinity":
        for key, value in (spec.get("nodeSelector") or {}).items():
            if labels.get(key) != value:
                reasons.append(Reason(NODE_SELECTOR_MISMATCH,
                                      f"nodeSelector {key}={value}: {_label_text(labels, key)}",
                                      f"nodeSelector {key}={value}"))
        required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                    .get("requiredDuringSchedulingIgnoredDuringExecution"))
        if required is not None:
            terms = required.get("nodeSelectorTerms") or []
            failures = [(i, _term_failure(term or {}, node)) for i, term in enumerate(terms)]
            if not terms or all(f is not None for _, f in failures):
                detail = "; ".join(f"term {i + 1}: {f}" for i, f in failures) or "no terms"
                reasons.append(Reason(NODE_AFFINITY_MISMATCH, f"no required node affinity term matches: {detail}",
                                      "node affinity"))
        if not reasons:  # a term the controller could not parse never matches
            reasons.append(Reason(NODE_AFFINITY_MISMATCH, "the required node affinity does not parse: it matches "
                                                          "no node", "node affinity"))
    if failed:
        # Every untolerated taint refuses the node too (the controller stops at the first row that
        # fails; a user fixing the label would hit the taint next, so both are named).
        taints = [t for t in (node.get("spec") or {}).get("taints") or ()
                  if t.get("effect") in _TAINT_EFFECTS and not tolerations_tolerate_taint(placement.tolerations, t)]
        if failed == "taint" and not taints and first_taint is not None:
            taints = [first_taint]
        for taint in taints:
            text = format_taint(taint)
            reasons.append(Reason(TAINT_NOT_TOLERATED, f"taint {text} is not tolerated",
                                  f"taint {text} (no toleration)"))
    return reasons


# ------------------------------------------------------------------------------------------ pods

@dataclass(slots=True)
class _PodState:
    verdict: str
    reasons: list[Reason]
    state: str = ""
    scheduler_message: str = ""
    state_short: str = ""


class _NodeUsage:
    """The scheduler's view of the snapshot's nodes, as cheap as the pod allows.

    A pod whose filters are all node-local (no pod affinity of its own, no DoNotSchedule spread
    constraint, no pod in the cluster with a required anti-affinity term) is judged on a
    :class:`NodeInfo` of its node alone — the node, the pods bound there that are not terminal,
    the pods nominated there.  Any other pod needs the cluster-wide PreFilter state, so the
    scheduler's whole cache of the snapshot is built, once (for 5,000 nodes it costs about as
    much as the rest of the explanation).  Either way the filters are the scheduler's own
    (:func:`run_filters_with_nominated`).  A dump holds no Namespaces: an affinity term's
    namespaceSelector sees empty namespace labels."""

    def __init__(self, nodes: Iterable[Obj], pods: Iterable[Obj]) -> None:
        self._nodes = nodes
        self._bound: dict[str, list[Obj]] = {}
        self._nominated: dict[str, list[Obj]] = {}
        self._any_required_anti = False
        for pod in pods:
            spec = pod.get("spec") or {}
            node = spec.get("nodeName")
            if node:
                if (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES:
                    self._bound.setdefault(node, []).append(pod)
                    anti = (spec.get("affinity") or {}).get("podAntiAffinity") or {}
                    if anti.get("requiredDuringSchedulingIgnoredDuringExecution"):
                        self._any_required_anti = True
            elif (name := (pod.get("status") or {}).get("nominatedNodeName")) and \
                    not metadata_of(pod).get("deletionTimestamp"):
                self._nominated.setdefault(name, []).append(pod)
        self._cache: SchedulerCache | None = None

    def bound(self, node: str) -> list[Obj]:
        return self._bound.get(node, [])

    def _full_cache(self) -> SchedulerCache:
        if self._cache is None:
            cache = SchedulerCache()
            for node in self._nodes:
                cache.set_node(node)
            for pods in self._bound.values():
                for pod in pods:
                    cache.set_pod(PodInfo(pod))
            for name, pods in self._nominated.items():
                for pod in pods:
                    cache.nominate(PodInfo(pod), name)
            self._cache = cache
        return self._cache

    def view(self, pi: PodInfo, node: Obj) -> tuple[NodeInfo | None, SchedulerCache | None]:
        """The node as the scheduler sees it for ``pi``, and the cache when ``pi`` needs the
        cluster-wide filters (None: node-local filters only)."""
        if self._any_required_anti or pi.has_pod_affinity or hard_constraints(pi):
            cache = self._full_cache()
            return cache.node(_name(node)), cache
        info = NodeInfo(node)
        for pod in self._bound.get(_name(node), ()):
            info.add_pod(PodInfo(pod))
        for pod in self._nominated.get(_name(node), ()):
            other = PodInfo(pod)
            info.nominated[other.key] = other
        return info, None


def _quantity_text(name: str, amount: int) -> str:
    if name == "cpu":
        return f"{amount}m" if amount % 1000 else str(amount // 1000)
    if name == "memory":
        for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if amount >= size and amount % size == 0:
                return f"{amount // size}{unit}"
    return str(amount)


def _nominated_ahead(pi: PodInfo, info: NodeInfo) -> list[PodInfo]:
    """Pods nominated to the node that the scheduler counts as already there for ``pi``
    (priority at least its own: ``RunFilterPluginsWithNominatedPods``)."""
    return sorted((n for k, n in info.nominated.items() if k != pi.key and n.priority >= pi.priority
                   and k not in info.pods), key=lambda n: n.key)


def _resource_reasons(pi: PodInfo, info: NodeInfo, reasons: Sequence[str]) -> list[Reason]:
    ahead = _nominated_ahead(pi, info)
    if ahead:  # the numbers the scheduler saw: the nominated pods' requests count
        info = info.clone_usage()
        for n in ahead:
            info.add_pod(n)
    nominated_text = f"; counted ahead: {', '.join(f'{n.key} (nominated here, priority {n.priority})' for n in ahead)}" \
        if ahead else ""
    out: list[Reason] = []
    for text in reasons:
        if text == REASON_TOO_MANY_PODS:
            out.append(Reason(INSUFFICIENT_RESOURCES, f"Too many pods: {len(info.pods)} of {info.alloc_pods} "
                                                      f"allowed already run there", "Too many pods"))
            continue
        resource = text.removeprefix("Insufficient ")
        if resource == "cpu":
            want, alloc, used = pi.milli_cpu, info.alloc_milli_cpu, info.req_milli_cpu
        elif resource == "memory":
            want, alloc, used = pi.memory, info.alloc_memory, info.req_memory
        else:
            want, alloc, used = pi.scalar.get(resource, 0), info.alloc_scalar.get(resource, 0), \
                info.req_scalar.get(resource, 0)
        free = max(0, alloc - used)
        out.append(Reason(INSUFFICIENT_RESOURCES,
                          f"Insufficient {resource}: requests {_quantity_text(resource, want)}, free "
                          f"{_quantity_text(resource, free)} (allocatable {_quantity_text(resource, alloc)} minus "
                          f"{_quantity_text(resource, used)} requested by {len(info.pods)} pods){nominated_text}",
                          f"Insufficient {resource}"))
    return out


def _port_holders(pi: PodInfo, info: NodeInfo) -> list[Reason]:
    out: list[Reason] = []
    for ip, proto, port in pi.host_ports:
        for other in info.pods.values():
            for oip, oproto, oport in other.host_ports:
                if (oproto, oport) == (proto, port) and (ip == ANY_IP or oip == ANY_IP or ip == oip):
                    out.append(Reason(HOST_PORT_CONFLICT, f"host port {proto}/{port} is held by pod {other.key}",
                                      f"host port {port} in use"))
                    break
    return out or [Reason(HOST_PORT_CONFLICT, "a wanted host port is held by another pod", "host port in use")]


def _scheduled_condition(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return condition(pod, "PodScheduled") or {}


def _priority(pod: Mapping[str, Any]) -> int:
    return int((pod.get("spec") or {}).get("priority") or 0)


def _preempting_reason(pod: Obj, nominated: str, usage: _NodeUsage, now: float) -> Reason:
    """Nominated: the victims are the lower-priority pods still terminating on that node (the
    scheduler deleted them; a pod nominated there does not preempt again while one is going)."""
    name = metadata_of(pod).get("name") or ""
    priority = _priority(pod)
    victims = sorted((p for p in usage.bound(nominated)
                      if metadata_of(p).get("deletionTimestamp") and _priority(p) < priority),
                     key=lambda p: (metadata_of(p).get("namespace") or "", _name(p)))
    named = [f"{metadata_of(v).get('namespace') or ''}/{_name(v)} ({_terminating_reason(v, now).short})"
             for v in victims[:NAMED_BUDGET_USERS]]
    more = len(victims) - len(named)
    who = (": " + ", ".join(named) + (f" and {more} more" if more > 0 else "")) if named else \
        " (none is left: the scheduler binds it at its next attempt)"
    return Reason(PREEMPTING, f"pod {name} (priority {priority}) is nominated to node {nominated} and waits for "
                              f"the pods it preempts to go{who}", "preempting")


def _anti_affinity_reasons(pi: PodInfo, info: NodeInfo, cache: SchedulerCache, scheduler_message: str
                           ) -> list[Reason]:
    """The pod's own required anti-affinity refuses the node: name the pods in the node's
    topology domain that a term matches (the message the scheduler gives does not)."""
    terms = pi.pod_affinity.required_anti if pi.pod_affinity is not None else ()
    found: list[str] = []
    for term in terms:
        value = info.labels.get(term.topology_key)
        if value is None:
            continue
        for other, other_node in cache.live_pods():
            if other.key != pi.key and other_node.labels.get(term.topology_key) == value and \
                    term.matches(other.namespace, other.labels, cache.ns_labels.get(other.namespace)):
                found.append(f"{other.key} on {other_node.name} ({term.topology_key}={value})")
    said = f"; the scheduler said: {scheduler_message}" if scheduler_message else ""
    if not found:
        return [Reason(UNSCHEDULABLE, f"{REASON_ANTI_AFFINITY_RULES}{said}", "pod anti-affinity")]
    more = len(found) - NAMED_BUDGET_USERS
    who = ", ".join(found[:NAMED_BUDGET_USERS]) + (f" and {more} more" if more > 0 else "")
    return [Reason(UNSCHEDULABLE, f"required pod anti-affinity: {who} matches{said}", "pod anti-affinity")]


def _unbound_state(pod: Obj, node: Obj | None, usage: _NodeUsage, events: _Events, now: float) -> _PodState:
    """A pod the scheduler has not bound, in the order the scheduler meets it: a gated pod never
    enters the queue (``SchedulingGates`` pre-enqueue), a nominated one waits for its victims,
    else the filters on its node say what refuses it.

    The scheduler's words come from its last ``FailedScheduling`` event, else from the pod's
    ``PodScheduled`` condition (reason ``Unschedulable``), which carries the same message and,
    unlike the event (kept an hour by default), stays as long as the pod is refused."""
    md = metadata_of(pod)
    spec = pod.get("spec") or {}
    key = (md.get("namespace") or "", md.get("name") or "")
    scheduled = _scheduled_condition(pod)
    scheduler_message = events.failed_scheduling.get(key, (0.0, ""))[1]
    if not scheduler_message and scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
        scheduler_message = str(scheduled.get("message") or "")
    gates = [str(g.get("name") or "") for g in spec.get("schedulingGates") or () if isinstance(g, Mapping)]
    if gates:
        return _PodState(PENDING, [Reason(UNSCHEDULABLE, f"pod {key[1]} is SchedulingGated: the scheduler does not "
                                                         f"consider it until its schedulingGates are removed "
                                                         f"({', '.join(gates)})", f"schedulingGates {', '.join(gates)}")],
                         scheduler_message=scheduler_message)
    nominated = (pod.get("status") or {}).get("nominatedNodeName")
    if nominated:
        return _PodState(PENDING, [_preempting_reason(pod, nominated, usage, now)],
                         scheduler_message=scheduler_message)
    if node is None:
        return _PodState(PENDING, [Reason(UNSCHEDULABLE, scheduler_message or "the pod's node does not exist")],
                         scheduler_message=scheduler_message)
    pi = PodInfo(pod)
    info, cache = usage.view(pi, node)
    if info is None:
        return _PodState(PENDING, [Reason(UNSCHEDULABLE, scheduler_message or "the pod's node is not schedulable")],
                         scheduler_message=scheduler_message)
    status = run_filters_with_nominated(pi, info, prefilter(pi, cache) if cache is not None else None)
    if status is None:
        if scheduler_message:
            return _PodState(PENDING, [Reason(UNSCHEDULABLE, f"fits the node now; the scheduler said: "
                                                             f"{scheduler_message}", "unschedulable")],
                             scheduler_message=scheduler_message)
        # No refusal anywhere: the scheduler has not tried the pod yet.  No contract code says
        # "not tried yet", so the state says it, naming the scheduler a custom schedulerName waits for.
        scheduler = spec.get("schedulerName") or "default-scheduler"
        created = md.get("creationTimestamp")
        age = f", created {_ago(created, now)} ago" if created else ""
        who = "the scheduler" if scheduler == "default-scheduler" else f"scheduler {scheduler} (spec.schedulerName)"
        return _PodState(PENDING, [], f"not scheduled yet: {who} has not reported on it{age}", scheduler_message,
                         "not scheduled yet")
    resource = [r for r in status.reasons if r == REASON_TOO_MANY_PODS or r.startswith("Insufficient ")]
    reasons = _resource_reasons(pi, info, resource) if resource else []
    if REASON_NODE_PORTS in status.reasons:
        reasons.extend(_port_holders(pi, info))
    if REASON_ANTI_AFFINITY_RULES in status.reasons and cache is not None:
        reasons.extend(_anti_affinity_reasons(pi, info, cache, scheduler_message))
    if not reasons:
        reasons.append(Reason(UNSCHEDULABLE, scheduler_message or f"the scheduler refuses the node: "
                                                                  f"{', '.join(status.reasons)}",
                              ", ".join(status.reasons)))
    return _PodState(PENDING, reasons, scheduler_message=scheduler_message)


def _container_statuses(pod: Obj) -> list[Mapping[str, Any]]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]


def _waiting(cs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return (cs.get("state") or {}).get("waiting")


def _starting_text(pod: Obj, statuses: Sequence[Mapping[str, Any]], events: _Events, now: float) -> str:
    """A bound pod whose containers have not started, as ``kubectl get pod`` shows it
    (``ContainerCreating``, ``PodInitializing``, ``CreateContainerConfigError`` with the kubelet's
    message) and how long ago it was bound; a pod still ``ContainerCreating`` also says what
    ``kubectl describe pod`` shows it waits for: the kubelet's newest ``FailedMount`` event (a
    ConfigMap, Secret or token that does not exist).  No contract code covers "starting", so this
    is the node's state, not a reason (see the report on issue 14 for the proposed code)."""
    md = metadata_of(pod)
    name = md.get("name") or ""
    node = (pod.get("spec") or {}).get("nodeName") or ""
    scheduled = _scheduled_condition(pod)
    since = scheduled.get("lastTransitionTime") if scheduled.get("status") == "True" else None
    bound = f"bound to {node} {_ago(since, now)} ago" if since else f"bound to {node}"
    mount = events.failed_mount.get((md.get("namespace") or "", name))
    for cs in statuses:
        waiting = _waiting(cs)
        if waiting and waiting.get("reason"):
            said = waiting.get("message") or (mount[1] if mount and waiting.get("reason") == "ContainerCreating"
                                               else None)
            message = f": {said}" if said else ""
            return f"pod {name} Pending: container {cs.get('name', '')} {waiting.get('reason')}{message} ({bound})"
    if not statuses:
        message = f": {mount[1]}" if mount else ", no container status reported yet"
        return f"pod {name} Pending: ContainerCreating{message} ({bound})"
    return f"pod {name} Pending ({bound})"


def _starting_short(statuses: Sequence[Mapping[str, Any]]) -> str:
    """The waiting reason kubectl shows for a pod still starting ("ContainerCreating")."""
    for cs in statuses:
        waiting = _waiting(cs)
        if waiting and waiting.get("reason"):
            return str(waiting.get("reason"))
    return "ContainerCreating" if not statuses else "starting"


def pod_state(pod: Obj, *, node: Obj | None, usage: _NodeUsage, events: _Events, min_ready: int, now: float
              ) -> _PodState:
    """A pod's verdict (as if it were of the update revision) and the reasons for it."""
    md = metadata_of(pod)
    name = md.get("name") or ""
    if not (pod.get("spec") or {}).get("nodeName"):
        return _unbound_state(pod, node, usage, events, now)
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    if phase == "Failed":
        status = pod.get("status") or {}
        why = ": ".join(x for x in (status.get("reason"), status.get("message")) if x)
        return _PodState(MISSING, [Reason(FAILED_BACKOFF, f"pod {name} failed{' (' + why + ')' if why else ''}; the "
                                                          f"controller deletes failed pods after a backoff",
                                          "failed pod, backoff")])
    if phase == "Succeeded":
        return _PodState(MISSING, [], f"pod {name} Succeeded: the controller deletes it")
    statuses = _container_statuses(pod)
    for cs in statuses:
        waiting = _waiting(cs)
        if waiting and waiting.get("reason") in IMAGE_PULL_REASONS:
            msg = waiting.get("message")
            return _PodState(UNHEALTHY, [Reason(IMAGE_PULL_ERROR,
                                                f"container {cs.get('name', '')}: {waiting.get('reason')}"
                                                f"{' (' + msg + ')' if msg else ''}", str(waiting.get("reason")))])
    for cs in statuses:
        waiting = _waiting(cs)
        restarts = int(cs.get("restartCount") or 0)
        if (waiting and waiting.get("reason") == "CrashLoopBackOff") or (restarts and not cs.get("ready")):
            state = "CrashLoopBackOff" if waiting and waiting.get("reason") == "CrashLoopBackOff" else \
                next(iter(cs.get("state") or {"unknown": 0}))
            last = (cs.get("lastState") or {}).get("terminated") or {}
            exit_text = f", last exit code {last.get('exitCode')}" if last.get("exitCode") is not None else ""
            return _PodState(UNHEALTHY, [Reason(CRASH_LOOP_BACK_OFF,
                                                f"container {cs.get('name', '')}: {state}, {restarts} restart"
                                                f"{'' if restarts == 1 else 's'}{exit_text}",
                                                f"CrashLoopBackOff ({restarts} restarts)")])
    if phase == "Pending":
        return _PodState(PENDING, [], _starting_text(pod, statuses, events, now), state_short=_starting_short(statuses))
    ready = condition(pod, "Ready")
    if not is_pod_ready(pod):
        since = (ready or {}).get("lastTransitionTime")
        for_ = _ago(since, now) if since else ""
        text = f"pod {name} is {phase}, not Ready" + (f" since {since} ({for_})" if since else "")
        return _PodState(UNHEALTHY, [Reason(NOT_READY, text, f"not Ready for {for_}" if for_ else "not Ready")])
    if not is_pod_available(pod, min_ready, now):
        at = available_at(pod, min_ready)
        left = f"{max(0.0, at - now):.0f}s" if at is not None else "unknown"
        return _PodState(UNHEALTHY, [Reason(MIN_READY_SECONDS, f"Ready, available in {left} (minReadySeconds "
                                                               f"{min_ready})", f"minReadySeconds: {left} left")])
    return _PodState(OK, [])


def _terminating_reason(pod: Obj, now: float) -> Reason:
    md = metadata_of(pod)
    grace = md.get("deletionGracePeriodSeconds")
    since = parse_time(md.get("deletionTimestamp"))
    # The deletionTimestamp is when the grace period ends; the deletion was asked grace seconds before.
    asked = since - float(grace) if since is not None and grace is not None else since
    for_ = human_duration(now - asked) if asked is not None else "a while"
    grace_text = f", grace period {grace}s" if grace is not None else ""
    return Reason(TERMINATING, f"pod {md.get('name', '')} is being deleted (for {for_}{grace_text})",
                  f"terminating for {for_}")


def _node_not_ready(node: Obj, now: float) -> Reason | None:
    ready = condition(node, "Ready")
    if ready is not None and ready.get("status") == "True":
        return None
    if ready is None:
        return Reason(NODE_NOT_READY, "the node has no Ready condition (no kubelet has reported)", "node not Ready")
    since = ready.get("lastTransitionTime")
    detail = f": {ready.get('message')}" if ready.get("message") else ""
    return Reason(NODE_NOT_READY, f"node Ready condition is {ready.get('status')} since {since} "
                                  f"({_ago(since, now)}){detail}", f"node {ready.get('status')}")


def _failed_backoff(node: str, events: _Events, now: float) -> Reason | None:
    """The backoff left after failed pods on ``node`` were deleted, estimated from the DaemonSet's
    ``FailedDaemonPod`` events when no failed pod is there any more.

    Upstream (``pkg/controller/daemon``, ``podsShouldBeOnNode``): each deletion of a failed pod
    calls ``failedPodsBackoff.Next`` and emits one ``FailedDaemonPod`` event; the backoff is
    ``flowcontrol.NewBackOff(1s, 15m)`` (no jitter) — the first delay 1 s, doubled by each
    further ``Next`` up to 15 min, restarted at 1 s once the key has been quiet for twice the
    maximum (30 min).  So after N deletions the controller waits ``min(1s · 2^(N-1), 15m)`` from
    the last one: N is the events' summed ``count`` (``count`` and aggregated "combined from
    similar events" entries included), the time the newest one's.  What the events cannot
    show makes this an estimate: the key includes the DaemonSet's observedGeneration (a spec
    change restarts at 1 s), a restarted controller forgets its backoff, and events expire
    (an hour by default) — each makes the real wait shorter, never longer.
    """
    held = events.failed_daemon_pod.get(node)
    if held is None:
        return None
    t, count, _ = held
    delay = min(INITIAL_DELAY * 2 ** max(0, count - 1), MAX_DELAY)
    left = t + delay - now
    if left <= 0:
        return None
    return Reason(FAILED_BACKOFF, f"{count} failed pod{'' if count == 1 else 's'} deleted here, the last "
                                  f"{human_duration(now - t)} ago; the controller waits about {left:.0f}s more "
                                  f"(backoff {human_duration(delay)})", "failed pods, backoff")


# ------------------------------------------------------------------------------------------ rollout budget

def _budget_text(ds: Obj, plan: RollingUpdatePlan) -> str:
    """``maxUnavailable 1`` / ``maxSurge 10% (1 of 6 nodes)``: the budget the planner applies."""
    rolling = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    if plan.max_surge > 0:
        raw, resolved, name = rolling.get("maxSurge"), plan.max_surge, "maxSurge"
    else:
        raw, resolved, name = rolling.get("maxUnavailable"), plan.max_unavailable, "maxUnavailable"
    if isinstance(raw, str) and raw.endswith("%"):
        return f"{name} {raw} ({resolved} of {plan.desired} nodes)"
    return f"{name} {resolved}"


def _budget_users(index: RolloutIndex, surge: bool) -> list[str]:
    return sorted(name for name, r in index.records.items() if (r.surging if surge else r.unavailable))


# ------------------------------------------------------------------------------------------ explain

def explain(ds: Obj, objects: ClusterObjects, *, now: float) -> Explanation:
    """Every node's verdict for ``ds`` in the snapshot ``objects`` at time ``now``."""
    uid = metadata_of(ds).get("uid")
    spec = ds.get("spec") or {}
    strategy = (spec.get("updateStrategy") or {}).get("type") or "RollingUpdate"
    min_ready = int(spec.get("minReadySeconds") or 0)
    hash_ = update_revision(ds, objects.controllerrevisions)
    generation = template_generation(ds)
    placement = Placement(ds)

    ds_pods: dict[str, list[Obj]] = {}
    for pod in objects.pods:
        if _controller_uid(pod) != uid:
            continue
        md = metadata_of(pod)
        if md.get("deletionTimestamp") and (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
            continue  # the controller no longer counts it (§3.4)
        target = target_node_or_none(pod)
        if target is not None:
            ds_pods.setdefault(target, []).append(pod)
    events = _index_events(objects.events, ds)
    usage = _NodeUsage(objects.nodes, objects.pods)
    nodes = sorted(objects.nodes, key=_name)
    fits = {_name(n): placement.fit(n) for n in nodes}

    index: RolloutIndex | None = None
    plan: RollingUpdatePlan | None = None
    if strategy == "RollingUpdate":
        index = RolloutIndex()
        for name, fit in fits.items():
            index.set(name, classify_node(ds_pods.get(name, ()), should_run=fit.should_run, hash_=hash_,
                                          generation=generation, min_ready=min_ready, now=now))
        for name, pods in ds_pods.items():  # pods on nodes that are gone (should_run None)
            if name not in fits:
                index.set(name, classify_node(pods, should_run=None, hash_=hash_, generation=generation,
                                              min_ready=min_ready, now=now))
        try:
            plan = index.plan(ds)
        except UpdateError:
            plan = None

    verdicts: list[NodeVerdict] = []
    waiting: list[NodeVerdict] = []  # outdated nodes the budget holds back (messages filled in below)
    for node in nodes:
        name = _name(node)
        fit = fits[name]
        pods = ds_pods.get(name, [])
        nv = NodeVerdict(node=name, verdict=EXCLUDED, should_run=fit.should_run,
                         should_continue=fit.should_continue, pods=pods)
        if not fit.should_run:
            nv.reasons = exclusion_reasons(ds, placement, node, fit.failed, fit.taint)
            if pods:
                nv.verdict = MISSCHEDULED
                pod = sort_oldest_first(pods)[0]
                nv.pod, nv.revision = _name(pod), pod_hash(pod)
                if fit.should_continue:
                    nv.state = "kept: a NoSchedule taint does not remove a running pod"
                for p in pods:
                    if metadata_of(p).get("deletionTimestamp"):
                        nv.reasons.append(_terminating_reason(p, now))
        elif not pods:
            nv.verdict = MISSING
            backoff = _failed_backoff(name, events, now)
            if backoff is not None:
                nv.reasons.append(backoff)
        else:
            _explain_pods(nv, node, pods, hash_=hash_, generation=generation, usage=usage, events=events,
                          min_ready=min_ready, now=now)
            if nv.verdict == OUTDATED and not any(r.code == TERMINATING for r in nv.reasons):
                if strategy != "RollingUpdate":
                    nv.reasons.append(Reason(ON_DELETE_STRATEGY, "OnDelete: delete the pod to update",
                                             "OnDelete"))
                elif plan is not None and not _replaced_now(nv, plan):
                    waiting.append(nv)
        not_ready = _node_not_ready(node, now)
        if not_ready is not None:
            nv.reasons.append(not_ready)
        verdicts.append(nv)

    budget_text = ""
    if plan is not None and index is not None:
        budget_text = _budget_text(ds, plan)
        by_name = {nv.node: nv for nv in verdicts}
        users = _budget_users(index, plan.max_surge > 0)
        for nv in waiting:
            nv.reasons.append(_waiting_reason(nv, users, by_name, budget_text))

    summary = summarize(verdicts, hash_=hash_, generation=generation, strategy=strategy,
                        budget_users=_budget_users(index, plan.max_surge > 0) if index and plan and waiting else [])
    return Explanation(ds, hash_, verdicts, summary, strategy=strategy, budget=plan, budget_text=budget_text)


def _explain_pods(nv: NodeVerdict, node: Obj, pods: list[Obj], *, hash_: str, generation: int | None,
                  usage: _NodeUsage, events: _Events, min_ready: int, now: float) -> None:
    new_pod, old_pod, _ = find_updated_pods_on_node(pods, hash_, generation)
    live = [p for p in pods if not metadata_of(p).get("deletionTimestamp")]
    if new_pod is None and old_pod is None and live:  # duplicates: the oldest is the one that counts
        oldest = sort_oldest_first(live)[0]
        if is_pod_updated(oldest, hash_, generation):
            new_pod = oldest
        else:
            old_pod = oldest
    chosen = new_pod or old_pod
    if chosen is None:  # only terminating pods
        pod = sort_oldest_first(pods)[0]
        nv.pod, nv.revision = _name(pod), pod_hash(pod)
        nv.verdict = MISSING if is_pod_updated(pod, hash_, generation) else OUTDATED
        nv.reasons.append(_terminating_reason(pod, now))
        if nv.verdict == MISSING:
            nv.state = "the replacement waits for the old pod to go"
        return
    nv.pod, nv.revision = _name(chosen), pod_hash(chosen)
    state = pod_state(chosen, node=node, usage=usage, events=events, min_ready=min_ready, now=now)
    nv.scheduler_message = state.scheduler_message
    nv.reasons.extend(state.reasons)
    nv.state = state.state
    nv.state_short = state.state_short
    if chosen is new_pod:
        nv.verdict = state.verdict
    else:
        nv.verdict = MISSING if state.verdict == MISSING else OUTDATED
    for p in pods:
        if metadata_of(p).get("deletionTimestamp"):
            nv.reasons.append(_terminating_reason(p, now))


def _replaced_now(nv: NodeVerdict, plan: RollingUpdatePlan) -> bool:
    """The planner replaces this node's old pod in its next step (not held by the budget)."""
    return (nv.pod is not None and nv.pod in plan.pods_to_delete) or nv.node in plan.nodes_to_create


def _budget_detail(nv: NodeVerdict) -> str:
    """Why a node holds the budget, in a few words: a node that is not Ready says so first."""
    for r in nv.reasons:
        if r.code == NODE_NOT_READY:
            return r.short
    return nv.short


def _waiting_reason(nv: NodeVerdict, users: list[str], by_name: Mapping[str, NodeVerdict], budget_text: str
                    ) -> Reason:
    others = [u for u in users if u != nv.node]
    named = []
    for u in others[:NAMED_BUDGET_USERS]:
        held = by_name.get(u)
        named.append(f"{u} ({_budget_detail(held)})" if held is not None else f"{u} (node gone)")
    rest = len(others) - len(named)
    who = ", ".join(named) + (f" and {rest} more" if rest > 0 else "")
    if not who:
        who = "other nodes"
    return Reason(WAITING_FOR_BUDGET, f"old revision, waiting: {budget_text} is used by {who}",
                  f"waiting for {budget_text}")


# ------------------------------------------------------------------------------------------ summary

def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _group(verdicts: Iterable[NodeVerdict]) -> list[tuple[str, int]]:
    counts: Counter[str] = Counter(nv.short for nv in verdicts)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def summarize(verdicts: Sequence[NodeVerdict], *, hash_: str, generation: int | None, strategy: str,
              budget_users: Sequence[str] = ()) -> Summary:
    """The counts and the one-paragraph answer, in the article's terms (DESIRED vs nodes)."""
    counts: Counter[str] = Counter(nv.verdict for nv in verdicts)
    desired = sum(1 for nv in verdicts if nv.should_run)
    updated = sum(1 for nv in verdicts if nv.should_run and any(
        is_pod_updated(p, hash_, generation) and not metadata_of(p).get("deletionTimestamp") for p in nv.pods))
    parts: list[str] = []
    head = f"DESIRED {desired} of {_plural(len(verdicts), 'node')}"
    excluded = _group(nv for nv in verdicts if nv.verdict == EXCLUDED)
    if excluded:
        first, *rest = excluded
        bits = [f"{_plural(first[1], 'node')} excluded by {first[0]}"] + [f"{n} by {what}" for what, n in rest]
        head += ": " + ", ".join(bits)
    parts.append(head)
    for verdict, label in ((PENDING, "Pending"), (UNHEALTHY, "unhealthy"), (MISSING, "missing"),
                           (MISSCHEDULED, "misscheduled")):
        groups = _group(nv for nv in verdicts if nv.verdict == verdict)
        if groups:
            total = sum(n for _, n in groups)
            parts.append(f"{_plural(total, 'pod')} {label}: " + ", ".join(
                what if n == 1 and len(groups) == 1 else f"{n} {what}" for what, n in groups))
    if desired:
        rollout = f"rollout {updated}/{desired} updated"
        outdated = counts.get(OUTDATED, 0)
        if outdated and strategy != "RollingUpdate":
            rollout += f" (OnDelete: {_plural(outdated, 'pod')} to delete)"
        elif budget_users:
            shown = ", ".join(budget_users[:NAMED_BUDGET_USERS])
            more = len(budget_users) - NAMED_BUDGET_USERS
            rollout += f", waiting for {shown}" + (f" and {more} more" if more > 0 else "")
        elif counts.get(OK, 0) == desired:
            rollout += ", all available"
        parts.append(rollout)
    return Summary(nodes=len(verdicts), desired=desired, counts=counts, updated=updated, message="; ".join(parts))


__all__ = [
    "VERDICTS",
    "Explanation",
    "NodeVerdict",
    "Reason",
    "Summary",
    "condition",
    "exclusion_reasons",
    "explain",
    "pod_state",
    "summarize",
    "update_revision",
]
