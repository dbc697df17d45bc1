"""OpenAPI v3 documents: what kubectl's validation and explain look for (kubectl-contract.md §3)."""

from __future__ import annotations

import orjson
import pytest

from everynode.api.registry import RESOURCES
from everynode.apiserver import openapi


def doc(path):
    found = openapi.v3_document(path)
    assert found is not None
    body, digest = found
    return orjson.loads(body), digest


def test_root_lists_every_group_version_with_hash():
    root = openapi.v3_root()["paths"]
    expected = {openapi.gv_path(rt) for rt in RESOURCES}
    assert set(root) == expected
    for path, entry in root.items():
        _, digest = doc(path)
        assert entry["serverRelativeURL"] == f"/openapi/v3/{path}?hash={digest}"


def test_unknown_document_is_none():
    assert openapi.v3_document("apis/nope/v1") is None


@pytest.mark.parametrize("rt", RESOURCES, ids=lambda rt: rt.key)
def test_patch_operation_per_kind_has_gvk_and_field_validation(rt):
    d, _ = doc(openapi.gv_path(rt))
    ops = [item["patch"] for item in d["paths"].values()
           if item.get("patch", {}).get("x-kubernetes-group-version-kind")
           == {"group": rt.group, "version": rt.version, "kind": rt.kind}]
    assert len(ops) == 1
    (op,) = ops
    assert {"fieldValidation", "fieldManager", "dryRun", "force"} <= {p["name"] for p in op["parameters"]}
    assert all(p["in"] == "query" for p in op["parameters"])
    assert set(op["requestBody"]["content"]) == {"application/json-patch+json", "application/merge-patch+json",
                                                  "application/apply-patch+yaml",
                                                  "application/strategic-merge-patch+json"}


def test_daemonset_schema_is_explainable():
    d, _ = doc("apis/apps/v1")
    schemas = d["components"]["schemas"]
    ds = schemas["io.k8s.api.apps.v1.DaemonSet"]
    assert ds["x-kubernetes-group-version-kind"] == [{"group": "apps", "kind": "DaemonSet", "version": "v1"}]
    assert ds["properties"]["spec"]["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DaemonSetSpec"}]
    assert ds["properties"]["kind"] == {"description": ds["properties"]["kind"]["description"], "type": "string"}
    strategy = schemas["io.k8s.api.apps.v1.DaemonSetUpdateStrategy"]
    assert "RollingUpdate" in strategy["properties"]["type"]["description"]
    assert schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"


def test_every_reference_resolves_and_types_are_plain():
    for path in openapi.v3_root()["paths"]:
        d, _ = doc(path)
        schemas = d["components"]["schemas"]
        text = orjson.dumps(d).decode()
        for name in schemas:
            assert isinstance(schemas[name], dict)
        for ref in {part.split('"')[0] for part in text.split('"$ref":"#/components/schemas/')[1:]}:
            assert ref in schemas, ref
        assert '"null"' not in text


def test_v2_is_empty_protobuf_with_dotted_content_type():
    assert openapi.v2_body() == b""
    assert openapi.V2_CONTENT_TYPE == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    assert "@" not in openapi.V2_CONTENT_TYPE
