"""One walk of a request body against the official schema: unknown fields *and* badly typed values.

Why: kube-apiserver decodes every body into Go structs, so ``minReadySeconds: "x"``, a label
value that is a list or an int32 of 2^40 never reach storage — the decoder answers 400 with
Go's words (``json: cannot unmarshal string into Go struct field DaemonSetSpec.spec.minReadySeconds
of type int32``).  We keep JSON-shaped dicts, so the same guarantee needs an explicit check, and
one badly typed object would otherwise break every client that lists its kind.

How it stays cheap (the write path must not get slower):

* the checker of a schema position is compiled once (:mod:`everynode.api.schema` builds one
  :class:`~everynode.api.schema.Node` per definition; each scalar node carries its ``accepts``
  predicate), so the walk is dictionary lookups and one ``type()`` test per scalar;
* the walk visits only the request's own values and skips every subtree equal to the stored
  object it updates (``known``), which is clean by construction: a status heartbeat checks the
  fields it changed, not the whole object;
* paths are kept as a stack of steps and only formatted when something is reported;
* a pod spec written without a stored version (a create) is checked once per template: the
  pods of one DaemonSet (or any controller) carry the same spec but for a few per-pod fields
  (``_PER_OBJECT_FIELDS``), so the JSON text of the rest is looked up among the templates
  found clean, and on a hit only the per-pod fields are walked — their findings, in the order
  the full walk gives them, because the rest has none.  Only clean walks below
  ``MAX_PROBLEMS`` (which report every finding) are remembered.

The same findings are phrased three ways, as upstream phrases them: Go's ``encoding/json``
errors (create and update bodies, and patched objects), the strict decoder's ``unknown field``
list, and structured-merge-diff's errors for a server-side apply configuration (``.spec.foo:
field not declared in schema``, ``.spec: expected map, got &{[1 2]}``).  What each check accepts
follows the Go type: int32/int64 take integers in range only (Go's ``ParseInt`` refuses ``1.5``),
``IntOrString`` takes a string or an int32, ``Quantity`` a string or number in Quantity syntax,
``Time`` a string; ``null`` is accepted everywhere (Go leaves the zero value).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from everynode.api.gobase64 import base64_error
from everynode.api.gojson import format_float
from everynode.api.scheduling import node_pin_name
from everynode.api.schema import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, Node, kind_node
from everynode.memo import remember

MAX_PROBLEMS: Final = 32  # structured-merge-diff reports every error; keep the message bounded

Step = str | int  # a field name / map key (str) or a list index (int)


@dataclass(slots=True)
class TypeProblem:
    """A value whose JSON type (or range) the schema position does not accept."""

    steps: tuple[Step, ...]   # where, from the root (field names, map keys, list indexes)
    go_path: str              # Go's UnmarshalTypeError.Field: JSON field names only ("spec.minReadySeconds")
    go_struct: str            # the innermost Go struct holding the field ("DaemonSetSpec")
    go_type: str              # the Go type of the position ("int32", "[]v1.Container", "map[string]string")
    check: str                # the node's check ("object", "map", "array", "int32", "string", ...)
    value: Any
    smd_path: str             # structured-merge-diff's path (".spec.template.spec.containers[name=\"c\"]")


class Findings:
    """What a type check found (a plain class: one is made per write, and a dataclass's
    ``__init__`` would run interpreted)."""

    def __init__(self) -> None:
        self.unknown: list[str] = []       # dotted paths, strict decoder style
        self.unknown_smd: list[str] = []   # the same, in structured-merge-diff's form
        self.problems: list[TypeProblem] = []

    def __bool__(self) -> bool:
        return bool(self.unknown or self.problems)


def check_object(api_version: str, kind: str, obj: Mapping[str, Any], *,
                 known: Mapping[str, Any] | None = None) -> Findings:
    """The unknown fields and type problems of ``obj`` (a served kind; others report nothing).

    ``known``: an earlier, clean version of the same object; subtrees equal to it are skipped."""
    if is_clean(api_version, kind, obj, known=known):
        return Findings()
    return walk(api_version, kind, obj, known=known)


def is_clean(api_version: str, kind: str, obj: Mapping[str, Any], *,
             known: Mapping[str, Any] | None = None) -> bool:
    """Whether :func:`check_object` finds nothing: the compiled verdict, without wording."""
    node = kind_node(api_version, kind)
    return node is None or verdict(node).clean(obj, _ABSENT if known is None else known)


def walk(api_version: str, kind: str, obj: Mapping[str, Any], *,
         known: Mapping[str, Any] | None = None) -> Findings:
    """:func:`check_object`'s findings by the walk alone (what the verdict is checked against)."""
    findings = Findings()
    node = kind_node(api_version, kind)
    if node is not None:
        _Walker(findings).object(node, obj, _ABSENT if known is None else known, [], [], kind)
    return findings


