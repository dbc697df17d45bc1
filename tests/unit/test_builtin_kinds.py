"""The 1.33 built-in kinds table against the official schemas and the served registry."""

from __future__ import annotations

import re

import pytest

from everynode.api import builtin_kinds, registry, schema

_GA = re.compile(r"^v\d+$")
_NOT_KINDS = {"DeleteOptions", "WatchEvent", "Status", "APIGroup", "APIGroupList", "APIResourceList",
              "APIVersions"}


def _schema_ga_kinds() -> set[tuple[str, str]]:
    kinds: set[tuple[str, str]] = set()
    for definition in schema.definitions().values():
        for gvk in definition.get("x-kubernetes-group-version-kind") or ():
            group, version, kind = gvk.get("group", ""), gvk["version"], gvk["kind"]
            if not _GA.match(version) or kind.endswith("List") or kind in _NOT_KINDS:
                continue
            if group in ("admission.k8s.io", "imagepolicy.k8s.io"):
                continue
            kinds.add((f"{group}/{version}" if group else version, kind))
    return kinds


def test_every_row_names_a_kind_of_the_schemas() -> None:
    for api_version, kind, *_ in builtin_kinds.KINDS:
        assert schema.definition_name(api_version, kind), (api_version, kind)


def test_every_ga_kind_of_the_schemas_is_served_or_excused() -> None:
    rows = {(api_version, kind) for api_version, kind, *_ in builtin_kinds.KINDS}
    missing = _schema_ga_kinds() - rows - set(builtin_kinds.NOT_SERVED)
    assert not missing


def test_every_row_is_served_once() -> None:
    served = [(rt.api_version, rt.kind) for rt in registry.RESOURCES]
    assert len(served) == len(set(served))
    for api_version, kind, *_ in builtin_kinds.KINDS:
        assert registry.by_kind(api_version, kind) is not None, (api_version, kind)


def test_hand_entries_agree_with_discovery() -> None:
    """A hand-declared entry (a kind with rules) says what the table says of names and scope."""
    for api_version, kind, plural, namespaced, short_names, categories, _, _ in builtin_kinds.KINDS:
        rt = registry.by_kind(api_version, kind)
        assert rt is not None
        assert (rt.plural, rt.singular, rt.namespaced, rt.short_names, rt.categories) == \
            (plural, kind.lower(), namespaced, short_names, categories), kind


def test_one_version_per_group_plural() -> None:
    seen = [(rt.group, rt.plural) for rt in registry.RESOURCES]
    assert len(seen) == len(set(seen))


@pytest.mark.parametrize(("name", "key"), [
    ("sts", "statefulsets.apps"), ("StatefulSet", "statefulsets.apps"), ("netpol", "networkpolicies.networking.k8s.io"),
    ("csidrivers", "csidrivers.storage.k8s.io"), ("sc", "storageclasses.storage.k8s.io"), ("pvc", "persistentvolumeclaims"),
    ("cs", "componentstatuses"), ("hpa", "horizontalpodautoscalers.autoscaling"),
    ("apiservices", "apiservices.apiregistration.k8s.io"), ("quota", "resourcequotas"), ("limits", "limitranges"),
    ("ip", "ipaddresses.networking.k8s.io"), ("cj", "cronjobs.batch"), ("csr", "certificatesigningrequests.certificates.k8s.io"),
])
def test_kubectl_names(name: str, key: str) -> None:
    assert registry.resource(name).key == key


def test_status_subresources_and_read_only_verbs() -> None:
    assert registry.resource("statefulsets.apps").subresource("status") is not None
    assert registry.resource("configmaps").subresource("status") is None
    assert registry.resource("componentstatuses").verbs == ("get", "list")
    assert registry.resource("hpa").version == "v2"


def test_deprecations_name_served_kinds() -> None:
    for api_version, kind in builtin_kinds.DEPRECATED:
        assert registry.by_kind(api_version, kind) is not None
