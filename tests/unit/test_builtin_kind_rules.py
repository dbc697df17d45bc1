"""The rules of the built-in kinds served from ``api/builtin_kinds.py``, as table tests: Go's
base64 verdicts, schema-required fields, update rules, defaults, the spec/status strategy,
APIService conditions, Table cells and the protobuf bodies of ``kubectl create``."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.api import errors
from everynode.api.defaults import apply_defaults
from everynode.api.field_errors import aggregate
from everynode.api.gobase64 import base64_error
from everynode.api.registry import resource
from everynode.api.validation import validate_create, validate_update
from everynode.apiserver import tables
from everynode.apiserver.protobuf import decode
from everynode.apiserver.service import ApiService, RequestOptions
from everynode.apiserver.tables_builtin import format_hpa_metrics
from everynode.clock import Clock
from everynode.storage.memory import MemoryStore

Obj = dict[str, Any]


# -- Go's base64 (encoding/base64 StdEncoding.Decode) -----------------------------------------------

@pytest.mark.parametrize(("text", "error_at"), [
    ("", None), ("aGVsbG8=", None), ("aGVsbG8gd29ybGQ=", None), ("YQ==", None), ("YWI=", None),
    ("aGVs\nbG8=", None), ("YQ==\r\n", None), ("abc=", None),
    ("PUT_YOUR_BASE64_ENCODED_API_KEY_HERE", 3),  # '_' is not in the standard alphabet
    ("aGVsbG8", 4),       # an incomplete final quantum: its start
    ("abc", 0), ("abcde", 4),
    ("a===", 1),          # padding after one character
    ("ab=", 3),           # "==" expected, input ends: the length
    ("ab=c", 2),          # "==" expected, another byte follows: the first '='
    ("aGVsbG8=x", 8),     # trailing garbage after the padding
    ("aGVsbG8-", 7),      # URL-safe alphabet is not StdEncoding
    ("é", 0),             # offsets count UTF-8 bytes
])
def test_go_base64(text: str, error_at: int | None) -> None:
    expected = None if error_at is None else f"illegal base64 data at input byte {error_at}"
    assert base64_error(text) == expected


# -- required fields (schemas) and update rules ------------------------------------------------------

def _meta(name: str = "x", namespace: str | None = "ns") -> Obj:
    return {"name": name, **({"namespace": namespace} if namespace else {})}


@pytest.mark.parametrize(("key", "obj", "expected"), [
    ("storageclasses.storage.k8s.io", {"metadata": _meta(namespace=None)}, "provisioner: Required value"),
    ("horizontalpodautoscalers.autoscaling", {"metadata": _meta(), "spec": {"maxReplicas": 1}},
     "[spec.scaleTargetRef.kind: Required value, spec.scaleTargetRef.name: Required value]"),
    ("statefulsets.apps", {"metadata": _meta(), "spec": {"template": {"spec": {"containers": [{"image": "i"}]}}}},
     "[spec.selector: Required value, spec.template.spec.containers[0].name: Required value]"),
    ("ingresses.networking.k8s.io",
     {"metadata": _meta(), "spec": {"rules": [{"http": {"paths": [{"backend": {}}]}}]}},
     "spec.rules[0].http.paths[0].pathType: Required value"),
    ("networkpolicies.networking.k8s.io", {"metadata": _meta(), "spec": {}}, ""),  # podSelector {} = every pod
    ("csinodes.storage.k8s.io", {"metadata": _meta(namespace=None), "spec": {"drivers": None}}, ""),
    ("csidrivers.storage.k8s.io", {"metadata": _meta(namespace=None)}, ""),
    ("runtimeclasses.node.k8s.io", {"metadata": _meta(namespace=None)}, "handler: Required value"),
    ("runtimeclasses.node.k8s.io", {"metadata": _meta(namespace=None), "handler": ""}, "handler: Required value"),
    ("persistentvolumeclaims", {"metadata": _meta(), "status": {"conditions": [{}]}}, ""),  # status not walked
])
def test_required_fields(key: str, obj: Obj, expected: str) -> None:
    errs = validate_create(key, obj)
    assert (aggregate(errs) if errs else "") == expected


def test_statefulset_update_rule() -> None:
    old = {"metadata": _meta(), "spec": {"replicas": 1, "serviceName": "a", "template": {},
                                         "selector": {"matchLabels": {"a": "b"}}}}
    allowed = {"metadata": _meta(), "spec": {**old["spec"], "replicas": 5, "minReadySeconds": 3,
                                             "updateStrategy": {"type": "OnDelete"}}}
    assert validate_update("statefulsets.apps", allowed, old) == []
    changed = {"metadata": _meta(), "spec": {**old["spec"], "serviceName": "b"}}
    assert aggregate(validate_update("statefulsets.apps", changed, old)).startswith(
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals'")


def test_storage_class_and_csi_driver_update_rules() -> None:
    old = {"metadata": _meta(namespace=None), "provisioner": "a", "reclaimPolicy": "Delete",
           "volumeBindingMode": "Immediate"}
    new = {**old, "provisioner": "b", "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer",
           "allowVolumeExpansion": True}
    assert aggregate(validate_update("storageclasses.storage.k8s.io", new, old)) == (
        "[provisioner: Forbidden: updates to provisioner are forbidden., reclaimPolicy: Forbidden: updates to "
        'reclaimPolicy are forbidden., volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable]')
    assert validate_update("storageclasses.storage.k8s.io", {**old, "allowVolumeExpansion": True}, old) == []
    old_driver = {"metadata": _meta(namespace=None), "spec": {"attachRequired": True,
                                                              "volumeLifecycleModes": ["Persistent"]}}
    new_driver = {"metadata": _meta(namespace=None), "spec": {"attachRequired": False,
                                                              "volumeLifecycleModes": ["Persistent"]}}
    assert aggregate(validate_update("csidrivers.storage.k8s.io", new_driver, old_driver)) == \
        "spec.attachedRequired: Invalid value: false: field is immutable"


# -- defaults -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("key", "obj", "expected"), [
    ("storageclasses.storage.k8s.io", {"provisioner": "p"},
     {"provisioner": "p", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}),
    ("persistentvolumeclaims", {"spec": {}}, {"spec": {"volumeMode": "Filesystem"}}),
    ("secrets", {"data": {"a": "eA==", "c": "dw=="}, "stringData": {"a": "y", "b": "z"}},  # stringData wins
     {"type": "Opaque", "data": {"a": "eQ==", "c": "dw==", "b": "eg=="}}),
    ("networkpolicies.networking.k8s.io", {"spec": {"egress": [{"ports": [{"port": 53}]}]}},
     {"spec": {"egress": [{"ports": [{"port": 53, "protocol": "TCP"}]}], "policyTypes": ["Ingress", "Egress"]}}),
    ("csidrivers.storage.k8s.io", {"spec": {"attachRequired": False}},
     {"spec": {"attachRequired": False, "podInfoOnMount": False, "storageCapacity": False,
               "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": False,
               "volumeLifecycleModes": ["Persistent"], "seLinuxMount": False}}),
    ("horizontalpodautoscalers.autoscaling", {"spec": {"maxReplicas": 2}},
     {"spec": {"maxReplicas": 2, "minReplicas": 1, "metrics": [{"type": "Resource", "resource": {
         "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}}),
])
def test_defaults(key: str, obj: Obj, expected: Obj) -> None:
    apply_defaults(key, obj)
    assert obj == expected


def test_statefulset_defaults() -> None:
    obj: Obj = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i:1"}]}},
                         "volumeClaimTemplates": [{"metadata": {"name": "d"}, "spec": {}}]}}
    apply_defaults("statefulsets.apps", obj)
    spec = obj["spec"]
    assert (spec["replicas"], spec["revisionHistoryLimit"], spec["podManagementPolicy"]) == (1, 10, "OrderedReady")
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    claim = spec["volumeClaimTemplates"][0]
    assert (claim["apiVersion"], claim["kind"], claim["spec"], claim["status"]) == (
        "v1", "PersistentVolumeClaim", {"volumeMode": "Filesystem"}, {"phase": "Pending"})


# -- the spec/status strategy and APIService through the store -----------------------------------------

@pytest.fixture
def api() -> ApiService:
    return ApiService(MemoryStore(), clock=Clock())


def _sts(replicas: int = 1, **status: Any) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"replicas": replicas, "serviceName": "db", "selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c",
                                                                                               "image": "i"}]}}},
            **({"status": status} if status else {})}


async def test_statefulset_generation_and_status(api: ApiService) -> None:
    rt = resource("sts")
    created = await api.create(rt, "default", _sts(replicas=1, replicas_hacked=1), opts=RequestOptions())
    assert created["metadata"]["generation"] == 1
    assert created["status"] == {"replicas": 0, "availableReplicas": 0}
    same, _ = await api.patch(rt, "default", "db", {"metadata": {"labels": {"x": "y"}}}, "merge",
                              opts=RequestOptions())
    assert same["metadata"]["generation"] == 1
    scaled, _ = await api.patch(rt, "default", "db", {"spec": {"replicas": 3}, "status": {"replicas": 9}}, "merge",
                                opts=RequestOptions())
    assert scaled["metadata"]["generation"] == 2 and scaled["status"]["replicas"] == 0
    status, _ = await api.patch(rt, "default", "db", {"spec": {"replicas": 7}, "status": {"readyReplicas": 3},
                                                      "metadata": {"labels": {"z": "1"}}},
                                "merge", subresource="status", opts=RequestOptions())
    assert status["spec"]["replicas"] == 3 and status["status"]["readyReplicas"] == 3
    assert status["metadata"]["labels"] == {"x": "y"} and status["metadata"]["generation"] == 2


async def test_configmap_has_no_status_subresource(api: ApiService) -> None:
    with pytest.raises(errors.ApiError) as e:
        await api.get(resource("configmaps"), "default", "x", subresource="status")
    assert e.value.code == 404


async def test_apiservice_conditions(api: ApiService) -> None:
    rt = resource("apiservices")
    spec = {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100}
    remote = await api.create(rt, "", {"metadata": {"name": "v1beta1.metrics.k8s.io"},
                                       "spec": {**spec, "service": {"name": "ms", "namespace": "kube-system"}}},
                              opts=RequestOptions())
    [condition] = remote["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == ("Available", "False",
                                                                           "FailedDiscoveryCheck")
    assert condition["lastTransitionTime"] == remote["metadata"]["creationTimestamp"]
    local = await api.create(rt, "", {"metadata": {"name": "v1.example.com"},
                                      "spec": {**spec, "group": "example.com", "version": "v1"}},
                             opts=RequestOptions())
    assert local["status"]["conditions"][0]["reason"] == "Local"
    row = tables.table_row(rt, remote, now=0.0)["cells"]
    assert row[1:3] == ["kube-system/ms", "False (FailedDiscoveryCheck)"]


async def test_componentstatuses_are_computed(api: ApiService) -> None:
    rt = resource("cs")
    listed = await api.list(rt, None)
    assert [o["metadata"]["name"] for o in listed["items"]] == ["scheduler", "controller-manager"]
    assert (await api.get(rt, "", "scheduler"))["conditions"][0]["type"] == "Healthy"
    with pytest.raises(errors.ApiError) as e:
        await api.create(rt, "", {"metadata": {"name": "x"}}, opts=RequestOptions())
    assert e.value.code == 405


# -- Table cells -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("metrics", "current", "expected"), [
    ([], [], "<none>"),
    ([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}],
     [], "cpu: <unknown>/80%"),
    ([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}],
     [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12}}}], "cpu: 12%/80%"),
    ([{"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}}],
     [], "memory: <unknown>/1Gi"),
    ([{"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"averageValue": "10"}}},
      {"type": "External", "external": {"metric": {"name": "q"}, "target": {"value": "5"}}},
      {"type": "Object", "object": {"metric": {"name": "r"}, "target": {"averageValue": "2"}}}],
     [], "<unknown>/10, <unknown>/5 + 1 more..."),
])
def test_hpa_targets(metrics: list[Obj], current: list[Obj], expected: str) -> None:
    assert format_hpa_metrics(metrics, current) == expected


@pytest.mark.parametrize(("name", "obj", "cells"), [
    ("pvc", {"metadata": {"name": "d"}, "spec": {"volumeName": "pv1", "storageClassName": "fast"},
             "status": {"phase": "Bound", "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                        "capacity": {"storage": "1024Mi"}}},
     ["d", "Bound", "pv1", "1Gi", "RWO,RWX", "fast", "<unset>", "<unknown>", "<unset>"]),
    ("pv", {"metadata": {"name": "p"}, "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
                                                "persistentVolumeReclaimPolicy": "Retain",
                                                "claimRef": {"namespace": "a", "name": "b"}},
            "status": {"phase": "Bound"}},
     ["p", "5Gi", "RWO", "Retain", "Bound", "a/b", "", "<unset>", "", "<unknown>", "<unset>"]),
    ("ingressclasses", {"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx",
                                                                "parameters": {"apiGroup": "k8s.example.com",
                                                                               "kind": "P", "name": "x"}}},
     ["nginx", "k8s.io/ingress-nginx", "P.k8s.example.com/x", "<unknown>"]),
    ("netpol", {"metadata": {"name": "n"}, "spec": {"podSelector": {}}}, ["n", "<none>", "<unknown>"]),
    ("rc", {"metadata": {"name": "r"}, "spec": {"replicas": 2, "selector": {"app": "r"}, "template": {
        "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}},
            "status": {"replicas": 2, "readyReplicas": 1}},
     ["r", 2, 2, 1, "<unknown>", "a,b", "x,y", "app=r"]),
    ("csr", {"metadata": {"name": "c"}, "spec": {"signerName": "kubernetes.io/kube-apiserver-client",
                                                 "username": "alice", "expirationSeconds": 86400},
             "status": {"conditions": [{"type": "Approved"}], "certificate": "Y2VydA=="}},
     ["c", "<unknown>", "kubernetes.io/kube-apiserver-client", "alice", "24h", "Approved,Issued"]),
    ("quota", {"metadata": {"name": "q"}, "status": {"hard": {"pods": "10", "limits.cpu": "2"},
                                                     "used": {"pods": "3"}}},
     ["q", "<unknown>", "pods: 3/10", "limits.cpu: 0/2"]),
    ("limitranges", {"metadata": {"name": "l", "creationTimestamp": "2026-01-01T00:00:00Z"}},
     ["l", "2026-01-01T00:00:00Z"]),
])
def test_table_cells(name: str, obj: Obj, cells: list[Any]) -> None:
    rt = resource(name)
    row = tables.table_row(rt, obj, now=0.0)["cells"]
    assert row == cells
    assert len(tables.column_definitions(rt.key)) == len(cells)


# -- protobuf bodies of kubectl create -----------------------------------------------------------------

def _ld(field: int, payload: bytes) -> bytes:
    return bytes([field << 3 | 2, len(payload)]) + payload


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    tm = _ld(1, api_version.encode()) + _ld(2, kind.encode())
    return b"k8s\x00" + _ld(1, tm) + _ld(2, raw) + _ld(3, b"") + _ld(4, b"")


def test_quota_and_ingress_protobuf() -> None:
    quantity = _ld(1, b"10")
    quota = _ld(1, _ld(1, b"q")) + _ld(2, _ld(1, _ld(1, b"pods") + _ld(2, quantity))) + _ld(3, b"")
    assert decode(_envelope("v1", "ResourceQuota", quota)) == {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": {"pods": "10"}},
        "status": {}}
    backend = _ld(4, _ld(1, b"svc") + _ld(2, bytes([2 << 3, 80])))
    path = _ld(1, b"/") + _ld(2, backend) + _ld(3, b"Prefix")
    rule = _ld(1, b"a.com") + _ld(2, _ld(1, _ld(1, path)))
    ingress = _ld(1, _ld(1, b"i")) + _ld(2, _ld(3, rule))
    assert decode(_envelope("networking.k8s.io/v1", "Ingress", ingress))["spec"] == {"rules": [{
        "host": "a.com", "http": {"paths": [{"path": "/", "pathType": "Prefix",
                                             "backend": {"service": {"name": "svc", "port": {"number": 80}}}}]}}]}
