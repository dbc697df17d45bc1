"""Server-side apply: create, re-apply removal, conflicts (message + causes) and force."""

from __future__ import annotations

import copy

import orjson
import pytest

from everynode.api.errors import ApiError
from everynode.apiserver.patch import apply_server_side, record_managed_fields
from everynode.apiserver.patch.apply import fields_v1, parse_fields_v1, path_string

GV, KIND = "apps/v1", "DaemonSet"


def manifest(image="quay.io/prometheus/node-exporter:v1.8.1", labels=True):
    ds = {"apiVersion": GV, "kind": KIND,
          "metadata": {"name": "node-exporter", "namespace": "monitoring"},
          "spec": {"selector": {"matchLabels": {"app": "ne"}},
                   "template": {"metadata": {"labels": {"app": "ne"}},
                                "spec": {"containers": [{"name": "node-exporter", "image": image}]}}}}
    if labels:
        ds["metadata"]["labels"] = {"team": "obs"}
    return ds


def apply(live, applied, manager="kubectl", force=False, now=1000.0):
    before = copy.deepcopy(live)
    out = apply_server_side(live, applied, manager=manager, force=force, now=now, api_version=GV, kind=KIND)
    assert live == before
    return out


def managers(obj):
    return [(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields", [])]


def test_create_via_apply_records_apply_entry():
    out = apply(None, manifest())
    assert out["spec"]["template"]["spec"]["containers"][0]["image"].endswith("v1.8.1")
    (entry,) = out["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl" and entry["operation"] == "Apply"
    assert entry["fieldsType"] == "FieldsV1" and entry["apiVersion"] == GV
    assert entry["time"] == "1970-01-01T00:16:40Z"
    fields = entry["fieldsV1"]
    assert fields["f:metadata"]["f:labels"] == {".": {}, "f:team": {}}
    assert "f:name" not in fields["f:metadata"]  # system fields are not tracked
    container = fields["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"node-exporter"}']
    assert container == {".": {}, "f:image": {}, "f:name": {}}


def test_reapply_removes_dropped_field():
    live = apply(None, manifest())
    out = apply(live, manifest(labels=False))
    assert "labels" not in out["metadata"]


def test_reapply_keeps_dropped_field_owned_by_someone_else():
    live = apply(None, manifest())
    live = apply(live, {"apiVersion": GV, "kind": KIND, "metadata": {"name": "node-exporter", "labels": {"team": "obs"}}},
                 manager="other")
    out = apply(live, manifest(labels=False))
    assert out["metadata"]["labels"] == {"team": "obs"}


def test_conflict_with_client_side_apply_manager():
    created = record_managed_fields(None, manifest(), manager="kubectl-client-side-apply", operation="Update",
                                    now=0.0, api_version=GV, kind=KIND)
    with pytest.raises(ApiError) as e:
        apply(created, manifest(image="quay.io/prometheus/node-exporter:v1.8.2"))
    st = e.value.status
    field = '.spec.template.spec.containers[name="node-exporter"].image'
    assert e.value.code == 409 and st["reason"] == "Conflict"
    assert st["message"] == f'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: {field}'
    assert st["details"]["causes"] == [{"reason": "FieldManagerConflict",
                                        "message": 'conflict with "kubectl-client-side-apply" using apps/v1',
                                        "field": field}]


def test_same_value_is_not_a_conflict():
    created = record_managed_fields(None, manifest(), manager="kubectl-client-side-apply", operation="Update",
                                    now=0.0, api_version=GV, kind=KIND)
    out = apply(created, manifest())
    assert ("kubectl", "Apply") in managers(out)


def test_several_conflicts_message():
    created = record_managed_fields(None, manifest(), manager="kubectl-client-side-apply", operation="Update",
                                    now=0.0, api_version=GV, kind=KIND)
    changed = manifest(image="other:1")
    changed["metadata"]["labels"]["team"] = "x"
    with pytest.raises(ApiError) as e:
        apply(created, changed)
    msg = e.value.message
    assert msg.startswith('Apply failed with 2 conflicts: conflicts with "kubectl-client-side-apply" using apps/v1:\n- ')
    assert len(e.value.status["details"]["causes"]) == 2


def test_force_takes_ownership():
    created = record_managed_fields(None, manifest(), manager="kubectl-client-side-apply", operation="Update",
                                    now=0.0, api_version=GV, kind=KIND)
    out = apply(created, manifest(image="img:2"), force=True)
    assert out["spec"]["template"]["spec"]["containers"][0]["image"] == "img:2"
    csa = next(e for e in out["metadata"]["managedFields"] if e["manager"] == "kubectl-client-side-apply")
    container = csa["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"node-exporter"}']
    assert "f:image" not in container
    # a second apply by the same manager no longer conflicts
    assert apply(out, manifest(image="img:3"))["spec"]["template"]["spec"]["containers"][0]["image"] == "img:3"


def test_update_takes_changed_fields_from_appliers():
    live = apply(None, manifest())
    updated = copy.deepcopy(live)
    updated["spec"]["template"]["spec"]["containers"][0]["image"] = "edited:1"
    out = record_managed_fields(live, updated, manager="kubectl-edit", operation="Update", now=5.0,
                                api_version=GV, kind=KIND)
    assert managers(out) == [("kubectl", "Apply"), ("kubectl-edit", "Update")]
    with pytest.raises(ApiError) as e:
        apply(out, manifest())
    assert 'conflict with "kubectl-edit" using apps/v1' in e.value.message


def test_fields_v1_round_trip_and_path_strings():
    paths = {("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"a"}'),
             ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"a"}', "f:image"),
             ("f:metadata", "f:finalizers", 'v:"x"')}
    assert parse_fields_v1(fields_v1(paths)) == paths
    assert path_string(("f:spec", "f:ports", 'k:{"containerPort":9100,"protocol":"TCP"}', "f:name")) == \
        '.spec.ports[containerPort=9100,protocol="TCP"].name'
    assert path_string(("f:metadata", "f:finalizers", 'v:"x"')) == '.metadata.finalizers[="x"]'


def test_reapply_matches_ports_whose_protocol_key_was_defaulted():
    """Ports are keyed by (containerPort, protocol); an applied port without protocol matches the
    stored, defaulted one (TCP) instead of being appended as a duplicate."""
    cfg = manifest()
    cfg["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 9100, "name": "metrics"}]
    live = apply(None, cfg)
    live["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] = "TCP"  # server defaulting
    out = apply(live, cfg)
    assert out["spec"]["template"]["spec"]["containers"][0]["ports"] == [
        {"containerPort": 9100, "name": "metrics", "protocol": "TCP"}]
    (entry,) = out["metadata"]["managedFields"]
    ports = entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"node-exporter"}']["f:ports"]
    assert list(ports) == ['k:{"containerPort":9100,"protocol":"TCP"}']


_TREE = {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
         "f:spec": {"f:containers": {'k:{"name":"a"}': {".": {}, "f:image": {}}}, "f:nodeName": {}}}


@pytest.mark.parametrize("tree", [_TREE, {}, {"f:status": {}}, {".": {}}, ["f:spec"], "f:spec"])
@pytest.mark.parametrize("paths", [
    set(),
    {("f:status", "f:phase"), ("f:status", "f:podIP")},
    {("f:status", "f:phase"), ("f:spec", "f:nodeName")},
    {("f:spec",)},
    {("f:spec", "f:containers", 'k:{"name":"a"}')},
    {("f:spec", "f:containers", 'k:{"name":"a"}'), ("f:spec", "f:containers", 'k:{"name":"a"}', "f:image")},
    {("f:spec", "f:containers", 'k:{"name":"a"}', "f:image")},
    {("f:spec", "f:containers", 'k:{"name":"b"}'), ("f:metadata", "f:labels", "f:app")},
    {("f:metadata", "f:labels", "f:app", "f:deeper")},
    {("f:metadata", "f:labels")},
])
def test_tree_comparisons_are_the_path_definitions(tree, paths):
    from everynode.apiserver.patch.apply import _covers, _meets, _tree_of
    from tests.support.fieldsets import tree_has

    members = _tree_of(paths)
    assert _meets(tree, members) == any(tree_has(tree, p) for p in paths)
    assert _covers(tree, members) == all(tree_has(tree, p) for p in paths)


# Objects whose field sets differ by one thing the member walk reads; run in order (twice) so that a
# memo keyed too loosely would answer one with another's field set.
_CREATED = [
    ("v1", "Event", {"metadata": {"name": "e"}, "reason": "R", "source": {"component": "c"}}),
    ("v1", "Event", {"metadata": {"name": "e"}, "reason": {}, "source": {"component": "c"}}),
    ("v1", "Event", {"metadata": {"name": "e"}, "reason": "R", "source": {}}),
    ("v1", "Event", {"metadata": {"name": "e"}, "reason": "R", "source": "c"}),
    ("v1", "Event", {"metadata": {"name": "e"}, "reason": "R", "source": {"component": {"x": 1}}}),
    ("v1", "Event", {"metadata": {"name": "e"}, "reason": "R", "source": {"host": "h"}}),
    ("v1", "Event", {"metadata": {"name": "e", "labels": {"a": "b"}}, "reason": "R"}),
    ("v1", "Event", {"metadata": {"name": "e", "labels": {"a": "b", "c": "d"}}, "reason": "R"}),
    ("v1", "Event", {"metadata": {"name": "e", "labels": {}}, "reason": "R"}),
    ("v1", "Event", {"metadata": {"name": "e", "finalizers": ["x"]}, "reason": "R"}),
    ("v1", "Event", {"metadata": {"name": "e", "finalizers": ["y"]}, "reason": "R"}),
    ("v1", "Event", {"metadata": {"name": "e"}, 1: "one"}),
    ("v1", "Event", {"metadata": {"name": "e"}, True: "true"}),
    ("v1", "ConfigMap", {"metadata": {"name": "c"}, "data": {"a": "1"}}),
    ("v1", "ConfigMap", {"metadata": {"name": "c"}, "data": {"a": {"b": "1"}}}),
    ("v1", "Pod", {"metadata": {"name": "p"}, "spec": {"nodeName": "n"}, "status": {"phase": "Running"}}),
    ("v1", "Pod", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}}),
    ("v1", "Pod", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "b"}]}}),
]


