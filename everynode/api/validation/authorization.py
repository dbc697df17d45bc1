"""Validation of the authorization.k8s.io/v1 review kinds (the questions ``kubectl auth can-i`` asks).

Upstream: ``pkg/apis/authorization/validation/validation.go`` as of 1.31–1.33
(``ValidateSubjectAccessReview``, ``ValidateSelfSubjectAccessReview``,
``ValidateLocalSubjectAccessReview``, their spec rules).  Not checked: the field- and
label-selector attributes of ``resourceAttributes`` (1.31+), which the RBAC decision ignores.
Reviews are never stored, so ``metadata`` must be empty — what kubectl sends
(``creationTimestamp: null``) counts as empty, as Go's zero ``ObjectMeta`` does.
"""

from __future__ import annotations

from typing import Any

from everynode.api import field_errors as field
from everynode.api.field_errors import FieldError
from everynode.api.validation.meta import as_dict, as_list, as_str

Obj = dict[str, Any]

__all__ = ["validate_subject_access_review", "validate_self_subject_access_review",
           "validate_local_subject_access_review"]


def _attributes_errors(spec: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    has_resource = spec.get("resourceAttributes") is not None
    has_non_resource = spec.get("nonResourceAttributes") is not None
    if has_resource and has_non_resource:
        errs.append(field.invalid("spec.nonResourceAttributes", spec.get("nonResourceAttributes"),
                                  "cannot be specified in combination with resourceAttributes"))
    if not has_resource and not has_non_resource:
        errs.append(field.invalid("spec.resourceAttributes", None,
                                  "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
    return errs


def _is_empty_meta(meta: Any, *, ignore: tuple[str, ...] = ()) -> bool:
    return not any(v for k, v in as_dict(meta).items() if k not in ignore)


def validate_self_subject_access_review(review: Obj) -> list[FieldError]:
    errs = _attributes_errors(as_dict(review.get("spec")))
    if not _is_empty_meta(review.get("metadata")):
        errs.append(field.invalid("metadata", as_dict(review.get("metadata")), "must be empty"))
    return errs


def _subject_errors(spec: Obj) -> list[FieldError]:
    if not as_str(spec.get("user")) and not as_list(spec.get("groups")):
        return [field.invalid("spec.user", as_str(spec.get("user")), "at least one of user or group must be specified")]
    return []


def validate_subject_access_review(review: Obj) -> list[FieldError]:
    spec = as_dict(review.get("spec"))
    errs = _attributes_errors(spec) + _subject_errors(spec)
    if not _is_empty_meta(review.get("metadata")):
        errs.append(field.invalid("metadata", as_dict(review.get("metadata")), "must be empty"))
    return errs


def validate_local_subject_access_review(review: Obj) -> list[FieldError]:
    """A SubjectAccessReview confined to the namespace it is posted to."""
    spec = as_dict(review.get("spec"))
    meta = as_dict(review.get("metadata"))
    errs = _attributes_errors(spec) + _subject_errors(spec)
    if not _is_empty_meta(meta, ignore=("namespace",)):
        errs.append(field.invalid("metadata", meta, "must be empty except for namespace"))
    resource_attributes = spec.get("resourceAttributes")
    if resource_attributes is not None:
        ns = as_str(as_dict(resource_attributes).get("namespace"))
        if ns != as_str(meta.get("namespace")):
            errs.append(field.invalid("spec.resourceAttributes.namespace", ns, "must match metadata.namespace"))
    if spec.get("nonResourceAttributes") is not None:
        errs.append(field.invalid("spec.nonResourceAttributes", spec.get("nonResourceAttributes"),
                                  "disallowed on this kind of request"))
    return errs
