"""Table columns of the built-in kinds served from :mod:`everynode.api.builtin_kinds`.

Why apart from :mod:`everynode.apiserver.tables`: that module prints the kinds of the DaemonSet
path; this one the kinds users apply beside them, with the same helpers.  Columns and cells
follow 1.33's ``pkg/printers/internalversion/printers.go`` (``printStatefulSet``,
``printCronJob``, ``printStorageClass``, ``printCSIDriver``, ``printPersistentVolume(Claim)``,
``printHorizontalPodAutoscaler`` with ``formatHPAMetrics``, ...) and kube-aggregator's
``printAPIService``: the same column names, types and priorities, the same placeholders
(``<none>``, ``<unset>``, ``<unknown>``), Go booleans and integers as JSON booleans and
numbers.  Column descriptions are the schemas' field docs where upstream uses a field's doc.
Kinds listed nowhere get the default ``Name``/``Created At`` table, as upstream's
``DefaultTableConvertor`` gives them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from everynode.api.meta import metadata_of
from everynode.api.quantity import canonical_quantity
from everynode.apiserver.tables import (
    _CORE,
    _NONE,
    Printer,
    _age,
    _age_col,
    _col,
    _doc,
    _name_col,
    _since,
    format_labels,
    format_selector,
)

Obj = Mapping[str, Any]
_UNSET = "<unset>"
_CONTAINERS = "Names of each container in the template."
_IMAGES = "Images referenced by each container in the template."


def _name(obj: Obj) -> str:
    return metadata_of(obj).get("name", "")


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _status(obj: Obj) -> Mapping[str, Any]:
    return obj.get("status") or {}


def _containers(template: Mapping[str, Any] | None) -> tuple[str, str]:
    """``layoutContainerCells``: names and images, comma-joined."""
    containers = ((template or {}).get("spec") or {}).get("containers") or []
    return ",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers)


def _quantity(value: Any) -> str:
    if value is None:
        return "0"
    try:
        return canonical_quantity(str(value))
    except ValueError:
        return str(value)


_ACCESS_MODES = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
                 ("ReadWriteOncePod", "RWOP"))


def _access_modes(modes: Any) -> str:
    """``GetAccessModesAsString``: the short forms in a fixed order, each once."""
    present = set(modes or ())
    return ",".join(short for mode, short in _ACCESS_MODES if mode in present)


# --------------------------------------------------------------------------- apps / core workloads

def _sts_columns() -> list[dict[str, Any]]:
    return [_name_col(), _col("Ready", "string", "Number of the pod with ready state"), _age_col(),
            _col("Containers", "string", _CONTAINERS, priority=1), _col("Images", "string", _IMAGES, priority=1)]


def _sts_cells(obj: Obj, now: float) -> list[Any]:
    spec = _spec(obj)
    names, images = _containers(spec.get("template"))
    ready = int(_status(obj).get("readyReplicas") or 0)
    return [_name(obj), f"{ready}/{int(spec.get('replicas') or 0)}", _age(obj, now), names, images]


def _rc_columns() -> list[dict[str, Any]]:
    return [_name_col(), _col("Desired", "integer", _doc(_CORE + "ReplicationControllerSpec", "replicas")),
            _col("Current", "integer", _doc(_CORE + "ReplicationControllerStatus", "replicas")),
            _col("Ready", "integer", _doc(_CORE + "ReplicationControllerStatus", "readyReplicas")), _age_col(),
            _col("Containers", "string", _CONTAINERS, priority=1), _col("Images", "string", _IMAGES, priority=1),
            _col("Selector", "string", _doc(_CORE + "ReplicationControllerSpec", "selector"), priority=1)]


def _rc_cells(obj: Obj, now: float) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    names, images = _containers(spec.get("template"))
    return [_name(obj), int(spec.get("replicas") or 0), int(status.get("replicas") or 0),
            int(status.get("readyReplicas") or 0), _age(obj, now), names, images, format_labels(spec.get("selector"))]


def _pod_template_columns() -> list[dict[str, Any]]:
    return [_name_col(), _col("Containers", "string", _CONTAINERS), _col("Images", "string", _IMAGES),
            _col("Pod Labels", "string", "The labels for the pod template.")]


def _pod_template_cells(obj: Obj, now: float) -> list[Any]:
    template = obj.get("template") or {}
    names, images = _containers(template)
    return [_name(obj), names, images, format_labels((template.get("metadata") or {}).get("labels"))]


def _cron_job_columns() -> list[dict[str, Any]]:
    cs, cst = "io.k8s.api.batch.v1.CronJobSpec", "io.k8s.api.batch.v1.CronJobStatus"
    return [_name_col(), _col("Schedule", "string", _doc(cs, "schedule")),
            _col("Timezone", "string", _doc(cs, "timeZone")), _col("Suspend", "boolean", _doc(cs, "suspend")),
            _col("Active", "integer", _doc(cst, "active")),
            _col("Last Schedule", "string", _doc(cst, "lastScheduleTime")), _age_col(),
            _col("Containers", "string", _CONTAINERS, priority=1), _col("Images", "string", _IMAGES, priority=1),
            _col("Selector", "string", _doc("io.k8s.api.batch.v1.JobSpec", "selector"), priority=1)]


def _bool_ptr(value: Any) -> str:
    """``printBoolPtr``."""
    return _UNSET if value is None else ("True" if value else "False")


def _cron_job_cells(obj: Obj, now: float) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    names, images = _containers(job_spec.get("template"))
    last = status.get("lastScheduleTime")
    return [_name(obj), spec.get("schedule", ""), spec.get("timeZone") or _NONE, _bool_ptr(spec.get("suspend")),
            len(status.get("active") or ()), _since(last, now) if last else _NONE, _age(obj, now), names, images,
            format_selector(job_spec.get("selector"))]


def _hpa_columns() -> list[dict[str, Any]]:
    hs = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec"
    return [_name_col(), _col("Reference", "string", _doc(hs, "scaleTargetRef")),
            _col("Targets", "string", _doc(hs, "metrics")), _col("MinPods", "string", _doc(hs, "minReplicas")),
            _col("MaxPods", "string", _doc(hs, "maxReplicas")),
            _col("Replicas", "string", _doc("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
                                            "currentReplicas")), _age_col()]


def _metric_target(spec: Mapping[str, Any], current: Mapping[str, Any] | None, *, named: str | None) -> str:
    """One ``formatHPAMetrics`` entry for a metric source with a ``target`` (and the status's
    ``current``): value targets as ``cur/target`` (``(avg)`` for an average), utilisation as
    ``cur%/target%``; a resource metric is prefixed with its resource name."""
    target = spec.get("target") or {}
    cur = current or {}
    prefix = f"{named}: " if named is not None else ""
    if target.get("averageValue") is not None:
        shown = _quantity(cur["averageValue"]) if cur.get("averageValue") is not None else "<unknown>"
        suffix = "" if named is not None else " (avg)"
        return f"{prefix}{shown}/{_quantity(target['averageValue'])}{suffix}"
    if named is not None:
        shown = f"{cur['averageUtilization']}%" if cur.get("averageUtilization") is not None else "<unknown>"
        goal = f"{target['averageUtilization']}%" if target.get("averageUtilization") is not None else "<auto>"
        return f"{prefix}{shown}/{goal}"
    shown = _quantity(cur["value"]) if cur.get("value") is not None else "<unknown>"
    return f"{shown}/{_quantity(target.get('value'))}"


def format_hpa_metrics(specs: Any, statuses: Any) -> str:
    """``formatHPAMetrics``: at most two metrics, then ``+ N more...``."""
    specs = list(specs or ())
    if not specs:
        return _NONE
    statuses = list(statuses or ())
    entries: list[str] = []
    for i, metric in enumerate(specs):
        kind = metric.get("type")
        field = {"External": "external", "Pods": "pods", "Object": "object", "Resource": "resource",
                 "ContainerResource": "containerResource"}.get(kind or "")
        if field is None:
            entries.append("<unknown type>")
            continue
        source = metric.get(field) or {}
        status = statuses[i].get(field) if i < len(statuses) and isinstance(statuses[i], dict) else None
        current = (status or {}).get("current") if status else None
        named = source.get("name") if field in ("resource", "containerResource") else None
        if field == "pods":  # always an average value
            shown = _quantity(current["averageValue"]) if current and current.get("averageValue") is not None \
                else "<unknown>"
            entries.append(f"{shown}/{_quantity((source.get('target') or {}).get('averageValue'))}")
            continue
        entries.append(_metric_target(source, current, named=named))
    if len(entries) > 2:
        return ", ".join(entries[:2]) + f" + {len(entries) - 2} more..."
    return ", ".join(entries)


def _hpa_cells(obj: Obj, now: float) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    ref = spec.get("scaleTargetRef") or {}
    min_pods = str(spec["minReplicas"]) if spec.get("minReplicas") is not None else _UNSET
    return [_name(obj), f"{ref.get('kind', '')}/{ref.get('name', '')}",
            format_hpa_metrics(spec.get("metrics"), status.get("currentMetrics")), min_pods,
            int(spec.get("maxReplicas") or 0), int(status.get("currentReplicas") or 0), _age(obj, now)]


# --------------------------------------------------------------------------- storage

def _pv_class(obj: Obj, spec: Mapping[str, Any]) -> str:
    """``GetPersistentVolume(Claim)Class``: the beta annotation wins over the field."""
    annotations = metadata_of(obj).get("annotations") or {}
    beta = annotations.get("volume.beta.kubernetes.io/storage-class")
    if beta is not None:
        return beta
    return spec.get("storageClassName") or ""


def _pv_columns() -> list[dict[str, Any]]:
    ps, pst = _CORE + "PersistentVolumeSpec", _CORE + "PersistentVolumeStatus"
    return [_name_col(), _col("Capacity", "string", _doc(ps, "capacity")),
            _col("Access Modes", "string", _doc(ps, "accessModes")),
            _col("Reclaim Policy", "string", _doc(ps, "persistentVolumeReclaimPolicy")),
            _col("Status", "string", _doc(pst, "phase")), _col("Claim", "string", _doc(ps, "claimRef")),
            _col("StorageClass", "string", "StorageClass of the pv"),
            _col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
            _col("Reason", "string", _doc(pst, "reason")), _age_col(),
            _col("VolumeMode", "string", _doc(ps, "volumeMode"), priority=1)]


def _pv_cells(obj: Obj, now: float) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    claim = spec.get("claimRef")
    claim_text = f"{claim.get('namespace', '')}/{claim.get('name', '')}" if claim else ""
    phase = "Terminating" if metadata_of(obj).get("deletionTimestamp") else status.get("phase", "")
    return [_name(obj), _quantity((spec.get("capacity") or {}).get("storage")), _access_modes(spec.get("accessModes")),
            spec.get("persistentVolumeReclaimPolicy", ""), phase, claim_text, _pv_class(obj, spec),
            spec.get("volumeAttributesClassName") or _UNSET, status.get("reason", ""), _age(obj, now),
            spec.get("volumeMode") or _UNSET]


def _pvc_columns() -> list[dict[str, Any]]:
    cs, cst = _CORE + "PersistentVolumeClaimSpec", _CORE + "PersistentVolumeClaimStatus"
    return [_name_col(), _col("Status", "string", _doc(cst, "phase")), _col("Volume", "string", _doc(cs, "volumeName")),
            _col("Capacity", "string", _doc(cst, "capacity")), _col("Access Modes", "string", _doc(cst, "accessModes")),
            _col("StorageClass", "string", "StorageClass of the pvc"),
            _col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"), _age_col(),
            _col("VolumeMode", "string", _doc(cs, "volumeMode"), priority=1)]


def _pvc_cells(obj: Obj, now: float) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    phase = "Terminating" if metadata_of(obj).get("deletionTimestamp") else status.get("phase", "")
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = _access_modes(status.get("accessModes"))
        capacity = _quantity((status.get("capacity") or {}).get("storage"))
    return [_name(obj), phase, spec.get("volumeName", ""), capacity, modes, _pv_class(obj, spec),
            spec.get("volumeAttributesClassName") or _UNSET, _age(obj, now), spec.get("volumeMode") or _UNSET]


_DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                              "storageclass.beta.kubernetes.io/is-default-class")


def _storage_class_columns() -> list[dict[str, Any]]:
    sc = "io.k8s.api.storage.v1.StorageClass"
    return [_name_col(), _col("Provisioner", "string", _doc(sc, "provisioner")),
            _col("ReclaimPolicy", "string", _doc(sc, "reclaimPolicy")),
            _col("VolumeBindingMode", "string", _doc(sc, "volumeBindingMode")),
            _col("AllowVolumeExpansion", "string", _doc(sc, "allowVolumeExpansion")), _age_col()]


def _storage_class_cells(obj: Obj, now: float) -> list[Any]:
    annotations = metadata_of(obj).get("annotations") or {}
    name = _name(obj)
    if any(annotations.get(a) == "true" for a in _DEFAULT_CLASS_ANNOTATIONS):
        name += " (default)"
    return [name, obj.get("provisioner", ""), obj.get("reclaimPolicy") or "Delete",
            obj.get("volumeBindingMode") or "Immediate", bool(obj.get("allowVolumeExpansion")), _age(obj, now)]


def _csi_driver_columns() -> list[dict[str, Any]]:
    ds = "io.k8s.api.storage.v1.CSIDriverSpec"
    return [_name_col(), _col("AttachRequired", "boolean", _doc(ds, "attachRequired")),
            _col("PodInfoOnMount", "boolean", _doc(ds, "podInfoOnMount")),
            _col("StorageCapacity", "boolean", _doc(ds, "storageCapacity")),
            _col("TokenRequests", "string", _doc(ds, "tokenRequests")),
            _col("RequiresRepublish", "boolean", _doc(ds, "requiresRepublish")),
            _col("Modes", "string", _doc(ds, "volumeLifecycleModes")), _age_col()]


def _csi_driver_cells(obj: Obj, now: float) -> list[Any]:
    spec = _spec(obj)
    attach = spec.get("attachRequired")
    tokens = spec.get("tokenRequests")
    return [_name(obj), True if attach is None else bool(attach), bool(spec.get("podInfoOnMount")),
            bool(spec.get("storageCapacity")),
            _UNSET if tokens is None else ",".join(t.get("audience", "") for t in tokens),
            bool(spec.get("requiresRepublish")), ",".join(spec.get("volumeLifecycleModes") or ()) or _NONE,
            _age(obj, now)]


def _csi_node_columns() -> list[dict[str, Any]]:
    return [_name_col(), _col("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"),
            _age_col()]


def _csi_node_cells(obj: Obj, now: float) -> list[Any]:
    return [_name(obj), len(_spec(obj).get("drivers") or ()), _age(obj, now)]


def _csi_capacity_columns() -> list[dict[str, Any]]:
    cc = "io.k8s.api.storage.v1.CSIStorageCapacity"
    return [_name_col(), _col("StorageClassName", "string", _doc(cc, "storageClassName")),
            _col("Capacity", "string", _doc(cc, "capacity"))]


def _csi_capacity_cells(obj: Obj, now: float) -> list[Any]:
    capacity = obj.get("capacity")
    return [_name(obj), obj.get("storageClassName", ""), _UNSET if capacity is None else _quantity(capacity)]


def _volume_attachment_columns() -> list[dict[str, Any]]:
    vs = "io.k8s.api.storage.v1.VolumeAttachmentSpec"
    return [_name_col(), _col("Attacher", "string", _doc(vs, "attacher"), fmt="name"),
            _col("PV", "string", _doc("io.k8s.api.storage.v1.VolumeAttachmentSource", "persistentVolumeName")),
            _col("Node", "string", _doc(vs, "nodeName")),
            _col("Attached", "boolean", _doc("io.k8s.api.storage.v1.VolumeAttachmentStatus", "attached")), _age_col()]


def _volume_attachment_cells(obj: Obj, now: float) -> list[Any]:
    spec = _spec(obj)
    return [_name(obj), spec.get("attacher", ""), (spec.get("source") or {}).get("persistentVolumeName") or "",
            spec.get("nodeName", ""), bool(_status(obj).get("attached")), _age(obj, now)]


# --------------------------------------------------------------------------- networking, node, others

def _ingress_columns() -> list[dict[str, Any]]:
    return [_name_col(),
            _col("Class", "string", "The name of the IngressClass resource that should be used for additional "
                 "configuration"),
            _col("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
            _col("Address", "string", "Address is a list containing ingress points for the load-balancer"),
            _col("Ports", "string", "Ports of TLS configurations that open"), _age_col()]


def _ingress_hosts(rules: Any) -> str:
    """``formatHosts``: up to three hosts, ``*`` when no rule names one."""
    rules = list(rules or ())
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
        if not more and rule.get("host"):
            hosts.append(rule["host"])
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - 3} more..." if more else text


def _ingress_cells(obj: Obj, now: float) -> list[Any]:
    spec = _spec(obj)
    seen: list[str] = []
    for entry in (_status(obj).get("loadBalancer") or {}).get("ingress") or ():
        address = entry.get("ip") or entry.get("hostname")
        if address and address not in seen:
            seen.append(address)
    return [_name(obj), spec.get("ingressClassName") or _NONE, _ingress_hosts(spec.get("rules")), ",".join(seen),
            "80, 443" if spec.get("tls") else "80", _age(obj, now)]


def _ingress_class_columns() -> list[dict[str, Any]]:
    return [_name_col(), _col("Controller", "string", "Controller that is responsible for handling this class"),
            _col("Parameters", "string", "A reference to a resource with additional parameters"), _age_col()]


def _ingress_class_cells(obj: Obj, now: float) -> list[Any]:
    spec = _spec(obj)
    params = spec.get("parameters")
    text = _NONE
    if params:
        text = params.get("kind", "")
        if params.get("apiGroup") is not None:
            text += "." + params["apiGroup"]
        text += "/" + params.get("name", "")
    return [_name(obj), spec.get("controller", ""), text, _age(obj, now)]


def _network_policy_columns() -> list[dict[str, Any]]:
    return [_name_col(), _col("Pod-Selector", "string", _doc("io.k8s.api.networking.v1.NetworkPolicySpec",
                                                             "podSelector")), _age_col()]


def _network_policy_cells(obj: Obj, now: float) -> list[Any]:
    return [_name(obj), format_selector(_spec(obj).get("podSelector") or {}), _age(obj, now)]


def _runtime_class_columns() -> list[dict[str, Any]]:
    return [_name_col(), _col("Handler", "string", _doc("io.k8s.api.node.v1.RuntimeClass", "handler")), _age_col()]


def _runtime_class_cells(obj: Obj, now: float) -> list[Any]:
    return [_name(obj), obj.get("handler", ""), _age(obj, now)]


def _webhook_columns() -> list[dict[str, Any]]:
    return [_name_col(), _col("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this "
                              "configuration"), _age_col()]


def _webhook_cells(obj: Obj, now: float) -> list[Any]:
    return [_name(obj), len(obj.get("webhooks") or ()), _age(obj, now)]


def _apiservice_columns() -> list[dict[str, Any]]:
    spec = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceSpec"
    return [_name_col(), _col("Service", "string", _doc(spec, "service")),
            _col("Available", "string", "Whether this service is available."), _age_col()]


def _apiservice_cells(obj: Obj, now: float) -> list[Any]:
    service = _spec(obj).get("service")
    where = f"{service.get('namespace', '')}/{service.get('name', '')}" if service else "Local"
    available = "Unknown"
    for condition in _status(obj).get("conditions") or ():
        if condition.get("type") == "Available":
            available = condition.get("status", "")
            if available != "True":
                available = f"{available} ({condition.get('reason', '')})"
    return [_name(obj), where, available, _age(obj, now)]


def _csr_columns() -> list[dict[str, Any]]:
    cs = "io.k8s.api.certificates.v1.CertificateSigningRequestSpec"
    return [_name_col(), _age_col(), _col("SignerName", "string", _doc(cs, "signerName")),
            _col("Requestor", "string", _doc(cs, "request")),
            _col("RequestedDuration", "string", _doc(cs, "expirationSeconds")),
            _col("Condition", "string", _doc("io.k8s.api.certificates.v1.CertificateSigningRequestStatus",
                                             "conditions"))]


def _csr_cells(obj: Obj, now: float) -> list[Any]:
    from everynode.apiserver.tables import human_duration

    spec, status = _spec(obj), _status(obj)
    types = {c.get("type") for c in status.get("conditions") or ()}
    text = "Denied" if "Denied" in types else "Approved" if "Approved" in types else "Pending"
    if "Failed" in types:
        text += ",Failed"
    if status.get("certificate"):
        text += ",Issued"
    seconds = spec.get("expirationSeconds")
    return [_name(obj), _age(obj, now), spec.get("signerName") or _NONE, spec.get("username", ""),
            human_duration(seconds) if seconds is not None else _NONE, text]


def _resource_quota_columns() -> list[dict[str, Any]]:
    return [_name_col(), _age_col(),
            _col("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
            _col("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use "
                 "independent of contention on the node.")]


def _resource_quota_cells(obj: Obj, now: float) -> list[Any]:
    status = _status(obj)
    hard, used = status.get("hard") or {}, status.get("used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard):
        entry = f"{name}: {_quantity(used.get(name))}/{_quantity(hard[name])}"
        (limits if name.startswith("limits.") else requests).append(entry)
    return [_name(obj), _age(obj, now), ", ".join(requests), ", ".join(limits)]




def _component_status_columns() -> list[dict[str, Any]]:
    return [_name_col(), _col("Status", "string", "Status of the component conditions"),
            _col("Message", "string", "Message of the component conditions"),
            _col("Error", "string", "Error of the component conditions")]


def _component_status_cells(obj: Obj, now: float) -> list[Any]:
    """``printComponentStatus``: ``Healthy``/``Unhealthy`` from the ``Healthy`` condition."""
    status, message, error = "Unknown", "", ""
    for condition in obj.get("conditions") or ():
        if condition.get("type") == "Healthy":
            status = "Healthy" if condition.get("status") == "True" else "Unhealthy"
            message, error = condition.get("message", ""), condition.get("error", "")
            break
    return [_name(obj), status, message, error]


PRINTERS: dict[str, Printer] = {
    "statefulsets.apps": (_sts_columns, _sts_cells),
    "replicationcontrollers": (_rc_columns, _rc_cells),
    "podtemplates": (_pod_template_columns, _pod_template_cells),
    "cronjobs.batch": (_cron_job_columns, _cron_job_cells),
    "horizontalpodautoscalers.autoscaling": (_hpa_columns, _hpa_cells),
    "persistentvolumes": (_pv_columns, _pv_cells),
    "persistentvolumeclaims": (_pvc_columns, _pvc_cells),
    "resourcequotas": (_resource_quota_columns, _resource_quota_cells),
    "storageclasses.storage.k8s.io": (_storage_class_columns, _storage_class_cells),
    "csidrivers.storage.k8s.io": (_csi_driver_columns, _csi_driver_cells),
    "csinodes.storage.k8s.io": (_csi_node_columns, _csi_node_cells),
    "csistoragecapacities.storage.k8s.io": (_csi_capacity_columns, _csi_capacity_cells),
    "volumeattachments.storage.k8s.io": (_volume_attachment_columns, _volume_attachment_cells),
    "ingresses.networking.k8s.io": (_ingress_columns, _ingress_cells),
    "ingressclasses.networking.k8s.io": (_ingress_class_columns, _ingress_class_cells),
    "networkpolicies.networking.k8s.io": (_network_policy_columns, _network_policy_cells),
    "runtimeclasses.node.k8s.io": (_runtime_class_columns, _runtime_class_cells),
    "mutatingwebhookconfigurations.admissionregistration.k8s.io": (_webhook_columns, _webhook_cells),
    "validatingwebhookconfigurations.admissionregistration.k8s.io": (_webhook_columns, _webhook_cells),
    "apiservices.apiregistration.k8s.io": (_apiservice_columns, _apiservice_cells),
    "certificatesigningrequests.certificates.k8s.io": (_csr_columns, _csr_cells),
    "componentstatuses": (_component_status_columns, _component_status_cells),
}