@pytest.mark.parametrize("subresource", [None, "status"])
def test_created_field_sets_are_the_plain_computation(subresource):
    from everynode.api import schema
    from everynode.apiserver.patch.apply import _created_tree, _untracked_top
    from tests.support.fieldsets import collect, tracked

    for _ in range(2):
        for api_version, kind, obj in _CREATED:
            node = schema.kind_node(api_version, kind)
            skip = _untracked_top(api_version, kind, subresource)
            plain: set = set()
            collect(obj, node, (), plain)
            tree = _created_tree(obj, node, skip, (api_version, kind, subresource))
            assert parse_fields_v1(tree) == tracked(plain, skip), (kind, obj)
            # the very tree the field set renders as, key order included
            assert orjson.dumps(tree) == orjson.dumps(fields_v1(tracked(plain, skip)))


def _pod_node(*path: str):
    from everynode.api import schema

    node = schema.kind_node("v1", "Pod")
    for step in path:
        node = node.items if step == "[]" else node.child(step)
    return node


# Values at one memoised position (a pod's condition, container status, labels, a pod IP list),
# run in order (twice): values of one shape share a memo entry whatever their scalars say, so a
# memo keyed too loosely would answer one with another's members.
_POSITIONED = [
    (("status", "conditions", "[]"), {"type": "Ready", "status": "True", "lastTransitionTime": "t1"}),
    (("status", "conditions", "[]"), {"type": "Ready", "status": "False", "lastTransitionTime": "t2"}),
    (("status", "conditions", "[]"), {"type": "Ready", "status": "False", "reason": "R", "message": "m"}),
    (("status", "conditions", "[]"), {"type": "Ready", "status": {"nested": "x"}}),
    (("status", "conditions", "[]"), {"type": "Ready", "status": {}}),
    (("status", "containerStatuses", "[]"), {"name": "a", "state": {"running": {"startedAt": "t"}}}),
    (("status", "containerStatuses", "[]"), {"name": "a", "state": {"waiting": {"reason": "r"}}}),
    (("status", "containerStatuses", "[]"), {"name": "a", "state": {"waiting": {}}}),
    (("status", "containerStatuses", "[]"), {"name": "a", "state": {"waiting": "r"}}),
    (("metadata", "labels"), {"app": "a"}),
    (("metadata", "labels"), {"app": "b"}),
    (("metadata", "labels"), {"tier": "a"}),
    (("status", "podIPs"), [{"ip": "10.244.0.2"}]),
    (("status", "podIPs"), [{"ip": "10.244.0.3"}]),
    (("spec", "containers", "[]"), {"name": "a", "ports": [{"containerPort": 80}]}),
    (("spec", "containers", "[]"), {"name": "a", "ports": [{"containerPort": 81}]}),
    (("spec", "containers", "[]"), {"name": "a", "ports": []}),
    # atomic lists are one member each, whatever they hold; a keyed list or a set is not
    (("spec", "containers", "[]"), {"name": "a", "command": ["x"]}),
    (("spec", "containers", "[]"), {"name": "a", "command": ["y", "z"]}),
    (("spec", "containers", "[]"), {"name": "a", "command": []}),
    (("spec", "containers", "[]"), {"name": "a", "command": "x"}),
    (("spec", "containers", "[]"), {"name": "a", "command": ["x"], "ports": [{"containerPort": 80}]}),
    (("spec", "containers", "[]"), {"name": "a", "command": ["x"], "ports": [{"containerPort": 81}]}),
    (("metadata",), {"name": "p", "finalizers": ["a"]}),
    (("metadata",), {"name": "p", "finalizers": ["b", "c"]}),
    (("spec", "affinity"), {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}),
    (("spec", "affinity"), {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}}),
    (("spec", "affinity"), {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": []}}}),
    (("spec", "affinity"), {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "k"}]}}),
]


