"""Inter-pod affinity, topology spreading and scoring, on a SchedulerCache built by hand.

Each case states a cluster (nodes with labels, pods bound to them) and a pod, and the verdict
upstream's plugins give per node (filters) or the node the default profile picks (scores)."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.api.podaffinity import (
    LABEL_HOSTNAME,
    LABEL_ZONE,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    compile_pod_affinity,
    compile_spread_constraints,
    default_spread_selector,
)
from everynode.api.selectors import LabelSelector, label_selector_from_dict
from everynode.scheduler.cache import SchedulerCache
from everynode.scheduler.cycle import prefilter
from everynode.scheduler.filters import (
    REASON_AFFINITY_RULES,
    REASON_ANTI_AFFINITY_RULES,
    REASON_EXISTING_ANTI_AFFINITY,
    REASON_SPREAD_CONSTRAINTS,
    REASON_SPREAD_MISSING_LABEL,
    run_filters,
)
from everynode.scheduler.podinfo import PodInfo, pod_nonzero_requests
from everynode.scheduler.preemption import select_victims_on_node
from everynode.scheduler.scoring import (
    balanced_allocation_score,
    default_normalize,
    least_allocated_score,
    select_host,
)
from everynode.scheduler.topologyspread import CriticalPaths, normalize

Obj = dict[str, Any]


def node(name: str, zone: str | None = None, *, cpu: str = "4", taints: list[Obj] | None = None,
         labels: dict[str, str] | None = None) -> Obj:
    lbl = {LABEL_HOSTNAME: name, **(labels or {})}
    if zone:
        lbl[LABEL_ZONE] = zone
    return {"metadata": {"name": name, "labels": lbl}, "spec": {"taints": taints or []},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}}


def pod(name: str, *, labels: dict[str, str] | None = None, ns: str = "default", node_name: str = "",
        affinity: Obj | None = None, spread: list[Obj] | None = None, priority: int = 0,
        cpu: str | None = None, owner: Obj | None = None) -> PodInfo:
    container: Obj = {"name": "c", "image": "i"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu, "memory": "1Gi"}}
    spec: Obj = {"containers": [container], "priority": priority}
    if node_name:
        spec["nodeName"] = node_name
    if affinity:
        spec["affinity"] = affinity
    if spread:
        spec["topologySpreadConstraints"] = spread
    md: Obj = {"name": name, "namespace": ns, "labels": labels or {}}
    if owner:
        md["ownerReferences"] = [owner]
    return PodInfo({"metadata": md, "spec": spec})


def term(labels: dict[str, str], key: str = LABEL_HOSTNAME, **extra: Any) -> Obj:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}


def anti(*terms: Obj) -> Obj:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def aff(*terms: Obj) -> Obj:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def cluster(nodes: list[Obj], pods: list[PodInfo], namespaces: dict[str, dict[str, str]] | None = None,
            ) -> SchedulerCache:
    cache = SchedulerCache()
    for n in nodes:
        cache.set_node(n)
    for p in pods:
        cache.set_pod(p)
    for ns, labels in (namespaces or {"default": {}}).items():
        cache.set_namespace({"metadata": {"name": ns, "labels": labels}})
    return cache


def verdicts(cache: SchedulerCache, p: PodInfo) -> dict[str, str | None]:
    cycle = prefilter(p, cache)
    out: dict[str, str | None] = {}
    for name in sorted(cache.live):
        st = run_filters(p, cache.infos[name], cycle)
        out[name] = None if st is None else st.reasons[0]
    return out


WEB = {"app": "web"}
NODES3 = [node("n1", "a"), node("n2", "a"), node("n3", "b")]


# -- inter-pod affinity: filter -------------------------------------------------------------------

AFFINITY_CASES = [
    pytest.param(NODES3, [pod("w1", labels=WEB, node_name="n1")],
                 pod("w2", labels=WEB, affinity=anti(term(WEB))),
                 {"n1": REASON_ANTI_AFFINITY_RULES, "n2": None, "n3": None}, id="anti-hostname"),
    pytest.param(NODES3, [pod("w1", labels=WEB, node_name="n1")],
                 pod("w2", labels=WEB, affinity=anti(term(WEB, LABEL_ZONE))),
                 {"n1": REASON_ANTI_AFFINITY_RULES, "n2": REASON_ANTI_AFFINITY_RULES, "n3": None}, id="anti-zone"),
    pytest.param(NODES3, [pod("w1", labels=WEB, node_name="n1", affinity=anti(term(WEB)))],
                 pod("plain", labels=WEB),
                 {"n1": REASON_EXISTING_ANTI_AFFINITY, "n2": None, "n3": None}, id="existing-anti"),
    pytest.param(NODES3, [pod("w1", labels=WEB, node_name="n1", affinity=anti(term(WEB)))],
                 pod("other", labels={"app": "db"}),
                 {"n1": None, "n2": None, "n3": None}, id="existing-anti-other-labels"),
    pytest.param(NODES3, [pod("w1", labels=WEB, node_name="n1", ns="other", affinity=anti(term(WEB)))],
                 pod("w2", labels=WEB),
                 {"n1": None, "n2": None, "n3": None}, id="existing-anti-other-namespace"),
    pytest.param(NODES3, [pod("w1", labels=WEB, node_name="n1", ns="other")],
                 pod("w2", labels=WEB, affinity=anti(term(WEB, namespaces=["other"]))),
                 {"n1": REASON_ANTI_AFFINITY_RULES, "n2": None, "n3": None}, id="anti-listed-namespace"),
    pytest.param(NODES3, [pod("w1", labels=WEB, node_name="n3", ns="other")],
                 pod("w2", labels=WEB, affinity=anti(term(WEB, namespaceSelector={}))),
                 {"n1": None, "n2": None, "n3": REASON_ANTI_AFFINITY_RULES}, id="anti-all-namespaces"),
    pytest.param(NODES3, [pod("cache", labels={"app": "cache"}, node_name="n3")],
                 pod("w", labels=WEB, affinity=aff(term({"app": "cache"}, LABEL_ZONE))),
                 {"n1": REASON_AFFINITY_RULES, "n2": REASON_AFFINITY_RULES, "n3": None}, id="affinity-zone"),
    pytest.param(NODES3, [],
                 pod("w", labels=WEB, affinity=aff(term({"app": "cache"}))),
                 {"n1": REASON_AFFINITY_RULES, "n2": REASON_AFFINITY_RULES, "n3": REASON_AFFINITY_RULES},
                 id="affinity-nothing-matches"),
    pytest.param(NODES3, [],
                 pod("w", labels=WEB, affinity=aff(term(WEB))),
                 {"n1": None, "n2": None, "n3": None}, id="affinity-first-of-self-affine-group"),
    pytest.param([node("n1", "a"), node("nz")], [],
                 pod("w", labels=WEB, affinity=aff(term(WEB, LABEL_ZONE))),
                 {"n1": None, "nz": REASON_AFFINITY_RULES}, id="affinity-needs-topology-label"),
    pytest.param(NODES3, [pod("w1", labels={"app": "web", "pod-template-hash": "1"}, node_name="n1"),
                          pod("w0", labels={"app": "web", "pod-template-hash": "0"}, node_name="n2")],
                 pod("w2", labels={"app": "web", "pod-template-hash": "1"},
                     affinity=anti(term(WEB, matchLabelKeys=["pod-template-hash"]))),
                 {"n1": REASON_ANTI_AFFINITY_RULES, "n2": None, "n3": None}, id="anti-matchLabelKeys"),
    pytest.param(NODES3, [pod("t1", labels={"tenant": "a"}, node_name="n1"),
                          pod("t2", labels={"tenant": "b"}, node_name="n2")],
                 pod("x", labels={"tenant": "a"},
                     affinity=anti({"labelSelector": {"matchExpressions": [
                         {"key": "tenant", "operator": "Exists"}]}, "topologyKey": LABEL_HOSTNAME,
                         "mismatchLabelKeys": ["tenant"]})),
                 {"n1": None, "n2": REASON_ANTI_AFFINITY_RULES, "n3": None}, id="anti-mismatchLabelKeys"),
]


@pytest.mark.parametrize(("nodes", "pods", "incoming", "expected"), AFFINITY_CASES)
def test_inter_pod_affinity_filter(nodes: list[Obj], pods: list[PodInfo], incoming: PodInfo,
                                   expected: dict[str, str | None]) -> None:
    assert verdicts(cluster(nodes, pods), incoming) == expected


def test_namespace_selector_reads_namespace_labels() -> None:
    pods = [pod("w1", labels=WEB, node_name="n1", ns="prod"), pod("w2", labels=WEB, node_name="n2", ns="dev")]
    c = cluster(NODES3, pods, {"default": {}, "prod": {"env": "prod"}, "dev": {"env": "dev"}})
    incoming = pod("x", labels=WEB, affinity=anti(term(WEB, namespaceSelector={"matchLabels": {"env": "prod"}})))
    assert verdicts(c, incoming) == {"n1": REASON_ANTI_AFFINITY_RULES, "n2": None, "n3": None}


def test_pods_without_affinity_get_no_cycle_state() -> None:
    c = cluster(NODES3, [pod("w1", labels=WEB, node_name="n1")])
    assert prefilter(pod("ds", labels={"app": "agent"}), c) is None
    c.set_pod(pod("w2", labels=WEB, node_name="n2", affinity=anti(term(WEB))))
    assert prefilter(pod("ds", labels={"app": "agent"}), c) is None  # the existing term does not match it
    assert prefilter(pod("w3", labels=WEB), c) is not None


def test_existing_anti_affinity_counts_follow_pods_and_node_labels() -> None:
    c = cluster(NODES3, [pod("w1", labels=WEB, node_name="n1", affinity=anti(term(WEB, LABEL_ZONE)))])
    plain = pod("p", labels=WEB)
    assert verdicts(c, plain) == {"n1": REASON_EXISTING_ANTI_AFFINITY, "n2": REASON_EXISTING_ANTI_AFFINITY,
                                  "n3": None}
    c.set_node(node("n1", "b"))  # n1 moves to zone b: the term now covers zone b
    assert verdicts(c, plain) == {"n1": REASON_EXISTING_ANTI_AFFINITY, "n2": None,
                                  "n3": REASON_EXISTING_ANTI_AFFINITY}
    c.remove_pod("default/w1")
    assert not c.anti_terms
    assert prefilter(plain, c) is None


def test_existing_anti_affinity_on_a_ghost_node_counts_once_the_node_arrives() -> None:
    c = cluster([node("n2", "a")], [pod("w1", labels=WEB, node_name="n1", affinity=anti(term(WEB, LABEL_ZONE)))])
    assert prefilter(pod("p", labels=WEB), c) is None  # n1 unknown: no topology yet
    c.set_node(node("n1", "a"))
    assert verdicts(c, pod("p", labels=WEB)) == {"n1": REASON_EXISTING_ANTI_AFFINITY,
                                                 "n2": REASON_EXISTING_ANTI_AFFINITY}
    c.remove_node("n1")
    assert prefilter(pod("p", labels=WEB), c) is None


def test_assumed_pods_count() -> None:
    c = cluster(NODES3, [])
    first = pod("w1", labels=WEB, affinity=anti(term(WEB)))
    c.assume(first, "n2")
    assert verdicts(c, pod("w2", labels=WEB, affinity=anti(term(WEB)))) == {
        "n1": None, "n2": REASON_ANTI_AFFINITY_RULES, "n3": None}


def test_preemption_evicts_lower_priority_pods_matching_the_anti_affinity() -> None:
    low = pod("low", labels=WEB, node_name="n1")
    c = cluster([node("n1", "a")], [low])
    high = pod("high", labels=WEB, priority=100, affinity=anti(term(WEB)))
    cycle = prefilter(high, c)
    assert run_filters(high, c.infos["n1"], cycle) is not None
    victims, st = select_victims_on_node(high, c.infos["n1"], cycle)
    assert st is None and [v.name for v in victims] == ["low"]
    # Equal priority: no victims.
    same = pod("same", labels=WEB, affinity=anti(term(WEB)))
    victims, st = select_victims_on_node(same, c.infos["n1"], prefilter(same, c))
    assert victims == [] and st is not None and st.reasons == ("No preemption victims found for incoming pod",)


def test_preemption_removes_existing_anti_affinity_of_victims() -> None:
    low = pod("low", labels={"app": "db"}, node_name="n1", affinity=anti(term(WEB)))
    c = cluster([node("n1", "a")], [low])
    high = pod("high", labels=WEB, priority=100)
    victims, st = select_victims_on_node(high, c.infos["n1"], prefilter(high, c))
    assert st is None and [v.name for v in victims] == ["low"]


# -- topology spread: filter ----------------------------------------------------------------------

def spread(key: str, max_skew: int = 1, **extra: Any) -> Obj:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": WEB}, **extra}


SPREAD_CASES = [
    pytest.param(NODES3, ["n1"], [spread(LABEL_ZONE)],
                 {"n1": REASON_SPREAD_CONSTRAINTS, "n2": REASON_SPREAD_CONSTRAINTS, "n3": None}, id="zone-skew-1"),
    pytest.param(NODES3, ["n1"], [spread(LABEL_ZONE, 2)],
                 {"n1": None, "n2": None, "n3": None}, id="zone-skew-2"),
    pytest.param(NODES3, ["n1", "n3"], [spread(LABEL_HOSTNAME)],
                 {"n1": REASON_SPREAD_CONSTRAINTS, "n2": None, "n3": REASON_SPREAD_CONSTRAINTS}, id="hostname"),
    pytest.param([node("n1", "a"), node("nz")], [], [spread(LABEL_ZONE)],
                 {"n1": None, "nz": REASON_SPREAD_MISSING_LABEL}, id="missing-label"),
    pytest.param([node("n1", "a"), node("n2", "b")], ["n1"], [spread(LABEL_ZONE, minDomains=3)],
                 {"n1": REASON_SPREAD_CONSTRAINTS, "n2": None}, id="minDomains-min-is-0"),
    pytest.param([node("n1", "a"), node("n2", "a")], ["n1"], [spread(LABEL_ZONE, minDomains=2)],
                 {"n1": REASON_SPREAD_CONSTRAINTS, "n2": REASON_SPREAD_CONSTRAINTS}, id="minDomains-one-zone"),
    pytest.param([node("n1", "a"), node("n2", "b", taints=[{"key": "k", "effect": "NoSchedule"}])], ["n1"],
                 [spread(LABEL_ZONE)],
                 {"n1": REASON_SPREAD_CONSTRAINTS, "n2": "node(s) had untolerated taint {k: }"},
                 id="tainted-domain-counts-by-default"),
    pytest.param([node("n1", "a"), node("n2", "b", taints=[{"key": "k", "effect": "NoSchedule"}])], ["n1"],
                 [spread(LABEL_ZONE, nodeTaintsPolicy="Ignore")],
                 {"n1": REASON_SPREAD_CONSTRAINTS, "n2": "node(s) had untolerated taint {k: }"},
                 id="tainted-domain-counts-with-Ignore"),
    pytest.param([node("n1", "a"), node("n2", "b", taints=[{"key": "k", "effect": "NoSchedule"}])], ["n1"],
                 [spread(LABEL_ZONE, nodeTaintsPolicy="Honor")],
                 {"n1": None, "n2": "node(s) had untolerated taint {k: }"}, id="tainted-domain-excluded-with-Honor"),
]


@pytest.mark.parametrize(("nodes", "placed", "constraints", "expected"), SPREAD_CASES)
def test_topology_spread_filter(nodes: list[Obj], placed: list[str], constraints: list[Obj],
                                expected: dict[str, str | None]) -> None:
    pods = [pod(f"w{i}", labels=WEB, node_name=n) for i, n in enumerate(placed)]
    assert verdicts(cluster(nodes, pods), pod("new", labels=WEB, spread=constraints)) == expected


def test_spread_honours_node_affinity_by_default() -> None:
    nodes = [node("n1", "a", labels={"pool": "x"}), node("n2", "b", labels={"pool": "x"}), node("n3", "c")]
    pods = [pod("w0", labels=WEB, node_name="n1")]
    selector_aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["x"]}]}]}}}
    incoming = pod("new", labels=WEB, spread=[spread(LABEL_ZONE)], affinity=selector_aff)
    c = cluster(nodes, pods)
    # Zone c is not eligible (node affinity), so the minimum is 0 (zone b), not 0 via c.
    assert verdicts(c, incoming)["n1"] == REASON_SPREAD_CONSTRAINTS
    assert verdicts(c, incoming)["n2"] is None


def test_terminating_and_foreign_namespace_pods_do_not_count() -> None:
    p = pod("w0", labels=WEB, node_name="n1")
    p.terminating = True
    c = cluster(NODES3, [p, pod("w1", labels=WEB, node_name="n1", ns="other")])
    assert verdicts(c, pod("new", labels=WEB, spread=[spread(LABEL_HOSTNAME)])) == {
        "n1": None, "n2": None, "n3": None}


def test_critical_paths_track_the_minimum() -> None:
    p = CriticalPaths()
    for value, n in (("a", 3), ("b", 1), ("c", 2)):
        p.update(value, n)
    assert p.min == 1
    p.update("b", 4)  # as preemption adds a pod back
    assert p.min == 2


# -- parsing -------------------------------------------------------------------------------------

def test_term_defaults_to_the_pods_namespace_and_merges_label_keys() -> None:
    terms = compile_pod_affinity({"affinity": anti(term(WEB, matchLabelKeys=["v"], mismatchLabelKeys=["t"]))},
                                 "ns1", {"app": "web", "v": "2", "t": "x"})
    assert terms is not None
    (t,) = terms.required_anti
    assert t.namespaces == frozenset({"ns1"}) and t.namespace_selector.matches_nothing
    assert str(t.selector) == "app=web,t notin (x),v in (2)"


def test_spread_constraint_defaults() -> None:
    (c,) = compile_spread_constraints([spread(LABEL_ZONE, matchLabelKeys=["h"])], {"h": "1"}, "DoNotSchedule")
    assert (c.min_domains, c.honor_node_affinity, c.honor_node_taints) == (1, True, False)
    assert str(c.selector) == "app=web,h=1"
    assert compile_spread_constraints([spread(LABEL_ZONE)], {}, SCHEDULE_ANYWAY) == ()


def test_default_spread_selector() -> None:
    rs = label_selector_from_dict({"matchLabels": {"app": "web", "hash": "1"}})
    sel = default_spread_selector({"app": "web", "hash": "1"}, [{"app": "web"}, {"app": "db"}, None], rs)
    assert sel.matches({"app": "web", "hash": "1"})
    assert not sel.matches({"app": "web", "hash": "2"})
    assert default_spread_selector({"app": "web"}, [{"app": "db"}], None).empty


# -- scoring ---------------------------------------------------------------------------------------

def test_least_allocated_and_balanced_use_upstreams_integer_arithmetic() -> None:
    c = cluster([node("n1", cpu="4")], [pod("a", node_name="n1", cpu="1")])
    p = pod("b", cpu="1")
    info = c.infos["n1"]
    # cpu: (4000-2000)*100/4000 = 50; memory: (16Gi-2Gi)*100/16Gi = 87 -> (50+87)//2
    assert least_allocated_score(p, info) == (50 + 87) // 2
    # fractions 0.5 and 0.125 -> std 0.1875 -> int(81.25)
    assert balanced_allocation_score(p, info) == 81
    assert pod_nonzero_requests({"containers": [{"name": "c"}, {"name": "d", "resources": {
        "requests": {"cpu": "0"}}}]}) == (100, 400 * 1024 * 1024)


def test_normalizers() -> None:
    assert default_normalize([0, 2, 4], reverse=False) == [0, 50, 100]
    assert default_normalize([0, 0], reverse=True) == [100, 100]
    assert default_normalize([1, 0], reverse=True) == [0, 100]
    assert normalize([5, 2, -1]) == [40, 100, 0]
    assert normalize([0, 0]) == [100, 100]


def test_default_spreading_puts_replicas_on_distinct_nodes() -> None:
    nodes = [node(f"n{i}", "a" if i < 2 else "b") for i in range(4)]
    c = cluster(nodes, [])
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u", "controller": True}
    selector = label_selector_from_dict({"matchLabels": WEB})
    placed = []
    for i in range(4):
        p = pod(f"w{i}", labels=WEB, owner=owner)
        feasible = [c.infos[n] for n in sorted(c.live) if run_filters(p, c.infos[n]) is None]
        choice = select_host(p, feasible, c, default_selector=lambda _p: selector)
        c.assume(p, choice.name)
        placed.append(choice.name)
    assert sorted(placed) == ["n0", "n1", "n2", "n3"]
    # Zones alternate: the second replica goes to the other zone.
    assert {placed[0][1:] < "2", placed[1][1:] < "2"} == {True, False}


def test_preferred_anti_affinity_and_taints_steer_the_choice() -> None:
    nodes = [node("n1", "a"), node("n2", "a", taints=[{"key": "k", "effect": "PreferNoSchedule"}]), node("n3", "b")]
    c = cluster(nodes, [pod("w0", labels=WEB, node_name="n3")])
    pref = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": term(WEB, LABEL_ZONE)}]}}
    p = pod("w1", labels=WEB, affinity=pref)
    assert select_host(p, [c.infos[n] for n in ("n3", "n2", "n1")], c).name == "n1"


def test_existing_pods_preferred_affinity_attracts() -> None:
    attract = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "podAffinityTerm": term({"app": "client"})}]}}
    c = cluster(NODES3, [pod("srv", labels={"app": "server"}, node_name="n2", affinity=attract)])
    p = pod("cli", labels={"app": "client"})
    assert select_host(p, [c.infos[n] for n in ("n1", "n2", "n3")], c).name == "n2"


def test_system_default_constraints_are_upstreams() -> None:
    assert [(c["topologyKey"], c["maxSkew"], c["whenUnsatisfiable"]) for c in SYSTEM_DEFAULT_CONSTRAINTS] == [
        (LABEL_HOSTNAME, 3, "ScheduleAnyway"), (LABEL_ZONE, 5, "ScheduleAnyway")]


def test_scheduler_default_selector_reads_services_and_the_controller() -> None:
    from everynode.scheduler.scheduler import spread_selector

    svc = {"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}
    other = {"metadata": {"name": "db", "namespace": "default"}, "spec": {"selector": {"app": "db"}}}
    rs = {"metadata": {"name": "web-1", "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"app": "web", "pod-template-hash": "1"}}}}
    rc = {"metadata": {"name": "legacy", "namespace": "default"}, "spec": {"selector": {"tier": "old"}}}
    controllers = {("replicasets.apps", "default", "web-1"): rs, ("replicationcontrollers", "default", "legacy"): rc}

    def selector(p: PodInfo) -> LabelSelector:
        return spread_selector(p, [svc, other], lambda *key: controllers.get(key))

    labels = {"app": "web", "pod-template-hash": "1", "tier": "old"}
    owned = pod("w", labels=labels, owner={"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1",
                                           "uid": "u", "controller": True})
    sel = selector(owned)
    assert sel.matches(labels) and not sel.matches({"app": "web", "pod-template-hash": "2"})
    by_rc = selector(pod("r", labels=labels, owner={
        "apiVersion": "v1", "kind": "ReplicationController", "name": "legacy", "uid": "u", "controller": True}))
    assert by_rc.matches(labels) and not by_rc.matches({"app": "web"})
    # A DaemonSet owner contributes nothing; the Service still selects the pod.
    ds_owned = pod("d", labels={"app": "web"}, owner={"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "x",
                                                      "uid": "u", "controller": True})
    assert str(selector(ds_owned)) == "app=web"
    assert selector(pod("lonely", labels={"app": "batch"})).empty
