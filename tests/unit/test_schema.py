"""The v1.33 schemas as data: definitions, patch metadata, unknown-field detection."""

from __future__ import annotations

import copy

import pytest

from everynode.api import schema

DS = {
    "apiVersion": "apps/v1", "kind": "DaemonSet",
    "metadata": {"name": "ne", "labels": {"any/key": "v"}, "annotations": {"x": "y"},
                 "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "n", "uid": "u"}]},
    "spec": {"selector": {"matchLabels": {"app": "ne"}},
             "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
             "template": {"metadata": {"labels": {"app": "ne"}},
                          "spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                                   "containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "1"}},
                                                   "ports": [{"containerPort": 9100}],
                                                   "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]}],
                                   "tolerations": [{"operator": "Exists"}]}}},
    "status": {"numberReady": 1},
}


@pytest.mark.parametrize("api_version, kind, name", [
    ("apps/v1", "DaemonSet", "io.k8s.api.apps.v1.DaemonSet"),
    ("v1", "Pod", "io.k8s.api.core.v1.Pod"),
    ("events.k8s.io/v1", "Event", "io.k8s.api.events.v1.Event"),
    ("v1", "Event", "io.k8s.api.core.v1.Event"),
    ("coordination.k8s.io/v1", "Lease", "io.k8s.api.coordination.v1.Lease"),
    ("apps/v1", "Widget", None),
])
def test_definition_name(api_version, kind, name):
    assert schema.definition_name(api_version, kind) == name


def test_valid_daemonset_has_no_unknown_fields():
    assert schema.unknown_fields("apps/v1", "DaemonSet", DS) == []


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d["spec"].__setitem__("replicas", 2), ["spec.replicas"]),
    (lambda d: d["spec"]["template"]["spec"]["containers"][0].__setitem__("foo", 1),
     ["spec.template.spec.containers[0].foo"]),
    (lambda d: d["spec"]["template"]["spec"]["containers"][0]["ports"][0].__setitem__("bogus", 1),
     ["spec.template.spec.containers[0].ports[0].bogus"]),
    (lambda d: d.__setitem__("extra", {}), ["extra"]),
    (lambda d: d["metadata"].__setitem__("nme", "x"), ["metadata.nme"]),
])
def test_unknown_fields_paths(mutate, expected):
    obj = copy.deepcopy(DS)
    mutate(obj)
    assert schema.unknown_fields("apps/v1", "DaemonSet", obj) == expected


def test_unknown_kind_reports_nothing():
    assert schema.unknown_fields("example.com/v1", "Widget", {"anything": 1}) == []


@pytest.mark.parametrize("def_name, path, meta", [
    ("io.k8s.api.apps.v1.DaemonSet", ("spec", "template", "spec", "containers"), ("merge", "name", "map", ("name",))),
    ("io.k8s.api.apps.v1.DaemonSet", ("spec", "template", "spec", "volumes"),
     ("merge,retainKeys", "name", "map", ("name",))),
    ("io.k8s.api.apps.v1.DaemonSet", ("spec", "template", "spec", "containers", "volumeMounts"),
     ("merge", "mountPath", "map", ("mountPath",))),
    ("io.k8s.api.apps.v1.DaemonSet", ("spec", "template", "spec", "containers", "ports"),
     ("merge", "containerPort", "map", ("containerPort", "protocol"))),
    ("io.k8s.api.apps.v1.DaemonSet", ("spec", "template", "spec", "tolerations"), ("", "", "atomic", ())),
    ("io.k8s.api.core.v1.Node", ("spec", "taints"), ("", "", "atomic", ())),
    ("io.k8s.api.core.v1.Pod", ("metadata", "finalizers"), ("merge", "", "set", ())),
    ("io.k8s.api.core.v1.Pod", ("spec", "nodeName"), ("", "", "", ())),
])
def test_patch_meta(def_name, path, meta):
    assert schema.patch_meta(def_name, path) == meta


def test_field_schema_and_resolve():
    containers = schema.field_schema("io.k8s.api.apps.v1.DaemonSet", ("spec", "template", "spec", "containers"))
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert schema.field_schema("io.k8s.api.apps.v1.DaemonSet", ("spec", "nope")) is None
    assert "properties" in schema.resolve("#/$defs/io.k8s.api.core.v1.Container")
