"""Server-side defaulting (pkg/apis/core/v1/defaults.go, pkg/apis/apps/v1/defaults.go, ...)."""

from __future__ import annotations

import copy
from typing import Any

import kubernetes_validate
import pytest

from everynode.api.defaults import apply_defaults
from everynode.api.validation import validate_create


def _pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}], **spec}}


def _ds(template_spec: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "node-exporter", "namespace": "monitoring"},
        "spec": {
            "selector": {"matchLabels": {"app": "ne"}},
            "template": {"metadata": {"labels": {"app": "ne"}},
                         "spec": template_spec or {"containers": [{"name": "ne", "image": "prom/node-exporter"}]}},
            **spec,
        },
    }


def _walk_values(obj: Any) -> list[Any]:
    if isinstance(obj, dict):
        return [v for x in obj.values() for v in [x, *_walk_values(x)]]
    if isinstance(obj, list):
        return [v for x in obj for v in [x, *_walk_values(x)]]
    return []


def test_pod_spec_defaults() -> None:
    pod = _pod()
    apply_defaults("pods", pod)
    spec = pod["spec"]
    assert {k: spec[k] for k in ("restartPolicy", "terminationGracePeriodSeconds", "dnsPolicy", "securityContext",
                                 "schedulerName", "enableServiceLinks")} == {
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "securityContext": {}, "schedulerName": "default-scheduler", "enableServiceLinks": True,
    }
    assert spec["containers"][0] == {
        "name": "c", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "resources": {},
    }


@pytest.mark.parametrize(("image", "policy"), [
    ("nginx", "Always"),
    ("nginx:latest", "Always"),
    ("nginx:1.27", "IfNotPresent"),
    ("registry.local:5000/team/nginx", "Always"),
    ("registry.local:5000/team/nginx:v2", "IfNotPresent"),
    ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
    ("", "IfNotPresent"),
])
def test_image_pull_policy(image: str, policy: str) -> None:
    pod = _pod()
    pod["spec"]["containers"][0]["image"] = image
    apply_defaults("pods", pod)
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_explicit_values_are_kept_and_zero_values_defaulted() -> None:
    pod = _pod(restartPolicy="Never", dnsPolicy="", terminationGracePeriodSeconds=0)
    pod["spec"]["containers"][0].update(imagePullPolicy="Never", livenessProbe={
        "exec": {"command": ["true"]}, "periodSeconds": 0, "timeoutSeconds": 5})
    apply_defaults("pods", pod)
    spec = pod["spec"]
    assert spec["restartPolicy"] == "Never"
    assert spec["dnsPolicy"] == "ClusterFirst"          # "" is Go's zero value: defaulted
    assert spec["terminationGracePeriodSeconds"] == 0   # a pointer: 0 is a real value
    ctr = spec["containers"][0]
    assert ctr["imagePullPolicy"] == "Never"
    assert ctr["livenessProbe"] == {"exec": {"command": ["true"]}, "periodSeconds": 10, "timeoutSeconds": 5,
                                    "successThreshold": 1, "failureThreshold": 3}


def test_ports_probes_env_and_host_network() -> None:
    pod = _pod(hostNetwork=True)
    pod["spec"]["containers"][0].update(
        ports=[{"containerPort": 9100}, {"containerPort": 53, "protocol": "UDP", "hostPort": 53}],
        readinessProbe={"httpGet": {"port": 9100}},
        env=[{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
             {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}}],
    )
    apply_defaults("pods", pod)
    ctr = pod["spec"]["containers"][0]
    assert ctr["ports"] == [{"containerPort": 9100, "protocol": "TCP", "hostPort": 9100},
                            {"containerPort": 53, "protocol": "UDP", "hostPort": 53}]
    assert ctr["readinessProbe"]["httpGet"] == {"port": 9100, "path": "/", "scheme": "HTTP"}
    assert ctr["env"][0]["valueFrom"]["fieldRef"] == {"fieldPath": "spec.nodeName", "apiVersion": "v1"}
    assert ctr["env"][1]["valueFrom"]["resourceFieldRef"] == {"resource": "limits.memory", "divisor": "0"}


