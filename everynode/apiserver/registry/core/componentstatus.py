"""ComponentStatuses (deprecated in 1.19, still served): a read-only answer computed per request.

Upstream (``pkg/registry/core/componentstatus/rest.go``) stores nothing: ``get``/``list`` probe
the scheduler, the controller manager and each etcd server and answer one object per component
with a ``Healthy`` condition.  everynode's scheduler and controllers run in the API server's
process and there is no etcd (the store is SQLite or memory), so the answer lists the two
components with ``Healthy: True`` and message ``ok``, as upstream's probe of a healthy
component reports it, and no ``etcd-N``.  Every request also carries the deprecation warning
(``api/builtin_kinds.DEPRECATED``).
"""

from __future__ import annotations

from typing import Any

from everynode.api import errors
from everynode.apiserver.registry.generic import ResourceStore

Obj = dict[str, Any]

COMPONENTS = ("scheduler", "controller-manager")


def _component(name: str) -> Obj:
    return {"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name},
            "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]}


class ComponentStatusStore(ResourceStore):
    async def get(self, namespace: str, name: str, *, subresource: str | None = None) -> Obj:
        if subresource is not None:
            raise errors.path_not_found()
        if name not in COMPONENTS:
            raise errors.not_found(self.rt.plural, self.rt.group, name)
        return _component(name)

    async def list(self, namespace: str | None, **_: Any) -> Obj:
        return {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {},
                "items": [_component(name) for name in COMPONENTS]}
