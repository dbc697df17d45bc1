"""JSON merge patch (RFC 7386), the ``application/merge-patch+json`` PATCH type.

Why hand-written: the rule is a dozen lines, and copy-on-write makes it ~50× faster than a
library that deep-copies first (python-stack.md §5): only the maps on the path of a change are
rebuilt; untouched subtrees are shared with the input.  Objects are immutable by project
convention (storage/base.py), so sharing is safe; ``deep_copy`` the result before mutating it.
Upstream uses ``jsonpatch.MergePatch`` (evanphx/json-patch) in
``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go``; a patch document that is not a
JSON object is rejected as a bad request there too.
"""

from __future__ import annotations

from typing import Any

from everynode.api.errors import bad_request


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def apply_merge_patch(obj: dict[str, Any], patch: Any) -> dict[str, Any]:
    """RFC 7386: ``null`` deletes, objects merge recursively, everything else replaces.

    Never mutates ``obj`` or ``patch``; the result shares unchanged subtrees with both.
    """
    if not isinstance(patch, dict):
        raise bad_request("Invalid JSON Patch")
    return _merge(obj, patch)
