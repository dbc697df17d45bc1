"""Scheduler filters, the FailedScheduling message and preemption victim selection (pure)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from everynode.scheduler.filters import (
    PIN_EXCLUDED,
    REASON_NODE_AFFINITY,
    REASON_NODE_PORTS,
    REASON_UNSCHEDULABLE,
    Status,
    fit_error_message,
    node_affinity_filter,
    node_name_filter,
    node_ports_filter,
    node_resources_fit_filter,
    node_unschedulable_filter,
    run_filters,
    taint_toleration_filter,
)
from everynode.scheduler.nodeinfo import NodeInfo
from everynode.scheduler.podinfo import PodInfo, pod_host_ports, pod_requests
from everynode.scheduler.preemption import (
    eligible_to_preempt,
    find_preemption,
    select_victims_on_node,
)
from everynode.scheduler.scheduler import num_feasible_nodes_to_find

Obj = dict[str, Any]
SYSTEM_NODE_CRITICAL = 2000001000


def node(name: str = "n1", *, cpu: str = "4", memory: str = "16Gi", pods: str = "110",
         labels: dict[str, str] | None = None, taints: list[Obj] | None = None,
         unschedulable: bool = False) -> NodeInfo:
    obj: Obj = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}},
    }
    if taints:
        obj["spec"]["taints"] = taints
    if unschedulable:
        obj["spec"]["unschedulable"] = True
    return NodeInfo(obj)


def pod(name: str = "p", *, cpu: str | None = None, memory: str | None = None, priority: int | None = None,
        host_ports: list[int] | None = None, host_network: bool = False, container_ports: list[int] | None = None,
        tolerations: list[Obj] | None = None, node_selector: dict[str, str] | None = None,
        pin: str | None = None, node_name: str | None = None, preemption_policy: str | None = None,
        created: str = "2024-01-01T00:00:00Z") -> PodInfo:
    requests = {}
    if cpu:
        requests["cpu"] = cpu
    if memory:
        requests["memory"] = memory
    container: Obj = {"name": "c", "image": "nginx"}
    if requests:
        container["resources"] = {"requests": requests}
    ports = [{"containerPort": p, "hostPort": p} for p in host_ports or ()]
    ports += [{"containerPort": p} for p in container_ports or ()]
    if ports:
        container["ports"] = ports
    spec: Obj = {"containers": [container]}
    if priority is not None:
        spec["priority"] = priority
    if host_network:
        spec["hostNetwork"] = True
    if tolerations:
        spec["tolerations"] = tolerations
    if node_selector:
        spec["nodeSelector"] = node_selector
    if node_name:
        spec["nodeName"] = node_name
    if preemption_policy:
        spec["preemptionPolicy"] = preemption_policy
    if pin:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [pin]}]}]}}}
    return PodInfo({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                                 "creationTimestamp": created},
                    "spec": spec})


# -- pod facts ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "expected"), [
    ({"containers": [{"name": "a"}]}, (0, 0, {})),
    ({"containers": [{"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
                     {"name": "b", "resources": {"requests": {"cpu": "1"}}}]}, (1250, 64 * 2**20, {})),
    # an init container bigger than the sum of the app containers sets the request
    ({"containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}],
      "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}]}, (2000, 0, {})),
    # sidecars (restartPolicy Always) add up with the containers
    ({"containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}],
      "initContainers": [{"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}}}]},
     (300, 0, {})),
    ({"containers": [{"name": "a", "resources": {"requests": {"nvidia.com/gpu": "1"}}}],
      "overhead": {"cpu": "10m"}}, (10, 0, {"nvidia.com/gpu": 1})),
])
def test_pod_requests(spec: Obj, expected: tuple[int, int, dict[str, int]]) -> None:
    assert pod_requests(spec) == expected


@pytest.mark.parametrize(("spec", "expected"), [
    ({"containers": [{"name": "a", "ports": [{"containerPort": 80}]}]}, ()),
    ({"containers": [{"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}]}]},
     (("0.0.0.0", "TCP", 8080),)),
    ({"containers": [{"name": "a", "ports": [{"containerPort": 53, "hostPort": 53, "protocol": "UDP",
                                               "hostIP": "10.0.0.1"}]}]}, (("10.0.0.1", "UDP", 53),)),
    # hostNetwork: the container port is a host port
    ({"hostNetwork": True, "containers": [{"name": "a", "ports": [{"containerPort": 9100}]}]},
     (("0.0.0.0", "TCP", 9100),)),
])
def test_pod_host_ports(spec: Obj, expected: tuple[Any, ...]) -> None:
    assert pod_host_ports(spec) == expected


def test_the_pods_of_one_template_share_their_container_facts_and_others_get_their_own() -> None:
    """PodInfo's requests and host ports are remembered by the identity of the containers (the
    pods of one template store the same objects): shared where those are shared, and right for
    every other spec, equal content or not, host network or not."""
    containers = [{"name": "a", "ports": [{"containerPort": 9100}],
                   "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}]
    a = PodInfo({"metadata": {"name": "a"}, "spec": {"containers": containers, "nodeName": "n1"}})
    b = PodInfo({"metadata": {"name": "b"}, "spec": {"containers": containers}})
    host = PodInfo({"metadata": {"name": "h"}, "spec": {"containers": containers, "hostNetwork": True}})
    bigger = PodInfo({"metadata": {"name": "c"}, "spec": {
        "containers": [{**containers[0], "resources": {"requests": {"cpu": "1"}}}],
        "overhead": {"memory": "1Mi"}}})
    assert (a.milli_cpu, a.memory, a.host_ports, a.nonzero_milli_cpu) == (250, 64 * 2**20, (), 250)
    assert a.scalar is b.scalar and (b.milli_cpu, b.memory, b.host_ports) == (250, 64 * 2**20, ())
    assert host.host_ports == (("0.0.0.0", "TCP", 9100),) and host.milli_cpu == 250
    assert (bigger.milli_cpu, bigger.memory, bigger.nonzero_memory) == (1000, 2**20, 2**20 + 200 * 2**20)


# -- filters -----------------------------------------------------------------------------------------

def test_node_name_filter() -> None:
    assert node_name_filter(pod(node_name="n1"), node("n1")) is None
    assert node_name_filter(pod(node_name="n2"), node("n1")).reasons == ("node(s) didn't match the requested node name",)
    assert node_name_filter(pod(), node("n1")) is None


@pytest.mark.parametrize(("tolerations", "fits"), [
    (None, False),
    ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}], True),
    ([{"operator": "Exists"}], True),
    ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}], False),
])
def test_node_unschedulable_filter(tolerations: list[Obj] | None, fits: bool) -> None:
    st = node_unschedulable_filter(pod(tolerations=tolerations), node(unschedulable=True))
    assert (st is None) == fits
    if st is not None:
        assert st == Status(REASON_UNSCHEDULABLE, unresolvable=True)
    assert node_unschedulable_filter(pod(), node()) is None


@pytest.mark.parametrize(("taints", "tolerations", "reason"), [
    ([{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}], None,
     "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"),
    ([{"key": "dedicated", "value": "gpu", "effect": "NoExecute"}], None,
     "node(s) had untolerated taint {dedicated: gpu}"),
    ([{"key": "dedicated", "value": "gpu", "effect": "PreferNoSchedule"}], None, None),
    ([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
     [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}], None),
    ([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
     [{"key": "dedicated", "operator": "Equal", "value": "cpu", "effect": "NoSchedule"}],
     "node(s) had untolerated taint {dedicated: gpu}"),
])
def test_taint_toleration_filter(taints: list[Obj], tolerations: list[Obj] | None, reason: str | None) -> None:
    st = taint_toleration_filter(pod(tolerations=tolerations), node(taints=taints))
    if reason is None:
        assert st is None
    else:
        assert st == Status(reason, unresolvable=True)


@pytest.mark.parametrize(("pi", "labels", "fits"), [
    (pod(), {}, True),
    (pod(node_selector={"disk": "ssd"}), {"disk": "ssd"}, True),
    (pod(node_selector={"disk": "ssd"}), {"disk": "hdd"}, False),
    (pod(pin="n1"), {}, True),
    (pod(pin="n2"), {}, False),
    (pod(pin="n1", node_selector={"disk": "ssd"}), {}, False),
])
def test_node_affinity_filter(pi: PodInfo, labels: dict[str, str], fits: bool) -> None:
    st = node_affinity_filter(pi, node("n1", labels=labels))
    assert (st is None) == fits
    if not fits:
        assert st.reasons == (REASON_NODE_AFFINITY,) and st.unresolvable


@pytest.mark.parametrize(("existing", "wanted", "fits"), [
    ([], [("0.0.0.0", "TCP", 80)], True),
    ([("0.0.0.0", "TCP", 80)], [("0.0.0.0", "TCP", 80)], False),
    ([("0.0.0.0", "TCP", 80)], [("0.0.0.0", "UDP", 80)], True),
    ([("10.0.0.1", "TCP", 80)], [("10.0.0.2", "TCP", 80)], True),
    ([("10.0.0.1", "TCP", 80)], [("10.0.0.1", "TCP", 80)], False),
    ([("10.0.0.1", "TCP", 80)], [("0.0.0.0", "TCP", 80)], False),
    ([("0.0.0.0", "TCP", 80)], [("10.0.0.1", "TCP", 80)], False),
])
def test_node_ports_filter(existing: list[tuple[str, str, int]], wanted: list[tuple[str, str, int]],
                           fits: bool) -> None:
    n = node()
    other = pod("other")
    other.host_ports = tuple(existing)
    n.add_pod(other)
    p = pod()
    p.host_ports = tuple(wanted)
    st = node_ports_filter(p, n)
    assert (st is None) == fits
    if not fits:
        assert st == Status(REASON_NODE_PORTS)


def test_ports_are_released_when_the_pod_leaves() -> None:
    n = node()
    n.add_pod(pod("a", host_ports=[80]))
    assert node_ports_filter(pod("b", host_ports=[80]), n) is not None
    n.remove_pod("default/a")
    assert node_ports_filter(pod("b", host_ports=[80]), n) is None
    assert n.ports == {}


def test_host_network_pods_conflict_on_container_ports() -> None:
    n = node()
    n.add_pod(pod("a", host_network=True, container_ports=[9100]))
    assert node_ports_filter(pod("b", host_network=True, container_ports=[9100]), n) is not None
    assert node_ports_filter(pod("c", container_ports=[9100]), n) is None


@pytest.mark.parametrize(("existing", "new", "alloc", "reasons", "unresolvable"), [
    ([], ("1", "1Gi"), ("4", "16Gi", "110"), None, False),
    ([("3", "1Gi")], ("2", "1Gi"), ("4", "16Gi", "110"), ("Insufficient cpu",), False),
    ([("1", "15Gi")], ("1", "2Gi"), ("4", "16Gi", "110"), ("Insufficient memory",), False),
    ([("3", "15Gi")], ("2", "2Gi"), ("4", "16Gi", "110"), ("Insufficient cpu", "Insufficient memory"), False),
    ([], ("8", "1Gi"), ("4", "16Gi", "110"), ("Insufficient cpu",), True),
    ([(None, None)], (None, None), ("4", "16Gi", "1"), ("Too many pods",), False),
    ([], (None, None), ("4", "16Gi", "0"), ("Too many pods",), True),
])
def test_node_resources_fit_filter(existing: list[tuple[str | None, str | None]], new: tuple[str | None, str | None],
                                   alloc: tuple[str, str, str], reasons: tuple[str, ...] | None,
                                   unresolvable: bool) -> None:
    n = node(cpu=alloc[0], memory=alloc[1], pods=alloc[2])
    for i, (cpu, mem) in enumerate(existing):
        n.add_pod(pod(f"e{i}", cpu=cpu, memory=mem))
    st = node_resources_fit_filter(pod(cpu=new[0], memory=new[1]), n)
    if reasons is None:
        assert st is None
    else:
        assert st is not None and st.reasons == reasons and st.unresolvable == unresolvable


def test_filters_run_in_upstream_order_and_stop_at_the_first_rejection() -> None:
    n = node(unschedulable=True, taints=[{"key": "k", "effect": "NoSchedule"}], labels={"a": "b"})
    st = run_filters(pod(node_selector={"a": "c"}, host_ports=[80]), n)
    assert st is not None and st.reasons == (REASON_UNSCHEDULABLE,)
    n2 = node(taints=[{"key": "k", "effect": "NoSchedule"}])
    assert run_filters(pod(node_selector={"a": "c"}), n2).reasons == ("node(s) had untolerated taint {k: }",)


# -- messages ----------------------------------------------------------------------------------------

def test_fit_error_message_counts_and_sorts_reasons() -> None:
    counts = Counter({REASON_NODE_AFFINITY: 2, REASON_NODE_PORTS: 1})
    msg = fit_error_message(3, counts, postfilter_msg="preemption: 0/3 nodes are available: "
                                                      "3 Preemption is not helpful for scheduling.")
    assert msg == ("0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
                   "2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: "
                   "3 Preemption is not helpful for scheduling.")


def test_fit_error_message_sorts_as_strings_including_counts() -> None:
    counts = Counter({"Insufficient cpu": 12, "node(s) were unschedulable": 3})
    assert fit_error_message(15, counts) == (
        "0/15 nodes are available: 12 Insufficient cpu, 3 node(s) were unschedulable.")


def test_fit_error_message_with_prefilter_message() -> None:
    assert fit_error_message(2, Counter(), prefilter_msg="pod affinity terms conflict") == (
        "0/2 nodes are available: pod affinity terms conflict.")


def test_pin_excluded_reason() -> None:
    assert PIN_EXCLUDED.reasons == ("node(s) didn't satisfy plugin(s) [NodeAffinity]",)


@pytest.mark.parametrize(("n", "expected"), [(0, 0), (5, 5), (99, 99), (100, 100), (1000, 420), (5000, 500),
                                              (65000, 3250)])
def test_num_feasible_nodes_to_find(n: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(n) == expected


# -- preemption --------------------------------------------------------------------------------------

def full_node() -> NodeInfo:
    """A 4-CPU node with two low-priority pods of 2 CPUs each."""
    n = node("n1", cpu="4")
    n.add_pod(pod("low-a", cpu="2", priority=0, created="2024-01-01T00:00:00Z"))
    n.add_pod(pod("low-b", cpu="2", priority=100, created="2024-01-01T00:00:01Z"))
    return n


def test_system_node_critical_ds_pod_evicts_a_low_priority_pod_on_a_full_node() -> None:
    n = full_node()
    agent = pod("agent", cpu="1", priority=SYSTEM_NODE_CRITICAL, pin="n1")
    assert run_filters(agent, n).reasons == ("Insufficient cpu",)
    victims, st = select_victims_on_node(agent, n)
    assert st is None
    # Minimal: one victim is enough, and it is the least important one (lowest priority).
    assert [v.name for v in victims] == ["low-a"]


def test_low_priority_pod_never_evicts_a_critical_one() -> None:
    n = node("n1", cpu="4")
    n.add_pod(pod("agent", cpu="3", priority=SYSTEM_NODE_CRITICAL))
    victims, st = select_victims_on_node(pod("app", cpu="2", priority=0), n)
    assert victims == [] and st is not None
    assert st.reasons == ("No preemption victims found for incoming pod",)


def test_equal_priority_never_preempts() -> None:
    n = node("n1", cpu="4")
    n.add_pod(pod("a", cpu="3", priority=1000))
    victims, st = select_victims_on_node(pod("b", cpu="2", priority=1000), n)
    assert victims == [] and st is not None


def test_no_candidate_when_evicting_all_lower_pods_is_not_enough() -> None:
    n = node("n1", cpu="4")
    n.add_pod(pod("high", cpu="3", priority=5000))
    n.add_pod(pod("low", cpu="1", priority=0))
    victims, st = select_victims_on_node(pod("mid", cpu="2", priority=1000), n)
    assert victims == [] and st is not None and st.reasons == ("Insufficient cpu",)


def test_port_conflict_is_resolved_by_evicting_the_port_holder() -> None:
    n = node("n1")
    n.add_pod(pod("holder", host_ports=[80], priority=0))
    n.add_pod(pod("bystander", cpu="1", priority=0))
    victims, st = select_victims_on_node(pod("agent", host_ports=[80], priority=SYSTEM_NODE_CRITICAL), n)
    assert st is None and [v.name for v in victims] == ["holder"]


def test_preemption_policy_never() -> None:
    assert eligible_to_preempt(pod(priority=10, preemption_policy="Never"), None) == (
        "not eligible due to preemptionPolicy=Never.")
    assert eligible_to_preempt(pod(priority=10), None) is None


def test_find_preemption_message_when_nothing_helps() -> None:
    n = node("n1", cpu="4")
    n.add_pod(pod("a", cpu="3", priority=1000))
    result = find_preemption(pod("b", cpu="2", priority=1000), [n], 3)
    assert result.node is None
    assert result.message == ("preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
                              "2 Preemption is not helpful for scheduling.")


def test_find_preemption_prefers_the_node_with_lower_priority_victims() -> None:
    n1 = node("n1", cpu="2")
    n1.add_pod(pod("p1", cpu="2", priority=500))
    n2 = node("n2", cpu="2")
    n2.add_pod(pod("p2", cpu="2", priority=100))
    result = find_preemption(pod("x", cpu="1", priority=1000), [n1, n2], 2)
    assert result.node == "n2" and [v.name for v in result.victims] == ["p2"]
