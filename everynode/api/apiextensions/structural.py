"""Structural schemas of CustomResourceDefinitions: the structural check of a CRD's schema, and
what a custom resource's schema does to its objects — pruning, defaulting, value validation.

Why one module: upstream spreads this over ``pkg/apiserver/schema`` (``structural.go``,
``validation.go`` = the structural check, ``pruning/``, ``defaulting/``, ``objectmeta/``) and
``pkg/apiserver/validation`` (kube-openapi's validator and ``kubeOpenAPIResultToFieldErrors``),
but the four are one reading of the same schema tree, and every rule here is a pure function of
(schema, value).  Schemas are the CRD's JSON (``openAPIV3Schema``) as dicts, never converted.

* **Structural check** (``ValidateStructural``, required for apiextensions.k8s.io/v1): every
  specified property and array item has a ``type`` (unless ``x-kubernetes-int-or-string`` or
  ``x-kubernetes-preserve-unknown-fields``), the root is an object, ``metadata`` at the root
  may only restrict ``name`` and ``generateName``, arrays have ``items``, junctors
  (allOf/anyOf/oneOf/not) hold value validations only — except the IntOrString
  ``anyOf: [{type: integer}, {type: string}]`` —, embedded resources are objects with
  properties, and the CRD-level rules (``properties`` and ``additionalProperties`` exclude each
  other, ``x-kubernetes-preserve-unknown-fields`` is true or absent, map lists have keys).
  Errors carry upstream's paths (``....properties[spec].type``) in upstream's (sorted) order.
  Not checked: completeness (every field named in a junctor also specified outside it).
* **Pruning** is not a walk of its own: the schema compiles to the same
  :class:`~everynode.api.schema.Node` tree built-in kinds use (:func:`compile_node`), so the
  decoder's unknown-field walk (``api/typecheck.py``) prunes a custom resource exactly as it
  drops unknown fields of a built-in — including ``fieldValidation=Strict``'s
  ``unknown field "spec.foo"`` and the warnings — and server-side apply and managedFields read
  list types (``x-kubernetes-list-type``/``-map-keys``) from it.  The nodes accept any JSON
  type (``check="any"``): a custom resource's type errors are the schema validator's 422, not
  a decoding error.  Objects (``type: object`` without ``properties`` or
  ``additionalProperties``) keep no fields, as upstream prunes them; preserve-unknown-fields
  keeps everything below it; embedded resources keep apiVersion/kind/metadata.
* **Defaulting** (``structuraldefaulting.Default``): a property absent (or null when not
  nullable) gets its ``default``, recursively, after pruning; a null of a non-nullable
  property without a default is dropped (``PruneNonNullableNullsWithoutDefaults``); run on
  writes and on reads from storage, as upstream does.
* **Validation** (kube-openapi's validator): type (with ``nullable``, ``format`` where cheap:
  int32/int64 ranges, date-time, date, uuid, byte), ``enum``, ``required``, min/max (and
  exclusive), ``multipleOf``, min/maxLength, ``pattern``, min/maxItems, ``uniqueItems``, list
  set/map uniqueness, min/maxProperties, ``allOf``/``anyOf``/``oneOf``/``not``; messages are
  kube-openapi's words behind the field error types ``kubeOpenAPIResultToFieldErrors`` picks.
  ``x-kubernetes-validations`` (CEL) are not evaluated (see the CRD strategy).
"""

from __future__ import annotations

import base64
import math
import re
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import orjson

from everynode.api import field_errors as fielderr
from everynode.api.field_errors import FieldError
from everynode.api.meta import deep_copy
from everynode.api.schema import OPEN, Node, definition_node

Schema = Mapping[str, Any]
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_INT_OR_STRING = "x-kubernetes-int-or-string"
_EMBEDDED = "x-kubernetes-embedded-resource"


# --------------------------------------------------------------------------- the structural check

def structural_errors(schema: Any, path: str) -> list[FieldError]:
    """``ValidateStructural`` of a CRD version's ``openAPIV3Schema`` at ``path`` (plus the
    structural rules ``ValidateCustomResourceDefinitionOpenAPISchema`` adds), sorted by message
    as upstream sorts them."""
    if not isinstance(schema, Mapping):
        return []
    errs: list[FieldError] = []
    _invariants(schema, "root", path, errs)
    return sorted(errs, key=lambda e: e.message())


