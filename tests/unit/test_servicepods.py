"""Pure rules shared by the Endpoints and EndpointSlice controllers, and the slice plan."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.controllers.endpointslice import (
    CONTROLLER_NAME,
    desired_endpoints,
    plan_slices,
    slice_labels,
)
from everynode.controllers.servicepods import (
    ServiceMembership,
    TriggerTimeTracker,
    build_subsets,
    find_port,
    pod_endpoints_changed,
    should_pod_be_in_endpoints,
    slice_endpoint,
    subsets_equal,
    truncate_subsets,
)

Obj = dict[str, Any]


def pod(name: str, ip: str | None = "10.244.0.1", *, ready: bool = True, labels: Obj | None = None,
        node: str = "worker-1", phase: str = "Running", deleting: bool = False, ports: list[Obj] | None = None,
        hostname: str | None = None, subdomain: str | None = None, rv: str = "1", ns: str = "default",
        ready_since: str = "2024-01-01T00:00:00Z") -> Obj:
    spec: Obj = {"nodeName": node, "containers": [{"name": "c", "image": "i", "ports": ports or []}]}
    if hostname:
        spec["hostname"] = hostname
    if subdomain:
        spec["subdomain"] = subdomain
    status: Obj = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                                    "lastTransitionTime": ready_since}]}
    if ip:
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
    md: Obj = {"name": name, "namespace": ns, "uid": f"uid-{name}", "labels": labels or {"app": "x"},
               "resourceVersion": rv}
    if deleting:
        md["deletionTimestamp"] = "2024-01-01T00:00:10Z"
    return {"metadata": md, "spec": spec, "status": status}


def service(name: str = "svc", *, ports: list[Obj] | None = None, headless: bool = False,
            publish: bool = False, selector: Obj | None = None, labels: Obj | None = None) -> Obj:
    spec: Obj = {"selector": {"app": "x"} if selector is None else selector,
                 "ports": [{"name": "metrics", "port": 80, "targetPort": "metrics", "protocol": "TCP"}]
                 if ports is None else ports,
                 "clusterIP": "None" if headless else "10.96.0.20", "ipFamilies": ["IPv4"]}
    if publish:
        spec["publishNotReadyAddresses"] = True
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": labels or {},
                         "creationTimestamp": "2023-12-31T00:00:00Z"}, "spec": spec}


METRICS = [{"name": "metrics", "containerPort": 9100, "protocol": "TCP"}]


# --- port resolution ------------------------------------------------------------------------


@pytest.mark.parametrize(("svc_port", "container_ports", "init", "expected"), [
    ({"port": 80, "targetPort": 8080, "protocol": "TCP"}, [], [], 8080),
    ({"port": 80, "protocol": "TCP"}, [], [], 80),                       # no targetPort: the port
    ({"port": 80, "targetPort": "metrics", "protocol": "TCP"}, METRICS, [], 9100),
    ({"port": 80, "targetPort": "metrics"}, METRICS, [], 9100),           # protocol defaults to TCP
    ({"port": 80, "targetPort": "metrics", "protocol": "UDP"}, METRICS, [], None),  # protocol must match
    ({"port": 80, "targetPort": "other", "protocol": "TCP"}, METRICS, [], None),
    ({"port": 80, "targetPort": "side", "protocol": "TCP"}, [],
     [{"name": "s", "restartPolicy": "Always", "ports": [{"name": "side", "containerPort": 7000}]}], 7000),
    ({"port": 80, "targetPort": "side", "protocol": "TCP"}, [],
     [{"name": "s", "ports": [{"name": "side", "containerPort": 7000}]}], None),  # plain init: no
])
def test_find_port(svc_port: Obj, container_ports: list[Obj], init: list[Obj], expected: int | None) -> None:
    p = pod("p", ports=container_ports)
    p["spec"]["initContainers"] = init
    assert find_port(p, svc_port) == expected


@pytest.mark.parametrize(("kwargs", "include_terminating", "expected"), [
    ({}, False, True),
    ({"ready": False}, False, True),          # not ready still listed (as not ready)
    ({"ip": None}, False, False),             # no IP yet
    ({"phase": "Succeeded"}, False, False),   # terminal
    ({"phase": "Failed"}, True, False),
    ({"deleting": True}, False, False),       # terminating
    ({"deleting": True}, True, True),
])
def test_should_pod_be_in_endpoints(kwargs: Obj, include_terminating: bool, expected: bool) -> None:
    assert should_pod_be_in_endpoints(pod("p", **kwargs), include_terminating=include_terminating) is expected


# --- Endpoints subsets --------------------------------------------------------------------------


def addr(name: str, ip: str, *, node: str = "worker-1", hostname: str | None = None) -> Obj:
    a: Obj = {"ip": ip}
    if hostname:
        a["hostname"] = hostname
    a["nodeName"] = node
    a["targetRef"] = {"kind": "Pod", "namespace": "default", "name": name, "uid": f"uid-{name}"}
    return a


PORT = {"name": "metrics", "port": 9100, "protocol": "TCP"}


@pytest.mark.parametrize(("svc", "pods", "expected"), [
    pytest.param(service(), [pod("a", "10.0.0.2", ports=METRICS), pod("b", "10.0.0.10", ports=METRICS)],
                 [{"addresses": [addr("b", "10.0.0.10"), addr("a", "10.0.0.2")], "ports": [PORT]}],
                 id="ready-sorted-bytewise"),
    pytest.param(service(), [pod("a", "10.0.0.1", ports=METRICS), pod("b", "10.0.0.2", ready=False, ports=METRICS)],
                 [{"addresses": [addr("a", "10.0.0.1")], "notReadyAddresses": [addr("b", "10.0.0.2")],
                   "ports": [PORT]}], id="not-ready"),
    pytest.param(service(publish=True), [pod("b", "10.0.0.2", ready=False, ports=METRICS)],
                 [{"addresses": [addr("b", "10.0.0.2")], "ports": [PORT]}], id="publish-not-ready"),
    pytest.param(service(), [pod("a", "10.0.0.1", ports=METRICS), pod("b", None, ports=METRICS),
                             pod("c", "10.0.0.3", phase="Failed", ports=METRICS),
                             pod("d", "10.0.0.4", deleting=True, ports=METRICS)],
                 [{"addresses": [addr("a", "10.0.0.1")], "ports": [PORT]}], id="skipped-pods"),
    pytest.param(service(), [pod("a", "10.0.0.1")], [], id="named-port-unresolved"),
    pytest.param(service(ports=[{"name": "metrics", "port": 80, "targetPort": "metrics", "protocol": "TCP"},
                                {"name": "web", "port": 81, "targetPort": 8080, "protocol": "TCP"}]),
                 [pod("a", "10.0.0.1", ports=METRICS), pod("b", "10.0.0.2")],
                 [{"addresses": [addr("a", "10.0.0.1")], "ports": [PORT]},
                  {"addresses": [addr("a", "10.0.0.1"), addr("b", "10.0.0.2")],
                   "ports": [{"name": "web", "port": 8080, "protocol": "TCP"}]}],
                 id="one-subset-per-distinct-address-set"),
    pytest.param(service(ports=[{"name": "metrics", "port": 80, "targetPort": "metrics", "protocol": "TCP"},
                                {"name": "web", "port": 81, "targetPort": 8080, "protocol": "TCP"}]),
                 [pod("a", "10.0.0.1", ports=METRICS), pod("b", "10.0.0.2", ports=METRICS)],
                 [{"addresses": [addr("a", "10.0.0.1"), addr("b", "10.0.0.2")],
                   "ports": [PORT, {"name": "web", "port": 8080, "protocol": "TCP"}]}],
                 id="ports-sharing-addresses-share-a-subset"),
    pytest.param(service(headless=True, ports=[]),
                 [pod("a", "10.0.0.1", hostname="a", subdomain="svc"), pod("b", "10.0.0.2", hostname="b")],
                 [{"addresses": [addr("a", "10.0.0.1", hostname="a"), addr("b", "10.0.0.2")]}],
                 id="headless-without-ports-hostname-needs-subdomain"),
    pytest.param(service(ports=[]), [pod("a", "10.0.0.1")], [], id="cluster-ip-without-ports"),
])
def test_build_subsets(svc: Obj, pods: list[Obj], expected: list[Obj]) -> None:
    subsets, _ready, _not_ready = build_subsets(svc, pods)
    assert subsets == expected


def test_not_ready_trumps_ready_for_the_same_address() -> None:
    # Two pods sharing an IP (hostNetwork on one node) with the same uid are one address.
    a = pod("a", "10.0.0.1", ports=METRICS)
    a2 = pod("a", "10.0.0.1", ready=False, ports=METRICS)
    subsets, _, _ = build_subsets(service(), [a, a2])
    assert subsets == [{"notReadyAddresses": [addr("a", "10.0.0.1")], "ports": [PORT]}]


def test_subsets_compare_ignores_target_resource_version() -> None:
    a = [{"addresses": [addr("a", "10.0.0.1")], "ports": [PORT]}]
    b = [{"addresses": [{**addr("a", "10.0.0.1"), "targetRef": {**addr("a", "10.0.0.1")["targetRef"],
                                                                  "resourceVersion": "9"}}], "ports": [PORT]}]
    assert subsets_equal(a, b)
    assert not subsets_equal(a, [{"addresses": [addr("a", "10.0.0.2")], "ports": [PORT]}])


def test_truncate_keeps_ready_first() -> None:
    subsets = [{"addresses": [addr(f"r{i}", f"10.0.0.{i}") for i in range(3)],
                "notReadyAddresses": [addr(f"n{i}", f"10.0.1.{i}") for i in range(3)], "ports": [PORT]}]
    assert truncate_subsets(subsets, 4)
    assert len(subsets[0]["addresses"]) == 3 and len(subsets[0]["notReadyAddresses"]) == 1
    assert not truncate_subsets(subsets, 4)


# --- membership and change detection --------------------------------------------------------


@pytest.mark.parametrize(("change", "expected"), [
    ({"status": {"conditions": [{"type": "Ready", "status": "False"}], "podIP": "10.244.0.1",
                 "podIPs": [{"ip": "10.244.0.1"}]}}, (True, False)),
    ({"status": {"conditions": [{"type": "Ready", "status": "True"}], "podIP": "10.244.0.9",
                 "podIPs": [{"ip": "10.244.0.9"}]}}, (True, False)),
    ({"metadata": {"labels": {"app": "y"}}}, (False, True)),
    ({"metadata": {"annotations": {"x": "y"}}}, (False, False)),
    ({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}}, (True, False)),
    ({"spec": {"hostname": "h"}}, (False, True)),
])
def test_pod_endpoints_changed(change: Obj, expected: tuple[bool, bool]) -> None:
    old = pod("p")
    new = {k: {**old[k], **change.get(k, {})} for k in old}
    assert pod_endpoints_changed(old, new) == expected


def test_membership_maps_pods_to_services() -> None:
    m = ServiceMembership()
    m.set(service("a", selector={"app": "x"}))
    m.set(service("b", selector={"app": "x", "tier": "1"}))
    m.set(service("c", selector={}))  # empty selector: not managed
    other_ns = service("d")
    other_ns["metadata"]["namespace"] = "other"
    m.set(other_ns)
    assert m.services_for(pod("p")) == {"default/a"}
    assert m.services_for(pod("p", labels={"app": "x", "tier": "1"})) == {"default/a", "default/b"}
    # label change only: the services not common to both (a stays, b joins)
    old, new = pod("p"), pod("p", labels={"app": "x", "tier": "1"}, rv="2")
    assert m.services_to_update(old, new) == {"default/b"}
    # readiness and label change: all of them
    new2 = pod("p", labels={"app": "x", "tier": "1"}, ready=False, rv="3")
    assert m.services_to_update(old, new2) == {"default/a", "default/b"}
    assert m.services_to_update(old, pod("p", rv="1")) == set()  # same resourceVersion: resync
    m.remove(service("a"))
    assert m.services_for(pod("p")) == set()


def test_trigger_time_is_the_earliest_unseen_change() -> None:
    tracker = TriggerTimeTracker()
    svc = service()
    p1 = pod("a", ready_since="2024-01-01T00:00:05Z")
    p2 = pod("b", ready_since="2024-01-01T00:00:03Z")
    assert tracker.compute(svc, [p1, p2]) == "2023-12-31T00:00:00Z"  # the service's creation
    assert tracker.compute(svc, [p1, p2]) is None                     # nothing new
    p1b = pod("a", ready_since="2024-01-01T00:01:00Z")
    p2b = pod("b", ready_since="2024-01-01T00:00:50Z")
    assert tracker.compute(svc, [p1b, p2b]) == "2024-01-01T00:00:50Z"


# --- EndpointSlices ---------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "svc_kwargs", "conditions"), [
    ({}, {}, {"ready": True, "serving": True, "terminating": False}),
    ({"ready": False}, {}, {"ready": False, "serving": False, "terminating": False}),
    ({"deleting": True}, {}, {"ready": False, "serving": True, "terminating": True}),
    ({"ready": False}, {"publish": True}, {"ready": True, "serving": False, "terminating": False}),
])
def test_slice_endpoint_conditions(kwargs: Obj, svc_kwargs: Obj, conditions: Obj) -> None:
    ep = slice_endpoint(service(**svc_kwargs), pod("a", "10.0.0.1", **kwargs))
    assert ep == {"addresses": ["10.0.0.1"], "conditions": conditions,
                  "targetRef": {"kind": "Pod", "namespace": "default", "name": "a", "uid": "uid-a"},
                  "nodeName": "worker-1"}


def existing_slice(svc: Obj, name: str, endpoints: list[Obj], ports: list[Obj] | None = None) -> Obj:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": "1", "labels": slice_labels(svc),
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": svc["metadata"]["name"],
                                              "uid": svc["metadata"]["uid"], "controller": True,
                                              "blockOwnerDeletion": True}]},
            "addressType": "IPv4", "endpoints": endpoints,
            "ports": [{"name": "metrics", "port": 9100, "protocol": "TCP"}] if ports is None else ports}


def test_plan_new_service_creates_one_labelled_owned_slice() -> None:
    svc = service(labels={"team": "infra"})
    pods = [pod(f"p{i}", f"10.0.0.{i}", ports=METRICS) for i in range(1, 4)]
    plan = plan_slices(svc, [], desired_endpoints(svc, pods, "IPv4"), trigger_time="2024-01-01T00:00:00Z")
    assert not plan.update and not plan.delete and len(plan.create) == 1
    created = plan.create[0]
    assert created["metadata"]["generateName"] == "svc-"
    assert created["metadata"]["labels"] == {"team": "infra", "kubernetes.io/service-name": "svc",
                                             "endpointslice.kubernetes.io/managed-by": CONTROLLER_NAME}
    assert created["metadata"]["ownerReferences"][0]["controller"] is True
    assert created["metadata"]["annotations"] == {"endpoints.kubernetes.io/last-change-trigger-time":
                                                  "2024-01-01T00:00:00Z"}
    assert [e["addresses"] for e in created["endpoints"]] == [["10.0.0.1"], ["10.0.0.2"], ["10.0.0.3"]]
    assert created["ports"] == [{"name": "metrics", "port": 9100, "protocol": "TCP"}]


def test_plan_is_empty_when_nothing_changed() -> None:
    svc = service()
    pods = [pod("p1", "10.0.0.1", ports=METRICS)]
    eps = desired_endpoints(svc, pods, "IPv4")
    current = existing_slice(svc, "svc-abcde", list(eps[next(iter(eps))]))
    assert plan_slices(svc, [current], eps).empty


def test_plan_updates_in_place_and_splits_beyond_the_maximum() -> None:
    svc = service()
    pods = [pod(f"p{i}", f"10.0.0.{i}", ports=METRICS) for i in range(1, 8)]
    want = desired_endpoints(svc, pods, "IPv4")
    ports_key = next(iter(want))
    current = existing_slice(svc, "svc-aaaaa", [slice_endpoint(svc, pods[0])])
    current["endpoints"][0]["conditions"]["ready"] = False  # changed since
    plan = plan_slices(svc, [current], want, max_endpoints=3)
    assert [s["metadata"]["name"] for s in plan.update] == ["svc-aaaaa"]
    assert len(plan.update[0]["endpoints"]) == 3
    assert plan.update[0]["endpoints"][0]["conditions"]["ready"] is True
    assert sorted(len(s["endpoints"]) for s in plan.create) == [1, 3]
    assert sum(len(s["endpoints"]) for s in plan.update + plan.create) == len(want[ports_key])


def test_plan_keeps_a_placeholder_for_a_service_without_endpoints() -> None:
    svc = service()
    plan = plan_slices(svc, [], {})
    assert len(plan.create) == 1 and plan.create[0]["endpoints"] == [] and plan.create[0]["ports"] == []
    placeholder = existing_slice(svc, "svc-ppppp", [], ports=[])
    assert plan_slices(svc, [placeholder], {}).empty
    # endpoints appear: the placeholder is reused instead of delete + create
    pods = [pod("p1", "10.0.0.1", ports=METRICS)]
    plan = plan_slices(svc, [placeholder], desired_endpoints(svc, pods, "IPv4"))
    assert not plan.create and not plan.delete
    assert plan.update[0]["metadata"]["name"] == "svc-ppppp" and len(plan.update[0]["endpoints"]) == 1
    # the last endpoint goes: the slice is emptied back into a placeholder, not deleted
    full = existing_slice(svc, "svc-fffff", [slice_endpoint(svc, pods[0])])
    plan = plan_slices(svc, [full], {})
    assert len(plan.create) == 1 and plan.delete == [full]


def test_plan_deletes_slices_of_another_service_incarnation() -> None:
    svc = service()
    stale = existing_slice(svc, "svc-old00", [])
    stale["metadata"]["ownerReferences"][0]["uid"] = "another-uid"
    pods = [pod("p1", "10.0.0.1", ports=METRICS)]
    plan = plan_slices(svc, [stale], desired_endpoints(svc, pods, "IPv4"))
    assert plan.delete == [stale] and len(plan.create) == 1
