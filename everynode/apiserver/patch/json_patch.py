"""JSON patch (RFC 6902), the ``application/json-patch+json`` PATCH type, via ``jsonpatch``.

Errors are answered as kube-apiserver does (``handlers/patch.go``, ``applyJSPatch``): a document
that is not a list of operations is a 400 BadRequest; more than 10000 operations is a 413; an
operation that cannot be applied (missing path, failed ``test``) is a generic 422 whose message
is the fixed "the server rejected our request due to an error in our request" with empty
details (``errors.NewGenericServerResponse``) — the library's own text is not shown, as upstream.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import jsonpointer

from everynode.api.errors import ApiError, bad_request, status

MAX_JSON_PATCH_OPERATIONS = 10000
_VALID_OPS = {"add", "remove", "replace", "move", "copy", "test"}


def _rejected() -> ApiError:
    return ApiError(status(422, "Invalid", "the server rejected our request due to an error in our request", {}))


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
            raise _rejected()  # evanphx: "Unexpected kind: ..." at apply time → 422
    try:
        return jsonpatch.JsonPatch(ops).apply(obj, in_place=False)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, KeyError, IndexError,
            TypeError, ValueError):
        raise _rejected() from None
