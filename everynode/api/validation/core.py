"""Validation for the other core/v1 kinds: Namespace, Node, Service, ConfigMap, Secret,
ServiceAccount, Event, Endpoints.

Upstream: ``pkg/apis/core/validation/validation.go`` (``ValidateNamespace*``, ``ValidateNode*``,
``validateNodeTaints``, ``ValidateService``, ``validateServicePort``, ``ValidateConfigMap*``,
``ValidateSecret*``, ``ValidateServiceAccount``, ``ValidateEndpoints``) and
``pkg/apis/core/validation/events.go`` (``ValidateEventCreate``, legacy core/v1 rules and the
stricter events.k8s.io/v1 ones).  Upstream quirks kept on purpose: node taint errors live under
``metadata.taints`` (the node validator passes its metadata path), and the namespace status rule
reports ``status.Phase`` with a capital P.

Service IP allocation, dual-stack fields and load-balancer specifics belong to the service
registry, which everynode does not simulate; only the fields a user can get wrong in a plain
ClusterIP/NodePort/headless Service are checked.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
from typing import Any, Final

from everynode.api import field_errors as field
from everynode.api.field_errors import FieldError
from everynode.api.names import (
    is_config_map_key,
    is_dns1123_subdomain,
    is_valid_label_value,
    is_valid_port_num,
    name_is_dns1035_label,
    name_is_dns_label,
    name_is_dns_subdomain,
    name_is_path_segment,
)
from everynode.api.quantity import parse_quantity_value
from everynode.api.validation.meta import (
    IS_NEGATIVE_ERROR_MSG,
    as_dict,
    as_int,
    as_list,
    as_str,
    child,
    dicts,
    index,
    key,
    required_enum,
    validate_dns1123_label,
    validate_immutable,
    validate_kube_finalizer_name,
    validate_label_name,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
    validate_qualified_name,
)
from everynode.api.validation.pod import (
    SUPPORTED_PORT_PROTOCOLS,
    TAINT_EFFECTS,
    validate_port_num_or_name,
)

Obj = dict[str, Any]

MAX_SECRET_SIZE: Final = 1 * 1024 * 1024
SERVICE_TYPES: Final = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
SESSION_AFFINITIES: Final = ["ClientIP", "None"]
TRAFFIC_POLICIES: Final = ["Cluster", "Local"]
INVALID_IP_MSG: Final = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


# --- Namespace ----------------------------------------------------------------------------------

def _validate_namespace_finalizers(finalizers: Any, path_for: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, name in enumerate(f for f in as_list(finalizers) if isinstance(f, str)):
        path = path_for(i)
        errs.extend(validate_qualified_name(name, path))
        errs.extend(validate_kube_finalizer_name(name, path))
    return errs


def validate_namespace_create(ns: Obj) -> list[FieldError]:
    errs = validate_object_meta(ns.get("metadata"), namespaced=False, name_fn=name_is_dns_label)
    # ValidateNamespace reports spec finalizers on the list's path, without an index.
    errs.extend(_validate_namespace_finalizers(as_dict(ns.get("spec")).get("finalizers"),
                                               lambda i: "spec.finalizers"))
    return errs


def validate_namespace_update(new: Obj, old: Obj) -> list[FieldError]:
    return validate_object_meta_update(new.get("metadata"), old.get("metadata"))


def validate_namespace_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    phase = as_str(as_dict(new.get("status")).get("phase"))
    if not as_dict(new.get("metadata")).get("deletionTimestamp"):
        if phase != "Active":
            errs.append(field.invalid("status.Phase", phase, "may only be 'Active' if `deletionTimestamp` is empty"))
    elif phase != "Terminating":
        errs.append(field.invalid("status.Phase", phase,
                                  "may only be 'Terminating' if `deletionTimestamp` is not empty"))
    return errs


def validate_namespace_finalize_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(_validate_namespace_finalizers(as_dict(new.get("spec")).get("finalizers"),
                                               lambda i: index("spec.finalizers", i)))
    return errs


# --- Node ---------------------------------------------------------------------------------------

def validate_taints(taints: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: dict[str, set[str]] = {}
    for i, taint in dicts(taints):
        taint_path = index(path, i)
        taint_key = as_str(taint.get("key"))
        errs.extend(validate_label_name(taint_key, child(taint_path, "key")))
        value = as_str(taint.get("value"))
        msgs = is_valid_label_value(value)
        if msgs:
            errs.append(field.invalid(child(taint_path, "value"), value, ";".join(msgs)))
        effect = as_str(taint.get("effect"))
        errs.extend(required_enum(effect, child(taint_path, "effect"), TAINT_EFFECTS))
        if taint_key in seen.get(effect, ()):
            errs.append(field.FieldError("Duplicate", taint_path, taint, "taints must be unique by key and effect pair"))
            continue
        seen.setdefault(effect, set()).add(taint_key)
    return errs


def _validate_node_resources(node: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    status = as_dict(node.get("status"))
    for section in ("capacity", "allocatable"):
        for name, value in as_dict(status.get(section)).items():
            path = f"status.{section}.{name}"
            parsed = parse_quantity_value(value)
            if parsed is not None and parsed < 0:
                errs.append(field.invalid(path, value if isinstance(value, str) else str(value), IS_NEGATIVE_ERROR_MSG))
    return errs


def validate_node_create(node: Obj) -> list[FieldError]:
    errs = validate_object_meta(node.get("metadata"), namespaced=False, name_fn=name_is_dns_subdomain)
    spec = as_dict(node.get("spec"))
    if as_list(spec.get("taints")):
        errs.extend(validate_taints(spec["taints"], "metadata.taints"))
    errs.extend(_validate_node_resources(node))
    return errs


def validate_node_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(_validate_node_resources(new))
    seen: list[Any] = []
    for i, address in enumerate(as_list(as_dict(new.get("status")).get("addresses"))):
        if address in seen:
            errs.append(field.duplicate(index("status.addresses", i), address))
        seen.append(address)
    new_spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    old_cidrs = as_list(old_spec.get("podCIDRs"))
    if old_cidrs and old_cidrs != as_list(new_spec.get("podCIDRs")):
        errs.append(field.forbidden("spec.podCIDRs", 'node updates may not change podCIDR except from "" to valid'))
    old_provider = as_str(old_spec.get("providerID"))
    if old_provider and old_provider != as_str(new_spec.get("providerID")):
        errs.append(field.forbidden("spec.providerID", 'node updates may not change providerID except from "" to valid'))
    if as_list(new_spec.get("taints")):
        errs.extend(validate_taints(new_spec["taints"], "metadata.taints"))
    if new_spec.get("externalID") != old_spec.get("externalID"):
        errs.append(field.forbidden("spec.externalID", "may not be updated"))
    return errs


# --- Service ------------------------------------------------------------------------------------

def _is_headless(spec: Obj) -> bool:
    return as_str(spec.get("clusterIP")) == "None"


def _validate_service_port(port: Obj, *, require_name: bool, names: set[str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    name = as_str(port.get("name"))
    if require_name and not name:
        errs.append(field.required(child(path, "name")))
    elif name:
        errs.extend(validate_dns1123_label(name, child(path, "name")))
        if name in names:
            errs.append(field.duplicate(child(path, "name"), name))
        else:
            names.add(name)
    number = as_int(port.get("port"))
    errs.extend(field.invalid(child(path, "port"), number, m) for m in is_valid_port_num(number))
    errs.extend(required_enum(as_str(port.get("protocol")), child(path, "protocol"), SUPPORTED_PORT_PROTOCOLS))
    errs.extend(validate_port_num_or_name(port.get("targetPort", 0), child(path, "targetPort")))
    if port.get("appProtocol") is not None:
        errs.extend(validate_qualified_name(as_str(port["appProtocol"]), child(path, "appProtocol")))
    return errs


def _validate_service_spec(svc: Obj) -> list[FieldError]:
    spec = as_dict(svc.get("spec"))
    errs: list[FieldError] = []
    svc_type = as_str(spec.get("type"))
    ports = list(dicts(spec.get("ports")))
    if not ports and not _is_headless(spec) and svc_type != "ExternalName":
        errs.append(field.required("spec.ports"))
    if svc_type in ("LoadBalancer", "NodePort") and _is_headless(spec):
        errs.append(field.invalid("spec.clusterIPs[0]", "None", f"may not be set to 'None' for {svc_type} services"))
    elif svc_type == "ExternalName":
        if as_list(spec.get("clusterIPs")):
            errs.append(field.forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if as_list(spec.get("ipFamilies")):
            errs.append(field.forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            errs.append(field.forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
        cname = as_str(spec.get("externalName")).removesuffix(".")
        if cname:
            errs.extend(field.invalid("spec.externalName", cname, m) for m in is_dns1123_subdomain(cname))
        else:
            errs.append(field.required("spec.externalName"))
    names: set[str] = set()
    for i, port in ports:
        errs.extend(_validate_service_port(port, require_name=len(ports) > 1, names=names,
                                           path=index("spec.ports", i)))
    if spec.get("selector") is not None:
        errs.extend(validate_labels(spec["selector"], "spec.selector"))
    affinity = as_str(spec.get("sessionAffinity"))
    errs.extend(required_enum(affinity, "spec.sessionAffinity", SESSION_AFFINITIES))
    if affinity == "ClientIP":
        timeout = as_dict(as_dict(spec.get("sessionAffinityConfig")).get("clientIP")).get("timeoutSeconds")
        if not isinstance(timeout, int) or not 0 < timeout <= 86400:
            errs.append(field.invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds", timeout,
                                      "must be greater than 0 and less than 86400"))
    elif affinity == "None" and spec.get("sessionAffinityConfig") is not None:
        errs.append(field.forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None"))
    for i, ip in enumerate(as_list(spec.get("externalIPs"))):
        errs.extend(_validate_ip(as_str(ip), index("spec.externalIPs", i)))
    errs.extend(required_enum(svc_type, "spec.type", SERVICE_TYPES))
    if svc_type == "ClusterIP":
        for i, port in ports:
            if as_int(port.get("nodePort")):
                errs.append(field.forbidden(child(index("spec.ports", i), "nodePort"),
                                            "may not be used when `type` is 'ClusterIP'"))
    seen_node_ports: set[tuple[str, int]] = set()
    for i, port in ports:
        node_port = as_int(port.get("nodePort"))
        if not node_port:
            continue
        ident = (as_str(port.get("protocol")), node_port)
        if ident in seen_node_ports:
            errs.append(field.duplicate(child(index("spec.ports", i), "nodePort"), node_port))
        seen_node_ports.add(ident)
    seen_ports: set[tuple[str, int]] = set()
    for i, port in ports:
        ident = (as_str(port.get("protocol")), as_int(port.get("port")))
        if ident in seen_ports:
            errs.append(field.duplicate(index("spec.ports", i), {"port": ident[1], "protocol": ident[0]}))
        seen_ports.add(ident)
    externally_accessible = svc_type in ("NodePort", "LoadBalancer") or (
        svc_type == "ClusterIP" and bool(as_list(spec.get("externalIPs"))))
    etp = as_str(spec.get("externalTrafficPolicy"))
    if not externally_accessible:
        if etp:
            errs.append(field.invalid("spec.externalTrafficPolicy", etp,
                                      "may only be set for externally-accessible services"))
    else:
        errs.extend(required_enum(etp, "spec.externalTrafficPolicy", TRAFFIC_POLICIES))
    itp = spec.get("internalTrafficPolicy")
    if itp is None:
        if svc_type in ("NodePort", "LoadBalancer", "ClusterIP"):
            errs.append(field.required("spec.internalTrafficPolicy"))
    elif itp not in TRAFFIC_POLICIES:
        errs.append(field.not_supported("spec.internalTrafficPolicy", itp, TRAFFIC_POLICIES))
    return errs


def _validate_ip(ip: str, path: str) -> list[FieldError]:
    try:
        ipaddress.ip_address(ip)
    except ValueError:
        return [field.invalid(path, ip, INVALID_IP_MSG)]
    return []


def validate_service_create(svc: Obj) -> list[FieldError]:
    errs = validate_object_meta(svc.get("metadata"), namespaced=True, name_fn=name_is_dns1035_label)
    errs.extend(_validate_service_spec(svc))
    return errs


def _validate_cluster_ips_update(new_spec: Obj, old_spec: Obj) -> list[FieldError]:
    """``validateUpgradeDowngradeClusterIPs``: allocated cluster IPs never change."""
    if "ExternalName" in (as_str(new_spec.get("type")), as_str(old_spec.get("type"))):
        return []
    old_ips = [as_str(ip) for ip in as_list(old_spec.get("clusterIPs"))]
    new_ips = [as_str(ip) for ip in as_list(new_spec.get("clusterIPs"))]
    errs: list[FieldError] = []
    if len(old_ips) == len(new_ips):
        for i, ip in enumerate(old_ips):
            if ip != new_ips[i]:
                errs.append(field.invalid(index("spec.clusterIPs", i), new_ips, "may not change once set"))
    elif len(old_ips) > len(new_ips):
        if not new_ips:
            errs.append(field.invalid("spec.clusterIPs[0]", None, "primary clusterIP can not be unset"))
        elif new_ips[0] != old_ips[0]:
            errs.append(field.invalid("spec.clusterIPs[0]", new_ips, "may not change once set"))
    elif old_ips and new_ips[0] != old_ips[0]:
        errs.append(field.invalid("spec.clusterIPs[0]", new_ips, "may not change once set"))
    return errs


def validate_service_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(_validate_cluster_ips_update(as_dict(new.get("spec")), as_dict(old.get("spec"))))
    errs.extend(validate_service_create(new))
    return errs


def validate_service_status_update(new: Obj, old: Obj) -> list[FieldError]:
    return validate_object_meta_update(new.get("metadata"), old.get("metadata"))


# --- ConfigMap, Secret, ServiceAccount ----------------------------------------------------------

def validate_config_map_create(cm: Obj) -> list[FieldError]:
    errs = validate_object_meta(cm.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)
    total = 0
    data, binary = as_dict(cm.get("data")), as_dict(cm.get("binaryData"))
    for k, v in data.items():
        errs.extend(field.invalid(key("data", k), k, m) for m in is_config_map_key(k))
        if k in binary:
            errs.append(field.invalid(key("data", k), k, "duplicate of key present in binaryData"))
        total += len(as_str(v).encode())
    for k, v in binary.items():
        errs.extend(field.invalid(key("binaryData", k), k, m) for m in is_config_map_key(k))
        total += _decoded_len(v)
    if total > MAX_SECRET_SIZE:
        errs.append(field.too_long("[]", MAX_SECRET_SIZE))  # the whole object: field.NewPath("").String()
    return errs


def validate_config_map_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(_immutable_payload(new, old, ("data", "binaryData")))
    errs.extend(validate_config_map_create(new))
    return errs


def _immutable_payload(new: Obj, old: Obj, fields: tuple[str, ...]) -> list[FieldError]:
    if old.get("immutable") is not True:
        return []
    errs: list[FieldError] = []
    if new.get("immutable") is not True:
        errs.append(field.forbidden("immutable", "field is immutable when `immutable` is set"))
    for name in fields:
        if new.get(name) != old.get(name):
            errs.append(field.forbidden(name, "field is immutable when `immutable` is set"))
    return errs


def _decoded_len(value: Any) -> int:
    text = as_str(value)
    try:
        return len(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError):
        return len(text)


_SECRET_REQUIRED_KEYS: Final = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


def validate_secret_create(secret: Obj) -> list[FieldError]:
    errs = validate_object_meta(secret.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)
    data = as_dict(secret.get("data"))
    total = 0
    for k, v in data.items():
        errs.extend(field.invalid(key("data", k), k, m) for m in is_config_map_key(k))
        total += _decoded_len(v)
    if total > MAX_SECRET_SIZE:
        errs.append(field.too_long("data", MAX_SECRET_SIZE))
    secret_type = as_str(secret.get("type"))
    if secret_type == "kubernetes.io/service-account-token":
        annotations = as_dict(as_dict(secret.get("metadata")).get("annotations"))
        if not as_str(annotations.get("kubernetes.io/service-account.name")):
            errs.append(field.required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif secret_type == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs.append(field.required("data[username]"))
            errs.append(field.required("data[password]"))
    elif secret_type in _SECRET_REQUIRED_KEYS:
        for required_key in _SECRET_REQUIRED_KEYS[secret_type]:
            if required_key not in data or (secret_type == "kubernetes.io/ssh-auth" and not data[required_key]):
                errs.append(field.required(key("data", required_key)))
                if secret_type != "kubernetes.io/tls":
                    break
    return errs


def validate_secret_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_immutable(as_str(new.get("type")), as_str(old.get("type")), "type"))
    errs.extend(_immutable_payload(new, old, ("data",)))
    errs.extend(validate_secret_create(new))
    return errs


def validate_service_account_create(sa: Obj) -> list[FieldError]:
    return validate_object_meta(sa.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)



# --- Events -------------------------------------------------------------------------------------

REPORTING_INSTANCE_LENGTH_LIMIT: Final = 128
ACTION_LENGTH_LIMIT: Final = 128
REASON_LENGTH_LIMIT: Final = 128
NOTE_LENGTH_LIMIT: Final = 1024


def _event_reporting_fields(event: Obj, *, message_field: str) -> list[FieldError]:
    errs: list[FieldError] = []
    controller = as_str(event.get("reportingController"))
    if not controller:
        errs.append(field.required("reportingController"))
    errs.extend(validate_qualified_name(controller, "reportingController"))
    for name, limit in (("reportingInstance", REPORTING_INSTANCE_LENGTH_LIMIT), ("action", ACTION_LENGTH_LIMIT),
                        ("reason", REASON_LENGTH_LIMIT)):
        value = as_str(event.get(name))
        if not value:
            errs.append(field.required(name))
        if len(value) > limit:
            errs.append(field.invalid(name, "", f"can have at most {limit} characters"))
    if len(as_str(event.get(message_field))) > NOTE_LENGTH_LIMIT:
        errs.append(field.invalid(message_field, "", f"can have at most {NOTE_LENGTH_LIMIT} characters"))
    return errs


def validate_event_create(event: Obj) -> list[FieldError]:
    """core/v1 Events on create: ``legacyValidateEvent`` (all ``ValidateEventCreate`` does for
    core/v1), then — only when that passed, as ``rest.BeforeCreate`` orders it — the registry's
    generic object-meta check, whose name rule is just "one URL path segment"."""
    errs = legacy_validate_event(event)
    if errs:
        return errs
    return validate_object_meta(event.get("metadata"), namespaced=True, name_fn=name_is_path_segment)


def validate_event_update(new: Obj, old: Obj) -> list[FieldError]:
    """core/v1 Events on update: the registry's ``ValidateObjectMetaUpdate``, then
    ``legacyValidateEvent`` of the new event (``ValidateEventUpdate`` for core/v1)."""
    return validate_object_meta_update(new.get("metadata"), old.get("metadata")) + legacy_validate_event(new)


def legacy_validate_event(event: Obj) -> list[FieldError]:
    """``legacyValidateEvent``: namespaces agree with the involved object; new-style events
    (with ``eventTime``) carry the reporting fields."""
    errs: list[FieldError] = []
    namespace = as_str(as_dict(event.get("metadata")).get("namespace"))
    involved_ns = as_str(as_dict(event.get("involvedObject")).get("namespace"))
    if not event.get("eventTime"):
        if not involved_ns:
            if namespace not in ("", "default"):
                errs.append(field.invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
        elif namespace != involved_ns:
            errs.append(field.invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            errs.append(field.invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
        errs.extend(_event_reporting_fields(event, message_field="message"))
    errs.extend(field.invalid("namespace", namespace, m) for m in is_dns1123_subdomain(namespace))
    return errs



def validate_events_v1_create(event: Obj) -> list[FieldError]:
    """events.k8s.io/v1 Events: eventTime, type and the reporting fields are mandatory."""
    errs = validate_object_meta(event.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)
    namespace = as_str(as_dict(event.get("metadata")).get("namespace"))
    regarding_ns = as_str(as_dict(event.get("regarding")).get("namespace"))
    if not regarding_ns and namespace not in ("default", "kube-system"):
        errs.append(field.invalid("involvedObject.namespace", regarding_ns, "does not match event.namespace"))
    if not event.get("eventTime"):
        errs.append(field.required("eventTime"))
    event_type = as_str(event.get("type"))
    if event_type not in ("Normal", "Warning"):
        errs.append(field.invalid("type", "", f"has invalid value: {event_type}"))
    errs.extend(_event_reporting_fields(event, message_field="note"))
    return errs



# --- Endpoints ----------------------------------------------------------------------------------

def validate_endpoints_create(ep: Obj) -> list[FieldError]:
    errs = validate_object_meta(ep.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)
    for i, subset in dicts(ep.get("subsets")):
        subset_path = index("subsets", i)
        addresses, not_ready = as_list(subset.get("addresses")), as_list(subset.get("notReadyAddresses"))
        if not addresses and not not_ready:
            errs.append(field.required(subset_path, "must specify `addresses` or `notReadyAddresses`"))
        for section in ("addresses", "notReadyAddresses"):
            for j, address in dicts(subset.get(section)):
                address_path = index(child(subset_path, section), j)
                errs.extend(_validate_ip(as_str(address.get("ip")), child(address_path, "ip")))
                hostname = as_str(address.get("hostname"))
                if hostname:
                    errs.extend(validate_dns1123_label(hostname, child(address_path, "hostname")))
                node_name = as_str(address.get("nodeName"))
                if node_name:
                    errs.extend(field.invalid(child(address_path, "nodeName"), node_name, m)
                                for m in name_is_dns_subdomain(node_name))
        ports = list(dicts(subset.get("ports")))
        for j, port in ports:
            port_path = index(child(subset_path, "ports"), j)
            name = as_str(port.get("name"))
            if len(ports) > 1 and not name:
                errs.append(field.required(child(port_path, "name")))
            elif name:
                errs.extend(validate_dns1123_label(name, child(port_path, "name")))
            number = as_int(port.get("port"))
            errs.extend(field.invalid(child(port_path, "port"), number, m) for m in is_valid_port_num(number))
            errs.extend(required_enum(as_str(port.get("protocol")), child(port_path, "protocol"),
                                      SUPPORTED_PORT_PROTOCOLS))
    return errs


