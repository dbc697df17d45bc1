"""A resource argument takes what kubectl takes (DESIGN.md, "Python API"): kinds, plurals,
singulars and short names, bare or qualified by group or by version and group — one table in the
api layer's registry, and the core group first where two groups share a name (kubectl's
``events`` is the core Event).  Unknown names: KeyError in the registry, the 404 Status the server
gives for a path it does not serve in the client layer."""

from __future__ import annotations

import pytest

from everynode.api.errors import ApiError
from everynode.api.registry import RESOURCES, resource
from everynode.client.base import resolve_resource


@pytest.mark.parametrize(("name", "key"), [
    ("DaemonSet", "daemonsets.apps"),
    ("daemonset", "daemonsets.apps"),
    ("daemonsets", "daemonsets.apps"),
    ("daemonsets.apps", "daemonsets.apps"),
    ("ds", "daemonsets.apps"),
    ("DS", "daemonsets.apps"),
    ("ds.apps", "daemonsets.apps"),
    ("DaemonSet.apps", "daemonsets.apps"),
    ("daemonsets.v1.apps", "daemonsets.apps"),
    ("Pod", "pods"),
    ("po", "pods"),
    ("pods", "pods"),
    ("pods.v1", "pods"),
    ("no", "nodes"),
    ("Node", "nodes"),
    ("ns", "namespaces"),
    ("svc", "services"),
    ("ConfigMap", "configmaps"),
    ("cm", "configmaps"),
    ("Endpoints", "endpoints"),
    ("events", "events"),
    ("ev", "events"),
    ("Event", "events"),
    ("events.events.k8s.io", "events.events.k8s.io"),
    ("ev.events.k8s.io", "events.events.k8s.io"),
    ("Lease", "leases.coordination.k8s.io"),
    ("leases", "leases.coordination.k8s.io"),
    ("pc", "priorityclasses.scheduling.k8s.io"),
    ("PriorityClass", "priorityclasses.scheduling.k8s.io"),
    ("controllerrevisions", "controllerrevisions.apps"),
    ("EndpointSlice", "endpointslices.discovery.k8s.io"),
])
def test_kubectl_names(name: str, key: str) -> None:
    assert resource(name).key == key
    assert resolve_resource(name).key == key


@pytest.mark.parametrize("name", ["deploymentz", "daemonsets.core", "ds.v1", "pods.apps", "dsx", ""])
def test_unknown_names(name: str) -> None:
    with pytest.raises(KeyError):
        resource(name)
    with pytest.raises(ApiError) as info:
        resolve_resource(name)
    assert info.value.code == 404 and info.value.reason == "NotFound"


def test_every_canonical_key_resolves_to_itself() -> None:
    for rt in RESOURCES:
        assert resource(rt.key) is rt
