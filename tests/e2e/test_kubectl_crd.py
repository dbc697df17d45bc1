"""CustomResourceDefinitions end to end with real kubectl (1.27 and 1.33) and the official
``kubernetes`` client: a CRD is served as soon as it is applied, its printer columns show in
``kubectl get`` (wide ones with ``-o wide``), ``kubectl explain`` reads its schema, a custom
resource is pruned, defaulted and validated (422 with the field path), ``kubectl scale`` works
through the scale subresource, ``kubectl delete crd`` deletes its objects, and a restart of
``everynode up`` serves the stored CRDs again."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import KUBECTL_DIR, Kubectl, ServerThread

pytestmark = pytest.mark.e2e

VERSIONS = ["1.27", "1.33"]


def widget_crd(group: str, *, plural: str = "widgets", kind: str = "Widget",
               scope: str = "Namespaced") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group, "scope": scope,
            "names": {"plural": plural, "kind": kind, "shortNames": [f"{plural[:2]}{group[1:4].replace('.', '')}"],
                      "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                         "statusReplicasPath": ".status.replicas"}},
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "string", "jsonPath": ".spec.size"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Detail", "type": "string", "jsonPath": ".spec.detail", "priority": 1},
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object", "description": "A Widget is a thing of some size.",
                    "properties": {
                        "spec": {"type": "object", "description": "The desired widget.", "required": ["size"],
                                 "properties": {
                                     "size": {"type": "string", "description": "How big it is.",
                                              "enum": ["S", "M", "L"]},
                                     "replicas": {"type": "integer", "minimum": 0, "default": 1},
                                     "detail": {"type": "string"},
                                 }},
                        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                    }}},
            }],
        },
    }


def widget(group: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def apply(kubectl: Kubectl, obj: dict[str, Any], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return kubectl("apply", "-f", "-", *args, input=yaml.safe_dump(obj), check=check)


def group_for(version: str, suffix: str) -> str:
    return f"{suffix}{version.replace('.', '')}.example.com"


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_printer_columns_explain_pruning_and_validation(kubectl: Kubectl, kubectl_version: str) -> None:
    group = group_for(kubectl_version, "cols")
    assert "created" in apply(kubectl, widget_crd(group)).stdout
    kubectl("wait", "--for", "condition=established", f"crd/widgets.{group}", "--timeout", "10s")
    crds = kubectl("get", "crd", f"widgets.{group}").stdout.splitlines()
    assert crds[0].split() == ["NAME", "CREATED", "AT"] and crds[1].startswith(f"widgets.{group} ")

    # Strict field validation (kubectl's default) refuses the unknown field, with the path.
    strict = apply(kubectl, widget(group, "w1", size="M", junk=3), check=False)
    assert strict.returncode != 0
    assert 'strict decoding error: unknown field "spec.junk"' in strict.stderr
    # Without it the unknown field is pruned and the default filled in.
    apply(kubectl, widget(group, "w1", size="M", junk=3, detail="hello"), "--validate=false")
    stored = json.loads(kubectl("get", f"widgets.{group}", "w1", "-o", "json").stdout)
    assert stored["spec"] == {"size": "M", "detail": "hello", "replicas": 1}

    table = kubectl("get", f"widgets.{group}").stdout.splitlines()
    assert table[0].split() == ["NAME", "SIZE", "REPLICAS"]  # no AGE: the CRD did not ask for one
    assert table[1].split()[:3] == ["w1", "M", "1"]
    wide = kubectl("get", f"widgets.{group}", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "SIZE", "REPLICAS", "DETAIL"]
    assert wide[1].split()[:4] == ["w1", "M", "1", "hello"]

    bad = apply(kubectl, widget(group, "w2", size="XL", replicas="three"), check=False)
    assert bad.returncode != 0
    assert 'spec.size: Unsupported value: "XL": supported values: "S", "M", "L"' in bad.stderr
    assert 'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"' \
        in bad.stderr
    assert kubectl("get", f"widgets.{group}", "w2", check=False).returncode != 0  # nothing stored

    explain = kubectl("explain", f"widgets.{group}").stdout
    assert "A Widget is a thing of some size." in explain
    spec = kubectl("explain", f"widgets.{group}.spec").stdout
    assert "The desired widget." in spec and "How big it is." in spec and "replicas" in spec

    refused = kubectl("patch", f"widgets.{group}", "w1", "--type=strategic", "-p", '{"spec":{"size":"L"}}',
                      check=False)
    assert refused.returncode != 0
    assert ("the body of the request was in an unknown format - accepted media types include: "
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml") in refused.stderr
    kubectl("patch", f"widgets.{group}", "w1", "--type=merge", "-p", '{"spec":{"size":"L"}}')
    kubectl("delete", "crd", f"widgets.{group}")


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_scale_status_and_get_all(kubectl: Kubectl, kubectl_version: str) -> None:
    group = group_for(kubectl_version, "scale")
    apply(kubectl, widget_crd(group))
    apply(kubectl, widget(group, "w1", size="S"))
    assert kubectl("scale", f"widgets.{group}", "w1", "--replicas=3").returncode == 0
    obj = json.loads(kubectl("get", f"widgets.{group}", "w1", "-o", "json").stdout)
    assert obj["spec"]["replicas"] == 3 and obj["metadata"]["generation"] == 2
    scale = json.loads(kubectl("get", "--raw", f"/apis/{group}/v1/namespaces/default/widgets/w1/scale").stdout)
    assert scale["kind"] == "Scale" and scale["spec"] == {"replicas": 3}
    # The status subresource: only status changes, and the generation stays.
    kubectl("patch", f"widgets.{group}", "w1", "--subresource=status", "--type=merge",
            "-p", '{"status":{"replicas":3},"spec":{"size":"L"}}')
    obj = json.loads(kubectl("get", f"widgets.{group}", "w1", "-o", "json").stdout)
    assert obj["status"] == {"replicas": 3} and obj["spec"]["size"] == "S" and obj["metadata"]["generation"] == 2
    # A main-resource write cannot change status.
    kubectl("patch", f"widgets.{group}", "w1", "--type=merge", "-p", '{"status":{"replicas":9}}')
    assert json.loads(kubectl("get", f"widgets.{group}", "w1", "-o", "json").stdout)["status"] == {"replicas": 3}
    everything = kubectl("get", "all").stdout
    assert f"widget.{group}/w1" in everything
    resources = kubectl("api-resources", "--api-group", group).stdout
    assert "widgets" in resources and "Widget" in resources
    kubectl("delete", "crd", f"widgets.{group}")


@pytest.mark.parametrize("kubectl_version", VERSIONS, indirect=True)
def test_delete_crd_deletes_its_objects_and_unserves_them(kubectl: Kubectl, kubectl_version: str) -> None:
    group = group_for(kubectl_version, "del")
    apply(kubectl, widget_crd(group))
    for name in ("a", "b"):
        apply(kubectl, widget(group, name, size="S"))
    kubectl("create", "namespace", f"crd-del-{kubectl_version.replace('.', '')}")
    other = widget(group, "c", size="M")
    other["metadata"]["namespace"] = f"crd-del-{kubectl_version.replace('.', '')}"
    apply(kubectl, other)
    assert "deleted" in kubectl("delete", "crd", f"widgets.{group}", timeout=60).stdout
    gone = kubectl("get", "crd", f"widgets.{group}", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    raw = kubectl("get", "--raw", f"/apis/{group}/v1/widgets", check=False)
    assert raw.returncode != 0 and "NotFound" in raw.stderr
    # Recreating the CRD starts empty: the objects were deleted, not just hidden.
    apply(kubectl, widget_crd(group))
    assert "No resources found" in kubectl("get", f"widgets.{group}", "-A").stderr
    kubectl("delete", "crd", f"widgets.{group}")


def test_names_conflict_and_terminating_refuses_creates(kubectl: Kubectl, apiserver: ServerThread) -> None:
    group = "conflict.example.com"
    apply(kubectl, widget_crd(group))
    apply(kubectl, widget_crd(group, plural="gizmos"))  # kind Widget again
    status = json.loads(kubectl("get", "crd", f"gizmos.{group}", "-o", "json").stdout)["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["NamesAccepted"]["status"] == "False"
    assert conditions["NamesAccepted"]["reason"] == "ListKindConflict"
    assert conditions["NamesAccepted"]["message"] == '"WidgetList" is already in use'
    assert conditions["Established"] == {**conditions["Established"], "status": "False", "reason": "NotAccepted",
                                         "message": "not all names are accepted"}
    assert kubectl("get", f"gizmos.{group}", check=False).returncode != 0
    kubectl("delete", "crd", f"gizmos.{group}", f"widgets.{group}")


def test_cel_rules_are_accepted_with_a_warning(kubectl: Kubectl) -> None:
    group = "cel.example.com"
    crd = widget_crd(group)
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["x-kubernetes-validations"] = [{"rule": "self.replicas <= 5", "message": "at most 5"}]
    created = apply(kubectl, crd)
    assert "x-kubernetes-validations rules are stored and published but not evaluated" in created.stderr
    kubectl("delete", "crd", f"widgets.{group}")


def test_multiple_versions_with_none_conversion(kubectl: Kubectl) -> None:
    group = "multi.example.com"
    crd = widget_crd(group, plural="gadgets", kind="Gadget", scope="Cluster")
    v1 = crd["spec"]["versions"][0]
    v1beta1 = {"name": "v1beta1", "served": True, "storage": False,
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                   "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}
    crd["spec"]["versions"] = [v1beta1, v1]
    apply(kubectl, crd)
    old = {"apiVersion": f"{group}/v1beta1", "kind": "Gadget", "metadata": {"name": "g1"},
           "spec": {"size": "S", "anything": {"goes": True}}}
    apply(kubectl, old)
    as_v1 = json.loads(kubectl("get", f"gadgets.v1.{group}", "g1", "-o", "json").stdout)
    as_beta = json.loads(kubectl("get", f"gadgets.v1beta1.{group}", "g1", "-o", "json").stdout)
    assert as_v1["apiVersion"] == f"{group}/v1" and as_beta["apiVersion"] == f"{group}/v1beta1"
    assert as_v1["spec"]["anything"] == {"goes": True}  # conversion None: the object as stored
    group_doc = json.loads(kubectl("get", "--raw", f"/apis/{group}").stdout)
    assert [v["version"] for v in group_doc["versions"]] == ["v1", "v1beta1"]
    assert group_doc["preferredVersion"]["version"] == "v1"
    kubectl("delete", "crd", f"gadgets.{group}")


def test_official_client_custom_objects_api(apiserver: ServerThread, kubectl: Kubectl) -> None:
    from kubernetes import client, config

    group = "client.example.com"
    apply(kubectl, widget_crd(group))
    api_client = config.new_client_from_config(config_file=str(apiserver.kubeconfig))
    try:
        custom = client.CustomObjectsApi(api_client)
        created = custom.create_namespaced_custom_object(group, "v1", "default", "widgets",
                                                         widget(group, "py", size="S", extra="x"))
        assert created["spec"] == {"size": "S", "replicas": 1}
        got = custom.get_namespaced_custom_object(group, "v1", "default", "widgets", "py")
        assert got["metadata"]["uid"] == created["metadata"]["uid"]
        listed = custom.list_namespaced_custom_object(group, "v1", "default", "widgets", label_selector="")
        assert [o["metadata"]["name"] for o in listed["items"]] == ["py"]
        patched = custom.patch_namespaced_custom_object(group, "v1", "default", "widgets", "py",
                                                        {"metadata": {"labels": {"team": "a"}}})
        assert patched["metadata"]["labels"] == {"team": "a"}
        selected = custom.list_namespaced_custom_object(group, "v1", "default", "widgets", label_selector="team=a")
        assert len(selected["items"]) == 1
        with pytest.raises(client.ApiException) as bad:
            custom.create_namespaced_custom_object(group, "v1", "default", "widgets",
                                                   widget(group, "bad", size="S", replicas=-1))
        assert bad.value.status == 422
        body = json.loads(bad.value.body)
        assert body["details"]["causes"][0]["field"] == "spec.replicas"
        custom.delete_namespaced_custom_object(group, "v1", "default", "widgets", "py")
        assert custom.list_namespaced_custom_object(group, "v1", "default", "widgets")["items"] == []
    finally:
        api_client.close()
        kubectl("delete", "crd", f"widgets.{group}")


def test_stored_crds_are_served_after_a_restart(tmp_path: Path) -> None:
    from tests.support.up import start_up, stop

    data_dir = tmp_path / "data"
    group = "restart.example.com"

    def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(KUBECTL_DIR / "kubectl.1.33"), "--kubeconfig", str(data_dir / "kubeconfig"),
                               "--cache-dir", str(tmp_path / "cache"), *args], input=input, capture_output=True,
                              text=True, timeout=30, check=True)

    proc = start_up(data_dir)
    try:
        _wait_answering(run)
        run("apply", "-f", "-", input=yaml.safe_dump(widget_crd(group)))
        run("apply", "-f", "-", input=yaml.safe_dump(widget(group, "kept", size="L")))
    finally:
        stop(proc)
    proc = start_up(data_dir)
    try:
        _wait_answering(run)
        lines = run("get", f"widgets.{group}").stdout.splitlines()
        assert lines[1].split()[:3] == ["kept", "L", "1"]
        # everynode's own HTTP client (another process than the server) finds the custom
        # resource through discovery, by any of its names.
        for alias in (f"widgets.{group}", "wiest", f"widget.v1.{group}"):
            got = asyncio.run(_client_get(data_dir / "kubeconfig", alias, "kept"))
            assert got["spec"] == {"size": "L", "replicas": 1}
    finally:
        stop(proc)


async def _client_get(kubeconfig: Path, resource: str, name: str) -> dict[str, Any]:
    from everynode.client.http import HttpClient

    async with HttpClient.from_kubeconfig(kubeconfig) as client:
        return await client.get(resource, name, namespace="default")


def _wait_answering(run: Any) -> None:
    import time
    for _ in range(200):
        try:
            run("get", "--raw", "/readyz")
            return
        except subprocess.CalledProcessError:
            time.sleep(0.1)
    raise AssertionError("everynode up never became ready")
