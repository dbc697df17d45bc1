"""Decoding of Kubernetes protobuf request bodies (``application/vnd.kubernetes.protobuf``).

Why: kubectl ≥1.32 posts protobuf from its typed clients (``create namespace|configmap|secret|
serviceaccount``, the drain DELETE fallback, …) and a 415 is not retried as JSON
(kubectl-contract.md §8, gotcha 1).  Responses stay JSON, so only decoding is needed, and only
for the kinds those commands send.  A small wire-format reader with hand-written field tables
(numbers from upstream ``generated.proto``) is enough; compiling the upstream ``.proto`` files
would pull in protoc and thousands of message types for the few kinds kubectl sends.

Envelope: the 4 bytes ``k8s\\0`` then a ``runtime.Unknown`` {1 typeMeta {1 apiVersion, 2 kind},
2 raw (the object's own message), 3 contentEncoding, 4 contentType}.  The result is the
JSON-shaped object Go's encoding/json would produce: zero-valued non-pointer scalars and empty
maps/lists are omitted (``omitempty``), present sub-messages are kept even when empty
(``"spec":{}``), pointer fields are kept when present, ``creationTimestamp`` is dropped when
zero, ``bytes`` become base64 strings.  Anything malformed raises :class:`ValueError`.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

import orjson

MAGIC = b"k8s\x00"

# kinds: "str", "bytes", "int", "bool", "msg", "map_ss" (map<string,string>), "map_sb"
# (map<string,bytes>), "map_sq" (map<string,Quantity>), "inline" (an embedded struct whose fields JSON
# puts in the parent), "time" (meta/v1 Time), "fields" (FieldsV1: raw JSON bytes).
# Flags: "rep" repeated, "ptr" pointer in Go (present ⇒ emitted even when zero).
Field = tuple[str, str, Any, str]
Table = dict[int, Field]

OWNER_REFERENCE: Table = {
    1: ("kind", "str", None, ""), 3: ("name", "str", None, ""), 4: ("uid", "str", None, ""),
    5: ("apiVersion", "str", None, ""), 6: ("controller", "bool", None, "ptr"),
    7: ("blockOwnerDeletion", "bool", None, "ptr"),
}
MANAGED_FIELDS_ENTRY: Table = {
    1: ("manager", "str", None, ""), 2: ("operation", "str", None, ""), 3: ("apiVersion", "str", None, ""),
    4: ("time", "time", None, ""), 6: ("fieldsType", "str", None, ""), 7: ("fieldsV1", "fields", None, ""),
    8: ("subresource", "str", None, ""),
}
OBJECT_META: Table = {
    1: ("name", "str", None, ""), 2: ("generateName", "str", None, ""), 3: ("namespace", "str", None, ""),
    4: ("selfLink", "str", None, ""), 5: ("uid", "str", None, ""), 6: ("resourceVersion", "str", None, ""),
    7: ("generation", "int", None, ""), 8: ("creationTimestamp", "time", None, ""),
    9: ("deletionTimestamp", "time", None, ""), 10: ("deletionGracePeriodSeconds", "int", None, "ptr"),
    11: ("labels", "map_ss", None, ""), 12: ("annotations", "map_ss", None, ""),
    13: ("ownerReferences", "msg", OWNER_REFERENCE, "rep"), 14: ("finalizers", "str", None, "rep"),
    17: ("managedFields", "msg", MANAGED_FIELDS_ENTRY, "rep"),
}
OBJECT_REFERENCE: Table = {
    1: ("kind", "str", None, ""), 2: ("namespace", "str", None, ""), 3: ("name", "str", None, ""),
    4: ("uid", "str", None, ""), 5: ("apiVersion", "str", None, ""), 6: ("resourceVersion", "str", None, ""),
    7: ("fieldPath", "str", None, ""),
}
LOCAL_OBJECT_REFERENCE: Table = {1: ("name", "str", None, "")}
NAMESPACE_CONDITION: Table = {
    1: ("type", "str", None, ""), 2: ("status", "str", None, ""), 4: ("lastTransitionTime", "time", None, ""),
    5: ("reason", "str", None, ""), 6: ("message", "str", None, ""),
}
NAMESPACE: Table = {
    1: ("metadata", "msg", OBJECT_META, ""),
    2: ("spec", "msg", {1: ("finalizers", "str", None, "rep")}, ""),
    3: ("status", "msg", {1: ("phase", "str", None, ""), 2: ("conditions", "msg", NAMESPACE_CONDITION, "rep")}, ""),
}
CONFIG_MAP: Table = {
    1: ("metadata", "msg", OBJECT_META, ""), 2: ("data", "map_ss", None, ""), 3: ("binaryData", "map_sb", None, ""),
    4: ("immutable", "bool", None, "ptr"),
}
SECRET: Table = {
    1: ("metadata", "msg", OBJECT_META, ""), 2: ("data", "map_sb", None, ""), 3: ("type", "str", None, ""),
    4: ("stringData", "map_ss", None, ""), 5: ("immutable", "bool", None, "ptr"),
}
SERVICE_ACCOUNT: Table = {
    1: ("metadata", "msg", OBJECT_META, ""), 2: ("secrets", "msg", OBJECT_REFERENCE, "rep"),
    3: ("imagePullSecrets", "msg", LOCAL_OBJECT_REFERENCE, "rep"),
    4: ("automountServiceAccountToken", "bool", None, "ptr"),
}
PRECONDITIONS: Table = {1: ("uid", "str", None, "ptr"), 2: ("resourceVersion", "str", None, "ptr")}
DELETE_OPTIONS: Table = {
    1: ("gracePeriodSeconds", "int", None, "ptr"), 2: ("preconditions", "msg", PRECONDITIONS, ""),
    3: ("orphanDependents", "bool", None, "ptr"), 4: ("propagationPolicy", "str", None, "ptr"),
    5: ("dryRun", "str", None, "rep"), 6: ("ignoreStoreReadErrorWithClusterBreakingPotential", "bool", None, "ptr"),
}
EVICTION: Table = {1: ("metadata", "msg", OBJECT_META, ""), 2: ("deleteOptions", "msg", DELETE_OPTIONS, "")}
BINDING: Table = {1: ("metadata", "msg", OBJECT_META, ""), 2: ("target", "msg", OBJECT_REFERENCE, "")}

# Workloads (apps/v1, autoscaling/v1): what ``kubectl create deployment`` and the typed clients
# send — the pod template's common fields (field numbers from core/v1 and apps/v1 generated.proto).
# The one pod template of every kind that carries one (Deployment, ReplicaSet, Job, and CronJob in
# protobuf_builtin.py).
LABEL_SELECTOR: Table = {
    1: ("matchLabels", "map_ss", None, ""),
    2: ("matchExpressions", "msg", {1: ("key", "str", None, ""), 2: ("operator", "str", None, ""),
                                    3: ("values", "str", None, "rep")}, "rep"),
}
CONTAINER_PORT: Table = {
    1: ("name", "str", None, ""), 2: ("hostPort", "int", None, ""), 3: ("containerPort", "int", None, ""),
    4: ("protocol", "str", None, ""), 5: ("hostIP", "str", None, ""),
}
RESOURCE_REQUIREMENTS: Table = {1: ("limits", "map_sq", None, ""), 2: ("requests", "map_sq", None, "")}
CONTAINER: Table = {
    1: ("name", "str", None, ""), 2: ("image", "str", None, ""), 3: ("command", "str", None, "rep"),
    4: ("args", "str", None, "rep"), 5: ("workingDir", "str", None, ""), 6: ("ports", "msg", CONTAINER_PORT, "rep"),
    7: ("env", "msg", {1: ("name", "str", None, ""), 2: ("value", "str", None, "")}, "rep"),
    8: ("resources", "msg", RESOURCE_REQUIREMENTS, ""),
    13: ("terminationMessagePath", "str", None, ""), 14: ("imagePullPolicy", "str", None, ""),
    16: ("stdin", "bool", None, ""), 17: ("stdinOnce", "bool", None, ""), 18: ("tty", "bool", None, ""),
    20: ("terminationMessagePolicy", "str", None, ""),
}
POD_SPEC: Table = {
    2: ("containers", "msg", CONTAINER, "rep"), 3: ("restartPolicy", "str", None, ""),
    4: ("terminationGracePeriodSeconds", "int", None, "ptr"), 5: ("activeDeadlineSeconds", "int", None, "ptr"),
    6: ("dnsPolicy", "str", None, ""), 7: ("nodeSelector", "map_ss", None, ""),
    8: ("serviceAccountName", "str", None, ""), 9: ("serviceAccount", "str", None, ""),
    10: ("nodeName", "str", None, ""),
    11: ("hostNetwork", "bool", None, ""), 12: ("hostPID", "bool", None, ""), 13: ("hostIPC", "bool", None, ""),
    14: ("securityContext", "msg", {}, ""), 15: ("imagePullSecrets", "msg", LOCAL_OBJECT_REFERENCE, "rep"),
    16: ("hostname", "str", None, ""), 17: ("subdomain", "str", None, ""),
    19: ("schedulerName", "str", None, ""), 20: ("initContainers", "msg", CONTAINER, "rep"),
    21: ("automountServiceAccountToken", "bool", None, "ptr"), 24: ("priorityClassName", "str", None, ""),
    25: ("priority", "int", None, "ptr"), 30: ("enableServiceLinks", "bool", None, "ptr"),
}
POD_TEMPLATE_SPEC: Table = {1: ("metadata", "msg", OBJECT_META, ""), 2: ("spec", "msg", POD_SPEC, "")}
DEPLOYMENT: Table = {
    1: ("metadata", "msg", OBJECT_META, ""),
    2: ("spec", "msg", {
        1: ("replicas", "int", None, "ptr"), 2: ("selector", "msg", LABEL_SELECTOR, ""),
        3: ("template", "msg", POD_TEMPLATE_SPEC, ""),
        4: ("strategy", "msg", {1: ("type", "str", None, ""), 2: ("rollingUpdate", "msg", {
            1: ("maxUnavailable", "intstr", None, ""), 2: ("maxSurge", "intstr", None, "")}, "")}, ""),
        5: ("minReadySeconds", "int", None, ""), 6: ("revisionHistoryLimit", "int", None, "ptr"),
        7: ("paused", "bool", None, ""), 9: ("progressDeadlineSeconds", "int", None, "ptr"),
    }, ""),
    3: ("status", "msg", {}, ""),
}
REPLICA_SET: Table = {
    1: ("metadata", "msg", OBJECT_META, ""),
    2: ("spec", "msg", {
        1: ("replicas", "int", None, "ptr"), 2: ("selector", "msg", LABEL_SELECTOR, ""),
        3: ("template", "msg", POD_TEMPLATE_SPEC, ""), 4: ("minReadySeconds", "int", None, ""),
    }, ""),
    3: ("status", "msg", {}, ""),
}
SCALE: Table = {
    1: ("metadata", "msg", OBJECT_META, ""), 2: ("spec", "msg", {1: ("replicas", "int", None, "")}, ""),
    3: ("status", "msg", {1: ("replicas", "int", None, ""), 2: ("selector", "str", None, "")}, ""),
}

# rbac.authorization.k8s.io/v1 (``kubectl create role|clusterrole|rolebinding|clusterrolebinding``)
LABEL_SELECTOR_REQUIREMENT: Table = {
    1: ("key", "str", None, ""), 2: ("operator", "str", None, ""), 3: ("values", "str", None, "rep"),
}
POLICY_RULE: Table = {
    1: ("verbs", "str", None, "rep"), 2: ("apiGroups", "str", None, "rep"), 3: ("resources", "str", None, "rep"),
    4: ("resourceNames", "str", None, "rep"), 5: ("nonResourceURLs", "str", None, "rep"),
}
ROLE: Table = {1: ("metadata", "msg", OBJECT_META, ""), 2: ("rules", "msg", POLICY_RULE, "rep")}
CLUSTER_ROLE: Table = {
    **ROLE, 3: ("aggregationRule", "msg", {1: ("clusterRoleSelectors", "msg", LABEL_SELECTOR, "rep")}, ""),
}
SUBJECT: Table = {
    1: ("kind", "str", None, ""), 2: ("apiGroup", "str", None, ""), 3: ("name", "str", None, ""),
    4: ("namespace", "str", None, ""),
}
ROLE_REF: Table = {1: ("apiGroup", "str", None, ""), 2: ("kind", "str", None, ""), 3: ("name", "str", None, "")}
ROLE_BINDING: Table = {
    1: ("metadata", "msg", OBJECT_META, ""), 2: ("subjects", "msg", SUBJECT, "rep"), 3: ("roleRef", "msg", ROLE_REF, ""),
}

# authorization.k8s.io/v1 (``kubectl auth can-i`` posts its reviews as protobuf)
SELECTOR_ATTRIBUTES: Table = {
    1: ("rawSelector", "str", None, ""), 2: ("requirements", "msg", LABEL_SELECTOR_REQUIREMENT, "rep"),
}
RESOURCE_ATTRIBUTES: Table = {
    1: ("namespace", "str", None, ""), 2: ("verb", "str", None, ""), 3: ("group", "str", None, ""),
    4: ("version", "str", None, ""), 5: ("resource", "str", None, ""), 6: ("subresource", "str", None, ""),
    7: ("name", "str", None, ""), 8: ("fieldSelector", "msg", SELECTOR_ATTRIBUTES, ""),
    9: ("labelSelector", "msg", SELECTOR_ATTRIBUTES, ""),
}
NON_RESOURCE_ATTRIBUTES: Table = {1: ("path", "str", None, ""), 2: ("verb", "str", None, "")}
SELF_SUBJECT_ACCESS_REVIEW_SPEC: Table = {
    1: ("resourceAttributes", "msg", RESOURCE_ATTRIBUTES, ""),
    2: ("nonResourceAttributes", "msg", NON_RESOURCE_ATTRIBUTES, ""),
}
SUBJECT_ACCESS_REVIEW_SPEC: Table = {
    **SELF_SUBJECT_ACCESS_REVIEW_SPEC, 3: ("user", "str", None, ""), 4: ("groups", "str", None, "rep"),
    6: ("uid", "str", None, ""),
}
SELF_SUBJECT_ACCESS_REVIEW: Table = {
    1: ("metadata", "msg", OBJECT_META, ""), 2: ("spec", "msg", SELF_SUBJECT_ACCESS_REVIEW_SPEC, ""),
}
SUBJECT_ACCESS_REVIEW: Table = {
    1: ("metadata", "msg", OBJECT_META, ""), 2: ("spec", "msg", SUBJECT_ACCESS_REVIEW_SPEC, ""),
}
SELF_SUBJECT_RULES_REVIEW: Table = {
    1: ("metadata", "msg", OBJECT_META, ""), 2: ("spec", "msg", {1: ("namespace", "str", None, "")}, ""),
}

BOUND_OBJECT_REFERENCE: Table = {
    1: ("kind", "str", None, ""), 2: ("apiVersion", "str", None, ""), 3: ("name", "str", None, ""),
    4: ("uid", "str", None, ""),
}
TOKEN_REQUEST: Table = {
    1: ("metadata", "msg", OBJECT_META, ""),
    2: ("spec", "msg", {1: ("audiences", "str", None, "rep"), 4: ("expirationSeconds", "int", None, "ptr"),
                        3: ("boundObjectRef", "msg", BOUND_OBJECT_REFERENCE, "")}, ""),
}

TOKEN_REVIEW: Table = {
    1: ("metadata", "msg", OBJECT_META, ""),
    2: ("spec", "msg", {1: ("token", "str", None, ""), 2: ("audiences", "str", None, "rep")}, ""),
}
SELF_SUBJECT_REVIEW: Table = {1: ("metadata", "msg", OBJECT_META, "")}


# batch/v1 Job as ``kubectl create job`` sends it (the pod template as for workloads above).
JOB_SPEC: Table = {
    1: ("parallelism", "int", None, "ptr"), 2: ("completions", "int", None, "ptr"),
    3: ("activeDeadlineSeconds", "int", None, "ptr"), 4: ("selector", "msg", LABEL_SELECTOR, ""),
    5: ("manualSelector", "bool", None, "ptr"), 6: ("template", "msg", POD_TEMPLATE_SPEC, ""),
    7: ("backoffLimit", "int", None, "ptr"), 8: ("ttlSecondsAfterFinished", "int", None, "ptr"),
    9: ("completionMode", "str", None, "ptr"), 10: ("suspend", "bool", None, "ptr"),
    12: ("backoffLimitPerIndex", "int", None, "ptr"), 13: ("maxFailedIndexes", "int", None, "ptr"),
    14: ("podReplacementPolicy", "str", None, "ptr"), 15: ("managedBy", "str", None, "ptr"),
}
JOB: Table = {1: ("metadata", "msg", OBJECT_META, ""), 2: ("spec", "msg", JOB_SPEC, "")}
# policy/v1 PodDisruptionBudget as ``kubectl create pdb`` sends it (IntOrString: ``_int_or_string``).
PDB_SPEC: Table = {
    1: ("minAvailable", "intstr", None, ""), 2: ("selector", "msg", LABEL_SELECTOR, ""),
    3: ("maxUnavailable", "intstr", None, ""), 4: ("unhealthyPodEvictionPolicy", "str", None, "ptr"),
}
POD_DISRUPTION_BUDGET: Table = {1: ("metadata", "msg", OBJECT_META, ""), 2: ("spec", "msg", PDB_SPEC, "")}

KINDS: dict[str, Table] = {
    "Job": JOB,
    "PodDisruptionBudget": POD_DISRUPTION_BUDGET,
    "Deployment": DEPLOYMENT,
    "ReplicaSet": REPLICA_SET,
    "Scale": SCALE,
    "Namespace": NAMESPACE,
    "ConfigMap": CONFIG_MAP,
    "Secret": SECRET,
    "ServiceAccount": SERVICE_ACCOUNT,
    "DeleteOptions": DELETE_OPTIONS,
    "Eviction": EVICTION,
    "Binding": BINDING,
    "Role": ROLE,
    "ClusterRole": CLUSTER_ROLE,
    "RoleBinding": ROLE_BINDING,
    "ClusterRoleBinding": ROLE_BINDING,
    "SelfSubjectAccessReview": SELF_SUBJECT_ACCESS_REVIEW,
    "SubjectAccessReview": SUBJECT_ACCESS_REVIEW,
    "LocalSubjectAccessReview": SUBJECT_ACCESS_REVIEW,
    "SelfSubjectRulesReview": SELF_SUBJECT_RULES_REVIEW,
    "TokenRequest": TOKEN_REQUEST,
    "TokenReview": TOKEN_REVIEW,
    "SelfSubjectReview": SELF_SUBJECT_REVIEW,
}


_UNKNOWN: Table = {
    1: ("typeMeta", "msg", {1: ("apiVersion", "str", None, ""), 2: ("kind", "str", None, "")}, ""),
    2: ("raw", "bytes", None, ""), 3: ("contentEncoding", "str", None, ""), 4: ("contentType", "str", None, ""),
}


# --------------------------------------------------------------------------- wire format

def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("protobuf: truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ValueError("protobuf: varint too long")


def _fields(data: bytes):
    """Yield ``(field_number, wire_type, value)``; value is int for varints, bytes otherwise."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("protobuf: illegal field number 0")
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, wire, value
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > end:
                raise ValueError("protobuf: truncated length-delimited field")
            yield number, wire, data[pos:pos + length]
            pos += length
        elif wire == 1:
            if pos + 8 > end:
                raise ValueError("protobuf: truncated fixed64")
            yield number, wire, data[pos:pos + 8]
            pos += 8
        elif wire == 5:
            if pos + 4 > end:
                raise ValueError("protobuf: truncated fixed32")
            yield number, wire, data[pos:pos + 4]
            pos += 4
        else:
            raise ValueError(f"protobuf: unsupported wire type {wire}")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"protobuf: invalid UTF-8 in string field: {e}") from None


