"""Server-side defaulting: what kube-apiserver fills in before validation and storage.

Upstream: ``pkg/apis/core/v1/defaults.go`` (``SetDefaults_PodSpec``, ``SetDefaults_Container``,
``SetDefaults_Probe``, ``SetDefaults_Service``, ...), ``pkg/apis/apps/v1/defaults.go``
(``SetDefaults_DaemonSet``), ``pkg/apis/scheduling/v1/defaults.go``,
``pkg/apis/discovery/v1/defaults.go``; plus the few zero-valued non-pointer fields Go always
serializes (``resources: {}``, ``divisor: "0"``) so that what we store reads like what a real
cluster returns — ``kubectl describe`` shows the difference otherwise (kubectl-contract.md
gotcha 17: ``Port: 9100/`` when ``protocol`` is missing).

Why a hand-written walk instead of a schema-driven defaulter: the defaults are few, several are
conditional (imagePullPolicy on the tag, hostPort under hostNetwork, strategy-dependent
rollingUpdate), and a direct walk over the dict costs a few microseconds per pod.

Rules kept: mutate only the private copy handed in; add keys at the end so
existing key order is stable; never store ``None``.  ``SetDefaults_Pod``'s requests-from-limits
applies to Pods only — templates inside DaemonSets keep their resources as written, like upstream.
Namespace ``spec.finalizers`` and ``status.phase`` come from the namespace *strategy* on create;
an update path must carry the old values over before calling this (we only fill absent keys).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, Final

from everynode.api.rbac import default_binding

Obj = dict[str, Any]

DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: Final = 30
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
DEFAULT_FILE_MODE: Final = 420  # 0644
DEFAULT_CLIENT_IP_TIMEOUT_SECONDS: Final = 10800
DEFAULT_REVISION_HISTORY_LIMIT: Final = 10


def _set_if_none(parent: Obj, key: str, value: Any) -> None:
    """Pointer defaults: only an absent (or JSON-null) value is replaced."""
    if parent.get(key) is None:
        parent[key] = value


def _set_if_zero(parent: Obj, key: str, value: Any) -> None:
    """Go defaulters test for the zero value (``""``/``0``/nil), not for absence."""
    current = parent.get(key)
    if current is None or current == "" or (current == 0 and not isinstance(current, bool)):
        parent[key] = value


def _dict(parent: Obj, key: str) -> Obj | None:
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def _list(parent: Obj, key: str) -> list[Any]:
    value = parent.get(key)
    return value if isinstance(value, list) else []


def _image_pull_policy(image: str) -> str:
    """``Always`` for ``:latest`` or untagged images (without a digest), else ``IfNotPresent``."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_field_ref(ref: Obj | None) -> None:
    if ref is not None:
        _set_if_zero(ref, "apiVersion", "v1")


def _default_resource_field_ref(ref: Obj | None) -> None:
    if ref is not None:
        _set_if_none(ref, "divisor", "0")


def _default_http_get(action: Obj | None) -> None:
    if action is not None:
        _set_if_zero(action, "path", "/")
        _set_if_zero(action, "scheme", "HTTP")


def _default_probe(probe: Obj | None) -> None:
    if probe is None:
        return
    _set_if_zero(probe, "timeoutSeconds", 1)
    _set_if_zero(probe, "periodSeconds", 10)
    _set_if_zero(probe, "successThreshold", 1)
    _set_if_zero(probe, "failureThreshold", 3)
    _default_http_get(_dict(probe, "httpGet"))


def _default_container(ctr: Obj, *, host_network: bool) -> None:
    if not ctr.get("imagePullPolicy"):
        # An unparsable (e.g. empty) image yields no tag upstream, hence IfNotPresent.
        image = ctr.get("image")
        ctr["imagePullPolicy"] = _image_pull_policy(image) if isinstance(image, str) and image else "IfNotPresent"
    _set_if_zero(ctr, "terminationMessagePath", "/dev/termination-log")
    _set_if_zero(ctr, "terminationMessagePolicy", "File")
    if ctr.get("resources") is None:
        ctr["resources"] = {}
    for port in _list(ctr, "ports"):
        if not isinstance(port, dict):
            continue
        _set_if_zero(port, "protocol", "TCP")
        if host_network and not port.get("hostPort") and port.get("containerPort"):
            port["hostPort"] = port["containerPort"]
    for env in _list(ctr, "env"):
        if isinstance(env, dict) and (value_from := _dict(env, "valueFrom")) is not None:
            _default_field_ref(_dict(value_from, "fieldRef"))
            _default_resource_field_ref(_dict(value_from, "resourceFieldRef"))
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(_dict(ctr, key))
    if (lifecycle := _dict(ctr, "lifecycle")) is not None:
        for hook in ("postStart", "preStop"):
            if (handler := _dict(lifecycle, hook)) is not None:
                _default_http_get(_dict(handler, "httpGet"))


