"""RBAC through real kubectl: the four rbac.authorization.k8s.io kinds are served, the bootstrap
policy is there from the start, and a real-world manifest with RBAC objects applies."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.e2e.conftest import Kubectl
from tests.support import realworld

NODE_EXPORTER = realworld.folder() / "01-node-exporter.yaml"
VERSIONS = ["1.33", "1.27"]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.mark.parametrize("version", VERSIONS)
def test_api_resources_list_the_rbac_kinds(kubectl: Kubectl, version: str) -> None:
    out = kubectl("api-resources", "--api-group=rbac.authorization.k8s.io", version=version).stdout
    rows = {tuple(line.split()) for line in out.splitlines()[1:]}
    assert rows == {
        ("clusterrolebindings", "rbac.authorization.k8s.io/v1", "false", "ClusterRoleBinding"),
        ("clusterroles", "rbac.authorization.k8s.io/v1", "false", "ClusterRole"),
        ("rolebindings", "rbac.authorization.k8s.io/v1", "true", "RoleBinding"),
        ("roles", "rbac.authorization.k8s.io/v1", "true", "Role"),
    }


def test_bootstrap_policy_is_seeded(kubectl: Kubectl) -> None:
    out = kubectl("get", "clusterroles").stdout
    assert out.splitlines()[0].split() == ["NAME", "CREATED", "AT"]
    names = {line.split()[0] for line in out.splitlines()[1:]}
    assert {"cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user"} <= names
    crb = kubectl("get", "clusterrolebinding", "cluster-admin", "-o", "wide").stdout.splitlines()
    assert crb[0].split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert crb[1].split()[:2] == ["cluster-admin", "ClusterRole/cluster-admin"]
    assert crb[1].split()[-1] == "system:masters"
    # the aggregated roles carry their aggregated rules
    view = json.loads(kubectl("get", "clusterrole", "view", "-o", "json").stdout)
    assert any("pods" in r.get("resources", []) for r in view["rules"])


def _without_network_policies(manifest: str) -> str:
    """The manifest minus its NetworkPolicy (networking.k8s.io is not served yet)."""
    docs = manifest.split("\n---")
    return "\n---".join(d for d in docs if "\nkind: NetworkPolicy" not in d)


def test_apply_node_exporter_with_its_rbac(kubectl: Kubectl, tmp_path: Path) -> None:
    if not NODE_EXPORTER.exists():
        pytest.fail(f"{NODE_EXPORTER} missing")
    manifest = tmp_path / "node-exporter.yaml"
    manifest.write_text(_without_network_policies(NODE_EXPORTER.read_text()))
    out = kubectl("apply", "-f", str(manifest)).stdout
    assert "clusterrole.rbac.authorization.k8s.io/node-exporter" in out
    assert "clusterrolebinding.rbac.authorization.k8s.io/node-exporter" in out
    binding = json.loads(kubectl("get", "clusterrolebinding", "node-exporter", "-o", "json").stdout)
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": "node-exporter"}
    again = kubectl("apply", "-f", str(manifest)).stdout
    assert "clusterrole.rbac.authorization.k8s.io/node-exporter unchanged" in again


def test_binding_defaults_and_validation(kubectl: Kubectl) -> None:
    ns = unique("rbac")
    kubectl("create", "namespace", ns)
    kubectl("create", "role", "reader", "--verb=get,list", "--resource=pods", "-n", ns)
    manifest = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "readers", "namespace": ns},
                "roleRef": {"kind": "Role", "name": "reader"},
                "subjects": [{"kind": "User", "name": "jane"},
                             {"kind": "ServiceAccount", "name": "sa", "namespace": ns}]}
    kubectl("create", "-f", "-", input=json.dumps(manifest))
    got = json.loads(kubectl("get", "rolebinding", "readers", "-n", ns, "-o", "json").stdout)
    assert got["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    assert got["subjects"][0]["apiGroup"] == "rbac.authorization.k8s.io"
    assert "apiGroup" not in got["subjects"][1]
    wide = kubectl("get", "rolebinding", "readers", "-n", ns, "-o", "wide").stdout.splitlines()[1].split()
    assert wide[:2] == ["readers", "Role/reader"]
    assert wide[-2:] == ["jane", f"{ns}:sa"]
    # roleRef cannot change (ValidateRoleBindingUpdate)
    manifest["roleRef"] = {"kind": "ClusterRole", "name": "view"}
    bad = kubectl("replace", "-f", "-", input=json.dumps(manifest), check=False)
    assert bad.returncode != 0
    assert "roleRef: Invalid value" in bad.stderr and "cannot change roleRef" in bad.stderr


# -- authorization.k8s.io reviews and --authorization rbac --------------------------------------

SA = "system:serviceaccount:monitoring:node-exporter"


def test_can_i_under_always_allow_answers_yes_for_everyone(kubectl: Kubectl) -> None:
    # kube-apiserver with AlwaysAllow allows every review, whoever it is about.
    assert kubectl("auth", "can-i", "list", "pods").stdout.strip() == "yes"
    assert kubectl("auth", "can-i", "delete", "nodes", "--as", SA).stdout.strip() == "yes"
    rules = kubectl("auth", "can-i", "--list", "-n", "default").stdout
    assert "*.*" in rules and "[*]" in rules


def test_can_i_evaluates_rbac_and_rbac_mode_refuses(rbac_kubectl: Kubectl, tmp_path: Path) -> None:
    kubectl = rbac_kubectl
    # the admin is in system:masters: allowed everything, before and after any RBAC object
    assert kubectl("auth", "can-i", "list", "pods").stdout.strip() == "yes"
    assert kubectl("get", "nodes").returncode == 0
    # a service account nobody bound yet: refused by reviews and by the server itself
    no = kubectl("auth", "can-i", "list", "nodes", "--as", SA, check=False)
    assert (no.returncode, no.stdout.strip()) == (1, "no")
    refused = kubectl("get", "nodes", "--as", SA, check=False)
    assert refused.returncode == 1
    assert ('nodes is forbidden: User "system:serviceaccount:monitoring:node-exporter" cannot list '
            'resource "nodes" in API group "" at the cluster scope') in refused.stderr
    # node-exporter's own RBAC grants it nothing on nodes; a ClusterRoleBinding to view-nodes does
    manifest = tmp_path / "node-exporter.yaml"
    manifest.write_text(_without_network_policies(NODE_EXPORTER.read_text()))
    kubectl("apply", "-f", str(manifest))
    assert kubectl("auth", "can-i", "create", "subjectaccessreviews", "--as", SA).stdout.strip() == "yes"
    assert kubectl("auth", "can-i", "list", "nodes", "--as", SA, check=False).stdout.strip() == "no"
    kubectl("create", "clusterrole", "node-reader", "--verb=get,list,watch", "--resource=nodes")
    kubectl("create", "clusterrolebinding", "node-exporter-reads-nodes", "--clusterrole=node-reader",
            "--serviceaccount=monitoring:node-exporter")
    assert kubectl("auth", "can-i", "list", "nodes", "--as", SA).stdout.strip() == "yes"
    assert kubectl("get", "nodes", "--as", SA).returncode == 0
    assert kubectl("auth", "can-i", "delete", "nodes", "--as", SA, check=False).stdout.strip() == "no"
    # and the binding's removal is in force for the very next request
    kubectl("delete", "clusterrolebinding", "node-exporter-reads-nodes")
    assert kubectl("get", "nodes", "--as", SA, check=False).returncode == 1
