"""Strategic merge patch: the bodies kubectl sends (kubectl-contract.md §4) and upstream's rules."""

from __future__ import annotations

import copy

import pytest

from everynode.api.errors import ApiError
from everynode.apiserver.patch import apply_strategic_merge_patch
from tests.support.values import containers_of


def smp(obj, patch, api_version="apps/v1", kind="DaemonSet"):
    before_obj, before_patch = copy.deepcopy(obj), copy.deepcopy(patch)
    out = apply_strategic_merge_patch(obj, patch, api_version=api_version, kind=kind)
    assert obj == before_obj and patch == before_patch, "inputs must not be mutated"
    # The in-process client hands a strategic merge patch over without a copy (service.py).
    taken = {id(c) for c in containers_of(patch)} & {id(c) for c in containers_of(out)}
    assert not taken, "no map or list of the patch may be kept in the result"
    return out


def daemonset():
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "node-exporter", "namespace": "monitoring",
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}\n"}},
        "spec": {
            "selector": {"matchLabels": {"app": "ne"}},
            "template": {
                "metadata": {"labels": {"app": "ne"}},
                "spec": {
                    "containers": [{
                        "name": "node-exporter", "image": "quay.io/prometheus/node-exporter:v1.8.1",
                        "ports": [{"containerPort": 9100, "protocol": "TCP"}],
                        "volumeMounts": [{"name": "proc", "mountPath": "/host/proc"},
                                         {"name": "sys", "mountPath": "/host/sys"}],
                    }],
                    "volumes": [{"name": "proc", "hostPath": {"path": "/proc"}},
                                {"name": "sys", "hostPath": {"path": "/sys"}}],
                    "tolerations": [{"operator": "Exists"}],
                },
            },
        },
    }


def pod_spec(obj):
    return obj["spec"]["template"]["spec"]


def test_three_way_apply_patch_with_set_element_order():
    patch = {"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"new\":1}\n"}},
             "spec": {"template": {"spec": {
                 "$setElementOrder/containers": [{"name": "node-exporter"}],
                 "containers": [{"env": [{"name": "GOMAXPROCS", "value": "1"}],
                                 "image": "quay.io/prometheus/node-exporter:v1.8.2", "name": "node-exporter"}]}}}}
    out = smp(daemonset(), patch)
    (c,) = pod_spec(out)["containers"]
    assert c["image"] == "quay.io/prometheus/node-exporter:v1.8.2"
    assert c["env"] == [{"name": "GOMAXPROCS", "value": "1"}]
    assert c["ports"] == [{"containerPort": 9100, "protocol": "TCP"}]  # untouched fields kept
    assert len(c["volumeMounts"]) == 2
    assert out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] == "{\"new\":1}\n"
    assert "$setElementOrder/containers" not in pod_spec(out)


def test_patch_delete_of_volume_and_mount():
    patch = {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "node-exporter"}],
        "$setElementOrder/volumes": [{"name": "proc"}],
        "containers": [{"$setElementOrder/volumeMounts": [{"mountPath": "/host/proc"}],
                        "name": "node-exporter",
                        "volumeMounts": [{"$patch": "delete", "mountPath": "/host/sys"}]}],
        "volumes": [{"$patch": "delete", "name": "sys"}]}}}}
    out = smp(daemonset(), patch)
    spec = pod_spec(out)
    assert spec["volumes"] == [{"name": "proc", "hostPath": {"path": "/proc"}}]
    assert spec["containers"][0]["volumeMounts"] == [{"name": "proc", "mountPath": "/host/proc"}]
    assert not any(k.startswith("$") for k in spec["containers"][0])


def test_rollout_undo_replaces_template():
    old_template = {"$patch": "replace",
                    "metadata": {"creationTimestamp": None, "labels": {"app": "ne"}},
                    "spec": {"containers": [{"name": "node-exporter", "image": "old:1", "resources": {}}]}}
    out = smp(daemonset(), {"spec": {"template": old_template}})
    tpl = out["spec"]["template"]
    assert tpl["spec"] == {"containers": [{"name": "node-exporter", "image": "old:1", "resources": {}}]}
    assert tpl["metadata"] == {"labels": {"app": "ne"}}  # null creationTimestamp dropped
    assert "$patch" not in tpl
    assert out["spec"]["selector"] == {"matchLabels": {"app": "ne"}}


@pytest.mark.parametrize("taints, patch, expected", [
    ([{"key": "a", "effect": "NoSchedule"}], [{"key": "k", "value": "v", "effect": "NoSchedule"}],
     [{"key": "k", "value": "v", "effect": "NoSchedule"}]),
    ([{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}],
     [{"key": "b", "effect": "NoExecute"}], [{"key": "b", "effect": "NoExecute"}]),
])
def test_node_taints_are_replaced_atomically(taints, patch, expected):
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "spec": {"taints": taints}}
    out = smp(node, {"spec": {"taints": patch}}, "v1", "Node")
    assert out["spec"]["taints"] == expected


def test_null_deletes_keys():
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "spec": {"unschedulable": True, "taints": [{"key": "a", "effect": "NoSchedule"}]}}
    out = smp(node, {"spec": {"unschedulable": None, "taints": None}}, "v1", "Node")
    assert out["spec"] == {}
    out = smp(node, {"spec": {"unschedulable": True}}, "v1", "Node")
    assert out["spec"]["unschedulable"] is True


