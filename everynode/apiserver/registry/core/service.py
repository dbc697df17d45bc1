"""Services: a ClusterIP allocated on create, carried over updates that omit it, changed with
the type (ExternalName ↔ the rest) and given back on delete — ``pkg/registry/core/service/
strategy.go`` and ``storage/storage.go`` over the allocator of ``apiserver/clusterip.py``.

Why through the store's begin/after hooks: the address is held outside storage, so it is taken
right before the write and given back if the write fails (upstream's ``BeginCreate`` finish),
released only once an update that drops it is stored (``BeginUpdate``), and released when the
Service is gone from storage (``AfterDelete``).  Dry runs check the range but take nothing.
"""

from __future__ import annotations

from typing import Any

from everynode.apiserver.clusterip import (
    ClusterIPAllocator,
    assign_cluster_ip,
    carry_cluster_ip,
    release_cluster_ip,
    update_cluster_ip,
)
from everynode.apiserver.registry.strategy import Finish, Strategy, keep

Obj = dict[str, Any]


class ServiceStrategy(Strategy):
    def __init__(self, cluster_ips: ClusterIPAllocator) -> None:
        super().__init__(allow_create_on_update=True, return_deleted_object=True, keeps_status=True)
        self.cluster_ips = cluster_ips

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"loadBalancer": {}}

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        carry_cluster_ip(new, old)
        keep(new, old, "status")

    def begin_create(self, obj: Obj, *, dry_run: bool) -> Finish | None:
        assign_cluster_ip(self.cluster_ips, obj, dry_run=dry_run)
        if dry_run:
            return None

        def finish(success: bool) -> None:
            if not success:
                release_cluster_ip(self.cluster_ips, obj)

        return finish

    def begin_update(self, new: Obj, old: Obj, *, dry_run: bool) -> Finish | None:
        release = update_cluster_ip(self.cluster_ips, new, old, dry_run=dry_run)
        if not release:
            return None

        def finish(success: bool) -> None:
            if success:
                for ip in release:
                    self.cluster_ips.release(ip)

        return finish

    def after_delete(self, obj: Obj) -> None:
        release_cluster_ip(self.cluster_ips, obj)


def cluster_ips_of(svc: Obj) -> list[str]:
    """The addresses a stored Service holds (``spec.clusterIPs``, else ``spec.clusterIP``)."""
    spec = svc.get("spec") or {}
    return list(spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else []))
