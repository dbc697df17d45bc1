"""Deployment, ReplicaSet and Scale validation (apps/v1, autoscaling/v1).

Upstream: ``pkg/apis/apps/validation/validation.go`` (``ValidateDeployment``,
``ValidateDeploymentSpec``, ``ValidateDeploymentStrategy``, ``ValidateRollingUpdateDeployment``,
``ValidateDeploymentStatus``, ``ValidateDeploymentStatusUpdate``, ``ValidateReplicaSet``,
``ValidateReplicaSetSpec``, ``ValidatePodTemplateSpecForReplicaSet``,
``ValidateReplicaSetStatus``), ``pkg/apis/autoscaling/validation`` (``ValidateScale``) and the
apps/v1 strategies (``pkg/registry/apps/{deployment,replicaset}/strategy.go``: the selector is
immutable on update).

Why a module of its own rather than more of ``apps.py``: the Deployment and the ReplicaSet share
one template rule (``ValidatePodTemplateSpecForReplicaSet``) and one status shape, and
nothing with the DaemonSet but the int-or-percent helpers, which are imported from there (one
piece of code per rule).  A missing selector gets both upstream errors: ``Required`` and — as
``LabelSelectorAsSelector(nil)`` selects nothing — "`selector` does not match template `labels`".
"""

from __future__ import annotations

from typing import Any, Final

from everynode.api import field_errors as field
from everynode.api.field_errors import FieldError
from everynode.api.names import name_is_dns_subdomain
from everynode.api.validation.apps import (
    _int_or_percent_value,
    _not_more_than_100_percent,
    _validate_positive_int_or_percent,
    validate_collision_count_update,
)
from everynode.api.validation.meta import (
    IS_NEGATIVE_ERROR_MSG,
    as_dict,
    as_str,
    child,
    selector_matches,
    validate_immutable,
    validate_label_selector,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
    validate_status_counters,
)
from everynode.api.validation.pod import validate_pod_template_spec

Obj = dict[str, Any]

GREATER_THAN_REPLICAS: Final = "cannot be greater than status.replicas"
GREATER_THAN_READY: Final = "cannot be greater than readyReplicas"


# -- shared: the pod template a ReplicaSet (and a Deployment) stamps out ------------------------

def validate_pod_template_for_replica_set(template: Any, selector: Any, path: str) -> list[FieldError]:
    """``ValidatePodTemplateSpecForReplicaSet`` once the selector converted."""
    tpl = as_dict(template)
    labels = as_dict(tpl.get("metadata")).get("labels")
    errs: list[FieldError] = []
    # A selector of {} selects everything (Empty()), so it is the only one that needs no match.
    selects_everything = isinstance(selector, dict) and not selector.get("matchLabels") \
        and not selector.get("matchExpressions")
    if not selects_everything and selector_matches(selector, labels) is False:
        errs.append(field.invalid(child(child(path, "metadata"), "labels"), as_dict(labels),
                                  "`selector` does not match template `labels`"))
    errs.extend(validate_pod_template_spec(tpl, path))
    spec = as_dict(tpl.get("spec"))
    restart_policy = spec.get("restartPolicy", "")
    if restart_policy != "Always":
        errs.append(field.not_supported(child(path, "spec.restartPolicy"), restart_policy, ["Always"]))
    if spec.get("activeDeadlineSeconds") is not None:
        errs.append(field.invalid(child(path, "spec.activeDeadlineSeconds"), spec["activeDeadlineSeconds"],
                                  "activeDeadlineSeconds in ReplicaSet is not Supported"))
    return errs


def _validate_selector_and_template(sp: Obj, path: str) -> list[FieldError]:
    selector = sp.get("selector")
    selector_path = child(path, "selector")
    errs: list[FieldError] = []
    if selector is None:
        errs.append(field.required(selector_path))
    else:
        errs.extend(validate_label_selector(selector, selector_path))
        sel = as_dict(selector)
        if not sel.get("matchLabels") and not sel.get("matchExpressions"):
            errs.append(field.invalid(selector_path, selector, "empty selector is invalid for deployment"))
    if selector is not None and selector_matches(selector, {}) is None:
        errs.append(field.invalid(selector_path, selector, "invalid label selector"))
    else:
        errs.extend(validate_pod_template_for_replica_set(sp.get("template"), selector, child(path, "template")))
    return errs


# -- Deployment ---------------------------------------------------------------------------------

def validate_rolling_update_deployment(rolling: Obj, path: str) -> list[FieldError]:
    max_unavailable = rolling.get("maxUnavailable")
    max_surge = rolling.get("maxSurge")
    unavailable_path, surge_path = child(path, "maxUnavailable"), child(path, "maxSurge")
    errs: list[FieldError] = []
    if max_unavailable is not None:
        errs.extend(_validate_positive_int_or_percent(max_unavailable, unavailable_path))
    if max_surge is not None:
        errs.extend(_validate_positive_int_or_percent(max_surge, surge_path))
    if _int_or_percent_value(max_unavailable or 0) == 0 and _int_or_percent_value(max_surge or 0) == 0:
        errs.append(field.invalid(unavailable_path, max_unavailable if max_unavailable is not None else 0,
                                  "may not be 0 when `maxSurge` is 0"))
    if max_unavailable is not None:
        errs.extend(_not_more_than_100_percent(max_unavailable, unavailable_path))
    return errs


