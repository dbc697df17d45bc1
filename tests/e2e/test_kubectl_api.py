"""Real kubectl (1.27 and 1.33) and the official Python client against the HTTPS API server.

Each test drives one kubectl command family the way kubectl-contract.md describes it and checks
what kubectl prints, so a wire-format regression (discovery Content-Type, Tables, protobuf
bodies, patch types, watch framing, Status errors) shows up as a kubectl failure here.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import TOKEN, Kubectl, ServerThread, kubectl_path

pytestmark = pytest.mark.e2e

VERSIONS = ["1.33", "1.27"]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def daemonset_yaml(name: str, namespace: str, image: str = "quay.io/prometheus/node-exporter:v1.8.1") -> str:
    return yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "hostNetwork": True,
                    "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                                     "effect": "NoSchedule"}],
                    "containers": [{"name": "node-exporter", "image": image,
                                    "ports": [{"containerPort": 9100, "name": "metrics", "protocol": "TCP"}]}],
                },
            },
        },
    })


def node_yaml(name: str) -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status",
                            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.9"}],
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "nodeInfo": {"kubeletVersion": "v1.33.0", "osImage": "everynode", "kernelVersion": "6.8",
                         "containerRuntimeVersion": "everynode://1", "operatingSystem": "linux",
                         "architecture": "amd64"},
        },
    })


@pytest.fixture
def namespace(kubectl: Kubectl) -> str:
    name = unique("ns")
    kubectl("create", "namespace", name, version="1.27")
    return name


# -- discovery and basics --------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_version(kubectl: Kubectl, version: str):
    out = kubectl("version", version=version).stdout
    assert "v1.33.0" in out


@pytest.mark.parametrize("version", VERSIONS)
def test_api_resources(kubectl: Kubectl, version: str):
    out = kubectl("api-resources", version=version).stdout
    rows = {tuple(line.split()) for line in out.splitlines()[1:]}
    assert ("daemonsets", "ds", "apps/v1", "true", "DaemonSet") in rows
    assert ("nodes", "no", "v1", "false", "Node") in rows
    assert ("priorityclasses", "pc", "scheduling.k8s.io/v1", "false", "PriorityClass") in rows
    assert ("poddisruptionbudgets", "pdb", "policy/v1", "true", "PodDisruptionBudget") in rows
    assert ("jobs", "batch/v1", "true", "Job") in rows


@pytest.mark.parametrize("version", VERSIONS)
def test_create_namespace(kubectl: Kubectl, version: str):
    # 1.33 posts a protobuf body, 1.27 JSON.
    name = unique("created")
    assert kubectl("create", "namespace", name, version=version).stdout.strip() == f"namespace/{name} created"
    again = kubectl("create", "namespace", name, version=version, check=False)
    assert again.returncode == 1
    assert f'Error from server (AlreadyExists): namespaces "{name}" already exists' in again.stderr
    assert kubectl("get", "namespace", name, "-o", "jsonpath={.status.phase}").stdout == "Active"


def test_unauthenticated_requests_are_refused(apiserver: ServerThread, tmp_path: Path):
    config = yaml.safe_load(apiserver.kubeconfig.read_text())
    config["users"][0]["user"]["token"] = "wrong"
    bad = tmp_path / "bad-kubeconfig"
    bad.write_text(yaml.safe_dump(config))
    result = subprocess.run([str(kubectl_path("1.33")), "--kubeconfig", str(bad), "--cache-dir",
                             str(tmp_path / "cache"), "get", "nodes"], capture_output=True, text=True,
                            timeout=60, env=dict(os.environ, HOME=str(tmp_path)))
    assert result.returncode == 1
    assert "You must be logged in to the server" in result.stderr


# -- apply -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_apply_created_configured_unchanged(kubectl: Kubectl, namespace: str, version: str):
    manifest = daemonset_yaml("node-exporter", namespace)
    out = kubectl("apply", "-f", "-", input=manifest, version=version).stdout
    assert out.strip() == "daemonset.apps/node-exporter created"
    out = kubectl("apply", "-f", "-", input=manifest, version=version).stdout
    assert out.strip() == "daemonset.apps/node-exporter unchanged"
    changed = daemonset_yaml("node-exporter", namespace, image="quay.io/prometheus/node-exporter:v1.8.2")
    out = kubectl("apply", "-f", "-", input=changed, version=version).stdout
    assert out.strip() == "daemonset.apps/node-exporter configured"
    ds = json.loads(kubectl("get", "ds", "node-exporter", "-n", namespace, "-o", "json").stdout)
    assert ds["metadata"]["generation"] == 2
    assert ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "2"
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":v1.8.2")


@pytest.mark.parametrize("version", VERSIONS)
def test_apply_server_side(kubectl: Kubectl, namespace: str, version: str):
    manifest = daemonset_yaml("ssa", namespace)
    out = kubectl("apply", "--server-side", "-f", "-", input=manifest, version=version).stdout
    assert out.strip() == "daemonset.apps/ssa serverside-applied"
    changed = daemonset_yaml("ssa", namespace, image="quay.io/prometheus/node-exporter:v1.9.0")
    out = kubectl("apply", "--server-side", "-f", "-", input=changed, version=version).stdout
    assert out.strip() == "daemonset.apps/ssa serverside-applied"
    image = kubectl("get", "ds", "ssa", "-n", namespace, "-o",
                    "jsonpath={.spec.template.spec.containers[0].image}").stdout
    assert image.endswith(":v1.9.0")


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_apply_strict_validation_rejects_unknown_fields(kubectl: Kubectl, namespace: str):
    manifest = yaml.safe_load(daemonset_yaml("strict", namespace))
    manifest["spec"]["replicas"] = 2
    result = kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest), check=False)
    assert result.returncode == 1
    assert 'unknown field "spec.replicas"' in result.stderr


# -- get -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_get_output_formats(kubectl: Kubectl, namespace: str):
    kubectl("apply", "-f", "-", input=daemonset_yaml("web", namespace))
    table = kubectl("get", "ds", "-n", namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE",
                                "SELECTOR", "AGE"]
    assert table[1].split()[:7] == ["web", "0", "0", "0", "0", "0", "<none>"]
    wide = kubectl("get", "ds", "-n", namespace, "-o", "wide").stdout.splitlines()
    assert wide[0].split()[-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide[1].split()[-1] == "app=web"
    as_yaml = yaml.safe_load(kubectl("get", "ds", "web", "-n", namespace, "-o", "yaml").stdout)
    assert as_yaml["kind"] == "DaemonSet" and as_yaml["metadata"]["name"] == "web"
    as_json = json.loads(kubectl("get", "ds", "-n", namespace, "-o", "json").stdout)
    assert as_json["kind"] == "List" and as_json["items"][0]["metadata"]["name"] == "web"
    assert kubectl("get", "ds", "-n", namespace, "-o", "name").stdout.strip() == "daemonset.apps/web"
    all_ns = kubectl("get", "ds", "-A").stdout.splitlines()
    assert all_ns[0].split()[0] == "NAMESPACE"
    assert any(line.split()[:2] == [namespace, "web"] for line in all_ns[1:])
    labels = kubectl("get", "ds", "-n", namespace, "--show-labels").stdout.splitlines()
    assert labels[1].split()[-1] == "app=web"
    assert kubectl("get", "ds", "-n", namespace, "-l", "app=web", "-o", "name").stdout.strip() == \
        "daemonset.apps/web"
    none = kubectl("get", "ds", "-n", namespace, "-l", "app=other")
    assert none.stdout == "" and f"No resources found in {namespace} namespace." in none.stderr
    missing = kubectl("get", "ds", "nope", "-n", namespace, check=False)
    assert 'Error from server (NotFound): daemonsets.apps "nope" not found' in missing.stderr


class LineReader:
    """Lines of a child's stdout, read by a thread (select() cannot see a text buffer's lines)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        assert proc.stdout is not None
        stream = proc.stdout
        threading.Thread(target=lambda: [self.lines.put(line) for line in stream], daemon=True).start()

    def wait_for(self, needle: str, timeout: float = 10) -> str:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no line containing {needle!r} within {timeout}s")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if needle in line:
                return line