# -- the compiled verdict ------------------------------------------------------------------------
#
# Most writes are clean, and for them the walker's bookkeeping (the path as a step stack, the Go
# struct of each position, a method call per level) is spent for nothing.  Each schema position
# therefore gets a verdict, made on first use, that answers only "would the walk find anything
# here?" — the same rules in the same places (what each position accepts, unknown fields,
# subtrees equal to the known version skipped, the pod template memo) — and stops at the first
# finding; check_object then walks again with the walker, which words the findings.
# tests/unit/test_write_path_shortcuts.py compares both on clean and faulty objects.
#
# The verdicts are instances of small classes, not closures: compiled (compiled.py), a verdict
# calls its children's ``clean`` through the class's method table and tests a scalar by its
# check's code inline, where nested functions were called as generic Python objects (their
# arguments parsed at every call) and each scalar's predicate too.  A status write checks every
# value of the status it brings (a pod's Running status: about fifty), so the call is what the
# check cost.

# The scalar checks tested inline (schema.py's predicates, by the node's ``check``); any other
# check (bytes, intstr, quantity) calls the node's predicate.
_ANY: Final = 0
_STRING: Final = 1
_INT32: Final = 2
_INT64: Final = 3
_BOOL: Final = 4
_FLOAT64: Final = 5
_PREDICATE: Final = 6
_CHECK_CODES: Final[dict[str, int]] = {"any": _ANY, "string": _STRING, "time": _STRING, "int32": _INT32,
                                       "int64": _INT64, "bool": _BOOL, "float64": _FLOAT64}


def _scalar_code(node: Node) -> int:
    """The inline test of a scalar position (``any`` and open positions: anything)."""
    if node.kind != "scalar":
        return _ANY
    return _CHECK_CODES.get(node.check, _PREDICATE)


def _accepts(code: int, node: Node, value: Any) -> bool:
    """What schema.py's predicate of ``node`` answers for a non-null ``value`` (``code``: its
    :func:`_scalar_code`)."""
    if code == _STRING:
        return type(value) is str
    if code == _INT32:
        return type(value) is int and INT32_MIN <= value <= INT32_MAX
    if code == _BOOL:
        return type(value) is bool
    if code == _ANY:
        return True
    if code == _INT64:
        return type(value) is int and INT64_MIN <= value <= INT64_MAX
    if code == _FLOAT64:
        return type(value) is float or type(value) is int
    return node.accepts(value)


class _Verdict:
    """An open position's verdict (anything goes); the base of the others."""

    def clean(self, value: Any, known: Any) -> bool:
        """Whether the walk would find nothing in ``value`` (``known``: the clean version it
        replaces, or ``_ABSENT``)."""
        return True


def verdict(node: Node) -> _Verdict:
    """The verdict of ``node``, made once and kept on the node."""
    made = node.clean
    if made is None:
        made = node.clean = _make_verdict(node)
    result: _Verdict = made
    return result