_LEVEL_WORDS = {"root": "at the root", "item": "for specified array items", "field": "for specified object fields"}
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def _invariants(schema: Schema, level: str, path: str, errs: list[FieldError]) -> None:
    """``validateStructuralInvariants``."""
    typ = schema.get("type") or ""
    preserve = schema.get(_PRESERVE)
    int_or_string = bool(schema.get(_INT_OR_STRING))
    embedded = bool(schema.get(_EMBEDDED))
    props: Mapping[str, Any] = schema["properties"] if isinstance(schema.get("properties"), Mapping) else {}
    additional = schema.get("additionalProperties")
    if typ == "array" and not isinstance(schema.get("items"), Mapping):
        errs.append(fielderr.required(f"{path}.items", "must be specified"))
    if isinstance(schema.get("items"), Mapping):
        _invariants(schema["items"], "item", f"{path}.items", errs)
    for name, sub in props.items():
        if isinstance(sub, Mapping):
            _invariants(sub, "field", f"{path}.properties[{name}]", errs)
    if additional is not None and additional is not False:
        if level == "root":
            errs.append(fielderr.forbidden(f"{path}.additionalProperties", "must not be used at the root"))
        if isinstance(additional, Mapping):
            _invariants(additional, "field", f"{path}.additionalProperties", errs)
        if props:
            errs.append(fielderr.forbidden(f"{path}.additionalProperties",
                                           "additionalProperties and properties are mutual exclusive"))
    if int_or_string and preserve:
        errs.append(fielderr.invalid(f"{path}.{_PRESERVE}", True, f"must be false if {_INT_OR_STRING} is true"))
    if int_or_string and embedded:
        errs.append(fielderr.invalid(f"{path}.{_EMBEDDED}", True, f"must be false if {_INT_OR_STRING} is true"))
    if preserve is False:
        errs.append(fielderr.invalid(f"{path}.{_PRESERVE}", False, "must be true or undefined"))
    any_of = schema.get("anyOf") or []
    skip_any_of = any_of == _INT_OR_STRING_ANY_OF
    all_of = schema.get("allOf") or []
    skip_first_all_of_any_of = bool(all_of) and isinstance(all_of[0], Mapping) and \
        (all_of[0].get("anyOf") or []) == _INT_OR_STRING_ANY_OF
    _value_validation(schema, skip_any_of, skip_first_all_of_any_of, path, errs)
    check_metadata = level == "root" or embedded
    if embedded and typ != "object":
        if not typ:
            errs.append(fielderr.required(f"{path}.type", f"must be object if {_EMBEDDED} is true"))
        else:
            errs.append(fielderr.invalid(f"{path}.type", typ, f"must be object if {_EMBEDDED} is true"))
    elif not typ and not int_or_string and not preserve:
        errs.append(fielderr.required(f"{path}.type", f"must not be empty {_LEVEL_WORDS[level]}"))
    if embedded and additional is not None and additional is not False:
        errs.append(fielderr.forbidden(f"{path}.additionalProperties",
                                       f"must not be used if {_EMBEDDED} is set"))
    if level == "root" and typ and typ != "object":
        errs.append(fielderr.invalid(f"{path}.type", typ, "must be object at the root"))
    for key in ("kind", "apiVersion"):
        sub = props.get(key)
        if check_metadata and isinstance(sub, Mapping) and sub.get("type") != "string":
            errs.append(fielderr.invalid(f"{path}.properties[{key}].type", sub.get("type") or "", "must be string"))
    metadata = props.get("metadata")
    if isinstance(metadata, Mapping):
        if check_metadata and metadata.get("type") != "object":
            errs.append(fielderr.invalid(f"{path}.properties[metadata].type", metadata.get("type") or "",
                                         "must be object"))
        if level == "root":
            rest = {k: v for k, v in metadata.items() if k not in ("type", "default")}
            names = rest.pop("properties", None) or {}
            if rest or set(names) - {"name", "generateName"}:
                errs.append(fielderr.forbidden(f"{path}.properties[metadata]", "must not specify anything other "
                                               "than name and generateName, but metadata is implicitly specified"))
    if embedded and not preserve and not props:
        errs.append(fielderr.required(f"{path}.properties", f"must not be empty if {_EMBEDDED} is true "
                                      f"without {_PRESERVE}"))
    if schema.get("x-kubernetes-list-type") == "map" and not schema.get("x-kubernetes-list-map-keys"):
        errs.append(fielderr.required(f"{path}.x-kubernetes-list-map-keys",
                                      "must not be empty if x-kubernetes-list-type is map"))


