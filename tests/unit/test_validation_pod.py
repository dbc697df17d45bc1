"""Pod validation (pkg/apis/core/validation/validation.go): paths, types and detail texts."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from everynode.api.defaults import apply_defaults
from everynode.api.validation import validate_create, validate_status_update, validate_update

Obj = dict[str, Any]
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
RANGE = "must be between 1 and 65535, inclusive"


def pod(**spec: Any) -> Obj:
    obj: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}], **spec}}
    return obj


def ctr(**fields: Any) -> Obj:
    return {"name": "c", "image": "nginx:1.27", **fields}


def errors_of(obj: Obj) -> list[tuple[str, str, str]]:
    apply_defaults("pods", obj)
    return [(e.field, e.type, e.detail) for e in validate_create("pods", obj)]


CASES: list[tuple[str, Obj, list[tuple[str, str, str]]]] = [
    ("valid", pod(), []),
    ("no containers", pod(containers=[]), [("spec.containers", "Required", "")]),
    ("container name missing", pod(containers=[{"image": "x"}]), [("spec.containers[0].name", "Required", "")]),
    ("container name not a label", pod(containers=[ctr(name="Web")]), [("spec.containers[0].name", "Invalid", LABEL_MSG)]),
    ("duplicate container names", pod(containers=[ctr(), ctr()]), [("spec.containers[1].name", "Duplicate", "")]),
    ("init name clashes with container", pod(initContainers=[ctr()]),
     [("spec.initContainers[0].name", "Duplicate", "")]),
    ("image missing", pod(containers=[{"name": "c"}]), [("spec.containers[0].image", "Required", "")]),
    ("image whitespace", pod(containers=[ctr(image=" nginx")]),
     [("spec.containers[0].image", "Invalid", "must not have leading or trailing whitespace")]),
    ("container port 0", pod(containers=[ctr(ports=[{"containerPort": 0}])]),
     [("spec.containers[0].ports[0].containerPort", "Required", "")]),
    ("container port too big", pod(containers=[ctr(ports=[{"containerPort": 70000}])]),
     [("spec.containers[0].ports[0].containerPort", "Invalid", RANGE)]),
    ("host port too big", pod(containers=[ctr(ports=[{"containerPort": 80, "hostPort": 70000}])]),
     [("spec.containers[0].ports[0].hostPort", "Invalid", RANGE)]),
    ("bad protocol", pod(containers=[ctr(ports=[{"containerPort": 80, "protocol": "HTTP"}])]),
     [("spec.containers[0].ports[0].protocol", "NotSupported", 'supported values: "SCTP", "TCP", "UDP"')]),
    ("duplicate port names", pod(containers=[ctr(ports=[{"containerPort": 80, "name": "web"},
                                                        {"containerPort": 81, "name": "web"}])]),
     [("spec.containers[0].ports[1].name", "Duplicate", "")]),
    ("bad port name", pod(containers=[ctr(ports=[{"containerPort": 80, "name": "9100"}])]),
     [("spec.containers[0].ports[0].name", "Invalid", "must contain at least one letter (a-z)")]),
    ("host port conflict", pod(containers=[ctr(ports=[{"containerPort": 80, "hostPort": 8080}]),
                                           ctr(name="d", ports=[{"containerPort": 81, "hostPort": 8080}])]),
     [("spec.containers[1].ports[0].hostPort", "Duplicate", "")]),
    ("hostNetwork hostPort mismatch", pod(hostNetwork=True, containers=[ctr(ports=[{"containerPort": 80,
                                                                                    "hostPort": 81}])]),
     [("spec.containers[0].ports[0].hostPort", "Invalid", "must match `containerPort` when `hostNetwork` is true")]),
    ("volume mount of unknown volume", pod(containers=[ctr(volumeMounts=[{"name": "x", "mountPath": "/x"}])]),
     [("spec.containers[0].volumeMounts[0].name", "NotFound", "")]),
    ("mount path required", pod(volumes=[{"name": "v"}], containers=[ctr(volumeMounts=[{"name": "v"}])]),
     [("spec.containers[0].volumeMounts[0].mountPath", "Required", "")]),
    ("mount path unique", pod(volumes=[{"name": "v"}], containers=[ctr(volumeMounts=[
        {"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/a"}])]),
     [("spec.containers[0].volumeMounts[1].mountPath", "Invalid", "must be unique")]),
    ("duplicate volume names", pod(volumes=[{"name": "v"}, {"name": "v"}]),
     [("spec.volumes[1].name", "Duplicate", "")]),
    ("volume name not a label", pod(volumes=[{"name": "V"}]), [("spec.volumes[0].name", "Invalid", LABEL_MSG)]),
    ("two volume sources", pod(volumes=[{"name": "v", "hostPath": {"path": "/x"}, "configMap": {"name": "c"}}]),
     [("spec.volumes[0].configMap", "Forbidden", "may not specify more than 1 volume type")]),
    ("hostPath path required", pod(volumes=[{"name": "v", "hostPath": {"path": ""}}]),
     [("spec.volumes[0].hostPath.path", "Required", "")]),
    ("hostPath type", pod(volumes=[{"name": "v", "hostPath": {"path": "/x", "type": "Dir"}}]),
     [("spec.volumes[0].hostPath.type", "NotSupported",
       'supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", '
       '"FileOrCreate", "Socket"')]),
    ("hostPath backsteps", pod(volumes=[{"name": "v", "hostPath": {"path": "/a/../b"}}]),
     [("spec.volumes[0].hostPath.path", "Invalid", "must not contain '..'")]),
    ("configMap defaultMode", pod(volumes=[{"name": "v", "configMap": {"name": "c", "defaultMode": 1000}}]),
     [("spec.volumes[0].configMap.defaultMode", "Invalid",
       "must be a number between 0 and 0777 (octal), both inclusive")]),
    ("secret name required", pod(volumes=[{"name": "v", "secret": {}}]),
     [("spec.volumes[0].secret.secretName", "Required", "")]),
    ("restartPolicy", pod(restartPolicy="Sometimes"),
     [("spec.restartPolicy", "NotSupported", 'supported values: "Always", "OnFailure", "Never"')]),
    ("dnsPolicy", pod(dnsPolicy="Google"),
     [("spec.dnsPolicy", "NotSupported",
       'supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"')]),
    ("dnsPolicy None needs dnsConfig", pod(dnsPolicy="None"),
     [("spec.dnsConfig", "Required", "must provide `dnsConfig` when `dnsPolicy` is None")]),
    ("toleration Exists with value", pod(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
     [("spec.tolerations[0].operator", "Invalid", "value must be empty when `operator` is 'Exists'")]),
    ("toleration empty key needs Exists", pod(tolerations=[{"operator": "Equal", "value": "v"}]),
     [("spec.tolerations[0].operator", "Invalid",
       'operator must be Exists when `key` is empty, which means "match all values and all keys"')]),
    ("toleration effect", pod(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoRun"}]),
     [("spec.tolerations[0].effect", "NotSupported",
       'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"')]),
    ("tolerationSeconds without NoExecute", pod(tolerations=[{"key": "k", "operator": "Exists",
                                                              "effect": "NoSchedule", "tolerationSeconds": 5}]),
     [("spec.tolerations[0].effect", "Invalid", "effect must be 'NoExecute' when `tolerationSeconds` is set")]),
    ("toleration operator", pod(tolerations=[{"key": "k", "operator": "Gt"}]),
     [("spec.tolerations[0].operator", "NotSupported", 'supported values: "Equal", "Exists"')]),
    ("toleration key", pod(tolerations=[{"key": "-k", "operator": "Exists"}]),
     [("spec.tolerations[0].key", "Invalid",
       "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
       "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
       "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")]),
    ("node affinity no terms", pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": []}}}),
     [("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", "Required",
       "must have at least one node selector term")]),
    ("node affinity bad operator", pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Is", "values": ["a"]}]}]}}}),
     [("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
       ".matchExpressions[0].operator", "Invalid", "not a valid selector operator")]),
    ("node affinity Gt needs one value", pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "k", "operator": "Gt", "values": ["1", "2"]}]}]}}}),
     [("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
       ".matchExpressions[0].values", "Required", "must be specified single value when `operator` is 'Lt' or 'Gt'")]),
    ("matchFields only metadata.name", pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.labels", "operator": "In", "values": ["a"]}]}]}}}),
     [("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
       ".matchFields[0].key", "Invalid", "not a valid field selector key")]),
    ("matchFields single value", pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}]}}}),
     [("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
       ".matchFields[0].values", "Required",
       "must be only one value when `operator` is 'In' or 'NotIn' for node field selector")]),
    ("preferred weight", pod(affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 0, "preference": {}}]}}),
     [("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", "Invalid",
       "must be in the range 1-100")]),
    ("nodeSelector value", pod(nodeSelector={"disk": "ssd!"}),
     [("spec.nodeSelector", "Invalid",
       "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
       "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
       "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")]),
    ("requests over limits", pod(containers=[ctr(resources={"limits": {"cpu": "1"}, "requests": {"cpu": "2"}})]),
     [("spec.containers[0].resources.requests", "Invalid", "must be less than or equal to cpu limit of 1")]),
    ("negative quantity", pod(containers=[ctr(resources={"requests": {"memory": "-1Mi"}})]),
     [("spec.containers[0].resources.requests[memory]", "Invalid", "must be greater than or equal to 0")]),
    ("malformed quantity", pod(containers=[ctr(resources={"requests": {"cpu": "lots"}})]),
     [("spec.containers[0].resources.requests[cpu]", "Invalid",
       "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]),
    ("unknown resource name", pod(containers=[ctr(resources={"requests": {"gpu": "1"}})]),
     [("spec.containers[0].resources.requests[gpu]", "Invalid", "must be a standard resource type or fully qualified"),
      ("spec.containers[0].resources.requests[gpu]", "Invalid", "must be a standard resource for containers")]),
    ("extended resource needs limit", pod(containers=[ctr(resources={"requests": {"example.com/gpu": "1"}})]),
     [("spec.containers[0].resources.limits", "Required", "Limit must be set for non overcommitable resources")]),
    ("terminationGracePeriodSeconds required", pod(terminationGracePeriodSeconds=None), []),
    ("activeDeadlineSeconds", pod(activeDeadlineSeconds=0),
     [("spec.activeDeadlineSeconds", "Invalid", "must be between 1 and 2147483647, inclusive")]),
    ("probe needs a handler", pod(containers=[ctr(livenessProbe={"periodSeconds": 5})]),
     [("spec.containers[0].livenessProbe", "Required", "must specify a handler type")]),
    ("probe two handlers", pod(containers=[ctr(readinessProbe={"exec": {"command": ["x"]},
                                                               "tcpSocket": {"port": 80}})]),
     [("spec.containers[0].readinessProbe.tcpSocket", "Forbidden", "may not specify more than 1 handler type")]),
    ("liveness successThreshold", pod(containers=[ctr(livenessProbe={"tcpSocket": {"port": 80},
                                                                     "successThreshold": 2})]),
     [("spec.containers[0].livenessProbe.successThreshold", "Invalid", "must be 1")]),
    ("probe port", pod(containers=[ctr(livenessProbe={"httpGet": {"port": 0}})]),
     [("spec.containers[0].livenessProbe.httpGet.port", "Invalid", RANGE)]),
    ("init container probe", pod(initContainers=[ctr(name="init", livenessProbe={"tcpSocket": {"port": 80}})]),
     [("spec.initContainers[0].livenessProbe", "Forbidden",
       "may not be set for init containers without restartPolicy=Always")]),
    ("env name", pod(containers=[ctr(env=[{"name": "A=B"}])]),
     [("spec.containers[0].env[0].name", "Invalid",
       "a valid environment variable name must consist only of printable ASCII characters other than '='")]),
    ("env value and valueFrom", pod(containers=[ctr(env=[{"name": "A", "value": "x", "valueFrom": {
        "fieldRef": {"fieldPath": "metadata.name"}}}])]),
     [("spec.containers[0].env[0].valueFrom", "Invalid", "may not be specified when `value` is not empty")]),
    ("env fieldRef path", pod(containers=[ctr(env=[{"name": "A", "valueFrom": {
        "fieldRef": {"fieldPath": "spec.hostname"}}}])]),
     [("spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", "NotSupported",
       'supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", '
       '"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"')]),
    ("nodeName", pod(nodeName="Node_1"), [("spec.nodeName", "Invalid",
                                          "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                                          "characters, '-' or '.', and must start and end with an alphanumeric "
                                          "character (e.g. 'example.com', regex used for validation is "
                                          "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")]),
    ("ephemeral containers on create", pod(ephemeralContainers=[{"name": "dbg", "image": "busybox"}]),
     [("spec.ephemeralContainers", "Forbidden", "cannot be set on create")]),
]


@pytest.mark.parametrize(("obj", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_pod_create(obj: Obj, expected: list[tuple[str, str, str]]) -> None:
    assert errors_of(obj) == expected


def test_volume_mount_not_found_message() -> None:
    obj = pod(containers=[ctr(volumeMounts=[{"name": "x", "mountPath": "/x"}])])
    apply_defaults("pods", obj)
    assert [str(e) for e in validate_create("pods", obj)] == ['spec.containers[0].volumeMounts[0].name: Not found: "x"']


def test_host_port_conflict_value() -> None:
    obj = pod(containers=[ctr(ports=[{"containerPort": 80, "hostPort": 8080}]),
                          ctr(name="d", ports=[{"containerPort": 81, "hostPort": 8080}])])
    apply_defaults("pods", obj)
    assert str(validate_create("pods", obj)[0]) == 'spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"'


def test_required_grace_period_without_defaults() -> None:
    obj = pod()
    apply_defaults("pods", obj)
    del obj["spec"]["terminationGracePeriodSeconds"]
    assert [(e.field, e.type) for e in validate_create("pods", obj)] == [
        ("spec.terminationGracePeriodSeconds", "Required")]


def test_metadata_rules() -> None:
    obj = pod()
    del obj["metadata"]["namespace"]
    obj["metadata"]["labels"] = {"a/b/c": "x"}
    apply_defaults("pods", obj)
    got = [(e.field, e.type) for e in validate_create("pods", obj)]
    assert got == [("metadata.namespace", "Required"), ("metadata.labels", "Invalid")]


def test_generate_name_without_name() -> None:
    obj = pod()
    obj["metadata"] = {"generateName": "web-", "namespace": "default"}
    apply_defaults("pods", obj)
    assert [str(e) for e in validate_create("pods", obj)] == [
        "metadata.name: Required value: name or generateName is required"]


def test_owner_references_and_annotations() -> None:
    obj = pod()
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "", "uid": "u",
                                           "controller": True},
                                          {"apiVersion": "", "kind": "X", "name": "n", "uid": "v", "controller": True}]
    obj["metadata"]["annotations"] = {"big": "x" * (256 * 1024)}
    apply_defaults("pods", obj)
    got = [(e.field, e.type, e.detail) for e in validate_create("pods", obj)]
    assert got == [
        ("metadata.annotations", "TooLong", "must have at most 262144 bytes"),
        ("metadata.ownerReferences.name", "Invalid", "must not be empty"),
        ("metadata.ownerReferences.apiVersion", "Invalid", "version must not be empty"),
        ("metadata.ownerReferences", "Invalid",
         'Only one reference can have Controller set to true. Found "true" in references for DaemonSet/ and X/n'),
    ]


# --- update -------------------------------------------------------------------------------------

def stored_pod(**spec: Any) -> Obj:
    obj = pod(**spec)
    apply_defaults("pods", obj)
    obj["metadata"].update(uid="u1", resourceVersion="7", creationTimestamp="2024-01-01T00:00:00Z")
    return obj


FORBIDDEN_PREFIX = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"
)


@pytest.mark.parametrize("mutate", [
    lambda p: p["spec"]["containers"][0].update(image="nginx:1.28"),
    lambda p: p["spec"].update(activeDeadlineSeconds=60),
    lambda p: p["spec"].update(tolerations=[{"key": "k", "operator": "Exists"}]),
    lambda p: p["metadata"].update(labels={"x": "y"}, annotations={"a": "b"}),
])
def test_pod_update_allowed(mutate: Any) -> None:
    old = stored_pod()
    new = copy.deepcopy(old)
    mutate(new)
    assert validate_update("pods", new, old) == []


def test_pod_update_forbidden_field() -> None:
    old = stored_pod()
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "protocol": "TCP"}]
    errs = validate_update("pods", new, old)
    assert [(e.field, e.type) for e in errs] == [("spec", "Forbidden")]
    assert errs[0].detail.startswith(FORBIDDEN_PREFIX)
    assert "containers[0].ports" in errs[0].detail


def test_pod_update_node_name_change_is_forbidden() -> None:
    old = stored_pod(nodeName="n1")
    new = copy.deepcopy(old)
    new["spec"]["nodeName"] = "n2"
    assert str(validate_update("pods", new, old)[0]).startswith("spec: Forbidden: " + FORBIDDEN_PREFIX)


def test_pod_update_add_container() -> None:
    old = stored_pod()
    new = copy.deepcopy(old)
    new["spec"]["containers"].append(dict(new["spec"]["containers"][0], name="d"))
    assert [(e.field, e.type, e.detail) for e in validate_update("pods", new, old)] == [
        ("spec.containers", "Forbidden", "pod updates may not add or remove containers")]


def test_pod_update_toleration_modified() -> None:
    old = stored_pod(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}])
    new = copy.deepcopy(old)
    new["spec"]["tolerations"][0]["tolerationSeconds"] = 10  # allowed
    assert validate_update("pods", new, old) == []
    new["spec"]["tolerations"][0]["key"] = "other"
    assert [(e.field, e.type, e.detail) for e in validate_update("pods", new, old)] == [
        ("spec.tolerations", "Forbidden", "existing toleration can not be modified except its tolerationSeconds")]


def test_pod_update_active_deadline_only_decreases() -> None:
    old = stored_pod(activeDeadlineSeconds=30)
    new = copy.deepcopy(old)
    new["spec"]["activeDeadlineSeconds"] = 60
    assert [(e.field, e.detail) for e in validate_update("pods", new, old)] == [
        ("spec.activeDeadlineSeconds", "must be less than or equal to previous value")]


def test_pod_status_update_cannot_change_node_name() -> None:
    old = stored_pod()
    new = copy.deepcopy(old)
    new["spec"]["nodeName"] = "n1"
    new["status"] = {"phase": "Running"}
    assert [(e.field, e.type, e.detail) for e in validate_status_update("pods", new, old)] == [
        ("status.nodeName", "Forbidden", "may not be changed directly")]


# One toleration changed one input at a time, all at the same path: a memo of the toleration
# check that left an input out of its key would answer one of them with another's errors.
_TOLERATIONS = [
    {"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "a", "operator": "Exists", "effect": "NoExecute"},
    {"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 300},
    {"key": "a", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "a", "operator": "Exists", "effect": "Bogus"},
    {"key": "a", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
    {"key": "a", "operator": "Equal", "value": "bad value!", "effect": "NoSchedule"},
    {"key": "a", "operator": "Exists", "value": "v"},
    {"key": "a", "operator": "In"},
    {"key": "", "operator": "Equal"},
    {"operator": "Exists"},
    {"key": "bad key!", "operator": "Exists"},
    {"key": "a", "operator": 1, "effect": ["x"], "tolerationSeconds": 0},
    {"key": "a", "tolerationSeconds": None},
    {},
]


def test_toleration_checks_are_the_plain_computation() -> None:
    from everynode.api.validation.meta import as_str
    from everynode.api.validation.pod import _validate_toleration, validate_tolerations

    for _ in range(2):  # the second round answers from the memo
        for tol in _TOLERATIONS:
            plain = _validate_toleration("spec.tolerations[0]", as_str(tol.get("key")), as_str(tol.get("operator")),
                                         as_str(tol.get("effect")), as_str(tol.get("value")),
                                         tol.get("tolerationSeconds") is not None)
            assert validate_tolerations([tol], "spec.tolerations") == plain, tol
        both = validate_tolerations([_TOLERATIONS[6], "not an object", _TOLERATIONS[4]], "x")
        assert [e.field for e in both] == ["x[0].operator", "x[1].operator", "x[2].effect"]


def _pin(*values: Any, key: str = "metadata.name", operator: str = "In", **extra: Any) -> Obj:
    requirement = {"key": key, "operator": operator, "values": list(values)}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [requirement]}]}}, **extra}


# DaemonSet node pins (checked alone: only the name can be wrong) and affinities of nearly their
# shape (walked): both must give what the walk gives.
_PINS = [
    _pin("worker-1"),
    _pin("ip-10-0-0-1.ec2.internal"),
    _pin("Worker_1"),
    _pin(""),
    _pin("a" * 254),
    _pin("-x-"),
    _pin("worker-1", "worker-2"),
    _pin("worker-1", key="metadata.namespace"),
    _pin("worker-1", operator="NotIn"),
    _pin("Worker_1", operator="Exists"),
    _pin(1),
    _pin("worker-1", podAntiAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": ""}]}),
    {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["Bad_Name"]}],
         "matchExpressions": [{"key": "k", "operator": "Bad"}]}]}}},
    {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["x"], "extra": 1}]}]}}},
    {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}},
]


@pytest.mark.parametrize("affinity", _PINS)
def test_a_node_pin_checked_alone_gives_what_the_walk_gives(affinity: Obj) -> None:
    from everynode.api.validation.pod import _validate_affinity_walk, validate_affinity

    def found(errs: list[Any]) -> list[tuple[str, str, str]]:
        return [(e.field, e.type, e.detail) for e in errs]

    assert found(validate_affinity(affinity, "spec.affinity")) == found(_validate_affinity_walk(affinity, "spec.affinity"))
    assert found(validate_affinity(affinity, "")) == found(_validate_affinity_walk(affinity, ""))


def test_only_the_daemonset_pin_shape_is_checked_alone() -> None:
    from everynode.api.scheduling import node_pin_name as _node_pin_name

    assert [_node_pin_name(a) for a in _PINS[:6]] == ["worker-1", "ip-10-0-0-1.ec2.internal", "Worker_1", "",
                                                      "a" * 254, "-x-"]
    assert all(_node_pin_name(a) is None for a in _PINS[6:])
    assert _node_pin_name(None) is None and _node_pin_name({}) is None


@pytest.mark.parametrize("affinity", _PINS)
def test_a_node_pin_is_type_checked_as_the_walk_checks_it(affinity: Obj) -> None:
    # The type check finds a pin clean without walking it; near-pins (a wrong type, an unknown
    # field) are walked, and the verdict is the walk's either way.
    from everynode.api import typecheck

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i"}], "affinity": affinity}}
    assert typecheck.is_clean("v1", "Pod", pod) == (not typecheck.walk("v1", "Pod", pod))


def test_every_node_pin_has_the_members_the_walk_gives_it() -> None:
    import orjson

    from everynode.api import schema
    from everynode.api.scheduling import node_pin_name
    from everynode.apiserver.patch import apply

    node = schema.kind_node("v1", "Pod").child("spec").child("affinity")
    pins = [a for a in _PINS if node_pin_name(a) is not None]
    assert len(pins) == 6
    for depth in (2, 3):
        assert all(apply._position(a, node, depth) == apply._walk(a, node, apply._UNMEMOISED) for a in pins)
    # (one tree for every node named: the reason the first pin's walk serves them all)
    assert len({orjson.dumps(apply._walk(a, node, apply._UNMEMOISED)) for a in pins}) == 1


def test_a_generated_name_is_checked_but_not_remembered() -> None:
    """A name made from ``generateName`` is new by construction: it is checked (its errors come
    as always) but not entered in the table of names known valid, which keeps the names that
    repeat; a given name is remembered."""
    from everynode.api.names import name_is_dns_subdomain
    from everynode.api.validation import meta

    meta._VALID_NAMES.clear()
    assert meta.validate_object_name({"name": "agent-x7k2p", "generateName": "agent-"},
                                     name_fn=name_is_dns_subdomain) == []
    assert not meta._VALID_NAMES
    bad = meta.validate_object_name({"name": "Agent_X", "generateName": "Agent_"}, name_fn=name_is_dns_subdomain)
    assert [e.field for e in bad] == ["metadata.name"]
    assert meta.validate_object_name({"name": "web"}, name_fn=name_is_dns_subdomain) == []
    assert (name_is_dns_subdomain, "web", False) in meta._VALID_NAMES
