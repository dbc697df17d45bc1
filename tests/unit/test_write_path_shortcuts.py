"""The write path's shortcuts give exactly the results of the plain definitions they replace.

Each shortcut (skipping subtrees equal to the stored object, memoising pure functions, copying
only what the pipeline may change) is checked against the straightforward computation: the
unknown-field walk of the whole object, managedFields recomputed from full field sets, a
scan-based list index, an uncached name check, and the stored object left untouched.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from everynode.api import schema
from everynode.api.errors import ApiError
from everynode.api.gojson import go_json
from everynode.api.meta import deep_copy
from everynode.api.names import is_dns1123_label, name_is_dns_subdomain
from everynode.api.registry import resource
from everynode.api.schema import unknown_fields
from everynode.api.validation import validate_update
from everynode.api.validation.meta import (
    validate_annotations,
    validate_finalizers,
    validate_labels,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
    validate_owner_references,
)
from everynode.apiserver.patch import record_managed_fields, strategic
from everynode.apiserver.patch.apply import (
    _ident,
    _key_element,
    _minus,
    _render_fields_v1,
    _render_key_element,
    _root_union,
    field_set,
    fields_v1,
    parse_fields_v1,
)
from everynode.apiserver.service import ApiService, RequestOptions
from everynode.clock import Clock
from everynode.storage.memory import MemoryStore
from tests.support.fieldsets import field_set as plain_field_set

NOW = "2026-01-01T00:00:10Z"


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u", "resourceVersion": "7",
                     "labels": {"app": "x"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds",
                                          "uid": "d", "controller": True}]},
        "spec": {"nodeName": "n1",
                 "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                                {"name": "d", "image": "busybox"}],
                 "tolerations": [{"key": "k", "operator": "Exists"}]},
        "status": {"phase": "Running", "podIP": "10.0.0.1",
                   "conditions": [{"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"}],
                   "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0}]},
    }


def _lease() -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "n1", "namespace": "kube-node-lease", "uid": "u", "resourceVersion": "3",
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "nu"}]},
        "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40, "renewTime": "2026-01-01T00:00:00.000000Z"},
    }


def _daemonset_and_secret() -> list[dict[str, Any]]:
    """Objects with the scalar checks a pod leaves out: IntOrString, Quantity, bool, int32 in a
    list of objects, a map of strings, and base64 bytes."""
    return [{
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "ds", "namespace": "default", "labels": {"app": "x"}},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "minReadySeconds": 5,
                 "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%",
                                                                             "maxSurge": 0}},
                 "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{
                     "name": "c", "image": "nginx", "ports": [{"containerPort": 80, "hostPort": 80}],
                     "resources": {"requests": {"cpu": "100m", "memory": 64}},
                     "securityContext": {"privileged": True}}]}}},
    }, {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"},
        "type": "Opaque", "data": {"k": "dmFsdWU="}, "immutable": False,
    }]


def _edit(obj: dict[str, Any], *steps: Any, value: Any = None, delete: bool = False) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    node = out
    for step in steps[:-1]:
        node = node[step]
    if delete:
        del node[steps[-1]]
    else:
        node[steps[-1]] = value
    return out


# --------------------------------------------------------------------------- unknown fields

UNKNOWN_CASES = [
    ("unchanged", "v1", "Pod", _pod(), _pod()),
    ("new unknown top-level", "v1", "Pod", _pod(), _edit(_pod(), "bogus", value=1)),
    ("unknown in changed container", "v1", "Pod", _pod(),
     _edit(_pod(), "spec", "containers", 0, "weird", value={"a": 1})),
    ("unknown in appended container", "v1", "Pod", _pod(),
     _edit(_pod(), "spec", "containers", value=_pod()["spec"]["containers"] + [{"name": "e", "x": 1}])),
    ("unknown under a new key", "v1", "Pod", _pod(), _edit(_pod(), "spec", "affinity", value={"nodeAffinity": {"y": 1}})),
    ("unknown in status with spec unchanged", "v1", "Pod", _pod(), _edit(_pod(), "status", "weird", value=2)),
    ("type changed to a scalar", "v1", "Pod", _pod(), _edit(_pod(), "spec", value="text")),
    ("lease spec field", "coordination.k8s.io/v1", "Lease", _lease(), _edit(_lease(), "spec", "bogus", value=True)),
    ("map values are open", "v1", "Pod", _pod(), _edit(_pod(), "metadata", "labels", "new", value="v")),
    ("no stored version", "v1", "Pod", None, _edit(_pod(), "spec", "zz", value=1)),
]


@pytest.mark.parametrize(("api_version", "kind", "known", "obj"), [c[1:] for c in UNKNOWN_CASES],
                         ids=[c[0] for c in UNKNOWN_CASES])
def test_unknown_fields_skipping_stored_subtrees_reports_the_same_paths(api_version, kind, known, obj):
    assert unknown_fields(api_version, kind, obj, known=known) == unknown_fields(api_version, kind, obj)


def _pinned_pod(node: Any, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "agent-", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}, **extra}}


TEMPLATE_CASES = [
    ("clean", _pinned_pod("n1")),
    ("badly typed affinity value", _pinned_pod(7)),
    ("unknown field in affinity", _edit(_pinned_pod("n1"), "spec", "affinity", "bogus", value=1)),
    ("badly typed node name", _pinned_pod("n1", nodeName=["n1"])),
    ("badly typed template field", _pinned_pod("n1", terminationGracePeriodSeconds="30")),
    ("unknown template field", _pinned_pod("n1", bogus=True)),
]


@pytest.mark.parametrize("pod", [c[1] for c in TEMPLATE_CASES], ids=[c[0] for c in TEMPLATE_CASES])
def test_pod_template_memo_reports_what_the_full_walk_reports(pod, monkeypatch):
    from everynode.api import typecheck

    def findings(obj: dict[str, Any]) -> tuple[list[str], list[str]]:
        found = typecheck.check_object("v1", "Pod", deep_copy(obj))
        return found.unknown, [f"{p.go_path}: {typecheck.go_decode_message(p)}" for p in found.problems]

    with monkeypatch.context() as m:
        m.setattr(typecheck, "_PER_OBJECT_FIELDS", {})
        full = findings(pod)
    typecheck._CLEAN_TEMPLATES.clear()
    assert findings(_pinned_pod("n0")) == ([], [])
    assert typecheck._CLEAN_TEMPLATES  # the template is remembered
    assert findings(pod) == full
    assert findings(pod) == full


def test_pod_template_memo_keeps_only_walks_that_could_report_everything():
    from everynode.api import typecheck

    typecheck._CLEAN_TEMPLATES.clear()
    bad_spec = _pinned_pod("n1", terminationGracePeriodSeconds="30")
    # Metadata first fills the findings to the bound: the spec's own problem goes unreported.
    many = _edit(bad_spec, "metadata", "labels", value={f"l{i}": i for i in range(typecheck.MAX_PROBLEMS)})
    assert len(typecheck.check_object("v1", "Pod", many).problems) == typecheck.MAX_PROBLEMS
    assert not typecheck._CLEAN_TEMPLATES
    assert [p.go_path for p in typecheck.check_object("v1", "Pod", bad_spec).problems] == [
        "spec.terminationGracePeriodSeconds"]


def _mutations(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, replacement) for every place of ``value``: a value of each other JSON type, and an
    unknown field in every object."""
    for replacement in ({"x": 1}, [1], 1.5, True, "text", 2**40, None):
        if type(replacement) is not type(value):
            yield path, replacement
    if isinstance(value, dict):
        yield path + ("zz-unknown",), 1
        for key, sub in value.items():
            yield from _mutations(sub, path + (key,))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            yield from _mutations(sub, path + (i,))