def validate_deployment_strategy(strategy: Any, path: str) -> list[FieldError]:
    st = as_dict(strategy)
    strategy_type = as_str(st.get("type"))
    if strategy_type == "Recreate":
        if st.get("rollingUpdate") is not None:
            return [field.forbidden(child(path, "rollingUpdate"),
                                    "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if strategy_type == "RollingUpdate":
        if st.get("rollingUpdate") is None:
            return [field.required(child(path, "rollingUpdate"), "this should be defaulted and never be nil")]
        return validate_rolling_update_deployment(as_dict(st["rollingUpdate"]), child(path, "rollingUpdate"))
    return [field.not_supported(child(path, "type"), strategy_type, ["Recreate", "RollingUpdate"])]


def validate_deployment_spec(spec: Any, path: str = "spec") -> list[FieldError]:
    sp = as_dict(spec)
    errs = validate_nonnegative(sp.get("replicas"), child(path, "replicas"))
    errs.extend(_validate_selector_and_template(sp, path))
    errs.extend(validate_deployment_strategy(sp.get("strategy"), child(path, "strategy")))
    min_ready = sp.get("minReadySeconds")
    errs.extend(validate_nonnegative(min_ready, child(path, "minReadySeconds")))
    if sp.get("revisionHistoryLimit") is not None:
        errs.extend(validate_nonnegative(sp["revisionHistoryLimit"], child(path, "revisionHistoryLimit")))
    deadline = sp.get("progressDeadlineSeconds")
    if isinstance(deadline, int) and not isinstance(deadline, bool):
        errs.extend(validate_nonnegative(deadline, child(path, "progressDeadlineSeconds")))
        if deadline <= (min_ready if isinstance(min_ready, int) else 0):
            errs.append(field.invalid(child(path, "progressDeadlineSeconds"), deadline,
                                      "must be greater than minReadySeconds"))
    return errs


def validate_deployment_create(obj: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)
    errs.extend(validate_deployment_spec(obj.get("spec")))
    return errs


def _selector_immutable(new: Obj, old: Obj) -> list[FieldError]:
    return validate_immutable(as_dict(new.get("spec")).get("selector"), as_dict(old.get("spec")).get("selector"),
                              "spec.selector")


def validate_deployment_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_deployment_spec(new.get("spec")))
    errs.extend(_selector_immutable(new, old))
    return errs


def _count(status: Obj, name: str) -> int:
    value = status.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _not_above(status: Obj, name: str, limit: str, message: str) -> list[FieldError]:
    if _count(status, name) > _count(status, limit):
        return [field.invalid(child("status", name), _count(status, name), message)]
    return []


def validate_deployment_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    status = as_dict(new.get("status"))
    errs.extend(validate_status_counters(status, ("observedGeneration", "replicas", "updatedReplicas",
                                                  "readyReplicas", "availableReplicas", "unavailableReplicas")))
    errs.extend(_not_above(status, "updatedReplicas", "replicas", GREATER_THAN_REPLICAS))
    errs.extend(_not_above(status, "readyReplicas", "replicas", GREATER_THAN_REPLICAS))
    errs.extend(_not_above(status, "availableReplicas", "replicas", GREATER_THAN_REPLICAS))
    errs.extend(_not_above(status, "availableReplicas", "readyReplicas", GREATER_THAN_READY))
    errs.extend(validate_collision_count_update(status, as_dict(old.get("status"))))
    return errs


# -- ReplicaSet ---------------------------------------------------------------------------------

def validate_replica_set_spec(spec: Any, path: str = "spec") -> list[FieldError]:
    sp = as_dict(spec)
    errs = validate_nonnegative(sp.get("replicas"), child(path, "replicas"))
    errs.extend(validate_nonnegative(sp.get("minReadySeconds"), child(path, "minReadySeconds")))
    errs.extend(_validate_selector_and_template(sp, path))
    return errs


def validate_replica_set_create(obj: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)
    errs.extend(validate_replica_set_spec(obj.get("spec")))
    return errs


def validate_replica_set_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_replica_set_spec(new.get("spec")))
    errs.extend(_selector_immutable(new, old))
    return errs


def validate_replica_set_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    status = as_dict(new.get("status"))
    errs.extend(validate_status_counters(status, ("replicas", "fullyLabeledReplicas", "readyReplicas",
                                                  "availableReplicas", "observedGeneration")))
    errs.extend(_not_above(status, "fullyLabeledReplicas", "replicas", GREATER_THAN_REPLICAS))
    errs.extend(_not_above(status, "readyReplicas", "replicas", GREATER_THAN_REPLICAS))
    errs.extend(_not_above(status, "availableReplicas", "replicas", GREATER_THAN_REPLICAS))
    errs.extend(_not_above(status, "availableReplicas", "readyReplicas", GREATER_THAN_READY))
    return errs


# -- autoscaling/v1 Scale -----------------------------------------------------------------------

def validate_scale(scale: Obj) -> list[FieldError]:
    """``ValidateScale``: object meta and a non-negative ``spec.replicas``."""
    errs = validate_object_meta(scale.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)
    replicas = as_dict(scale.get("spec")).get("replicas")
    if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas < 0:
        errs.append(field.invalid("spec.replicas", replicas, IS_NEGATIVE_ERROR_MSG))
    return errs
