"""Selectable fields per kind and the field-label checks the API answers 400 for."""

from __future__ import annotations

import pytest

from everynode.api.registry import RESOURCES
from everynode.api.selectable_fields import (
    allowed_field_labels,
    check_field_selector,
    normalize_field_selector,
    selectable_fields,
)
from everynode.api.selectors import SelectorError, parse_field_selector

POD = {
    "metadata": {"name": "p", "namespace": "ns"},
    "spec": {"nodeName": "n1", "restartPolicy": "Always", "schedulerName": "default-scheduler",
             "serviceAccountName": "sa", "hostNetwork": True},
    "status": {"phase": "Running", "podIP": "10.0.0.9", "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
               "nominatedNodeName": "n2"},
}


def test_pod_fields() -> None:
    assert selectable_fields("pods", POD) == {
        "metadata.name": "p",
        "metadata.namespace": "ns",
        "spec.nodeName": "n1",
        "spec.restartPolicy": "Always",
        "spec.schedulerName": "default-scheduler",
        "spec.serviceAccountName": "sa",
        "spec.hostNetwork": "true",
        "status.phase": "Running",
        "status.podIP": "10.0.0.1",  # podIPs[0] wins, as internally upstream
        "status.nominatedNodeName": "n2",
    }


@pytest.mark.parametrize(
    ("pod", "field", "value"),
    [
        ({"metadata": {"name": "p"}}, "spec.hostNetwork", "false"),
        ({"metadata": {"name": "p"}}, "spec.nodeName", ""),
        ({"metadata": {"name": "p"}}, "status.phase", ""),
        ({"status": {"podIP": "10.1.1.1"}}, "status.podIP", "10.1.1.1"),
        ({"status": {"podIPs": []}}, "status.podIP", ""),
        ({}, "metadata.namespace", ""),
    ],
)
def test_pod_field_defaults(pod: dict, field: str, value: str) -> None:
    assert selectable_fields("pods", pod)[field] == value


@pytest.mark.parametrize(
    ("key", "obj", "expected"),
    [
        ("nodes", {"metadata": {"name": "n1"}, "spec": {"unschedulable": True}},
         {"metadata.name": "n1", "spec.unschedulable": "true"}),
        ("nodes", {"metadata": {"name": "n1"}}, {"metadata.name": "n1", "spec.unschedulable": "false"}),
        ("namespaces", {"metadata": {"name": "kube-system"}, "status": {"phase": "Active"}},
         {"metadata.name": "kube-system", "status.phase": "Active"}),
        ("secrets", {"metadata": {"name": "s", "namespace": "d"}, "type": "Opaque"},
         {"metadata.name": "s", "metadata.namespace": "d", "type": "Opaque"}),
        ("services", {"metadata": {"name": "s", "namespace": "d"}, "spec": {"clusterIP": "10.96.0.1", "type": "ClusterIP"}},
         {"metadata.name": "s", "metadata.namespace": "d", "spec.clusterIP": "10.96.0.1", "spec.type": "ClusterIP"}),
        ("daemonsets.apps", {"metadata": {"name": "ds", "namespace": "d"}},
         {"metadata.name": "ds", "metadata.namespace": "d"}),
        ("configmaps", {"metadata": {"name": "c", "namespace": "d"}},
         {"metadata.name": "c", "metadata.namespace": "d"}),
        ("priorityclasses.scheduling.k8s.io", {"metadata": {"name": "high"}},
         {"metadata.name": "high", "metadata.namespace": ""}),
    ],
)
def test_fields_by_kind(key: str, obj: dict, expected: dict) -> None:
    assert selectable_fields(key, obj) == expected


CORE_EVENT = {
    "metadata": {"name": "e1", "namespace": "monitoring"},
    "involvedObject": {"kind": "DaemonSet", "namespace": "monitoring", "name": "node-exporter", "uid": "u1",
                       "apiVersion": "apps/v1", "resourceVersion": "42", "fieldPath": "spec"},
    "reason": "SuccessfulCreate",
    "source": {"component": "daemonset-controller"},
    "reportingComponent": "daemonset-controller-r",
    "type": "Normal",
}
EVENTS_V1 = {
    "metadata": {"name": "e1", "namespace": "monitoring"},
    "regarding": {"kind": "DaemonSet", "namespace": "monitoring", "name": "node-exporter", "uid": "u1",
                  "apiVersion": "apps/v1", "resourceVersion": "42", "fieldPath": "spec"},
    "reason": "SuccessfulCreate",
    "reportingController": "daemonset-controller-r",
    "type": "Normal",
}


@pytest.mark.parametrize(("key", "obj"), [("events", CORE_EVENT), ("events.events.k8s.io", EVENTS_V1)])
def test_event_fields(key: str, obj: dict) -> None:
    f = selectable_fields(key, obj)
    assert f["involvedObject.kind"] == "DaemonSet"
    assert f["involvedObject.namespace"] == "monitoring"
    assert f["involvedObject.name"] == "node-exporter"
    assert f["involvedObject.uid"] == "u1"
    assert f["involvedObject.apiVersion"] == "apps/v1"
    assert f["involvedObject.resourceVersion"] == "42"
    assert f["involvedObject.fieldPath"] == "spec"
    assert f["reason"] == "SuccessfulCreate"
    assert f["reportingComponent"] == "daemonset-controller-r"
    assert f["type"] == "Normal"
    assert f["metadata.namespace"] == "monitoring"