@pytest.mark.parametrize("version", VERSIONS)
def test_get_watch(apiserver: ServerThread, kubectl: Kubectl, namespace: str, tmp_path: Path, version: str):
    kubectl("apply", "-f", "-", input=daemonset_yaml("watched", namespace))
    cmd = [str(kubectl_path(version)), "--kubeconfig", str(apiserver.kubeconfig), "--cache-dir",
           str(tmp_path / "watch-cache"), "get", "ds", "-n", namespace, "-w", "--output-watch-events"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, HOME=str(tmp_path)))
    lines = LineReader(proc)
    try:
        lines.wait_for("watched")  # the initial listing
        kubectl("apply", "-f", "-", input=daemonset_yaml("second", namespace))
        assert lines.wait_for("second").split()[0] == "ADDED"
        kubectl("label", "ds", "watched", "-n", namespace, "touched=yes")
        assert lines.wait_for("watched").split()[0] == "MODIFIED"
    finally:
        proc.kill()
        proc.wait()


# -- metadata and node commands --------------------------------------------------------------------


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_label_annotate_taint_cordon(kubectl: Kubectl, kubectl_version: str):
    node = unique("node")
    assert kubectl("apply", "-f", "-", input=node_yaml(node)).stdout.strip() == f"node/{node} created"
    assert kubectl("label", "node", node, "disk=ssd").stdout.strip() == f"node/{node} labeled"
    assert kubectl("label", "node", node, "disk-").stdout.strip() == f"node/{node} unlabeled"
    # kubectl 1.27's own printer says "annotate" (client-side text; 1.33 says "annotated").
    verb = "annotate" if kubectl_version == "1.27" else "annotated"
    assert kubectl("annotate", "node", node, "note=hi").stdout.strip() == f"node/{node} {verb}"
    assert kubectl("taint", "node", node, "dedicated=infra:NoSchedule").stdout.strip() == f"node/{node} tainted"
    assert kubectl("cordon", node).stdout.strip() == f"node/{node} cordoned"
    row = kubectl("get", "node", node).stdout.splitlines()[1].split()
    assert row[1] == "Ready,SchedulingDisabled"
    got = json.loads(kubectl("get", "node", node, "-o", "json").stdout)
    assert got["spec"]["taints"] == [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
    assert got["metadata"]["annotations"]["note"] == "hi" and "disk" not in got["metadata"]["labels"]
    assert kubectl("uncordon", node).stdout.strip() == f"node/{node} uncordoned"
    assert kubectl("taint", "node", node, "dedicated-").stdout.strip() == f"node/{node} untainted"
    assert "taints" not in json.loads(kubectl("get", "node", node, "-o", "json").stdout)["spec"]


@pytest.mark.parametrize("patch_type, patch", [
    ("strategic", '{"metadata":{"labels":{"via":"smp"}}}'),
    ("merge", '{"metadata":{"labels":{"via":"merge"}}}'),
    ("json", '[{"op":"add","path":"/metadata/labels/via","value":"json"}]'),
])
@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_patch_types(kubectl: Kubectl, namespace: str, patch_type: str, patch: str):
    kubectl("apply", "-f", "-", input=daemonset_yaml("patched", namespace))
    out = kubectl("patch", "ds", "patched", "-n", namespace, "--type", patch_type, "-p", patch).stdout
    assert out.strip() == "daemonset.apps/patched patched"
    label = kubectl("get", "ds", "patched", "-n", namespace, "-o", "jsonpath={.metadata.labels.via}").stdout
    assert label == {"strategic": "smp", "merge": "merge", "json": "json"}[patch_type]


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_replace_and_stale_conflict(kubectl: Kubectl, namespace: str):
    kubectl("apply", "-f", "-", input=daemonset_yaml("rep", namespace))
    current = json.loads(kubectl("get", "ds", "rep", "-n", namespace, "-o", "json").stdout)
    current["metadata"]["labels"]["replaced"] = "yes"
    out = kubectl("replace", "-f", "-", input=json.dumps(current)).stdout
    assert out.strip() == "daemonset.apps/rep replaced"
    stale = kubectl("replace", "-f", "-", input=json.dumps(current), check=False)  # same, now stale rv
    assert stale.returncode == 1
    assert ('Error from server (Conflict): error when replacing "STDIN": Operation cannot be fulfilled on '
            'daemonsets.apps "rep": the object has been modified') in stale.stderr


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_delete_and_cascade_orphan(kubectl: Kubectl, namespace: str):
    kubectl("apply", "-f", "-", input=daemonset_yaml("gone", namespace))
    assert kubectl("delete", "ds", "gone", "-n", namespace).stdout.strip() == 'daemonset.apps "gone" deleted'
    missing = kubectl("get", "ds", "gone", "-n", namespace, check=False)
    assert 'daemonsets.apps "gone" not found' in missing.stderr
    kubectl("apply", "-f", "-", input=daemonset_yaml("kept", namespace))
    out = kubectl("delete", "ds", "kept", "-n", namespace, "--cascade=orphan", "--wait=false").stdout
    assert out.strip() == 'daemonset.apps "kept" deleted'
    # Orphaning is the garbage collector's job: until it runs the object waits with the finalizer.
    obj = json.loads(kubectl("get", "ds", "kept", "-n", namespace, "-o", "json").stdout)
    assert obj["metadata"]["finalizers"] == ["orphan"] and obj["metadata"]["deletionTimestamp"]


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_describe(kubectl: Kubectl, namespace: str):
    kubectl("apply", "-f", "-", input=daemonset_yaml("described", namespace))
    ds = kubectl("describe", "ds", "described", "-n", namespace).stdout
    assert "Name:           described" in ds
    # Server-side defaulting (protocol, hostPort under hostNetwork) shows up literally here.
    assert re.search(r"\n\s+Port:\s+9100/TCP\n", ds) and re.search(r"Host Port:\s+9100/TCP\n", ds)
    assert "Pods Status:  0 Running / 0 Waiting / 0 Succeeded / 0 Failed" in ds
    node = unique("node")
    kubectl("apply", "-f", "-", input=node_yaml(node))
    described = kubectl("describe", "node", node).stdout
    assert f"Name:               {node}" in described
    assert f'Failed to get lease: leases.coordination.k8s.io "{node}" not found' in described
    assert "Kubelet Version:            v1.33.0" in described
    ns = kubectl("describe", "namespace", namespace).stdout
    assert f"Name:         {namespace}" in ns and "Status:       Active" in ns


@pytest.mark.parametrize("version", VERSIONS)
def test_explain(kubectl: Kubectl, version: str):
    out = kubectl("explain", "daemonset.spec.updateStrategy", version=version).stdout
    assert "KIND:       DaemonSet" in out or "KIND:     DaemonSet" in out
    assert "rollingUpdate" in out


@pytest.mark.parametrize("version", VERSIONS)
def test_scale_daemonset_fails(kubectl: Kubectl, namespace: str, version: str):
    kubectl("apply", "-f", "-", input=daemonset_yaml("unscalable", namespace))
    result = kubectl("scale", "ds", "unscalable", "-n", namespace, "--replicas=2", version=version, check=False)
    assert result.returncode == 1
    assert "Error from server (NotFound): the server could not find the requested resource" in result.stderr
    obj = json.loads(kubectl("get", "ds", "unscalable", "-n", namespace, "-o", "json").stdout)
    assert "replicas" not in obj["spec"]


@pytest.mark.parametrize("version", VERSIONS)
def test_drain(kubectl: Kubectl, namespace: str, version: str):
    node = unique("node")
    kubectl("apply", "-f", "-", input=node_yaml(node))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "standalone", "namespace": namespace},
           "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "c", "image": "nginx"}]}}
    kubectl("apply", "-f", "-", input=json.dumps(pod))
    refused = kubectl("drain", node, "--ignore-daemonsets", version=version, check=False)
    assert refused.returncode == 1
    # 1.33 says "cannot delete cannot delete Pods that declare no controller", 1.27 "cannot delete Pods
    # declare no controller"; both name the pod.
    assert f"declare no controller (use --force to override): {namespace}/standalone" in refused.stderr
    drained = kubectl("drain", node, "--ignore-daemonsets", "--force", "--timeout=20s", version=version)
    assert f"evicting pod {namespace}/standalone" in drained.stdout + drained.stderr
    assert f"node/{node} drained" in drained.stdout
    assert kubectl("get", "pods", "-n", namespace, "-o", "name").stdout == ""


