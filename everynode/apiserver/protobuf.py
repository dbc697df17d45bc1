"""Decoding of Kubernetes protobuf request bodies (``application/vnd.kubernetes.protobuf``).

Why: kubectl ≥1.32 posts protobuf from its typed clients (``create namespace|configmap|secret|
serviceaccount``, the drain DELETE fallback, …) and a 415 is not retried as JSON
(kubectl-contract.md §8, gotcha 1).  Responses stay JSON, so only decoding is needed, and only
for the kinds those commands send.  A small wire-format reader with hand-written field tables
(numbers from upstream ``generated.proto``) is enough; compiling the upstream ``.proto`` files
would pull in protoc and thousands of message types for six kinds.

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

KINDS: dict[str, Table] = {
    "Namespace": NAMESPACE,
    "ConfigMap": CONFIG_MAP,
    "Secret": SECRET,
    "ServiceAccount": SERVICE_ACCOUNT,
    "DeleteOptions": DELETE_OPTIONS,
    "Eviction": EVICTION,
    "Binding": BINDING,
}

_QUANTITY_ENTRY: Table = {1: ("key", "str", None, ""), 2: ("value", "msg", {1: ("string", "str", None, "")}, "")}

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
    key, value = "", "" if value_kind == "map_ss" else b""
    for number, wire, v in _fields(raw):
        if wire != 2:
            raise ValueError("protobuf: bad map entry")
        if number == 1:
            key = _text(v)
        elif number == 2:
            value = _text(v) if value_kind == "map_ss" else v
    if value_kind == "map_sb":
        value = base64.b64encode(value).decode()
    return key, value


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
            elif kind in ("map_ss", "map_sb"):
                k, v = _map_entry(value, kind)
                out.setdefault(name, {})[k] = v
                continue
            elif kind == "map_sq":  # map<string, resource.Quantity>: the Quantity's string
                entry = decode_message(value, _QUANTITY_ENTRY)
                out.setdefault(name, {})[entry.get("key", "")] = (entry.get("value") or {}).get("string", "")
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
                                                                                         "map_sq"):
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