def _mutated(obj: Any, path: tuple[Any, ...], replacement: Any) -> Any:
    if not path:
        return replacement
    out = deep_copy(obj)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = replacement
    return out


@pytest.mark.parametrize(("api_version", "kind", "obj", "known"), [
    ("v1", "Pod", _pod(), None),
    ("v1", "Pod", _pod(), _pod()),
    ("coordination.k8s.io/v1", "Lease", _lease(), None),
    ("v1", "Pod", _pinned_pod("n1"), None),
    ("apps/v1", "DaemonSet", _daemonset_and_secret()[0], None),
    ("apps/v1", "DaemonSet", _daemonset_and_secret()[0], _daemonset_and_secret()[0]),
    ("v1", "Secret", _daemonset_and_secret()[1], None),
], ids=["pod", "pod-known", "lease", "pinned-pod", "daemonset", "daemonset-known", "secret"])
def test_compiled_verdict_finds_what_the_walk_finds(api_version, kind, obj, known):
    """The compiled verdict (typecheck.is_clean) answers "clean" exactly when the walker finds
    nothing: at every place of the object, every wrong JSON type and an unknown field; and
    check_object reports what the walk alone reports."""
    from everynode.api import typecheck

    def found(f: typecheck.Findings) -> tuple[list[str], list[str]]:
        return f.unknown, [f"{p.go_path}: {typecheck.go_decode_message(p)}" for p in f.problems]

    cases = [obj, *(_mutated(obj, path, r) for path, r in _mutations(obj) if path)]
    walked = [found(typecheck.walk(api_version, kind, deep_copy(o), known=known)) for o in cases]
    typecheck._CLEAN_TEMPLATES.clear()
    for _ in range(2):  # (the second time with the pod template remembered)
        assert [typecheck.is_clean(api_version, kind, deep_copy(o), known=known) for o in cases] \
            == [w == ([], []) for w in walked]
        assert [found(typecheck.check_object(api_version, kind, deep_copy(o), known=known)) for o in cases] == walked
    assert walked[0] == ([], []) and sum(1 for w in walked if w != ([], [])) > len(cases) // 2


# --------------------------------------------------------------------------- managedFields

def _reference_record(old: dict[str, Any], new: dict[str, Any], *, manager: str, api_version: str, kind: str,
                      subresource: str | None) -> list[tuple[str, str, str, str, frozenset]]:
    """Upstream's rule for a non-apply write, from whole field sets: the writer gets the fields it
    added or changed (and keeps its own), everyone loses those and the removed ones."""
    old_set = plain_field_set(old, api_version=api_version, kind=kind, subresource=subresource)
    new_set = plain_field_set(new, api_version=api_version, kind=kind, subresource=subresource)
    from everynode.apiserver.patch.apply import _changed, _get

    changed = {p for p in new_set if p not in old_set or _changed(_get(old, p), _get(new, p))}
    removed = old_set - new_set
    out = []
    found = False
    for entry in old["metadata"].get("managedFields") or []:
        paths = parse_fields_v1(entry["fieldsV1"])
        mine = (entry["manager"], entry.get("subresource", "")) == (manager, subresource or "")
        if mine and entry["operation"] == "Update":
            found = True
            paths = (paths - removed) | changed
        else:
            paths = paths - changed - removed
        if paths:
            out.append((entry["manager"], entry["operation"], entry.get("subresource", ""),
                        NOW if mine and changed else entry["time"], frozenset(paths)))
    if not found and changed:
        out.append((manager, "Update", subresource or "", NOW, frozenset(changed)))
    return out


def _entries(obj: dict[str, Any]) -> list[tuple[str, str, str, str, frozenset]]:
    return [(e["manager"], e["operation"], e.get("subresource", ""), e["time"], frozenset(parse_fields_v1(e["fieldsV1"])))
            for e in obj["metadata"].get("managedFields") or []]


def _with_managers(obj: dict[str, Any], *, api_version: str, kind: str) -> dict[str, Any]:
    """``obj`` as stored after a create by "creator" and a status write by "kubelet"."""
    created = record_managed_fields(None, obj, manager="creator", now="2026-01-01T00:00:00Z",
                                    api_version=api_version, kind=kind)
    if kind != "Pod":
        return created
    status = _edit(created, "status", "hostIP", value="10.0.0.9")
    return record_managed_fields(created, status, manager="kubelet", now="2026-01-01T00:00:01Z",
                                 api_version=api_version, kind=kind, subresource="status")


