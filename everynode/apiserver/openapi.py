"""OpenAPI documents for kubectl: ``/openapi/v3`` (root + one document per group-version) and
an empty ``/openapi/v2``.

Why: kubectl ≥1.29 validates ``apply``/``create -f``/``replace`` by looking, in the v3 document
of the object's group-version, for a PATCH operation carrying the object's
``x-kubernetes-group-version-kind`` with an operation-level ``fieldValidation`` query parameter;
found, it delegates validation to the server (``fieldValidation=Strict``), otherwise it wants
the v2 document (kubectl-contract.md §3, gotchas 2, 3).  ``kubectl explain`` renders
``components.schemas`` (descriptions, ``allOf`` + ``$ref`` indirection).  Because the schemas are
the real, complete v1.33 definitions (read from kubernetes-validate, :mod:`everynode.api.schema`),
the PATCH request body may advertise ``application/strategic-merge-patch+json``: client-side
apply then computes its SMP from them without the "error calculating patch" warning (gotcha 18).

Conversion from the JSON Schema ``$defs`` to OpenAPI 3 follows what kube-apiserver publishes:
``type`` lists lose their ``null``, a ``$ref`` with sibling keywords becomes
``allOf: [{$ref}]`` next to them, ``IntOrString`` is ``type: string, format: int-or-string``,
and the ``apiVersion``/``kind`` enums kubernetes-validate adds are dropped.  Every document is
built once and its encoded bytes cached, with a content hash for the root's
``serverRelativeURL``.  ``/openapi/v2``: 200 with an empty body is a valid, empty protobuf
document for kubectl 1.27–1.33 (never echo the ``@v1.0`` media type).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from everynode.api import registry, schema
from everynode.api.registry import ResourceType

V2_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
V3_CONTENT_TYPE = "application/json"
SERVED_VERSION = "v1.33.0"

_COMPONENTS = "#/components/schemas/"
_PATCH_DEF = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
_STATUS_DEF = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"

_PATCH_CONTENT_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


def v2_body() -> bytes:
    """An empty OpenAPI v2 protobuf document (0 bytes is a valid empty message)."""
    return b""


def gv_path(rt: ResourceType) -> str:
    return f"apis/{rt.group}/{rt.version}" if rt.group else f"api/{rt.version}"


@functools.cache
def _group_versions() -> dict[str, tuple[ResourceType, ...]]:
    out: dict[str, list[ResourceType]] = {}
    for rt in registry.RESOURCES:
        out.setdefault(gv_path(rt), []).append(rt)
    return {k: tuple(v) for k, v in out.items()}


RUNTIME_SCHEMAS: dict[tuple[str, str], dict[str, Any] | None] = {}
"""(apiVersion, kind) → the ``openAPIV3Schema`` of a kind served at run time (a CRD version),
published under the group-version's document as upstream's CRD OpenAPI builder does."""

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_API_VERSION_DOC = ("APIVersion defines the versioned schema of this representation of an object. Servers should "
                    "convert recognized schemas to the latest internal value, and may reject unrecognized values. "
                    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
                    "api-conventions.md#resources")
_KIND_DOC = ("Kind is a string value representing the REST resource this object represents. Servers may infer "
             "this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
             "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")
_METADATA_DOC = ("Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/"
                 "sig-architecture/api-conventions.md#metadata")


def runtime_definition_name(rt: ResourceType, kind: str | None = None) -> str:
    """Upstream's CRD definition names: the group reversed, the version, the kind
    (``com.example.v1.Widget``)."""
    return ".".join([*reversed(rt.group.split(".")), rt.version, kind or rt.kind])


def _runtime_components(rt: ResourceType, schema: dict[str, Any] | None) -> dict[str, Any]:
    gvk = [{"group": rt.group, "version": rt.version, "kind": rt.kind}]
    body: dict[str, Any] = dict(schema) if schema else {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    props = dict(body.get("properties") or {})
    props["apiVersion"] = {"description": _API_VERSION_DOC, "type": "string"}
    props["kind"] = {"description": _KIND_DOC, "type": "string"}
    props["metadata"] = {"allOf": [{"$ref": _COMPONENTS + _OBJECT_META}], "description": _METADATA_DOC}
    body["properties"] = {k: props[k] for k in sorted(props)}
    body["type"] = "object"
    body["x-kubernetes-group-version-kind"] = gvk
    list_body = {
        "description": f"{rt.kind}List is a list of {rt.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": _API_VERSION_DOC, "type": "string"},
            "items": {"description": f"List of {rt.plural}. More info: https://git.k8s.io/community/contributors/devel/"
                      "sig-architecture/api-conventions.md", "type": "array",
                      "items": {"$ref": _COMPONENTS + runtime_definition_name(rt)}},
            "kind": {"description": _KIND_DOC, "type": "string"},
            "metadata": {"allOf": [{"$ref": _COMPONENTS + "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"}],
                         "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/"
                         "devel/sig-architecture/api-conventions.md#types-kinds"},
        },
        "x-kubernetes-group-version-kind": [{"group": rt.group, "version": rt.version, "kind": rt.list_kind}],
    }
    return {runtime_definition_name(rt): body, runtime_definition_name(rt, rt.list_kind): list_body}


def _runtime_document(resources: list[ResourceType]) -> dict[str, Any]:
    components: dict[str, Any] = _closure([_PATCH_DEF, _STATUS_DEF, _OBJECT_META,
                                           "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"])
    paths: dict[str, Any] = {}
    for rt in resources:
        components.update(_runtime_components(rt, RUNTIME_SCHEMAS.get((rt.api_version, rt.kind))))
        kind_def = runtime_definition_name(rt)
        paths[_item_path(rt)] = {"get": _get_operation(rt, kind_def), "patch": _patch_operation(rt, kind_def),
                                 "parameters": _path_parameters(rt)}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
            "paths": paths, "components": {"schemas": dict(sorted(components.items()))}}


@functools.lru_cache(maxsize=4)
def _runtime_documents(generation: int) -> dict[str, tuple[bytes, str]]:
    by_path: dict[str, list[ResourceType]] = {}
    for versions in registry.runtime_resources():
        for rt in versions:
            by_path.setdefault(gv_path(rt), []).append(rt)
    docs: dict[str, tuple[bytes, str]] = {}
    for path, resources in by_path.items():
        body = orjson.dumps(_runtime_document(resources))
        docs[path] = (body, hashlib.sha512(body).hexdigest().upper()[:32])
    return docs


def _served_documents() -> dict[str, tuple[bytes, str]]:
    runtime = _runtime_documents(registry.generation()) if registry.runtime_resources() else {}
    if not runtime:
        return _documents()
    return {**_documents(), **{k: v for k, v in runtime.items() if k not in _documents()}}


# --------------------------------------------------------------------------- schema conversion

def _convert(node: Any, refs: set[str], *, gvk_object: bool = False) -> Any:
    if isinstance(node, list):
        return [_convert(x, refs) for x in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    ref = node.get("$ref")
    for key, value in node.items():
        if key == "$ref":
            continue
        if key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            if len(types) == 1:
                out["type"] = types[0]
            elif types:
                out["type"] = types
            continue
        if key in ("properties", "patternProperties"):
            out[key] = {name: _convert(sub, refs) for name, sub in value.items()}
            if gvk_object and key == "properties":
                for name in ("apiVersion", "kind"):
                    if name in out[key]:
                        out[key][name].pop("enum", None)
            continue
        out[key] = _convert(value, refs)
    if ref is not None:
        name = schema.ref_name(ref)
        refs.add(name)
        target = {"$ref": _COMPONENTS + name}
        if out:
            out["allOf"] = [target]
        else:
            out = target
    return out


@functools.cache
def _component(name: str) -> tuple[dict[str, Any], frozenset[str]]:
    """One definition in OpenAPI 3 form, plus the definitions it references."""
    source = schema.definitions()[name]
    if name == _INT_OR_STRING:
        return ({"description": "IntOrString is a type that can hold an int32 or a string.",
                 "type": "string", "format": "int-or-string"}, frozenset())
    if name == _QUANTITY:
        return ({"description": "Quantity is a fixed-point representation of a number.",
                 "type": "string"}, frozenset())
    refs: set[str] = set()
    converted = _convert(source, refs, gvk_object="x-kubernetes-group-version-kind" in source)
    return converted, frozenset(refs)


def _closure(roots: list[str]) -> dict[str, Any]:
    components: dict[str, Any] = {}
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in components:
            continue
        body, refs = _component(name)
        components[name] = body
        stack.extend(r for r in refs if r not in components)
    return dict(sorted(components.items()))


# --------------------------------------------------------------------------- paths

def _operation_id(verb: str, rt: ResourceType) -> str:
    group = rt.group.split(".")[0] if rt.group else "core"
    group = "".join(part.capitalize() for part in group.split("-"))
    scope = "Namespaced" if rt.namespaced else ""
    return f"{verb}{group}{rt.version.capitalize()}{scope}{rt.kind}"


def _query(name: str, type_: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "description": description, "schema": {"type": type_, "uniqueItems": True}}


def _patch_operation(rt: ResourceType, kind_def: str) -> dict[str, Any]:
    gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    ok = {"content": {"application/json": {"schema": {"$ref": _COMPONENTS + kind_def}}}}
    return {
        "tags": [gv_path(rt).replace("/", "_")],
        "description": f"partially update the specified {rt.kind}",
        "operationId": _operation_id("patch", rt),
        "parameters": [
            _query("dryRun", "string", "When present, indicates that modifications should not be persisted."),
            _query("fieldManager", "string", "fieldManager is a name associated with the actor or entity "
                                             "that is making these changes."),
            _query("fieldValidation", "string", "fieldValidation instructs the server on how to handle objects "
                                                "in the request containing unknown or duplicate fields."),
            _query("force", "boolean", "Force is going to \"force\" Apply requests."),
        ],
        "requestBody": {
            "content": {ct: {"schema": {"$ref": _COMPONENTS + _PATCH_DEF}} for ct in _PATCH_CONTENT_TYPES},
            "required": True,
        },
        "responses": {"200": {"description": "OK", **ok}, "201": {"description": "Created", **ok},
                      "401": {"description": "Unauthorized"}},
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": gvk,
    }


def _get_operation(rt: ResourceType, kind_def: str) -> dict[str, Any]:
    return {
        "tags": [gv_path(rt).replace("/", "_")],
        "description": f"read the specified {rt.kind}",
        "operationId": _operation_id("read", rt),
        "responses": {"200": {"description": "OK", "content": {
            "application/json": {"schema": {"$ref": _COMPONENTS + kind_def}}}},
            "401": {"description": "Unauthorized"}},
        "x-kubernetes-action": "get",
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
    }


def _path_parameters(rt: ResourceType) -> list[dict[str, Any]]:
    params = [{"name": "name", "in": "path", "description": f"name of the {rt.kind}", "required": True,
               "schema": {"type": "string", "uniqueItems": True}}]
    if rt.namespaced:
        params.append({"name": "namespace", "in": "path", "description": "object name and auth scope, such as "
                       "for teams and projects", "required": True, "schema": {"type": "string", "uniqueItems": True}})
    params.append({"name": "pretty", "in": "query", "description": "If 'true', then the output is pretty printed.",
                   "schema": {"type": "string", "uniqueItems": True}})
    return params


def _item_path(rt: ResourceType) -> str:
    prefix = "/" + gv_path(rt)
    if rt.namespaced:
        return f"{prefix}/namespaces/{{namespace}}/{rt.plural}/{{name}}"
    return f"{prefix}/{rt.plural}/{{name}}"


# --------------------------------------------------------------------------- documents

@functools.cache
def _documents() -> dict[str, tuple[bytes, str]]:
    docs: dict[str, tuple[bytes, str]] = {}
    for path, resources in _group_versions().items():
        roots: list[str] = [_PATCH_DEF, _STATUS_DEF]
        paths: dict[str, Any] = {}
        for rt in resources:
            kind_def = schema.definition_name(rt.api_version, rt.kind)
            if kind_def is None:
                continue
            roots.append(kind_def)
            list_def = schema.definition_name(rt.api_version, rt.list_kind)
            if list_def:
                roots.append(list_def)
            paths[_item_path(rt)] = {
                "get": _get_operation(rt, kind_def),
                "patch": _patch_operation(rt, kind_def),
                "parameters": _path_parameters(rt),
            }
        document = {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": SERVED_VERSION},
            "paths": paths,
            "components": {"schemas": _closure(roots)},
        }
        body = orjson.dumps(document)
        digest = hashlib.sha512(body).hexdigest().upper()[:32]
        docs[path] = (body, digest)
    return docs


def v3_root() -> dict[str, Any]:
    """``GET /openapi/v3``: one entry per served group-version, URL carrying a content hash."""
    return {"paths": {path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
                      for path, (_, digest) in _served_documents().items()}}


def v3_document(path: str) -> tuple[bytes, str] | None:
    """``GET /openapi/v3/<path>`` (``api/v1``, ``apis/apps/v1``, …): encoded body and its hash."""
    return _served_documents().get(path.strip("/"))
