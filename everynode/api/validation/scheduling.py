"""PriorityClass validation (scheduling.k8s.io/v1).

Upstream: ``pkg/apis/scheduling/validation/validation.go`` (``ValidatePriorityClass[Update]``),
with the system classes of ``pkg/apis/scheduling/v1/helpers.go``: a ``system-`` name must be one
of them, with its value and no ``globalDefault``.
"""

from __future__ import annotations

from typing import Any

from everynode.api import field_errors as field
from everynode.api.field_errors import FieldError
from everynode.api.names import name_is_dns_subdomain
from everynode.api.validation.meta import (
    as_dict,
    as_int,
    as_str,
    required_enum,
    validate_immutable,
    validate_object_meta,
    validate_object_meta_update,
)
from everynode.api.validation.pod import PREEMPTION_POLICIES

Obj = dict[str, Any]

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}


def _known_system_class_error(name: str, value: int, global_default: bool) -> str | None:
    expected = SYSTEM_PRIORITY_CLASSES.get(name)
    if expected is None:
        return f"{name} is not a known system priority class"
    if value != expected:
        return f"value of {name} PriorityClass must be {expected}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return None


def validate_priority_class_create(pc: Obj) -> list[FieldError]:
    errs = validate_object_meta(pc.get("metadata"), namespaced=False, name_fn=name_is_dns_subdomain)
    name = as_str(as_dict(pc.get("metadata")).get("name"))
    value = as_int(pc.get("value"))
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        problem = _known_system_class_error(name, value, pc.get("globalDefault") is True)
        if problem is not None:
            errs.append(field.forbidden(
                "metadata.name",
                f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system use "
                f"only. error: {problem}",
            ))
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(field.forbidden("value",
                                    f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"))
    if pc.get("preemptionPolicy") is not None:
        errs.extend(required_enum(as_str(pc["preemptionPolicy"]), "preemptionPolicy", PREEMPTION_POLICIES))
    return errs


def validate_priority_class_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    if as_int(new.get("value")) != as_int(old.get("value")):
        errs.append(field.forbidden("value", "may not be changed in an update."))
    errs.extend(validate_immutable(new.get("preemptionPolicy"), old.get("preemptionPolicy"), "preemptionPolicy"))
    return errs