MANAGED_CASES = [
    ("lease renewal by its owner", "coordination.k8s.io/v1", "Lease", "creator", None,
     lambda o: _edit(o, "spec", "renewTime", value="2026-01-01T00:00:10.000000Z")),
    ("lease renewal by another manager", "coordination.k8s.io/v1", "Lease", "kubelet", None,
     lambda o: _edit(o, "spec", "renewTime", value="2026-01-01T00:00:10.000000Z")),
    ("lease field removed", "coordination.k8s.io/v1", "Lease", "creator", None,
     lambda o: _edit(o, "spec", "leaseDurationSeconds", delete=True)),
    ("lease field added", "coordination.k8s.io/v1", "Lease", "creator", None,
     lambda o: _edit(o, "spec", "leaseTransitions", value=1)),
    ("pod status heartbeat by the kubelet", "v1", "Pod", "kubelet", "status",
     lambda o: _edit(o, "status", "conditions", value=[{"type": "Ready", "status": "False"},
                                                       {"type": "ContainersReady", "status": "False"}])),
    ("pod status field taken from the creator", "v1", "Pod", "kubelet", "status",
     lambda o: _edit(o, "status", "podIP", value="10.0.0.2")),
    ("pod status condition removed", "v1", "Pod", "kubelet", "status",
     lambda o: _edit(o, "status", "conditions", value=[{"type": "Ready", "status": "True"}])),
    ("pod label added by a new manager", "v1", "Pod", "labeler", None,
     lambda o: _edit(o, "metadata", "labels", value={"app": "x", "new": "y"})),
    ("pod container image changed", "v1", "Pod", "kubectl", None,
     lambda o: _edit(o, "spec", "containers", 0, "image", value="nginx:2")),
    ("pod keyed item removed", "v1", "Pod", "kubectl", None,
     lambda o: _edit(o, "spec", "containers", value=o["spec"]["containers"][:1])),
    ("pod atomic list replaced", "v1", "Pod", "kubectl", None,
     lambda o: _edit(o, "spec", "tolerations", value=[{"key": "j", "operator": "Exists"}])),
    ("nothing tracked changed", "v1", "Pod", "kubectl", None,
     lambda o: _edit(o, "metadata", "resourceVersion", value="8")),
]


@pytest.mark.parametrize(("api_version", "kind", "manager", "subresource", "change"), [c[1:] for c in MANAGED_CASES],
                         ids=[c[0] for c in MANAGED_CASES])
def test_record_managed_fields_matches_the_field_set_definition(api_version, kind, manager, subresource, change):
    base = _pod() if kind == "Pod" else _lease()
    old = _with_managers(base, api_version=api_version, kind=kind)
    new = change(old)
    frozen = copy.deepcopy(old), copy.deepcopy(new)
    result = record_managed_fields(old, new, manager=manager, now=NOW, api_version=api_version, kind=kind,
                                   subresource=subresource)
    assert (old, new) == frozen  # inputs untouched
    assert _entries(result) == _reference_record(old, new, manager=manager, api_version=api_version, kind=kind,
                                                 subresource=subresource)
    for entry in result["metadata"].get("managedFields") or []:  # rendered as the set renders, order included
        assert orjson.dumps(entry["fieldsV1"]) == orjson.dumps(fields_v1(parse_fields_v1(entry["fieldsV1"])))


def test_unchanged_field_set_keeps_the_stored_entry_and_only_moves_its_time():
    old = _with_managers(_lease(), api_version="coordination.k8s.io/v1", kind="Lease")
    new = _edit(old, "spec", "renewTime", value="2026-01-01T00:00:10.000000Z")
    result = record_managed_fields(old, new, manager="creator", now=NOW, api_version="coordination.k8s.io/v1",
                                   kind="Lease")
    (entry,), (before,) = result["metadata"]["managedFields"], old["metadata"]["managedFields"]
    assert entry == {**before, "time": NOW}
    assert entry["fieldsV1"] is before["fieldsV1"]
    again = record_managed_fields(result, _edit(result, "spec", "renewTime", value="x"), manager="creator", now=NOW,
                                  api_version="coordination.k8s.io/v1", kind="Lease")
    assert again["metadata"]["managedFields"][0] is entry  # same second: the stored entry itself


def _pinned_spec(node: str, **extra: Any) -> dict[str, Any]:
    from everynode.api.defaults import apply_defaults

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}], "affinity": {"nodeAffinity": {
               "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [
                   {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}, **extra}}
    apply_defaults("pods", pod)
    return pod["spec"]


SPEC_MEMO_CASES = [
    ("valid", _pinned_spec("n1")),
    ("bad node name", _pinned_spec("n1", nodeName="Not_A_Name")),
    ("bad affinity operator", _edit(_pinned_spec("n2"), "affinity", "nodeAffinity",
                                    "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms",
                                    value=[{"matchFields": [{"key": "metadata.name", "operator": "Gt",
                                                             "values": ["x"]}]}])),
    ("bad affinity and node name", _edit(_pinned_spec("n3", nodeName="-"), "affinity", value={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}})),
    ("bad template field", _edit(_pinned_spec("n4"), "restartPolicy", value="Sometimes")),
]


@pytest.mark.parametrize("spec", [c[1] for c in SPEC_MEMO_CASES], ids=[c[0] for c in SPEC_MEMO_CASES])
@pytest.mark.parametrize("resource_is_pod", [True, False])
def test_pod_spec_memo_reports_what_the_full_check_reports(spec, resource_is_pod):
    from everynode.api.validation import pod

    pod._VALID_SPECS.clear()
    assert pod.validate_pod_spec(_pinned_spec("n0"), "spec", resource_is_pod=resource_is_pod) == []
    assert pod._VALID_SPECS  # the template part is remembered
    full = pod._validate_pod_spec(spec, "spec", resource_is_pod=resource_is_pod)
    assert pod.validate_pod_spec(spec, "spec", resource_is_pod=resource_is_pod) == full
    assert pod.validate_pod_spec(deep_copy(spec), "spec", resource_is_pod=resource_is_pod) == full


KEY_ELEMENT_CASES = [
    ({"name": "c"}, ("name",)),
    ({"containerPort": 80}, ("containerPort", "protocol")),  # protocol defaulted to TCP
    ({"containerPort": 80, "protocol": "UDP"}, ("containerPort", "protocol")),
    ({"port": True}, ("port",)),
    ({"port": 1}, ("port",)),
    ({"port": 1.0}, ("port",)),
    ({"port": 1.5}, ("port",)),
    ({"name": "<&>"}, ("name",)),
    ({}, ("name",)),
    ({}, ("protocol",)),
    ({"name": ["a"]}, ("name",)),
    ({"name": {"x": 1}}, ("name", "other")),
    # one key holding a string: written out directly when Go would not escape it
    ({"ip": "10.244.0.2"}, ("ip",)),
    ({"ip": "fe80::1"}, ("ip",)),
    ({"name": ""}, ("name",)),
    ({"name": "a b"}, ("name",)),
    ({"name": 'a"b'}, ("name",)),
    ({"name": "a\\b"}, ("name",)),
    ({"name": "a\nb"}, ("name",)),
    ({"name": "a\x7fb"}, ("name",)),
    ({"name": "n\u00e4me"}, ("name",)),
    ({"name": "a\u2028b"}, ("name",)),
    ({"name": "a&b"}, ("name",)),
    ({"name": "a<b"}, ("name",)),
    ({"name": "a>b"}, ("name",)),
]


