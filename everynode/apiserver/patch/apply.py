"""Server-side apply and ``metadata.managedFields`` bookkeeping (a structured-merge-diff subset).

Why: ``kubectl apply --server-side`` sends ``application/apply-patch+yaml`` and relies on field
ownership: a changed field another manager owns is a 409 conflict unless ``force=true``, and
fields the applier owned but no longer sends are removed (kubectl-contract.md §4, §7).
Upstream does this with sigs.k8s.io/structured-merge-diff driven by the OpenAPI schema; here
the same schema (:mod:`everynode.api.schema`) drives a deliberately small model that is exact
for the cases kubectl exercises:

* a field set is a set of paths in FieldsV1 notation (``f:<field>``, ``k:{"name":"x"}`` for
  items of keyed lists, ``v:<json>`` for items of sets); leaf fields, list items and non-empty
  map-typed fields (labels, annotations, …) are members, rendered with ``.`` when they also
  have children; lists without keys are atomic (one member);
* ``apply_server_side`` merges the applied configuration into the live object (maps merge,
  keyed lists merge by key, sets union, atomic lists replace), reports conflicts for fields
  owned by other managers whose live value differs from the applied one (message and causes as
  ``internal/conflict.go``), removes fields it owned before and no longer applies unless
  someone else owns them, and records an ``Apply`` entry;
* ``record_managed_fields`` gives an ``Update`` manager (POST/PUT/PATCH) the fields it added or
  changed, taking them from other managers, as upstream does for non-apply writes.
System fields (apiVersion, kind, metadata name/namespace/uid/resourceVersion/generation/
creationTimestamp/managedFields, …) are never tracked; ``status`` is not tracked for writes to
the main resource of kinds with a status subresource (and ``spec`` not for status writes).
"""

from __future__ import annotations

import functools
import json
import sys
import zlib
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from everynode.api import registry, schema
from everynode.api.errors import ApiError, bad_request, status
from everynode.api.gojson import go_json, verbatim
from everynode.api.meta import deep_copy, field_of
from everynode.api.schema import Node
from everynode.memo import record_look_up, remember, skips_look_up

Path = tuple[str, ...]
Tree = dict[str, Any]  # a FieldsV1 tree (or one node of it)

_STRIPPED: Final[frozenset[Path]] = frozenset({
    ("f:apiVersion",), ("f:kind",),
    ("f:metadata", "f:name"), ("f:metadata", "f:namespace"), ("f:metadata", "f:uid"),
    ("f:metadata", "f:resourceVersion"), ("f:metadata", "f:generation"),
    ("f:metadata", "f:creationTimestamp"), ("f:metadata", "f:selfLink"),
    ("f:metadata", "f:managedFields"), ("f:metadata", "f:deletionTimestamp"),
    ("f:metadata", "f:deletionGracePeriodSeconds"), ("f:metadata",),
})


# --------------------------------------------------------------------------- field sets

# Defaults of list-map key fields (the OpenAPI ``default`` of upstream's ``+default`` markers,
# which structured-merge-diff uses to match items whose key field was left out; our schema data
# carries no defaults).  Without this, re-applying ports that omit ``protocol`` would not match
# the stored, defaulted items and would be appended as duplicates.
KEY_DEFAULTS: Final[dict[str, Any]] = {"protocol": "TCP"}