def _make_verdict(node: Node) -> _Verdict:
    kind = node.kind
    # A badly typed value is a finding, except at an "any" position (a custom resource's).
    wrong_type_ok = node.check == "any"
    if kind == "object":
        if node.definition == _AFFINITY:
            return _AffinityVerdict(node, wrong_type_ok)
        return _ObjectVerdict(node, wrong_type_ok)
    if kind == "array" or kind == "map":
        element = node.items if kind == "array" else node.values
        if element is None or element.kind == "open":
            return _ShallowVerdict(kind == "array", wrong_type_ok)
        if element.kind == "scalar":
            return _ScalarItemsVerdict(kind == "array", wrong_type_ok, element)
        return _ItemsVerdict(kind == "array", wrong_type_ok, element)
    if kind == "scalar":
        return _ScalarVerdict(wrong_type_ok, node)
    return _Verdict()  # open


class _ScalarVerdict(_Verdict):
    def __init__(self, wrong_type_ok: bool, node: Node) -> None:
        self.wrong_type_ok = wrong_type_ok
        self.node = node
        self.code = _scalar_code(node)

    def clean(self, value: Any, known: Any) -> bool:
        return self.wrong_type_ok or _accepts(self.code, self.node, value)


class _ObjectVerdict(_Verdict):
    def __init__(self, node: Node, wrong_type_ok: bool) -> None:
        self.node = node
        self.wrong_type_ok = wrong_type_ok
        # key -> the scalar's code (open fields: anything) ...
        self.scalars: dict[str, int] = {}
        self.scalar_nodes: dict[str, Node] = {}
        # ... or the container's node, and its verdict once used
        self.containers: dict[str, Node] = {}
        self.verdicts: dict[str, _Verdict] = {}
        for key, child in node.props.items():
            if child.kind == "scalar" or child.kind == "open":
                self.scalars[key] = _scalar_code(child)
                self.scalar_nodes[key] = child
            else:
                self.containers[key] = child
        self.per_object = _PER_OBJECT_FIELDS.get(node.definition)

    def clean(self, value: Any, known: Any) -> bool:
        if type(value) is not dict:
            return self.wrong_type_ok
        per_object = self.per_object
        if per_object is not None and known is _ABSENT:
            template = _template_key(self.node, value, per_object)
            if template is not None and template in _CLEAN_TEMPLATES:
                return self.fields(value, known, per_object)
            if template is not None:
                if not self.fields(value, known, None):
                    return False
                remember(_CLEAN_TEMPLATES, template, True, limit=_CLEAN_TEMPLATES_MAX)
                return True
        return self.fields(value, known, None)

    def fields(self, value: dict[str, Any], known: Any, only: frozenset[str] | None) -> bool:
        """The verdict over ``value``'s fields (``only``: those named there)."""
        known_map: dict[str, Any] = known if type(known) is dict else _NOTHING_KNOWN
        scalars = self.scalars
        for key, sub in value.items():
            if only is not None and key not in only:
                continue
            code = scalars.get(key, -1)
            if code >= 0:
                # (a string, the most common scalar, is tested here: no call, and no look-up of
                # the node only a predicate needs)
                if code == _ANY or sub is None or (code == _STRING and type(sub) is str):
                    continue
                if not _accepts(code, self.scalar_nodes[key], sub):
                    return False
                continue
            child = self.containers.get(key)
            if child is None:
                return False  # an unknown field
            if sub is None:
                continue
            before = known_map.get(key, _ABSENT)
            if before is sub or (before is not _ABSENT and _same(before, sub)):
                continue
            check = self.verdicts.get(key)
            if check is None:
                check = self.verdicts[key] = verdict(child)
            if not check.clean(sub, before):
                return False
        return True


_AFFINITY: Final = "io.k8s.api.core.v1.Affinity"


class _AffinityVerdict(_ObjectVerdict):
    """A pod's affinity.  A DaemonSet pod's node pin (``api.scheduling.node_pin_name``: that
    exact shape, each of its values of the type its position takes) is clean without walking
    its seven levels, which every templated pod's create did for its own node's name; any other
    affinity is walked."""

    def clean(self, value: Any, known: Any) -> bool:
        return node_pin_name(value) is not None or super().clean(value, known)


