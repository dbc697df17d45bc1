"""Validation of the RBAC kinds: Role, ClusterRole, RoleBinding, ClusterRoleBinding.

Upstream: ``pkg/apis/rbac/validation/validation.go`` (``ValidateRole[Update]``,
``ValidateClusterRole[Update]`` with ``ClusterRoleValidationOptions``, ``ValidatePolicyRule``,
``ValidateRoleBinding[Update]``, ``ValidateClusterRoleBinding[Update]``,
``ValidateRoleBindingSubject``) and ``pkg/registry/rbac/clusterrole/strategy.go`` (an update
may keep label values in an aggregation selector that were accepted before validation got
stricter).  Names of roles and bindings only have to be one URL path segment (``ValidateRBACName``
= ``IsValidPathSegmentName``), as upstream allows ``system:``-style names.

Binding defaults (``roleRef.apiGroup``, User/Group ``apiGroup``) are applied before validating,
as upstream's decoding does; see :func:`everynode.api.rbac.default_binding`.
"""

from __future__ import annotations

from typing import Any

from everynode.api import field_errors as field
from everynode.api.field_errors import FieldError
from everynode.api.names import is_valid_label_value, name_is_dns_subdomain, name_is_path_segment
from everynode.api.rbac import GROUP_KIND, GROUP_NAME, SERVICE_ACCOUNT_KIND, USER_KIND
from everynode.api.selectors import SelectorError, label_selector_from_dict
from everynode.api.validation.meta import (
    as_dict,
    as_list,
    as_str,
    child,
    dicts,
    index,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)

Obj = dict[str, Any]

__all__ = [
    "validate_rbac_name", "validate_policy_rule", "validate_role_binding_subject",
    "validate_role_create", "validate_role_update", "validate_cluster_role_create",
    "validate_cluster_role_update", "validate_role_binding_create", "validate_role_binding_update",
    "validate_cluster_role_binding_create", "validate_cluster_role_binding_update",
]


def validate_rbac_name(name: str, prefix: bool = False) -> list[str]:
    """``ValidateRBACName``: a role or binding name only has to be one path segment (prefix or
    not: upstream checks a generateName prefix the same way)."""
    return name_is_path_segment(name, False)


def _strings(value: Any) -> list[str]:
    return [v for v in as_list(value) if isinstance(v, str)]


def validate_policy_rule(rule: Obj, *, namespaced: bool, path: str) -> list[FieldError]:
    """``ValidatePolicyRule``: verbs always; either non-resource URLs (cluster roles only, and
    nothing else) or API groups and resources."""
    errs: list[FieldError] = []
    if not as_list(rule.get("verbs")):
        errs.append(field.required(child(path, "verbs"), "verbs must contain at least one value"))
    urls = _strings(rule.get("nonResourceURLs"))
    if as_list(rule.get("nonResourceURLs")):
        if namespaced:
            errs.append(field.invalid(child(path, "nonResourceURLs"), urls,
                                      "namespaced rules cannot apply to non-resource URLs"))
        if as_list(rule.get("apiGroups")) or as_list(rule.get("resources")) or as_list(rule.get("resourceNames")):
            errs.append(field.invalid(child(path, "nonResourceURLs"), urls,
                                      "rules cannot apply to both regular resources and non-resource URLs"))
        return errs
    if not as_list(rule.get("apiGroups")):
        errs.append(field.required(child(path, "apiGroups"), "resource rules must supply at least one api group"))
    if not as_list(rule.get("resources")):
        errs.append(field.required(child(path, "resources"), "resource rules must supply at least one resource"))
    return errs


