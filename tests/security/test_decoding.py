"""Attacks 2 and 3, and issue 17's error words: YAML alias bombs, badly typed values, deep and
large bodies — each refused at decoding with kube-apiserver's code and words, nothing stored."""

from __future__ import annotations

import resource as rlimit
import time
from typing import Any

import pytest

from everynode.api.errors import ApiError
from everynode.api.registry import resource
from everynode.apiserver.decoding import (
    MAX_BODY_BYTES,
    decode_body,
    decode_patch,
    excessive_aliasing,
    load_yaml,
)
from everynode.apiserver.service import ApiService, RequestOptions
from everynode.clock import Clock
from everynode.storage.memory import MemoryStore

DS = resource("daemonsets.apps")
CM = resource("configmaps")
CANNOT = 'DaemonSet in version "v1" cannot be handled as a DaemonSet: '


def bomb(levels: int) -> str:
    """The 377-byte attack: each level a list of nine aliases of the previous one."""
    lines = ["a0: &a0 [lol]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n" + "".join(
        f"  {line}\n" for line in lines)


@pytest.mark.parametrize("levels", [8, 9])
def test_alias_bomb_is_refused_quickly_and_small(levels: int) -> None:
    before = rlimit.getrusage(rlimit.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    with pytest.raises(ApiError) as info:
        decode_body(bomb(levels).encode(), "application/yaml", kind="ConfigMap")
    assert time.perf_counter() - started < 1.0
    assert rlimit.getrusage(rlimit.RUSAGE_SELF).ru_maxrss - before < 50 * 1024  # KiB: under 50 MiB
    assert info.value.code == 400
    assert info.value.message == "error converting YAML to JSON: yaml: document contains excessive aliasing"
    with pytest.raises(ApiError):
        decode_patch(bomb(levels).encode(), "application/apply-patch+yaml")


def test_merge_key_copies_are_bounded() -> None:
    """Merge keys copy (they are not shared like aliases): 2000 keys merged into 500 maps is a
    million copied pairs from 20 KB of text."""
    big = "big: &big {" + ", ".join(f"k{i}: v" for i in range(2000)) + "}\n"
    copies = "".join(f"m{i}: {{<<: *big}}\n" for i in range(500))
    started = time.perf_counter()
    with pytest.raises(ApiError) as info:
        load_yaml(big + copies, kind="ConfigMap")
    assert "excessive aliasing" in info.value.message
    assert time.perf_counter() - started < 2.0
    assert load_yaml(big + "m: {<<: *big, x: y}\n", kind="ConfigMap")["m"]["x"] == "y"


def test_ordinary_aliases_are_accepted_and_unshared() -> None:
    value = load_yaml("a: &x {k: v}\nb: *x\n", kind="ConfigMap")
    assert value == {"a": {"k": "v"}, "b": {"k": "v"}}
    assert value["a"] is not value["b"]  # the service owns (and mutates) what it decodes
    shared: list[Any] = ["x"] * 10
    assert not excessive_aliasing({"a": [shared] * 50})


@pytest.mark.parametrize("body,content_type", [
    (b"[" * 100_000 + b"]" * 100_000, "application/json"),
    (b"[" * 300 + b"]" * 300, "application/json"),
    (b"a: " + b"[" * 300 + b"]" * 300, "application/yaml"),
])
def test_deep_bodies_are_a_decoding_error(body: bytes, content_type: str) -> None:
    with pytest.raises(ApiError) as info:
        decode_body(body, content_type, kind="ConfigMap")
    assert info.value.code == 400


def test_a_body_over_3_mib_is_413_with_upstreams_words() -> None:
    with pytest.raises(ApiError) as info:
        decode_body(b" " * (MAX_BODY_BYTES + 1), "application/json", kind="ConfigMap")
    assert info.value.code == 413
    assert info.value.status["reason"] == "RequestEntityTooLarge"
    assert info.value.message == "Request entity too large: limit is 3145728"


def daemonset(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "typed", "labels": {"a": "b"}},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    body["spec"].update(spec)
    return body


def _with(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    body = daemonset()
    target: Any = body
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return body


TYPE_TABLE = [
    (("spec", "minReadySeconds"), "x",
     "json: cannot unmarshal string into Go struct field DaemonSetSpec.spec.minReadySeconds of type int32"),
    (("spec", "minReadySeconds"), 1.5,
     "json: cannot unmarshal number 1.5 into Go struct field DaemonSetSpec.spec.minReadySeconds of type int32"),
    (("spec", "minReadySeconds"), 2**40, "json: cannot unmarshal number 1099511627776 into Go struct field "
                                         "DaemonSetSpec.spec.minReadySeconds of type int32"),
    (("spec", "revisionHistoryLimit"), True,
     "json: cannot unmarshal bool into Go struct field DaemonSetSpec.spec.revisionHistoryLimit of type int32"),
    (("metadata", "labels", "n"), 1,
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"),
    (("metadata", "labels", "n"), [1],
     "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type string"),
    (("metadata", "labels", "n"), {"a": 1},
     "json: cannot unmarshal object into Go struct field ObjectMeta.metadata.labels of type string"),
    (("metadata", "labels"), ["a"],
     "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string"),
    (("spec", "template", "spec", "tolerations"), [{"key": "k", "value": ["x"]}],
     "json: cannot unmarshal array into Go struct field Toleration.spec.template.spec.tolerations.value of type "
     "string"),
    (("spec", "template", "spec", "containers"), "x",
     "json: cannot unmarshal string into Go struct field PodSpec.spec.template.spec.containers of type "
     "[]v1.Container"),
    (("spec", "template", "spec", "containers", 0, "args"), ["a", 1],
     "json: cannot unmarshal number into Go struct field Container.spec.template.spec.containers.args of type "
     "string"),
    (("spec", "template", "spec", "hostNetwork"), "yes",
     "json: cannot unmarshal string into Go struct field PodSpec.spec.template.spec.hostNetwork of type bool"),
    (("spec", "template", "spec", "activeDeadlineSeconds"), "1",
     "json: cannot unmarshal string into Go struct field PodSpec.spec.template.spec.activeDeadlineSeconds of "
     "type int64"),
    (("spec",), [1, 2], "json: cannot unmarshal array into Go struct field DaemonSet.spec of type v1.DaemonSetSpec"),
    (("metadata",), "x", "json: cannot unmarshal string into Go struct field DaemonSet.metadata of type v1.ObjectMeta"),
    (("spec", "updateStrategy"), {"rollingUpdate": {"maxUnavailable": True}},
     "json: cannot unmarshal bool into Go value of type int32"),
    (("spec", "template", "spec", "containers", 0, "resources"), {"limits": {"cpu": "lots"}},
     "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
]


@pytest.fixture
async def api() -> ApiService:
    service = ApiService(MemoryStore(), clock=Clock())
    await service.start()
    return service


async def _error(coro: Any) -> ApiError:
    with pytest.raises(ApiError) as info:
        await coro
    return info.value


@pytest.mark.parametrize("path,value,message", TYPE_TABLE)
async def test_badly_typed_values_are_refused_on_create_update_and_patch(
        api: ApiService, path: tuple[str | int, ...], value: Any, message: str) -> None:
    e = await _error(api.create(DS, "default", _with(path, value), opts=RequestOptions()))
    assert (e.code, e.status["reason"], e.message) == (400, "BadRequest", CANNOT + message)
    assert api.store.get(DS.key, "default", "typed") is None
    stored = await api.create(DS, "default", daemonset(), opts=RequestOptions())
    e = await _error(api.update(DS, "default", "typed", _with(path, value), opts=RequestOptions()))
    assert (e.code, e.message) == (400, CANNOT + message)
    if all(isinstance(step, str) for step in path):
        merge: Any = value
        for step in reversed(path):
            merge = {step: merge}
        e = await _error(api.patch(DS, "default", "typed", merge, "merge", opts=RequestOptions()))
        assert e.code == 422 and e.status["reason"] == "Invalid"
        assert e.message.startswith(' "" is invalid: patch: Invalid value: ') and e.message.endswith(message)
    assert api.store.get(DS.key, "default", "typed") == stored


async def test_apply_answers_in_structured_merge_diffs_words(api: ApiService) -> None:
    config = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "y", "namespace": "default"},
              "spec": [1, 2]}
    e = await _error(api.patch(DS, "default", "y", config, "apply", opts=RequestOptions(field_manager="m")))
    assert e.code == 400
    assert e.message == "failed to create typed patch object (default/y; apps/v1, Kind=DaemonSet): " \
                        ".spec: expected map, got &{[1 2]}"
    config["spec"] = {"foo": 1, "template": {"spec": {"containers": [{"name": "c", "image": 3}]}}}
    e = await _error(api.patch(DS, "default", "y", config, "apply", opts=RequestOptions(field_manager="m")))
    assert e.message == (
        "failed to create typed patch object (default/y; apps/v1, Kind=DaemonSet): errors:\n"
        "  .spec.foo: field not declared in schema\n"
        '  .spec.template.spec.containers[name="c"].image: expected string, got '
        "&value.valueUnstructured{Value:3}")
    config["spec"] = {"minReadySeconds": 1.5}
    e = await _error(api.patch(DS, "default", "y", config, "apply", opts=RequestOptions(field_manager="m")))
    assert e.message == CANNOT + TYPE_TABLE[1][2]
    assert api.store.get(DS.key, "default", "y") is None


async def test_strict_decoding_error_has_upstreams_prefix(api: ApiService) -> None:
    body = daemonset()
    body["spec"]["bogus"] = 1
    e = await _error(api.create(DS, "default", body, opts=RequestOptions(field_validation="Strict")))
    assert e.message == CANNOT + 'strict decoding error: unknown field "spec.bogus"'


async def test_a_configmap_over_1_mib_is_too_long_on_the_whole_object(api: ApiService) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
            "data": {"a": "x" * (1024 * 1024 + 1)}}
    e = await _error(api.create(CM, "default", body, opts=RequestOptions()))
    assert e.code == 422
    assert e.message == 'ConfigMap "big" is invalid: []: Too long: must have at most 1048576 bytes'