def _ident(item: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in keys:
        if k in item:
            out[k] = item[k]
        elif k in KEY_DEFAULTS:
            out[k] = KEY_DEFAULTS[k]
    return out


_KEY_ELEMENTS: Final[dict[tuple[Any, ...], str]] = {}  # (keys, (type, value) per key) -> "k:{...}"
_KEY_ELEMENTS_MAX: Final = 16_384
# One key holding a string (a name, a type, an IP): key -> value -> "k:{...}".  No tuple is made
# per look-up, and none is kept per entry: such a tuple is a tracked object, which the
# collector's young passes walked for each pod's IP (unique, so each one was kept).
_STRING_KEY_ELEMENTS: Final[dict[str, dict[str, str]]] = {}


def _key_element(item: dict[str, Any], keys: tuple[str, ...]) -> str:
    """The ``k:{...}`` path element of a keyed list item.

    Memoised on the key values (with their types, so ``1``, ``1.0`` and ``True`` stay apart):
    every diff of a pod's containers, ports, conditions and statuses renders the same few
    elements, and Go-JSON rendering them each time was most of a status write's diff."""
    if len(keys) == 1:  # the usual list map (name, type, ip, containerPort): no identity dict
        key = keys[0]
        value = item.get(key, _MISSING)
        if value is _MISSING:
            value = KEY_DEFAULTS.get(key, _MISSING)
        if type(value) is str:  # (no other value equals a string: its own key suffices)
            by_value = _STRING_KEY_ELEMENTS.get(key)
            if by_value is None:
                by_value = remember(_STRING_KEY_ELEMENTS, key, {}, limit=1024)
            element = by_value.get(value)
            if element is None:
                element = remember(by_value, value, _render_key_element(item, keys), limit=_KEY_ELEMENTS_MAX)
            return element
        memo_key: tuple[Any, ...] = (keys,) if value is _MISSING else (keys, (key, value.__class__, value))
    else:
        memo_key = (keys, *[(k, v.__class__, v) for k, v in _ident(item, keys).items()])
    try:
        element = _KEY_ELEMENTS.get(memo_key)
    except TypeError:  # an unhashable key value (a list or object): render it every time
        return "k:" + go_json(_ident(item, keys)).decode()
    if element is None:
        element = remember(_KEY_ELEMENTS, memo_key, _render_key_element(item, keys), limit=_KEY_ELEMENTS_MAX)
    return element


def _render_key_element(item: dict[str, Any], keys: tuple[str, ...]) -> str:
    """``k:`` and the Go JSON of the item's key fields.  One key holding a plain string (a pod
    IP, a name) is written out directly: Go writes such a string as it is, between quotes (no
    character it escapes), and the general encoder cost the status write of each new pod about
    8 K instructions for each of its two IPs, which miss the memo."""
    if len(keys) == 1:
        key = keys[0]
        value = item.get(key)
        if type(value) is str and verbatim(value) and verbatim(key):
            return f'k:{{"{key}":"{value}"}}'
    return "k:" + go_json(_ident(item, keys)).decode()


def _list_keys(node: Node | None) -> tuple[str, ...] | None:
    """Keys of an associative list, () for a set, None for an atomic list.

    As kube-openapi's schema conversion for structured-merge-diff has it (``pkg/schemaconv``,
    the array visitor): ``x-kubernetes-list-type`` decides where it is given — ``atomic`` even
    over a merge patch strategy (a pod's ``status.hostIPs``: ``f:hostIPs: {}`` in the kubelet's
    entry, one member) — and only a list without it is keyed by its patch merge key."""
    if node is None or node.kind != "array":
        return None
    if node.list_type == "map" and node.list_map_keys:
        return node.list_map_keys
    if node.list_type == "set":
        return ()
    if node.list_type == "atomic":
        return None
    if node.strategy == "merge":
        return _merge_keys(node.merge_key) if node.merge_key else ()
    return None


_MERGE_KEYS: Final[dict[str, tuple[str]]] = {}


def _merge_keys(merge_key: str) -> tuple[str]:
    """``(merge_key,)``, one tuple per key: a new one at each call was a tracked object the
    key-element memo kept per item (the collector walks those)."""
    keys = _MERGE_KEYS.get(merge_key)
    if keys is None:
        keys = _MERGE_KEYS[merge_key] = (merge_key,)
    return keys


_FIELD_ELEMENTS: Final[dict[str, str]] = {}


def _field_element(key: Any) -> str:
    """``f:<key>``, built once per field name (and interned: it ends up in many trees)."""
    element = _FIELD_ELEMENTS.get(key)
    if element is None:
        element = sys.intern(f"f:{key}")
        # Schema field names, plus map keys up to a bound; strings only (a key ``True`` would
        # otherwise find the element of ``1``).
        if len(_FIELD_ELEMENTS) < 16_384 and type(key) is str:
            _FIELD_ELEMENTS[key] = element
    return element


def _member(tree: Any) -> bool:
    """Whether a FieldsV1 node is a member itself: a leaf, or marked with ``.``."""
    return not tree or "." in tree


def _as_member(tree: Tree) -> Tree:
    """The node of a position that is a member, with the members below it in ``tree``."""
    if not tree or "." in tree:
        return tree
    return {".": {}, **tree}


def _sorted(children: Tree) -> Tree:
    return children if len(children) < 2 else {key: children[key] for key in sorted(children)}


# Memo of :func:`_position` at ``_MEMO_DEPTH``: (schema node, JSON text) -> node, and for objects
# whose members do not depend on their values (schema node, shape) -> node.  The trees are shared
# by the objects whose managedFields hold them and never mutated.
_MEMO_DEPTH: Final = 2
_UNMEMOISED: Final = -(1 << 30)  # the depth of positions walked without the memo
_POSITIONS: Final[dict[tuple[Node | None, int, int, int], Tree]] = {}
_POSITIONS_MAX: Final = 4096
_SHAPED: Final[dict[tuple[Node | None, tuple[Any, ...]], Tree]] = {}
_SHAPED_MAX: Final = 4096
# Schema node -> how many look-ups in a row of :func:`_position`'s text memo missed there.  A
# position whose texts have all been new lately (a pod's IP lists and container statuses: one
# IP, one container ID each) is walked without serialising and digesting its value for a look-up
# that misses, but for a probe now and then (memo.skips_look_up).
_TEXT_MISSES: Final[dict[Node | None, int]] = {}


def _position(value: Any, node: Node | None, depth: int = _UNMEMOISED) -> Tree:
    """The FieldsV1 node of a (non-root) position holding ``value``, as the member rule has it.

    The member rule: a leaf, an untyped or atomic value (and an empty object or list) is one
    member; a map-typed object is a member and so is each of its keys; an object's fields are
    members but not the object itself; each item of a keyed list is a member (``k:{...}``), each
    value of a set too (``v:<json>``), the list itself is not.  The node is ``{}`` for a member
    with nothing below it, ``{".": {}, ...}`` for a member with members below, else just the
    members below; children are in sorted order, as a sorted field set renders them.

    ``depth`` is the position's depth in its object (1: a top-level field).  Positions from
    ``_MEMO_DEPTH`` down are memoised by their value's JSON text (and schema node), the first
    one reached on each branch: the objects of one kind made by one component repeat them (a
    DaemonSet's pods have the same labels, owner, containers; a kubelet's statuses the same
    conditions), while the levels above hold each object's own values (name, node pin), where a
    memo would only miss.

    An object whose lists are each one member (atomic ones, empty ones) is looked up by its shape
    (:func:`_shape`: its keys, and which of its values are objects, with theirs) instead: its
    members are its keys whatever the values say, so a condition's are known whatever its time
    and message — the text of a kubelet's condition changed every second and missed the memo,
    and serialising and hashing it cost more than walking it — and a node pin's whatever node it
    names."""
    if depth >= _MEMO_DEPTH and value and isinstance(value, (dict, list)):
        shape = _shape(value, node) if isinstance(value, dict) else None
        if shape is not None:
            shaped_key = (node, shape)
            shaped = _SHAPED.get(shaped_key)
            if shaped is None:
                shaped = remember(_SHAPED, shaped_key, _walk(value, node, _UNMEMOISED), limit=_SHAPED_MAX)
            return shaped
        if skips_look_up(_TEXT_MISSES, node):
            return _walk(value, node, depth)  # (its children keep their own memo)
        try:
            key = (node, *_digest(orjson.dumps(value)))
        except TypeError:  # not JSON-shaped (a non-string key): walk it every time
            return _walk(value, node, _UNMEMOISED)
        tree = _POSITIONS.get(key)
        record_look_up(_TEXT_MISSES, node, tree is not None, limit=_POSITIONS_MAX)
        if tree is None:  # its children are looked up no more (their texts are parts of this one)
            tree = remember(_POSITIONS, key, _walk(value, node, _UNMEMOISED), limit=_POSITIONS_MAX)
        return tree
    return _walk(value, node, depth)


def _walk(value: Any, node: Node | None, depth: int) -> Tree:
    """:func:`_position` without the memo (its children with it)."""
    if isinstance(value, dict):
        if not value:
            return {}
        kind = node.kind if node is not None else None
        props = node.props if node is not None and kind == "object" else None
        values = node.values if node is not None and kind == "map" else None
        elements = _FIELD_ELEMENTS
        children: Tree = {}
        for key, sub in value.items():
            # node.child(key), inlined: this loop visits every field of every created object.
            child = props.get(key) if props is not None else values
            element = elements.get(key) or _field_element(key)
            if child is not None and isinstance(sub, (dict, list)) and child.kind not in ("scalar", "open"):
                children[element] = _position(sub, child, depth + 1)
            else:
                children[element] = {}  # a leaf, an untyped or atomic value (map values unless typed)
        children = _sorted(children)
        return {".": {}, **children} if kind == "map" else children
    if isinstance(value, list):
        keys = _list_keys(node)
        if keys is None or not value:
            return {}
        items = node.items if node is not None else None
        out: Tree = {}
        for item in value:
            if keys and isinstance(item, dict):
                element = _key_element(item, keys)
                below = _as_member(_position(item, items, depth + 1))
                out[element] = _union(out[element], below) if element in out else below
            else:
                out["v:" + go_json(item).decode()] = {}
        return _sorted(out)
    return {}


def _union(a: Tree, b: Tree) -> Tree:
    """The members of two nodes of one position (a keyed list naming one item twice)."""
    children = {key: below for key, below in a.items() if key != "."}
    for key, below in b.items():
        if key != ".":
            children[key] = _union(children[key], below) if key in children else below
    children = _sorted(children)
    if _member(a) or _member(b):
        return {".": {}, **children} if children else {}
    return children


def _root(children: Tree, skip: frozenset[str]) -> Tree:
    """The tracked part of an object's members (given as its sorted top-level nodes): without
    the system fields (``_STRIPPED``: their own membership goes, whatever is below them stays)
    and without the untracked top-level half (``skip``: spec or status)."""
    out: Tree = {}
    for element, sub in children.items():
        if element in skip:
            continue
        if element == "f:metadata":
            kept: Tree = {}
            for key, below in sub.items():
                if key != "." and (element, key) in _STRIPPED:
                    below = _strip_member(below)
                    if not below:
                        continue
                if key != ".":
                    kept[key] = below
            sub = kept
            if not sub:
                continue
        elif (element,) in _STRIPPED:
            sub = _strip_member(sub)
            if not sub:
                continue
        out[element] = sub
    return out


def _strip_member(tree: Tree) -> Tree:
    """A node without its own membership (the members below it stay)."""
    return {key: below for key, below in tree.items() if key != "."} if tree else {}


def _object_tree(obj: dict[Any, Any], node: Node | None, skip: frozenset[str]) -> Tree:
    """The tracked members of a whole object as a FieldsV1 tree (what it renders as)."""
    kind = node.kind if node is not None else None
    props = node.props if node is not None and kind == "object" else None
    values = node.values if node is not None and kind == "map" else None
    children: Tree = {}
    for key, sub in obj.items():
        element = _field_element(key)
        if element in skip:
            continue
        child = props.get(key) if props is not None else values
        if child is not None and isinstance(sub, (dict, list)) and child.kind not in ("scalar", "open"):
            children[element] = _position(sub, child, 1)
        else:
            children[element] = {}
    return _root(_sorted(children), skip)


def created_members(obj: dict[str, Any], *, api_version: str, kind: str) -> Tree:
    """The tracked members of a created object (or of a part of one), as the FieldsV1 tree its
    creator's entry holds."""
    return _object_tree(obj, schema.kind_node(api_version, kind), _untracked_top(api_version, kind, None))


def without_members(tree: Tree, path: tuple[str, ...]) -> Tree:
    """A root ``tree`` without the members at and below the field at ``path`` (field names)."""
    element = _field_element(path[0])
    below = tree.get(element)
    if below is None:
        return tree
    out = dict(tree)
    rest = without_members(below, path[1:]) if len(path) > 1 else {}
    if rest and (len(rest) > 1 or "." not in rest):
        out[element] = rest
    elif rest:  # only its own membership is left
        out[element] = {}
    else:
        del out[element]
    return out


def with_members(tree: Tree, members: Tree) -> Tree:
    """The (interned) root ``tree`` with ``members`` (the :func:`created_members` of a partial
    object whose fields ``tree`` does not hold) added: the entry of an object made of both."""
    out = dict(tree)
    for element, below in members.items():
        out[element] = _union(out[element], below) if element in out else below
    return _interned(_sorted(out))


def field_set(obj: dict[str, Any], *, api_version: str, kind: str, subresource: str | None = None) -> set[Path]:
    """The tracked field set of ``obj`` (system fields and the other half of status/spec removed)."""
    node = schema.kind_node(api_version, kind)
    return parse_fields_v1(_object_tree(obj, node, _untracked_top(api_version, kind, subresource)))


@functools.cache
def _untracked_top(api_version: str, kind: str, subresource: str | None) -> frozenset[str]:
    rt = registry.by_kind(api_version, kind)
    has_status = rt is not None and rt.subresource("status") is not None
    if subresource == "status":
        return frozenset({"f:spec"})
    return frozenset({"f:status"}) if has_status else frozenset()


# The digest of a tree's JSON text -> the tree.  Thousands of pods of one DaemonSet, and every
# node's lease, have the same managed fields, so one shared (never mutated) tree serves them all
# (measured: the trees were 40% of the memory of a converged cluster before interning).  The
# text holds the key order, so equal texts are equal trees; sets unique to one object (a pod's
# status with its own IP) come and go with the table's clears.
_TREES: Final[dict[tuple[int, int, int], Tree]] = {}
_TREES_MAX: Final = 4096


def _digest(text: bytes) -> tuple[int, int, int]:
    """A 96-bit digest of a JSON text (and its length) for the memo keys: the texts themselves
    would hold kilobytes per entry (20 MB for the tables of a 5,000-pod converge)."""
    return hash(text), zlib.crc32(text), len(text)


# (apiVersion, kind, the tree's top-level fields) -> how many times in a row an update's tree of
# that kind found no equal one to share.  A kubelet's status entry holds its pod's IPs: it was
# serialised and digested at every status write for a look-up that never hits, and it filled
# the table, whose clears then cost the trees that do repeat their sharing.
_UNIQUE_TREES: Final[dict[tuple[str, str, tuple[str, ...]], int]] = {}


def _interned(tree: Tree, which: tuple[str, str, tuple[str, ...]] | None = None) -> Tree:
    """The interned tree equal to ``tree`` (``tree`` itself, from now on, when it is the first).
    ``which``: the kind of an update's tree (:func:`_interned_update`), whose look-ups are
    skipped while that kind keeps missing."""
    if which is not None and skips_look_up(_UNIQUE_TREES, which):
        return tree
    key = _digest(orjson.dumps(tree))
    shared = _TREES.get(key)
    if which is not None:
        record_look_up(_UNIQUE_TREES, which, shared is not None, limit=_TREES_MAX)
    if shared is not None:
        return shared
    return remember(_TREES, key, tree, limit=_TREES_MAX)


def _interned_update(tree: Tree, api_version: str, kind: str) -> Tree:
    """:func:`_interned` for an update's entries, except for a kind of tree whose recent
    internings all missed: kept as it is, but for a probe now and then (memo.skips_look_up)."""
    return _interned(tree, (api_version, kind, tuple(tree)))


def fields_v1(paths: AbstractSet[Path]) -> dict[str, Any]:
    """Render a field set as a FieldsV1 tree (interned, see ``_TREES``)."""
    members = frozenset(paths)
    shared = _TREES_BY_SET.get(members)
    if shared is not None:
        return shared
    return remember(_TREES_BY_SET, members, _render_fields_v1(members), limit=_TREES_BY_SET_MAX)


# Field set -> its interned tree (server-side apply and the rarer ownership changes work on
# sets); a key holds the whole set, so the table is bounded like _TREES.
_TREES_BY_SET: Final[dict[frozenset[Path], dict[str, Any]]] = {}
_TREES_BY_SET_MAX: Final = 4096


def _render_fields_v1(members: frozenset[Path]) -> dict[str, Any]:
    """The FieldsV1 tree of a field set, interned by content."""
    return _interned(_tree_of(members))


def _tree_of(members: AbstractSet[Path]) -> Tree:
    """The FieldsV1 tree of a set of paths: sorted children, ``.`` on members with children."""
    root: Tree = {}
    for path in sorted(members):
        node = root
        for element in path:
            node = node.setdefault(element, {})
    _mark(root, (), members)
    return root


def _mark(tree: dict[str, Any], path: Path, members: AbstractSet[Path]) -> None:
    for key, child in tree.items():
        if key == ".":
            continue
        child_path = (*path, key)
        if child:
            _mark(child, child_path, members)
            if child_path in members:
                tree[key] = {".": {}, **child}


def parse_fields_v1(tree: dict[str, Any], path: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for key, child in (tree or {}).items():
        if key == ".":
            continue
        child_path = (*path, key)
        if not child or "." in child:
            out.add(child_path)
        if child:
            out |= parse_fields_v1(child, child_path)
    return out


def path_string(path: Path) -> str:
    """structured-merge-diff's ``Path.String()``: ``.spec.containers[name="x"].image``."""
    parts: list[str] = []
    for element in path:
        prefix, _, rest = element.partition(":")
        if prefix == "f":
            parts.append("." + rest)
        elif prefix == "k":
            keys = json.loads(rest)
            parts.append("[" + ",".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in keys.items()) + "]")
        elif prefix == "v":
            parts.append(f"[={rest}]")
        elif prefix == "i":
            parts.append(f"[{rest}]")
    return "".join(parts)


# --------------------------------------------------------------------------- navigation

_MISSING: Final = object()


def _step(value: Any, element: str) -> Any:
    prefix, _, rest = element.partition(":")
    if prefix == "f":
        return value.get(rest, _MISSING) if isinstance(value, dict) else _MISSING
    if not isinstance(value, list):
        return _MISSING
    if prefix == "k":
        keys = json.loads(rest)
        for item in value:
            if isinstance(item, dict) and all(item.get(k, KEY_DEFAULTS.get(k, _MISSING)) == v for k, v in keys.items()):
                return item
        return _MISSING
    if prefix == "v":
        wanted = json.loads(rest)
        return next((item for item in value if item == wanted), _MISSING)
    if prefix == "i":
        i = int(rest)
        return value[i] if 0 <= i < len(value) else _MISSING
    return _MISSING


def _get(obj: Any, path: Path) -> Any:
    value = obj
    for element in path:
        value = _step(value, element)
        if value is _MISSING:
            return _MISSING
    return value


def _remove(obj: Any, path: Path) -> None:
    """Delete the member at ``path`` from a private (mutable) object, if present."""
    parent = _get(obj, path[:-1])
    if parent is _MISSING:
        return
    element = path[-1]
    prefix, _, rest = element.partition(":")
    if prefix == "f" and isinstance(parent, dict):
        parent.pop(rest, None)
    elif isinstance(parent, list):
        target = _step(parent, element)
        if target is not _MISSING:
            for i, item in enumerate(parent):
                if item is target:
                    del parent[i]
                    break


# --------------------------------------------------------------------------- merge

def _merge(live: Any, applied: Any, node: Node | None) -> Any:
    if isinstance(live, dict) and isinstance(applied, dict):
        out = dict(live)
        for key, value in applied.items():
            child = node.child(key) if node is not None else None
            out[key] = _merge(live.get(key, _MISSING), value, child) if key in live else deep_copy(value)
        return out
    if isinstance(live, list) and isinstance(applied, list):
        keys = _list_keys(node)
        if keys is None:
            return deep_copy(applied)
        items = node.items if node is not None else None
        out_list = list(live)
        for item in applied:
            if keys and isinstance(item, dict):
                ident = _ident(item, keys)
                for i, existing in enumerate(out_list):
                    if isinstance(existing, dict) and _ident(existing, keys) == ident:
                        out_list[i] = _merge(existing, item, items)
                        break
                else:
                    out_list.append(deep_copy(item))
            elif item not in out_list:
                out_list.append(deep_copy(item))
        return out_list
    return deep_copy(applied)


# --------------------------------------------------------------------------- managedFields

def _timestamp(now: float | str | datetime) -> str:
    if isinstance(now, str):
        return now
    if isinstance(now, datetime):
        return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _entries(obj: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not obj:
        return []
    return [dict(e) for e in field_of(obj.get("metadata"), "managedFields") or []]


def _identity(entry: dict[str, Any]) -> tuple[str, str, str, str]:
    return (entry.get("manager", ""), entry.get("operation", ""), entry.get("apiVersion", ""),
            entry.get("subresource", ""))


def _describe(entry: dict[str, Any]) -> str:
    """``printManager`` from upstream's conflict.go (manager identity, no time)."""
    text = json.dumps(entry.get("manager", ""))
    if entry.get("subresource"):
        text = f"{text} with subresource {json.dumps(entry['subresource'])}"
    if entry.get("operation") == "Update":
        text = f"{text} using {entry.get('apiVersion', '')}"
    return text


def _make_entry(manager: str, operation: str, api_version: str, time: str, fields: Tree,
                subresource: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"manager": manager, "operation": operation, "apiVersion": api_version,
                             "time": time, "fieldsType": "FieldsV1", "fieldsV1": fields}
    if subresource:
        entry["subresource"] = subresource
    return entry


def _store_entries(obj: dict[str, Any], entries: list[tuple[dict[str, Any], set[Path]]]) -> None:
    rendered = []
    for entry, paths in entries:
        if not paths:
            continue
        entry = dict(entry)
        entry["fieldsV1"] = fields_v1(paths)
        rendered.append(entry)
    md = dict(obj.get("metadata") or {})
    if rendered:
        md["managedFields"] = rendered
    else:
        md.pop("managedFields", None)
    obj["metadata"] = md


def _conflict_error(conflicts: list[tuple[dict[str, Any], Path]]) -> ApiError:
    conflicts = sorted(conflicts, key=lambda c: (_describe(c[0]), path_string(c[1])))
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {_describe(e)}", "field": path_string(p)}
              for e, p in conflicts]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {_describe(entry)}: {path_string(path)}"
    else:
        by_manager: dict[str, list[str]] = {}
        for entry, path in conflicts:
            by_manager.setdefault(_describe(entry), []).append(path_string(path))
        lines: list[str] = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}:")
            lines.extend(f"- {p}" for p in by_manager[manager])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiError(status(409, "Conflict", message, {"causes": causes}))


