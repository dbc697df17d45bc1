"""Which scale counts for a pod's controller (upstream's finders in ``disruption.go``:
getPodReplicationController, getPodDeployment, getPodReplicaSet, getPodStatefulSet,
getScaleController), against a fake client holding the owners — the workload kinds need not be
served by this build for the rule to be exercised."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from everynode.api import errors
from everynode.controllers.disruption import ExpectedCountError, controller_scale


class Owners:
    """``get`` only: objects by (resource, name); anything else is the server's 404."""

    def __init__(self, objects: dict[tuple[str, str], dict[str, Any]]) -> None:
        self.objects = objects
        self.calls: list[tuple[str, str, str | None]] = []

    async def get(self, resource: str, name: str, *, namespace: str = "", subresource: str | None = None) -> dict:
        self.calls.append((resource, name, subresource))
        key = (f"{resource}/{subresource}" if subresource else resource, name)
        if key not in self.objects:
            raise errors.not_found(resource, "", name)
        return self.objects[key]


def obj(uid: str, replicas: int | None = None, owner: dict | None = None) -> dict:
    md: dict = {"name": uid, "uid": uid}
    if owner:
        md["ownerReferences"] = [owner]
    return {"metadata": md, "spec": {} if replicas is None else {"replicas": replicas}}


def ref(kind: str, uid: str, api_version: str = "apps/v1") -> dict:
    return {"apiVersion": api_version, "kind": kind, "name": uid, "uid": uid, "controller": True}


def scale(client: Owners, r: dict) -> Any:
    return asyncio.run(controller_scale(client, r, "default"))  # type: ignore[arg-type]


def test_a_deployments_replicaset_counts_with_the_deployment() -> None:
    client = Owners({("replicasets.apps", "rs1"): obj("rs1", 3, owner=ref("Deployment", "dep")),
                     ("deployments.apps", "dep"): obj("dep", 5)})
    assert scale(client, ref("ReplicaSet", "rs1")) == ("dep", 5)


def test_a_bare_replicaset_statefulset_and_rc_count_themselves() -> None:
    client = Owners({("replicasets.apps", "rs2"): obj("rs2", 4),
                     ("statefulsets.apps", "ss"): obj("ss", 2),
                     ("replicationcontrollers", "rc"): obj("rc")})  # replicas defaults to 1
    assert scale(client, ref("ReplicaSet", "rs2")) == ("rs2", 4)
    assert scale(client, ref("StatefulSet", "ss")) == ("ss", 2)
    assert scale(client, ref("ReplicationController", "rc", api_version="v1")) == ("rc", 1)


def test_a_recreated_or_missing_owner_is_no_controller() -> None:
    stale = obj("rs3", 3)
    stale["metadata"]["uid"] = "another"
    client = Owners({("replicasets.apps", "rs3"): stale})
    assert scale(client, ref("ReplicaSet", "rs3")) is None
    assert scale(client, ref("StatefulSet", "missing")) is None


def test_other_kinds_need_a_scale_subresource() -> None:
    with pytest.raises(ExpectedCountError, match="daemonsets.apps does not implement the scale subresource"):
        scale(Owners({}), ref("DaemonSet", "ds"))
    with pytest.raises(ExpectedCountError, match='no matches for kind "Widget" in version "example.com/v1"'):
        scale(Owners({}), ref("Widget", "w", api_version="example.com/v1"))
