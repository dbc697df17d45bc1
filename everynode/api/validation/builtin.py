"""Validation of the kinds served from :mod:`everynode.api.builtin_kinds` without rules of
their own: the schemas' required fields for all of them, and the update rules users hit most.

Update rules (upstream ``pkg/apis/<group>/validation``):

* StatefulSet (``ValidateStatefulSetUpdate``): only ``replicas``, ``ordinals``, ``template``,
  ``updateStrategy``, ``revisionHistoryLimit``, ``persistentVolumeClaimRetentionPolicy`` and
  ``minReadySeconds`` may change — the ``spec: Forbidden`` users meet when they edit
  ``volumeClaimTemplates`` or the selector;
* StorageClass (``ValidateStorageClassUpdate``): ``parameters``, ``provisioner`` and
  ``reclaimPolicy`` are forbidden to change, ``volumeBindingMode`` is immutable;
* CSIDriver (``ValidateCSIDriverUpdate``): ``attachRequired`` (upstream's path says
  ``spec.attachedRequired``) and ``volumeLifecycleModes`` are immutable.

Both entry points take the registry key and the object(s) after defaulting; ObjectMeta is
checked by the caller (:mod:`everynode.api.validation`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from everynode.api import field_errors as field
from everynode.api.field_errors import FieldError
from everynode.api.registry import resource
from everynode.api.validation.meta import validate_immutable
from everynode.api.validation.required import validate_required

Obj = dict[str, Any]

STATEFULSET_SPEC_FORBIDDEN = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', "
    "'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")
_STATEFULSET_MUTABLE = frozenset({"replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit",
                                  "persistentVolumeClaimRetentionPolicy", "minReadySeconds"})


def _stateful_set_update(new: Obj, old: Obj) -> list[FieldError]:
    new_spec = new.get("spec") or {}
    old_spec = old.get("spec") or {}
    fixed_new = {k: v for k, v in new_spec.items() if k not in _STATEFULSET_MUTABLE}
    fixed_old = {k: v for k, v in old_spec.items() if k not in _STATEFULSET_MUTABLE}
    if fixed_new != fixed_old:
        return [field.forbidden("spec", STATEFULSET_SPEC_FORBIDDEN)]
    return []


def _storage_class_update(new: Obj, old: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    if (new.get("parameters") or {}) != (old.get("parameters") or {}):
        errs.append(field.forbidden("parameters", "updates to parameters are forbidden."))
    if new.get("provisioner") != old.get("provisioner"):
        errs.append(field.forbidden("provisioner", "updates to provisioner are forbidden."))
    if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
        errs.append(field.forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
    errs.extend(validate_immutable(new.get("volumeBindingMode"), old.get("volumeBindingMode"), "volumeBindingMode"))
    return errs


def _csi_driver_update(new: Obj, old: Obj) -> list[FieldError]:
    new_spec = new.get("spec") or {}
    old_spec = old.get("spec") or {}
    return (validate_immutable(new_spec.get("attachRequired"), old_spec.get("attachRequired"),
                               "spec.attachedRequired")
            + validate_immutable(new_spec.get("volumeLifecycleModes"), old_spec.get("volumeLifecycleModes"),
                                 "spec.volumeLifecycleModes"))


_UPDATE_RULES: dict[str, Callable[[Obj, Obj], list[FieldError]]] = {
    "statefulsets.apps": _stateful_set_update,
    "storageclasses.storage.k8s.io": _storage_class_update,
    "csidrivers.storage.k8s.io": _csi_driver_update,
}


def _required(resource_key: str, obj: Obj) -> list[FieldError]:
    try:
        rt = resource(resource_key)
    except KeyError:
        return []
    return validate_required(rt.api_version, rt.kind, obj)


def validate_create(resource_key: str, obj: Obj) -> list[FieldError]:
    return _required(resource_key, obj)


def validate_update(resource_key: str, new: Obj, old: Obj) -> list[FieldError]:
    rule = _UPDATE_RULES.get(resource_key)
    return _required(resource_key, new) + (rule(new, old) if rule is not None else [])