def apply_server_side(live: dict[str, Any] | None, applied: dict[str, Any], *, manager: str, force: bool,
                      now: float | str | datetime, api_version: str, kind: str,
                      subresource: str | None = None) -> dict[str, Any]:
    """Merge an apply configuration into ``live`` (None: create) with field-ownership rules.

    Returns a new, private object; raises a 409 Conflict ApiError for conflicts unless ``force``.
    """
    if not isinstance(applied, dict):
        raise bad_request("error decoding YAML: apply configuration must be an object")
    if not manager:
        raise bad_request("PATCH request must contain a fieldManager for apply")
    node = schema.kind_node(api_version, kind)
    applied_clean = {k: v for k, v in applied.items() if k != "status" or subresource == "status"}
    meta = dict(applied_clean.get("metadata") or {})
    meta.pop("managedFields", None)
    applied_clean["metadata"] = meta
    applied_set = field_set(applied_clean, api_version=api_version, kind=kind, subresource=subresource)
    entries = [(e, parse_fields_v1(e.get("fieldsV1") or {})) for e in _entries(live)]
    me = (manager, "Apply", api_version, subresource or "")
    mine = next((paths for e, paths in entries if _identity(e) == me), set())

    base = live if live is not None else {}
    conflicts: list[tuple[dict[str, Any], Path]] = []
    for entry, paths in entries:
        if _identity(entry) == me:
            continue
        for path in applied_set & paths:
            live_value, new_value = _get(base, path), _get(applied_clean, path)
            if isinstance(live_value, dict) and isinstance(new_value, dict):
                continue
            if live_value is not _MISSING and live_value != new_value:
                conflicts.append((entry, path))
    if conflicts and not force:
        raise _conflict_error(conflicts)
    if force:
        taken = {p for _, p in conflicts}
        entries = [(e, paths - taken) for e, paths in entries]

    result = _merge(deep_copy(base) if live is not None else {}, applied_clean, node)
    owned_by_others: set[Path] = set()
    for entry, paths in entries:
        if _identity(entry) != me:
            owned_by_others |= paths
    for path in sorted(mine - applied_set - owned_by_others, key=len, reverse=True):
        _remove(result, path)

    time = _timestamp(now)
    new_entries: list[tuple[dict[str, Any], set[Path]]] = []
    replaced = False
    for entry, paths in entries:
        if _identity(entry) == me:
            new_entries.append((_make_entry(manager, "Apply", api_version, time, fields_v1(applied_set),
                                            subresource), applied_set))
            replaced = True
        else:
            new_entries.append((entry, paths))
    if not replaced:
        new_entries.append((_make_entry(manager, "Apply", api_version, time, fields_v1(applied_set), subresource),
                            applied_set))
    _store_entries(result, new_entries)
    return result


