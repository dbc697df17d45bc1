"""Table tests of CRD structural schemas: the structural check, pruning (through the decoder's
unknown-field walk), defaulting, value validation with kube-apiserver's messages, and CRD
validation (names, versions, scope)."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.api import schema as apischema
from everynode.api.apiextensions import crd as crds
from everynode.api.apiextensions import jsonpath
from everynode.api.apiextensions.structural import (
    apply_defaults,
    compile_node,
    structural_errors,
    validate_value,
)
from everynode.api.typecheck import check_object

ROOT = "spec.versions[0].schema.openAPIV3Schema"


@pytest.mark.parametrize(("schema", "expected"), [
    ({"type": "object", "properties": {"spec": {"type": "object"}}}, []),
    ({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}},
     [f"{ROOT}.properties[spec].type: Required value: must not be empty for specified object fields"]),
    ({"type": "object", "properties": {"l": {"type": "array", "items": {}}}},
     [f"{ROOT}.properties[l].items.type: Required value: must not be empty for specified array items"]),
    ({"type": "object", "properties": {"l": {"type": "array"}}},
     [f"{ROOT}.properties[l].items: Required value: must be specified"]),
    ({"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": True}}}, []),
    ({"type": "object", "properties": {"p": {"type": "integer", "x-kubernetes-int-or-string": True}}}, []),
    ({"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": True,
                                             "x-kubernetes-preserve-unknown-fields": True}}},
     [f"{ROOT}.properties[p].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if "
      "x-kubernetes-int-or-string is true"]),
    ({"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": True, "allOf": [
        {"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"pattern": "^a"}]}}}, []),
    ({"type": "object", "properties": {"p": {"type": "string", "oneOf": [{"properties": {"metadata": {}}}]}}},
     [f"{ROOT}.properties[p].oneOf[0].properties[metadata]: Forbidden: must not be specified in a nested context"]),
    ({"type": "object", "additionalProperties": {"type": "string"}},
     [f"{ROOT}.additionalProperties: Forbidden: must not be used at the root"]),
    ({"type": "object", "properties": {"p": {"x-kubernetes-preserve-unknown-fields": True}}}, []),
    ({"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": True, "pattern": "^[0-9]+%?$",
                                             "anyOf": [{"type": "integer"}, {"type": "string"}]}}}, []),
    ({"type": "object", "x-kubernetes-preserve-unknown-fields": False},
     [f"{ROOT}.x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"]),
    ({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}},
     [f"{ROOT}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, "
      "but metadata is implicitly specified"]),
    ({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string"}}}}},
     []),
    ({"type": "object", "properties": {"m": {"type": "object", "properties": {"a": {"type": "string"}},
                                             "additionalProperties": {"type": "string"}}}},
     [f"{ROOT}.properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual "
      "exclusive"]),
    ({"properties": {"a": {"type": "string"}}},
     [f"{ROOT}.type: Required value: must not be empty at the root"]),
    ({"type": "string"}, [f'{ROOT}.type: Invalid value: "string": must be object at the root']),
    ({"type": "object", "properties": {"e": {"type": "object", "x-kubernetes-embedded-resource": True}}},
     [f"{ROOT}.properties[e].properties: Required value: must not be empty if x-kubernetes-embedded-resource "
      "is true without x-kubernetes-preserve-unknown-fields"]),
    ({"type": "object", "properties": {"e": {"x-kubernetes-embedded-resource": True,
                                             "x-kubernetes-preserve-unknown-fields": True}}},
     [f"{ROOT}.properties[e].type: Required value: must be object if x-kubernetes-embedded-resource is true"]),
    ({"type": "object", "properties": {"a": {"type": "string", "anyOf": [{"type": "string"}]}}},
     [f"{ROOT}.properties[a].anyOf[0].type: Forbidden: must be empty to be structural"]),
])
def test_structural_check(schema: dict[str, Any], expected: list[str]) -> None:
    assert [e.message() for e in structural_errors(schema, ROOT)] == expected


SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "string", "enum": ["S", "M"]},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2,
                         "x-kubernetes-list-type": "set"},
                "port": {"x-kubernetes-int-or-string": True},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "maybe": {"type": "string", "nullable": True},
                "when": {"type": "string", "format": "date-time"},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
                "nested": {"type": "object", "default": {},
                           "properties": {"mode": {"type": "string", "default": "fast"}}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "required": ["name"],
                                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
            },
        },
    },
}


@pytest.mark.parametrize(("spec", "expected"), [
    ({"size": "S"}, []),
    ({}, ["spec.size: Required value"]),
    ({"size": "L"}, ['spec.size: Unsupported value: "L": supported values: "S", "M"']),
    ({"size": "S", "replicas": "x"},
     ['spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"']),
    ({"size": "S", "replicas": -1}, ["spec.replicas: Invalid value: -1: spec.replicas in body should be greater "
                                     "than or equal to 0"]),
    ({"size": "S", "replicas": 11}, ["spec.replicas: Invalid value: 11: spec.replicas in body should be less than "
                                     "or equal to 10"]),
    ({"size": "S", "name": "a"}, ['spec.name: Invalid value: "a": spec.name in body should be at least 2 chars '
                                  'long']),
    ({"size": "S", "name": "abcdef"}, ["spec.name: Too long: may not be more than 5 bytes"]),
    ({"size": "S", "name": "AB"}, ["spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"]),
    ({"size": "S", "tags": []}, ["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"]),
    ({"size": "S", "tags": ["a", "b", "c"]}, ["spec.tags: Too many: 3: must have at most 2 items"]),
    ({"size": "S", "tags": ["a", "a"]}, ['spec.tags[1]: Duplicate value: "a"']),
    ({"size": "S", "port": 80}, []),
    ({"size": "S", "port": "http"}, []),
    ({"size": "S", "port": 1.5},
     ['spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number"']),
    ({"size": "S", "labels": {"a": 1}},
     ['spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer"']),
    ({"size": "S", "free": {"anything": [1, {"x": None}]}}, []),
    ({"size": "S", "maybe": None}, []),
    ({"size": "S", "when": "yesterday"},
     ['spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"']),
    ({"size": "S", "when": "2024-01-02T03:04:05Z"}, []),
    ({"size": "S", "ports": [{"name": "a"}, {"name": "a", "port": 1}]},
     ['spec.ports[1]: Duplicate value: {"name":"a"}']),
    ({"size": "S", "ports": [{"port": 1}]}, ["spec.ports[0].name: Required value"]),
])
def test_value_validation(spec: dict[str, Any], expected: list[str]) -> None:
    assert [e.message() for e in validate_value({"spec": spec}, SCHEMA, "")] == expected


def test_pruning_reports_unknown_fields_as_the_decoder_does() -> None:
    apischema.RUNTIME_KINDS[("example.com/v1", "Widget")] = compile_node(SCHEMA)
    try:
        obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "junk": 1},
               "spec": {"size": "S", "extra": 1, "free": {"kept": 1}, "labels": {"any": "x"},
                        "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bad": 1},
                                     "spec": {"x": "y", "z": 1}},
                        "ports": [{"name": "a", "other": 2}], "replicas": "not-checked-here"},
               "status": {"anything": True}}
        findings = check_object("example.com/v1", "Widget", obj)
        assert findings.unknown == ["metadata.junk", "spec.extra", "spec.template.metadata.bad",
                                    "spec.template.spec.z", "spec.ports[0].other", "status"]
        assert findings.problems == []  # type errors are the schema validator's 422
    finally:
        del apischema.RUNTIME_KINDS[("example.com/v1", "Widget")]


def test_no_schema_properties_prunes_everything_below_an_object() -> None:
    node = compile_node({"type": "object", "properties": {"spec": {"type": "object"}}})
    apischema.RUNTIME_KINDS[("example.com/v1", "Empty")] = node
    try:
        findings = check_object("example.com/v1", "Empty", {"spec": {"a": 1}, "kind": "Empty"})
        assert findings.unknown == ["spec.a"]
    finally:
        del apischema.RUNTIME_KINDS[("example.com/v1", "Empty")]


@pytest.mark.parametrize(("spec", "expected"), [
    ({"size": "S"}, {"size": "S", "replicas": 1, "nested": {"mode": "fast"}}),
    ({"size": "S", "replicas": 3, "nested": {"mode": "slow"}}, {"size": "S", "replicas": 3, "nested": {"mode": "slow"}}),
    ({"size": "S", "replicas": None}, {"size": "S", "replicas": 1, "nested": {"mode": "fast"}}),
    ({"size": None, "maybe": None}, {"maybe": None, "replicas": 1, "nested": {"mode": "fast"}}),
])
def test_defaulting(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    obj = {"spec": spec}
    apply_defaults(obj, SCHEMA)
    assert obj == {"spec": expected}


@pytest.mark.parametrize(("path", "obj", "expected"), [
    (".spec.replicas", {"spec": {"replicas": 3}}, [3]),
    (".spec.missing", {"spec": {}}, []),
    (".status.conditions[?(@.type==\"Ready\")].status",
     {"status": {"conditions": [{"type": "Other", "status": "x"}, {"type": "Ready", "status": "True"}]}}, ["True"]),
    (".spec.items[0].name", {"spec": {"items": [{"name": "a"}, {"name": "b"}]}}, ["a"]),
    (".spec.items[*].name", {"spec": {"items": [{"name": "a"}, {"name": "b"}]}}, ["a", "b"]),
    (".metadata.labels['app.kubernetes.io/name']", {"metadata": {"labels": {"app.kubernetes.io/name": "x"}}}, ["x"]),
])
def test_jsonpath_subset(path: str, obj: dict[str, Any], expected: list[Any]) -> None:
    assert jsonpath.find(obj, path) == expected


def crd(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [{"name": "v1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": {"type": "object"}}}],
    }
    body.update(spec)
    obj = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"}, "spec": body}
    crds.default_crd(obj)
    return obj


def test_crd_defaults() -> None:
    obj = crd()
    assert obj["spec"]["names"] == {"plural": "widgets", "kind": "Widget", "singular": "widget",
                                    "listKind": "WidgetList"}
    assert obj["spec"]["conversion"] == {"strategy": "None"}


@pytest.mark.parametrize(("change", "expected"), [
    ({}, []),
    ({"names": {"plural": "Widgets", "kind": "Widget"}},
     ['metadata.name: Invalid value: "widgets.example.com": must be spec.names.plural+"."+spec.group',
      'spec.names.plural: Invalid value: "Widgets": a DNS-1035 label must consist of lower case alphanumeric '
      "characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. "
      "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]),
    ({"group": "example"}, ['metadata.name: Invalid value: "widgets.example.com": must be spec.names.plural+"."+'
                            'spec.group', 'spec.group: Invalid value: "example": should be a domain with at least '
                            'one dot']),
    ({"scope": "Global"}, ['spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"']),
    ({"versions": [{"name": "v1", "served": True, "storage": False, "schema": {"openAPIV3Schema": {"type": "object"}}}]},
     ['spec.versions: Invalid value: [{"name":"v1","schema":{"openAPIV3Schema":{"type":"object"}},"served":true,'
      '"storage":false}]: must have exactly one version marked as storage version']),
    ({"versions": [{"name": "v1", "served": True, "storage": True}]},
     ["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"]),
    ({"versions": [{"name": "v1", "served": True, "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {}}}}}]},
     ["spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for "
      "specified object fields"]),
    ({"versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}},
                    "subresources": {"scale": {"specReplicasPath": ".status.replicas",
                                               "statusReplicasPath": ".status.replicas"}}}]},
     ['spec.versions[0].subresources.scale.specReplicasPath: Invalid value: ".status.replicas": should be a json '
      "path under .spec"]),
    ({"versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}},
                    "additionalPrinterColumns": [{"name": "X", "type": "text", "jsonPath": ".spec.x"}]}]},
     ['spec.versions[0].additionalPrinterColumns[0].type: Unsupported value: "text": supported values: "boolean", '
      '"date", "integer", "number", "string"']),
])
def test_crd_validation(change: dict[str, Any], expected: list[str]) -> None:
    assert [e.message() for e in crds.validate_crd_create(crd(**change))] == expected


def test_crd_scope_is_immutable() -> None:
    old = crd()
    new = crd(scope="Cluster")
    new["metadata"] = dict(old["metadata"])
    assert [e.message() for e in crds.validate_crd_update(new, old)] == [
        'spec.scope: Invalid value: "Cluster": field is immutable']
