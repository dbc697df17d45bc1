"""``everynode up --authorization rbac`` driven by real kubectl (1.27 and 1.33) and the official
``kubernetes`` client: the ServiceAccount controller and root-CA publisher, the pods'
``kube-api-access-*`` volume, TokenRequest (``kubectl create token``) and service-account
tokens authenticated and authorized by RBAC, escalation checks and ClusterRole aggregation.

The real-world manifest is read from ``../shared/realworld/`` next to the project (never
copied into the repository)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import kubectl_path
from tests.support.realworld import manifest as realworld
from tests.support.up import start_up, stop
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ["1.33", "1.27"]
SA = "system:serviceaccount:monitoring:node-exporter"
TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


class Up:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.kubeconfig = data_dir / "kubeconfig"
        self.proc = start_up(data_dir, "--authorization", "rbac")

    def kubectl(self, *args: str, version: str = "1.33", token: str | None = None, check: bool = True,
                input: str | None = None) -> subprocess.CompletedProcess[str]:
        binary = kubectl_path(version)
        if not binary.exists():
            if os.environ.get("CI"):
                pytest.fail(f"{binary} not installed")
            pytest.skip(f"{binary} not installed")
        cmd = [str(binary), "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.data_dir / f"cache-{version}")]
        if token is not None:
            cmd += ["--token", token]
        result = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=60, input=input,
                                env=dict(os.environ, HOME=str(self.data_dir)))
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result


def _without_network_policies(manifest: str) -> str:
    """The manifest minus its NetworkPolicy (networking.k8s.io is not served on this branch)."""
    return "\n---".join(d for d in manifest.split("\n---") if "\nkind: NetworkPolicy" not in d)


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    cluster = Up(tmp_path_factory.mktemp("up-rbac"))
    try:
        wait_until(lambda: cluster.kubectl("get", "--raw", "/readyz", check=False).stdout == "ok")
        manifest = cluster.data_dir / "node-exporter.yaml"
        manifest.write_text(_without_network_policies(realworld("01-node-exporter.yaml").read_text()))
        cluster.kubectl("apply", "-f", str(manifest))
        yield cluster
    finally:
        stop(cluster.proc)


def test_every_namespace_has_its_default_account_and_the_root_ca(up: Up) -> None:
    ns = f"fresh-{uuid.uuid4().hex[:6]}"
    up.kubectl("create", "namespace", ns)
    # a pod created at once does not lose the race with the ServiceAccount controller
    up.kubectl("run", "web", "-n", ns, "--image=nginx")
    names = up.kubectl("get", "sa", "-n", ns, "-o", "name").stdout.split()
    assert names == ["serviceaccount/default"]
    cm = json.loads(up.kubectl("get", "configmap", "kube-root-ca.crt", "-n", ns, "-o", "json").stdout)
    kubeconfig = yaml.safe_load(up.kubeconfig.read_text())
    ca = base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    assert cm["data"] == {"ca.crt": ca}
    # edited → repaired; deleted → recreated
    up.kubectl("patch", "configmap", "kube-root-ca.crt", "-n", ns, "--type=merge", "-p", '{"data":{"ca.crt":"x"}}')
    wait_until(lambda: json.loads(up.kubectl("get", "cm", "kube-root-ca.crt", "-n", ns, "-o", "json").stdout)
                ["data"] == {"ca.crt": ca})
    up.kubectl("delete", "sa", "default", "-n", ns)
    wait_until(lambda: up.kubectl("get", "sa", "default", "-n", ns, check=False).returncode == 0)
    pod = json.loads(up.kubectl("get", "pod", "web", "-n", ns, "-o", "json").stdout)
    assert pod["spec"]["serviceAccountName"] == "default"
    volume = pod["spec"]["volumes"][-1]
    assert volume["name"].startswith("kube-api-access-")
    assert [next(iter(s)) for s in volume["projected"]["sources"]] == ["serviceAccountToken", "configMap",
                                                                        "downwardAPI"]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [
        {"mountPath": TOKEN_PATH, "name": volume["name"], "readOnly": True}]


def test_a_pod_naming_a_missing_account_is_refused(up: Up) -> None:
    out = up.kubectl("run", "lost", "--image=nginx", "--overrides", '{"spec":{"serviceAccountName":"nope"}}',
                     check=False)
    assert out.returncode == 1
    assert ('pods "lost" is forbidden: error looking up service account default/nope: '
            'serviceaccount "nope" not found') in out.stderr


def test_the_daemonset_of_the_manifest_runs_with_its_account(up: Up) -> None:
    up.kubectl("rollout", "status", "daemonset/node-exporter", "-n", "monitoring", "--timeout=60s")
    pods = json.loads(up.kubectl("get", "pods", "-n", "monitoring", "-o", "json").stdout)["items"]
    assert len(pods) == 3  # 2 workers + the control-plane node (node-exporter tolerates every taint)
    for pod in pods:
        assert pod["spec"]["serviceAccountName"] == "node-exporter"
        # the ServiceAccount says automount: false, the pod says true: the pod wins
        assert any(v["name"].startswith("kube-api-access-") for v in pod["spec"]["volumes"])


@pytest.mark.parametrize("version", VERSIONS)
def test_can_i_as_the_daemonsets_service_account(up: Up, version: str) -> None:
    no = up.kubectl("auth", "can-i", "list", "pods", "--as", SA, version=version, check=False)
    assert (no.returncode, no.stdout.strip()) == (1, "no")
    yes = up.kubectl("auth", "can-i", "create", "tokenreviews.authentication.k8s.io", "--as", SA, version=version)
    assert yes.stdout.strip() == "yes"
    listed = up.kubectl("auth", "can-i", "--list", "--as", SA, "-n", "monitoring", version=version).stdout
    rows = {line.split()[0] for line in listed.splitlines()[1:] if line.strip()}
    assert {"tokenreviews.authentication.k8s.io", "subjectaccessreviews.authorization.k8s.io"} <= rows
    assert "pods" not in rows


@pytest.mark.parametrize("version", VERSIONS)
def test_a_service_account_token_is_authorized_by_rbac(up: Up, version: str) -> None:
    token = up.kubectl("create", "token", "node-exporter", "-n", "monitoring", "--duration=15m",
                       version=version).stdout.strip()
    refused = up.kubectl("get", "pods", "-n", "kube-system", token=token, version=version, check=False)
    assert refused.returncode == 1
    assert ('Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:monitoring:node-exporter" '
            'cannot list resource "pods" in API group "" in the namespace "kube-system"') in refused.stderr
    can = up.kubectl("auth", "can-i", "create", "subjectaccessreviews", token=token, version=version)
    assert can.stdout.strip() == "yes"
    if version == "1.33":  # SelfSubjectReview is GA (authentication.k8s.io/v1) from 1.28
        whoami = up.kubectl("auth", "whoami", "-o", "json", token=token, version=version).stdout
        info = json.loads(whoami)["status"]["userInfo"]
        assert info["username"] == SA
        assert info["groups"] == ["system:serviceaccounts", "system:serviceaccounts:monitoring",
                                  "system:authenticated"]
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
    reviewed = json.loads(up.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(review),
                                     version=version).stdout)
    assert reviewed["status"]["authenticated"] is True
    assert reviewed["status"]["user"]["username"] == SA
    short = up.kubectl("create", "token", "node-exporter", "-n", "monitoring", "--duration=1m",
                       version=version, check=False)
    assert short.returncode == 1
    assert "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes" in short.stderr


def test_the_official_client_with_a_service_account_token(up: Up, tmp_path: Path) -> None:
    from kubernetes import client

    ns = f"sa-{uuid.uuid4().hex[:6]}"
    up.kubectl("create", "namespace", ns)
    up.kubectl("create", "serviceaccount", "reader", "-n", ns)
    token = up.kubectl("create", "token", "reader", "-n", ns).stdout.strip()
    kubeconfig = yaml.safe_load(up.kubeconfig.read_text())
    ca = tmp_path / "ca.crt"
    ca.write_bytes(base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]))
    config = client.Configuration()
    config.host = kubeconfig["clusters"][0]["cluster"]["server"]
    config.ssl_ca_cert = str(ca)
    config.api_key = {"authorization": f"Bearer {token}"}
    with client.ApiClient(config) as api:
        core = client.CoreV1Api(api)
        with pytest.raises(client.ApiException) as denied:
            core.list_namespaced_pod(ns)
        assert denied.value.status == 403
        assert json.loads(denied.value.body)["message"] == (
            f'pods is forbidden: User "system:serviceaccount:{ns}:reader" cannot list resource "pods" in API '
            f'group "" in the namespace "{ns}"')
        up.kubectl("create", "role", "pod-reader", "--verb=list", "--resource=pods", "-n", ns)
        up.kubectl("create", "rolebinding", "reader", "--role=pod-reader", f"--serviceaccount={ns}:reader", "-n", ns)
        assert core.list_namespaced_pod(ns).items == []
        review = client.AuthorizationV1Api(api).create_self_subject_access_review(client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=client.V1ResourceAttributes(
                verb="delete", resource="pods", namespace=ns))))
        assert review.status.allowed is False
        # the account deleted: its token no longer authenticates
        up.kubectl("delete", "serviceaccount", "reader", "-n", ns)
        with pytest.raises(client.ApiException) as gone:
            core.list_namespaced_pod(ns)
        assert gone.value.status == 401
        assert json.loads(gone.value.body)["message"] == "Unauthorized"


def test_escalation_is_refused_unless_the_rules_are_held(up: Up) -> None:
    ns = f"esc-{uuid.uuid4().hex[:6]}"
    up.kubectl("create", "namespace", ns)
    up.kubectl("create", "serviceaccount", "builder", "-n", ns)
    up.kubectl("create", "role", "role-maker", "--verb=create,get,list", "--resource=roles,rolebindings,pods",
               "-n", ns)
    up.kubectl("create", "rolebinding", "builder", "--role=role-maker", f"--serviceaccount={ns}:builder", "-n", ns)
    token = up.kubectl("create", "token", "builder", "-n", ns).stdout.strip()
    refused = up.kubectl("create", "role", "secrets", "--verb=delete", "--resource=secrets", "-n", ns,
                         token=token, check=False)
    assert refused.returncode == 1
    assert (f'roles.rbac.authorization.k8s.io "secrets" is forbidden: user "system:serviceaccount:{ns}:builder" '
            f'(groups=["system:serviceaccounts" "system:serviceaccounts:{ns}" "system:authenticated"]) is '
            "attempting to grant RBAC permissions not currently held:") in refused.stderr
    assert "{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"delete\"]}" in refused.stderr
    up.kubectl("create", "role", "pod-lister", "--verb=list", "--resource=pods", "-n", ns, token=token)
    bind = up.kubectl("create", "rolebinding", "admins", "--clusterrole=admin", "--user=jane", "-n", ns,
                      token=token, check=False)
    assert bind.returncode == 1 and "is attempting to grant RBAC permissions not currently held" in bind.stderr
    up.kubectl("create", "rolebinding", "listers", "--role=pod-lister", "--user=jane", "-n", ns, token=token)


def test_cluster_role_aggregation_is_kept_current(up: Up) -> None:
    label = f"agg-{uuid.uuid4().hex[:6]}"
    aggregate = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": label},
                 "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]}, "rules": []}
    up.kubectl("apply", "-f", "-", input=json.dumps(aggregate))
    up.kubectl("create", "clusterrole", f"{label}-part", "--verb=get", "--resource=configmaps")
    up.kubectl("label", "clusterrole", f"{label}-part", f"{label}=true")

    def rules() -> list[dict[str, list[str]]]:
        return json.loads(up.kubectl("get", "clusterrole", label, "-o", "json").stdout).get("rules") or []

    assert wait_until(lambda: rules() == [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}])
    up.kubectl("delete", "clusterrole", f"{label}-part")
    wait_until(lambda: rules() == [])


@pytest.mark.parametrize("version", VERSIONS)
def test_a_client_certificate_of_the_cluster_ca_authenticates_its_subject(up: Up, version: str) -> None:
    from everynode.apiserver.tls import client_certificate

    admin = yaml.safe_load(up.kubeconfig.read_text())
    cert, key = client_certificate(up.data_dir / "pki", user="jane", groups=("dev", "qa"))
    config = {"apiVersion": "v1", "kind": "Config", "clusters": admin["clusters"], "current-context": "jane",
              "contexts": [{"name": "jane", "context": {"cluster": admin["clusters"][0]["name"], "user": "jane"}}],
              "users": [{"name": "jane", "user": {"client-certificate-data": base64.b64encode(cert).decode(),
                                                  "client-key-data": base64.b64encode(key).decode()}}]}
    path = up.data_dir / f"jane-{version}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    binary = kubectl_path(version)
    run = [str(binary), "--kubeconfig", str(path), "--cache-dir", str(up.data_dir / f"cache-jane-{version}")]
    refused = subprocess.run([*run, "get", "pods", "-n", "default"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1
    assert ('pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace '
            '"default"') in refused.stderr
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "x"}}
    assert subprocess.run([*run, "create", "-f", "-", "-o", "json"], input=json.dumps(review), capture_output=True,
                          text=True, timeout=60).returncode == 0  # system:basic-user: every authenticated user
    masters, masters_key = client_certificate(up.data_dir / "pki", user="root", groups=("system:masters",))
    config["users"][0]["user"] = {"client-certificate-data": base64.b64encode(masters).decode(),
                                  "client-key-data": base64.b64encode(masters_key).decode()}
    path.write_text(yaml.safe_dump(config))
    allowed = subprocess.run([*run, "get", "pods", "-n", "default"], capture_output=True, text=True, timeout=60)
    assert allowed.returncode == 0, allowed.stderr