def record_managed_fields(old: dict[str, Any] | None, new: dict[str, Any], *, manager: str, operation: str = "Update",
                          now: float | str | datetime, api_version: str, kind: str,
                          subresource: str | None = None) -> dict[str, Any]:
    """``new`` with managedFields updated for a non-apply write by ``manager``.

    Fields added or changed relative to ``old`` become owned by (manager, operation, apiVersion,
    subresource) and are released by every other manager; fields that disappeared are released
    by everyone.  Managed fields sent in ``new`` by the client are ignored in favour of
    ``old``'s (as upstream does when the client did not change them deliberately).

    This runs on every write, so it works on FieldsV1 trees, the form the entries keep: the
    changed and removed members come out of a walk of only what differs between ``old`` and
    ``new`` (:func:`_diff`: subtrees that are the same object or compare equal are skipped at C
    speed), already as the tree a new entry stores, and the other entries are only compared
    with them; a created object's members are one walk of it (:func:`_object_tree`).  When an
    entry's ownership really changes (the kubelet's status write that adds the pod's IPs and drops
    a condition's reason), the entry is rebuilt by difference and union on the trees
    (:func:`_minus`, :func:`_root_union`), not through field sets: parsing three trees into sets
    and rendering the result was half of that write's managedFields time (measured on the
    second status write of 5,000 pods: 132 → 66 µs).
    """
    node = schema.kind_node(api_version, kind)
    skip = _untracked_top(api_version, kind, subresource)
    removed: Tree = {}
    if old:
        changed, removed = _diff_object(old, new, node, skip)
    else:
        changed = _created_tree(new, node, skip, (api_version, kind, subresource))
    result = dict(new)
    md = dict(result.get("metadata") or {})
    result["metadata"] = md
    if old and not changed and not removed:
        kept = field_of(old.get("metadata"), "managedFields")
        if kept:
            md["managedFields"] = kept
        else:
            md.pop("managedFields", None)
        return result
    me = (manager or "unknown", operation, api_version, subresource or "")
    time = _timestamp(now)
    rendered: list[dict[str, Any]] = []
    found = False
    # Entries are read, never changed: changed ones are rebuilt, so no copies are needed.
    if old:
        source = field_of(old.get("metadata"), "managedFields") or []
    else:
        source = [e for e in _entries(new) if e.get("operation") == "Apply"]
    for entry in source:
        tree = entry.get("fieldsV1") or {}
        if _identity(entry) == me:
            found = True
            stamp = time if changed else entry.get("time", time)
            if _covers(tree, changed) and not (removed and _meets(tree, removed)):
                # The common write: a manager changing values of fields it already owns (a
                # lease renewal, a status heartbeat): the field set is the same, only the time moves.
                rendered.append(entry if entry.get("time") == stamp else {**entry, "time": stamp})
                continue
            owned = _root_union(_minus(tree, removed), changed)
            if owned:
                rendered.append(_make_entry(me[0], operation, api_version, stamp,
                                            _interned_update(owned, api_version, kind), subresource))
        elif old and (_meets(tree, changed) or _meets(tree, removed)):
            kept = _minus(_minus(tree, changed), removed)
            if kept:
                rendered.append({**entry, "fieldsV1": _interned_update(kept, api_version, kind)})
        elif tree:
            rendered.append(entry)
    if not found and changed and not old and not rendered:
        # The usual create: its writer's entry alone (the tree is interned: :func:`_created_tree`)
        md["managedFields"] = created_entries(me[0], operation, api_version, time, changed, subresource)
        return result
    if not found and changed:
        rendered.append(_make_entry(me[0], operation, api_version, time,
                                    changed if not old else _interned_update(changed, api_version, kind),
                                    subresource))
    if rendered:
        md["managedFields"] = rendered
    else:
        md.pop("managedFields", None)
    return result


