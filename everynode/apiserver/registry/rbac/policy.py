"""The policy-based storages of Role, ClusterRole, RoleBinding and ClusterRoleBinding:
upstream's ``pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased``.

Why a storage wrapper, as upstream: the escalation check needs who asks (the requester the HTTP
layer authenticated, or impersonated) and the policy in force, which no strategy sees.  Under
``--authorization rbac`` a create or update of one of the four kinds is refused with upstream's
403 when it would grant rules the requester does not hold and it may not ``escalate`` (roles)
or ``bind`` (bindings) — the decision is :mod:`everynode.api.rbac_escalation`'s.  It runs on the
decoded, defaulted object before validation, as the policy-based storage runs before the
standard storage.  Under ``always-allow`` (kube-apiserver's AlwaysAllow has no RBAC storage
check either: its authorizer allows ``escalate`` and ``bind``) nothing is checked.  The
in-process components act as the admin (``system:masters``), so they always pass.
"""

from __future__ import annotations

from typing import Any

from everynode.api.rbac_escalation import binding_write_forbidden, role_write_forbidden
from everynode.apiserver.authorization import RBAC
from everynode.apiserver.registry.generic import Created, ResourceStore
from everynode.apiserver.registry.options import RequestOptions

Obj = dict[str, Any]

_ROLE_KINDS = ("Role", "ClusterRole")


class PolicyBasedStore(ResourceStore):
    """A store of one of the four RBAC kinds with the escalation check in front of writes."""

    def _check(self, obj: Obj, old: Obj | None, opts: RequestOptions) -> None:
        authorizer = self.ctx.authorizer
        if authorizer.mode != RBAC:
            return
        namespace = (obj.get("metadata") or {}).get("namespace") or "" if self.rt.namespaced else ""
        check = role_write_forbidden if self.rt.kind in _ROLE_KINDS else binding_write_forbidden
        refusal = check(opts.requester, obj, namespace=namespace, source=authorizer.source(),
                        authorizer=authorizer.authorize, old=old)
        if refusal is not None:
            raise refusal

    async def create_new(self, obj: Obj, opts: RequestOptions, *, managed_fields_done: bool = False,
                         on_created: Created | None = None) -> Obj:
        self._check(obj, None, opts)
        return await super().create_new(obj, opts, managed_fields_done=managed_fields_done, on_created=on_created)

    async def update_existing(self, new: Obj, old: Obj, subresource: str | None, opts: RequestOptions, *,
                              managed_fields_done: bool = False) -> Obj:
        self._check(new, old, opts)
        return await super().update_existing(new, old, subresource, opts, managed_fields_done=managed_fields_done)