def _time(raw: bytes) -> str | None:
    seconds = nanos = 0
    for number, wire, value in _fields(raw):
        if wire != 0:
            raise ValueError("protobuf: bad Time field")
        if number == 1:
            seconds = _signed(value)
        elif number == 2:
            nanos = _signed(value)
    if seconds == 0 and nanos == 0:
        return None  # zero Time marshals to null
    try:
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        raise ValueError("protobuf: Time out of range") from None


def _map_entry(raw: bytes, value_kind: str) -> tuple[str, Any]:
    key, value = "", b""
    for number, wire, v in _fields(raw):
        if wire != 2:
            raise ValueError("protobuf: bad map entry")
        if number == 1:
            key = _text(v)
        elif number == 2:
            value = v
    if value_kind == "map_ss":
        return key, _text(value)
    if value_kind == "map_sb":
        return key, base64.b64encode(value).decode()
    if value_kind == "map_sq":  # resource.Quantity {1 string}
        return key, decode_message(value, {1: ("string", "str", None, "")}).get("string", "0")
    return key, value


def _int_or_string(raw: bytes) -> int | str:
    """``intstr.IntOrString`` {1 type, 2 intVal, 3 strVal}: the JSON int or string."""
    fields = decode_message(raw, {1: ("type", "int", None, "ptr"), 2: ("intVal", "int", None, "ptr"),
                                  3: ("strVal", "str", None, "ptr")})
    if fields.get("type") == 1:
        return str(fields.get("strVal", ""))
    return int(fields.get("intVal", 0))