# (manager, operation, apiVersion, time, subresource, id of the interned tree) -> (that tree, kept
# alive so that its id stays its own, and the managedFields list of a created object with that
# entry alone).
_CREATED_ENTRIES: Final[dict[tuple[str, str, str, str, str, int], tuple[Tree, list[dict[str, Any]]]]] = {}
_CREATED_ENTRIES_MAX: Final = 1024


def created_entries(manager: str, operation: str, api_version: str, time: str, tree: Tree,
                    subresource: str | None) -> list[dict[str, Any]]:
    """The managedFields of a created object whose only entry is its writer's, over the interned
    ``tree``: the same list for every object of one shape created by one manager within one
    second (the timestamps' resolution).

    Why the same list: stored objects are immutable, and the store shares equal sub-trees of what
    it keeps (storage/canonical.py) — it shares these lists too, but a new list must first be
    serialised, with its entry's whole field tree, to be looked up, and again to confirm the hit:
    about a tenth of an Event's create, four Events a pod.  The list it has kept is known by
    identity.  Nothing changes a stored object's list: an update makes its own."""
    key = (manager, operation, api_version, time, subresource or "", id(tree))
    known = _CREATED_ENTRIES.get(key)
    if known is not None and known[0] is tree:
        return known[1]
    entries = [_make_entry(manager, operation, api_version, time, tree, subresource)]
    remember(_CREATED_ENTRIES, key, (tree, entries), limit=_CREATED_ENTRIES_MAX)
    return entries