class _ShallowVerdict(_Verdict):
    """An array (``is_list``) or map of anything: only its own type is checked."""

    def __init__(self, is_list: bool, wrong_type_ok: bool) -> None:
        self.is_list = is_list
        self.wrong_type_ok = wrong_type_ok

    def clean(self, value: Any, known: Any) -> bool:
        return (type(value) is list if self.is_list else type(value) is dict) or self.wrong_type_ok


class _ScalarItemsVerdict(_Verdict):
    """An array (``is_list``) or map of scalars."""

    def __init__(self, is_list: bool, wrong_type_ok: bool, element: Node) -> None:
        self.is_list = is_list
        self.wrong_type_ok = wrong_type_ok
        self.element = element
        self.code = _scalar_code(element)

    def clean(self, value: Any, known: Any) -> bool:
        code = self.code
        element = self.element
        if self.is_list:
            if type(value) is not list:
                return self.wrong_type_ok
            items: list[Any] = value
            return code == _ANY or all(sub is None or _accepts(code, element, sub) for sub in items)
        if type(value) is not dict:
            return self.wrong_type_ok
        values: dict[Any, Any] = value
        return code == _ANY or all(sub is None or _accepts(code, element, sub) for sub in values.values())


class _ItemsVerdict(_Verdict):
    """An array (``is_list``) or map of containers: the type, then each item against the known
    version's item at the same index (key)."""

    def __init__(self, is_list: bool, wrong_type_ok: bool, element: Node) -> None:
        self.is_list = is_list
        self.wrong_type_ok = wrong_type_ok
        self.element = element
        self.item: _Verdict | None = None

    def clean(self, value: Any, known: Any) -> bool:
        item = self.item
        if item is None:
            item = self.item = verdict(self.element)
        if self.is_list:
            if type(value) is not list:
                return self.wrong_type_ok
            items: list[Any] = value
            known_items: list[Any] = known if type(known) is list else []
            n_known = len(known_items)
            for i, sub in enumerate(items):
                if sub is None:
                    continue
                before = known_items[i] if i < n_known else _ABSENT
                if before is sub or (before is not _ABSENT and _same(before, sub)):
                    continue
                if not item.clean(sub, before):
                    return False
            return True
        if type(value) is not dict:
            return self.wrong_type_ok
        values: dict[Any, Any] = value
        known_map: dict[Any, Any] = known if type(known) is dict else _NOTHING_KNOWN
        for key, sub in values.items():
            if sub is None:
                continue
            before = known_map.get(key, _ABSENT)
            if before is sub or (before is not _ABSENT and _same(before, sub)):
                continue
            if not item.clean(sub, before):
                return False
        return True


