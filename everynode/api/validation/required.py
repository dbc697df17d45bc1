"""Required fields, read from the official schemas' ``required`` lists: ``spec.provisioner:
Required value`` for every kind without hand-written validation.

Why schema-driven: the ~40 kinds served from :mod:`everynode.api.builtin_kinds` have no
validation of their own here, and their ``+required`` markers are what the OpenAPI ``required``
lists hold.  What a real kube-apiserver refuses, though, is decided after Go decoding, where an
absent field is its zero value — so the rule follows the Go types, not JSON Schema:

* a required string that is absent or ``""``, and a required list that is absent or empty,
  is ``Required value`` (upstream's validators test ``len(x) == 0``);
* a required object that is absent is its zero struct when it has required fields of its own
  (``spec.scaleTargetRef.kind: Required value``), and is itself ``Required value`` when it has
  none — such a field is a pointer upstream (``spec.selector: Required value``);
* required numbers and booleans are never reported (zero is a value to Go);
* ``metadata`` (ObjectMeta has its own rules) and ``status`` (written by controllers, checked by
  the status strategies) are not walked; nor are lists known to be legitimately empty
  (``CSINode.spec.drivers`` of a node without CSI drivers) or structs whose zero value is valid
  (``NetworkPolicy.spec.podSelector``: every pod).

Pods, DaemonSets and the other kinds with hand-written validation never come here, so the pod
write path costs nothing more.  A definition's plan is compiled once.
"""

from __future__ import annotations

import functools
from typing import Any

from everynode.api import field_errors as field
from everynode.api.field_errors import FieldError
from everynode.api.schema import Node, definitions, kind_node

Obj = dict[str, Any]

_SKIPPED_TOP = frozenset({"metadata", "status", "apiVersion", "kind"})
_MAY_BE_EMPTY = frozenset({
    ("io.k8s.api.storage.v1.CSINodeSpec", "drivers"),
    # struct (not pointer) fields whose zero value upstream's validation accepts
    ("io.k8s.api.networking.v1.NetworkPolicySpec", "podSelector"),
    ("io.k8s.api.storage.v1.CSIDriver", "spec"),
    ("io.k8s.api.core.v1.PreferredSchedulingTerm", "preference"),
})

# (field, its node, required?) for the fields of one object definition that can hold a finding.
Plan = tuple[tuple[str, Node, bool], ...]


@functools.cache
def _plan(definition: str) -> Plan:
    node = _object_node(definition)
    required = set(definitions()[definition].get("required") or ())
    out: list[tuple[str, Node, bool]] = []
    for key, child in node.props.items():
        is_required = key in required and (definition, key) not in _MAY_BE_EMPTY
        if is_required and (child.check in ("string", "array", "object") or _holds_findings(child)):
            out.append((key, child, True))
        elif _holds_findings(child):
            out.append((key, child, False))
    return tuple(out)


def _object_node(definition: str) -> Node:
    from everynode.api.schema import definition_node

    return definition_node(definition)


def _holds_findings(node: Node) -> bool:
    """Whether a value at ``node`` can contain a required field (objects, lists/maps of them)."""
    while node.kind in ("array", "map"):
        inner = node.items if node.kind == "array" else node.values
        if inner is None:
            return False
        node = inner
    return node.kind == "object" and bool(node.definition) and _has_required(node.definition)


@functools.cache
def _has_required(definition: str, _seen: frozenset[str] = frozenset()) -> bool:
    if definitions()[definition].get("required"):
        return True
    seen = _seen | {definition}
    for child in _object_node(definition).props.values():
        while child.kind in ("array", "map"):
            inner = child.items if child.kind == "array" else child.values
            if inner is None:
                break
            child = inner
        if child.kind == "object" and child.definition and child.definition not in seen \
                and _has_required(child.definition, seen):
            return True
    return False


def validate_required(api_version: str, kind: str, obj: Obj) -> list[FieldError]:
    """``Required value`` for each required field ``obj`` leaves empty (document order)."""
    node = kind_node(api_version, kind)
    if node is None or not node.definition:
        return []
    errs: list[FieldError] = []
    for key, child, is_required in _plan(node.definition):
        if key in _SKIPPED_TOP:
            continue
        _check(child, obj.get(key), key, is_required, errs)
    return errs


def _check(node: Node, value: Any, path: str, is_required: bool, errs: list[FieldError]) -> None:
    if node.kind == "array":
        if not value:
            if is_required:
                errs.append(field.required(path))
            return
        if isinstance(value, list) and node.items is not None and node.items.kind == "object":
            for i, item in enumerate(value):
                _object(node.items, item, f"{path}[{i}]", errs)
        return
    if node.kind == "map":
        if isinstance(value, dict) and node.values is not None and node.values.kind == "object":
            for k, item in value.items():
                _object(node.values, item, f"{path}[{k}]", errs)
        return
    if node.kind == "object":
        if value is None:
            if not is_required:
                return
            if not node.definition or not definitions()[node.definition].get("required"):
                errs.append(field.required(path))  # a pointer (LabelSelector): nil is missing
                return
            value = {}  # a struct: its zero value, whose own required fields are missing
        _object(node, value, path, errs)
        return
    if is_required and (value is None or value == ""):
        errs.append(field.required(path))


def _object(node: Node, value: Any, path: str, errs: list[FieldError]) -> None:
    if not isinstance(value, dict) or not node.definition:
        return
    for key, child, is_required in _plan(node.definition):
        _check(child, value.get(key), f"{path}.{key}", is_required, errs)
