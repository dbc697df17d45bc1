"""Strategic merge patch, the ``application/strategic-merge-patch+json`` PATCH type.

Why our own: no maintained Python library implements SMP (python-stack.md §5), yet kubectl uses
it for client-side ``apply``, ``taint``, ``cordon``/``drain``, ``rollout restart|undo`` and the
default ``kubectl patch`` (kubectl-contract.md gotcha 12).  The semantics follow
``staging/src/k8s.io/apimachinery/pkg/util/strategicpatch/patch.go`` (``StrategicMergeMapPatch``
with ``MergeParallelList`` and ``IgnoreUnmatchedNulls``, as kube-apiserver calls it); the patch
metadata (strategy, merge key) comes from the official schemas via :mod:`everynode.api.schema`
instead of Go struct tags.

Rules reproduced:
* maps merge recursively; ``null`` deletes a key; ``$patch: replace`` replaces a map,
  ``$patch: delete`` empties it;
* lists with strategy ``merge`` and a merge key merge item by item (``containers``/``volumes``/
  ``env`` by ``name``, ``volumeMounts`` by ``mountPath``, ``ports`` by ``containerPort``);
  items may carry ``$patch: delete`` (remove by key) or ``$patch: replace`` (the patch list
  replaces the live one);
* lists of primitives with strategy ``merge`` are merged as sets;
  ``$deleteFromPrimitiveList/<field>`` removes values from them;
* every other list (no strategy, or ``atomic``, e.g. tolerations and node taints) is replaced;
* ``$setElementOrder/<field>`` fixes the final order (patch order first, live-only items
  interleaved by their live position, as upstream's ``normalizeElementOrder``);
* ``$retainKeys`` drops the live keys it does not list (``volumes`` use ``merge,retainKeys``).
Values taken from the patch for fields absent in the live object are cleaned of directives and
nulls (upstream ``removeDirectives`` / ``discardNullValuesFromPatch``).

Copy-on-write: only maps and lists on the path of a change are rebuilt; untouched subtrees are
shared with the live object (objects are immutable by convention; ``deep_copy`` before
mutating).  Nothing of the patch is kept: what the result takes from it is new maps and lists,
so the in-process client hands a patch over without copying it (apiserver/service.py).
Bad patches raise :class:`ApiError` with upstream's codes (``interpretStrategicMergePatchError``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Final

from everynode.api import schema
from everynode.api.errors import ApiError, bad_request, internal, status
from everynode.api.schema import Node

DIRECTIVE: Final = "$patch"
RETAIN_KEYS: Final = "$retainKeys"
SET_ELEMENT_ORDER: Final = "$setElementOrder"
DELETE_FROM_PRIMITIVE_LIST: Final = "$deleteFromPrimitiveList"

# mergepatch error texts (staging/src/k8s.io/apimachinery/pkg/util/mergepatch/errors.go)
ERR_BAD_JSON_DOC: Final = "invalid JSON document"
ERR_PRIMITIVE_LIST: Final = "invalid patch format of primitive list"
ERR_RETAIN_KEYS: Final = "invalid patch format of retainKeys"
ERR_SET_ELEMENT_ORDER: Final = "invalid patch format of setElementOrder list"
ERR_NOT_MATCH_RETAIN_KEYS: Final = "patch content doesn't match retainKeys list"
ERR_NO_LIST_OF_LISTS: Final = "lists of lists are not supported"


def _unprocessable(message: str) -> ApiError:
    # errors.NewGenericServerResponse(422, ...): fixed message, empty details.
    return ApiError(status(422, "Invalid", "the server rejected our request due to an error in our request", {}))


def _go_value(value: Any) -> str:
    """A rough ``%v`` of a Go value, for the few internal-error messages that embed one."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_value(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_value(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "slice"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "nil"
    return "number"


def _element_kind(*lists: list[Any]) -> str | None:
    """Upstream ``sliceElementType``: all elements share one type; no lists of lists."""
    kind: str | None = None
    for items in lists:
        for item in items:
            k = _kind(item)
            if kind is None:
                if k == "slice":
                    raise _unprocessable(ERR_NO_LIST_OF_LISTS)
                kind = k
            elif k != kind:
                raise internal(f"list element types are not identical: {_go_value(list(lists))}")
    return kind


def _scalar_key(value: Any) -> tuple[bool, Any]:
    # Keeps True and 1 apart, which Python's == would conflate.
    return (isinstance(value, bool), value)


