"""ServiceAccounts: the strategy flags, and the ``token`` subresource (TokenRequest) —
upstream's ``pkg/registry/core/serviceaccount/storage/{storage.go,token.go}``.

Why a storage of its own: ``POST serviceaccounts/NAME/token`` answers with the TokenRequest it
was sent plus ``status`` (the signed token and its expiry), not with the ``Status Success`` of
the other creatable subresources.  Nothing is stored: a token is a signature, and it stops
working when its service account (or the pod or secret it is bound to) is deleted, because
authentication looks them up (``apiserver/serviceaccount_tokens.py``).
"""

from __future__ import annotations

from typing import Any

from everynode.api import errors
from everynode.api import field_errors as fielderr
from everynode.api.registry import ResourceType
from everynode.apiserver.registry.context import ServerContext
from everynode.apiserver.registry.generic import ResourceStore
from everynode.apiserver.registry.options import RequestOptions
from everynode.apiserver.registry.strategy import Strategy
from everynode.apiserver.serviceaccount_tokens import (
    BOUND_KINDS,
    DEFAULT_EXPIRATION_SECONDS,
    MAX_EXPIRATION_SECONDS,
    MIN_EXPIRATION_SECONDS,
    BoundObject,
)

Obj = dict[str, Any]


def validate_token_request(spec: Obj) -> list[fielderr.FieldError]:
    """``ValidateTokenRequest``: the requested lifetime lies within 10 minutes and 2^32 s."""
    seconds = spec.get("expirationSeconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        return [fielderr.invalid("spec.expirationSeconds", seconds, "must be an integer")]
    errs: list[fielderr.FieldError] = []
    if seconds < MIN_EXPIRATION_SECONDS:
        errs.append(fielderr.invalid("spec.expirationSeconds", seconds,
                                     "may not specify a duration less than 10 minutes"))
    if seconds > MAX_EXPIRATION_SECONDS:
        errs.append(fielderr.invalid("spec.expirationSeconds", seconds,
                                     "may not specify a duration larger than 2^32 seconds"))
    return errs


class ServiceAccountStore(ResourceStore):
    def __init__(self, rt: ResourceType, ctx: ServerContext) -> None:
        super().__init__(rt, ctx, Strategy(allow_create_on_update=True, return_deleted_object=True))

    async def create_subresource(self, namespace: str, name: str, subresource: str, body: Obj, *,
                                 opts: RequestOptions) -> tuple[int, Obj]:
        if subresource != "token":
            return await super().create_subresource(namespace, name, subresource, body, opts=opts)
        await self.ctx.ready()
        self.check_subresource(subresource, "create")
        if not isinstance(body, dict):
            raise errors.bad_request("the object provided is unrecognized")
        return 201, self._token_request(namespace, name, body)

    def _token_request(self, namespace: str, name: str, request: Obj) -> Obj:
        ctx = self.ctx
        issuer = ctx.tokens
        sa = ctx.store.get("serviceaccounts", namespace, name)
        if sa is None:
            raise errors.not_found("serviceaccounts", "", name)
        out: Obj = {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                    "metadata": dict(request.get("metadata") or {})}
        out["metadata"].setdefault("name", name)
        out["metadata"].setdefault("namespace", namespace)
        out["metadata"].setdefault("creationTimestamp", None)
        spec = dict(request.get("spec") or {})
        if spec.get("expirationSeconds") is None:
            spec["expirationSeconds"] = DEFAULT_EXPIRATION_SECONDS
        if not spec.get("audiences"):
            spec["audiences"] = list(issuer.audiences)
        errs = validate_token_request(spec)
        if errs:
            raise errors.invalid("TokenRequest", "authentication.k8s.io", "", errs)
        bound = self._bound_object(namespace, name, spec.get("boundObjectRef"))
        now = int(ctx.clock.now())
        claims = issuer.claims(sa, audiences=spec["audiences"], now=now,
                               expiration_seconds=int(spec["expirationSeconds"]), bound=bound)
        spec.setdefault("boundObjectRef", None)
        out["spec"] = spec
        out["status"] = {"token": issuer.sign(claims), "expirationTimestamp": ctx.clock.rfc3339(claims["exp"])}
        return out

    def _bound_object(self, namespace: str, name: str, ref: Any) -> BoundObject | None:
        """The object a token is bound to, checked as ``token.go`` checks it."""
        if not isinstance(ref, dict):
            return None
        kind = ref.get("kind") or ""
        api_version = ref.get("apiVersion") or ""
        resource = BOUND_KINDS.get(kind) if api_version in ("v1", "") else None
        if resource is None:
            group, _, version = api_version.rpartition("/")
            raise errors.bad_request(f'cannot bind token for serviceaccount "{name}" to object of type '
                                     f"{group}/{version}, Kind={kind}")
        obj_name = ref.get("name") or ""
        obj = self.ctx.store.get(resource, "" if kind == "Node" else namespace, obj_name)
        if obj is None:
            raise errors.not_found(resource, "", obj_name)
        uid = obj["metadata"].get("uid") or ""
        if ref.get("uid") and ref["uid"] != uid:
            raise errors.conflict(kind, "", obj_name,
                                  f"the UID in the bound object reference ({ref['uid']}) does not match the UID "
                                  "in record. The object might have been deleted and then recreated")
        node_name = node_uid = ""
        if kind == "Pod":
            node_name = (obj.get("spec") or {}).get("nodeName") or ""
            node = self.ctx.store.get("nodes", "", node_name) if node_name else None
            node_uid = node["metadata"].get("uid") or "" if node is not None else ""
        return BoundObject(kind, obj_name, uid, node_name, node_uid)
