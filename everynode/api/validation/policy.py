"""PodDisruptionBudget validation (policy/v1).

Upstream: ``pkg/apis/policy/validation/validation.go`` (``ValidatePodDisruptionBudget``,
``ValidatePodDisruptionBudgetSpec``, ``ValidatePodDisruptionBudgetStatusUpdate``).  The spec is
mutable since 1.15, so an update re-runs the create rules; the int-or-percent checks are the
apps ones upstream reuses (``appsvalidation.ValidatePositiveIntOrPercent``,
``IsNotMoreThan100Percent``).

One rendering differs: "minAvailable and maxUnavailable cannot be both set" is reported on
``spec`` with the spec as its value; Go prints that struct with pointer addresses, we print it
as JSON (the words after the value are upstream's).
"""

from __future__ import annotations

from typing import Any

from everynode.api import field_errors as field
from everynode.api.field_errors import FieldError
from everynode.api.names import name_is_dns_subdomain
from everynode.api.validation.apps import _not_more_than_100_percent, _validate_positive_int_or_percent
from everynode.api.validation.meta import (
    as_dict,
    child,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
    validate_status_counters,
)

Obj = dict[str, Any]

UNHEALTHY_POD_EVICTION_POLICIES = ["AlwaysAllow", "IfHealthyBudget"]
PDB_STATUS_COUNTERS = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")


def validate_pod_disruption_budget_spec(spec: Any, path: str = "spec") -> list[FieldError]:
    sp = as_dict(spec)
    errs: list[FieldError] = []
    min_available = sp.get("minAvailable")
    max_unavailable = sp.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        errs.append(field.invalid(path, sp, "minAvailable and maxUnavailable cannot be both set"))
    for name, value in (("minAvailable", min_available), ("maxUnavailable", max_unavailable)):
        if value is not None:
            errs.extend(_validate_positive_int_or_percent(value, child(path, name)))
            errs.extend(_not_more_than_100_percent(value, child(path, name)))
    errs.extend(validate_label_selector(sp.get("selector"), child(path, "selector")))
    policy = sp.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        errs.append(field.not_supported(child(path, "unhealthyPodEvictionPolicy"), policy,
                                        UNHEALTHY_POD_EVICTION_POLICIES))
    return errs


def validate_pod_disruption_budget_create(pdb: Obj) -> list[FieldError]:
    errs = validate_object_meta(pdb.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)
    errs.extend(validate_pod_disruption_budget_spec(pdb.get("spec")))
    return errs


def validate_pod_disruption_budget_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_pod_disruption_budget_spec(new.get("spec")))
    return errs


def validate_pod_disruption_budget_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    status = as_dict(new.get("status"))
    errs.extend(validate_status_counters(status, PDB_STATUS_COUNTERS))
    return errs