@pytest.mark.parametrize(("item", "keys"), KEY_ELEMENT_CASES)
def test_key_element_memo_renders_go_json_of_the_identity(item, keys):
    expected = "k:" + go_json(_ident(item, keys)).decode()
    assert _render_key_element(item, keys) == expected  # what a memo miss renders
    assert _key_element(item, keys) == expected
    assert _key_element(dict(item), keys) == expected  # a memo hit


# Field sets over a few elements of each kind, three levels deep: small enough that members,
# their parents and their children collide often.
_ELEMENTS = st.sampled_from(["f:a", "f:b", 'k:{"name":"x"}', 'k:{"name":"y"}', "v:1"])
_FIELD_SETS = st.sets(st.lists(_ELEMENTS, min_size=1, max_size=3).map(tuple), max_size=12)


@given(a=_FIELD_SETS, b=_FIELD_SETS)
@settings(max_examples=400, deadline=None)
def test_tree_difference_and_union_are_the_set_operations(a, b):
    """The ownership changes of a write work on FieldsV1 trees; they must render exactly as the
    set operations would (same members, same order, ``.`` where fields_v1 puts it)."""
    ta, tb = fields_v1(a), fields_v1(b)
    assert orjson.dumps(_minus(ta, tb)) == orjson.dumps(fields_v1(a - b) if a - b else {})
    assert orjson.dumps(_root_union(ta, tb)) == orjson.dumps(fields_v1(a | b) if a | b else {})
    assert (ta, tb) == (fields_v1(a), fields_v1(b))  # inputs untouched


@pytest.mark.parametrize("obj", [_pod(), _lease(), {"apiVersion": "v1", "kind": "Pod", "metadata": {}}],
                         ids=["pod", "lease", "empty"])
def test_fields_v1_memo_returns_the_rendered_tree(obj):
    api_version, kind = obj["apiVersion"], obj["kind"]
    paths = field_set(obj, api_version=api_version, kind=kind)
    assert paths == plain_field_set(obj, api_version=api_version, kind=kind)
    tree = fields_v1(paths)
    assert tree == _render_fields_v1(frozenset(paths))
    assert parse_fields_v1(tree) == paths
    assert fields_v1(set(paths)) is tree


# --------------------------------------------------------------------------- strategic merge

ORDER_CASES = [
    ([{"name": "a"}, {"name": "b"}, {"name": "a"}], "name"),
    ([{"port": 1}, {"port": True}, {"port": 1.0}, {"port": "1"}], "port"),
    ([{"name": "a"}, "not-a-map", {"other": 1}], "name"),
    ([{"name": ["unhashable"]}, {"name": "b"}], "name"),
    ([1, True, "1", 2, 1], ""),
    ([], "name"),
]


@pytest.mark.parametrize(("order", "merge_key"), ORDER_CASES)
def test_indexer_agrees_with_the_scan(order, merge_key):
    probes = [*order, {"name": "zz"}, {"port": False}, {"name": ["unhashable"]}, 3, False, None]
    index = strategic._indexer(order, merge_key)
    assert [index(p) for p in probes] == [strategic._index(order, p, merge_key) for p in probes]


_COND = "type"
KEYED_MERGE_CASES = [
    ("kubelet status", [{"type": "PodScheduled", "status": "True"}],
     [{"type": t, "status": "True", "reason": None} for t in ("Initialized", "Ready", "PodScheduled", "X")]),
    ("interleaved", [{"type": "a"}, {"type": "b"}, {"type": "c"}, {"type": "d"}],
     [{"type": "d", "v": 1}, {"type": "new"}, {"type": "b", "v": 2}]),
    ("only new", [{"type": "a"}], [{"type": "z"}, {"type": "y"}]),
    ("only live", [{"type": "a"}, {"type": "b"}], [{"type": "b"}]),
    ("int and bool keys", [{"type": 1}, {"type": True}], [{"type": 1.0, "x": 1}, {"type": False}]),
    ("string and int keys", [{"type": "1"}, {"type": 1}], [{"type": 1, "v": 1}, {"type": "1", "w": 2}]),
    ("duplicate patch key", [{"type": "a"}], [{"type": "a", "v": 1}, {"type": "a", "v": 2}]),
    ("duplicate live key", [{"type": "a"}, {"type": "a", "w": 1}], [{"type": "a", "v": 1}]),
    ("directive", [{"type": "a"}, {"type": "b"}], [{"type": "a", "$patch": "delete"}, {"type": "c"}]),
    ("null key", [{"type": "a"}], [{"type": None}]),
    ("missing key", [{"type": "a"}], [{"status": "x"}]),
    ("unhashable key", [{"type": ["a"]}], [{"type": ["a"], "v": 1}]),
    ("nested nulls", [{"type": "a", "m": {"k": 1}}], [{"type": "a", "m": {"k": None, "j": [1]}}]),
]


@pytest.mark.parametrize(("original", "patch"), [c[1:] for c in KEYED_MERGE_CASES],
                         ids=[c[0] for c in KEYED_MERGE_CASES])
def test_plain_keyed_merge_is_the_general_merge(original, patch):
    # Both paths called directly (a monkeypatched module global is not seen by compiled callers):
    # where the fast path answers, it answers what the general path does; where it declines
    # (None), the general path decides, raising as it will.
    fast = strategic._merge_plain_keyed(copy.deepcopy(original), copy.deepcopy(patch), None, _COND)
    try:
        expected = strategic._merge_keyed(copy.deepcopy(original), copy.deepcopy(patch), None, _COND)
    except Exception:  # noqa: BLE001 - an error of the general path: the fast one must have declined
        assert fast is None
        return
    if fast is not None:
        assert go_json(fast) == go_json(expected)
    assert go_json(strategic._merge_slice(original, patch, None, _COND, False)) == go_json(expected)


