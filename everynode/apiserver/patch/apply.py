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
import hashlib
import json
import sys
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime
from typing import Any

import orjson

from everynode.api import registry, schema
from everynode.api.errors import ApiError, bad_request, status
from everynode.api.gojson import go_json
from everynode.api.meta import deep_copy
from everynode.api.schema import Node
from everynode.memo import remember

Path = tuple[str, ...]

_STRIPPED: frozenset[Path] = frozenset({
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
KEY_DEFAULTS: dict[str, Any] = {"protocol": "TCP"}


def _ident(item: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in keys:
        if k in item:
            out[k] = item[k]
        elif k in KEY_DEFAULTS:
            out[k] = KEY_DEFAULTS[k]
    return out


_KEY_ELEMENTS: dict[tuple[Any, ...], str] = {}  # (keys, (type, value) per key) -> "k:{...}"
_KEY_ELEMENTS_MAX = 16_384


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
        memo_key: tuple[Any, ...] = (keys,) if value is _MISSING else (keys, (key, value.__class__, value))
    else:
        memo_key = (keys, *[(k, v.__class__, v) for k, v in _ident(item, keys).items()])
    try:
        element = _KEY_ELEMENTS.get(memo_key)
    except TypeError:  # an unhashable key value (a list or object): render it every time
        return "k:" + go_json(_ident(item, keys)).decode()
    if element is None:
        element = remember(_KEY_ELEMENTS, memo_key, "k:" + go_json(_ident(item, keys)).decode(),
                           limit=_KEY_ELEMENTS_MAX)
    return element


def _list_keys(node: Node | None) -> tuple[str, ...] | None:
    """Keys of an associative list, () for a set, None for an atomic list."""
    if node is None or node.kind != "array":
        return None
    if node.list_type == "map" and node.list_map_keys:
        return node.list_map_keys
    if node.list_type == "set":
        return ()
    if node.strategy == "merge":
        return (node.merge_key,) if node.merge_key else ()
    return None


_FIELD_ELEMENTS: dict[str, str] = {}


def _field_element(key: str) -> str:
    """``f:<key>``, built once per field name (and interned: it ends up in many trees)."""
    element = _FIELD_ELEMENTS.get(key)
    if element is None:
        element = sys.intern(f"f:{key}")
        if len(_FIELD_ELEMENTS) < 16_384:  # schema field names, plus map keys up to a bound
            _FIELD_ELEMENTS[key] = element
    return element


def _collect(value: Any, node: Node | None, path: Path, out: set[Path]) -> None:
    if isinstance(value, dict):
        if not value:
            out.add(path)
            return
        if node is None:
            props, values = None, None
        else:
            kind = node.kind
            props = node.props if kind == "object" else None
            values = node.values if kind == "map" else None
            if kind == "map" and path:
                out.add(path)
        elements = _FIELD_ELEMENTS
        for key, sub in value.items():
            # node.child(key), inlined: this loop visits every field of every created object.
            child = props.get(key) if props is not None else values
            sub_path = (*path, elements.get(key) or _field_element(key))
            if child is not None and isinstance(sub, (dict, list)) and child.kind not in ("scalar", "open"):
                _collect(sub, child, sub_path, out)
            else:
                out.add(sub_path)  # a leaf, an untyped or atomic value (map values unless typed)
        return
    if isinstance(value, list):
        keys = _list_keys(node)
        items = node.items if node is not None else None
        if keys is None or not value:
            out.add(path)
            return
        for item in value:
            if keys and isinstance(item, dict):
                item_path = (*path, _key_element(item, keys))
                out.add(item_path)
                _collect(item, items, item_path, out)
            else:
                out.add((*path, "v:" + go_json(item).decode()))
        return
    out.add(path)


def field_set(obj: dict[str, Any], *, api_version: str, kind: str, subresource: str | None = None) -> set[Path]:
    """The tracked field set of ``obj`` (system fields and the other half of status/spec removed)."""
    node = schema.kind_node(api_version, kind)
    out: set[Path] = set()
    _collect(obj, node, (), out)
    return _tracked(out, _untracked_top(api_version, kind, subresource))


def _tracked(paths: set[Path], skip: frozenset[str]) -> set[Path]:
    """Paths without system fields and without the untracked top-level half (spec/status)."""
    return {p for p in paths if p not in _STRIPPED and (not p or p[0] not in skip)}


@functools.cache
def _untracked_top(api_version: str, kind: str, subresource: str | None) -> frozenset[str]:
    rt = registry.by_kind(api_version, kind)
    has_status = rt is not None and rt.subresource("status") is not None
    if subresource == "status":
        return frozenset({"f:spec"})
    return frozenset({"f:status"}) if has_status else frozenset()


_TREES: dict[bytes, dict[str, Any]] = {}  # 128-bit digest of the tree -> the tree
_TREES_MAX = 50_000


def fields_v1(paths: AbstractSet[Path]) -> dict[str, Any]:
    """Render a field set as a FieldsV1 tree.

    Trees are interned: thousands of pods of one DaemonSet, and every node's lease, have the
    same managed fields, so one shared (never mutated) tree serves them all.  Measured: the
    trees were 40% of the memory of a converged cluster before interning."""
    members = frozenset(paths)
    shared = _TREES_BY_SET.get(members)
    if shared is not None:
        return shared
    return remember(_TREES_BY_SET, members, _render_fields_v1(members), limit=_TREES_BY_SET_MAX)


# Field set -> its interned tree.  Bounded more tightly than _TREES: a key holds the whole set
# (kilobytes for a pod), and sets unique to one object (a pod's status with its own IP) would
# otherwise pile up; the common shapes are re-added within a few writes after a clear.
_TREES_BY_SET: dict[frozenset[Path], dict[str, Any]] = {}
_TREES_BY_SET_MAX = 4096


def _render_fields_v1(members: frozenset[Path]) -> dict[str, Any]:
    """The FieldsV1 tree of a field set, interned by content (:func:`fields_v1` memoises this
    per field set: the set's hash is far cheaper than sorting, building and digesting the tree,
    and every Event, lease and pod of one shape has the same set)."""
    paths = members
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for element in path:
            node = node.setdefault(sys.intern(element), {})
    _mark(root, (), members)
    key = hashlib.blake2b(orjson.dumps(root, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()
    shared = _TREES.get(key)
    if shared is not None:
        return shared
    return remember(_TREES, key, root, limit=_TREES_MAX)


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

_MISSING = object()


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
    return [dict(e) for e in (obj.get("metadata") or {}).get("managedFields") or []]


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


def _make_entry(manager: str, operation: str, api_version: str, time: str, paths: AbstractSet[Path],
                subresource: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"manager": manager, "operation": operation, "apiVersion": api_version,
                             "time": time, "fieldsType": "FieldsV1", "fieldsV1": fields_v1(paths)}
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
            new_entries.append((_make_entry(manager, "Apply", api_version, time, applied_set, subresource),
                                applied_set))
            replaced = True
        else:
            new_entries.append((entry, paths))
    if not replaced:
        new_entries.append((_make_entry(manager, "Apply", api_version, time, applied_set, subresource), applied_set))
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

    This runs on every write, so it diffs ``old`` against ``new`` (:func:`_diff`: subtrees that
    are the same object or compare equal are skipped at C speed) instead of building both
    objects' whole field sets, and re-renders only the entries whose fields changed.
    """
    node = schema.kind_node(api_version, kind)
    skip = _untracked_top(api_version, kind, subresource)
    changed: AbstractSet[Path] = set()
    removed: set[Path] = set()
    if old:
        diffed: set[Path] = set()
        _diff(old, new, node, (), diffed, removed)
        changed = diffed
        changed = _tracked(changed, skip)
    else:
        changed = _created_fields(new, node, skip, (api_version, kind, subresource))
    if removed:
        removed = _tracked(removed, skip)
    result = dict(new)
    md = dict(result.get("metadata") or {})
    result["metadata"] = md
    if old and not changed and not removed:
        kept = (old.get("metadata") or {}).get("managedFields")
        if kept:
            md["managedFields"] = kept
        else:
            md.pop("managedFields", None)
        return result
    me = (manager or "unknown", operation, api_version, subresource or "")
    time = _timestamp(now)
    touched = changed | removed
    rendered: list[dict[str, Any]] = []
    found = False
    # Entries are read, never changed: changed ones are rebuilt, so no copies are needed.
    if old:
        source = (old.get("metadata") or {}).get("managedFields") or []
    else:
        source = [e for e in _entries(new) if e.get("operation") == "Apply"]
    for entry in source:
        tree = entry.get("fieldsV1") or {}
        if _identity(entry) == me:
            found = True
            stamp = time if changed else entry.get("time", time)
            if _tree_has_all(tree, changed) and not (removed and _tree_has_any(tree, removed)):
                # The common write: a manager changing values of fields it already owns (a
                # lease renewal, a status heartbeat): the field set is the same, only the time moves.
                rendered.append(entry if entry.get("time") == stamp else {**entry, "time": stamp})
                continue
            paths = (parse_fields_v1(tree) - removed) | changed
            if paths:
                rendered.append(_make_entry(me[0], operation, api_version, stamp, paths, subresource))
        elif old and _tree_has_any(tree, touched):
            paths = parse_fields_v1(tree) - touched
            if paths:
                rendered.append({**entry, "fieldsV1": fields_v1(paths)})
        elif tree:
            rendered.append(entry)
    if not found and changed:
        rendered.append(_make_entry(me[0], operation, api_version, time, changed, subresource))
    if rendered:
        md["managedFields"] = rendered
    else:
        md.pop("managedFields", None)
    return result


# (api_version, kind, subresource, shape) -> the tracked field set of a created object.
_CREATED_FIELDS: dict[tuple[Any, ...], frozenset[Path]] = {}
_CREATED_FIELDS_MAX = 4096


def _created_fields(new: dict[str, Any], node: Node | None, skip: frozenset[str],
                    memo_key: tuple[Any, ...]) -> set[Path] | frozenset[Path]:
    """``_tracked(_collect(new))``, memoised on ``new``'s shape when it has one (:func:`_shape`).

    Every Event, and every other object of one kind created by one component, has the same
    keys: the field set is then known without building its paths again."""
    shape = _shape(new)
    key = None if shape is None else (*memo_key, shape)
    known = None if key is None else _CREATED_FIELDS.get(key)
    if known is not None:
        return known
    out: set[Path] = set()
    _collect(new, node, (), out)
    fields = _tracked(out, skip)
    if key is not None:
        return remember(_CREATED_FIELDS, key, frozenset(fields), limit=_CREATED_FIELDS_MAX)
    return fields


def _shape(value: dict[str, Any]) -> tuple[Any, ...] | None:
    """Everything :func:`_collect` reads of a list-free object: its keys, and for each whether
    the value is an object (with that object's shape).  None when there is a list (the members
    of keyed lists and sets depend on values) or a key that is not a string (``True`` and ``1``
    would be one key here but two members)."""
    parts: list[Any] = []
    for k, v in value.items():
        if type(k) is not str:
            return None
        if isinstance(v, dict):
            sub = _shape(v)
            if sub is None:
                return None
            parts.append((k, sub))
        elif isinstance(v, list):
            return None
        else:
            parts.append(k)
    return tuple(parts)


def _tree_has_all(tree: dict[str, Any], paths: AbstractSet[Path]) -> bool:
    for path in paths:
        if not _tree_has(tree, path):
            return False
    return True


def _tree_has_any(tree: dict[str, Any], paths: AbstractSet[Path]) -> bool:
    """``any(_tree_has(tree, p) for p in paths)``, without walking the paths whose first element
    the tree does not have (a status write touches ~50 ``f:status`` paths, and the entry of the
    manager that created the object usually has no ``f:status`` at all)."""
    if not isinstance(tree, dict):
        return any(_tree_has(tree, p) for p in paths)
    for path in paths:
        if path and path[0] not in tree:
            continue  # _tree_has would stop at the first element
        if _tree_has(tree, path):
            return True
    return False


def _tree_has(tree: dict[str, Any], path: Path) -> bool:
    """Whether ``path`` is a member of a FieldsV1 tree (a leaf, or a node marked with ``.``)."""
    node: Any = tree
    for element in path:
        node = node.get(element) if isinstance(node, dict) else None
        if node is None:
            return False
    return not node or "." in node


def _members(value: Any, node: Node | None, path: Path) -> set[Path]:
    out: set[Path] = set()
    _collect(value, node, path, out)
    return out


def _diff_generic(old: Any, new: Any, node: Node | None, path: Path, changed: set[Path], removed: set[Path]) -> None:
    """The plain definition, for one subtree: members of ``new`` that are new or whose leaf value
    changed, and members of ``old`` that are gone."""
    old_paths = _members(old, node, path)
    new_paths = _members(new, node, path)
    depth = len(path)
    for p in new_paths:
        if p not in old_paths or _changed(_get(old, p[depth:]), _get(new, p[depth:])):
            changed.add(p)
    removed |= old_paths - new_paths


def _diff(old: Any, new: Any, node: Node | None, path: Path, changed: set[Path], removed: set[Path]) -> None:
    """Changed and removed members between two versions, walking only where they differ.

    Mirrors :func:`_collect`'s notion of members: where both sides have the same shape (both
    non-empty dicts, or both non-empty keyed lists) the walk descends; anywhere else the subtree
    is compared by :func:`_diff_generic`."""
    if isinstance(old, dict) and isinstance(new, dict) and old and new:
        for key, sub in new.items():
            before = old.get(key, _MISSING)
            if before is sub or before == sub:
                continue  # most keys of a write: compared at C speed, no paths built
            child = node.child(key) if node is not None else None
            sub_path = (*path, _field_element(key))
            # _descends(value, child, node), for both sides at once
            typed = child is not None and child.kind != "scalar" and child.kind != "open"
            sub_descends = typed and isinstance(sub, (dict, list))
            if before is _MISSING:
                _collect(sub, child, sub_path, changed) if sub_descends else changed.add(sub_path)
                continue
            before_descends = typed and isinstance(before, (dict, list))
            if sub_descends and before_descends and type(sub) is type(before):
                _diff(before, sub, child, sub_path, changed, removed)
            elif sub_descends or before_descends:
                _diff_generic(before, sub, child, sub_path, changed, removed)
            else:
                changed.add(sub_path)  # two different leaves
        for key, before in old.items():
            if key not in new:
                child = node.child(key) if node is not None else None
                sub_path = (*path, _field_element(key))
                _collect(before, child, sub_path, removed) if _descends(before, child, node) else removed.add(sub_path)
        return
    if isinstance(old, list) and isinstance(new, list) and old and new:
        keys = _list_keys(node)
        if keys and all(isinstance(i, dict) for i in old) and all(isinstance(i, dict) for i in new):
            items = node.items if node is not None else None
            old_items = {_key_element(i, keys): i for i in old}
            new_items = {_key_element(i, keys): i for i in new}
            if len(old_items) == len(old) and len(new_items) == len(new):  # no duplicate keys
                for k, item in new_items.items():
                    item_path = (*path, k)
                    if k in old_items:
                        before = old_items[k]
                        if before is not item and before != item:
                            _diff(before, item, items, item_path, changed, removed)
                    else:
                        changed.add(item_path)
                        _collect(item, items, item_path, changed)
                for k, item in old_items.items():
                    if k not in new_items:
                        item_path = (*path, k)
                        removed.add(item_path)
                        _collect(item, items, item_path, removed)
                return
    _diff_generic(old, new, node, path, changed, removed)


def _descends(value: Any, child: Node | None, parent: Node | None) -> bool:
    """Whether :func:`_collect` walks into ``value`` (else it is one member)."""
    if isinstance(value, (dict, list)) and child is not None and child.kind not in ("scalar", "open"):
        return True
    return False


def _changed(before: Any, after: Any) -> bool:
    if isinstance(before, dict) and isinstance(after, dict):
        return False  # containers: their children carry the change
    return before != after
