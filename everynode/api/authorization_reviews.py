"""Answers to the authorization.k8s.io/v1 reviews — what ``kubectl auth can-i`` (with or without
``--as``, and ``--list``) and other components ask the API server.

Upstream: ``pkg/registry/authorization/{selfsubjectaccessreview,subjectaccessreview,
localsubjectaccessreview,selfsubjectrulesreview}/rest.go`` and
``pkg/registry/authorization/util/helpers.go`` (``ResourceAttributesFrom``,
``NonResourceAttributesFrom``, ``AuthorizationAttributesFrom``).  Each ``answer_*`` function is
the whole ``Create`` of one review resource: validate, build the authorization attributes, ask
the authorizer (:func:`everynode.api.rbac.authorize` over a :class:`~everynode.api.rbac.RuleSource`)
and return the review with its ``status``.  Reviews are never stored.

Faithful details: a refused review says ``.authorization.k8s.io "" is invalid: ...`` — upstream
names the kind from the decoded internal object, whose kind is empty; a SubjectAccessReview's
user is exactly the spec's user and groups (no ``system:authenticated`` added), while the self
reviews use the requesting user as authentication (and impersonation) left it; an empty
``resourceAttributes.version`` means every version (``*``).  A SelfSubjectRulesReview answers
with only a ``status`` (its spec is not echoed), as upstream's does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from everynode.api import errors
from everynode.api.errors import ApiError
from everynode.api.rbac import Attributes, Authorization, RuleSource, UserInfo, authorize, rules_for
from everynode.api.validation.authorization import (
    validate_local_subject_access_review,
    validate_self_subject_access_review,
    validate_subject_access_review,
)

Obj = dict[str, Any]

GROUP = "authorization.k8s.io"
API_VERSION = f"{GROUP}/v1"

__all__ = ["attributes_from_spec", "user_from_spec", "access_review_status", "rules_review_status",
           "answer_self_subject_access_review", "answer_subject_access_review",
           "answer_local_subject_access_review", "answer_self_subject_rules_review", "Decide"]


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def attributes_from_spec(user: UserInfo, spec: Mapping[str, Any]) -> Attributes:
    """``ResourceAttributesFrom`` / ``NonResourceAttributesFrom`` for a validated spec."""
    ra = spec.get("resourceAttributes")
    if ra is not None:
        r = _dict(ra)
        return Attributes.for_resource(
            user, _str(r.get("verb")), _str(r.get("resource")), api_group=_str(r.get("group")),
            api_version=_str(r.get("version")) or "*", subresource=_str(r.get("subresource")),
            name=_str(r.get("name")), namespace=_str(r.get("namespace")))
    nra = _dict(spec.get("nonResourceAttributes"))
    return Attributes.for_path(user, _str(nra.get("verb")), _str(nra.get("path")))


def user_from_spec(spec: Mapping[str, Any]) -> UserInfo:
    """The user a (Local)SubjectAccessReview asks about: exactly what the spec names."""
    groups = spec.get("groups")
    extra = _dict(spec.get("extra"))
    return UserInfo(_str(spec.get("user")),
                    tuple(g for g in groups if isinstance(g, str)) if isinstance(groups, list) else (),
                    _str(spec.get("uid")),
                    {k: tuple(v) for k, v in extra.items() if isinstance(v, list)})


def access_review_status(answer: Authorization) -> Obj:
    """``SubjectAccessReviewStatus``: ``allowed`` always, the rest only when set (omitempty)."""
    status: Obj = {"allowed": answer.allowed}
    if answer.denied:
        status["denied"] = True
    if answer.reason:
        status["reason"] = answer.reason
    if answer.evaluation_error:
        status["evaluationError"] = answer.evaluation_error
    return status


def _invalid(errs: list[Any]) -> ApiError:
    return errors.invalid("", GROUP, "", errs)


def _answered(review: Mapping[str, Any], kind: str, status: Obj) -> Obj:
    out: Obj = dict(review)
    out["apiVersion"] = API_VERSION
    out["kind"] = kind
    out.setdefault("metadata", {})
    out["status"] = status
    return out


Decide = Callable[[Attributes], Authorization]
"""An authorizer other than RBAC over ``source`` (the server's ``AlwaysAllow``)."""


def _decision(attrs: Attributes, source: RuleSource, decide: Decide | None) -> Authorization:
    return decide(attrs) if decide is not None else authorize(attrs, source)


def answer_self_subject_access_review(review: Mapping[str, Any], user: UserInfo, source: RuleSource, *,
                                      decide: Decide | None = None) -> Obj:
    """``POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`` by ``user``."""
    errs = validate_self_subject_access_review(dict(review))
    if errs:
        raise _invalid(errs)
    attrs = attributes_from_spec(user, _dict(review.get("spec")))
    return _answered(review, "SelfSubjectAccessReview", access_review_status(_decision(attrs, source, decide)))


def answer_subject_access_review(review: Mapping[str, Any], source: RuleSource, *,
                                 decide: Decide | None = None) -> Obj:
    """``POST /apis/authorization.k8s.io/v1/subjectaccessreviews``."""
    errs = validate_subject_access_review(dict(review))
    if errs:
        raise _invalid(errs)
    spec = _dict(review.get("spec"))
    attrs = attributes_from_spec(user_from_spec(spec), spec)
    return _answered(review, "SubjectAccessReview", access_review_status(_decision(attrs, source, decide)))


def answer_local_subject_access_review(review: Mapping[str, Any], namespace: str, source: RuleSource, *,
                                       decide: Decide | None = None) -> Obj:
    """``POST /apis/authorization.k8s.io/v1/namespaces/NAMESPACE/localsubjectaccessreviews``; an
    object without a namespace takes the request's, as the create handler does."""
    if not namespace:
        raise errors.bad_request(f"namespace is required on this type: {namespace}")
    meta = dict(_dict(review.get("metadata")))
    if not meta.get("namespace"):
        meta["namespace"] = namespace
    review = {**review, "metadata": meta}
    errs = validate_local_subject_access_review(review)
    if errs:
        raise _invalid(errs)
    if meta["namespace"] != namespace:
        raise errors.bad_request(f"spec.resourceAttributes.namespace must match namespace: {namespace}")
    spec = _dict(review.get("spec"))
    attrs = attributes_from_spec(user_from_spec(spec), spec)
    return _answered(review, "LocalSubjectAccessReview", access_review_status(_decision(attrs, source, decide)))


def rules_review_status(source: RuleSource, user: UserInfo, namespace: str) -> Obj:
    """``SubjectRulesReviewStatus`` from RBAC's ``RulesFor``: each rule with resources becomes a
    resource rule, each with non-resource URLs a non-resource rule (in the order visited)."""
    resolved = rules_for(source, user, namespace)
    resource_rules: list[Obj] = []
    non_resource_rules: list[Obj] = []
    for rule in resolved.rules:
        if rule.get("resources"):
            r: Obj = {"verbs": list(rule.get("verbs") or [])}
            for key in ("apiGroups", "resources", "resourceNames"):
                if rule.get(key):
                    r[key] = list(rule[key])
            resource_rules.append(r)
        if rule.get("nonResourceURLs"):
            non_resource_rules.append({"verbs": list(rule.get("verbs") or []),
                                       "nonResourceURLs": list(rule["nonResourceURLs"])})
    status: Obj = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": False}
    if resolved.evaluation_error:
        status["evaluationError"] = resolved.evaluation_error
    return status


def answer_self_subject_rules_review(review: Mapping[str, Any], user: UserInfo, source: RuleSource, *,
                                     status: Obj | None = None) -> Obj:
    """``POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews`` by ``user``
    (``kubectl auth can-i --list``); ``status`` is another authorizer's answer (AlwaysAllow's)."""
    namespace = _str(_dict(review.get("spec")).get("namespace"))
    if not namespace:
        raise errors.bad_request("no namespace on request")
    return {"kind": "SelfSubjectRulesReview", "apiVersion": API_VERSION, "metadata": {"creationTimestamp": None},
            "spec": {}, "status": status if status is not None else rules_review_status(source, user, namespace)}