CLEAN_CASES = [
    {"a": 1, "b": None, "c": {"d": None, "e": [1, {"f": None}]}},
    {"a": {"$patch": "delete"}, "b": {"$patch": "replace", "c": 1}, "d": [{"$patch": "delete", "x": 1}, {"y": 2}]},
    {"$setElementOrder/containers": [{"name": "c"}], "containers": [{"name": "c", "image": "i", "env": None}]},
    {"$retainKeys": ["a"], "a": 1},
    # a directive after other keys (read in the same pass): the map goes to the merge all the same
    {"a": 1, "c": {"x": None, "y": 1}, "$retainKeys": ["a", "c"]},
    {"containers": [{"name": "c", "image": "i"}], "$setElementOrder/containers": [{"name": "c"}]},
    {"x": {"k": 1, "$patch": "replace"}},
]


@pytest.mark.parametrize("value", CLEAN_CASES)
def test_clean_map_is_merging_into_nothing(value):
    node = schema.kind_node("v1", "Pod").child("spec")
    assert strategic._clean_map(value, node) == strategic._merge_map({}, value, node)


# --------------------------------------------------------------------------- validation

META_UPDATE_CASES = [
    ("unchanged", {}),
    ("valid new label", {"labels": {"app": "x", "b": "c"}}),
    ("invalid new label", {"labels": {"bad key!": "v"}}),
    ("invalid annotation", {"annotations": {"bad key!": "v"}}),
    ("owner reference without uid", {"ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n"}]}),
    ("empty values", {"labels": {}, "annotations": None, "finalizers": []}),
    ("bad finalizer", {"finalizers": ["nope"]}),
    ("name changed", {"name": "other"}),
    ("uid type changed", {"uid": 5}),
    ("generation decremented", {"generation": -1}),
]


@pytest.mark.parametrize("changes", [c[1] for c in META_UPDATE_CASES], ids=[c[0] for c in META_UPDATE_CASES])
def test_update_rules_report_what_full_checks_report(changes):
    old = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _lease()["metadata"]}
    new = deep_copy(old)
    new["metadata"].update(changes)
    md, old_md = new["metadata"], old["metadata"]
    errors = [str(e) for e in validate_update("serviceaccounts", new, old)]
    # The plain definition, from the single checks: immutable fields, every changed map or list
    # (ValidateObjectMetaUpdate), then every create rule on everything (ValidateServiceAccount).
    checks = {"labels": validate_labels, "annotations": validate_annotations,
              "ownerReferences": validate_owner_references, "finalizers": validate_finalizers}
    expected = []
    if (md.get("generation") or 0) < (old_md.get("generation") or 0):
        expected.append("decremented")
    for key in ("name", "namespace", "uid"):
        if md.get(key) != old_md.get(key):
            expected.append(f"metadata.{key}: immutable")
    expected += [str(e) for k, check in checks.items() if md.get(k) != old_md.get(k)
                 for e in check(md.get(k), f"metadata.{k}")]
    expected += [str(e) for e in validate_qualified_name_free(md)]
    expected += [str(e) for e in validate_nonnegative(md.get("generation"), "metadata.generation")]
    expected += [str(e) for k, check in checks.items() for e in check(md.get(k), f"metadata.{k}")]
    assert _normalise(errors) == _normalise(expected)


def validate_qualified_name_free(md: dict[str, Any]) -> list[str]:
    """Name and namespace checks of a namespaced create (DNS subdomain name, DNS label namespace)."""
    out = [f"metadata.name: Invalid value: {msg}" for msg in name_is_dns_subdomain(md.get("name") or "", False)]
    return out + [f"metadata.namespace: Invalid value: {msg}" for msg in is_dns1123_label(md.get("namespace") or "")]


def _normalise(errors: list[str]) -> list[str]:
    """Errors reduced to what both sides spell the same way (path and, for checks, the message)."""
    out = []
    for e in errors:
        if "decremented" in e:
            out.append("decremented")
        elif "immutable" in e:
            out.append(e.split(":")[0] + ": immutable")
        else:
            out.append(e.split(":")[0] + ":" + e.rsplit(":", 1)[-1])
    return sorted(out)


@pytest.mark.parametrize("changes", [c[1] for c in META_UPDATE_CASES], ids=[c[0] for c in META_UPDATE_CASES])
def test_lease_update_is_the_metadata_update_rule_plus_the_spec_rule(changes):
    old = _lease()
    new = deep_copy(old)
    new["metadata"].update(changes)
    new["spec"]["leaseDurationSeconds"] = 0
    got = [str(e) for e in validate_update("leases.coordination.k8s.io", new, old)]
    expected = [str(e) for e in validate_object_meta_update(new["metadata"], old["metadata"])]
    assert got == [*expected, "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"]


def test_lease_update_reports_an_invalid_label_once():
    old = _lease()
    new = deep_copy(old)
    new["metadata"]["labels"] = {"bad key!": "v"}
    assert [e.field for e in validate_update("leases.coordination.k8s.io", new, old)] == ["metadata.labels"]


def test_name_check_memo_keeps_reporting_errors():
    md = {"name": "Bad_Name", "namespace": "Bad_NS"}
    first = [str(e) for e in validate_object_meta(md, namespaced=True, name_fn=name_is_dns_subdomain)]
    second = [str(e) for e in validate_object_meta(md, namespaced=True, name_fn=name_is_dns_subdomain)]
    assert first == second and len(first) == 2
    good = {"name": "good", "namespace": "default"}
    assert validate_object_meta(good, namespaced=True, name_fn=name_is_dns_subdomain) == []
    assert validate_object_meta(good, namespaced=True, name_fn=name_is_dns_subdomain) == []


LABEL_CASES = [
    {"app": "agent", "tier": "node"},
    {"bad key!": "v", "app": "agent"},
    {"app": "not a value!", "example.com/role": "x"},
    {"app": "agent", "x": 1},  # a non-string value is checked as ""
    {"/": "v", "app": "a" * 64},
]


