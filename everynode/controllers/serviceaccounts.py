"""The ServiceAccount controller: a ``default`` ServiceAccount in every namespace, recreated
when deleted — upstream's ``pkg/controller/serviceaccount/serviceaccounts_controller.go``
(``DefaultServiceAccountsControllerOptions``: the one account ``default``).

An existing ``default`` is never changed (upstream only creates).  The loop is
:class:`~everynode.controllers.pernamespace.PerNamespaceObjectController`'s.
"""

from __future__ import annotations

from typing import Any

from everynode.controllers.pernamespace import PerNamespaceObjectController

Obj = dict[str, Any]

DEFAULT_SERVICE_ACCOUNT = "default"


class ServiceAccountsController(PerNamespaceObjectController):
    resource = "serviceaccounts"
    name = DEFAULT_SERVICE_ACCOUNT
    queue_name = "serviceaccount"

    def desired(self, namespace: str) -> Obj:
        return {"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace}}
