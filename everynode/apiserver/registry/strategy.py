"""The protocol a resource's rules plug into the generic store by: kube's ``rest.RESTCreateStrategy``
/ ``RESTUpdateStrategy`` / ``RESTDeleteStrategy`` plus the generic store's hooks around storage.

Why a base class with do-nothing defaults rather than a table of functions: most kinds have no
rules at all (ConfigMap, Secret, Lease …) and get :class:`Strategy` itself; a kind with rules
overrides only the hooks upstream's ``pkg/registry/<group>/<resource>/strategy.go`` overrides.
Each hook is one pure function of (new, old) that mutates the *new* object in place (the caller
owns it: a decoded body or a private copy); old objects are stored objects and never mutated —
values taken from them are shared, which is safe because stored objects are immutable.

What the generic store does around the hooks (``registry/generic.py``), in upstream's order:

* create: :func:`before_create` (system metadata, ``rest.BeforeCreate``) → ``prepare_for_create``
  → ``validate_create`` → ``begin_create`` (e.g. allocate a ClusterIP; its finish is called with
  ``False`` when the store write fails, ``Store.BeginCreate``) → store;
* update: :func:`before_update` (``rest.BeforeUpdate``: what a client cannot change) →
  ``prepare_for_update`` → ``validate_update`` → ``begin_update`` (its finish runs once the write
  succeeded) → store → ``should_delete_during_update``;
* subresource updates (``status``, ``finalize``) use a :class:`SubresourceStrategy` instead;
* delete: ``graceful_delete_period`` (``CheckGracefulDelete``), then finalizers, then
  ``after_delete`` once the object is gone from storage (``Store.AfterDelete``).

The flags are upstream's strategy answers: ``AllowCreateOnUpdate()``, ``ReturnDeletedObject``, and
whether a main-resource write resets ``status`` (kinds with a status subresource).

Upstream: ``staging/src/k8s.io/apiserver/pkg/registry/rest/{create,update,delete}.go``,
``staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from everynode.api import field_errors as fielderr
from everynode.api import meta as apimeta
from everynode.api.registry import ResourceType
from everynode.api.validation import validate_create, validate_status_update, validate_update
from everynode.apiserver.registry.systemmeta import before_update as before_update  # (re-exported)
from everynode.apiserver.registry.systemmeta import keep as keep  # (re-exported)

Obj = dict[str, Any]
Finish = Callable[[bool], None]
"""``FinishFunc``: called with whether the store write succeeded (upstream's ``BeginCreate``)."""

ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"


class SubresourceStrategy:
    """The rules of an update through a subresource (``pods/status``, ``namespaces/finalize``).

    ``restored`` names the top-level fields ``prepare_for_update`` resets to the stored value
    before anything reads them, so the patch path need not copy them (``copies.private_copy``)."""

    restored: tuple[str, ...] = ()

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """The kind's part of ``PrepareForUpdate`` (system metadata is already kept)."""

    def validate_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[fielderr.FieldError]:
        return []


class StatusStrategy(SubresourceStrategy):
    """The ``*/status`` strategies: the spec is the stored one, whatever the request says."""

    restored = ("spec",)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        keep(new, old, "spec")

    def validate_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[fielderr.FieldError]:
        return validate_status_update(rt.key, new, old)


class Strategy:
    """A resource's rules; every hook defaults to upstream's generic behaviour (no rules)."""

    def __init__(self, *, allow_create_on_update: bool = False, return_deleted_object: bool = False,
                 keeps_status: bool = False,
                 subresources: Mapping[str, SubresourceStrategy] | None = None) -> None:
        self.allow_create_on_update = allow_create_on_update
        """``AllowCreateOnUpdate()``: a PUT of a missing object creates it (else 404)."""
        self.return_deleted_object = return_deleted_object
        """``ReturnDeletedObject``: a DELETE answers with the object instead of a Status."""
        self.keeps_status = keeps_status
        """A main-resource update keeps the stored ``status`` (the kind has a status subresource)."""
        self.subresources: Mapping[str, SubresourceStrategy] = (
            subresources if subresources is not None else {"status": StatusStrategy()})

    # -- create ----------------------------------------------------------------------------------

    template_fields: tuple[str, ...] = ()
    """Fields of the spec that differ between the objects a controller makes from one template
    and that no rule of a create reads together with anything else (registry/templates.py: the
    creates answered from the first one's processing).  None for most kinds."""
    template_refusals: tuple[str, ...] = ()
    """Spec fields whose presence sends a create the full way (rules read them with others)."""

    def validate_create_per_object(self, rt: ResourceType, obj: Obj) -> list[fielderr.FieldError]:
        """The rules of :meth:`validate_create` reading what differs between two objects of one
        template (their generated names and ``template_fields``), in its order."""
        return []

    def prepare_for_create(self, obj: Obj) -> None:
        """The kind's ``PrepareForCreate`` (system metadata is already set by :func:`before_create`)."""

    def validate_create(self, rt: ResourceType, obj: Obj) -> list[fielderr.FieldError]:
        return validate_create(rt.key, obj)

    def begin_create(self, obj: Obj, *, dry_run: bool) -> Finish | None:
        """Reserve what the object holds outside storage, right before the write."""
        return None

    # -- update ----------------------------------------------------------------------------------

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """The kind's ``PrepareForUpdate`` (system metadata is already kept by :func:`before_update`)."""
        if self.keeps_status:
            keep(new, old, "status")

    def validate_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[fielderr.FieldError]:
        return validate_update(rt.key, new, old)

    def begin_update(self, new: Obj, old: Obj, *, dry_run: bool) -> Finish | None:
        """Change what the object holds outside storage; the finish runs after a successful write."""
        return None

    def restored_fields(self, subresource: str | None) -> tuple[str, ...]:
        """Top-level fields an update's strategy resets to the stored value before anything else
        reads them: ``spec`` for ``/status`` writes, ``status`` for main-resource writes of kinds
        that keep it.  The patch path need not copy what the request left untouched there."""
        if subresource is None:
            return ("status",) if self.keeps_status else ()
        sub = self.subresources.get(subresource)
        return sub.restored if sub is not None else ()

    # -- delete ----------------------------------------------------------------------------------

    def graceful_delete_period(self, obj: Obj, grace_period: int | None) -> int | None:
        """``CheckGracefulDelete``: the grace period for a first graceful delete, or None when the
        kind has no graceful deletion (every kind but pods)."""
        return None

    def should_delete_during_update(self, new: Obj, old: Obj) -> bool:
        """``ShouldDeleteDuringUpdate``: an update leaving no finalizers on an object whose
        deletion was requested (with no grace period pending) finishes the deletion."""
        if new["metadata"].get("finalizers"):
            return False
        old_md = old["metadata"]
        if not old_md.get("deletionTimestamp"):
            return False
        return not old_md.get("deletionGracePeriodSeconds")

    def after_delete(self, obj: Obj) -> None:
        """Release what the object held outside storage, now that it is gone from the store."""


# --------------------------------------------------------------------------------------------
# the generic metadata rules (rest.BeforeCreate / rest.BeforeUpdate)


def before_create(rt: ResourceType, obj: Obj, *, now: str) -> None:
    """``rest.BeforeCreate`` minus validation: the system metadata of a new object.

    ``metadata.name`` from ``generateName`` is *not* chosen here: the store picks it (and
    retries on a collision, as ``RetryGenerateName`` does)."""
    md = obj["metadata"]
    md.pop("deletionTimestamp", None)
    md.pop("deletionGracePeriodSeconds", None)
    md.pop("selfLink", None)
    md["uid"] = apimeta.new_uid()
    md["creationTimestamp"] = now
    if not rt.namespaced:
        md.pop("namespace", None)


# --------------------------------------------------------------------------------------------
# helpers the kinds' strategies share


def bump_generation_on_spec_change(new: Obj, old: Obj) -> None:
    if new.get("spec") != old.get("spec"):
        new["metadata"]["generation"] = int(new["metadata"].get("generation") or 0) + 1


def reset_object_meta_for_status(md: Obj, old_md: Obj) -> None:
    """``metav1.ResetObjectMetaForStatus``: a status write cannot change these."""
    for key in ("labels", "annotations", "finalizers", "ownerReferences"):
        keep(md, old_md, key)
