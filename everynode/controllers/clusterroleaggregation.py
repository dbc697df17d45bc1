"""The ClusterRole aggregation controller: a ClusterRole with an ``aggregationRule`` gets the
rules of the ClusterRoles its selectors match, kept current as they change —
upstream's ``pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go``.

Any ClusterRole added, changed or deleted queues every aggregating ClusterRole (upstream's
``enqueue``: a change to one role may change what several aggregate, and chains such as
``admin`` → ``edit`` → ``view`` converge over successive passes).  A pass computes the rules
(:func:`everynode.api.rbac_aggregation.aggregated_rules`) and, only when they differ from the
role's, server-side-applies them with field manager ``clusterrole-aggregation-controller`` and
force, as upstream does.  A selector that does not convert fails the pass, which is retried
with the queue's backoff.
"""

from __future__ import annotations

import logging
from typing import Any

from everynode.api.rbac_aggregation import FIELD_MANAGER, aggregated_rules, aggregation_selectors, rules_equal
from everynode.client.base import Client
from everynode.client.informer import SharedInformerFactory
from everynode.client.kit import ControllerKit, ControllerLifecycle
from everynode.clock import Clock

log = logging.getLogger(__name__)

Obj = dict[str, Any]

CLUSTER_ROLES = "clusterroles.rbac.authorization.k8s.io"


def _log_failure(key: Any, exc: Exception, _retried: bool) -> None:
    log.info("clusterrole aggregation: %s: %s", key, exc)


class ClusterRoleAggregationController(ControllerLifecycle):
    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock) -> None:
        self.client = client
        self.clock = clock
        self.syncs = 0
        self.kit = ControllerKit("clusterrole_aggregation", informers=informers)
        self._roles = self.kit.informer(CLUSTER_ROLES)
        self.queue = self.kit.queue()
        self.kit.watch(self._roles, on_add=self._changed, on_update=lambda _old, new: self._changed(new),
                       on_delete=self._changed)
        self.kit.workers(self.queue, self.sync, on_error=_log_failure)

    def _changed(self, _role: Obj) -> None:
        for role in self._roles.list():
            if aggregation_selectors(role) is not None:
                self.queue.add(role["metadata"]["name"])

    async def sync(self, name: str) -> None:
        """``syncClusterRole``."""
        self.syncs += 1
        role = self._roles.get(name)
        if role is None:
            return
        rules = aggregated_rules(role, self._roles.list())
        if rules is None or rules_equal(rules, role.get("rules")):
            return
        await self.client.patch(CLUSTER_ROLES, name, {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
            "rules": rules,
        }, patch_type="apply", field_manager=FIELD_MANAGER, force=True)