def _default_downward_api_items(items: list[Any]) -> None:
    for item in items:
        if isinstance(item, dict):
            _default_field_ref(_dict(item, "fieldRef"))
            _default_resource_field_ref(_dict(item, "resourceFieldRef"))


_VOLUME_META_KEYS: Final = frozenset({"name"})


def _default_volume(volume: Obj) -> None:
    if not any(k not in _VOLUME_META_KEYS and volume[k] is not None for k in volume):
        volume["emptyDir"] = {}  # SetDefaults_Volume: a volume with no source is an emptyDir
        return
    if (host_path := _dict(volume, "hostPath")) is not None:
        _set_if_none(host_path, "type", "")
    for key in ("configMap", "secret"):
        if (source := _dict(volume, key)) is not None:
            _set_if_none(source, "defaultMode", DEFAULT_FILE_MODE)
    if (downward := _dict(volume, "downwardAPI")) is not None:
        _set_if_none(downward, "defaultMode", DEFAULT_FILE_MODE)
        _default_downward_api_items(_list(downward, "items"))
    if (projected := _dict(volume, "projected")) is not None:
        _set_if_none(projected, "defaultMode", DEFAULT_FILE_MODE)
        for source in _list(projected, "sources"):
            if isinstance(source, dict) and (downward := _dict(source, "downwardAPI")) is not None:
                _default_downward_api_items(_list(downward, "items"))
            if isinstance(source, dict) and (token := _dict(source, "serviceAccountToken")) is not None:
                _set_if_none(token, "expirationSeconds", 3600)


def default_pod_spec(spec: Obj) -> None:
    """``SetDefaults_PodSpec`` and everything nested in it (containers, volumes, probes)."""
    _set_if_zero(spec, "restartPolicy", "Always")
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
    _set_if_zero(spec, "dnsPolicy", "ClusterFirst")
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    _set_if_zero(spec, "schedulerName", DEFAULT_SCHEDULER_NAME)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    host_network = spec.get("hostNetwork") is True
    for key in ("initContainers", "containers"):
        for ctr in _list(spec, key):
            if isinstance(ctr, dict):
                _default_container(ctr, host_network=host_network)
    for ctr in _list(spec, "ephemeralContainers"):
        if isinstance(ctr, dict):
            _default_container(ctr, host_network=False)
    for volume in _list(spec, "volumes"):
        if isinstance(volume, dict):
            _default_volume(volume)


def _default_requests_from_limits(spec: Obj) -> None:
    """``SetDefaults_Pod``: a resource with a limit but no request gets request = limit."""
    for key in ("initContainers", "containers"):
        for ctr in _list(spec, key):
            if not isinstance(ctr, dict):
                continue
            resources = _dict(ctr, "resources")
            limits = _dict(resources, "limits") if resources is not None else None
            if resources is None or not limits:
                continue
            requests = resources.setdefault("requests", {})
            if not isinstance(requests, dict):
                continue
            for name, quantity in limits.items():
                _set_if_none(requests, name, quantity)


