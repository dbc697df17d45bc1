"""The official Kubernetes 1.33 object schemas, read at run time from kubernetes-validate.

Why: strategic merge patch needs each list's patch strategy and merge key, strict field
validation (``fieldValidation=Strict``) needs the set of known fields, and ``kubectl explain``
needs the descriptions.  All three live in the upstream OpenAPI definitions, which the
``kubernetes-validate`` package ships as ``_definitions.json`` (JSON Schema ``$defs``).  We read
that file from the installed package (DESIGN.md, "Dependencies": never copied into the repo),
once, lazily, and compile each definition on first use into a small :class:`Node` tree so hot
paths (one strict check per write, one SMP per patch) are dictionary lookups, not schema walks.

Upstream counterparts: the patch metadata is what ``strategicpatch.LookupPatchMeta`` reads
from Go struct tags; the unknown-field paths are what ``sigs.k8s.io/json`` strict decoding
reports (``spec.template.spec.containers[0].foo``).
"""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson

from everynode.api.gobase64 import base64_error
from everynode.api.quantity import parse_quantity

SCHEMA_VERSION: Final = "v1.33.0-local"
_REF_PREFIX: Final = "#/$defs/"


@functools.cache
def definitions() -> dict[str, dict[str, Any]]:
    """All definitions by name (``io.k8s.api.apps.v1.DaemonSet`` → schema). Loaded once."""
    path = (importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema"
            / SCHEMA_VERSION / "_definitions.json")
    return orjson.loads(path.read_bytes())["$defs"]