def test_no_host_port_without_host_network() -> None:
    pod = _pod()
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    apply_defaults("pods", pod)
    assert pod["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]


def test_volume_defaults() -> None:
    pod = _pod(volumes=[
        {"name": "scratch"},
        {"name": "proc", "hostPath": {"path": "/proc"}},
        {"name": "cfg", "configMap": {"name": "cfg"}},
        {"name": "sec", "secret": {"secretName": "s", "defaultMode": 256}},
        {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
    ])
    apply_defaults("pods", pod)
    assert pod["spec"]["volumes"] == [
        {"name": "scratch", "emptyDir": {}},
        {"name": "proc", "hostPath": {"path": "/proc", "type": ""}},
        {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}},
        {"name": "sec", "secret": {"secretName": "s", "defaultMode": 256}},
        {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {
            "fieldPath": "metadata.labels", "apiVersion": "v1"}}], "defaultMode": 420}},
    ]


def test_pod_requests_default_from_limits_but_not_in_templates() -> None:
    resources = {"limits": {"cpu": "500m", "memory": "64Mi"}, "requests": {"cpu": "100m"}}
    pod = _pod()
    pod["spec"]["containers"][0]["resources"] = copy.deepcopy(resources)
    apply_defaults("pods", pod)
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "64Mi"}
    ds = _ds({"containers": [{"name": "ne", "image": "x", "resources": copy.deepcopy(resources)}]})
    apply_defaults("daemonsets.apps", ds)
    assert ds["spec"]["template"]["spec"]["containers"][0]["resources"] == resources


def test_tolerations_untouched() -> None:
    tolerations = [{"operator": "Exists"}]
    pod = _pod(tolerations=copy.deepcopy(tolerations))
    apply_defaults("pods", pod)
    assert pod["spec"]["tolerations"] == tolerations


@pytest.mark.parametrize(("strategy", "expected"), [
    (None, {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
    ({"type": "RollingUpdate"}, {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
    ({"rollingUpdate": {"maxSurge": "25%"}},
     {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}, "type": "RollingUpdate"}),
    ({"type": "OnDelete"}, {"type": "OnDelete"}),
    ({"type": "OnDelete", "rollingUpdate": {"maxSurge": 3}}, {"type": "OnDelete", "rollingUpdate": {"maxSurge": 3}}),
])
def test_daemon_set_update_strategy(strategy: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    ds = _ds() if strategy is None else _ds(updateStrategy=strategy)
    apply_defaults("daemonsets.apps", ds)
    assert ds["spec"]["updateStrategy"] == expected


@pytest.mark.parametrize(("given", "expected"), [(None, 10), (0, 0), (3, 3)])
def test_daemon_set_revision_history_limit(given: int | None, expected: int) -> None:
    ds = _ds() if given is None else _ds(revisionHistoryLimit=given)
    apply_defaults("daemonsets.apps", ds)
    assert ds["spec"]["revisionHistoryLimit"] == expected


def test_daemon_set_template_gets_pod_defaults() -> None:
    ds = _ds()
    apply_defaults("daemonsets.apps", ds)
    tpl = ds["spec"]["template"]["spec"]
    assert tpl["restartPolicy"] == "Always"
    assert tpl["containers"][0]["imagePullPolicy"] == "Always"
    assert tpl["containers"][0]["terminationMessagePolicy"] == "File"


def test_service_defaults() -> None:
    svc = {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80},
                                                                                      {"port": 443, "targetPort": "https"}]}}
    apply_defaults("services", svc)
    assert svc["spec"] == {
        "selector": {"app": "web"},
        "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80},
                  {"port": 443, "targetPort": "https", "protocol": "TCP"}],
        "sessionAffinity": "None", "type": "ClusterIP", "internalTrafficPolicy": "Cluster",
        "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"],
    }


def test_node_port_service_defaults() -> None:
    svc = {"metadata": {"name": "web"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}}
    apply_defaults("services", svc)
    assert svc["spec"]["externalTrafficPolicy"] == "Cluster"


