"""The Endpoints controller: one ``Endpoints`` object per Service with a selector, listing the
addresses of the pods the selector matches.

Upstream: ``pkg/controller/endpoint/endpoints_controller.go`` (``syncService``,
``checkLeftoverEndpoints``), with the shared rules of ``k8s.io/endpointslice/util`` and
``pkg/api/v1/endpoints`` living in :mod:`everynode.controllers.servicepods`.

Per Service key (``namespace/name``):

* Service gone → delete the Endpoints of the same name (404 ignored).
* ExternalName or no selector → leave the Endpoints alone (they are the user's).
* Otherwise build the subsets from the cached pods (ready → ``addresses``, not ready →
  ``notReadyAddresses`` unless ``publishNotReadyAddresses``; pods without IP, terminal or
  terminating pods left out), repacked into one subset per distinct port set, capped at 1000
  addresses (``endpoints.kubernetes.io/over-capacity: truncated``).
* Compare with the cached Endpoints, ignoring ``targetRef.resourceVersion`` and the labels the
  controller adds itself; when nothing changed, write nothing.  Otherwise create or update
  (a compare-and-swap on the cached resourceVersion; a conflict is retried), with the Service's
  labels plus ``service.kubernetes.io/headless`` for headless Services and — as kube 1.33 does —
  ``endpoints.kubernetes.io/managed-by: endpoint-controller``, and the
  ``endpoints.kubernetes.io/last-change-trigger-time`` annotation.

On start every Endpoints object labelled as this controller's is queued once, so objects whose
Service was deleted while the controller was down are removed (upstream queues all of them; the
label keeps hand-made Endpoints of selector-less Services out of it).
"""

from __future__ import annotations

import logging
from typing import Any

from everynode.api.errors import ApiError
from everynode.api.meta import deep_copy, key_of, split_key
from everynode.client.base import Client
from everynode.client.events import EventRecorder
from everynode.client.informer import Informer, SharedInformerFactory
from everynode.client.workqueue import RateLimiter
from everynode.clock import Clock
from everynode.controllers.servicepods import (
    FIELD_MANAGER,
    HEADLESS_LABEL,
    LAST_CHANGE_TRIGGER_TIME,
    OVER_CAPACITY,
    ServicePodsController,
    build_subsets,
    is_service_ip_set,
    namespace_terminating,
    service_selector,
    subsets_equal,
    truncate_subsets,
)

log = logging.getLogger(__name__)

Obj = dict[str, Any]

CONTROLLER_NAME = "endpoint-controller"
MANAGED_BY_LABEL = "endpoints.kubernetes.io/managed-by"
MAX_CAPACITY = 1000
TRUNCATED = "truncated"
LEADER_ELECTION_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"
_CONTROLLER_LABELS = (HEADLESS_LABEL, MANAGED_BY_LABEL)


def _capacity_annotation_ok(annotations: dict[str, str] | None, subsets: list[Obj] | None) -> bool:
    """``capacityAnnotationSetCorrectly``."""
    count = sum(len(s.get("addresses") or ()) + len(s.get("notReadyAddresses") or ()) for s in subsets or ())
    if count > MAX_CAPACITY:
        return False
    return OVER_CAPACITY not in (annotations or {})


class EndpointsController(ServicePodsController):
    queue_name = "endpoint"

    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock, workers: int = 2,
                 recorder: EventRecorder | None = None, rate_limiter: RateLimiter | None = None) -> None:
        super().__init__(client, informers=informers, clock=clock, workers=workers, rate_limiter=rate_limiter)
        self.recorder = recorder
        self.endpoints_informer: Informer = self.kit.informer("endpoints")
        self.kit.watch(self.endpoints_informer, on_delete=self._endpoints_deleted)
        self.writes = 0

    def _endpoints_deleted(self, ep: Obj) -> None:
        self.queue.add(key_of(ep))

    def _on_synced(self) -> None:
        """``checkLeftoverEndpoints`` (limited to this controller's own objects)."""
        for ep in self.endpoints_informer.list():
            md = ep.get("metadata") or {}
            if LEADER_ELECTION_ANNOTATION in (md.get("annotations") or {}):
                continue
            if (md.get("labels") or {}).get(MANAGED_BY_LABEL) == CONTROLLER_NAME:
                self.queue.add(key_of(ep))

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        svc = self.service_informer.get(key)
        if svc is None:
            try:
                await self.client.delete("endpoints", name, namespace=namespace)
            except ApiError as exc:
                if exc.code != 404:
                    raise
            self.triggers.delete(key)
            return
        selector = service_selector(svc)
        if selector is None:
            return
        pods = self.selected_pods(svc, selector)
        # Computed even when nothing is written, so the tracker's state stays current.
        trigger_time = self.triggers.compute(svc, pods)
        subsets, _ready, _not_ready = build_subsets(svc, pods)

        current = self.endpoints_informer.get(key)
        svc_labels: dict[str, str] = dict(svc["metadata"].get("labels") or {})
        if current is not None:
            cur_md = current.get("metadata") or {}
            cur_labels = cur_md.get("labels") or {}
            compare = {k: v for k, v in cur_labels.items() if k not in _CONTROLLER_LABELS}
            if (subsets_equal(current.get("subsets"), subsets) and compare == svc_labels
                    and cur_labels.get(MANAGED_BY_LABEL) == CONTROLLER_NAME
                    and (HEADLESS_LABEL in cur_labels) == (not is_service_ip_set(svc))
                    and _capacity_annotation_ok(cur_md.get("annotations"), current.get("subsets"))):
                return
            new = deep_copy(current)
        else:
            new = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, "namespace": namespace}}
        md = new["metadata"]
        annotations = dict(md.get("annotations") or {})
        if trigger_time:
            annotations[LAST_CHANGE_TRIGGER_TIME] = trigger_time
        else:
            annotations.pop(LAST_CHANGE_TRIGGER_TIME, None)
        if truncate_subsets(subsets, MAX_CAPACITY):
            annotations[OVER_CAPACITY] = TRUNCATED
        else:
            annotations.pop(OVER_CAPACITY, None)
        if annotations:
            md["annotations"] = annotations
        else:
            md.pop("annotations", None)
        labels = svc_labels
        if is_service_ip_set(svc):
            labels.pop(HEADLESS_LABEL, None)
        else:
            labels[HEADLESS_LABEL] = ""
        labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
        md["labels"] = labels
        if subsets:
            new["subsets"] = subsets
        else:
            new.pop("subsets", None)

        try:
            if current is None:
                await self.client.create("endpoints", new, namespace=namespace, field_manager=FIELD_MANAGER)
            else:
                await self.client.update("endpoints", new, field_manager=FIELD_MANAGER)
            self.writes += 1
        except ApiError as exc:
            if current is None and exc.code == 403 and namespace_terminating(exc):
                return  # the namespace is going away: creates keep failing, drop the key
            if self.recorder is not None:
                if current is None:
                    self.recorder.event(new, "Warning", "FailedToCreateEndpoint",
                                        f"Failed to create endpoint for service {namespace}/{name}: {exc}")
                else:
                    self.recorder.event(new, "Warning", "FailedToUpdateEndpoint",
                                        f"Failed to update endpoint {namespace}/{name}: {exc}")
            raise


__all__ = ["CONTROLLER_NAME", "MANAGED_BY_LABEL", "MAX_CAPACITY", "EndpointsController"]
