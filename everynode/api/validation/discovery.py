"""EndpointSlice validation (discovery.k8s.io/v1).

Upstream: ``pkg/apis/discovery/validation/validation.go``.  Only the address type, the ports and
the endpoint and address counts are checked — everynode does not program a data plane, so the
addresses themselves are taken as written.
"""

from __future__ import annotations

from typing import Any

from everynode.api import field_errors as field
from everynode.api.field_errors import FieldError
from everynode.api.names import is_valid_port_num, name_is_dns_subdomain
from everynode.api.validation.meta import (
    as_list,
    as_str,
    child,
    dicts,
    index,
    required_enum,
    validate_dns1123_label,
    validate_immutable,
    validate_object_meta,
    validate_object_meta_update,
)
from everynode.api.validation.pod import SUPPORTED_PORT_PROTOCOLS

Obj = dict[str, Any]

ADDRESS_TYPES = ["IPv4", "IPv6", "FQDN"]
MAX_ENDPOINTS = 1000
MAX_ADDRESSES = 100
MAX_PORTS = 20000


def validate_endpoint_slice_create(eps: Obj) -> list[FieldError]:
    errs = validate_object_meta(eps.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)
    errs.extend(required_enum(as_str(eps.get("addressType")), "addressType", ADDRESS_TYPES))
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
        errs.extend(required_enum(as_str(port.get("protocol")), child(port_path, "protocol"), SUPPORTED_PORT_PROTOCOLS))
        number = port.get("port")
        if isinstance(number, int) and not isinstance(number, bool):
            errs.extend(field.invalid(child(port_path, "port"), number, m) for m in is_valid_port_num(number))
    return errs


def validate_endpoint_slice_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_endpoint_slice_create(new))
    errs.extend(validate_immutable(as_str(new.get("addressType")), as_str(old.get("addressType")), "addressType"))
    return errs
