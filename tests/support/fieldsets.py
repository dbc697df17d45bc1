"""The managedFields member rule written out plainly, as the reference the write path's tree
walk is checked against: every member of an object as a path, then the system fields and the
untracked top-level half left out (what structured-merge-diff's field sets hold)."""

from __future__ import annotations

from typing import Any

from everynode.api import schema
from everynode.api.gojson import go_json
from everynode.api.schema import Node
from everynode.apiserver.patch.apply import _STRIPPED, _key_element, _list_keys, _untracked_top

Path = tuple[str, ...]


def collect(value: Any, node: Node | None, path: Path, out: set[Path]) -> None:
    """Every member at and below ``path`` (which holds ``value``, typed by ``node``)."""
    if isinstance(value, dict):
        if not value:
            out.add(path)
            return
        kind = node.kind if node is not None else None
        if kind == "map" and path:
            out.add(path)
        for key, sub in value.items():
            child = node.child(key) if node is not None else None
            sub_path = (*path, f"f:{key}")
            if child is not None and isinstance(sub, (dict, list)) and child.kind not in ("scalar", "open"):
                collect(sub, child, sub_path, out)
            else:
                out.add(sub_path)
        return
    if isinstance(value, list):
        keys = _list_keys(node)
        if keys is None or not value:
            out.add(path)
            return
        items = node.items if node is not None else None
        for item in value:
            if keys and isinstance(item, dict):
                item_path = (*path, _key_element(item, keys))
                out.add(item_path)
                collect(item, items, item_path, out)
            else:
                out.add((*path, "v:" + go_json(item).decode()))
        return
    out.add(path)


def tracked(paths: set[Path], skip: frozenset[str]) -> set[Path]:
    return {p for p in paths if p not in _STRIPPED and (not p or p[0] not in skip)}


def field_set(obj: dict[str, Any], *, api_version: str, kind: str, subresource: str | None = None) -> set[Path]:
    """The tracked field set of ``obj``, computed plainly."""
    out: set[Path] = set()
    collect(obj, schema.kind_node(api_version, kind), (), out)
    return tracked(out, _untracked_top(api_version, kind, subresource))


def tree_has(tree: Any, path: Path) -> bool:
    """Whether ``path`` is a member of a FieldsV1 tree (a leaf, or a node marked with ``.``)."""
    node: Any = tree
    for element in path:
        node = node.get(element) if isinstance(node, dict) else None
        if node is None:
            return False
    return not node or "." in node
