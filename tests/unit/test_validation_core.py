"""Validation of the other kinds: Namespace, Node, Service, ConfigMap, Secret, ServiceAccount, Event,
Endpoints, Lease, PriorityClass, EndpointSlice — paths, types and upstream detail texts."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from everynode.api.defaults import apply_defaults
from everynode.api.validation import (
    validate_create,
    validate_namespace_finalize,
    validate_status_update,
    validate_update,
)

Obj = dict[str, Any]
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
RANGE = "must be between 1 and 65535, inclusive"


def check(key: str, obj: Obj, *, defaults: bool = True) -> list[tuple[str, str, str]]:
    obj = copy.deepcopy(obj)
    if defaults:
        apply_defaults(key, obj)
    return [(e.field, e.type, e.detail) for e in validate_create(key, obj)]


def meta(name: str = "x", namespace: str | None = "default", **extra: Any) -> Obj:
    md: Obj = {"name": name, **extra}
    if namespace is not None:
        md["namespace"] = namespace
    return md


def service(**spec: Any) -> Obj:
    return {"metadata": meta("web"), "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], **spec}}


def node(**spec: Any) -> Obj:
    return {"metadata": meta("n1", None), "spec": spec}


CASES: list[tuple[str, str, Obj, list[tuple[str, str, str]]]] = [
    # Namespace
    ("ns valid", "namespaces", {"metadata": meta("monitoring", None)}, []),
    ("ns name is a DNS label", "namespaces", {"metadata": meta("a.b", None)},
     [("metadata.name", "Invalid", "must not contain dots")]),
    ("ns name uppercase", "namespaces", {"metadata": meta("Prod", None)}, [("metadata.name", "Invalid", LABEL_MSG)]),
    ("ns namespace forbidden", "namespaces", {"metadata": meta("a", "b")},
     [("metadata.namespace", "Forbidden", "not allowed on this type")]),
    ("ns bad finalizer", "namespaces", {"metadata": meta("a", None), "spec": {"finalizers": ["custom"]}},
     [("spec.finalizers", "Invalid", "name is neither a standard finalizer name nor is it fully qualified")]),
    ("ns name required", "namespaces", {"metadata": {}},
     [("metadata.name", "Required", "name or generateName is required")]),
    # Node
    ("node valid", "nodes", node(taints=[{"key": "k", "value": "v", "effect": "NoSchedule"},
                                         {"key": "k", "effect": "NoExecute"}]), []),
    ("node name subdomain ok", "nodes", {"metadata": meta("worker-1.example.com", None)}, []),
    ("taint effect required", "nodes", node(taints=[{"key": "k"}]), [("metadata.taints[0].effect", "Required", "")]),
    ("taint effect supported", "nodes", node(taints=[{"key": "k", "effect": "NoRun"}]),
     [("metadata.taints[0].effect", "NotSupported", 'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"')]),
    ("taint key", "nodes", node(taints=[{"key": "", "effect": "NoSchedule"}]),
     [("metadata.taints[0].key", "Invalid", "name part must be non-empty"),
      ("metadata.taints[0].key", "Invalid",
       "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
       "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
       "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")]),
    ("taint duplicate key+effect", "nodes", node(taints=[{"key": "k", "value": "a", "effect": "NoSchedule"},
                                                         {"key": "k", "value": "b", "effect": "NoSchedule"}]),
     [("metadata.taints[1]", "Duplicate", "taints must be unique by key and effect pair")]),
    ("node negative capacity", "nodes", {"metadata": meta("n1", None), "status": {"capacity": {"cpu": "-1"}}},
     [("status.capacity.cpu", "Invalid", "must be greater than or equal to 0"),
      ("status.allocatable.cpu", "Invalid", "must be greater than or equal to 0")]),
    # Service
    ("svc valid", "services", service(), []),
    ("svc name is DNS-1035", "services", {**service(), "metadata": meta("1web")},
     [("metadata.name", "Invalid", DNS1035_MSG)]),
    ("svc ports required", "services", service(ports=[]), [("spec.ports", "Required", "")]),
    ("svc headless needs no ports", "services", service(ports=[], clusterIP="None"), []),
    ("svc port range", "services", service(ports=[{"port": 0}]),
     [("spec.ports[0].port", "Invalid", RANGE), ("spec.ports[0].targetPort", "Invalid", RANGE)]),
    ("svc names required when several", "services", service(ports=[{"port": 80}, {"port": 81, "name": "b"}]),
     [("spec.ports[0].name", "Required", "")]),
    ("svc duplicate names", "services", service(ports=[{"port": 80, "name": "a"}, {"port": 81, "name": "a"}]),
     [("spec.ports[1].name", "Duplicate", "")]),
    ("svc duplicate port", "services", service(ports=[{"port": 80, "name": "a"}, {"port": 80, "name": "b"}]),
     [("spec.ports[1]", "Duplicate", "")]),
    ("svc protocol", "services", service(ports=[{"port": 80, "protocol": "HTTP"}]),
     [("spec.ports[0].protocol", "NotSupported", 'supported values: "SCTP", "TCP", "UDP"')]),
    ("svc target port name", "services", service(ports=[{"port": 80, "targetPort": "Web_Port"}]),
     [("spec.ports[0].targetPort", "Invalid", "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")]),
    ("svc selector", "services", service(selector={"app": "a b"}),
     [("spec.selector", "Invalid",
       "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
       "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
       "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")]),
    ("svc type", "services", service(type="Internal"),
     [("spec.type", "NotSupported", 'supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"')]),
    ("svc nodePort on ClusterIP", "services", service(ports=[{"port": 80, "nodePort": 30080}]),
     [("spec.ports[0].nodePort", "Forbidden", "may not be used when `type` is 'ClusterIP'")]),
    ("svc NodePort ok", "services", service(type="NodePort", ports=[{"port": 80, "nodePort": 30080}]), []),
    ("svc sessionAffinity", "services", service(sessionAffinity="Sticky"),
     [("spec.sessionAffinity", "NotSupported", 'supported values: "ClientIP", "None"')]),
    # ConfigMap / Secret / ServiceAccount
    ("cm valid", "configmaps", {"metadata": meta("cfg"), "data": {"a.conf": "x", "B_2": "y"}}, []),
    ("cm bad key", "configmaps", {"metadata": meta("cfg"), "data": {"a/b": "x"}},
     [("data[a/b]", "Invalid",
       "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
       "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")]),
    ("cm key in both", "configmaps", {"metadata": meta("cfg"), "data": {"a": "x"}, "binaryData": {"a": "eA=="}},
     [("data[a]", "Invalid", "duplicate of key present in binaryData")]),
    ("cm too big", "configmaps", {"metadata": meta("cfg"), "data": {"a": "x" * (1024 * 1024 + 1)}},
     [("[]", "TooLong", "must have at most 1048576 bytes")]),
    ("secret valid", "secrets", {"metadata": meta("s"), "data": {"token": "c2VjcmV0"}}, []),
    ("secret bad key", "secrets", {"metadata": meta("s"), "data": {"..x": "eA=="}},
     [("data[..x]", "Invalid", "must not start with '..'")]),
    ("secret tls keys", "secrets", {"metadata": meta("s"), "type": "kubernetes.io/tls", "data": {}},
     [("data[tls.crt]", "Required", ""), ("data[tls.key]", "Required", "")]),
    ("secret sa token annotation", "secrets", {"metadata": meta("s"), "type": "kubernetes.io/service-account-token"},
     [("metadata.annotations[kubernetes.io/service-account.name]", "Required", "")]),
    ("sa valid", "serviceaccounts", {"metadata": meta("builder")}, []),
    ("sa namespace required", "serviceaccounts", {"metadata": meta("builder", None)},
     [("metadata.namespace", "Required", "")]),
    ("sa namespace format", "serviceaccounts", {"metadata": meta("builder", "Bad_NS")},
     [("metadata.namespace", "Invalid", LABEL_MSG)]),
    # Events
    ("event valid", "events", {"metadata": meta("ds.1", "monitoring"),
                               "involvedObject": {"kind": "DaemonSet", "namespace": "monitoring", "name": "ds"}}, []),
    ("event namespace mismatch", "events", {"metadata": meta("ev", "monitoring"),
                                            "involvedObject": {"namespace": "default"}},
     [("involvedObject.namespace", "Invalid", "does not match event.namespace")]),
    ("event cluster-scoped object in default", "events", {"metadata": meta("ev", "default"),
                                                          "involvedObject": {"kind": "Node", "name": "n1"}}, []),
    ("event new-style needs reporting fields", "events", {"metadata": meta("ev", "default"),
                                                          "eventTime": "2024-01-01T00:00:00.000000Z",
                                                          "involvedObject": {"namespace": "default"}},
     [("reportingController", "Required", ""),
      ("reportingController", "Invalid", "name part must be non-empty"),
      ("reportingController", "Invalid",
       "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
       "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
       "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
      ("reportingInstance", "Required", ""), ("action", "Required", ""), ("reason", "Required", "")]),
    # core/v1 Event names: only the registry's path-segment rule (rest.BeforeCreate), checked after
    # legacyValidateEvent has passed
    ("event name needs no DNS form", "events", {"metadata": meta("Pod_A.17f0", "default"),
                                                "involvedObject": {"namespace": "default"}}, []),
    ("event name with a slash", "events", {"metadata": meta("a/b", "default"), "involvedObject": {}},
     [("metadata.name", "Invalid", "may not contain '/'")]),
    ("event name dot-dot", "events", {"metadata": meta("..", "default"), "involvedObject": {}},
     [("metadata.name", "Invalid", "may not be '..'")]),
    ("event legacy error first", "events", {"metadata": meta("a%b", "monitoring"),
                                            "involvedObject": {"namespace": "default"}},
     [("involvedObject.namespace", "Invalid", "does not match event.namespace")]),
    ("events.k8s.io valid", "events.events.k8s.io", {
        "metadata": meta("ev", "default"), "eventTime": "2024-01-01T00:00:00.000000Z", "type": "Normal",
        "reportingController": "everynode.io/daemonset-controller", "reportingInstance": "i", "action": "Create",
        "reason": "SuccessfulCreate", "regarding": {"namespace": "default"}}, []),
    # Endpoints
    ("ep valid", "endpoints", {"metadata": meta("web"), "subsets": [{"addresses": [{"ip": "10.0.0.1"}],
                                                                     "ports": [{"port": 80}]}]}, []),
    ("ep needs addresses", "endpoints", {"metadata": meta("web"), "subsets": [{"ports": [{"port": 80}]}]},
     [("subsets[0]", "Required", "must specify `addresses` or `notReadyAddresses`")]),
    ("ep bad ip", "endpoints", {"metadata": meta("web"), "subsets": [{"addresses": [{"ip": "10.0.0"}]}]},
     [("subsets[0].addresses[0].ip", "Invalid", "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")]),
    # Lease
    ("lease valid", "leases.coordination.k8s.io", {"metadata": meta("n1", "kube-node-lease"),
                                                   "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40}}, []),
    ("lease duration", "leases.coordination.k8s.io", {"metadata": meta("n1"), "spec": {"leaseDurationSeconds": 0}},
     [("spec.leaseDurationSeconds", "Invalid", "must be greater than 0")]),
    ("lease transitions", "leases.coordination.k8s.io", {"metadata": meta("n1"), "spec": {"leaseTransitions": -1}},
     [("spec.leaseTransitions", "Invalid", "must be greater than or equal to 0")]),
    # PriorityClass
    ("pc valid", "priorityclasses.scheduling.k8s.io", {"metadata": meta("high", None), "value": 1000000000}, []),
    ("pc value too high", "priorityclasses.scheduling.k8s.io", {"metadata": meta("high", None), "value": 1000000001},
     [("value", "Forbidden", "maximum allowed value of a user defined priority is 1000000000")]),
    ("pc system prefix", "priorityclasses.scheduling.k8s.io", {"metadata": meta("system-mine", None), "value": 1},
     [("metadata.name", "Forbidden", "priority class names with 'system-' prefix are reserved for system use only. "
                                     "error: system-mine is not a known system priority class")]),
    ("pc system class value", "priorityclasses.scheduling.k8s.io",
     {"metadata": meta("system-node-critical", None), "value": 5},
     [("metadata.name", "Forbidden", "priority class names with 'system-' prefix are reserved for system use only. "
                                     "error: value of system-node-critical PriorityClass must be 2000001000")]),
    ("pc system class ok", "priorityclasses.scheduling.k8s.io",
     {"metadata": meta("system-node-critical", None), "value": 2000001000}, []),
    ("pc preemption policy", "priorityclasses.scheduling.k8s.io",
     {"metadata": meta("p", None), "value": 1, "preemptionPolicy": "Sometimes"},
     [("preemptionPolicy", "NotSupported", 'supported values: "PreemptLowerPriority", "Never"')]),
    ("pc namespaced forbidden", "priorityclasses.scheduling.k8s.io", {"metadata": meta("p", "default"), "value": 1},
     [("metadata.namespace", "Forbidden", "not allowed on this type")]),
    # EndpointSlice
    ("eps valid", "endpointslices.discovery.k8s.io", {"metadata": meta("web-abc"), "addressType": "IPv4",
                                                      "endpoints": [{"addresses": ["10.0.0.1"]}],
                                                      "ports": [{"port": 80}]}, []),
    ("eps address type", "endpointslices.discovery.k8s.io", {"metadata": meta("web-abc"), "addressType": "IPv5"},
     [("addressType", "NotSupported", 'supported values: "IPv4", "IPv6", "FQDN"')]),
    # fallback for a kind without specific rules
    ("unknown kind gets ObjectMeta checks", "widgets.example.com", {"metadata": {"name": "Bad Name"}},
     [("metadata.name", "Invalid",
       "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
       "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
      ("metadata.namespace", "Required", "")]),
]


@pytest.mark.parametrize(("key", "obj", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_create(key: str, obj: Obj, expected: list[tuple[str, str, str]]) -> None:
    assert check(key, obj) == expected


def _stored(key: str, obj: Obj) -> Obj:
    obj = copy.deepcopy(obj)
    apply_defaults(key, obj)
    obj["metadata"].update(uid="u1", resourceVersion="3", creationTimestamp="2024-01-01T00:00:00Z")
    return obj


def _update(key: str, old: Obj, mutate: Any, *, status: bool = False) -> list[tuple[str, str, str]]:
    old = _stored(key, old)
    new = copy.deepcopy(old)
    mutate(new)
    fn = validate_status_update if status else validate_update
    return [(e.field, e.type, e.detail) for e in fn(key, new, old)]


def test_priority_class_value_immutable() -> None:
    pc = {"metadata": meta("high", None), "value": 100}
    assert _update("priorityclasses.scheduling.k8s.io", pc, lambda o: o.update(value=200)) == [
        ("value", "Forbidden", "may not be changed in an update.")]
    assert _update("priorityclasses.scheduling.k8s.io", pc, lambda o: o.update(description="d")) == []


def test_priority_class_preemption_policy_immutable() -> None:
    pc = {"metadata": meta("high", None), "value": 100}
    assert _update("priorityclasses.scheduling.k8s.io", pc, lambda o: o.update(preemptionPolicy="Never")) == [
        ("preemptionPolicy", "Invalid", "field is immutable")]


def test_namespace_status_phase_rules() -> None:
    ns = {"metadata": meta("monitoring", None)}
    assert _update("namespaces", ns, lambda o: o["status"].update(phase="Terminating"), status=True) == [
        ("status.Phase", "Invalid", "may only be 'Active' if `deletionTimestamp` is empty")]

    def terminating(o: Obj) -> None:
        o["metadata"]["deletionTimestamp"] = "2024-01-02T00:00:00Z"
        o["status"]["phase"] = "Active"

    got = _update("namespaces", ns, terminating, status=True)
    assert ("status.Phase", "Invalid", "may only be 'Terminating' if `deletionTimestamp` is not empty") in got


def test_namespace_finalize_uses_indexed_paths() -> None:
    old = _stored("namespaces", {"metadata": meta("monitoring", None)})
    new = copy.deepcopy(old)
    new["spec"]["finalizers"] = ["kubernetes", "custom"]
    assert [(e.field, e.detail) for e in validate_namespace_finalize(new, old)] == [
        ("spec.finalizers[1]", "name is neither a standard finalizer name nor is it fully qualified")]


def test_no_new_finalizers_while_deleting() -> None:
    old = _stored("configmaps", {"metadata": meta("cfg", finalizers=["example.com/a"])})
    old["metadata"]["deletionTimestamp"] = "2024-01-02T00:00:00Z"
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = ["example.com/a", "example.com/b"]
    assert [str(e) for e in validate_update("configmaps", new, old)] == [
        'metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, '
        'found new finalizers []string{"example.com/b"}']


def test_immutable_config_map() -> None:
    cm = {"metadata": meta("cfg"), "data": {"a": "1"}, "immutable": True}
    assert _update("configmaps", cm, lambda o: o["data"].update(a="2")) == [
        ("data", "Forbidden", "field is immutable when `immutable` is set")]


def test_secret_type_immutable() -> None:
    secret = {"metadata": meta("s"), "data": {}}
    assert _update("secrets", secret, lambda o: o.update(type="example.com/custom")) == [
        ("type", "Invalid", "field is immutable")]


def test_node_update_taints_and_provider() -> None:
    n = {"metadata": meta("n1", None), "spec": {"providerID": "sim://n1"}}

    def mutate(o: Obj) -> None:
        o["spec"]["taints"] = [{"key": "k", "effect": "Bogus"}]
        o["spec"]["providerID"] = "sim://other"

    assert _update("nodes", n, mutate) == [
        ("spec.providerID", "Forbidden", 'node updates may not change providerID except from "" to valid'),
        ("metadata.taints[0].effect", "NotSupported",
         'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'),
    ]
    assert _update("nodes", {"metadata": meta("n1", None)}, lambda o: o.setdefault("spec", {}).update(unschedulable=True)) == []


def test_node_status_update() -> None:
    n = {"metadata": meta("n1", None)}
    assert _update("nodes", n, lambda o: o.update(status={"addresses": [{"type": "InternalIP", "address": "1.2.3.4"}] * 2}),
                   status=True) == [("status.addresses[1]", "Duplicate", "")]


def test_service_cluster_ip_immutable() -> None:
    svc = service(clusterIP="10.96.0.10", clusterIPs=["10.96.0.10"])
    got = _update("services", svc, lambda o: o["spec"].update(clusterIP="10.96.0.11", clusterIPs=["10.96.0.11"]))
    assert got == [("spec.clusterIPs[0]", "Invalid", "may not change once set")]
    got = _update("services", svc, lambda o: o["spec"].update(clusterIPs=[]))
    assert got == [("spec.clusterIPs[0]", "Invalid", "primary clusterIP can not be unset")]


def test_lease_update_revalidates() -> None:
    lease = {"metadata": meta("n1", "kube-node-lease"), "spec": {"leaseDurationSeconds": 40}}
    assert _update("leases.coordination.k8s.io", lease, lambda o: o["spec"].update(renewTime="x")) == []
    assert _update("leases.coordination.k8s.io", lease, lambda o: o["spec"].update(leaseDurationSeconds=-5)) == [
        ("spec.leaseDurationSeconds", "Invalid", "must be greater than 0")]


def test_update_name_immutable_message() -> None:
    old = _stored("serviceaccounts", {"metadata": meta("builder")})
    new = copy.deepcopy(old)
    new["metadata"]["name"] = "other"
    assert [str(e) for e in validate_update("serviceaccounts", new, old)] == [
        'metadata.name: Invalid value: "other": field is immutable']


def test_generation_must_not_decrease() -> None:
    old = _stored("configmaps", {"metadata": meta("cfg")})
    old["metadata"]["generation"] = 3
    new = copy.deepcopy(old)
    new["metadata"]["generation"] = 2
    assert [str(e) for e in validate_update("configmaps", new, old)] == [
        "metadata.generation: Invalid value: 2: must not be decremented"]


def test_event_update_reports_a_bad_label_once() -> None:
    """core/v1 Event update = ValidateObjectMetaUpdate + legacyValidateEvent: an invalid new label
    is one error (not also a second time from a create rule)."""
    old = _stored("events", {"metadata": meta("ev", "default"), "involvedObject": {"namespace": "default"}})
    errs = _update("events", old, lambda e: e["metadata"].setdefault("labels", {}).update({"a": "-bad"}))
    assert [e[0] for e in errs] == ["metadata.labels"]
