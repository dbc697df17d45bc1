"""DaemonSet and ControllerRevision validation (apps/v1).

Upstream: ``pkg/apis/apps/validation/validation.go`` (``ValidateDaemonSet``,
``ValidateDaemonSetSpec``, ``ValidateDaemonSetUpdateStrategy``, ``ValidateRollingUpdateDaemonSet``,
``validateDaemonSetStatus``, ``ValidateDaemonSetStatusUpdate``, ``ValidateControllerRevision``)
and ``pkg/registry/apps/daemonset/strategy.go`` (selector immutability on update).  Rule numbers
in comments refer to daemonset-semantics.md §2.

The internal ``spec.templateGeneration`` rules are not reproduced: apps/v1 carries that number in
an annotation the server itself maintains, so a user can never trip them.
"""

from __future__ import annotations

from typing import Any, Final

from everynode.api import field_errors as field
from everynode.api.field_errors import FieldError
from everynode.api.names import is_valid_percent, name_is_dns_subdomain
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

DAEMON_SET_STATUS_COUNTERS: Final = (
    "currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
    "observedGeneration", "updatedNumberScheduled", "numberAvailable", "numberUnavailable",
)


def _percent_value(value: Any) -> int | None:
    if isinstance(value, str) and not is_valid_percent(value):
        return int(value[:-1])
    return None


def _int_or_percent_value(value: Any) -> int:
    """``getIntOrPercentValue``: a valid percent's number, else ``IntValue()`` (Atoi, 0 on error)."""
    percent = _percent_value(value)
    if percent is not None:
        return percent
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return 0
    return 0


def _validate_positive_int_or_percent(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, str):
        return [field.invalid(path, value, msg) for msg in is_valid_percent(value)]
    if isinstance(value, int) and not isinstance(value, bool):
        return validate_nonnegative(value, path)
    return [field.invalid(path, value, "must be an integer or percentage (e.g '5%')")]


def _not_more_than_100_percent(value: Any, path: str) -> list[FieldError]:
    percent = _percent_value(value)
    if percent is None or percent <= 100:
        return []
    return [field.invalid(path, value, "must not be greater than 100%")]


def validate_rolling_update_daemon_set(rolling: Obj, path: str) -> list[FieldError]:
    max_unavailable = rolling.get("maxUnavailable")
    max_surge = rolling.get("maxSurge")
    # The internal type holds zero values where the JSON has none.
    max_unavailable = 0 if max_unavailable is None else max_unavailable
    max_surge = 0 if max_surge is None else max_surge
    unavailable_path, surge_path = child(path, "maxUnavailable"), child(path, "maxSurge")
    errs = _validate_positive_int_or_percent(max_unavailable, unavailable_path)  # rules 14, 15
    errs.extend(_validate_positive_int_or_percent(max_surge, surge_path))
    errs.extend(_not_more_than_100_percent(max_unavailable, unavailable_path))  # rule 16
    errs.extend(_not_more_than_100_percent(max_surge, surge_path))
    has_unavailable = _int_or_percent_value(max_unavailable) != 0
    has_surge = _int_or_percent_value(max_surge) != 0
    if has_unavailable and has_surge:  # rule 17
        errs.append(field.invalid(surge_path, max_surge, "may not be set when maxUnavailable is non-zero"))
    elif not has_unavailable and not has_surge:  # rule 18
        errs.append(field.required(unavailable_path, "cannot be 0 when maxSurge is 0"))
    return errs


def validate_daemon_set_update_strategy(strategy: Any, path: str) -> list[FieldError]:
    st = as_dict(strategy)
    strategy_type = as_str(st.get("type"))
    if strategy_type == "OnDelete":
        return []
    if strategy_type == "RollingUpdate":
        if st.get("rollingUpdate") is None:  # rule 13
            return [field.required(child(path, "rollingUpdate"))]
        return validate_rolling_update_daemon_set(as_dict(st["rollingUpdate"]), child(path, "rollingUpdate"))
    return [field.not_supported(path, strategy, ["RollingUpdate", "OnDelete"])]  # rule 12


