"""The four PATCH types kube-apiserver accepts, as pure functions on JSON-shaped objects.

``application/json-patch+json`` → :func:`apply_json_patch`, ``application/merge-patch+json`` →
:func:`apply_merge_patch`, ``application/strategic-merge-patch+json`` →
:func:`apply_strategic_merge_patch`, ``application/apply-patch+yaml`` (server-side apply) →
:func:`apply_server_side`; :func:`record_managed_fields` keeps ``metadata.managedFields`` current
for ordinary writes so that a later apply sees the right owners.  None of them mutates its
inputs; bad patches raise :class:`everynode.api.errors.ApiError` as upstream answers them.
"""

from everynode.apiserver.patch.apply import apply_server_side, record_managed_fields
from everynode.apiserver.patch.json_patch import apply_json_patch
from everynode.apiserver.patch.merge import apply_merge_patch
from everynode.apiserver.patch.strategic import apply_strategic_merge_patch

__all__ = [
    "apply_json_patch",
    "apply_merge_patch",
    "apply_server_side",
    "apply_strategic_merge_patch",
    "record_managed_fields",
]
