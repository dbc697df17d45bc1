"""Validation for the non-core, non-apps kinds: Lease, PriorityClass, EndpointSlice.

Upstream: ``pkg/apis/coordination/validation/validation.go`` (``ValidateLease``),
``pkg/apis/scheduling/validation/validation.go`` (``ValidatePriorityClass[Update]``, with the
system classes of ``pkg/apis/scheduling/v1/helpers.go``) and
``pkg/apis/discovery/validation/validation.go`` (EndpointSlice; only the address type, ports
and endpoint address count are checked — everynode does not program a data plane).
"""

from __future__ import annotations

from typing import Any

from everynode.api import field
from everynode.api.field import FieldError
from everynode.api.names import is_valid_port_num, name_is_dns_subdomain
from everynode.api.validation.meta import (
    as_dict,
    as_int,
    as_list,
    as_str,
    child,
    dicts,
    index,
    validate_dns1123_label,
    validate_immutable,
    validate_object_meta,
    validate_object_meta_update,
)
from everynode.api.validation.pod import PREEMPTION_POLICIES, SUPPORTED_PORT_PROTOCOLS

Obj = dict[str, Any]

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}
ADDRESS_TYPES = ["IPv4", "IPv6", "FQDN"]
MAX_ENDPOINTS = 1000
MAX_ADDRESSES = 100
MAX_PORTS = 20000


# --- Lease --------------------------------------------------------------------------------------

def validate_lease_create(lease: Obj) -> list[FieldError]:
    errs = validate_object_meta(lease.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)
    return errs + _validate_lease_spec(lease)


def validate_lease_update(new: Obj, old: Obj) -> list[FieldError]:
    """``ValidateLeaseUpdate``: the metadata update rule and the spec rule; unlike the kinds that
    re-run their whole create rule on update, the create-time ObjectMeta checks are not repeated
    (so an invalid new label is reported once, and every node's renewal skips them)."""
    return validate_object_meta_update(new.get("metadata"), old.get("metadata")) + _validate_lease_spec(new)


def _validate_lease_spec(lease: Obj) -> list[FieldError]:
    """``ValidateLeaseSpec`` (the fields we serve)."""
    errs: list[FieldError] = []
    spec = as_dict(lease.get("spec"))
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        errs.append(field.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        errs.append(field.invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    return errs



# --- PriorityClass ------------------------------------------------------------------------------

def _known_system_class_error(name: str, value: int, global_default: bool) -> str | None:
    expected = SYSTEM_PRIORITY_CLASSES.get(name)
    if expected is None:
        return f"{name} is not a known system priority class"
    if value != expected:
        return f"value of {name} PriorityClass must be {expected}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return None


def validate_priority_class_create(pc: Obj) -> list[FieldError]:
    errs = validate_object_meta(pc.get("metadata"), namespaced=False, name_fn=name_is_dns_subdomain)
    name = as_str(as_dict(pc.get("metadata")).get("name"))
    value = as_int(pc.get("value"))
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        problem = _known_system_class_error(name, value, pc.get("globalDefault") is True)
        if problem is not None:
            errs.append(field.forbidden(
                "metadata.name",
                f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system use "
                f"only. error: {problem}",
            ))
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(field.forbidden("value",
                                    f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"))
    if pc.get("preemptionPolicy") is not None:
        policy = as_str(pc["preemptionPolicy"])
        if not policy:
            errs.append(field.required("preemptionPolicy"))
        elif policy not in PREEMPTION_POLICIES:
            errs.append(field.not_supported("preemptionPolicy", policy, PREEMPTION_POLICIES))
    return errs


def validate_priority_class_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    if as_int(new.get("value")) != as_int(old.get("value")):
        errs.append(field.forbidden("value", "may not be changed in an update."))
    errs.extend(validate_immutable(new.get("preemptionPolicy"), old.get("preemptionPolicy"), "preemptionPolicy"))
    return errs


# --- EndpointSlice ------------------------------------------------------------------------------

def validate_endpoint_slice_create(eps: Obj) -> list[FieldError]:
    errs = validate_object_meta(eps.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)
    address_type = as_str(eps.get("addressType"))
    if not address_type:
        errs.append(field.required("addressType"))
    elif address_type not in ADDRESS_TYPES:
        errs.append(field.not_supported("addressType", address_type, ADDRESS_TYPES))
    endpoints = as_list(eps.get("endpoints"))
    if len(endpoints) > MAX_ENDPOINTS:
        errs.append(field.too_many("endpoints", len(endpoints), MAX_ENDPOINTS))
    for i, endpoint in dicts(endpoints):
        addresses = as_list(endpoint.get("addresses"))
        addresses_path = child(index("endpoints", i), "addresses")
        if not addresses:
            errs.append(field.required(addresses_path, "must contain at least 1 address"))
        elif len(addresses) > MAX_ADDRESSES:
            errs.append(field.too_many(addresses_path, len(addresses), MAX_ADDRESSES))
    ports = list(dicts(eps.get("ports")))
    if len(ports) > MAX_PORTS:
        errs.append(field.too_many("ports", len(ports), MAX_PORTS))
    names: set[str] = set()
    for i, port in ports:
        port_path = index("ports", i)
        name = as_str(port.get("name"))
        if name:
            errs.extend(validate_dns1123_label(name, child(port_path, "name")))
        if name in names:
            errs.append(field.duplicate(child(port_path, "name"), name))
        names.add(name)
        protocol = as_str(port.get("protocol"))
        if not protocol:
            errs.append(field.required(child(port_path, "protocol")))
        elif protocol not in SUPPORTED_PORT_PROTOCOLS:
            errs.append(field.not_supported(child(port_path, "protocol"), protocol, SUPPORTED_PORT_PROTOCOLS))
        number = port.get("port")
        if isinstance(number, int) and not isinstance(number, bool):
            errs.extend(field.invalid(child(port_path, "port"), number, m) for m in is_valid_port_num(number))
    return errs


def validate_endpoint_slice_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_endpoint_slice_create(new))
    errs.extend(validate_immutable(as_str(new.get("addressType")), as_str(old.get("addressType")), "addressType"))
    return errs