def _value_validation(schema: Schema, skip_any_of: bool, skip_first_all_of_any_of: bool, path: str,
                      errs: list[FieldError]) -> None:
    """``validateValueValidation``: what the junctors (allOf/anyOf/oneOf/not) hold."""
    if not skip_any_of:
        for i, sub in enumerate(schema.get("anyOf") or ()):
            if isinstance(sub, Mapping):
                _nested(sub, False, f"{path}.anyOf[{i}]", errs)
    for i, sub in enumerate(schema.get("allOf") or ()):
        if isinstance(sub, Mapping):
            _nested(sub, skip_first_all_of_any_of and i == 0, f"{path}.allOf[{i}]", errs)
    for i, sub in enumerate(schema.get("oneOf") or ()):
        if isinstance(sub, Mapping):
            _nested(sub, False, f"{path}.oneOf[{i}]", errs)
    if isinstance(schema.get("not"), Mapping):
        _nested(schema["not"], False, f"{path}.not", errs)


_NESTED_FORBIDDEN = (
    ("type", "must be empty to be structural"), ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"), ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"), (_PRESERVE, "must be false to be structural"),
    (_EMBEDDED, "must be false to be structural"), (_INT_OR_STRING, "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
)


def _nested(schema: Schema, skip_any_of: bool, path: str, errs: list[FieldError]) -> None:
    """``validateNestedValueValidation``: inside a junctor only value validations."""
    _value_validation(schema, skip_any_of, False, path, errs)
    if isinstance(schema.get("items"), Mapping):
        _nested(schema["items"], False, f"{path}.items", errs)
    props: Mapping[str, Any] = schema["properties"] if isinstance(schema.get("properties"), Mapping) else {}
    for name, sub in props.items():
        if isinstance(sub, Mapping):
            _nested(sub, False, f"{path}.properties[{name}]", errs)
    for key, why in _NESTED_FORBIDDEN:
        value = schema.get(key)
        if value is not None and value is not False and value != "" and value != []:
            errs.append(fielderr.forbidden(f"{path}.{key}", why))
    if "metadata" in props:
        errs.append(fielderr.forbidden(f"{path}.properties[metadata]", "must not be specified in a nested context"))


# --------------------------------------------------------------------------- pruning nodes

def compile_node(schema: Schema | None) -> Node:
    """The :class:`Node` tree a custom resource is pruned (and applied) by; ``None``: keep all."""
    root = _node(schema or {_PRESERVE: True}, embedded=True)
    if root.kind == "object":
        root.props.setdefault("apiVersion", _scalar())
        root.props.setdefault("kind", _scalar())
        root.props["metadata"] = definition_node(OBJECT_META)
    return root


def _scalar() -> Node:
    node = Node()
    node.kind = "scalar"
    return node


def _node(schema: Schema, *, embedded: bool = False) -> Node:
    if schema.get(_PRESERVE):
        return OPEN
    node = Node()
    node.check = "any"  # type errors are the validator's (422), not the decoder's
    typ = schema.get("type")
    if typ == "object" or "properties" in schema or "additionalProperties" in schema:
        additional = schema.get("additionalProperties")
        if isinstance(additional, Mapping) and not schema.get("properties"):
            node.kind = "map"
            node.values = _node(additional)
        elif additional is True:
            return OPEN
        else:
            node.kind = "object"
            node.props = {k: _node(v) for k, v in (schema.get("properties") or {}).items() if isinstance(v, Mapping)}
            if schema.get(_EMBEDDED):
                node.props.setdefault("apiVersion", _scalar())
                node.props.setdefault("kind", _scalar())
                node.props["metadata"] = definition_node(OBJECT_META)
    elif typ == "array":
        node.kind = "array"
        items = schema.get("items")
        node.items = _node(items) if isinstance(items, Mapping) else OPEN
        node.list_type = schema.get("x-kubernetes-list-type", "")
        node.list_map_keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
        if node.list_type == "map" and node.list_map_keys:
            node.strategy, node.merge_key = "merge", node.list_map_keys[0]
    else:
        node.kind = "scalar"
    return node


# --------------------------------------------------------------------------- defaulting

def apply_defaults(value: Any, schema: Schema | None) -> None:
    """Fill in ``default`` values in place (``structuraldefaulting.Default``)."""
    if schema is None:
        return
    if isinstance(value, dict):
        props = schema.get("properties")
        if isinstance(props, Mapping):
            for name, sub in props.items():
                if not isinstance(sub, Mapping):
                    continue
                if name in value and value[name] is None and not sub.get("nullable"):
                    if "default" not in sub:  # PruneNonNullableNullsWithoutDefaults
                        del value[name]
                        continue
                    del value[name]
                if "default" in sub and name not in value:
                    value[name] = deep_copy(sub["default"])
                if name in value:
                    apply_defaults(value[name], sub)
        additional = schema.get("additionalProperties")
        if isinstance(additional, Mapping):
            for sub_value in value.values():
                apply_defaults(sub_value, additional)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                if item is None and "default" in items and not items.get("nullable"):
                    value[i] = deep_copy(items["default"])
                apply_defaults(value[i], items)