# (api_version, kind, subresource, shape) -> the (interned) member tree of a created object.
_CREATED: Final[dict[tuple[Any, ...], Tree]] = {}
_CREATED_MAX: Final = 4096


def _created_tree(new: dict[Any, Any], node: Node | None, skip: frozenset[str],
                  memo_key: tuple[Any, ...]) -> Tree:
    """``_object_tree(new)``, interned, and memoised on ``new``'s shape when it has one
    (:func:`_shape`).

    Every Event, and every other object of one kind created by one component, has the same
    keys: its members are then known without walking it again, and without interning the tree
    again (a digest of its JSON text, a tenth of an Event's create)."""
    shape = _shape(new, node)
    if shape is None:
        return _interned(_object_tree(new, node, skip))
    key = (*memo_key, shape)
    tree = _CREATED.get(key)
    if tree is None:
        tree = remember(_CREATED, key, _interned(_object_tree(new, node, skip)), limit=_CREATED_MAX)
    return tree


def _shape(value: dict[Any, Any], node: Node | None) -> tuple[Any, ...] | None:
    """Everything the member walk reads of an object at ``node`` whose members do not depend on
    its values: its keys, and for each whether the value is an object (with that object's
    shape).  A list is one member, like a leaf, where the walk makes it one — empty, atomic, or
    at a position that is not a list's — so a DaemonSet pod's node pin (atomic lists of its
    node's name) has one shape whatever node it names.  None when a list's members depend on
    its items (a keyed list, a set) or a key is not a string (``True`` and ``1`` would be one
    key here but two members)."""
    kind = node.kind if node is not None else None
    props = node.props if node is not None and kind == "object" else None
    values = node.values if node is not None and kind == "map" else None
    parts: list[Any] = []
    for k, v in value.items():
        if type(k) is not str:
            return None
        if isinstance(v, dict):
            sub = _shape(v, props.get(k) if props is not None else values)
            if sub is None:
                return None
            parts.append((k, sub))
        elif isinstance(v, list):
            if v and _list_keys(props.get(k) if props is not None else values) is not None:
                return None
            parts.append(k)
        else:
            parts.append(k)
    return tuple(parts)


