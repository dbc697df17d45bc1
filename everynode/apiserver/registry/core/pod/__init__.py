"""Pods: the strategy (``strategy.py``), and the storage that adds the ``binding``
(``binding.py``) and ``eviction`` (``eviction.py``) subresources — upstream's
``pkg/registry/core/pod/{strategy.go,storage/storage.go,storage/eviction.go}``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from everynode.api.registry import ResourceType
from everynode.apiserver.registry.context import ServerContext
from everynode.apiserver.registry.core.pod.binding import bind
from everynode.apiserver.registry.core.pod.eviction import evict
from everynode.apiserver.registry.core.pod.strategy import PodStrategy, pod_qos_class
from everynode.apiserver.registry.generic import ResourceStore
from everynode.apiserver.registry.options import RequestOptions

Obj = dict[str, Any]

__all__ = ["PodStore", "PodStrategy", "pod_qos_class"]


class PodStore(ResourceStore):
    """``budgets``: the PodDisruptionBudgets' storage the eviction subresource consults."""

    def __init__(self, rt: ResourceType, ctx: ServerContext, *, budgets: ResourceStore | None = None) -> None:
        super().__init__(rt, ctx, PodStrategy())
        self.budgets = budgets
        # (the compiled ``bind`` itself, its first two arguments bound: a method awaiting it
        # here was an interpreted coroutine frame around every binding)
        self.creators = {"binding": partial(bind, ctx, rt), "eviction": self._evict}

    async def _evict(self, namespace: str, name: str, body: Obj, opts: RequestOptions) -> None:
        await evict(self, namespace, name, body, opts, budgets=self.budgets)