def test_memoised_positions_are_the_plain_walk():
    from everynode.apiserver.patch.apply import _UNMEMOISED, _position, _walk

    for _ in range(2):
        for path, value in _POSITIONED:
            node = _pod_node(*path)
            memoised = _position(value, node, 3)
            assert memoised == _walk(value, node, _UNMEMOISED), (path, value)
            assert orjson.dumps(memoised) == orjson.dumps(_walk(value, node, _UNMEMOISED))  # key order too


def test_positions_whose_texts_never_repeat_are_walked_the_same():
    """A position whose memo look-ups keep missing (a pod's IP lists and container statuses) is
    walked without them, with a look-up every so often: the same trees either way."""
    from everynode.apiserver.patch.apply import _TEXT_MISSES, _UNMEMOISED, _position, _walk

    ips = _pod_node("status", "podIPs")
    statuses = _pod_node("status", "containerStatuses")
    for i in range(300):
        ip_list = [{"ip": f"10.{i >> 8}.{i & 255}.1"}, {"ip": f"fd00::{i:x}"}]
        status_list = [{"name": "agent", "containerID": f"containerd://{i:064x}", "ready": True,
                        "state": {"running": {"startedAt": "2026-12-04T20:00:00Z"}}, "lastState": {}}]
        for node, value in ((ips, ip_list), (statuses, status_list)):
            memoised = _position(value, node, 2)
            assert orjson.dumps(memoised) == orjson.dumps(_walk(value, node, _UNMEMOISED)), (i, value)
    assert _TEXT_MISSES[ips] > 64 and _TEXT_MISSES[statuses] > 64  # the walks without look-ups ran


