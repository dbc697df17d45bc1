"""The strategy most built-in kinds share: ``metadata.generation`` follows the spec, and a
``status`` written only through ``/status`` — kube's ``PrepareForCreate``/``PrepareForUpdate``
of ``pkg/registry/<group>/<resource>/strategy.go`` for StatefulSet, ReplicationController,
CronJob, HorizontalPodAutoscaler, Ingress, NetworkPolicy, IngressClass, PersistentVolume(Claim),
ResourceQuota, CertificateSigningRequest, FlowSchema, the admission configurations, ...

Why one parametrised class: those strategies differ only in three answers — which fields are
"the spec" (``spec``, or ``webhooks`` for the webhook configurations), whether the kind counts
generations (the kinds whose status reports ``observedGeneration``, or whose strategy sets
``Generation = 1``), and the empty status a new object starts with (the Go zero value as it
serialises: ``{"replicas": 0, "availableReplicas": 0}`` for a StatefulSet, ``{"phase":
"Pending"}`` for a claim, whose ``PrepareForCreate`` sets it).  :data:`BUILTIN_STRATEGIES`
lists the answers per kind; a kind with hooks of its own gets a module under
``registry/<group>/`` instead (``apiregistration/apiservice.py``).

The ``/status`` write keeps the spec and the metadata a status write cannot change
(``ResetObjectMetaForStatus``); a main-resource write keeps the status.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from everynode.apiserver.registry.strategy import StatusStrategy, Strategy, keep, reset_object_meta_for_status

Obj = dict[str, Any]


class ResetMetaStatusStrategy(StatusStrategy):
    """``*/status``: the stored spec, and labels/annotations/finalizers/owners kept."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        reset_object_meta_for_status(new["metadata"], old["metadata"])


class SpecStatusStrategy(Strategy):
    def __init__(self, *, empty_status: Mapping[str, Any] | None = None, generation: bool = False,
                 spec_fields: tuple[str, ...] = ("spec",)) -> None:
        has_status = empty_status is not None
        super().__init__(keeps_status=has_status,
                         subresources={"status": ResetMetaStatusStrategy()} if has_status else {})
        self.empty_status = dict(empty_status) if empty_status is not None else None
        self.generation = generation
        self.spec_fields = spec_fields

    def prepare_for_create(self, obj: Obj) -> None:
        if self.empty_status is not None:
            obj["status"] = copy.deepcopy(self.empty_status)
        if self.generation:
            obj["metadata"]["generation"] = 1

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        if self.empty_status is not None:
            keep(new, old, "status")
        if self.generation and any(new.get(f) != old.get(f) for f in self.spec_fields):
            md = new["metadata"]
            md["generation"] = int(md.get("generation") or 0) + 1


BUILTIN_STRATEGIES: dict[str, dict[str, Any]] = {
    "statefulsets.apps": {"empty_status": {"replicas": 0, "availableReplicas": 0}, "generation": True},
    "replicationcontrollers": {"empty_status": {"replicas": 0}, "generation": True},
    "cronjobs.batch": {"empty_status": {}, "generation": True},
    "horizontalpodautoscalers.autoscaling": {"empty_status": {"desiredReplicas": 0}, "generation": True},
    "persistentvolumeclaims": {"empty_status": {"phase": "Pending"}},
    "persistentvolumes": {"empty_status": {"phase": "Pending"}},
    "resourcequotas": {"empty_status": {}},
    "ingresses.networking.k8s.io": {"empty_status": {"loadBalancer": {}}, "generation": True},
    "servicecidrs.networking.k8s.io": {"empty_status": {}},
    "certificatesigningrequests.certificates.k8s.io": {"empty_status": {}},
    "flowschemas.flowcontrol.apiserver.k8s.io": {"empty_status": {}, "generation": True},
    "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io": {"empty_status": {}, "generation": True},
    "validatingadmissionpolicies.admissionregistration.k8s.io": {"empty_status": {}, "generation": True},
    "volumeattachments.storage.k8s.io": {"empty_status": {"attached": False}},
    "networkpolicies.networking.k8s.io": {"generation": True},
    "ingressclasses.networking.k8s.io": {"generation": True},
    "validatingadmissionpolicybindings.admissionregistration.k8s.io": {"generation": True},
    "mutatingwebhookconfigurations.admissionregistration.k8s.io": {"generation": True,
                                                                    "spec_fields": ("webhooks",)},
    "validatingwebhookconfigurations.admissionregistration.k8s.io": {"generation": True,
                                                                      "spec_fields": ("webhooks",)},
}