class _Walker:
    __slots__ = ("findings",)

    def __init__(self, findings: Findings) -> None:
        self.findings = findings

    # Each method gets the value's path as a step stack plus, per step, the list node it indexes
    # (for smd's key-based element names), and the Go struct that holds the position.

    def object(self, node: Node, value: Any, known: Any, steps: list[Step], lists: list[Any],
               struct: str) -> None:
        if type(value) is not dict:
            self.problem(node, value, steps, lists, struct)
            return
        props = node.props
        known_map = known if type(known) is dict else _NOTHING_KNOWN
        inner = node.go_struct
        items: Any = value.items()
        per_object = _PER_OBJECT_FIELDS.get(node.definition)
        if per_object is not None and known is _ABSENT:
            template = _template_key(node, value, per_object)
            if template is not None and template in _CLEAN_TEMPLATES:
                items = [(k, v) for k, v in items if k in per_object]
            elif template is not None:
                findings = self.findings
                n_unknown, n_problems = len(findings.unknown), len(findings.problems)
                self._fields(node, items, known_map, steps, lists, inner, props)
                if (len(findings.unknown) == n_unknown < MAX_PROBLEMS
                        and len(findings.problems) == n_problems < MAX_PROBLEMS):
                    remember(_CLEAN_TEMPLATES, template, True, limit=_CLEAN_TEMPLATES_MAX)
                return
        self._fields(node, items, known_map, steps, lists, inner, props)

    def _fields(self, node: Node, items: Any, known_map: Mapping[str, Any], steps: list[Step], lists: list[Any],
                inner: str, props: dict[str, Node]) -> None:
        for key, sub in items:
            child = props.get(key)
            if child is None:
                self.unknown(steps, lists, key)
                continue
            if sub is None:
                continue
            ck = child.kind
            if ck == "scalar":
                if not child.accepts(sub):
                    steps.append(key)
                    lists.append(None)
                    self.problem(child, sub, steps, lists, inner)
                    steps.pop()
                    lists.pop()
                continue
            if ck == "open":
                continue
            before = known_map.get(key, _ABSENT)
            if before is sub or (before is not _ABSENT and _same(before, sub)):
                continue
            steps.append(key)
            lists.append(None)
            self.descend(child, sub, before, steps, lists, inner)
            steps.pop()
            lists.pop()

    def descend(self, node: Node, value: Any, known: Any, steps: list[Step], lists: list[Any],
                struct: str) -> None:
        kind = node.kind
        if kind == "object":
            self.object(node, value, known, steps, lists, struct)
        elif kind == "array":
            if type(value) is not list:
                self.problem(node, value, steps, lists, struct)
                return
            items = node.items
            if items is None or items.kind == "open":
                return
            known_items = known if type(known) is list else ()
            n_known = len(known_items)
            scalar = items.kind == "scalar"
            for i, item in enumerate(value):
                if item is None:
                    continue
                if scalar:
                    if not items.accepts(item):
                        steps.append(i)
                        lists.append((node, item))
                        self.problem(items, item, steps, lists, struct)
                        steps.pop()
                        lists.pop()
                    continue
                before = known_items[i] if i < n_known else _ABSENT
                if before is item or (before is not _ABSENT and _same(before, item)):
                    continue
                steps.append(i)
                lists.append((node, item))
                self.descend(items, item, before, steps, lists, struct)
                steps.pop()
                lists.pop()
        elif kind == "map":
            if type(value) is not dict:
                self.problem(node, value, steps, lists, struct)
                return
            values = node.values
            if values is None or values.kind == "open":
                return
            known_map = known if type(known) is dict else _NOTHING_KNOWN
            scalar = values.kind == "scalar"
            for key, sub in value.items():
                if sub is None:
                    continue
                if scalar:
                    if not values.accepts(sub):
                        steps.append(key)
                        lists.append(_MAP_KEY)
                        self.problem(values, sub, steps, lists, struct)
                        steps.pop()
                        lists.pop()
                    continue
                before = known_map.get(key, _ABSENT)
                if before is sub or (before is not _ABSENT and _same(before, sub)):
                    continue
                steps.append(key)
                lists.append(_MAP_KEY)
                self.descend(values, sub, before, steps, lists, struct)
                steps.pop()
                lists.pop()
        elif kind == "scalar" and not node.accepts(value):
            self.problem(node, value, steps, lists, struct)

    # -- reporting ---------------------------------------------------------------------------------

    def unknown(self, steps: list[Step], lists: list[Any], key: str) -> None:
        findings = self.findings
        if len(findings.unknown) >= MAX_PROBLEMS:
            return
        findings.unknown.append(_dotted(steps, lists, key))
        findings.unknown_smd.append(_smd_path(steps, lists, key))

    def problem(self, node: Node, value: Any, steps: list[Step], lists: list[Any], struct: str) -> None:
        findings = self.findings
        if len(findings.problems) >= MAX_PROBLEMS or node.check == "any":
            return  # "any": a custom resource's position (its schema validator judges types)
        findings.problems.append(TypeProblem(
            steps=tuple(steps), go_path=".".join(str(s) for s, mark in zip(steps, lists, strict=True) if mark is None),
            go_struct=struct, go_type=node.go_type(), check=node.check, value=value,
            smd_path=_smd_path(steps, lists)))


# ``lists`` marks each step: None for a field name, _MAP_KEY for a map key, (list node, item) for
# a list index (structured-merge-diff names an associative list's element by its keys).
_MAP_KEY: Final[Any] = object()