def test_update_trees_that_never_repeat_are_kept_without_interning():
    """An update's field set that never equals another (a kubelet's status entry with its pod's IPs)
    stops being serialised for interning after a few misses, but is looked up again now and then;
    one that repeats is still shared."""
    from everynode.apiserver.patch.apply import _TREES, _UNIQUE_TREES, _interned_update

    def unique(i: int) -> dict:
        return {"f:status": {"f:podIP": {}, "f:podIPs": {f'k:{{"ip":"10.0.{i >> 8}.{i & 255}"}}': {".": {}, "f:ip": {}}}}}

    trees = [unique(i) for i in range(300)]
    kept = [_interned_update(tree, "v1", "UniqueTreesTestKind") for tree in trees]
    assert kept == [unique(i) for i in range(300)]
    assert _UNIQUE_TREES[("v1", "UniqueTreesTestKind", ("f:status",))] > 64
    assert sum(a is b for a, b in zip(kept, trees, strict=True)) == 300  # nothing else to share them with
    entered = {id(tree) for tree in _TREES.values()}
    assert sum(id(tree) in entered for tree in trees) < 30  # the first misses and the probes only
    repeated = [_interned_update({"f:status": {"f:phase": {}}}, "v1", "RepeatedTreesTestKind") for _ in range(3)]
    assert repeated[0] == {"f:status": {"f:phase": {}}}
    assert repeated[1] is repeated[0] and repeated[2] is repeated[0]


def test_list_type_decides_over_the_patch_strategy():
    """A list's ``x-kubernetes-list-type`` decides how managedFields see it, over its patch
    merge key (kube-openapi's schema conversion): a pod's ``status.hostIPs`` is ``atomic`` with
    a merge key (one member, ``f:hostIPs: {}``, as real clusters record the kubelet's write),
    ``status.podIPs`` a map keyed by ``ip``."""
    old = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Pending"}}
    new = copy.deepcopy(old)
    new["status"].update({"hostIP": "10.0.0.2", "hostIPs": [{"ip": "10.0.0.2"}],
                          "podIP": "10.244.0.5", "podIPs": [{"ip": "10.244.0.5"}]})
    out = record_managed_fields(old, new, manager="kubelet", now=1000.0, api_version="v1", kind="Pod",
                                subresource="status")
    (entry,) = out["metadata"]["managedFields"]
    status = entry["fieldsV1"]["f:status"]
    assert status["f:hostIPs"] == {}
    assert status["f:podIPs"]['k:{"ip":"10.244.0.5"}'] == {".": {}, "f:ip": {}}
    assert ".status.hostIPs" in {path_string(p) for p in parse_fields_v1(entry["fieldsV1"])}