def _minus(tree: Tree, gone: Tree) -> Tree:
    """The members of the FieldsV1 node ``tree`` that are not in ``gone`` (a node of the same
    position), as a node: the set difference of the two field sets, done on the trees.

    Only the branches both trees have are rebuilt; the rest of ``tree`` is shared, in its own
    order.  A node left without members is dropped, and one left with only its own membership
    becomes a leaf (``{}``), as :func:`fields_v1` renders such sets."""
    out: Tree | None = None
    for element, below in gone.items():
        if element == ".":
            continue
        node = tree.get(element)
        if node is None:
            continue
        if out is None:
            out = dict(tree)
        own = _member(node) and not _member(below)
        rest = _minus(node, below) if node and len(below) > ("." in below) else node
        if len(rest) > ("." in rest):  # members below are left
            # (a node that keeps its own membership has its "." still: it had one, and _minus
            # never removes it)
            out[element] = _strip_member(rest) if "." in rest and not own else rest
        elif own:
            out[element] = {}
        else:
            del out[element]
    return tree if out is None else out


def _root_union(a: Tree, b: Tree) -> Tree:
    """The members of two root trees (an object itself is never a member: no ``.`` here)."""
    if not a:
        return b
    if not b:
        return a
    return _union(a, b)  # neither has ".": the union's node is its children


def _covers(tree: Any, members: Tree) -> bool:
    """Whether every member in ``members`` is a member of the FieldsV1 ``tree`` (same position)."""
    for element, below in members.items():
        if element == ".":
            continue
        node = tree.get(element) if isinstance(tree, dict) else None
        if node is None:
            return False
        if _member(below) and not _member(node):
            return False
        if len(below) > ("." in below) and not _covers(node, below):
            return False
    return True


