"""Pod and pod-template validation.

Upstream: ``pkg/apis/core/validation/validation.go`` — ``ValidatePodSpec``,
``validateContainers``/``validateInitContainers``/``validateContainerCommon``,
``ValidateVolumes``, ``validateContainerPorts``, ``ValidateEnv``, ``ValidateVolumeMounts``,
``validateProbe``, ``validateResourceRequirements``, ``ValidateTolerations``,
``validateAffinity``, ``validatePodHostNetworkDeps``, ``ValidatePodTemplateSpec``,
``ValidatePodCreate``, ``ValidatePodUpdate``, ``ValidatePodStatusUpdate``.  Checks run in
upstream's order so a multi-error response lists causes as kube-apiserver would.

Options fixed to kube-apiserver 1.33 defaults: relaxed env-var names, no pod-level resources,
the strict label-value checks of a fresh create.  Volume sources we do not simulate (cloud
disks, iSCSI, ...) are counted for the "exactly one source" rule but their inner fields are not
checked.  Resource quantities are parsed here with upstream's format rule; a malformed quantity
is a decode error (HTTP 400) upstream and is reported as an Invalid field error here.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, Final

import orjson

from everynode.api import field_errors as field
from everynode.api.field_errors import FieldError
from everynode.api.names import (
    inclusive_range_error,
    is_config_map_key,
    is_dns1123_label,
    is_http_header_name,
    is_qualified_name,
    is_relaxed_env_var_name,
    is_valid_label_value,
    is_valid_port_name,
    is_valid_port_num,
    name_is_dns_subdomain,
)
from everynode.api.quantity import parse_quantity_value
from everynode.api.scheduling import node_pin_name
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
    validate_annotations,
    validate_dns1123_label,
    validate_label_name,
    validate_label_selector,
    validate_labels,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
    validate_object_name,
    validate_qualified_name,
)
from everynode.memo import remember

Obj = dict[str, Any]
MAX_INT32: Final = 2**31 - 1

SUPPORTED_PORT_PROTOCOLS: Final = ["SCTP", "TCP", "UDP"]
RESTART_POLICIES: Final = ["Always", "OnFailure", "Never"]
DNS_POLICIES: Final = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
PULL_POLICIES: Final = ["Always", "IfNotPresent", "Never"]
TERMINATION_MESSAGE_POLICIES: Final = ["File", "FallbackToLogsOnError"]
TAINT_EFFECTS: Final = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
HOST_PATH_TYPES: Final = ["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"]
HTTP_SCHEMES: Final = ["HTTP", "HTTPS"]
PREEMPTION_POLICIES: Final = ["PreemptLowerPriority", "Never"]
NODE_SELECTOR_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
ENV_FIELD_PATHS: Final = [
    "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
    "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
]
VOLUME_FIELD_PATHS: Final = ["metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"]
FILE_MODE_ERROR_MSG: Final = "must be a number between 0 and 0777 (octal), both inclusive"
QUANTITY_ERROR_MSG: Final = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
UPDATABLE_POD_SPEC_FIELDS: Final = ",".join([
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
])

# validateVolumeSource checks sources in this order; the first one found "wins".
VOLUME_SOURCES: Final = (
    "emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret", "nfs", "iscsi",
    "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs", "quobyte", "downwardAPI", "fc",
    "flexVolume", "configMap", "azureFile", "vsphereVolume", "photonPersistentDisk", "portworxVolume",
    "azureDisk", "storageos", "projected", "scaleIO", "csi", "ephemeral", "image",
)
# Upstream's "more than 1 volume type" errors use a few odd child names; reproduce them.
_EXTRA_SOURCE_PATH: Final = {"downwardAPI": "downwarAPI", "cephfs": "cephFS"}


# --- quantities ---------------------------------------------------------------------------------

def _quantity_text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


# --- volumes ------------------------------------------------------------------------------------

def _path_no_backsteps(target: str, path: str) -> list[FieldError]:
    if ".." in target.replace("\\", "/").split("/"):
        return [field.invalid(path, target, "must not contain '..'")]
    return []


def _local_descending_path(target: str, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if target.startswith("/"):
        errs.append(field.invalid(path, target, "must be a relative path"))
    errs.extend(_path_no_backsteps(target, path))
    return errs


def _local_non_reserved_path(target: str, path: str) -> list[FieldError]:
    errs = _local_descending_path(target, path)
    if target.startswith(".."):
        errs.append(field.invalid(path, target, "must not start with '..'"))
    return errs


def _file_mode(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= 0o777:
        return [field.invalid(path, value, FILE_MODE_ERROR_MSG)]
    return []


def _key_to_paths(items: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, item in dicts(items):
        item_path = index(path, i)
        if not as_str(item.get("key")):
            errs.append(field.required(child(item_path, "key")))
        item_target = as_str(item.get("path"))
        if not item_target:
            errs.append(field.required(child(item_path, "path")))
        errs.extend(_local_non_reserved_path(item_target, child(item_path, "path")))
        errs.extend(_file_mode(item.get("mode"), child(item_path, "mode")))
    return errs


def _object_field_selector(ref: Obj, allowed: list[str], path: str) -> list[FieldError]:
    api_version = as_str(ref.get("apiVersion"))
    field_path = as_str(ref.get("fieldPath"))
    if not api_version:
        return [field.required(child(path, "apiVersion"))]
    if not field_path:
        return [field.required(child(path, "fieldPath"))]
    m = re.fullmatch(r"(metadata\.(?:annotations|labels))\['(.*)'\]", field_path)
    if m is not None:
        subscript = m.group(2)
        return validate_qualified_name(subscript.lower() if m.group(1).endswith("annotations") else subscript, path)
    if "[" in field_path:
        base = field_path.split("[", 1)[0]
        return [field.invalid(path, base, "does not support subscript")]
    if field_path not in allowed:
        return [field.not_supported(child(path, "fieldPath"), field_path, sorted(allowed))]
    return []


def _volume_source_errors(source_name: str, src: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if source_name == "hostPath":
        target = as_str(src.get("path"))
        if not target:
            return [field.required(child(path, "path"))]
        errs.extend(_path_no_backsteps(target, child(path, "path")))
        host_type = src.get("type")
        if host_type is not None and host_type not in HOST_PATH_TYPES:
            errs.append(field.not_supported(child(path, "type"), host_type, HOST_PATH_TYPES))
    elif source_name == "emptyDir":
        size = src.get("sizeLimit")
        if size is not None:
            parsed = parse_quantity_value(size)
            if parsed is None:
                errs.append(field.invalid(child(path, "sizeLimit"), _quantity_text(size), QUANTITY_ERROR_MSG))
            elif parsed < 0:
                errs.append(field.forbidden(child(path, "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
    elif source_name == "secret":
        if not as_str(src.get("secretName")):
            errs.append(field.required(child(path, "secretName")))
        errs.extend(_file_mode(src.get("defaultMode"), child(path, "defaultMode")))
        errs.extend(_key_to_paths(src.get("items"), child(path, "items")))
    elif source_name == "configMap":
        if not as_str(src.get("name")):
            errs.append(field.required(child(path, "name")))
        errs.extend(_file_mode(src.get("defaultMode"), child(path, "defaultMode")))
        errs.extend(_key_to_paths(src.get("items"), child(path, "items")))
    elif source_name == "persistentVolumeClaim":
        if not as_str(src.get("claimName")):
            errs.append(field.required(child(path, "claimName")))
    elif source_name == "downwardAPI":
        errs.extend(_file_mode(src.get("defaultMode"), child(path, "defaultMode")))
        for i, item in dicts(src.get("items")):
            item_path = index(child(path, "items"), i)
            target = as_str(item.get("path"))
            if not target:
                errs.append(field.required(child(item_path, "path")))
            errs.extend(_local_non_reserved_path(target, child(item_path, "path")))
            errs.extend(_file_mode(item.get("mode"), child(item_path, "mode")))
            if isinstance(item.get("fieldRef"), dict):
                errs.extend(_object_field_selector(item["fieldRef"], VOLUME_FIELD_PATHS, child(item_path, "fieldRef")))
    elif source_name == "projected":
        errs.extend(_file_mode(src.get("defaultMode"), child(path, "defaultMode")))
    return errs


def validate_volumes(volumes: Any, path: str) -> tuple[dict[str, Obj], list[FieldError]]:
    """``ValidateVolumes``: returns the valid volumes by name (for mount checks) and the errors."""
    errs: list[FieldError] = []
    names: dict[str, Obj] = {}
    for i, vol in dicts(volumes):
        vol_path = index(path, i)
        name = as_str(vol.get("name"))
        vol_errs: list[FieldError] = []
        found = 0
        for source_name in VOLUME_SOURCES:
            if vol.get(source_name) is None:
                continue
            if found:
                child_name = _EXTRA_SOURCE_PATH.get(source_name, source_name)
                vol_errs.append(field.forbidden(child(vol_path, child_name), "may not specify more than 1 volume type"))
                continue
            found += 1
            vol_errs.extend(_volume_source_errors(source_name, as_dict(vol[source_name]), child(vol_path, source_name)))
        if not found:
            vol_errs.append(field.required(vol_path, "must specify a volume type"))
        if not name:
            vol_errs.append(field.required(child(vol_path, "name")))
        else:
            vol_errs.extend(validate_dns1123_label(name, child(vol_path, "name")))
        if name in names:
            vol_errs.append(field.duplicate(child(vol_path, "name"), name))
        if vol_errs:
            errs.extend(vol_errs)
        else:
            names[name] = vol
    return names, errs


# --- containers ---------------------------------------------------------------------------------

def _validate_ports(ports: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, port in dicts(ports):
        port_path = index(path, i)
        name = as_str(port.get("name"))
        if name:
            msgs = is_valid_port_name(name)
            if msgs:
                errs.extend(field.invalid(child(port_path, "name"), name, m) for m in msgs)
            elif name in seen:
                errs.append(field.duplicate(child(port_path, "name"), name))
            else:
                seen.add(name)
        container_port = as_int(port.get("containerPort"))
        if container_port == 0:
            errs.append(field.required(child(port_path, "containerPort")))
        else:
            errs.extend(field.invalid(child(port_path, "containerPort"), container_port, m)
                        for m in is_valid_port_num(container_port))
        host_port = as_int(port.get("hostPort"))
        if host_port != 0:
            errs.extend(field.invalid(child(port_path, "hostPort"), host_port, m) for m in is_valid_port_num(host_port))
        protocol = as_str(port.get("protocol"))
        errs.extend(required_enum(protocol, child(port_path, "protocol"), SUPPORTED_PORT_PROTOCOLS))
    return errs


def _validate_key_selector(ref: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    name = as_str(ref.get("name"))
    errs.extend(field.invalid(child(path, "name"), name, m) for m in name_is_dns_subdomain(name))
    ref_key = as_str(ref.get("key"))
    if not ref_key:
        errs.append(field.required(child(path, "key")))
    else:
        errs.extend(field.invalid(child(path, "key"), ref_key, m) for m in is_config_map_key(ref_key))
    return errs


def _validate_env(env: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, var in dicts(env):
        var_path = index(path, i)
        name = as_str(var.get("name"))
        if not name:
            errs.append(field.required(child(var_path, "name")))
        else:
            errs.extend(field.invalid(child(var_path, "name"), name, m) for m in is_relaxed_env_var_name(name))
        value_from = var.get("valueFrom")
        if value_from is None:
            continue
        vf = as_dict(value_from)
        vf_path = child(var_path, "valueFrom")
        sources = 0
        if isinstance(vf.get("fieldRef"), dict):
            sources += 1
            errs.extend(_object_field_selector(vf["fieldRef"], ENV_FIELD_PATHS, child(vf_path, "fieldRef")))
        if isinstance(vf.get("resourceFieldRef"), dict):
            sources += 1
            if not as_str(vf["resourceFieldRef"].get("resource")):
                errs.append(field.required(child(child(vf_path, "resourceFieldRef"), "resource")))
        for ref_name in ("configMapKeyRef", "secretKeyRef"):
            if isinstance(vf.get(ref_name), dict):
                sources += 1
                errs.extend(_validate_key_selector(vf[ref_name], child(vf_path, ref_name)))
        if sources == 0:
            errs.append(field.invalid(
                vf_path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
        elif as_str(var.get("value")):
            errs.append(field.invalid(vf_path, "", "may not be specified when `value` is not empty"))
        elif sources > 1:
            errs.append(field.invalid(vf_path, "", "may not have more than one field specified at a time"))
    return errs


def _validate_env_from(env_from: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, src in dicts(env_from):
        src_path = index(path, i)
        prefix = as_str(src.get("prefix"))
        if prefix:
            errs.extend(field.invalid(child(src_path, "prefix"), prefix, m) for m in is_relaxed_env_var_name(prefix))
        sources = 0
        for ref_name in ("configMapRef", "secretRef"):
            if isinstance(src.get(ref_name), dict):
                sources += 1
                name = as_str(src[ref_name].get("name"))
                name_path = child(child(src_path, ref_name), "name")
                if not name:
                    errs.append(field.required(name_path))
                else:
                    errs.extend(field.invalid(name_path, name, m) for m in name_is_dns_subdomain(name, True))
        if sources == 0:
            errs.append(field.invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif sources > 1:
            errs.append(field.invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def _validate_volume_mounts(mounts: Any, volumes: dict[str, Obj], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    mount_points: set[str] = set()
    for i, mnt in dicts(mounts):
        mnt_path = index(path, i)
        name = as_str(mnt.get("name"))
        if not name:
            errs.append(field.required(child(mnt_path, "name")))
        if name not in volumes:
            errs.append(field.not_found(child(mnt_path, "name"), name))
        mount_path = as_str(mnt.get("mountPath"))
        if not mount_path:
            errs.append(field.required(child(mnt_path, "mountPath")))
        if mount_path in mount_points:
            errs.append(field.invalid(child(mnt_path, "mountPath"), mount_path, "must be unique"))
        mount_points.add(mount_path)
        sub_path = as_str(mnt.get("subPath"))
        if sub_path:
            # Upstream reports these on the list's path, not the entry's; reproduced.
            errs.extend(_local_descending_path(sub_path, child(path, "subPath")))
        sub_path_expr = as_str(mnt.get("subPathExpr"))
        if sub_path_expr:
            if sub_path:
                errs.append(field.invalid(child(mnt_path, "subPathExpr"), sub_path_expr,
                                          "subPathExpr and subPath are mutually exclusive"))
            errs.extend(_local_descending_path(sub_path_expr, child(path, "subPathExpr")))
    return errs


_STANDARD_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD_RESOURCES: Final = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services", "replicationcontrollers",
    "resourcequotas", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers",
})


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _overcommit_allowed(name: str) -> bool:
    return _is_native(name) and not _is_hugepages(name)


def _validate_container_resource_name(name: str, path: str) -> list[FieldError]:
    errs = [field.invalid(path, name, m) for m in is_qualified_name(name)]
    if not errs and "/" not in name and name not in _STANDARD_RESOURCES and not _is_hugepages(name) \
            and not name.startswith("requests.hugepages-"):
        errs.append(field.invalid(path, name, "must be a standard resource type or fully qualified"))
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            errs.append(field.invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native(name) and (name.startswith("requests.") or is_qualified_name("requests." + name)):
        errs.append(field.invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def _validate_quantity(name: str, value: Any, path: str) -> tuple[Fraction | None, list[FieldError]]:
    parsed = parse_quantity_value(value)
    if parsed is None:
        return None, [field.invalid(path, _quantity_text(value), QUANTITY_ERROR_MSG)]
    errs: list[FieldError] = []
    if parsed < 0:
        errs.append(field.invalid(path, _quantity_text(value), IS_NEGATIVE_ERROR_MSG))
    if not _is_native(name) and (parsed * 1000) % 1000 != 0:
        errs.append(field.invalid(path, _quantity_text(value), "must be an integer"))
    return parsed, errs


def validate_resource_requirements(resources: Any, path: str) -> list[FieldError]:
    res = as_dict(resources)
    errs: list[FieldError] = []
    lim_path, req_path = child(path, "limits"), child(path, "requests")
    limits: dict[str, Fraction] = {}
    lim_cpu_mem = req_cpu_mem = lim_huge = req_huge = False
    for name, value in as_dict(res.get("limits")).items():
        p = key(lim_path, name)
        errs.extend(_validate_container_resource_name(name, p))
        parsed, q_errs = _validate_quantity(name, value, p)
        errs.extend(q_errs)
        if parsed is not None:
            limits[name] = parsed
        lim_huge = lim_huge or _is_hugepages(name)
        lim_cpu_mem = lim_cpu_mem or name in ("cpu", "memory")
    raw_limits = as_dict(res.get("limits"))
    for name, value in as_dict(res.get("requests")).items():
        p = key(req_path, name)
        errs.extend(_validate_container_resource_name(name, p))
        parsed, q_errs = _validate_quantity(name, value, p)
        errs.extend(q_errs)
        if name in raw_limits:
            limit = limits.get(name)
            if parsed is not None and limit is not None:
                limit_text = _quantity_text(raw_limits[name])
                if parsed != limit and not _overcommit_allowed(name):
                    errs.append(field.invalid(req_path, _quantity_text(value),
                                              f"must be equal to {name} limit of {limit_text}"))
                elif parsed > limit:
                    errs.append(field.invalid(req_path, _quantity_text(value),
                                              f"must be less than or equal to {name} limit of {limit_text}"))
        elif not _overcommit_allowed(name):
            errs.append(field.required(lim_path, "Limit must be set for non overcommitable resources"))
        req_huge = req_huge or _is_hugepages(name)
        req_cpu_mem = req_cpu_mem or name in ("cpu", "memory")
    if not lim_cpu_mem and not req_cpu_mem and (lim_huge or req_huge):
        errs.append(field.forbidden(path, "HugePages require cpu or memory"))
    return errs


def validate_port_num_or_name(port: Any, path: str) -> list[FieldError]:
    """An int-or-string port (``validatePortNumOrName``): a port number or an IANA port name."""
    if isinstance(port, int) and not isinstance(port, bool):
        return [field.invalid(path, port, m) for m in is_valid_port_num(port)]
    if isinstance(port, str):
        return [field.invalid(path, port, m) for m in is_valid_port_name(port)]
    return [field.invalid(path, port, "must be an int or a string")]


def _validate_handler(handler: Obj, path: str, *, allow_sleep: bool, allow_grpc: bool,
                      grace_period: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    count = 0
    kinds = ["exec", "httpGet", "tcpSocket"]
    if allow_grpc:
        kinds.append("grpc")
    if allow_sleep:
        kinds.append("sleep")
    for kind in kinds:
        if handler.get(kind) is None:
            continue
        kind_path = child(path, kind)
        if count:
            errs.append(field.forbidden(kind_path, "may not specify more than 1 handler type"))
            continue
        count += 1
        action = as_dict(handler[kind])
        if kind == "exec":
            if not as_list(action.get("command")):
                errs.append(field.required(child(kind_path, "command")))
        elif kind == "httpGet":
            if not as_str(action.get("path")):
                errs.append(field.required(child(kind_path, "path")))
            errs.extend(validate_port_num_or_name(action.get("port"), child(kind_path, "port")))
            scheme = as_str(action.get("scheme"))
            if scheme not in HTTP_SCHEMES:
                errs.append(field.not_supported(child(kind_path, "scheme"), scheme, HTTP_SCHEMES))
            for _, header in dicts(action.get("httpHeaders")):
                header_name = as_str(header.get("name"))
                errs.extend(field.invalid(child(kind_path, "httpHeaders"), header_name, m)
                            for m in is_http_header_name(header_name))
        elif kind == "tcpSocket":
            errs.extend(validate_port_num_or_name(action.get("port"), child(kind_path, "port")))
        elif kind == "grpc":
            errs.extend(validate_port_num_or_name(as_int(action.get("port")), child(kind_path, "port")))
        elif kind == "sleep":
            seconds = as_int(action.get("seconds"))
            if isinstance(grace_period, int) and not 0 <= seconds <= grace_period:
                errs.append(field.invalid(
                    kind_path, seconds,
                    f"must be non-negative and less than terminationGracePeriodSeconds ({grace_period})"))
    if count == 0:
        errs.append(field.required(path, "must specify a handler type"))
    return errs


def _validate_probe(probe: Any, path: str, *, kind: str, grace_period: Any) -> list[FieldError]:
    if probe is None:
        return []
    pr = as_dict(probe)
    errs = _validate_handler(pr, path, allow_sleep=False, allow_grpc=True, grace_period=grace_period)
    for name in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        errs.extend(validate_nonnegative(pr.get(name), child(path, name)))
    tgps = pr.get("terminationGracePeriodSeconds")
    if isinstance(tgps, int) and tgps <= 0:
        errs.append(field.invalid(child(path, "terminationGracePeriodSeconds"), tgps, "must be greater than 0"))
    if kind in ("livenessProbe", "startupProbe"):
        threshold = pr.get("successThreshold", 1)
        if threshold != 1:
            errs.append(field.invalid(child(path, "successThreshold"), threshold, "must be 1"))
    elif kind == "readinessProbe" and tgps is not None:
        errs.append(field.invalid(child(path, "terminationGracePeriodSeconds"), tgps,
                                  "must not be set for readinessProbes"))
    return errs


def _validate_lifecycle(lifecycle: Any, path: str, grace_period: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    lc = as_dict(lifecycle)
    for hook in ("postStart", "preStop"):
        if lc.get(hook) is not None:
            errs.extend(_validate_handler(as_dict(lc[hook]), child(path, hook), allow_sleep=True,
                                          allow_grpc=False, grace_period=grace_period))
    return errs


def _validate_container_common(ctr: Obj, volumes: dict[str, Obj], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    name = as_str(ctr.get("name"))
    if not name:
        errs.append(field.required(child(path, "name")))
    else:
        errs.extend(validate_dns1123_label(name, child(path, "name")))
    if not as_str(ctr.get("image")):
        errs.append(field.required(child(path, "image")))
    policy = as_str(ctr.get("terminationMessagePolicy"))
    errs.extend(required_enum(policy, child(path, "terminationMessagePolicy"), TERMINATION_MESSAGE_POLICIES))
    errs.extend(_validate_ports(ctr.get("ports"), child(path, "ports")))
    errs.extend(_validate_env(ctr.get("env"), child(path, "env")))
    errs.extend(_validate_env_from(ctr.get("envFrom"), child(path, "envFrom")))
    errs.extend(_validate_volume_mounts(ctr.get("volumeMounts"), volumes, child(path, "volumeMounts")))
    errs.extend(required_enum(as_str(ctr.get("imagePullPolicy")), child(path, "imagePullPolicy"),
                              sorted(PULL_POLICIES)))
    errs.extend(validate_resource_requirements(ctr.get("resources"), child(path, "resources")))
    return errs


def _host_port_conflicts(containers: list[tuple[int, Obj]], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for ci, ctr in containers:
        for pi, port in dicts(ctr.get("ports")):
            host_port = as_int(port.get("hostPort"))
            if host_port == 0:
                continue
            ident = f"{as_str(port.get('protocol'))}/{as_str(port.get('hostIP'))}/{host_port}"
            if ident in seen:
                errs.append(field.duplicate(child(index(child(index(path, ci), "ports"), pi), "hostPort"), ident))
            else:
                seen.add(ident)
    return errs


def _validate_containers(containers: Any, volumes: dict[str, Obj], path: str, grace_period: Any) -> list[FieldError]:
    ctrs = list(dicts(containers))
    if not ctrs:
        return [field.required(path)]
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, ctr in ctrs:
        ctr_path = index(path, i)
        errs.extend(_validate_container_common(ctr, volumes, ctr_path))
        name = as_str(ctr.get("name"))
        if name in names:
            errs.append(field.duplicate(child(ctr_path, "name"), name))
        else:
            names.add(name)
        if ctr.get("lifecycle") is not None:
            errs.extend(_validate_lifecycle(ctr["lifecycle"], child(ctr_path, "lifecycle"), grace_period))
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            errs.extend(_validate_probe(ctr.get(probe), child(ctr_path, probe), kind=probe, grace_period=grace_period))
        if ctr.get("restartPolicy") is not None:
            errs.append(field.forbidden(child(ctr_path, "restartPolicy"), "may not be set for non-init containers"))
    errs.extend(_host_port_conflicts(ctrs, path))
    return errs


def _validate_init_containers(init: Any, regular: Any, volumes: dict[str, Obj], path: str,
                              grace_period: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    names = {as_str(c.get("name")) for _, c in dicts(regular)}
    for i, ctr in dicts(init):
        ctr_path = index(path, i)
        errs.extend(_validate_container_common(ctr, volumes, ctr_path))
        restart_always = False
        if ctr.get("restartPolicy") is not None:
            policy = ctr["restartPolicy"]
            if policy != "Always":
                errs.append(field.not_supported(child(ctr_path, "restartPolicy"), policy, ["Always"]))
            restart_always = policy == "Always"
        name = as_str(ctr.get("name"))
        if name in names:
            errs.append(field.duplicate(child(ctr_path, "name"), name))
        elif name:
            names.add(name)
        errs.extend(_host_port_conflicts([(i, ctr)], path))
        if restart_always:
            if ctr.get("lifecycle") is not None:
                errs.extend(_validate_lifecycle(ctr["lifecycle"], child(ctr_path, "lifecycle"), grace_period))
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                errs.extend(_validate_probe(ctr.get(probe), child(ctr_path, probe), kind=probe,
                                            grace_period=grace_period))
        else:
            for forbidden_field in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if ctr.get(forbidden_field) is not None:
                    errs.append(field.forbidden(child(ctr_path, forbidden_field),
                                                "may not be set for init containers without restartPolicy=Always"))
    return errs


# --- scheduling constraints ---------------------------------------------------------------------

def validate_tolerations(tolerations: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, tol in dicts(tolerations):
        errs.extend(_toleration_errors(tol, index(path, i)))
    return errs


# (path, key, operator, effect, value, tolerationSeconds set) -> the errors of that toleration.
# Every DaemonSet pod carries the same ~8 tolerations (the controller's defaults), and checking
# them (label name and value syntax) was a visible share of a pod create.  The key holds every
# input the check reads, so a hit is the plain computation's answer; FieldErrors are frozen.
_TOLERATION_ERRORS: Final[dict[tuple[str, str, str, str, str, bool], tuple[FieldError, ...]]] = {}
_TOLERATION_ERRORS_MAX: Final = 4096


def _toleration_errors(tol: Obj, tol_path: str) -> tuple[FieldError, ...]:
    memo_key = (tol_path, as_str(tol.get("key")), as_str(tol.get("operator")), as_str(tol.get("effect")),
                as_str(tol.get("value")), tol.get("tolerationSeconds") is not None)
    errs = _TOLERATION_ERRORS.get(memo_key)
    if errs is None:
        errs = remember(_TOLERATION_ERRORS, memo_key, tuple(_validate_toleration(*memo_key)),
                        limit=_TOLERATION_ERRORS_MAX)
    return errs


def _validate_toleration(tol_path: str, tol_key: str, operator: str, effect: str, value: str,
                         has_seconds: bool) -> list[FieldError]:
    """Upstream ``validateTolerations`` for one toleration (its fields already read as strings)."""
    errs: list[FieldError] = []
    if tol_key:
        errs.extend(validate_label_name(tol_key, child(tol_path, "key")))
    if not tol_key and operator != "Exists":
        errs.append(field.invalid(child(tol_path, "operator"), operator,
                                  'operator must be Exists when `key` is empty, which means "match all values and all keys"'))
    if has_seconds and effect != "NoExecute":
        errs.append(field.invalid(child(tol_path, "effect"), effect,
                                  "effect must be 'NoExecute' when `tolerationSeconds` is set"))
    if operator in ("Equal", ""):
        msgs = is_valid_label_value(value)
        if msgs:
            errs.append(field.invalid(child(tol_path, "operator"), value, ";".join(msgs)))
    elif operator == "Exists":
        if value:
            errs.append(field.invalid(child(tol_path, "operator"), value,
                                      "value must be empty when `operator` is 'Exists'"))
    else:
        errs.append(field.not_supported(child(tol_path, "operator"), operator, ["Equal", "Exists"]))
    if effect and effect not in TAINT_EFFECTS:
        errs.append(field.not_supported(child(tol_path, "effect"), effect, TAINT_EFFECTS))
    return errs


def _validate_node_selector_requirement(req: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    operator = as_str(req.get("operator"))
    values = as_list(req.get("values"))
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(field.required(child(path, "values"), "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(field.forbidden(child(path, "values"),
                                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(field.required(child(path, "values"),
                                       "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(field.invalid(child(path, "operator"), operator, "not a valid selector operator"))
    errs.extend(validate_label_name(as_str(req.get("key")), child(path, "key")))
    for j, value in enumerate(values):
        text = as_str(value)
        errs.extend(field.invalid(index(child(path, "values"), j), text, m) for m in is_valid_label_value(text))
    return errs


def _validate_node_field_selector_requirement(req: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    operator = as_str(req.get("operator"))
    values = as_list(req.get("values"))
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            errs.append(field.required(child(path, "values"),
                                       "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
    else:
        errs.append(field.invalid(child(path, "operator"), operator, "not a valid selector operator"))
    req_key = as_str(req.get("key"))
    if req_key != "metadata.name":
        errs.append(field.invalid(child(path, "key"), req_key, "not a valid field selector key"))
    else:
        for j, value in enumerate(values):
            text = as_str(value)
            errs.extend(field.invalid(index(child(path, "values"), j), text, m) for m in name_is_dns_subdomain(text))
    return errs


def validate_node_selector_term(term: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, req in dicts(term.get("matchExpressions")):
        errs.extend(_validate_node_selector_requirement(req, index(child(path, "matchExpressions"), j)))
    for j, req in dicts(term.get("matchFields")):
        errs.extend(_validate_node_field_selector_requirement(req, index(child(path, "matchFields"), j)))
    return errs


def _validate_node_selector(selector: Obj, path: str) -> list[FieldError]:
    terms_path = child(path, "nodeSelectorTerms")
    terms = list(dicts(selector.get("nodeSelectorTerms")))
    if not terms:
        return [field.required(terms_path, "must have at least one node selector term")]
    errs: list[FieldError] = []
    for i, term in terms:
        errs.extend(validate_node_selector_term(term, index(terms_path, i)))
    return errs


def _validate_weight(term: Obj, path: str) -> list[FieldError]:
    weight = as_int(term.get("weight"))
    if weight <= 0 or weight > 100:
        return [field.invalid(child(path, "weight"), weight, "must be in the range 1-100")]
    return []


def _validate_pod_affinity_term(term: Obj, path: str) -> list[FieldError]:
    errs = validate_label_selector(term.get("labelSelector"), child(path, "labelSelector"))
    errs.extend(validate_label_selector(term.get("namespaceSelector"), child(path, "namespaceSelector")))
    for i, ns in enumerate(as_list(term.get("namespaces"))):
        errs.extend(field.invalid(index(child(path, "namespace"), i), as_str(ns), m) for m in is_dns1123_label(as_str(ns)))
    topology_key = as_str(term.get("topologyKey"))
    if not topology_key:
        errs.append(field.required(child(path, "topologyKey"), "can not be empty"))
    else:
        errs.extend(validate_label_name(topology_key, child(path, "topologyKey")))
    return errs


def _validate_pod_affinity(affinity: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    required_path = child(path, "requiredDuringSchedulingIgnoredDuringExecution")
    for i, term in dicts(affinity.get("requiredDuringSchedulingIgnoredDuringExecution")):
        errs.extend(_validate_pod_affinity_term(term, index(required_path, i)))
    preferred_path = child(path, "preferredDuringSchedulingIgnoredDuringExecution")
    for i, term in dicts(affinity.get("preferredDuringSchedulingIgnoredDuringExecution")):
        term_path = index(preferred_path, i)
        errs.extend(_validate_weight(term, term_path))
        errs.extend(_validate_pod_affinity_term(as_dict(term.get("podAffinityTerm")), child(term_path, "podAffinityTerm")))
    return errs


# The node pin's one value, below ``affinity``: the path of the only rule the pin can break.
_PIN_VALUE: Final = "nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values[0]"


def validate_affinity(affinity: Any, path: str) -> list[FieldError]:
    """``validateAffinity``.  A DaemonSet pod's node pin, which every one of its pods carries
    with its own node's name, can break one rule only — its name's — so it is checked alone:
    the walk of its seven levels building each one's field path was most of a templated pod's
    own validation (tests/unit/test_validation_pod.py: the same errors as the walk)."""
    name = node_pin_name(affinity)
    if name is not None:
        return [field.invalid(child(path, _PIN_VALUE), name, m) for m in name_is_dns_subdomain(name)]
    return _validate_affinity_walk(affinity, path)


def _validate_affinity_walk(affinity: Any, path: str) -> list[FieldError]:
    if affinity is None:
        return []
    aff = as_dict(affinity)
    errs: list[FieldError] = []
    if aff.get("nodeAffinity") is not None:
        node = as_dict(aff["nodeAffinity"])
        node_path = child(path, "nodeAffinity")
        if node.get("requiredDuringSchedulingIgnoredDuringExecution") is not None:
            errs.extend(_validate_node_selector(as_dict(node["requiredDuringSchedulingIgnoredDuringExecution"]),
                                               child(node_path, "requiredDuringSchedulingIgnoredDuringExecution")))
        preferred_path = child(node_path, "preferredDuringSchedulingIgnoredDuringExecution")
        for i, term in dicts(node.get("preferredDuringSchedulingIgnoredDuringExecution")):
            term_path = index(preferred_path, i)
            errs.extend(_validate_weight(term, term_path))
            errs.extend(validate_node_selector_term(as_dict(term.get("preference")), child(term_path, "preference")))
    for kind in ("podAffinity", "podAntiAffinity"):
        if aff.get(kind) is not None:
            errs.extend(_validate_pod_affinity(as_dict(aff[kind]), child(path, kind)))
    return errs


# --- pod spec -----------------------------------------------------------------------------------

# The fields of a pod spec that differ from pod to pod of one template (the DaemonSet
# controller pins each pod to its node with a matchFields affinity; the scheduler sets nodeName).
_PER_POD_FIELDS: Final = frozenset({"affinity", "nodeName"})
# (path, resource_is_pod, JSON text of the spec without _PER_POD_FIELDS) of specs found valid.
_VALID_SPECS: Final[dict[tuple[str, bool, bytes], bool]] = {}
_VALID_SPECS_MAX: Final = 4096


def validate_pod_spec(spec: Any, path: str, *, resource_is_pod: bool) -> list[FieldError]:
    """``ValidatePodSpec`` (plus ``validatePodHostNetworkDeps``) for a defaulted spec.

    Memoised per template: the pods of a DaemonSet (and of any controller) carry one template's
    spec plus a few per-pod fields (``_PER_POD_FIELDS``), whose rules read nothing else.  A spec
    whose other fields, as JSON text, were found valid before is therefore valid but for those
    fields, which are then checked alone — their errors, if any, come out in the same order as
    in the full check, because the rest adds none.  Only valid specs are remembered."""
    sp = as_dict(spec)
    try:
        key = (path, resource_is_pod, orjson.dumps({k: v for k, v in sp.items() if k not in _PER_POD_FIELDS}))
    except TypeError:  # not JSON-shaped (a non-string key): check it every time
        return _validate_pod_spec(sp, path, resource_is_pod=resource_is_pod)
    if key in _VALID_SPECS:
        return _validate_per_pod_fields(sp, path)
    errs = _validate_pod_spec(sp, path, resource_is_pod=resource_is_pod)
    if not errs:
        remember(_VALID_SPECS, key, True, limit=_VALID_SPECS_MAX)
    return errs


def _validate_per_pod_fields(sp: dict[str, Any], path: str) -> list[FieldError]:
    """The rules of ``_PER_POD_FIELDS``, in the order :func:`_validate_pod_spec` applies them."""
    errs = validate_affinity(sp.get("affinity"), child(path, "affinity"))
    errs.extend(_node_name_errors(sp, path))
    return errs


def _node_name_errors(sp: dict[str, Any], path: str) -> list[FieldError]:
    node_name = as_str(sp.get("nodeName"))
    if not node_name:
        return []
    return [field.invalid(child(path, "nodeName"), node_name, m) for m in name_is_dns_subdomain(node_name)]


def _validate_pod_spec(sp: dict[str, Any], path: str, *, resource_is_pod: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    grace_period = sp.get("terminationGracePeriodSeconds")
    if grace_period is None:
        errs.append(field.required(child(path, "terminationGracePeriodSeconds")))
    volumes, vol_errs = validate_volumes(sp.get("volumes"), child(path, "volumes"))
    errs.extend(vol_errs)
    errs.extend(_validate_containers(sp.get("containers"), volumes, child(path, "containers"), grace_period))
    errs.extend(_validate_init_containers(sp.get("initContainers"), sp.get("containers"), volumes,
                                          child(path, "initContainers"), grace_period))
    if sp.get("hostNetwork") is True:
        for ci, ctr in dicts(sp.get("containers")):
            for pi, port in dicts(ctr.get("ports")):
                host_port, container_port = as_int(port.get("hostPort")), as_int(port.get("containerPort"))
                if (resource_is_pod or host_port != 0) and host_port != container_port:
                    errs.append(field.invalid(
                        child(index(child(index(child(path, "containers"), ci), "ports"), pi), "hostPort"),
                        host_port, "must match `containerPort` when `hostNetwork` is true"))
    restart_policy = as_str(sp.get("restartPolicy"))
    errs.extend(required_enum(restart_policy, child(path, "restartPolicy"), RESTART_POLICIES))
    dns_policy = as_str(sp.get("dnsPolicy"))
    errs.extend(required_enum(dns_policy, child(path, "dnsPolicy"), DNS_POLICIES))
    errs.extend(validate_labels(sp.get("nodeSelector"), child(path, "nodeSelector")))
    for i, secret in dicts(sp.get("imagePullSecrets")):
        if set(secret) - {"name"}:
            errs.append(field.invalid(index(child(path, "imagePullSecrets"), i), secret, "only name may be set"))
    errs.extend(validate_affinity(sp.get("affinity"), child(path, "affinity")))
    if dns_policy == "None":
        dns_config = sp.get("dnsConfig")
        if dns_config is None:
            errs.append(field.required(child(path, "dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None"))
        elif not as_list(as_dict(dns_config).get("nameservers")):
            errs.append(field.required(child(child(path, "dnsConfig"), "nameservers"),
                                       "must provide at least one DNS nameserver when `dnsPolicy` is None"))
    for i, gate in dicts(sp.get("readinessGates")):
        errs.extend(validate_qualified_name(as_str(gate.get("conditionType")),
                                            child(index(child(path, "readinessGates"), i), "conditionType")))
    service_account = as_str(sp.get("serviceAccountName"))
    if service_account:
        errs.extend(field.invalid(child(path, "serviceAccountName"), service_account, m)
                    for m in name_is_dns_subdomain(service_account))
    errs.extend(_node_name_errors(sp, path))
    deadline = sp.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not 1 <= deadline <= MAX_INT32:
        errs.append(field.invalid(child(path, "activeDeadlineSeconds"), deadline, inclusive_range_error(1, MAX_INT32)))
    for name in ("hostname", "subdomain"):
        value = as_str(sp.get(name))
        if value:
            errs.extend(validate_dns1123_label(value, child(path, name)))
    if as_list(sp.get("tolerations")):
        errs.extend(validate_tolerations(sp["tolerations"], child(path, "tolerations")))
    priority_class = as_str(sp.get("priorityClassName"))
    if priority_class:
        errs.extend(field.invalid(child(path, "priorityClassName"), priority_class, m)
                    for m in name_is_dns_subdomain(priority_class))
    if sp.get("preemptionPolicy") is not None:
        policy = as_str(sp["preemptionPolicy"])
        errs.extend(required_enum(policy, child(path, "preemptionPolicy"), PREEMPTION_POLICIES))
    return errs


def validate_pod_template_spec(template: Any, path: str) -> list[FieldError]:
    """``ValidatePodTemplateSpec``: template labels/annotations and the pod spec under ``path.spec``."""
    tpl = as_dict(template)
    md = as_dict(tpl.get("metadata"))
    errs = validate_labels(md.get("labels"), child(child(path, "metadata"), "labels"))
    errs.extend(validate_annotations(md.get("annotations"), child(child(path, "metadata"), "annotations")))
    spec = as_dict(tpl.get("spec"))
    errs.extend(validate_pod_spec(spec, child(path, "spec"), resource_is_pod=False))
    if as_list(spec.get("ephemeralContainers")):
        errs.append(field.forbidden(child(child(path, "spec"), "ephemeralContainers"),
                                    "ephemeral containers not allowed in pod template"))
    return errs


def _validate_pod_metadata_and_spec(pod: Obj) -> list[FieldError]:
    errs = validate_object_meta(pod.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)
    spec = as_dict(pod.get("spec"))
    errs.extend(validate_pod_spec(spec, "spec", resource_is_pod=True))
    for key_name in ("containers", "initContainers"):
        for i, ctr in dicts(spec.get(key_name)):
            image = as_str(ctr.get("image"))
            if image != image.strip():
                errs.append(field.invalid(child(index(child("spec", key_name), i), "image"), image,
                                          "must not have leading or trailing whitespace"))
    return errs


def validate_pod_create_per_object(pod: Obj) -> list[FieldError]:
    """The rules of :func:`validate_pod_create` that read what differs between the pods of one
    template — the name (generated) and ``_PER_POD_FIELDS`` — in the order it applies them:
    a pod whose other fields passed (the same fields as another pod's) gets all its errors here
    (registry/templates.py)."""
    errs = validate_object_name(as_dict(pod.get("metadata")), name_fn=name_is_dns_subdomain)
    errs.extend(_validate_per_pod_fields(as_dict(pod.get("spec")), "spec"))
    return errs


def validate_pod_create(pod: Obj) -> list[FieldError]:
    errs = _validate_pod_metadata_and_spec(pod)
    spec = as_dict(pod.get("spec"))
    if as_list(spec.get("ephemeralContainers")):
        errs.append(field.forbidden("spec.ephemeralContainers", "cannot be set on create"))
    if as_str(spec.get("nodeName")) and as_list(spec.get("schedulingGates")):
        errs.append(field.forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared"))
    return errs


def _spec_diff(old: Any, new: Any, path: str = "") -> list[str]:
    """A compact, readable stand-in for Go's ``cmp.Diff`` (which cannot be reproduced exactly)."""
    if isinstance(old, dict) and isinstance(new, dict):
        lines: list[str] = []
        for k in list(old) + [k for k in new if k not in old]:
            lines.extend(_spec_diff(old.get(k), new.get(k), child(path, k)))
        return lines
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        lines = []
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            lines.extend(_spec_diff(a, b, index(path, i)))
        return lines
    if old == new:
        return []
    return [f"- {path}: {orjson.dumps(old).decode()}", f"+ {path}: {orjson.dumps(new).decode()}"]


def _tolerations_only_added(new: list[Any], old: list[Any], path: str) -> list[FieldError]:
    for old_tol in old:
        if not isinstance(old_tol, dict):
            continue
        base = {k: v for k, v in old_tol.items() if k != "tolerationSeconds"}
        if not any(isinstance(t, dict) and {k: v for k, v in t.items() if k != "tolerationSeconds"} == base
                   for t in new):
            return [field.forbidden(path, "existing toleration can not be modified except its tolerationSeconds")]
    return validate_tolerations(new, path)


def validate_pod_update(new: Obj, old: Obj) -> list[FieldError]:
    """``ValidatePodUpdate``: only images, activeDeadlineSeconds and added tolerations may change."""
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(_validate_pod_metadata_and_spec(new))
    new_spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    for key_name in ("containers", "initContainers"):
        new_ctrs, old_ctrs = as_list(new_spec.get(key_name)), as_list(old_spec.get(key_name))
        ctr_path = child("spec", key_name)
        if len(new_ctrs) != len(old_ctrs):
            errs.append(field.forbidden(ctr_path, "pod updates may not add or remove containers"))
            return errs
        for i, ctr in enumerate(new_ctrs):
            image = as_str(as_dict(ctr).get("image"))
            if not image:
                errs.append(field.required(child(index(ctr_path, i), "image")))
            if image != image.strip():
                errs.append(field.invalid(child(index(ctr_path, i), "image"), image,
                                          "must not have leading or trailing whitespace"))
    new_deadline, old_deadline = new_spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if new_deadline is not None:
        if not isinstance(new_deadline, int) or not 0 <= new_deadline <= MAX_INT32:
            errs.append(field.invalid("spec.activeDeadlineSeconds", new_deadline, inclusive_range_error(0, MAX_INT32)))
            return errs
        if isinstance(old_deadline, int) and old_deadline < new_deadline:
            errs.append(field.invalid("spec.activeDeadlineSeconds", new_deadline,
                                      "must be less than or equal to previous value"))
            return errs
    elif old_deadline is not None:
        errs.append(field.invalid("spec.activeDeadlineSeconds", None,
                                  "must not update from a positive integer to nil value"))
    errs.extend(_tolerations_only_added(as_list(new_spec.get("tolerations")), as_list(old_spec.get("tolerations")),
                                        "spec.tolerations"))
    if new_spec == old_spec:
        return errs
    munged = dict(new_spec)
    for key_name in ("containers", "initContainers"):
        if key_name in munged:
            munged[key_name] = [
                {**as_dict(ctr), "image": as_dict(o).get("image")} if "image" in as_dict(o) else
                {k: v for k, v in as_dict(ctr).items() if k != "image"}
                for ctr, o in zip(as_list(new_spec.get(key_name)), as_list(old_spec.get(key_name)), strict=True)
            ]
    for name in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        if name in old_spec:
            munged[name] = old_spec[name]
        else:
            munged.pop(name, None)
    old_grace = old_spec.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if munged != old_spec:
        diff = "\n".join(_spec_diff(old_spec, munged))
        errs.append(field.forbidden("spec", f"pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}\n{diff}"))
    return errs


def validate_pod_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    new_spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    new_status, old_status = as_dict(new.get("status")), as_dict(old.get("status"))
    for i, cond in dicts(new_status.get("conditions")):
        cond_type = as_str(cond.get("type"))
        if cond_type not in ("PodScheduled", "Ready", "Initialized"):
            errs.extend(validate_qualified_name(cond_type, child(index("metadata.conditions", i), "Type")))
    if as_str(new_spec.get("nodeName")) != as_str(old_spec.get("nodeName")):
        errs.append(field.forbidden("status.nodeName", "may not be changed directly"))
    nominated = as_str(new_status.get("nominatedNodeName"))
    if nominated and nominated != as_str(old_status.get("nominatedNodeName")):
        errs.extend(field.invalid("status.nominatedNodeName", nominated, m) for m in name_is_dns_subdomain(nominated))
    if as_str(new_status.get("qosClass")) != as_str(old_status.get("qosClass")):
        errs.append(field.invalid("status.qosClass", as_str(new_status.get("qosClass")), "field is immutable"))
    return errs