@pytest.mark.parametrize(
    ("obj", "source"),
    [
        (CORE_EVENT, "daemonset-controller"),
        ({"reportingComponent": "kubelet"}, "kubelet"),  # falls back to the reporting controller
        ({}, ""),
    ],
)
def test_event_source(obj: dict, source: str) -> None:
    assert selectable_fields("events", obj)["source"] == source


def test_every_registered_resource_has_name_field() -> None:
    for rt in RESOURCES:
        fields = selectable_fields(rt.key, {"metadata": {"name": "x", "namespace": "y"}})
        assert fields["metadata.name"] == "x", rt.key


# --- label checks ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "selector"),
    [
        ("pods", "spec.nodeName=n1,status.phase!=Succeeded,status.phase!=Failed"),
        ("pods", "metadata.name=a,metadata.namespace=b"),
        ("pods", "spec.restartPolicy=Always,spec.schedulerName=x,spec.serviceAccountName=y,spec.hostNetwork=true"),
        ("pods", "status.podIP=1.2.3.4,status.podIPs=1.2.3.4,status.nominatedNodeName=n"),
        ("pods", "spec.host=n1"),
        ("nodes", "metadata.name=n1,spec.unschedulable=false"),
        ("events", "involvedObject.name=x,involvedObject.namespace=,involvedObject.kind=Node,involvedObject.uid=u"),
        ("events", "involvedObject.apiVersion=v1,involvedObject.resourceVersion=1,involvedObject.fieldPath=a"),
        ("events", "reason=r,reportingComponent=c,source=s,type=Normal,metadata.name=e,metadata.namespace=d"),
        ("events.events.k8s.io", "regarding.name=x,regarding.kind=Pod,reportingController=c,type=Warning"),
        ("namespaces", "metadata.name=default,status.phase=Active"),
        ("secrets", "type=Opaque,metadata.name=s,metadata.namespace=d"),
        ("services", "spec.clusterIP=None,spec.type=ClusterIP"),
        ("daemonsets.apps", "metadata.name=node-exporter"),
        ("daemonsets.apps", "metadata.namespace=monitoring"),
        ("priorityclasses.scheduling.k8s.io", "metadata.namespace="),
        ("leases.coordination.k8s.io", ""),
    ],
)
def test_supported_labels(key: str, selector: str) -> None:
    check_field_selector(key, parse_field_selector(selector))


@pytest.mark.parametrize(
    ("key", "selector", "message"),
    [
        ("pods", "spec.foo=x", "field label not supported: spec.foo"),
        ("pods", "metadata.name=a,metadata.labels=x", "field label not supported: metadata.labels"),
        ("nodes", "metadata.namespace=", "field label not supported: metadata.namespace"),
        ("nodes", "spec.providerID=x", "field label not supported: spec.providerID"),
        ("namespaces", "metadata.namespace=x", "field label not supported: metadata.namespace"),
        ("events", "regarding.name=x", "field label not supported: regarding.name"),
        ("events.events.k8s.io", "involvedObject.name=x", "field label not supported: involvedObject.name"),
        ("secrets", "data=x", "field label not supported: data"),
        ("daemonsets.apps", "spec.foo=x",
         '"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"'),
        ("configmaps", "data.x=y",
         '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ],
)
def test_unsupported_labels(key: str, selector: str, message: str) -> None:
    with pytest.raises(SelectorError) as exc:
        check_field_selector(key, parse_field_selector(selector))
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("key", "selector", "normalized"),
    [
        ("pods", "spec.host=n1", "spec.nodeName=n1"),
        ("pods", "spec.nodeName=n1", "spec.nodeName=n1"),
        ("events.events.k8s.io", "regarding.name=x,reportingController=c",
         "involvedObject.name=x,reportingComponent=c"),
    ],
)
def test_normalize_renames_legacy_labels(key: str, selector: str, normalized: str) -> None:
    assert str(normalize_field_selector(key, parse_field_selector(selector))) == normalized


def test_normalized_selector_matches_fields() -> None:
    sel = normalize_field_selector("events.events.k8s.io", parse_field_selector("regarding.name=node-exporter"))
    assert sel.matches(selectable_fields("events.events.k8s.io", EVENTS_V1))
    pod_sel = normalize_field_selector("pods", parse_field_selector("spec.host=n1,status.podIPs="))
    assert pod_sel.matches(selectable_fields("pods", POD))  # status.podIPs is accepted but reads as ""


def test_allowed_labels() -> None:
    assert allowed_field_labels("daemonsets.apps") == {"metadata.name", "metadata.namespace"}
    assert "spec.unschedulable" in allowed_field_labels("nodes")