def _meets(tree: Any, members: Tree) -> bool:
    """Whether some member in ``members`` is a member of the FieldsV1 ``tree`` (same position)."""
    for element, below in members.items():
        if element == ".":
            continue
        node = tree.get(element) if isinstance(tree, dict) else None
        if node is None:
            continue
        if _member(below) and _member(node):
            return True
        if len(below) > ("." in below) and _meets(node, below):
            return True
    return False


def _diff_object(old: dict[str, Any], new: dict[str, Any], node: Node | None,
                 skip: frozenset[str]) -> tuple[Tree, Tree]:
    """The tracked members ``new`` changed or added, and those it removed, relative to ``old``."""
    changed, removed = _diff(old, new, node, 0, skip)
    return _root(changed or {}, skip), _root(removed or {}, skip)


_NO_SKIP: Final[frozenset[str]] = frozenset()


def _diff(old: Any, new: Any, node: Node | None, depth: int,
          skip: frozenset[str] = _NO_SKIP) -> tuple[Tree | None, Tree | None]:
    """The changed and the removed members at a position both versions have, as its nodes
    (None: none), walking only where they differ.

    Mirrors the member rule (:func:`_position`): where both sides have the same shape (both
    non-empty objects, or both non-empty keyed lists) the walk descends; anywhere else the
    position is compared member by member (:func:`_diff_generic`).  ``depth``: the position's
    (0: the object); ``skip``: top-level fields not to look at (the object's untracked half)."""
    if isinstance(old, dict) and isinstance(new, dict) and old and new:
        changed: Tree = {}
        removed: Tree = {}
        for key, sub in new.items():
            before = old.get(key, _MISSING)
            if before is sub or before == sub:
                continue  # most keys of a write: compared at C speed, nothing built
            element = _field_element(key)
            if element in skip:
                continue
            child = node.child(key) if node is not None else None
            typed = child is not None and child.kind != "scalar" and child.kind != "open"
            sub_descends = typed and isinstance(sub, (dict, list))
            if before is _MISSING:
                changed[element] = _position(sub, child, depth + 1) if sub_descends else {}
                continue
            before_descends = typed and isinstance(before, (dict, list))
            if sub_descends and before_descends and type(sub) is type(before):
                below_changed, below_removed = _diff(before, sub, child, depth + 1)
            elif sub_descends or before_descends:
                below_changed, below_removed = _diff_generic(before, sub, child)
            else:
                below_changed, below_removed = {}, None  # two different leaves
            if below_changed is not None:
                changed[element] = below_changed
            if below_removed is not None:
                removed[element] = below_removed
        for key, before in old.items():
            if key not in new:
                element = _field_element(key)
                if element in skip:
                    continue
                child = node.child(key) if node is not None else None
                removed[element] = _position(before, child, depth + 1) if _descends(before, child) else {}
        return (_sorted(changed) or None), (_sorted(removed) or None)
    if isinstance(old, list) and isinstance(new, list) and old and new:
        keys = _list_keys(node)
        if keys and all(isinstance(i, dict) for i in old) and all(isinstance(i, dict) for i in new):
            items = node.items if node is not None else None
            old_items = {_key_element(i, keys): i for i in old}
            new_items = {_key_element(i, keys): i for i in new}
            if len(old_items) == len(old) and len(new_items) == len(new):  # no duplicate keys
                changed = {}
                removed = {}
                for element, item in new_items.items():
                    if element in old_items:
                        before = old_items[element]
                        if before is not item and before != item:
                            below_changed, below_removed = _diff(before, item, items, depth + 1)
                            if below_changed is not None:
                                changed[element] = below_changed
                            if below_removed is not None:
                                removed[element] = below_removed
                    else:
                        changed[element] = _as_member(_position(item, items, depth + 1))
                for element, item in old_items.items():
                    if element not in new_items:
                        removed[element] = _as_member(_position(item, items, depth + 1))
                return (_sorted(changed) or None), (_sorted(removed) or None)
    return _diff_generic(old, new, node)


def _diff_generic(old: Any, new: Any, node: Node | None) -> tuple[Tree | None, Tree | None]:
    """The plain definition, for one position: members of ``new`` that are new or whose leaf
    value changed, and members of ``old`` that are gone (paths relative to the position)."""
    old_paths = _relative_members(old, node)
    new_paths = _relative_members(new, node)
    changed = {p for p in new_paths if p not in old_paths or _changed(_get(old, p), _get(new, p))}
    return _node_of(changed), _node_of(old_paths - new_paths)


def _relative_members(value: Any, node: Node | None) -> set[Path]:
    """The members at and below a position, as paths relative to it (``()``: the position)."""
    tree = _position(value, node)
    paths = parse_fields_v1(tree)
    if _member(tree):
        paths.add(())
    return paths


def _node_of(paths: set[Path]) -> Tree | None:
    """The node of a position holding ``paths`` (relative; None when there are none)."""
    if not paths:
        return None
    below = _tree_of(paths - {()})
    if () in paths:
        return {".": {}, **below} if below else {}
    return below


def _descends(value: Any, child: Node | None) -> bool:
    """Whether the member walk goes into ``value`` (else it is one member)."""
    if isinstance(value, (dict, list)) and child is not None and child.kind not in ("scalar", "open"):
        return True
    return False


def _changed(before: Any, after: Any) -> bool:
    if isinstance(before, dict) and isinstance(after, dict):
        return False  # containers: their children carry the change
    return before != after
