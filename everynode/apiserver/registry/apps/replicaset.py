"""ReplicaSets: ``metadata.generation`` on spec changes and the status subresource, as
``pkg/registry/apps/replicaset/strategy.go`` keeps them.

A new ReplicaSet's status is ``{"replicas": 0}`` (``ReplicaSetStatus.replicas`` is the one field
Go writes even when zero); a main-resource write keeps the stored status and a ``/status`` write
the stored spec.  The ``scale`` subresource is :mod:`.scale`'s.
"""

from __future__ import annotations

from typing import Any

from everynode.apiserver.registry.strategy import Strategy, bump_generation_on_spec_change, keep

Obj = dict[str, Any]


class ReplicaSetStrategy(Strategy):
    def __init__(self) -> None:
        super().__init__(keeps_status=True)

    def prepare_for_create(self, obj: Obj) -> None:
        obj["metadata"]["generation"] = 1
        obj["status"] = {"replicas": 0}

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        keep(new, old, "status")
        bump_generation_on_spec_change(new, old)