def _key_of(item: Any, merge_key: str) -> Any:
    if merge_key:
        return _scalar_key(item.get(merge_key)) if isinstance(item, dict) else None
    return _scalar_key(item) if not isinstance(item, (dict, list)) else None


def _indexer(order: list[Any], merge_key: str) -> Callable[[Any], int]:
    """``item -> position of its key's first occurrence in order`` (-1: absent).

    A dictionary built once per list instead of a scan per item: upstream's ``index`` scan made
    ordering quadratic, which a status with a few hundred keyed items (podIPs, images) felt.
    Keys that cannot be hashed (an object as merge-key value) fall back to the scan."""
    positions: dict[Any, int] = {}
    try:
        for i, candidate in enumerate(order):
            positions.setdefault(_key_of(candidate, merge_key), i)
    except TypeError:
        return lambda item: _index(order, item, merge_key)

    def index(item: Any) -> int:
        try:
            return positions.get(_key_of(item, merge_key), -1)
        except TypeError:
            return _index(order, item, merge_key)

    return index


def _index(order: list[Any], item: Any, merge_key: str) -> int:
    key = _key_of(item, merge_key)
    for i, candidate in enumerate(order):
        if _key_of(candidate, merge_key) == key:
            return i
    return -1


def _require_merge_key(items: list[Any], merge_key: str) -> None:
    for item in items:
        if not isinstance(item, dict):
            raise internal(f"expected map, but got {_go_value(item)}")
        if merge_key not in item:
            raise internal(f"map: {_go_value(item)} does not contain declared merge key: {merge_key}")


def _normalize_slice_order(to_sort: list[Any], order: list[Any], merge_key: str, is_map: bool) -> list[Any]:
    to_delete: list[Any] = []
    if is_map:
        _require_merge_key(to_sort, merge_key)
        _require_merge_key(order, merge_key)
        keep: list[Any] = []
        for item in to_sort:
            (to_delete if item.get(DIRECTIVE) == "delete" else keep).append(item)
        to_sort = keep
    if not to_sort:
        return to_delete
    index = _indexer(order, merge_key)
    indexed = [(index(item), pos, item) for pos, item in enumerate(to_sort)]
    known = sorted((t for t in indexed if t[0] >= 0), key=lambda t: (t[0], t[1]))
    unknown = [t for t in indexed if t[0] < 0]
    return [t[2] for t in known] + [t[2] for t in unknown] + to_delete


def _merge_sorted(left: list[Any], right: list[Any], server_order: list[Any], merge_key: str) -> list[Any]:
    """Upstream ``mergeSortedSlice``: interleave server-only items (left) into patch items."""
    if not left or not right:
        return left + right  # nothing to interleave
    index = _indexer(server_order, merge_key)
    return _interleave(left, right, [index(item) for item in left], [index(item) for item in right])


def _interleave(left: list[Any], right: list[Any], left_pos: list[int], right_pos: list[int]) -> list[Any]:
    """``mergeSortedSlice``'s loop, given each item's position in the server order (-1: absent):
    a left item goes first when both positions are known and its own is smaller."""
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        elif left_pos[i] >= 0 and right_pos[j] >= 0 and left_pos[i] < right_pos[j]:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out


def _normalize_element_order(patch_items: list[Any], server_only: list[Any], patch_order: list[Any],
                             server_order: list[Any], merge_key: str, is_map: bool) -> list[Any]:
    patch_items = _normalize_slice_order(patch_items, patch_order, merge_key, is_map)
    server_only = _normalize_slice_order(server_only, server_order, merge_key, is_map)
    return _merge_sorted(server_only, patch_items, server_order, merge_key)


def _partition(merged: list[Any], by: list[Any], merge_key: str, is_map: bool) -> tuple[list[Any], list[Any]]:
    if is_map:
        _require_merge_key(merged, merge_key)
    keys = {_key_of(v, merge_key) for v in by}
    in_patch = [v for v in merged if _key_of(v, merge_key) in keys]
    server_only = [v for v in merged if _key_of(v, merge_key) not in keys]
    return in_patch, server_only


def _clean(value: Any, node: Node | None) -> Any:
    """A patch value for a field the live object lacks: directives and nulls removed."""
    if isinstance(value, dict):
        return _clean_map(value, node)
    if isinstance(value, list):
        items = node.items if node is not None and node.kind == "array" else None
        out: list[Any] = []
        for item in value:
            if isinstance(item, dict):
                if item.get(DIRECTIVE) is not None:
                    continue
                out.append(_clean_map(item, items))
            elif isinstance(item, list):
                out.append(copy.deepcopy(item))  # (a list of lists: kept as it is, as a private copy)
            else:
                out.append(item)
        return out
    return value