# -- the official Python client --------------------------------------------------------------------


def test_official_python_client(apiserver: ServerThread):
    import kubernetes
    from kubernetes import client, config, watch

    api_client = config.new_client_from_config(config_file=str(apiserver.kubeconfig))
    v1 = client.CoreV1Api(api_client)
    apps = client.AppsV1Api(api_client)
    assert kubernetes.__version__
    ns = unique("py")
    v1.create_namespace({"metadata": {"name": ns}})
    for i in range(5):
        v1.create_namespaced_config_map(ns, {"metadata": {"name": f"cm{i}", "labels": {"even": str(i % 2 == 0)}},
                                             "data": {"i": str(i)}})
    got = v1.read_namespaced_config_map("cm1", ns)
    assert got.data == {"i": "1"}
    evens = v1.list_namespaced_config_map(ns, label_selector="even=True")
    assert [cm.metadata.name for cm in evens.items] == ["cm0", "cm2", "cm4"]
    page = v1.list_namespaced_config_map(ns, limit=2)
    assert [cm.metadata.name for cm in page.items] == ["cm0", "cm1"]
    rest = v1.list_namespaced_config_map(ns, limit=10, _continue=page.metadata._continue)
    assert [cm.metadata.name for cm in rest.items] == ["cm2", "cm3", "cm4"]
    # Update, patch and a watch resumed from the resourceVersion before them.
    rv = v1.list_namespaced_config_map(ns).metadata.resource_version
    got.data = {"i": "one"}
    v1.replace_namespaced_config_map("cm1", ns, got)
    v1.patch_namespaced_config_map("cm1", ns, {"metadata": {"labels": {"patched": "yes"}}})
    seen = []
    w = watch.Watch()
    for event in w.stream(v1.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=5):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 2:
            w.stop()
    assert seen == [("MODIFIED", "cm1"), ("MODIFIED", "cm1")]
    v1.delete_namespaced_config_map("cm1", ns)
    with pytest.raises(client.ApiException) as info:
        v1.read_namespaced_config_map("cm1", ns)
    assert info.value.status == 404
    ds = apps.create_namespaced_daemon_set(ns, yaml.safe_load(daemonset_yaml("pyds", ns)))
    assert ds.metadata.generation == 1
    assert ds.spec.update_strategy.rolling_update.max_unavailable == 1
    api_client.close()


