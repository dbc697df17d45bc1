"""Server-side defaults of the built-in kinds served from :mod:`everynode.api.builtin_kinds`.

Why apart from :mod:`everynode.api.defaults`: that module holds the kinds the DaemonSet path
writes on every sync (pods, DaemonSets, Services, ...), this one the kinds users apply beside
them — fewer writes, more kinds.  The same rules apply (fill absent keys only, at the end,
never store ``None``), and the same walk of pod templates (``default_pod_spec``).

Upstream: ``pkg/apis/apps/v1/defaults.go`` (``SetDefaults_StatefulSet``),
``pkg/apis/core/v1/defaults.go`` (``SetDefaults_ReplicationController``,
``SetDefaults_PersistentVolume``, ``SetDefaults_PersistentVolumeClaim(Spec)``),
``pkg/apis/batch/v1/defaults.go`` (``SetDefaults_CronJob``), ``pkg/apis/storage/v1/defaults.go``
(``SetDefaults_StorageClass``, ``SetDefaults_CSIDriver``), ``pkg/apis/networking/v1/defaults.go``
(``SetDefaults_NetworkPolicy``), ``pkg/apis/autoscaling/v2/defaults.go`` (``minReplicas``; the
CPU metric when none is given).  Only the features 1.33 enables by default are modelled
(``persistentVolumeClaimRetentionPolicy`` is GA; StatefulSet ``maxUnavailable`` is alpha, so
not defaulted).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from everynode.api.defaults import DEFAULT_REVISION_HISTORY_LIMIT, default_pod_spec

Obj = dict[str, Any]


def _spec(obj: Obj) -> Obj | None:
    spec = obj.setdefault("spec", {})
    return spec if isinstance(spec, dict) else None


def _template_spec(holder: Obj | None) -> None:
    template = holder.get("template") if holder is not None else None
    if isinstance(template, dict):
        spec = template.setdefault("spec", {})
        if isinstance(spec, dict):
            default_pod_spec(spec)


def _set(parent: Obj, key: str, value: Any) -> None:
    if parent.get(key) is None:
        parent[key] = value


def _claim_spec(spec: Obj) -> None:
    _set(spec, "volumeMode", "Filesystem")


def _default_stateful_set(obj: Obj) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    _set(spec, "podManagementPolicy", "OrderedReady")
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        _set(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.get("rollingUpdate")
            if not isinstance(rolling, dict):
                rolling = strategy["rollingUpdate"] = {}
            _set(rolling, "partition", 0)
    policy = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
    if isinstance(policy, dict):
        _set(policy, "whenDeleted", "Retain")
        _set(policy, "whenScaled", "Retain")
    _set(spec, "replicas", 1)
    _set(spec, "revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
    _template_spec(spec)
    for claim in spec.get("volumeClaimTemplates") or ():
        if isinstance(claim, dict):
            _set(claim, "apiVersion", "v1")
            _set(claim, "kind", "PersistentVolumeClaim")
            claim_spec = claim.setdefault("spec", {})
            if isinstance(claim_spec, dict):
                _claim_spec(claim_spec)
            status = claim.setdefault("status", {})
            if isinstance(status, dict):
                _set(status, "phase", "Pending")


def _default_replication_controller(obj: Obj) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    template = spec.get("template")
    labels = (template.get("metadata") or {}).get("labels") if isinstance(template, dict) else None
    if labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        md = obj.setdefault("metadata", {})
        if isinstance(md, dict) and not md.get("labels"):
            md["labels"] = dict(labels)
    _set(spec, "replicas", 1)
    _template_spec(spec)


def _default_pod_template(obj: Obj) -> None:
    _template_spec(obj)


def _default_cron_job(obj: Obj) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    _set(spec, "concurrencyPolicy", "Allow")
    _set(spec, "suspend", False)
    _set(spec, "successfulJobsHistoryLimit", 3)
    _set(spec, "failedJobsHistoryLimit", 1)
    job = spec.get("jobTemplate")
    if isinstance(job, dict):
        _template_spec(job.get("spec") if isinstance(job.get("spec"), dict) else None)


def _default_pvc(obj: Obj) -> None:
    spec = _spec(obj)
    if spec is not None:
        _claim_spec(spec)


def _default_pv(obj: Obj) -> None:
    spec = _spec(obj)
    if spec is not None:
        _set(spec, "persistentVolumeReclaimPolicy", "Retain")
        _set(spec, "volumeMode", "Filesystem")


def _default_storage_class(obj: Obj) -> None:
    _set(obj, "reclaimPolicy", "Delete")
    _set(obj, "volumeBindingMode", "Immediate")


def _default_csi_driver(obj: Obj) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    _set(spec, "attachRequired", True)
    _set(spec, "podInfoOnMount", False)
    _set(spec, "storageCapacity", False)
    _set(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType")
    _set(spec, "requiresRepublish", False)
    _set(spec, "volumeLifecycleModes", ["Persistent"])
    _set(spec, "seLinuxMount", False)


def _default_network_policy(obj: Obj) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or ():
            for port in (rule.get("ports") or ()) if isinstance(rule, dict) else ():
                if isinstance(port, dict):
                    _set(port, "protocol", "TCP")
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types


def _default_hpa(obj: Obj) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    _set(spec, "minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]


DEFAULTERS: dict[str, Callable[[Obj], None]] = {
    "statefulsets.apps": _default_stateful_set,
    "replicationcontrollers": _default_replication_controller,
    "podtemplates": _default_pod_template,
    "cronjobs.batch": _default_cron_job,
    "persistentvolumeclaims": _default_pvc,
    "persistentvolumes": _default_pv,
    "storageclasses.storage.k8s.io": _default_storage_class,
    "csidrivers.storage.k8s.io": _default_csi_driver,
    "networkpolicies.networking.k8s.io": _default_network_policy,
    "horizontalpodautoscalers.autoscaling": _default_hpa,
}