# --------------------------------------------------------------------------- validation

_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return "integer"
    return _JSON_TYPES.get(type(value), "object")


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def validate_value(value: Any, schema: Schema | None, path: str) -> list[FieldError]:
    """kube-openapi's schema validation of ``value`` at ``path`` (``spec.replicas``)."""
    errs: list[FieldError] = []
    if schema is not None:
        _validate(value, schema, path, errs)
    return errs


def _type_error(path: str, shown: Any, want: str, got: str) -> FieldError:
    return fielderr.FieldError("TypeInvalid", path, shown, f"{path} in body must be of type {want}: \"{got}\"")


def _validate(value: Any, schema: Schema, path: str, errs: list[FieldError]) -> None:
    if schema.get(_PRESERVE) and len(schema) == 1:
        return
    typ = schema.get("type")
    got = _json_type(value)
    if value is None:
        if schema.get("nullable") or (not typ and not schema.get(_INT_OR_STRING)):
            return
        errs.append(_type_error(path, "null", typ or "integer,string", "null"))
        return
    if schema.get(_INT_OR_STRING):
        if got not in ("integer", "string"):
            errs.append(_type_error(path, got, "integer,string", got))
            return
    elif typ:
        ok = got == typ or (typ == "number" and got == "integer")
        if not ok:
            errs.append(_type_error(path, got, typ, got))
            return
    fmt = schema.get("format")
    if fmt and isinstance(value, (str, int)) and not _format_ok(fmt, value):
        errs.append(_type_error(path, value, fmt, value if isinstance(value, str) else str(value)))
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        errs.append(fielderr.not_supported(path, value, [e if isinstance(e, str) else orjson.dumps(e).decode()
                                                         for e in enum]))
    if got in ("integer", "number"):
        _validate_number(value, schema, path, errs)
    elif got == "string":
        _validate_string(value, schema, path, errs)
    elif got == "array":
        _validate_array(value, schema, path, errs)
    elif got == "object":
        _validate_object(value, schema, path, errs)
    for sub in schema.get("allOf") or ():
        if isinstance(sub, Mapping):
            _validate(value, sub, path, errs)
    any_of = [s for s in schema.get("anyOf") or () if isinstance(s, Mapping)]
    if any_of and not any(not validate_value(value, s, path) for s in any_of):
        errs.append(fielderr.invalid(path, value, f'"{path}" must validate at least one schema (anyOf)'))
    one_of = [s for s in schema.get("oneOf") or () if isinstance(s, Mapping)]
    if one_of and sum(1 for s in one_of if not validate_value(value, s, path)) != 1:
        errs.append(fielderr.invalid(path, value, f'"{path}" must validate one and only one schema (oneOf)'))
    if isinstance(schema.get("not"), Mapping) and not validate_value(value, schema["not"], path):
        errs.append(fielderr.invalid(path, value, f'"{path}" must not validate the schema (not)'))


def _validate_number(value: float, schema: Schema, path: str, errs: list[FieldError]) -> None:
    minimum = schema.get("minimum")
    if minimum is not None:
        if schema.get("exclusiveMinimum") and not value > minimum:
            errs.append(fielderr.invalid(path, value, f"{path} in body should be greater than {_number(minimum)}"))
        elif value < minimum:
            errs.append(fielderr.invalid(path, value, f"{path} in body should be greater than or equal to "
                                         f"{_number(minimum)}"))
    maximum = schema.get("maximum")
    if maximum is not None:
        if schema.get("exclusiveMaximum") and not value < maximum:
            errs.append(fielderr.invalid(path, value, f"{path} in body should be less than {_number(maximum)}"))
        elif value > maximum:
            errs.append(fielderr.invalid(path, value, f"{path} in body should be less than or equal to "
                                         f"{_number(maximum)}"))
    multiple = schema.get("multipleOf")
    if multiple and not math.isclose(value / multiple, round(value / multiple)):
        errs.append(fielderr.invalid(path, value, f"{path} in body should be a multiple of {_number(multiple)}"))


