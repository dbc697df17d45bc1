"""The four authorization.k8s.io/v1 review resources: create-only, answered, never stored.

Upstream: ``pkg/registry/authorization/*/rest.go`` — each review's REST storage implements only
``Create``, which asks the server's authorizer and returns the review with a ``status``; nothing
reaches etcd, so there is no get, list or watch (discovery lists only ``create``).  Here each is a
:class:`ResourceStore` whose create decodes the body as every create does (kind, apiVersion,
types, unknown fields) and hands it to :mod:`everynode.api.authorization_reviews` with the
requesting user (after impersonation) and the server's :class:`~everynode.apiserver.authorization.Authorizer`.
"""

from __future__ import annotations

from typing import Any

from everynode.api import authorization_reviews as reviews
from everynode.apiserver.registry.decode import decode
from everynode.apiserver.registry.generic import ResourceStore
from everynode.apiserver.registry.options import RequestOptions

Obj = dict[str, Any]

__all__ = ["ReviewStore"]


class ReviewStore(ResourceStore):
    """``POST`` of a SelfSubjectAccessReview, SubjectAccessReview, LocalSubjectAccessReview or
    SelfSubjectRulesReview (by the resource's kind)."""

    async def create_unguarded(self, namespace: str, body: Obj, *, opts: RequestOptions) -> Obj:
        rt = self.rt
        review = decode(rt, namespace if rt.namespaced else "", body, opts)
        authorizer = self.ctx.authorizer
        source, decide, user = authorizer.source(), authorizer.review_decide(), opts.requester
        if rt.kind == "SelfSubjectAccessReview":
            return reviews.answer_self_subject_access_review(review, user, source, decide=decide)
        if rt.kind == "SubjectAccessReview":
            return reviews.answer_subject_access_review(review, source, decide=decide)
        if rt.kind == "LocalSubjectAccessReview":
            return reviews.answer_local_subject_access_review(review, namespace, source, decide=decide)
        namespace_asked = str((review.get("spec") or {}).get("namespace") or "")
        return reviews.answer_self_subject_rules_review(
            review, user, source, status=authorizer.rules_review_status(user, namespace_asked))
