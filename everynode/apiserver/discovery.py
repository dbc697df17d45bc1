"""Discovery documents: aggregated (``apidiscovery.k8s.io`` v2 and v2beta1) and legacy.

Why both: kubectl ≥1.30 asks ``/api`` and ``/apis`` for the aggregated ``APIGroupDiscoveryList``
and only parses it when the response carries the exact parameterised Content-Type; 1.27 asks
for v2beta1 only; and ``kubectl drain`` always reads the legacy ``GET /api/v1``
``APIResourceList`` to find ``pods/eviction`` with its ``policy/v1`` group-version
(kubectl-contract.md §2, gotchas 4 and 5).  Everything is derived from the registry and encoded
once per served set: the caches are keyed by ``registry.generation()``, which changes only when a
CustomResourceDefinition's resource is registered or removed.

The ``policy`` group is served (with no resources of its own) so that the Eviction
subresource's group-version resolves in ``/apis`` as it does upstream.
"""

from __future__ import annotations

import functools
from typing import Any

import orjson

from everynode.api import registry
from everynode.api.registry import ResourceType

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

# Groups served without resources of their own (subresource group-versions).
_EXTRA_GROUPS = (("policy", "v1"),)


def _scope(rt: ResourceType) -> str:
    return "Namespaced" if rt.namespaced else "Cluster"


def _response_kind(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": _response_kind(rt.group, rt.version, rt.kind),
        "scope": _scope(rt),
        "singularResource": rt.singular,
        "verbs": sorted(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    if rt.subresources:
        entry["subresources"] = [{
            "subresource": sub.name,
            "responseKind": _response_kind(sub.group if sub.group is not None else rt.group,
                                           sub.version if sub.version is not None else rt.version, sub.kind),
            "verbs": sorted(sub.verbs),
        } for sub in rt.subresources]
    return entry


def _group_entry(name: str, versions: list[tuple[str, list[ResourceType]]]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"creationTimestamp": None}
    if name:
        metadata = {"name": name, "creationTimestamp": None}
    return {
        "metadata": metadata,
        "versions": [{
            "version": version,
            "resources": [_aggregated_resource(rt) for rt in resources],
            "freshness": "Current",
        } for version, resources in versions],
    }


def served_groups() -> list[tuple[str, list[tuple[str, list[ResourceType]]]]]:
    """Named groups in serving order, each with its versions (preferred first) and their
    resources: one version per built-in group; a CRD's group lists every served version."""
    return _served_groups(registry.generation())


@functools.lru_cache(maxsize=4)
def _served_groups(generation: int) -> list[tuple[str, list[tuple[str, list[ResourceType]]]]]:
    out: dict[str, dict[str, list[ResourceType]]] = {}
    for group, members in registry.groups():
        versions = out.setdefault(group, {})
        for rt in members:
            versions.setdefault(rt.version, []).append(rt)
    for runtime in registry.runtime_resources():
        versions = out.setdefault(runtime[0].group, {})
        for rt in runtime[1:]:
            versions.setdefault(rt.version, []).append(rt)
    for group, version in _EXTRA_GROUPS:
        out.setdefault(group, {version: []})
    return [(group, _by_priority(versions)) for group, versions in out.items()]


def _by_priority(versions: dict[str, list[ResourceType]]) -> list[tuple[str, list[ResourceType]]]:
    """Versions in kube's priority order (``registry.version_rank``): the preferred one first."""
    return sorted(versions.items(), key=lambda item: registry.version_rank(item[0]))


def named_groups() -> list[tuple[str, str, list[ResourceType]]]:
    """(group, preferred version, its resources) per named group."""
    return [(group, versions[0][0], versions[0][1]) for group, versions in served_groups()]


def aggregated(core: bool, version: str) -> bytes:
    """``GET /api`` (core) or ``GET /apis`` as an ``APIGroupDiscoveryList`` (``v2``/``v2beta1``)."""
    return _aggregated(core, version, registry.generation())


@functools.lru_cache(maxsize=16)
def _aggregated(core: bool, version: str, generation: int) -> bytes:
    if core:
        items = [_group_entry("", [("v1", registry.core_resources())])]
    else:
        items = [_group_entry(g, versions) for g, versions in served_groups()]
    return orjson.dumps({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    })


def api_versions(server_address: str) -> bytes:
    """Legacy ``GET /api``: ``APIVersions``."""
    return orjson.dumps({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })


def _group_version(group: str, version: str) -> dict[str, str]:
    return {"groupVersion": f"{group}/{version}", "version": version}


def _api_group(group: str, versions: list[tuple[str, list[ResourceType]]]) -> dict[str, Any]:
    return {
        "name": group,
        "versions": [_group_version(group, v) for v, _ in versions],
        "preferredVersion": _group_version(group, versions[0][0]),
    }


def api_group_list() -> bytes:
    """Legacy ``GET /apis``: ``APIGroupList``."""
    return _api_group_list(registry.generation())


@functools.lru_cache(maxsize=4)
def _api_group_list(generation: int) -> bytes:
    return orjson.dumps({
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_api_group(g, versions) for g, versions in served_groups()],
    })


def api_group(group: str) -> bytes | None:
    """``GET /apis/{group}``: ``APIGroup``, or None for a group not served."""
    return _api_group_doc(group, registry.generation())


@functools.lru_cache(maxsize=256)
def _api_group_doc(group: str, generation: int) -> bytes | None:
    for g, versions in served_groups():
        if g == group:
            return orjson.dumps({"kind": "APIGroup", "apiVersion": "v1", **_api_group(g, versions)})
    return None


def _legacy_resources(rt: ResourceType) -> list[dict[str, Any]]:
    entry: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": sorted(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    out = [entry]
    for sub in rt.subresources:
        sub_entry: dict[str, Any] = {"name": f"{rt.plural}/{sub.name}", "singularName": "",
                                     "namespaced": rt.namespaced}
        if sub.group is not None:
            sub_entry["group"] = sub.group
        if sub.version is not None:
            sub_entry["version"] = sub.version
        sub_entry["kind"] = sub.kind
        sub_entry["verbs"] = sorted(sub.verbs)
        out.append(sub_entry)
    return out


def api_resource_list(group: str, version: str) -> bytes | None:
    """``GET /api/v1`` or ``GET /apis/{group}/{version}``: ``APIResourceList``, or None."""
    return _api_resource_list(group, version, registry.generation())


@functools.lru_cache(maxsize=256)
def _api_resource_list(group: str, version: str, generation: int) -> bytes | None:
    if not group:
        if version != "v1":
            return None
        members = registry.core_resources()
    else:
        found = {g: dict(versions) for g, versions in served_groups()}.get(group, {}).get(version)
        if found is None:
            return None
        members = found
    resources: list[dict[str, Any]] = []
    for rt in members:
        resources.extend(_legacy_resources(rt))
    return orjson.dumps({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    })


def negotiate_aggregated(accept: str) -> str | None:
    """The aggregated discovery version the ``Accept`` header asks for first, or None (legacy)."""
    for part in accept.split(","):
        params = {}
        for p in part.split(";")[1:]:
            key, _, value = p.strip().partition("=")
            params[key.strip()] = value.strip()
        if params.get("as") == "APIGroupDiscoveryList" and params.get("g") == "apidiscovery.k8s.io":
            if params.get("v") in ("v2", "v2beta1"):
                return params["v"]
    return None