def _default_pod(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        default_pod_spec(spec)
        _default_requests_from_limits(spec)


def _default_pod_template_holder(obj: Obj) -> None:
    spec = _dict(obj, "spec")
    template = _dict(spec, "template") if spec is not None else None
    if template is not None:
        template_spec = template.setdefault("spec", {})
        if isinstance(template_spec, dict):
            default_pod_spec(template_spec)


def _default_rolling_update(strategy: Any, *, max_unavailable: Any, max_surge: Any) -> None:
    """A DaemonSet's ``updateStrategy`` or a Deployment's ``strategy``: RollingUpdate unless a type
    is given, and for RollingUpdate the kind's ``maxUnavailable``/``maxSurge`` where unset."""
    if not isinstance(strategy, dict):
        return
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if not isinstance(rolling, dict):
            rolling = strategy["rollingUpdate"] = {}
        _set_if_none(rolling, "maxUnavailable", max_unavailable)
        _set_if_none(rolling, "maxSurge", max_surge)


def _default_daemon_set(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    _default_rolling_update(spec.setdefault("updateStrategy", {}), max_unavailable=1, max_surge=0)
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = DEFAULT_REVISION_HISTORY_LIMIT
    _default_pod_template_holder(obj)


def _default_service(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "ClientIP":
        config = spec.setdefault("sessionAffinityConfig", {})
        if isinstance(config, dict):
            client_ip = config.setdefault("clientIP", {})
            if isinstance(client_ip, dict) and client_ip.get("timeoutSeconds") is None:
                client_ip["timeoutSeconds"] = DEFAULT_CLIENT_IP_TIMEOUT_SECONDS
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    svc_type = spec["type"]
    for port in _list(spec, "ports"):
        if not isinstance(port, dict):
            continue
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0):
            if port.get("port") is not None:
                port["targetPort"] = port["port"]
    if svc_type in ("NodePort", "LoadBalancer") and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if svc_type != "ExternalName":
        if spec.get("internalTrafficPolicy") is None:
            spec["internalTrafficPolicy"] = "Cluster"
        # Set by the service registry's IP allocation upstream; single-stack IPv4 is what a
        # default cluster reports.
        if spec.get("ipFamilyPolicy") is None:
            spec["ipFamilyPolicy"] = "SingleStack"
        if not spec.get("ipFamilies"):
            spec["ipFamilies"] = ["IPv4"]
    if svc_type == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True


def _default_secret(obj: Obj) -> None:
    if not obj.get("type"):
        obj["type"] = "Opaque"
    # Convert_v1_Secret_To_core_Secret: stringData is write-only; each entry lands in data,
    # base64-encoded, over a data entry of the same key, and stringData is never stored.
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = dict(obj.get("data") or {})
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        obj["data"] = data


def _default_namespace(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict) and spec.get("finalizers") is None:
        spec["finalizers"] = ["kubernetes"]
    status = obj.setdefault("status", {})
    if isinstance(status, dict) and not status.get("phase"):
        status["phase"] = "Active"


def _default_node(obj: Obj) -> None:
    status = _dict(obj, "status")
    if status is not None and status.get("allocatable") is None and isinstance(status.get("capacity"), dict):
        status["allocatable"] = dict(status["capacity"])


def _default_endpoints(obj: Obj) -> None:
    for subset in _list(obj, "subsets"):
        if isinstance(subset, dict):
            for port in _list(subset, "ports"):
                if isinstance(port, dict) and not port.get("protocol"):
                    port["protocol"] = "TCP"


def _default_endpoint_slice(obj: Obj) -> None:
    for port in _list(obj, "ports"):
        if isinstance(port, dict):
            if port.get("name") is None:
                port["name"] = ""
            if port.get("protocol") is None:
                port["protocol"] = "TCP"


def _default_priority_class(obj: Obj) -> None:
    if obj.get("preemptionPolicy") is None:
        obj["preemptionPolicy"] = "PreemptLowerPriority"


def _default_job(obj: Obj) -> None:
    """``SetDefaults_Job`` (``pkg/apis/batch/v1/defaults.go``): completions and parallelism 1 when
    both are unset, backoffLimit 6 (MaxInt32 with a per-index limit), NonIndexed, not suspended,
    podReplacementPolicy ``Failed`` with a podFailurePolicy else ``TerminatingOrFailed``,
    manualSelector false; the Job takes its template's labels when it has none."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    _set_if_none(spec, "parallelism", 1)
    _set_if_none(spec, "backoffLimit", 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6)
    template = _dict(spec, "template")
    labels = _dict(template, "metadata") if template is not None else None
    labels = _dict(labels, "labels") if labels is not None else None
    md = _dict(obj, "metadata")
    if labels and md is not None and not md.get("labels"):
        md["labels"] = dict(labels)
    _set_if_none(spec, "completionMode", "NonIndexed")
    _set_if_none(spec, "suspend", False)
    _set_if_none(spec, "podReplacementPolicy",
                 "Failed" if spec.get("podFailurePolicy") is not None else "TerminatingOrFailed")
    _set_if_none(spec, "manualSelector", False)
    _default_pod_template_holder(obj)


def _nothing(obj: Obj) -> None:
    return None


_DEFAULTERS: Final[dict[str, Callable[[Obj], None]]] = {
    "pods": _default_pod,
    "daemonsets.apps": _default_daemon_set,
    "services": _default_service,
    "secrets": _default_secret,
    "namespaces": _default_namespace,
    "nodes": _default_node,
    "endpoints": _default_endpoints,
    "endpointslices.discovery.k8s.io": _default_endpoint_slice,
    "priorityclasses.scheduling.k8s.io": _default_priority_class,
    "events": _nothing,
    "events.events.k8s.io": _nothing,
    "configmaps": _nothing,
    "serviceaccounts": _nothing,
    "controllerrevisions.apps": _nothing,
    "leases.coordination.k8s.io": _nothing,
    "rolebindings.rbac.authorization.k8s.io": default_binding,
    "clusterrolebindings.rbac.authorization.k8s.io": default_binding,
    "roles.rbac.authorization.k8s.io": _nothing,
    "clusterroles.rbac.authorization.k8s.io": _nothing,
    "poddisruptionbudgets.policy": _nothing,
    "jobs.batch": _default_job,
}


RUNTIME_DEFAULTERS: Final[dict[str, Callable[[Obj], None]]] = {}
"""Defaulters of resources defined at run time (a CRD's schema defaults), by registry key;
consulted only for keys no built-in defaulter has."""


def apply_defaults(resource_key: str, obj: Obj) -> None:
    """Fill in upstream's v1 defaults for ``resource_key`` (a registry key) in place.

    ``obj`` must be a private copy.  Unknown resource keys are left untouched.
    """
    defaulter = _DEFAULTERS.get(resource_key) or RUNTIME_DEFAULTERS.get(resource_key)
    if defaulter is None:  # the kinds of builtin_kinds (imported here: it builds on this module)
        from everynode.api.builtin_defaults import DEFAULTERS

        defaulter = DEFAULTERS.get(resource_key)
    if defaulter is not None and isinstance(obj, dict):
        defaulter(obj)


# -- workloads (apps/v1 Deployment, ReplicaSet) ------------------------------------------------

DEFAULT_PROGRESS_DEADLINE_SECONDS: Final = 600
DEFAULT_MAX_UNAVAILABLE: Final = "25%"
DEFAULT_MAX_SURGE: Final = "25%"


def _default_replica_set(obj: Obj) -> None:
    """``SetDefaults_ReplicaSet``: one replica; the template as pods are defaulted."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    _set_if_none(spec, "replicas", 1)
    # The template is a struct in Go, not a pointer: its pod spec is defaulted even when the
    # request has none (a missing template is reported as missing containers, not dnsPolicy).
    spec.setdefault("template", {})
    _default_pod_template_holder(obj)


def _default_deployment(obj: Obj) -> None:
    """``SetDefaults_Deployment``: one replica, RollingUpdate 25%/25%, ten old ReplicaSets kept,
    a 600 s progress deadline; the template as pods are defaulted."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    _set_if_none(spec, "replicas", 1)
    _default_rolling_update(spec.setdefault("strategy", {}), max_unavailable=DEFAULT_MAX_UNAVAILABLE,
                            max_surge=DEFAULT_MAX_SURGE)
    _set_if_none(spec, "revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
    _set_if_none(spec, "progressDeadlineSeconds", DEFAULT_PROGRESS_DEADLINE_SECONDS)
    # The template is a struct in Go, not a pointer: its pod spec is defaulted even when the
    # request has none (a missing template is reported as missing containers, not dnsPolicy).
    spec.setdefault("template", {})
    _default_pod_template_holder(obj)


_DEFAULTERS["deployments.apps"] = _default_deployment
_DEFAULTERS["replicasets.apps"] = _default_replica_set
