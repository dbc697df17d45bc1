"""authentication.k8s.io/v1 TokenReview and SelfSubjectReview: create-only, answered, never stored.

Upstream: ``pkg/registry/authentication/tokenreview/storage.go`` (who a token is, for the
audiences asked — a webhook authenticator or node-exporter's kube-rbac-proxy asks this) and
``pkg/registry/authentication/selfsubjectreview/rest.go`` (``kubectl auth whoami``: who the
request itself is, after impersonation).  TokenReview authenticates service-account tokens (the
admin's static token is not reviewable: it is no API identity of its own here); a token that
does not authenticate answers ``authenticated: false`` with the reason in ``status.error``.
"""

from __future__ import annotations

from typing import Any

from everynode.api import errors
from everynode.api.rbac import UserInfo
from everynode.apiserver.registry.decode import decode
from everynode.apiserver.registry.generic import ResourceStore
from everynode.apiserver.registry.options import RequestOptions
from everynode.apiserver.serviceaccount_tokens import InvalidToken

Obj = dict[str, Any]

__all__ = ["AuthenticationReviewStore", "user_info"]


def user_info(user: UserInfo) -> Obj:
    """``authentication/v1.UserInfo`` of a user (empty fields left out, as Go's omitempty)."""
    info: Obj = {"username": user.name}
    if user.uid:
        info["uid"] = user.uid
    if user.groups:
        info["groups"] = list(user.groups)
    if user.extra:
        info["extra"] = {k: list(v) for k, v in user.extra.items()}
    return info


class AuthenticationReviewStore(ResourceStore):
    """``POST`` of a TokenReview or a SelfSubjectReview (by the resource's kind)."""

    async def create_unguarded(self, namespace: str, body: Obj, *, opts: RequestOptions) -> Obj:
        rt = self.rt
        review = decode(rt, "", body, opts)
        review.setdefault("metadata", {}).setdefault("creationTimestamp", None)
        if rt.kind == "SelfSubjectReview":
            review["status"] = {"userInfo": user_info(opts.requester)}
            return review
        spec: Obj = review["spec"] if isinstance(review.get("spec"), dict) else {}
        token = spec.get("token") or ""
        if not token:
            raise errors.bad_request("token is required for TokenReview in authentication")
        ctx = self.ctx
        audiences = tuple(spec.get("audiences") or ctx.tokens.audiences)
        status: Obj = {}
        try:
            user = ctx.tokens.authenticate(token, ctx.store, now=ctx.clock.now(), audiences=audiences)
        except InvalidToken as e:
            user, status["error"] = None, f"[invalid bearer token, {e}]"
        if user is not None:
            status = {"authenticated": True, "user": user_info(user), "audiences": list(audiences)}
        elif "error" not in status:
            status["error"] = "[invalid bearer token]"
        review["status"] = status
        return review