def _is_zero(value: Any) -> bool:
    return value == "" or value == 0 or value is False or value is None


def decode_message(data: bytes, table: Table) -> dict[str, Any]:
    """Decode one message with a field table into a Go-JSON-shaped dict."""
    out: dict[str, Any] = {}
    for number, wire, value in _fields(data):
        spec = table.get(number)
        if spec is None:
            continue  # unknown fields are skipped, as proto does
        name, kind, sub, flags = spec
        if kind in ("int", "bool"):
            if wire != 0:
                raise ValueError(f"protobuf: field {name}: expected varint")
            decoded: Any = _signed(value) if kind == "int" else bool(value)
        else:
            if wire != 2:
                raise ValueError(f"protobuf: field {name}: expected length-delimited")
            if kind == "str":
                decoded = _text(value)
            elif kind == "bytes":
                decoded = value
            elif kind == "msg":
                decoded = decode_message(value, sub)
            elif kind == "time":
                decoded = _time(value)
            elif kind == "fields":
                raw = decode_message(value, {1: ("raw", "bytes", None, "")}).get("raw", b"")
                try:
                    decoded = orjson.loads(raw) if raw else {}
                except orjson.JSONDecodeError:
                    raise ValueError("protobuf: invalid FieldsV1 JSON") from None
            elif kind == "intstr":
                decoded = _int_or_string(value)
            elif kind in ("map_ss", "map_sb", "map_sq"):
                k, v = _map_entry(value, kind)
                out.setdefault(name, {})[k] = v
                continue
            elif kind == "inline":  # an embedded struct: its fields at this level in JSON
                out.update(decode_message(value, sub))
                continue
            else:  # pragma: no cover - table error
                raise ValueError(f"protobuf: unknown field kind {kind}")
        if "rep" in flags:
            out.setdefault(name, []).append(decoded)
        else:
            out[name] = decoded
    # Go's omitempty: drop zero scalars that are not pointers; keep present messages.
    for name, kind, _sub, flags in table.values():
        if name in out and "ptr" not in flags and "rep" not in flags and kind not in ("msg", "map_ss", "map_sb",
                                                                                      "map_sq", "intstr"):
            if _is_zero(out[name]):
                del out[name]
    return out


def decode(data: bytes) -> dict[str, Any]:
    """``k8s\\0`` + runtime.Unknown → the object as JSON-shaped dict (with apiVersion/kind)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ValueError("protobuf: body must be bytes")
    data = bytes(data)
    if not data.startswith(MAGIC):
        raise ValueError("protobuf: missing k8s envelope prefix")
    unknown = decode_message(data[len(MAGIC):], _UNKNOWN)
    type_meta = unknown.get("typeMeta") or {}
    kind = type_meta.get("kind", "")
    if unknown.get("contentEncoding"):
        raise ValueError(f"protobuf: unsupported content encoding {unknown['contentEncoding']!r}")
    table = KINDS.get(kind)
    if table is None:  # the kinds users create beside DaemonSets (builds on this module's tables)
        from everynode.apiserver.protobuf_builtin import KINDS as BUILTIN_KINDS

        table = BUILTIN_KINDS.get(kind)
    if table is None:
        raise ValueError(f"protobuf: unsupported kind {kind!r}")
    obj: dict[str, Any] = {}
    if type_meta.get("apiVersion"):
        obj["apiVersion"] = type_meta["apiVersion"]
    obj["kind"] = kind
    obj.update(decode_message(unknown.get("raw", b""), table))
    return obj