def test_null_inside_new_subtree_is_discarded():
    out = smp(daemonset(), {"spec": {"minReadySeconds": None, "updateStrategy": {"type": "OnDelete", "rollingUpdate": None}}})
    assert out["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_retain_keys_drops_unlisted_live_keys():
    patch = {"spec": {"template": {"spec": {"volumes": [
        {"name": "sys", "$retainKeys": ["emptyDir", "name"], "emptyDir": {}}]}}}}
    out = smp(daemonset(), patch)
    vols = pod_spec(out)["volumes"]
    assert vols[1] == {"name": "sys", "emptyDir": {}}
    assert vols[0] == {"name": "proc", "hostPath": {"path": "/proc"}}


def test_retain_keys_rejects_patch_fields_outside_the_list():
    patch = {"spec": {"template": {"spec": {"volumes": [
        {"name": "sys", "$retainKeys": ["name"], "emptyDir": {}}]}}}}
    with pytest.raises(ApiError) as e:
        smp(daemonset(), patch)
    assert e.value.code == 422


def test_list_merge_appends_new_items_and_merges_by_key():
    patch = {"spec": {"template": {"spec": {"containers": [
        {"name": "sidecar", "image": "busybox"},
        {"name": "node-exporter", "ports": [{"containerPort": 9101}]}]}}}}
    out = smp(daemonset(), patch)
    names = [c["name"] for c in pod_spec(out)["containers"]]
    assert sorted(names) == ["node-exporter", "sidecar"]
    ne = next(c for c in pod_spec(out)["containers"] if c["name"] == "node-exporter")
    # upstream's mergeSortedSlice puts patch items absent from the live list first
    assert [p["containerPort"] for p in ne["ports"]] == [9101, 9100]


def test_set_element_order_reorders_list():
    patch = {"spec": {"template": {"spec": {"$setElementOrder/volumes": [{"name": "sys"}, {"name": "proc"}]}}}}
    out = smp(daemonset(), patch)
    assert [v["name"] for v in pod_spec(out)["volumes"]] == ["sys", "proc"]


def test_list_patch_replace_directive():
    patch = {"spec": {"template": {"spec": {"volumes": [{"$patch": "replace"}, {"name": "new", "emptyDir": {}}]}}}}
    out = smp(daemonset(), patch)
    assert pod_spec(out)["volumes"] == [{"name": "new", "emptyDir": {}}]


def test_map_patch_delete_directive_empties_map():
    out = smp(daemonset(), {"spec": {"template": {"metadata": {"labels": {"$patch": "delete"}}}}})
    assert out["spec"]["template"]["metadata"]["labels"] == {}


def test_tolerations_are_atomic():
    out = smp(daemonset(), {"spec": {"template": {"spec": {"tolerations": [{"key": "x", "operator": "Exists"}]}}}})
    assert pod_spec(out)["tolerations"] == [{"key": "x", "operator": "Exists"}]


def test_primitive_merge_list_and_delete_from_primitive_list():
    ns = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["a", "b"]}}
    out = smp(ns, {"metadata": {"finalizers": ["c", "a"]}}, "v1", "Pod")
    assert sorted(out["metadata"]["finalizers"]) == ["a", "b", "c"]
    out = smp(ns, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}, "v1", "Pod")
    assert out["metadata"]["finalizers"] == ["b"]


def test_rollout_restart_adds_annotation():
    patch = {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-29T17:58:10Z"}}}}}
    out = smp(daemonset(), patch)
    assert out["spec"]["template"]["metadata"] == {
        "labels": {"app": "ne"}, "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-29T17:58:10Z"}}


@pytest.mark.parametrize("patch, code", [
    ([1, 2], 400),
    ({"spec": {"template": {"spec": {"$setElementOrder/containers": "x"}}}}, 400),
    ({"metadata": {"$retainKeys": "x"}}, 400),
    ({"spec": {"template": {"spec": {"containers": [{"image": "no-name"}]}}}}, 500),
    ({"metadata": {"$patch": "bogus"}}, 500),
])
def test_bad_patches(patch, code):
    with pytest.raises(ApiError) as e:
        smp(daemonset(), patch)
    assert e.value.code == code


def test_list_of_lists_is_rejected():
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"finalizers": [["a"]]}}
    with pytest.raises(ApiError) as e:
        smp(obj, {"metadata": {"finalizers": [["b"]]}}, "v1", "Pod")
    assert e.value.code == 422


@pytest.mark.parametrize(("patch", "expected"), [
    ({}, False),
    ({"a": 1, "b": 2}, False),
    ({"a": 1, "$patch": "replace"}, True),
    ({"$setElementOrder/containers": [], "containers": []}, True),
    ({"!first": 1, "$retainKeys": []}, True),  # a key sorting before "$" does not hide one
    ({"#": 1, " ": 2}, False),
    ({"z": 1, "$": 2}, True),
])
def test_has_directive_is_any_key_starting_with_a_dollar(patch, expected):
    from everynode.apiserver.patch.strategic import _has_directive

    assert _has_directive(patch) is expected
    assert expected == any(k.startswith("$") for k in patch)


def test_lists_of_lists_in_new_values_are_kept_as_copies():
    out = smp({"kind": "Thing", "spec": {}}, {"spec": {"grid": [[1, 2], [{"a": None, "b": 1}]], "flat": [1]}},
              api_version="example.com/v1", kind="Thing")
    assert out["spec"] == {"grid": [[1, 2], [{"a": None, "b": 1}]], "flat": [1]}  # (as it is, nulls too)