def _validate_string(value: str, schema: Schema, path: str, errs: list[FieldError]) -> None:
    length = len(value)
    max_length = schema.get("maxLength")
    if max_length is not None and length > max_length:
        errs.append(fielderr.FieldError("TooLong", path, fielderr.OMIT, f"may not be more than {max_length} bytes"))
    min_length = schema.get("minLength")
    if min_length is not None and length < min_length:
        errs.append(fielderr.invalid(path, value, f"{path} in body should be at least {min_length} chars long"))
    pattern = schema.get("pattern")
    if pattern is not None and _search(pattern, value) is False:
        errs.append(fielderr.invalid(path, value, f"{path} in body should match '{pattern}'"))


def _count_bounds(count: int, schema: Schema, path: str, noun: str, errs: list[FieldError]) -> None:
    """``maxItems``/``minItems`` (noun "items") and ``maxProperties``/``minProperties``."""
    suffix = "Items" if noun == "items" else "Properties"
    most, least = schema.get(f"max{suffix}"), schema.get(f"min{suffix}")
    if most is not None and count > most:
        errs.append(fielderr.too_many(path, count, most))
    if least is not None and count < least:
        errs.append(fielderr.invalid(path, count, f"{path} in body should have at least {least} {noun}"))


def _validate_array(value: list[Any], schema: Schema, path: str, errs: list[FieldError]) -> None:
    _count_bounds(len(value), schema, path, "items", errs)
    if schema.get("uniqueItems") and len({orjson.dumps(v, option=orjson.OPT_SORT_KEYS) for v in value}) != len(value):
        errs.append(fielderr.invalid(path, value, f"{path} in body shouldn't contain duplicates"))
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        seen: set[bytes] = set()
        for i, item in enumerate(value):
            key = orjson.dumps(item, option=orjson.OPT_SORT_KEYS)
            if key in seen:
                errs.append(fielderr.duplicate(f"{path}[{i}]", item))
            seen.add(key)
    elif list_type == "map":
        keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
        seen_keys: set[bytes] = set()
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            ident = orjson.dumps({k: item.get(k) for k in keys}, option=orjson.OPT_SORT_KEYS)
            if ident in seen_keys:
                errs.append(fielderr.duplicate(f"{path}[{i}]", {k: item.get(k) for k in keys if k in item}))
            seen_keys.add(ident)
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            _validate(item, items, f"{path}[{i}]", errs)


def _validate_object(value: dict[str, Any], schema: Schema, path: str, errs: list[FieldError]) -> None:
    prefix = f"{path}." if path else ""
    for name in schema.get("required") or ():
        if name not in value or (value[name] is None and not _nullable(schema, name)):
            errs.append(fielderr.required(f"{prefix}{name}"))
    _count_bounds(len(value), schema, path, "properties", errs)
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for name, sub in props.items():
            if name in value and isinstance(sub, Mapping):
                if path == "" and name == "metadata":
                    continue  # ObjectMeta is validated as ObjectMeta
                _validate(value[name], sub, f"{prefix}{name}", errs)
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        for name, sub_value in value.items():
            if not isinstance(props, Mapping) or name not in props:
                _validate(sub_value, additional, f"{prefix}{name}", errs)


def _nullable(schema: Schema, name: str) -> bool:
    sub = (schema.get("properties") or {}).get(name)
    return isinstance(sub, Mapping) and bool(sub.get("nullable"))


_PATTERNS: dict[str, re.Pattern[str] | None] = {}


def _search(pattern: str, value: str) -> bool | None:
    """Go's ``regexp.MatchString`` (RE2; Python's ``re`` agrees on the patterns CRDs use);
    None for a pattern Python cannot compile (not enforced rather than refused)."""
    if pattern in _PATTERNS:
        compiled = _PATTERNS[pattern]
    else:
        try:
            compiled = re.compile(pattern)
        except re.error:
            compiled = None
        _PATTERNS[pattern] = compiled
    if compiled is None:
        return None
    return compiled.search(value) is not None


def _format_ok(fmt: str, value: str | int) -> bool:
    """The cheap formats of kube-openapi's ``strfmt`` registry; unknown formats pass."""
    if isinstance(value, int):
        if fmt == "int32":
            return -(2**31) <= value < 2**31
        if fmt == "int64":
            return -(2**63) <= value < 2**63
        return True
    try:
        if fmt == "date-time":
            datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        elif fmt == "date":
            datetime.strptime(value, "%Y-%m-%d")
        elif fmt == "uuid":
            uuid.UUID(value)
        elif fmt == "byte":
            base64.b64decode(value, validate=True)
    except ValueError:
        return False
    return True
