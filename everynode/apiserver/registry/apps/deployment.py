"""Deployments: ``metadata.generation`` and the status subresource, as
``pkg/registry/apps/deployment/strategy.go`` keeps them.

Why annotations bump the generation too: the Deployment controller copies a Deployment's
annotations onto its new ReplicaSet (``kubernetes.io/change-cause`` among them), so an
annotation-only change is work for the controller, and ``observedGeneration`` must say when it
was seen — upstream bumps on spec *or* annotation changes.  The ``/status`` write keeps the spec
and the labels but takes annotations: the controller records ``deployment.kubernetes.io/revision``
through ``UpdateStatus``.  The ``scale`` subresource is :mod:`.scale`'s.
"""

from __future__ import annotations

from typing import Any

from everynode.apiserver.registry.strategy import StatusStrategy, Strategy, keep

Obj = dict[str, Any]


class DeploymentStrategy(Strategy):
    def __init__(self) -> None:
        super().__init__(keeps_status=True, subresources={"status": DeploymentStatusStrategy()})

    def prepare_for_create(self, obj: Obj) -> None:
        obj["metadata"]["generation"] = 1
        obj["status"] = {}  # apps.DeploymentStatus{}: every field omitempty

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        keep(new, old, "status")
        md = new["metadata"]
        if new.get("spec") != old.get("spec") or \
                (md.get("annotations") or {}) != (old["metadata"].get("annotations") or {}):
            md["generation"] = int(old["metadata"].get("generation") or 0) + 1


class DeploymentStatusStrategy(StatusStrategy):
    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        keep(new["metadata"], old["metadata"], "labels")