def _clean_map(value: dict[str, Any], node: Node | None) -> dict[str, Any]:
    """``_merge_map({}, value, node)``, directly when ``value`` has no ``$`` keys (the usual
    case: whole new items of a status write): with nothing to merge into and no directives,
    merging is dropping nulls and ``$patch: delete`` maps and cleaning each value.  The keys
    are looked at in the same pass (a ``$`` key hands the whole map to the merge), not in a
    pass of their own before it."""
    out: dict[str, Any] = {}
    for key, sub in value.items():
        if type(key) is str and key.startswith("$"):
            return _merge_map({}, value, node)  # (what is built so far is pure: dropped)
        if sub is None:
            continue
        if isinstance(sub, dict):
            if sub.get(DIRECTIVE) == "delete":
                continue
            out[key] = _clean_map(sub, node.child(key) if node is not None else None)
        elif isinstance(sub, list):
            out[key] = _clean(sub, node.child(key) if node is not None else None)
        else:
            out[key] = sub
    return out


def _has_directive(patch: dict[str, Any]) -> bool:
    """Whether a key of ``patch`` starts with ``$``: one look at each key (compiled, a loop over
    the keys with a native ``startswith`` is faster than ``min()`` over them, which compared them
    through the generic call: 0.27 against 0.43 µs for a container status's nine keys)."""
    for key in patch:
        if type(key) is not str:  # (not a JSON object's keys)
            return any(isinstance(k, str) and k.startswith("$") for k in patch)
        if key.startswith("$"):
            return True
    return False


def _validate_set_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """Upstream ``validatePatchWithSetOrderList``: patch items appear in the order list, in order."""
    if not order or not patch_list:
        return
    if merge_key:
        non_delete = [v for v in patch_list if not (isinstance(v, dict) and v.get(DIRECTIVE) == "delete")]
    else:
        non_delete = patch_list
    p = s = 0
    while p < len(non_delete) and s < len(order):
        item = non_delete[p]
        if isinstance(item, dict) and DIRECTIVE in item:
            p += 1
            continue
        if merge_key:
            if not isinstance(item, dict) or not isinstance(order[s], dict):
                raise internal("expected map in setElementOrder list")
            if merge_key not in item or merge_key not in order[s]:
                raise internal(f"map: {_go_value(item)} does not contain declared merge key: {merge_key}")
            equal = _scalar_key(item[merge_key]) == _scalar_key(order[s][merge_key])
        else:
            equal = _key_of(item, "") == _key_of(order[s], "")
        if equal:
            p += 1
        s += 1
    if p < len(non_delete) and s >= len(order):
        raise internal(f"The order in patch list:\n{_go_value(patch_list)}\n doesn't match "
                       f"{SET_ELEMENT_ORDER} list:\n{_go_value(order)}\n")


def _list_meta(node: Node | None) -> tuple[str, str, Node | None]:
    if node is not None and node.kind == "array":
        return node.strategy, node.merge_key, node.items
    return "", "", None


def _merge_list_field(original: list[Any], patch: list[Any], node: Node | None, is_delete_list: bool) -> list[Any]:
    strategy, merge_key, items = _list_meta(node)
    if strategy == "merge" or is_delete_list:
        return _merge_slice(original, patch, items, merge_key, is_delete_list)
    return _clean(patch, node)


def _merge_slice(original: list[Any], patch: list[Any], items: Node | None, merge_key: str,
                 is_delete_list: bool) -> list[Any]:
    if not original and not patch:
        return list(original)
    kind = _element_kind(original, patch)
    is_map = kind == "map"
    if not is_map:
        if is_delete_list:
            drop = {_scalar_key(v) for v in patch}
            return [v for v in original if _scalar_key(v) not in drop]
        merged: list[Any] = []
        seen: set[Any] = set()
        for v in (*original, *patch):
            k = _scalar_key(v)
            if k not in seen:
                seen.add(k)
                merged.append(v)
        merge_key = ""
    else:
        if not merge_key:
            raise internal("cannot merge lists without merge key for type map")
        fast = _merge_plain_keyed(original, patch, items, merge_key)
        return fast if fast is not None else _merge_keyed(original, patch, items, merge_key)
    patch_items, server_only = _partition(merged, patch, merge_key, is_map)
    return _normalize_element_order(patch_items, server_only, patch, original, merge_key, is_map)