def _dotted(steps: list[Step], marks: list[Any], key: str) -> str:
    """The strict decoder's path: ``spec.template.spec.containers[0].foo``, ``data[key]``."""
    out = ""
    for s, mark in zip(steps, marks, strict=True):
        if mark is None:
            out = f"{out}.{s}" if out else str(s)
        else:
            out += f"[{s}]"
    return f"{out}.{key}" if out else key


def _smd_path(steps: list[Step], marks: list[Any], key: str | None = None) -> str:
    """structured-merge-diff's path: ``.spec.containers[name="c"].image``, ``.metadata.labels.a``."""
    out = ""
    for s, mark in zip(steps, marks, strict=True):
        if mark is None or mark is _MAP_KEY:
            out += f".{s}"
            continue
        list_node, item = mark
        if list_node.list_type == "map" and list_node.list_map_keys and isinstance(item, dict):
            parts = [f"{k}={_smd_key_value(item.get(k))}" for k in sorted(list_node.list_map_keys) if k in item]
            out += "[" + ",".join(parts) + "]"
        elif list_node.list_type == "set" and not isinstance(item, (dict, list)):
            out += f"[={_smd_key_value(item)}]"
        else:
            out += f"[{s}]"
    if key is not None:
        out += f".{key}"
    return out


def _smd_key_value(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return go_value(value)


def _same(before: Any, value: Any) -> bool:
    """Equal *with the same JSON types*: Python's ``==`` holds ``True == 1 == 1.0``, so a patch
    turning ``maxUnavailable: 1`` into ``true`` would compare equal to the clean stored value.

    Walked in step, stopping at the first difference, with two shortcuts: a sub-tree that is the
    very object of ``before`` is the same (the write paths carry the stored object's untouched
    members over by identity: a ``*/status`` write's one-level copy of ``metadata`` shares every
    member), and two scalars of one type are compared with ``==``.  (It once compared the JSON
    texts of both sides: two serialisations of a whole ``metadata`` with its managedFields on
    every status write, where the members were the stored ones.)  Key order is not compared:
    the two sides hold the same members with the same types, which is all the check needs."""
    if before is value:
        return True
    if type(value) is not type(before):
        return False
    # (``type(x) is dict`` narrows both sides, so the compiled walk uses the dict and list
    # primitives, not method calls by name)
    if type(before) is dict and type(value) is dict:
        if len(before) != len(value):
            return False
        for key, sub in value.items():
            prior = before.get(key, _ABSENT)
            if prior is not sub and (prior is _ABSENT or not _same(prior, sub)):
                return False
        return True
    if type(before) is list and type(value) is list:
        if len(before) != len(value):
            return False
        for i in range(len(value)):
            prior, sub = before[i], value[i]
            if prior is not sub and not _same(prior, sub):
                return False
        return True
    return bool(before == value)


# The fields of a definition that differ from object to object of one template, and the memo of
# the templates found clean (module docstring): a DaemonSet's pods share their spec but for the
# node they are pinned to (``affinity``) and the one they are bound to (``nodeName``).
_PER_OBJECT_FIELDS: dict[str, frozenset[str]] = {"io.k8s.api.core.v1.PodSpec": frozenset({"affinity", "nodeName"})}
_CLEAN_TEMPLATES: Final[dict[tuple[Node, bytes], bool]] = {}
_CLEAN_TEMPLATES_MAX: Final = 4096


def _template_key(node: Node, value: dict[str, Any], per_object: frozenset[str]) -> tuple[Node, bytes] | None:
    """(node, JSON text of ``value`` without its per-object fields), or None if not JSON-shaped."""
    try:
        return node, orjson.dumps({k: v for k, v in value.items() if k not in per_object})
    except TypeError:
        return None


_ABSENT: Final[Any] = object()
_NOTHING_KNOWN: Final[dict[str, Any]] = {}


# ---------------------------------------------------------------------------------------------
# the three phrasings


def _go_value(value: Any, check: str) -> str:
    """Go's description of a JSON value in an UnmarshalTypeError ("string", "number 1.5", ...)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if check in ("int32", "int64", "intstr"):
        return "number " + (str(value) if isinstance(value, int) else format_float(value))
    return "number"


def go_decode_message(problem: TypeProblem) -> str:
    """What Go's JSON decoder (and the type's own UnmarshalJSON) says about the problem."""
    check = problem.check
    if check == "intstr":  # IntOrString.UnmarshalJSON: a non-string goes into an int32, alone
        return f"json: cannot unmarshal {_go_value(problem.value, 'intstr')} into Go value of type int32"
    if check == "quantity":
        from everynode.api.quantity import ERR_FORMAT_WRONG

        if isinstance(problem.value, str):
            from everynode.api.quantity import parse_quantity

            try:
                parse_quantity(problem.value)
            except ValueError as e:
                return str(e)
        return ERR_FORMAT_WRONG
    if check == "bytes" and isinstance(problem.value, str):  # a string that is not base64
        return base64_error(problem.value) or ""
    if check == "time":  # Time.UnmarshalJSON unmarshals into a string first
        return f"json: cannot unmarshal {_go_value(problem.value, 'string')} into Go value of type string"
    return (f"json: cannot unmarshal {_go_value(problem.value, check)} into Go struct field "
            f"{problem.go_struct}.{problem.go_path} of type {problem.go_type}")


def is_structural(problem: TypeProblem) -> bool:
    """Whether structured-merge-diff (server-side apply's typed conversion) refuses it too: a
    wrong JSON kind.  Integer ranges, floats in int fields and Quantity syntax are Go-only."""
    value, check = problem.value, problem.check
    expected = _SMD_EXPECTED.get(check, "untyped")
    if expected == "map":
        return not isinstance(value, dict)
    if expected == "list":
        return not isinstance(value, list)
    if expected == "string":
        return not isinstance(value, str)
    if expected == "numeric":
        return isinstance(value, (str, bool, list, dict))
    if expected == "boolean":
        return not isinstance(value, bool)
    return isinstance(value, (list, dict))


_SMD_EXPECTED: Final = {"object": "map", "map": "map", "array": "list", "string": "string", "bytes": "string",
                        "int32": "numeric", "int64": "numeric", "float64": "numeric", "bool": "boolean"}


def go_value(value: Any) -> str:
    """Go's ``%v`` of a decoded JSON value (``[1 2]``, ``map[a:1]``, ``true``)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def _go_syntax(value: Any) -> str:
    """Go's ``%#v`` of a decoded JSON value."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_syntax(v) for v in value) + "}"
    if isinstance(value, dict):
        return "map[string]interface {}{" + ", ".join(f'"{k}":{_go_syntax(value[k])}' for k in sorted(value)) + "}"
    return str(value)


def _go_type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def smd_message(problem: TypeProblem) -> str:
    """structured-merge-diff's validation error for a structural problem."""
    value = problem.value
    expected = _SMD_EXPECTED.get(problem.check, "untyped")
    if expected == "map":
        text = f"expected map, got &{{{go_value(value)}}}"
    elif expected == "list":
        text = f"expected list, got &{{{go_value(value)}}}"
    elif expected == "string":
        text = f"expected string, got &value.valueUnstructured{{Value:{_go_syntax(value)}}}"
    elif expected == "numeric":
        text = f"expected numeric (int or float), got {_go_type_name(value)}"
    elif expected == "boolean":
        text = f"expected boolean, got &{{{go_value(value)}}}"
    else:
        text = f"expected any scalar, got &{{{go_value(value)}}}"
    return f"{problem.smd_path}: {text}"


def smd_errors(findings: Findings) -> str:
    """``ValidationErrors.Error()``: one error as is, several as an indented list."""
    lines = [f"{p}: field not declared in schema" for p in findings.unknown_smd]
    lines.extend(smd_message(p) for p in findings.problems if is_structural(p))
    if len(lines) == 1:
        return lines[0]
    return "errors:\n  " + "\n  ".join(lines)