def test_label_memo_reports_what_the_checks_report(monkeypatch):
    from everynode.api.validation import meta

    plain = []
    for labels in LABEL_CASES:  # each case with a memo of its own, empty (no pair repeats within one)
        with monkeypatch.context() as m:
            # (the memo is replaced, not ``remember``: compiled callers would not see that replaced)
            m.setattr(meta, "_VALID_LABELS", {})
            plain.append([str(e) for e in validate_labels(labels, "metadata.labels")])
    meta._VALID_LABELS.clear()
    for _ in range(2):  # the second time every valid pair is remembered
        assert [[str(e) for e in validate_labels(labels, "metadata.labels")] for labels in LABEL_CASES] == plain
    assert ("app", "agent") in meta._VALID_LABELS and ("bad key!", "v") not in meta._VALID_LABELS


def test_qualified_name_memo_keeps_reporting_errors():
    from everynode.api.validation import meta

    names = ["Ready", "example.com/Ready", "bad name!", "a/b/c", "", "x" * 64, "Ready"]
    meta._QUALIFIED_NAMES.clear()
    first = [[str(e) for e in meta.validate_qualified_name(n, "p")] for n in names]
    assert "Ready" in meta._QUALIFIED_NAMES and "bad name!" not in meta._QUALIFIED_NAMES
    assert [[str(e) for e in meta.validate_qualified_name(n, "p")] for n in names] == first
    meta._QUALIFIED_NAMES.clear()
    assert [[str(e) for e in meta.validate_qualified_name(n, "p")] for n in reversed(names)] == first[::-1]


# --------------------------------------------------------------------------- service: private copies

class FixedClock(Clock):
    def now(self) -> float:
        return 1_767_225_600.0


@pytest.fixture
def api() -> ApiService:
    return ApiService(MemoryStore(), clock=FixedClock())


async def test_status_patch_leaves_the_stored_object_untouched(api: ApiService):
    pods = resource("pods")
    body = _pod()
    for key in ("uid", "resourceVersion"):
        del body["metadata"][key]
    del body["status"]
    stored = await api.create(pods, "default", body, opts=RequestOptions(field_manager="ds"))
    snapshot = deep_copy(stored)
    patch = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
             "spec": {"hostNetwork": True}}  # ignored by /status, but defaulting would act on it
    new, _ = await api.patch(pods, "default", "p", patch, "strategic", subresource="status",
                             opts=RequestOptions(field_manager="kubelet"))
    assert stored == snapshot
    assert new["spec"] is stored["spec"]
    assert list(new) == list(stored)  # key order kept
    assert new["status"]["conditions"][0]["type"] == "Ready"
    label, _ = await api.patch(pods, "default", "p", {"metadata": {"labels": {"x": "y"}}}, "merge",
                               opts=RequestOptions(field_manager="labeler"))
    assert label["status"] is new["status"]
    assert label["metadata"]["labels"] == {"app": "x", "x": "y"}
    assert [e["manager"] for e in label["metadata"]["managedFields"]] == ["ds", "kubelet", "labeler"]


async def test_status_patch_carries_untouched_subtrees_over_by_identity():
    """A ``/status`` patch copies only the top levels (``copies.private_copy``): what it leaves alone is
    the stored object's own (in a store without sharing, which would make equal copies one
    again), and nothing stored changes, even when later stages mutate."""
    api = ApiService(MemoryStore(share_capacity=0), clock=FixedClock())
    pods = resource("pods")
    body = _pod()
    for key in ("uid", "resourceVersion"):
        del body["metadata"][key]
    await api.create(pods, "default", body, opts=RequestOptions(field_manager="ds"))
    stored, _ = await api.patch(pods, "default", "p", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                                "strategic", subresource="status", opts=RequestOptions(field_manager="kubelet"))
    snapshot = deep_copy(stored)
    patch = {"metadata": {"uid": stored["metadata"]["uid"]}, "status": {"podIP": "10.0.0.9"}}
    new, _ = await api.patch(pods, "default", "p", patch, "strategic", subresource="status",
                             opts=RequestOptions(field_manager="kubelet"))
    assert stored == snapshot
    for key in ("labels", "ownerReferences"):
        assert new["metadata"][key] is stored["metadata"][key]
    assert new["status"]["podIP"] == "10.0.0.9"
    assert new["status"]["conditions"] is stored["status"]["conditions"]
    # A badly typed spec sent to /status is still decoded (and refused) as before.
    with pytest.raises(ApiError) as caught:
        await api.patch(pods, "default", "p", {"spec": {"terminationGracePeriodSeconds": "x"}}, "merge",
                        subresource="status", opts=RequestOptions(field_manager="kubelet"))
    assert caught.value.code == 422
    assert "terminationGracePeriodSeconds" in caught.value.status["message"]


async def test_patch_result_that_is_not_an_object_is_rejected_by_decoding(api: ApiService):
    nodes = resource("nodes")
    await api.create(nodes, "", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}, opts=RequestOptions())
    for subresource in (None, "status"):
        with pytest.raises(ApiError) as caught:
            await api.patch(nodes, "", "n1", [{"op": "replace", "path": "", "value": [1]}], "json",
                            subresource=subresource, opts=RequestOptions())
        assert caught.value.code == 400
        assert "cannot unmarshal array" in caught.value.status["message"]


