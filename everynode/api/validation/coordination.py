"""Lease validation (coordination.k8s.io/v1).

Upstream: ``pkg/apis/coordination/validation/validation.go`` (``ValidateLease``,
``ValidateLeaseUpdate``, ``ValidateLeaseSpec``).  Every simulated node renews its Lease with an
update, so the update rule is kept to what upstream checks on update and no more.
"""

from __future__ import annotations

from typing import Any

from everynode.api import field_errors as field
from everynode.api.field_errors import FieldError
from everynode.api.names import name_is_dns_subdomain
from everynode.api.validation.meta import as_dict, validate_object_meta, validate_object_meta_update

Obj = dict[str, Any]


def validate_lease_create(lease: Obj) -> list[FieldError]:
    errs = validate_object_meta(lease.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)
    return errs + _validate_lease_spec(lease)


def validate_lease_update(new: Obj, old: Obj) -> list[FieldError]:
    """``ValidateLeaseUpdate``: the metadata update rule and the spec rule; unlike the kinds that
    re-run their whole create rule on update, the create-time ObjectMeta checks are not repeated
    (so an invalid new label is reported once, and every node's renewal skips them)."""
    return validate_object_meta_update(new.get("metadata"), old.get("metadata")) + _validate_lease_spec(new)


def _validate_lease_spec(lease: Obj) -> list[FieldError]:
    """``ValidateLeaseSpec`` (the fields we serve)."""
    errs: list[FieldError] = []
    spec = as_dict(lease.get("spec"))
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        errs.append(field.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        errs.append(field.invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    return errs