@pytest.mark.parametrize(("key", "obj", "expected"), [
    ("secrets", {"metadata": {"name": "s"}}, {"metadata": {"name": "s"}, "type": "Opaque"}),
    ("secrets", {"type": "kubernetes.io/tls"}, {"type": "kubernetes.io/tls"}),
    ("namespaces", {"metadata": {"name": "n"}},
     {"metadata": {"name": "n"}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
    ("priorityclasses.scheduling.k8s.io", {"value": 5}, {"value": 5, "preemptionPolicy": "PreemptLowerPriority"}),
    ("priorityclasses.scheduling.k8s.io", {"value": 5, "preemptionPolicy": "Never"},
     {"value": 5, "preemptionPolicy": "Never"}),
    ("endpoints", {"subsets": [{"ports": [{"port": 80}]}]},
     {"subsets": [{"ports": [{"port": 80, "protocol": "TCP"}]}]}),
    ("endpointslices.discovery.k8s.io", {"ports": [{"port": 80}]},
     {"ports": [{"port": 80, "name": "", "protocol": "TCP"}]}),
    ("nodes", {"status": {"capacity": {"cpu": "4"}}}, {"status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "4"}}}),
    ("configmaps", {"data": {"a": "b"}}, {"data": {"a": "b"}}),
    ("events", {"reason": "X"}, {"reason": "X"}),
    ("no-such-resource", {"a": 1}, {"a": 1}),
])
def test_other_kinds(key: str, obj: dict[str, Any], expected: dict[str, Any]) -> None:
    apply_defaults(key, obj)
    assert obj == expected


def test_defaulting_is_idempotent_and_never_stores_none() -> None:
    ds = _ds({"hostNetwork": True, "containers": [{"name": "ne", "image": "x", "ports": [{"containerPort": 1}],
                                                   "livenessProbe": {"tcpSocket": {"port": 1}}}],
              "volumes": [{"name": "v", "secret": {"secretName": "s"}}]})
    apply_defaults("daemonsets.apps", ds)
    once = copy.deepcopy(ds)
    apply_defaults("daemonsets.apps", ds)
    assert ds == once
    assert None not in _walk_values(ds)


def test_key_order_is_stable() -> None:
    pod = _pod()
    before = list(pod["spec"])
    apply_defaults("pods", pod)
    assert list(pod["spec"])[: len(before)] == before


def _oracle_objects() -> list[tuple[str, dict[str, Any]]]:
    ds = _ds({"hostNetwork": True, "tolerations": [{"operator": "Exists"}], "containers": [{
        "name": "ne", "image": "prom/node-exporter:v1.8.0", "args": ["--path.rootfs=/host"],
        "ports": [{"name": "metrics", "containerPort": 9100}],
        "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "readinessProbe": {"httpGet": {"port": "metrics"}},
        "resources": {"limits": {"cpu": "250m", "memory": "180Mi"}},
        "volumeMounts": [{"name": "root", "mountPath": "/host", "readOnly": True}]}],
        "volumes": [{"name": "root", "hostPath": {"path": "/"}}, {"name": "tmp"}]})
    pod = _pod(volumes=[{"name": "cfg", "configMap": {"name": "cfg"}}])
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "cfg", "mountPath": "/etc/cfg"}]
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
    return [
        ("daemonsets.apps", ds), ("pods", pod), ("services", svc),
        ("secrets", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}}),
        ("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}}),
        ("priorityclasses.scheduling.k8s.io", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                               "metadata": {"name": "high"}, "value": 1000}),
    ]


@pytest.mark.parametrize(("key", "obj"), _oracle_objects(), ids=lambda v: v if isinstance(v, str) else "")
def test_defaulted_objects_pass_kubernetes_validate_and_our_validation(key: str, obj: dict[str, Any]) -> None:
    """Oracle: the defaulted object satisfies the strict v1.33 OpenAPI schema (no unknown or mistyped
    fields introduced by defaulting) and our own validation."""
    apply_defaults(key, obj)
    kubernetes_validate.validate(obj, "1.33", strict=True)
    assert validate_create(key, obj) == []