async def test_borrowed_status_update_stores_what_a_copied_body_stores():
    """The in-process client sends a ``/status`` update uncopied (``RequestOptions.borrowed``): the
    store copies what its pipeline changes, so the result is the one a private copy gives, the
    caller's body and the stored object stay as they were, and what the body shares with the
    stored object (its metadata's members, its spec) is carried over by identity."""
    from everynode.client.inprocess import InProcessClient

    pods = resource("pods")
    results = []
    for borrowed in (False, True):
        api = ApiService(MemoryStore(share_capacity=0), clock=FixedClock())
        body = _pod()
        for key in ("uid", "resourceVersion"):
            del body["metadata"][key]
        del body["status"]
        stored = await api.create(pods, "default", body, opts=RequestOptions(field_manager="ds"))
        snapshot = deep_copy(stored)
        changes = [
            # the controller's form: the stored object with a new status
            {**stored, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
            # a changed spec (ignored by /status, defaulted on the way) and an unknown nested field
            {**stored, "spec": {**stored["spec"], "hostNetwork": True},
             "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "bogus": 1}]}},
        ]
        sent = deep_copy(changes)
        written = []
        for change in changes:
            change["metadata"] = (await api.get(pods, "default", "p"))["metadata"] if written else change["metadata"]
            if borrowed:
                new = await InProcessClient(api).update_status("pods", change)
            else:  # the same client, handing over a private copy the plain way
                new = await InProcessClient(api, copy_inputs=False).update_status("pods", deep_copy(change))
            written.append({**new, "metadata": {**new["metadata"], "uid": "-"}})
        assert stored == snapshot
        assert [{k: v for k, v in c.items() if k != "metadata"} for c in changes] == \
            [{k: v for k, v in c.items() if k != "metadata"} for c in sent]
        if borrowed:
            assert new["spec"] is stored["spec"]
            assert new["metadata"]["ownerReferences"] is stored["metadata"]["ownerReferences"]
        results.append(written)
    assert results[0] == results[1]
    assert "bogus" not in results[1][1]["status"]["conditions"][0]


async def test_borrowed_creates_store_what_copied_bodies_store(monkeypatch: pytest.MonkeyPatch):
    """The in-process client sends a create uncopied too (``RequestOptions.borrowed``): a pod
    answered from its template copies only its own template fields, any other create copies the
    body before decoding changes it.  The objects stored are those that private copies give, and
    none shares a container with the caller's bodies: changing them afterwards changes nothing
    stored (bodies from a template, the first learnt and the next ones answered from it; a body
    with an unknown nested field, which decoding drops in place; a pod named by its creator; and
    a Namespace, which has no template shortcut)."""
    import random

    from everynode.api import meta
    from everynode.client.inprocess import InProcessClient

    def made(node: str, *, extra: bool = False, named: bool = False) -> dict[str, Any]:
        body = _pod()
        md = body["metadata"]
        for key in ("uid", "resourceVersion", "name"):
            del md[key]
        del body["status"], body["spec"]["nodeName"]
        if named:
            md["name"] = f"named-{node}"
        else:
            md["generateName"] = "ds-"
        body["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
        if extra:
            body["spec"]["containers"][0]["bogus"] = True
        return body

    results = []
    for borrowed in (False, True):
        uids = iter(range(1, 100))
        monkeypatch.setattr(meta, "suffix_source", random.Random(7))
        monkeypatch.setattr(meta, "new_uid", lambda uids=uids: f"00000000-0000-0000-0000-{next(uids):012d}")
        api = ApiService(MemoryStore(), clock=FixedClock())
        client = InProcessClient(api) if borrowed else InProcessClient(api, copy_inputs=False)
        bodies = [made("n1"), made("n2"), made("n3"), made("n4", extra=True), made("n5", named=True),
                  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other", "labels": {"a": "b"}}}]
        written = []
        for body in bodies:
            sent = body if borrowed else deep_copy(body)
            resource_ = "namespaces" if body["kind"] == "Namespace" else "pods"
            written.append(await client.create(resource_, sent, namespace="default"))
        snapshot = deep_copy(written)
        for body in bodies:  # the caller reuses its dicts
            body["metadata"]["labels"]["app"] = "changed"
            for container in (body.get("spec") or {}).get("containers") or ():
                container["image"] = "changed"
            if "affinity" in body.get("spec", {}):
                body["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
                    "nodeSelectorTerms"][0]["matchFields"][0]["values"][0] = "changed"
        assert written == snapshot
        assert [await client.get("pods", p["metadata"]["name"], namespace="default") for p in written[:5]] == \
            snapshot[:5]
        assert "bogus" not in written[3]["spec"]["containers"][0]
        results.append(snapshot)
    assert api.storage(resource("pods")).templates is not None
    assert results[0] == results[1]


SAME_CASES = [
    ("one object", "shared", "shared", True),
    ("equal scalars", 1, 1, True),
    ("bool is not int", True, 1, False),
    ("float is not int", 1.0, 1, False),
    ("null is not zero", None, 0, False),
    ("equal objects, other key order", {"a": 1, "b": [1, "x"]}, {"b": [1, "x"], "a": 1}, True),
    ("a nested bool for an int", {"a": {"b": [1, 2]}}, {"a": {"b": [1, True]}}, False),
    ("a nested float for an int", {"a": [{"n": 3}]}, {"a": [{"n": 3.0}]}, False),
    ("a key more", {"a": 1}, {"a": 1, "b": None}, False),
    ("another key", {"a": 1}, {"b": 1}, False),
    ("a missing key is not null", {"a": None}, {"b": None}, False),
    ("an item more", [1], [1, 1], False),
    ("object for list", {}, [], False),
]


@pytest.mark.parametrize(("before", "value", "same"), [c[1:] for c in SAME_CASES], ids=[c[0] for c in SAME_CASES])
def test_same_is_equality_with_the_same_json_types(before, value, same):
    from everynode.api import typecheck

    assert typecheck._same(before, value) is same
    assert typecheck._same(value, before) is same


def test_a_type_change_below_a_copied_level_is_found_with_its_members_shared():
    """A ``*/status`` write copies ``metadata`` one level and shares its members with the stored
    object: the members that are the stored ones are skipped, a changed one is still checked."""
    from everynode.api import typecheck

    known = _pod()
    known["metadata"]["labels"] = {"app": "a"}
    known["metadata"]["generation"] = 1
    same_members = dict(known["metadata"])
    assert typecheck.check_object("v1", "Pod", {**known, "metadata": same_members}, known=known).problems == []
    retyped = {**known, "metadata": {**known["metadata"], "generation": True}}
    problems = typecheck.check_object("v1", "Pod", retyped, known=known).problems
    assert [p.go_path for p in problems] == ["metadata.generation"]


async def test_borrowed_updates_store_what_copied_bodies_store():
    """Every in-process update goes uncopied (``RequestOptions.borrowed``), not only ``/status``:
    a Lease renewal (the kubelet's form: the stored object with a new renewTime), a pod update
    with an unknown nested field (dropped by decoding, in place on the private copy) and one
    that defaulting fills in store what a private copy stores; the caller's bodies and the
    stored versions stay as they were, and the stored managedFields entries are carried over by
    identity."""
    from everynode.client.inprocess import InProcessClient

    leases, pods = resource("leases.coordination.k8s.io"), resource("pods")
    results = []
    for borrowed in (False, True):
        api = ApiService(MemoryStore(share_capacity=0), clock=FixedClock())
        client = InProcessClient(api, user_agent="kubelet/v1") if borrowed else \
            InProcessClient(api, user_agent="kubelet/v1", copy_inputs=False)
        lease = _lease()
        for key in ("uid", "resourceVersion"):
            del lease["metadata"][key]
        pod = _pod()
        for key in ("uid", "resourceVersion"):
            del pod["metadata"][key]
        del pod["status"]
        stored_lease = await api.create(leases, "kube-node-lease", lease, opts=RequestOptions(field_manager="kubelet"))
        stored_pod = await api.create(pods, "default", pod, opts=RequestOptions(field_manager="ds"))
        snapshots = deep_copy([stored_lease, stored_pod])
        renewal = {**stored_lease, "spec": {**stored_lease["spec"], "renewTime": "2026-01-01T00:00:10.000000Z"}}
        containers = deep_copy(stored_pod["spec"]["containers"])
        containers[0]["bogus"] = True
        labelled = {**stored_pod, "metadata": {**stored_pod["metadata"], "labels": {"app": "y"}},
                    "spec": {**stored_pod["spec"], "containers": containers}}
        bodies = [renewal, labelled]
        sent = deep_copy(bodies)
        written = []
        for body, rt in zip(bodies, ("leases.coordination.k8s.io", "pods"), strict=True):
            new = await client.update(rt, body if borrowed else deep_copy(body))
            written.append({**new, "metadata": {**new["metadata"], "uid": "-"}})
        assert [stored_lease, stored_pod] == snapshots
        assert bodies == sent
        if borrowed:
            renewed = await api.get(leases, "kube-node-lease", "n1")
            assert renewed["metadata"]["managedFields"][0] is stored_lease["metadata"]["managedFields"][0]
        results.append(written)
    assert results[0] == results[1]
    assert results[1][0]["spec"]["renewTime"] == "2026-01-01T00:00:10.000000Z"
    assert "bogus" not in results[1][1]["spec"]["containers"][0]
    assert results[1][1]["spec"]["containers"][0]["terminationMessagePath"] == "/dev/termination-log"


async def test_handed_over_create_stores_what_a_copied_body_stores(monkeypatch: pytest.MonkeyPatch):
    """``Client.create(..., handed_over=True)`` (the Event recorder's creates) skips the copy the
    in-process API otherwise makes of a body before decoding changes it: the object stored is the
    one a copied body gives (an Event, and one with an unknown nested field decoding drops)."""
    import random

    from everynode.api import meta
    from everynode.client.inprocess import InProcessClient

    def event(name: str, *, extra: bool = False) -> dict[str, Any]:
        ref: dict[str, Any] = {"kind": "Pod", "namespace": "default", "name": "p", "uid": "u", "apiVersion": "v1"}
        if extra:
            ref["bogus"] = 1
        return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
                "involvedObject": ref, "reason": "Started", "message": "Started container c",
                "source": {"component": "kubelet", "host": "n1"}, "firstTimestamp": "2026-01-01T00:00:00Z",
                "lastTimestamp": "2026-01-01T00:00:00Z", "count": 1, "type": "Normal",
                "reportingComponent": "kubelet", "reportingInstance": "n1"}

    results = []
    for handed_over in (False, True):
        uids = iter(range(1, 100))
        monkeypatch.setattr(meta, "suffix_source", random.Random(7))
        monkeypatch.setattr(meta, "new_uid", lambda uids=uids: f"00000000-0000-0000-0000-{next(uids):012d}")
        client = InProcessClient(ApiService(MemoryStore(), clock=FixedClock()))
        bodies = [event("p.1"), event("p.2", extra=True)]
        sent = deep_copy(bodies)
        written = [await client.create("events", body, handed_over=handed_over) for body in bodies]
        if not handed_over:
            assert bodies == sent  # kept as the caller gave them
        results.append(deep_copy(written))
    assert results[0] == results[1]
    assert "bogus" not in results[1][1]["involvedObject"]


async def test_creates_within_a_second_share_their_managed_fields_list():
    """Objects of one shape created by one manager within one second (the managedFields time's
    resolution) carry the same managedFields list (apply.created_entries, and the template
    creates' own): the store then knows it by identity.  Equal to what each would have had, and
    never changed for one by a later write of another; a new second makes a new list."""
    from everynode.client.inprocess import InProcessClient

    class Ticking(Clock):
        t = 1_767_225_600.0

        def now(self) -> float:
            return self.t

    clock = Ticking()
    # (a store that shares nothing itself: what is shared here is the API's doing)
    client = InProcessClient(ApiService(MemoryStore(share_capacity=0), clock=clock), user_agent="kubelet/v1.33.0")

    def event(name: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
                "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p", "uid": "u"},
                "reason": "Started", "message": "Started container c", "source": {"component": "kubelet"},
                "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z", "count": 1,
                "type": "Normal"}

    a = await client.create("events", event("p.1"))
    b = await client.create("events", event("p.2"))
    assert a["metadata"]["managedFields"] is b["metadata"]["managedFields"]
    [entry] = b["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"], entry["time"]) == ("kubelet", "Update", "2026-01-01T00:00:00Z")
    kept = deep_copy(b["metadata"]["managedFields"])

    clock.t += 1.0
    c = await client.create("events", event("p.3"))
    assert c["metadata"]["managedFields"] is not b["metadata"]["managedFields"]
    assert c["metadata"]["managedFields"][0]["time"] == "2026-01-01T00:00:01Z"
    patched = await client.patch("events", "p.1", {"count": 2}, namespace="default", patch_type="strategic")
    assert patched["metadata"]["managedFields"][0]["time"] == "2026-01-01T00:00:01Z"
    stored_b = await client.get("events", "p.2", namespace="default")
    assert stored_b["metadata"]["managedFields"] == kept

    # A controller's pods, created from their template (registry/templates.py): the same.
    await client.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})

    def pod(node: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "agent-", "namespace": "ns",
                                                                 "labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "c", "image": "registry.example/c:1"}],
                         "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                             "nodeSelectorTerms": [{"matchFields": [
                                 {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}}}

    pods = [await client.create("pods", pod(f"n{i}"), namespace="ns") for i in range(3)]
    assert pods[1]["metadata"]["managedFields"] is pods[2]["metadata"]["managedFields"]
    assert pods[0]["metadata"]["managedFields"] == pods[2]["metadata"]["managedFields"]