def _merge_keyed(original: list[Any], patch: list[Any], items: Node | None, merge_key: str) -> list[Any]:
    """The general merge of a list of objects by their merge key: ``$patch`` items first, then
    the merge by key, then the order (``mergeSliceWithSpecialElements``,
    ``mergeSliceWithoutSpecialElements``, ``normalizeElementOrder``)."""
    original, patch = _apply_special_elements(original, patch, merge_key)
    merged = _merge_by_key(original, patch, items, merge_key)
    patch_items, server_only = _partition(merged, patch, merge_key, True)
    return _normalize_element_order(patch_items, server_only, patch, original, merge_key, True)


def _merge_plain_keyed(original: list[Any], patch: list[Any], items: Node | None,
                       merge_key: str) -> list[Any] | None:
    """The usual keyed-list merge — every item an object with its merge key, no ``$patch`` item,
    no key twice on either side — done with each item's key computed once; None for anything
    else (the general path decides, and words the errors).

    It gives what the general path gives (tests/unit/test_write_path_shortcuts.py): matched
    items merged in place, new ones appended cleaned; then the patch's items in patch order,
    with the live-only items interleaved by their live position (``mergeSortedSlice``)."""
    live_keys: dict[Any, int] = {}
    patch_keys: dict[Any, int] = {}
    try:
        if not _plain_keys(original, merge_key, live_keys) or not _plain_keys(patch, merge_key, patch_keys):
            return None
    except TypeError:  # an unhashable key value (an object as merge key): the general path
        return None
    patch_items: list[Any] = []
    for key, i in patch_keys.items():
        pos = live_keys.get(key)
        item = patch[i]
        patch_items.append(_clean(item, items) if pos is None else _merge_map(original[pos], item, items))
    server_only: list[Any] = []
    live_pos: list[int] = []
    for key, i in live_keys.items():  # (in the live order)
        if key not in patch_keys:
            server_only.append(original[i])
            live_pos.append(i)
    if not server_only or not patch_items:
        return server_only + patch_items
    # _merge_sorted, with the live positions already known
    return _interleave(server_only, patch_items, live_pos, [live_keys.get(key, -1) for key in patch_keys])


def _plain_keys(side: list[Any], merge_key: str, keys: dict[Any, int]) -> bool:
    """Each item's merge key -> its position, into ``keys``; False when an item is not an object
    with its merge key, holds a ``$patch`` or repeats a key.  A string key stands for itself (no
    other JSON value equals a string, so :func:`_scalar_key`'s tuple is only needed for others:
    one per item made here before)."""
    for i, item in enumerate(side):
        if type(item) is not dict:
            return False
        value = item.get(merge_key)
        if value is None or DIRECTIVE in item:
            return False  # (a null key is removed by the merge: the general path refuses it)
        key = value if type(value) is str else _scalar_key(value)
        if key in keys:
            return False
        keys[key] = i
    return True