@functools.cache
def _gvk_index() -> dict[tuple[str, str], str]:
    index: dict[tuple[str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            group, version = gvk.get("group", ""), gvk["version"]
            api_version = f"{group}/{version}" if group else version
            index.setdefault((api_version, gvk["kind"]), name)
    return index


def definition_name(api_version: str, kind: str) -> str | None:
    """The definition for a served kind (via ``x-kubernetes-group-version-kind``), or None."""
    return _gvk_index().get((api_version, kind))


def ref_name(ref: str) -> str:
    return ref[len(_REF_PREFIX):] if ref.startswith(_REF_PREFIX) else ref


def resolve(ref: str) -> dict[str, Any]:
    """``#/$defs/<name>`` (or a bare name) → that definition. KeyError if unknown."""
    return definitions()[ref_name(ref)]


def _types(schema: Mapping[str, Any]) -> tuple[str, ...]:
    t = schema.get("type")
    if t is None:
        return ()
    if isinstance(t, str):
        return (t,)
    return tuple(x for x in t if x != "null")


class Node:
    """One compiled schema position.

    ``kind`` is "object" (known ``props``), "map" (``values`` for every key), "array"
    (``items``), "open" (anything goes: preserve-unknown-fields, schemaless objects) or
    "scalar".  Array nodes carry the list's patch metadata.
    """

    __slots__ = ("kind", "props", "values", "items", "strategy", "merge_key", "list_type",
                 "list_map_keys", "retain_keys", "definition", "check", "accepts", "_go_type", "clean")

    def __init__(self) -> None:
        self.kind = "scalar"
        self.props: dict[str, Node] = {}
        self.values: Node | None = None
        self.items: Node | None = None
        self.strategy: str = ""          # "merge", "replace" or "" (SMP default: replace lists / merge maps)
        self.merge_key: str = ""
        self.list_type: str = ""
        self.list_map_keys: tuple[str, ...] = ()
        self.retain_keys = False
        self.definition: str = ""
        # The type check (api/typecheck.py): what a scalar position takes, compiled once.
        self.check: str = "any"          # "object" | "map" | "array" | "int32" | "string" | ...
        self.accepts: Callable[[Any], bool] = _accept_any
        self._go_type: str = ""
        # The type check's compiled verdict for a value at this position (api/typecheck.py's
        # ``_Verdict``, which this module cannot name without an import cycle), made on first use.
        self.clean: Any = None

    @property
    def go_struct(self) -> str:
        """The Go struct type of an object position (``DaemonSetSpec``), as decoding errors name it."""
        return self.definition.rpartition(".")[2]

    def go_type(self) -> str:
        """The Go type of the position (``int32``, ``[]v1.Container``, ``map[string]string``)."""
        if not self._go_type:
            if self.definition:
                package, _, name = self.definition.rpartition(".")
                self._go_type = f"{package.rpartition('.')[2]}.{name}"
            elif self.kind == "array":
                self._go_type = "[]" + (self.items.go_type() if self.items is not None else "interface {}")
            elif self.kind == "map":
                self._go_type = "map[string]" + (self.values.go_type() if self.values is not None else "interface {}")
            else:
                self._go_type = _SCALAR_GO_TYPES.get(self.check, "interface {}")
        return self._go_type

    def child(self, key: Any) -> Node | None:  # (a dict from Python may have keys that are not str)
        if self.kind == "object":
            return self.props.get(key)
        if self.kind == "map":
            return self.values
        return None

    def __repr__(self) -> str:
        return f"Node({self.kind}, {self.definition or ''})"


def _open_node() -> Node:
    node = Node()
    node.kind = "open"
    return node

_DEF_NODES: Final[dict[str, Node]] = {}


def definition_node(name: str) -> Node:
    """The compiled node for a definition (cached; recursion-safe)."""
    node = _DEF_NODES.get(name)
    if node is None:
        node = Node()
        node.definition = name
        _DEF_NODES[name] = node  # before filling: self-referencing definitions (JSONSchemaProps)
        _fill(node, definitions()[name])
    return node


def compile_schema(schema: Mapping[str, Any]) -> Node:
    if "$ref" in schema:
        return definition_node(ref_name(schema["$ref"]))
    node = Node()
    _fill(node, schema)
    return node


def _fill(node: Node, schema: Mapping[str, Any]) -> None:
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        node.kind = "open"
        return
    types = _types(schema)
    node.check = _scalar_check(node.definition, types, schema.get("format"))
    node.accepts = _ACCEPTS.get(node.check, _accept_any)
    if "properties" in schema:
        node.kind = "object"
        node.check = "object"
        node.props = {k: compile_schema(v) for k, v in schema["properties"].items()}
    elif "array" in types:
        node.kind = "array"
        node.check = "array"
        node.items = compile_schema(schema["items"]) if "items" in schema else OPEN
        strategies = [s for s in (schema.get("x-kubernetes-patch-strategy") or "").split(",") if s]
        node.retain_keys = "retainKeys" in strategies
        others = [s for s in strategies if s != "retainKeys"]
        node.strategy = others[0] if others else ""
        node.merge_key = schema.get("x-kubernetes-patch-merge-key", "")
        node.list_type = schema.get("x-kubernetes-list-type", "")
        node.list_map_keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
    elif isinstance(schema.get("additionalProperties"), Mapping):
        node.kind = "map"
        node.check = "map"
        node.values = compile_schema(schema["additionalProperties"])
    elif "object" in types:
        node.kind = "open"  # schemaless object: RawExtension, FieldsV1, JSON
        node.check = "any"
    else:
        node.kind = "scalar"
        if "x-kubernetes-patch-strategy" in schema:  # e.g. retainKeys on a struct-valued field
            node.retain_keys = "retainKeys" in schema["x-kubernetes-patch-strategy"]


# -- scalar checks: what Go's decoder accepts for each scalar type --------------------------------

INT32_MIN: Final = -2 ** 31
INT32_MAX: Final = 2 ** 31 - 1
INT64_MIN: Final = -2 ** 63
INT64_MAX: Final = 2 ** 63 - 1
_SPECIAL_SCALARS: Final = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "intstr",
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "quantity",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "time",
}
_SCALAR_GO_TYPES: Final = {"int32": "int32", "int64": "int64", "float64": "float64", "bool": "bool",
                           "string": "string", "bytes": "[]uint8"}


def _scalar_check(definition: str, types: tuple[str, ...], fmt: str | None) -> str:
    special = _SPECIAL_SCALARS.get(definition)
    if special is not None:
        return special
    if "integer" in types:
        return "int32" if fmt == "int32" else "int64"
    if "number" in types:
        return "float64"
    if "boolean" in types:
        return "bool"
    if "string" in types:
        return "bytes" if fmt == "byte" else "string"
    return "any"


def _accept_any(value: Any) -> bool:
    return True


def _accept_string(value: Any) -> bool:
    return type(value) is str


def _accept_bytes(value: Any) -> bool:
    """A ``[]byte`` position: a string Go's decoder takes as base64 (:mod:`everynode.api.gobase64`)."""
    return type(value) is str and base64_error(value) is None


def _accept_int32(value: Any) -> bool:
    return type(value) is int and INT32_MIN <= value <= INT32_MAX


def _accept_int64(value: Any) -> bool:
    return type(value) is int and INT64_MIN <= value <= INT64_MAX


def _accept_float64(value: Any) -> bool:
    t = type(value)
    return t is float or t is int


def _accept_bool(value: Any) -> bool:
    return type(value) is bool


def _accept_intstr(value: Any) -> bool:
    t = type(value)
    return t is str or (t is int and INT32_MIN <= value <= INT32_MAX)


def _accept_quantity(value: Any) -> bool:
    t = type(value)
    if t is int or t is float:
        return True
    if t is not str:
        return False
    try:
        parse_quantity(value)
    except ValueError:
        return False
    return True


_ACCEPTS: Final[dict[str, Callable[[Any], bool]]] = {
    "string": _accept_string, "bytes": _accept_bytes, "time": _accept_string, "int32": _accept_int32,
    "int64": _accept_int64, "float64": _accept_float64, "bool": _accept_bool, "intstr": _accept_intstr,
    "quantity": _accept_quantity,
}


OPEN: Final = _open_node()


RUNTIME_KINDS: Final[dict[tuple[str, str], Node]] = {}
"""(apiVersion, kind) → the compiled schema of a kind defined at run time (a CRD's served
version, compiled by ``api/apiextensions/structural.py``); consulted only when no built-in
definition matches, so built-in lookups cost nothing more."""


def kind_node(api_version: str, kind: str) -> Node | None:
    key = (api_version, kind)
    node = _KIND_NODES.get(key)
    if node is not None:
        return node
    name = definition_name(api_version, kind)
    if name:
        node = _KIND_NODES[key] = definition_node(name)
        return node
    return RUNTIME_KINDS.get(key) if RUNTIME_KINDS else None


# The built-in kinds' nodes by (apiVersion, kind): every write asks (type check, managedFields),
# and the definition's name cost a cached call and a second lookup.  Served custom kinds come and
# go (RUNTIME_KINDS), so they are always looked up there.
_KIND_NODES: Final[dict[tuple[str, str], Node]] = {}


def field_schema(def_name: str, path: tuple[str, ...]) -> dict[str, Any] | None:
    """The raw schema of a field below a definition; list items are stepped into implicitly.

    ``field_schema("io.k8s.api.apps.v1.DaemonSet", ("spec", "template", "spec", "containers"))``
    returns the ``containers`` property (with its patch extensions).
    """
    schema: Mapping[str, Any] = definitions()[def_name]
    for key in path:
        while True:
            if "$ref" in schema:
                schema = resolve(schema["$ref"])
            elif "array" in _types(schema) and "items" in schema and "properties" not in schema:
                schema = schema["items"]
            else:
                break
        props = schema.get("properties")
        if props is not None:
            if key not in props:
                return None
            schema = props[key]
        elif isinstance(schema.get("additionalProperties"), Mapping):
            schema = schema["additionalProperties"]
        else:
            return None
    return dict(schema)


def _node_at(def_name: str, path: tuple[str, ...]) -> Node | None:
    node: Node | None = definition_node(def_name)
    for key in path:
        while node is not None and node.kind == "array":
            node = node.items
        if node is None:
            return None
        node = node.child(key)
    return node


def patch_meta(def_name: str, path: tuple[str, ...]) -> tuple[str, str, str, tuple[str, ...]]:
    """``(strategy, merge_key, list_type, list_map_keys)`` of a list field ("" when absent).

    ``strategy`` includes ``retainKeys`` when the field has it (``"merge,retainKeys"``).
    """
    node = _node_at(def_name, path)
    if node is None or node.kind != "array":
        return ("", "", "", ())
    strategy = node.strategy
    if node.retain_keys:
        strategy = f"{strategy},retainKeys" if strategy else "retainKeys"
    return (strategy, node.merge_key, node.list_type, node.list_map_keys)


def unknown_fields(api_version: str, kind: str, obj: Mapping[str, Any], *,
                   known: Mapping[str, Any] | None = None) -> list[str]:
    """Dotted paths of fields the schema does not know, in document order.

    Maps (labels, annotations, data, nodeSelector, …), schemaless objects and
    ``x-kubernetes-preserve-unknown-fields`` are open.  Unknown kinds report nothing.

    ``known`` is an earlier version of the same object that has no unknown fields (the stored
    object an update or patch starts from: every write drops or rejects them before storing).
    Subtrees of ``obj`` equal to ``known``'s at the same position are skipped, because the
    result depends only on the schema position and the value: a patch that changes one field of
    a large object walks that field only, and the equality test runs at C speed.  The walk is
    :func:`everynode.api.typecheck.check_object`'s, which also finds badly typed values.
    """
    from everynode.api.typecheck import check_object

    return check_object(api_version, kind, obj, known=known).unknown