def test_token_is_required_for_the_api_but_not_for_probes(apiserver: ServerThread):
    import ssl
    import urllib.error
    import urllib.request

    assert apiserver.certs is not None
    ctx = ssl.create_default_context(cadata=apiserver.certs.ca_pem.decode())
    for path in ("/healthz", "/livez", "/readyz", "/version"):
        with urllib.request.urlopen(apiserver.url + path, context=ctx, timeout=10) as response:
            assert response.status == 200
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(apiserver.url + "/api/v1/namespaces", context=ctx, timeout=10)
    assert info.value.code == 401
    assert json.loads(info.value.read())["reason"] == "Unauthorized"
    request = urllib.request.Request(apiserver.url + "/api/v1/namespaces",
                                     headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, context=ctx, timeout=10) as response:
        assert response.headers["Cache-Control"] == "no-cache, private"
        assert json.loads(response.read())["kind"] == "NamespaceList"


# -- the HTTP surface directly ---------------------------------------------------------------------


class Http:
    """Raw HTTPS requests with the token, for what kubectl does not show directly."""

    def __init__(self, server: ServerThread) -> None:
        import ssl

        assert server.certs is not None
        self.url = server.url
        self.ctx = ssl.create_default_context(cadata=server.certs.ca_pem.decode())

    def __call__(self, method: str, path: str, body: bytes | None = None,
                 headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        import urllib.error
        import urllib.request

        request = urllib.request.Request(self.url + path, data=body, method=method,
                                         headers={"Authorization": f"Bearer {TOKEN}", **(headers or {})})
        try:
            with urllib.request.urlopen(request, context=self.ctx, timeout=10) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()


@pytest.fixture
def http(apiserver: ServerThread) -> Http:
    return Http(apiserver)


@pytest.mark.parametrize("accept, content_type, api_version", [
    ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
     "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "apidiscovery.k8s.io/v2"),
    ("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
     "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", "apidiscovery.k8s.io/v2beta1"),
    ("application/json, */*", "application/json", None),
])
def test_discovery_negotiation(http: Http, accept: str, content_type: str, api_version: str | None):
    code, headers, body = http("GET", "/apis", headers={"Accept": accept})
    assert code == 200 and headers["Content-Type"] == content_type
    doc = json.loads(body)
    if api_version is None:
        assert doc["kind"] == "APIGroupList"
        assert {"name": "policy", "versions": [{"groupVersion": "policy/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "policy/v1", "version": "v1"}} in doc["groups"]
    else:
        assert doc["apiVersion"] == api_version
        apps = next(item for item in doc["items"] if item["metadata"]["name"] == "apps")
        ds = next(r for r in apps["versions"][0]["resources"] if r["resource"] == "daemonsets")
        assert ds["shortNames"] == ["ds"] and ds["categories"] == ["all"] and ds["scope"] == "Namespaced"


def test_legacy_core_resource_list_has_eviction(http: Http):
    code, _, body = http("GET", "/api/v1")
    resources = {r["name"]: r for r in json.loads(body)["resources"]}
    assert resources["pods/eviction"]["group"] == "policy" and resources["pods/eviction"]["version"] == "v1"
    assert resources["pods/eviction"]["kind"] == "Eviction"
    assert "group" not in resources["pods/status"]


def test_openapi_v2_is_an_empty_protobuf_document(http: Http):
    code, headers, body = http("GET", "/openapi/v2",
                               headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
    assert code == 200 and body == b""
    assert headers["Content-Type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


@pytest.mark.parametrize("method, path, body, content_type, code, message", [
    ("GET", "/apis/apps/v1/namespaces/default/daemonsets/x/scale", None, None, 404,
     "the server could not find the requested resource"),
    ("GET", "/nope", None, None, 404, "the server could not find the requested resource"),
    ("POST", "/api/v1/namespaces", b"name: x", "text/plain", 415, "the body of the request was in an unknown format"),
    ("POST", "/api/v1/namespaces", b"{nope", "application/json", 400,
     "the object provided is unrecognized (must be of type Namespace)"),
    ("POST", "/api/v1/namespaces", b"a: [", "application/yaml", 400, "error converting YAML to JSON"),
    ("POST", "/api/v1/namespaces", b" " * (3 * 1024 * 1024 + 1), "application/json", 413,
     "Request entity too large: limit is 3145728"),
    ("PATCH", "/api/v1/namespaces/default", b"{}", "application/json", 415, "unknown format"),
])
def test_http_errors(http: Http, method, path, body, content_type, code, message):
    headers = {"Content-Type": content_type} if content_type else {}
    got, response_headers, data = http(method, path, body, headers)
    assert got == code
    status = json.loads(data)
    assert status["kind"] == "Status" and status["code"] == code and message in status["message"]


def test_yaml_body_table_response_and_warning_header(http: Http):
    name = unique("yaml")
    body = f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  labels:\n    when: 2026-01-01\n"
    code, _, data = http("POST", "/api/v1/namespaces?fieldValidation=Strict", body.encode(),
                         {"Content-Type": "application/yaml"})
    assert code == 201 and json.loads(data)["metadata"]["labels"]["when"] == "2026-01-01"
    table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    code, headers, data = http("GET", f"/api/v1/namespaces/{name}", headers={"Accept": table_accept})
    assert headers["Content-Type"] == "application/json;as=Table;v=v1;g=meta.k8s.io"
    table = json.loads(data)
    assert table["kind"] == "Table" and table["rows"][0]["cells"][:2] == [name, "Active"]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    cm = json.dumps({"metadata": {"name": "c"}, "data": {"a": "b"}, "bogus": 1}).encode()
    code, headers, _ = http("POST", f"/api/v1/namespaces/{name}/configmaps?fieldValidation=Warn", cm,
                            {"Content-Type": "application/json"})
    assert code == 201 and headers["Warning"] == '299 - "unknown field \\"bogus\\""'


def test_watch_stream_framing(http: Http, apiserver: ServerThread):
    name = unique("w")
    http("POST", "/api/v1/namespaces", json.dumps({"metadata": {"name": name}}).encode(),
         {"Content-Type": "application/json"})
    code, headers, data = http("GET", f"/api/v1/namespaces?watch=True&fieldSelector=metadata.name%3D{name}"
                                      "&timeoutSeconds=1")
    assert code == 200 and headers["Transfer-Encoding"] == "chunked"
    lines = data.splitlines()
    assert len(lines) == 1
    event = json.loads(lines[0])
    assert event["type"] == "ADDED" and event["object"]["kind"] == "Namespace"


def test_metrics_endpoint_counts_requests(http: Http):
    http("GET", "/api/v1/namespaces/default")
    code, headers, body = http("GET", "/metrics")
    assert code == 200 and headers["Content-Type"].startswith("text/plain")
    text = body.decode()
    assert 'apiserver_request_total{code="200",group="",resource="namespaces",scope="resource",' \
           'subresource="",verb="GET",version="v1"}' in text