def validate_daemon_set_spec(spec: Any, path: str = "spec") -> list[FieldError]:
    sp = as_dict(spec)
    errs: list[FieldError] = []
    selector = sp.get("selector")
    template = as_dict(sp.get("template"))
    template_labels = as_dict(template.get("metadata")).get("labels")
    errs.extend(validate_label_selector(selector, child(path, "selector")))  # rules 2-4
    if selector_matches(selector, template_labels) is False:  # rule 5
        errs.append(field.invalid(child(child(child(path, "template"), "metadata"), "labels"),
                                  as_dict(template_labels), "`selector` does not match template `labels`"))
    if selector is not None:
        sel = as_dict(selector)
        if not sel.get("matchLabels") and not sel.get("matchExpressions"):  # rule 6
            errs.append(field.invalid(child(path, "selector"), selector, "empty selector is invalid for daemonset"))
    errs.extend(validate_pod_template_spec(template, child(path, "template")))  # rule 7
    template_spec = as_dict(template.get("spec"))
    restart_policy = template_spec.get("restartPolicy", "")
    if restart_policy != "Always":  # rule 8
        errs.append(field.not_supported(child(path, "template.spec.restartPolicy"), restart_policy, ["Always"]))
    if template_spec.get("activeDeadlineSeconds") is not None:  # rule 9
        errs.append(field.forbidden(child(path, "template.spec.activeDeadlineSeconds"),
                                    "activeDeadlineSeconds in DaemonSet is not Supported"))
    errs.extend(validate_nonnegative(sp.get("minReadySeconds"), child(path, "minReadySeconds")))  # rule 10
    errs.extend(validate_daemon_set_update_strategy(sp.get("updateStrategy"), child(path, "updateStrategy")))
    if sp.get("revisionHistoryLimit") is not None:  # rule 19
        errs.extend(validate_nonnegative(sp["revisionHistoryLimit"], child(path, "revisionHistoryLimit")))
    return errs


def validate_daemon_set_create(ds: Obj) -> list[FieldError]:
    errs = validate_object_meta(ds.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)  # rule 1
    errs.extend(validate_daemon_set_spec(ds.get("spec")))
    return errs


def validate_daemon_set_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_daemon_set_spec(new.get("spec")))
    errs.extend(validate_immutable(as_dict(new.get("spec")).get("selector"),
                                   as_dict(old.get("spec")).get("selector"), "spec.selector"))
    return errs


def validate_daemon_set_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    status = as_dict(new.get("status"))
    errs.extend(validate_status_counters(status, DAEMON_SET_STATUS_COUNTERS))
    errs.extend(validate_collision_count_update(status, as_dict(old.get("status"))))
    return errs


def validate_collision_count_update(new_status: Obj, old_status: Obj) -> list[FieldError]:
    """``status.collisionCount`` (DaemonSets, Deployments): not negative, never decremented."""
    errs = validate_nonnegative(new_status.get("collisionCount"), "status.collisionCount")
    new_count = new_status.get("collisionCount")
    old_count = old_status.get("collisionCount")
    if isinstance(old_count, int) and (new_count is None or (isinstance(new_count, int) and new_count < old_count)):
        errs.append(field.invalid("status.collisionCount", new_count if isinstance(new_count, int) else 0,
                                  "cannot be decremented"))
    return errs


def validate_controller_revision_create(rev: Obj) -> list[FieldError]:
    errs = validate_object_meta(rev.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)
    if rev.get("data") is None:
        errs.append(field.required("data", "data is mandatory"))
    revision = rev.get("revision", 0)
    if isinstance(revision, int) and revision < 0:
        errs.append(field.invalid("revision", revision, IS_NEGATIVE_ERROR_MSG))
    return errs


def validate_controller_revision_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_controller_revision_create(new))
    errs.extend(validate_immutable(new.get("data"), old.get("data"), "data"))
    return errs
