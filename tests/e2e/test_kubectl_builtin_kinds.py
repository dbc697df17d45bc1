"""Real kubectl 1.27 and 1.33 on the built-in kinds served from ``api/builtin_kinds.py``:
discovery, ``explain``, ``apply``/``get``/``describe``, the per-kind rules users meet (immutable
StatefulSet and StorageClass fields, immutable ConfigMaps, Secret data that is not base64,
required fields), the protobuf bodies of ``kubectl create`` and the deprecation warnings."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.e2e.conftest import Kubectl
from tests.e2e.test_kubectl_api import VERSIONS, unique

pytestmark = pytest.mark.e2e


@pytest.fixture
def namespace(kubectl: Kubectl) -> str:
    name = unique("kinds")
    kubectl("create", "namespace", name, version="1.27")
    return name


def statefulset(name: str, ns: str, *, storage: str = "1Gi") -> str:
    return yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": ns},
        "spec": {
            "serviceName": name, "replicas": 2, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "db", "image": "postgres:16"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}}],
        },
    })


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_api_resources_list_the_built_in_kinds(kubectl: Kubectl) -> None:
    out = kubectl("api-resources").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    for name in ("statefulsets", "cronjobs", "horizontalpodautoscalers", "networkpolicies", "ingresses",
                 "csidrivers", "storageclasses", "persistentvolumeclaims", "replicationcontrollers",
                 "apiservices", "runtimeclasses", "flowschemas", "componentstatuses", "certificatesigningrequests"):
        assert name in rows, name
    assert rows["statefulsets"][1:] == ["sts", "apps/v1", "true", "StatefulSet"]
    assert rows["storageclasses"][1:] == ["sc", "storage.k8s.io/v1", "false", "StorageClass"]
    assert rows["horizontalpodautoscalers"][1:] == ["hpa", "autoscaling/v2", "true", "HorizontalPodAutoscaler"]


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
@pytest.mark.parametrize(("field", "expected"), [
    ("statefulsets.spec.volumeClaimTemplates", "volumeClaimTemplates is a list of claims"),
    ("networkpolicies.spec.podSelector", "podSelector selects the pods"),
    ("csidrivers.spec.attachRequired", "attachRequired indicates this CSI volume driver requires an attach"),
])
def test_explain(kubectl: Kubectl, field: str, expected: str) -> None:
    out = " ".join(kubectl("explain", field).stdout.split())
    assert expected in out


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_statefulset_apply_get_describe_and_forbidden_update(kubectl: Kubectl, namespace: str) -> None:
    name = unique("db")
    kubectl("apply", "-f", "-", input=statefulset(name, namespace))
    got = json.loads(kubectl("get", "sts", name, "-n", namespace, "-o", "json").stdout)
    assert got["metadata"]["generation"] == 1
    assert got["status"] == {"replicas": 0, "availableReplicas": 0}
    assert got["spec"]["podManagementPolicy"] == "OrderedReady"
    assert got["spec"]["volumeClaimTemplates"][0]["status"] == {"phase": "Pending"}
    table = kubectl("get", "sts", name, "-n", namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "READY", "AGE"] and table[1].split()[:2] == [name, "0/2"]
    assert "Replicas:" in kubectl("describe", "sts", name, "-n", namespace).stdout
    result = kubectl("apply", "-f", "-", input=statefulset(name, namespace, storage="2Gi"), check=False)
    assert result.returncode != 0
    assert (f'The StatefulSet "{name}" is invalid: spec: Forbidden: updates to statefulset spec for fields other '
            "than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', "
            "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden") in result.stderr
    kubectl("patch", "sts", name, "-n", namespace, "-p", '{"spec":{"replicas":3}}')
    assert json.loads(kubectl("get", "sts", name, "-n", namespace, "-o", "json").stdout)["metadata"]["generation"] == 2


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_storageclass_and_csidriver(kubectl: Kubectl) -> None:
    sc, driver = unique("fast"), f"{unique('ebs')}.csi.example.com"
    manifest = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": sc, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
         "provisioner": driver, "parameters": {"type": "gp3"}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": driver},
         "spec": {"podInfoOnMount": True}},
    ]
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all(manifest))
    row = kubectl("get", "sc", sc).stdout.splitlines()[1].split()
    assert row[:6] == [sc, "(default)", driver, "Delete", "Immediate", "false"]
    header = kubectl("get", "csidrivers", driver).stdout.splitlines()
    assert header[0].split()[:7] == ["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY", "TOKENREQUESTS",
                                     "REQUIRESREPUBLISH", "MODES"]
    assert header[1].split()[:7] == [driver, "true", "true", "false", "<unset>", "false", "Persistent"]
    manifest[0]["parameters"] = {"type": "gp2"}
    manifest[1]["spec"]["attachRequired"] = False
    result = kubectl("apply", "-f", "-", input=yaml.safe_dump_all(manifest), check=False)
    assert result.returncode != 0
    assert f'StorageClass.storage.k8s.io "{sc}" is invalid: parameters: Forbidden: updates to parameters are ' \
           "forbidden." in result.stderr
    assert f'CSIDriver.storage.k8s.io "{driver}" is invalid: spec.attachedRequired: Invalid value: false: field ' \
           "is immutable" in result.stderr
    kubectl("describe", "sc", sc)


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_secret_data_must_be_base64(kubectl: Kubectl, namespace: str) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "datadog", "namespace": namespace},
              "type": "Opaque", "data": {"api-key": "PUT_YOUR_BASE64_ENCODED_API_KEY_HERE"}}
    for args in (["apply"], ["apply", "--server-side"], ["create"]):
        result = kubectl(*args, "-f", "-", input=yaml.safe_dump(secret), check=False)
        assert result.returncode != 0
        assert 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3' \
            in result.stderr, args
    assert "datadog" not in kubectl("get", "secrets", "-n", namespace, "-o", "name").stdout
    secret.pop("data")
    secret["stringData"] = {"api-key": "s3cr3t"}  # write-only: stored as data, base64
    kubectl("apply", "-f", "-", input=yaml.safe_dump(secret))
    stored = json.loads(kubectl("get", "secret", "datadog", "-n", namespace, "-o", "json").stdout)
    assert stored["data"] == {"api-key": "czNjcjN0"} and "stringData" not in stored


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_immutable_configmap(kubectl: Kubectl, namespace: str) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "frozen", "namespace": namespace},
          "immutable": True, "data": {"a": "1"}}
    kubectl("apply", "-f", "-", input=yaml.safe_dump(cm))
    cm["data"] = {"a": "2"}
    result = kubectl("apply", "-f", "-", input=yaml.safe_dump(cm), check=False)
    assert result.returncode != 0
    assert 'ConfigMap "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set' \
        in result.stderr


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_required_fields_from_the_schemas(kubectl: Kubectl, namespace: str) -> None:
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "h", "namespace": namespace}, "spec": {"maxReplicas": 3}}
    result = kubectl("apply", "-f", "-", input=yaml.safe_dump(hpa), check=False)
    assert result.returncode != 0
    assert "spec.scaleTargetRef.kind: Required value" in result.stderr
    assert "spec.scaleTargetRef.name: Required value" in result.stderr
    ingress = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i", "namespace": namespace},
               "spec": {"rules": [{"http": {"paths": [{"path": "/", "backend": {"service": {
                   "name": "web", "port": {"number": 80}}}}]}}]}}
    result = kubectl("apply", "-f", "-", input=yaml.safe_dump(ingress), check=False)
    assert "spec.rules[0].http.paths[0].pathType: Required value" in result.stderr


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_kubectl_create_typed_kinds(kubectl: Kubectl, namespace: str) -> None:
    """kubectl ≥1.32 posts these as protobuf; 1.27 as JSON: both must create the same objects."""
    kubectl("create", "cronjob", "tick", "-n", namespace, "--image=busybox", "--schedule=*/5 * * * *", "--", "date")
    kubectl("create", "ingress", "web", "-n", namespace, "--class=nginx", "--rule=foo.com/bar*=svc1:8080,tls=cert")
    kubectl("create", "quota", "q", "-n", namespace, "--hard=pods=10,cpu=2")
    cj = json.loads(kubectl("get", "cj", "tick", "-n", namespace, "-o", "json").stdout)
    container = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["command"]) == ("busybox", ["date"])
    assert cj["spec"]["concurrencyPolicy"] == "Allow"
    ing = json.loads(kubectl("get", "ing", "web", "-n", namespace, "-o", "json").stdout)
    assert ing["spec"]["rules"][0]["http"]["paths"][0] == {
        "path": "/bar", "pathType": "Prefix", "backend": {"service": {"name": "svc1", "port": {"number": 8080}}}}
    assert ing["spec"]["tls"] == [{"hosts": ["foo.com"], "secretName": "cert"}]
    quota = json.loads(kubectl("get", "quota", "q", "-n", namespace, "-o", "json").stdout)
    assert quota["spec"]["hard"] == {"cpu": "2", "pods": "10"}
    header = kubectl("get", "cj", "-n", namespace).stdout.splitlines()[0].split()
    assert header == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    row = kubectl("get", "ing", "web", "-n", namespace).stdout.splitlines()[1].split()
    assert row[:5] == ["web", "nginx", "foo.com", "80,", "443"]


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_deprecation_warnings(kubectl: Kubectl, namespace: str) -> None:
    result = kubectl("get", "endpoints", "-n", namespace)
    assert "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice" in result.stderr
    result = kubectl("get", "componentstatuses")
    assert "Warning: v1 ComponentStatus is deprecated in v1.19+" in result.stderr
    assert [line.split()[:3] for line in result.stdout.splitlines()] == [
        ["NAME", "STATUS", "MESSAGE"], ["scheduler", "Healthy", "ok"], ["controller-manager", "Healthy", "ok"]]
    assert "Warning" not in kubectl("get", "endpointslices", "-n", namespace).stderr


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_apiservice_is_stored_and_reported_unavailable(kubectl: Kubectl) -> None:
    name = f"v1beta1.{unique('metrics')}.example.com"
    group = name.split(".", 1)[1]
    apiservice = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name},
                  "spec": {"group": group, "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
                           "insecureSkipTLSVerify": True, "service": {"name": "metrics-server",
                                                                      "namespace": "kube-system"}}}
    kubectl("apply", "-f", "-", input=yaml.safe_dump(apiservice))
    row = kubectl("get", "apiservices", name).stdout.splitlines()[1].split()
    assert row[:4] == [name, "kube-system/metrics-server", "False", "(FailedDiscoveryCheck)"]
    # Not served, so not in discovery: kubectl keeps working without "couldn't get resource list".
    result = kubectl("get", "pods", "-A")
    assert group not in result.stderr
