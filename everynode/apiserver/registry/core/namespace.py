"""Namespaces: the ``kubernetes`` finalizer, the ``Active``/``Terminating`` phase, the
``kubernetes.io/metadata.name`` label, the ``finalize`` subresource and a two-step delete —
``pkg/registry/core/namespace/strategy.go`` and ``storage/storage.go``.

Why a storage of its own: a namespace's first DELETE does not remove it.  It stamps the
deletion timestamp, turns the phase to ``Terminating`` (admission then refuses new content) and
returns the namespace; the namespace controller empties it and clears ``spec.finalizers``
through ``/finalize``, and the update that leaves neither finalizer list behind deletes it
(``ShouldDeleteNamespaceDuringUpdate``).  ``spec.finalizers`` change only through ``/finalize``.
"""

from __future__ import annotations

from typing import Any

from everynode.api import field_errors as fielderr
from everynode.api import meta as apimeta
from everynode.api.registry import ResourceType
from everynode.api.validation import validate_namespace_finalize
from everynode.apiserver.registry.context import ServerContext
from everynode.apiserver.registry.deletion import orphan_wanted
from everynode.apiserver.registry.generic import ResourceStore
from everynode.apiserver.registry.options import RequestOptions
from everynode.apiserver.registry.strategy import (
    ORPHAN_FINALIZER,
    StatusStrategy,
    Strategy,
    SubresourceStrategy,
    keep,
)
from everynode.storage.base import ConflictError

Obj = dict[str, Any]

NAMESPACE_FINALIZER = "kubernetes"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


class NamespaceStrategy(Strategy):
    def __init__(self) -> None:
        super().__init__(return_deleted_object=True, keeps_status=True,
                         subresources={"status": StatusStrategy(), "finalize": FinalizeStrategy()})

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"phase": "Active"}
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        finalizers = list(spec.get("finalizers") or ())
        if NAMESPACE_FINALIZER not in finalizers:
            finalizers.append(NAMESPACE_FINALIZER)
        spec["finalizers"] = finalizers
        _namespace_name_label(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        keep(new, old, "status")
        # spec.finalizers only change through the finalize subresource.
        old_finalizers = (old.get("spec") or {}).get("finalizers")
        spec = new.get("spec")
        if not isinstance(spec, dict):
            spec = new["spec"] = {}
        if old_finalizers is not None:
            spec["finalizers"] = old_finalizers
        else:
            spec.pop("finalizers", None)
        _namespace_name_label(new)

    def should_delete_during_update(self, new: Obj, old: Obj) -> bool:
        """Also waits for ``spec.finalizers`` (``ShouldDeleteNamespaceDuringUpdate``)."""
        if (new.get("spec") or {}).get("finalizers"):
            return False
        return super().should_delete_during_update(new, old)


class FinalizeStrategy(SubresourceStrategy):
    """``namespaces/finalize``: the request may change ``spec.finalizers``; status is kept."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        keep(new, old, "status")
        _namespace_name_label(new)

    def validate_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[fielderr.FieldError]:
        return validate_namespace_finalize(new, old)


class NamespaceStore(ResourceStore):
    def __init__(self, rt: ResourceType, ctx: ServerContext) -> None:
        super().__init__(rt, ctx, NamespaceStrategy())

    async def _delete(self, obj: Obj, options: Obj, opts: RequestOptions) -> Obj:
        ns_obj = obj
        md = ns_obj["metadata"]
        if not md.get("deletionTimestamp"):
            new = dict(ns_obj)
            new_md = dict(md, deletionTimestamp=self.ctx.now())
            finalizers = list(md.get("finalizers") or ())
            orphan = orphan_wanted(options, ORPHAN_FINALIZER in finalizers)
            if orphan is False and ORPHAN_FINALIZER in finalizers:
                finalizers.remove(ORPHAN_FINALIZER)
            elif orphan and ORPHAN_FINALIZER not in finalizers:
                finalizers.append(ORPHAN_FINALIZER)
            if finalizers:
                new_md["finalizers"] = finalizers
            else:
                new_md.pop("finalizers", None)
            new["metadata"] = new_md
            new["status"] = dict(ns_obj.get("status") or {}, phase="Terminating")
            if opts.dry_run:
                return new
            try:
                return await self.ctx.store.update(self.rt.key, new, expected_rv=apimeta.resource_version(ns_obj))
            except ConflictError:
                raise  # delete() re-reads and retries
        if (ns_obj.get("spec") or {}).get("finalizers"):
            return ns_obj  # the namespace controller finishes; deletion follows its finalize
        return await self._delete_object(ns_obj, options, opts)


def _namespace_name_label(obj: Obj) -> None:
    md = obj["metadata"]
    name = md.get("name")
    if not name:
        return
    labels = md.get("labels")
    if isinstance(labels, dict) and labels.get(NAMESPACE_NAME_LABEL) == name:
        return
    labels = dict(labels or {})
    labels[NAMESPACE_NAME_LABEL] = name
    md["labels"] = labels
