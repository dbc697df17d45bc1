"""CustomResourceDefinitions on the embedded cluster, as an operator author uses the pytest
fixture: apply a CRD and a custom resource through ``Cluster.apply``, read it back through the
cluster's client by its plural, short name and kind, and see the namespace controller delete
custom objects with their namespace."""

from __future__ import annotations

import time
from typing import Any

import pytest

from everynode.api.errors import ApiError

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: backups.ops.example.com
spec:
  group: ops.example.com
  scope: Namespaced
  names: {plural: backups, kind: Backup, shortNames: [bk]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [schedule]
            properties:
              schedule: {type: string}
              keep: {type: integer, default: 7}
          status:
            type: object
            properties:
              phase: {type: string}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: ops.example.com/v1
kind: Backup
metadata: {name: nightly, namespace: team-a}
spec: {schedule: "0 3 * * *"}
"""


@pytest.mark.everynode(nodes=1)
def test_operator_author_flow_with_the_pytest_fixture(everynode_cluster: Any) -> None:
    cluster = everynode_cluster
    applied = cluster.apply(CRD)
    assert [o["kind"] for o in applied] == ["CustomResourceDefinition", "Namespace", "Backup"]
    client = cluster.client
    for name in ("backups", "bk", "Backup", "backups.ops.example.com"):
        got = client.get(name, "nightly", namespace="team-a")
        assert got["spec"] == {"schedule": "0 3 * * *", "keep": 7}
    # The operator under test writes status through the subresource.
    client.patch("backups", "nightly", {"status": {"phase": "Done"}}, namespace="team-a", subresource="status")
    assert client.get("backups", "nightly", namespace="team-a")["status"] == {"phase": "Done"}
    with pytest.raises(ApiError) as bad:
        client.create("backups", {"apiVersion": "ops.example.com/v1", "kind": "Backup",
                                  "metadata": {"name": "broken"}, "spec": {"keep": "x"}}, namespace="team-a")
    assert bad.value.code == 422
    assert "spec.schedule: Required value" in bad.value.message
    client.delete("namespaces", "team-a")
    for _ in range(200):  # the namespace controller empties the namespace, custom objects included
        try:
            client.get("namespaces", "team-a")
        except ApiError as e:
            assert e.code == 404
            break
        time.sleep(0.05)
    else:
        raise AssertionError("namespace team-a was never deleted")
    assert client.list("backups", namespace="team-a")["items"] == []