def _apply_special_elements(original: list[Any], patch: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """``$patch`` items in a merging list: delete by key, replace the whole list."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        directive = item.get(DIRECTIVE)
        if directive is None:
            plain.append(item)
        elif directive == "delete":
            if merge_key not in item:
                raise internal(f"map: {_go_value(item)} does not contain declared merge key: {merge_key}")
            key = _scalar_key(item[merge_key])
            original = [v for v in original
                        if not (isinstance(v, dict) and merge_key in v and _scalar_key(v[merge_key]) == key)]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise internal("merging lists cannot yet be specified in the patch")
        else:
            raise internal(f"unknown patch type: {directive} in map: {_go_value(item)}")
    if replace:
        # The patch's items as they are (upstream does not clean them), as private copies: the
        # result keeps no part of the patch (the in-process client does not copy it).
        return copy.deepcopy(plain), []
    return original, plain


def _merge_by_key(original: list[Any], patch: list[Any], items: Node | None, merge_key: str) -> list[Any]:
    result = list(original)
    for item in patch:
        if merge_key not in item:
            raise internal(f"map: {_go_value(item)} does not contain declared merge key: {merge_key}")
        key = _scalar_key(item[merge_key])
        for pos, live in enumerate(result):
            if not isinstance(live, dict):
                raise internal(f"value for key {pos} is not a map.")
            if merge_key in live and _scalar_key(live[merge_key]) == key:
                result[pos] = _merge_map(live, item, items)
                break
        else:
            result.append(_clean(item, items))
    return result


def _split_key(key: str, prefix: str, error: str) -> str:
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        raise bad_request(error)
    return rest


def _merge_map(original: dict[str, Any] | None, patch: dict[str, Any], node: Node | None) -> dict[str, Any]:
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == "replace":
            return _clean({k: v for k, v in patch.items() if k != DIRECTIVE}, node)
        if directive == "delete":
            return {}
        raise internal(f"unknown patch type: {directive} in map: {_go_value(patch)}")
    result: dict[str, Any] = dict(original) if original else {}
    # Directives are rare (kubectl's client-side apply, deletions): without any "$" key the patch
    # is merged as it is, with no private copy of it and no directive checks per key.
    pending = patch
    special = _has_directive(patch)
    if special:
        pending = dict(patch)

        if RETAIN_KEYS in pending:
            retain = pending.pop(RETAIN_KEYS)
            if not isinstance(retain, list):
                raise bad_request(ERR_RETAIN_KEYS)
            keep = {_scalar_key(k) for k in retain if not isinstance(k, (dict, list))}
            for k, v in pending.items():
                if v is None or k.startswith(DELETE_FROM_PRIMITIVE_LIST) or k.startswith(SET_ELEMENT_ORDER):
                    continue
                if _scalar_key(k) not in keep:
                    raise _unprocessable(ERR_NOT_MATCH_RETAIN_KEYS)
            result = {k: v for k, v in result.items() if _scalar_key(k) in keep}

        for key in [k for k in pending if k.startswith(SET_ELEMENT_ORDER)]:
            order = pending.pop(key)
            if not isinstance(order, list):
                raise bad_request(ERR_SET_ELEMENT_ORDER)
            field = _split_key(key, SET_ELEMENT_ORDER, ERR_SET_ELEMENT_ORDER)
            child = node.child(field) if node is not None else None
            strategy, merge_key, items = _list_meta(child)
            found_original, found_patch = field in result, field in pending
            live = result.get(field)
            patch_list = pending.get(field)
            if found_original and not isinstance(live, list):
                raise internal(f"expected slice, but got {_go_value(live)}")
            if found_patch and not isinstance(patch_list, list):
                raise internal(f"expected slice, but got {_go_value(patch_list)}")
            _validate_set_order(patch_list or [], order, merge_key)
            if found_original and found_patch:
                assert isinstance(live, list) and isinstance(patch_list, list)  # checked above
                merged = _merge_list_field(live, patch_list, child, False)
            elif found_original:
                assert isinstance(live, list)
                merged = list(live)
            elif found_patch:
                merged = _clean(patch_list, child)
            else:
                continue
            kind = _element_kind(live or [], patch_list or [])
            is_map = kind == "map"
            key_for_order = merge_key if is_map else ""
            in_order, server_only = _partition(merged, order, key_for_order, is_map)
            result[field] = _normalize_element_order(in_order, server_only, order, live or [], key_for_order, is_map)
            pending.pop(field, None)

    for key, value in pending.items():
        is_delete_list = False
        if special and key.startswith(DELETE_FROM_PRIMITIVE_LIST):
            key = _split_key(key, DELETE_FROM_PRIMITIVE_LIST, ERR_PRIMITIVE_LIST)
            is_delete_list = True
        if value is None:
            result.pop(key, None)
            continue
        child = node.child(key) if node is not None else None
        if key not in result:
            if not is_delete_list and not (isinstance(value, dict) and value.get(DIRECTIVE) == "delete"):
                result[key] = _clean(value, child)
            continue
        live = result[key]
        if isinstance(live, dict) and isinstance(value, dict):
            if child is not None and child.kind == "array":  # schema disagrees with the data
                child = None
            result[key] = _merge_map(live, value, child)
        elif isinstance(live, list) and isinstance(value, list):
            result[key] = _merge_list_field(live, value, child, is_delete_list)
        elif not is_delete_list:
            result[key] = _clean(value, child)
    return result


def apply_strategic_merge_patch(obj: dict[str, Any], patch: Any, *, api_version: str, kind: str) -> dict[str, Any]:
    """Apply a strategic merge patch to ``obj`` using the schema of ``api_version``/``kind``.

    Kinds without a schema get plain map merging and list replacement (upstream refuses SMP for
    unstructured types; every kind we serve has a schema).  Inputs are never mutated.
    """
    if not isinstance(patch, dict):
        kind_name = "array" if isinstance(patch, list) else ("string" if isinstance(patch, str) else "number")
        raise bad_request(f"json: cannot unmarshal {kind_name} into Go value of type map[string]interface {{}}")
    node = schema.kind_node(api_version, kind)
    return _merge_map(obj, patch, node)
