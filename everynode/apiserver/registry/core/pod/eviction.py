"""``pods/eviction``: a delete that a disruption budget may refuse —
``pkg/registry/core/pod/storage/eviction.go``.

No PodDisruptionBudgets are served yet, so every eviction is allowed: the pod gets the
``DisruptionTarget`` condition (``EvictionByEvictionAPI``, written as kube-apiserver through
``pods/status``) and is then deleted with the Eviction's ``deleteOptions``.  A pod already being
deleted needs nothing; a pod gone meanwhile is not an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from everynode.api import errors
from everynode.apiserver.registry.core.pod.strategy import with_condition
from everynode.apiserver.registry.options import RequestOptions

if TYPE_CHECKING:
    from everynode.apiserver.registry.generic import ResourceStore

Obj = dict[str, Any]


async def evict(pods: ResourceStore, namespace: str, name: str, eviction: Obj, opts: RequestOptions) -> None:
    md: Obj = eviction["metadata"] if isinstance(eviction.get("metadata"), dict) else {}
    if (md.get("name") or "") != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    delete_options = eviction.get("deleteOptions")
    delete_options = dict(delete_options) if isinstance(delete_options, dict) else {}
    if opts.dry_run:
        delete_options["dryRun"] = ["All"]
    pod = pods.ctx.store.get("pods", namespace, name)
    if pod is None:
        raise errors.not_found("pods", "", name)
    if pod["metadata"].get("deletionTimestamp"):
        return  # already being deleted: nothing to check, nothing to do
    # No PodDisruptionBudgets are served, so every eviction is allowed.
    if not opts.dry_run:
        new = dict(pod)
        new["status"] = with_condition(pod.get("status") or {}, {
            "type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting"}, pods.ctx.now())
        new["metadata"] = dict(pod["metadata"])
        try:
            await pods.update_existing(new, pod, "status",
                                       RequestOptions(field_manager="kube-apiserver", user=opts.user))
        except errors.ApiError as e:
            if e.code == 404:
                return
            raise
    try:
        await pods.delete(namespace, name, options=delete_options, opts=opts)
    except errors.ApiError as e:
        if e.code != 404:
            raise
