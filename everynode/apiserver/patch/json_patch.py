"""JSON patch (RFC 6902), the ``application/json-patch+json`` PATCH type, via ``jsonpatch``.

Errors are answered as kube-apiserver does (``handlers/patch.go``, ``applyJSPatch``): a document
that is not a list of operations is a 400 BadRequest; more than 10000 operations is a 413; an
operation that cannot be applied (missing path, failed ``test``) is a generic 422 whose message
is the fixed "the server rejected our request due to an error in our request"
(``errors.NewGenericServerResponse``) with the cause in ``details.causes[0].message``, worded as
evanphx/json-patch words it (``replace operation does not apply: doc is missing key: /spec/x:
missing value``, ``testing value /spec/x failed: test failed``).  The failing operation is found
by replaying the patch one operation at a time, only once the whole patch has failed.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import jsonpointer

from everynode.api.errors import ApiError, bad_request, status
from everynode.api.meta import deep_copy

MAX_JSON_PATCH_OPERATIONS = 10000
_VALID_OPS = {"add", "remove", "replace", "move", "copy", "test"}


def _rejected(cause: str = "") -> ApiError:
    details: dict[str, Any] = {"causes": [{"message": cause}]} if cause else {}
    return ApiError(status(422, "Invalid", "the server rejected our request due to an error in our request", details))


def _cause(obj: dict[str, Any], ops: list[Any]) -> str:
    """evanphx/json-patch's error for the first operation that does not apply."""
    doc: Any = obj
    for op in ops:
        try:
            doc = jsonpatch.JsonPatch([op]).apply(deep_copy(doc), in_place=True)
        except jsonpatch.JsonPatchTestFailed:
            return f"testing value {op.get('path')} failed: test failed"
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, KeyError, IndexError,
                TypeError, ValueError):
            kind = op.get("op")
            if kind in ("move", "copy"):
                return f"{kind} operation does not apply: doc is missing from path: {op.get('from')}: missing value"
            if kind == "replace":
                return f"replace operation does not apply: doc is missing key: {op.get('path')}: missing value"
            return f'{kind} operation does not apply: doc is missing path: "{op.get("path")}": missing value'
    return ""


def apply_json_patch(obj: dict[str, Any], ops: Any) -> Any:
    """Apply RFC 6902 operations to a copy of ``obj`` (inputs are not mutated)."""
    if not isinstance(ops, list):
        kind = "object" if isinstance(ops, dict) else type(ops).__name__
        raise bad_request(f"json: cannot unmarshal {kind} into Go value of type jsonpatch.Patch")
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise ApiError(status(413, "RequestEntityTooLarge",
                              f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, "
                              f"got {len(ops)}"))
    for op in ops:
        if not isinstance(op, dict):
            raise bad_request("json: cannot unmarshal value into Go value of type jsonpatch.Operation")
        if op.get("op") not in _VALID_OPS:
            raise _rejected(f"Unexpected kind: {op.get('op')}")  # evanphx, at apply time → 422
    try:
        # The copy is an orjson round trip (deep_copy), not jsonpatch's copy.deepcopy: stored
        # objects share equal subtrees, possibly twice within one object (managedFields trees),
        # and deepcopy would keep such a pair aliased, so a patch of one place would change both.
        return jsonpatch.JsonPatch(ops).apply(deep_copy(obj), in_place=True)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, KeyError, IndexError,
            TypeError, ValueError):
        raise _rejected(_cause(obj, ops)) from None