def _validate_rules(obj: Obj, *, namespaced: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in dicts(obj.get("rules")):
        errs.extend(validate_policy_rule(rule, namespaced=namespaced, path=index("rules", i)))
    return errs


# --- Role / ClusterRole -------------------------------------------------------------------------

def validate_role_create(role: Obj) -> list[FieldError]:
    errs = validate_object_meta(role.get("metadata"), namespaced=True, name_fn=validate_rbac_name)
    return errs + _validate_rules(role, namespaced=True)


def validate_role_update(new: Obj, old: Obj) -> list[FieldError]:
    return validate_role_create(new) + validate_object_meta_update(new.get("metadata"), old.get("metadata"))


def _has_invalid_label_value_in_selectors(cluster_role: Obj) -> bool:
    """The strategy's ``hasInvalidLabelValueInLabelSelector`` over the aggregation selectors."""
    for _, selector in dicts(as_dict(cluster_role.get("aggregationRule")).get("clusterRoleSelectors")):
        for _, req in dicts(selector.get("matchExpressions")):
            if any(is_valid_label_value(v) for v in _strings(req.get("values"))):
                return True
    return False


def _is_selector_value_error(error: FieldError) -> bool:
    return ".matchExpressions[" in error.field and ".values[" in error.field


def validate_cluster_role_create(role: Obj, *, allow_invalid_label_value_in_selector: bool = False
                                 ) -> list[FieldError]:
    errs = validate_object_meta(role.get("metadata"), namespaced=False, name_fn=validate_rbac_name)
    errs += _validate_rules(role, namespaced=False)
    aggregation = role.get("aggregationRule")
    if aggregation is None:
        return errs
    selectors_path = "aggregationRule.clusterRoleSelectors"
    if not as_list(as_dict(aggregation).get("clusterRoleSelectors")):
        errs.append(field.required(selectors_path,
                                   "at least one clusterRoleSelector required if aggregationRule is non-nil"))
    for i, selector in dicts(as_dict(aggregation).get("clusterRoleSelectors")):
        path = index(selectors_path, i)
        selector_errs = validate_label_selector(selector, path)
        if allow_invalid_label_value_in_selector:
            selector_errs = [e for e in selector_errs if not _is_selector_value_error(e)]
        errs.extend(selector_errs)
        try:
            label_selector_from_dict(selector)
        except SelectorError:
            errs.append(field.invalid(path, selector, "invalid label selector."))
    return errs


def validate_cluster_role_update(new: Obj, old: Obj) -> list[FieldError]:
    """``ValidateClusterRoleUpdate`` with the options the strategy derives from the old role."""
    errs = validate_cluster_role_create(
        new, allow_invalid_label_value_in_selector=_has_invalid_label_value_in_selectors(old))
    return errs + validate_object_meta_update(new.get("metadata"), old.get("metadata"))


# --- RoleBinding / ClusterRoleBinding ------------------------------------------------------------

def validate_role_binding_subject(subject: Obj, *, namespaced: bool, path: str) -> list[FieldError]:
    """``ValidateRoleBindingSubject``."""
    errs: list[FieldError] = []
    name = as_str(subject.get("name"))
    api_group = as_str(subject.get("apiGroup"))
    kind = as_str(subject.get("kind"))
    if not name:
        errs.append(field.required(child(path, "name")))
    if kind == SERVICE_ACCOUNT_KIND:
        if name:
            errs.extend(field.invalid(child(path, "name"), name, msg) for msg in name_is_dns_subdomain(name))
        if api_group:
            errs.append(field.not_supported(child(path, "apiGroup"), api_group, [""]))
        if not namespaced and not as_str(subject.get("namespace")):
            errs.append(field.required(child(path, "namespace")))
    elif kind in (USER_KIND, GROUP_KIND):
        if api_group != GROUP_NAME:
            errs.append(field.not_supported(child(path, "apiGroup"), api_group, [GROUP_NAME]))
    else:
        errs.append(field.not_supported(child(path, "kind"), kind,
                                        [SERVICE_ACCOUNT_KIND, USER_KIND, GROUP_KIND]))
    return errs


def _validate_binding(binding: Obj, *, namespaced: bool) -> list[FieldError]:
    errs = validate_object_meta(binding.get("metadata"), namespaced=namespaced, name_fn=validate_rbac_name)
    ref = as_dict(binding.get("roleRef"))
    api_group = as_str(ref.get("apiGroup"))
    if api_group != GROUP_NAME:
        errs.append(field.not_supported("roleRef.apiGroup", api_group, [GROUP_NAME]))
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    kind = as_str(ref.get("kind"))
    if kind not in kinds:
        errs.append(field.not_supported("roleRef.kind", kind, kinds))
    name = as_str(ref.get("name"))
    if not name:
        errs.append(field.required("roleRef.name"))
    else:
        errs.extend(field.invalid("roleRef.name", name, msg) for msg in validate_rbac_name(name))
    for i, subject in dicts(binding.get("subjects")):
        errs.extend(validate_role_binding_subject(subject, namespaced=namespaced, path=index("subjects", i)))
    return errs


def _role_ref_key(binding: Obj) -> tuple[str, str, str]:
    ref = as_dict(binding.get("roleRef"))
    return as_str(ref.get("apiGroup")), as_str(ref.get("kind")), as_str(ref.get("name"))


def _validate_binding_update(new: Obj, old: Obj, *, namespaced: bool) -> list[FieldError]:
    errs = _validate_binding(new, namespaced=namespaced)
    errs += validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    if _role_ref_key(new) != _role_ref_key(old):
        errs.append(field.invalid("roleRef", as_dict(new.get("roleRef")), "cannot change roleRef"))
    return errs


def validate_role_binding_create(binding: Obj) -> list[FieldError]:
    return _validate_binding(binding, namespaced=True)


def validate_role_binding_update(new: Obj, old: Obj) -> list[FieldError]:
    return _validate_binding_update(new, old, namespaced=True)


def validate_cluster_role_binding_create(binding: Obj) -> list[FieldError]:
    return _validate_binding(binding, namespaced=False)


def validate_cluster_role_binding_update(new: Obj, old: Obj) -> list[FieldError]:
    return _validate_binding_update(new, old, namespaced=False)
