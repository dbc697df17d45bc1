"""DaemonSet eligibility and the small pure rules (daemonset-semantics.md §1.5, §3, §5.1)."""

from __future__ import annotations

import pytest

from everynode.api.pod import is_pod_available, is_pod_ready
from everynode.clock import format_rfc3339
from everynode.controllers.daemonset.budgets import BudgetError, allows_surge, update_budgets
from everynode.controllers.daemonset.daemonpods import (
    TargetNodeError,
    is_pod_updated,
    pin_to_node,
    pod_template_for,
    sort_oldest_first,
    target_node_name,
    template_generation,
)
from everynode.controllers.daemonset.placement import (
    add_or_update_toleration,
    default_daemon_tolerations,
    node_should_run_daemon_pod,
    with_daemon_tolerations,
)


def make_ds(*, node_selector=None, affinity=None, tolerations=None, node_name=None, host_network=False,
            strategy=None, annotations=None):
    spec = {"containers": [{"name": "c", "image": "i"}]}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if affinity is not None:
        spec["affinity"] = affinity
    if tolerations is not None:
        spec["tolerations"] = tolerations
    if node_name is not None:
        spec["nodeName"] = node_name
    if host_network:
        spec["hostNetwork"] = True
    ds = {"metadata": {"name": "ds", "namespace": "default", "uid": "u1", "annotations": annotations or {}},
          "spec": {"selector": {"matchLabels": {"app": "x"}},
                   "template": {"metadata": {"labels": {"app": "x"}}, "spec": spec}}}
    if strategy is not None:
        ds["spec"]["updateStrategy"] = strategy
    return ds


def make_node(name="n1", *, labels=None, taints=None):
    node = {"metadata": {"name": name, "labels": labels or {}}, "spec": {}}
    if taints is not None:
        node["spec"]["taints"] = taints
    return node


def taint(key, effect, value=None):
    t = {"key": key, "effect": effect}
    if value is not None:
        t["value"] = value
    return t


REQUIRED_ZONE_A = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}


# ---- decision table §3.3 ----------------------------------------------------------------------

@pytest.mark.parametrize("ds_kwargs,node_kwargs,expected", [
    # row 5: nothing in the way
    ({}, {}, (True, True)),
    # row 1: template nodeName elsewhere / here
    ({"node_name": "other"}, {}, (False, False)),
    ({"node_name": "n1"}, {}, (True, True)),
    # row 2: nodeSelector
    ({"node_selector": {"disk": "ssd"}}, {"labels": {"disk": "ssd"}}, (True, True)),
    ({"node_selector": {"disk": "ssd"}}, {"labels": {"disk": "hdd"}}, (False, False)),
    ({"node_selector": {"disk": "ssd"}}, {}, (False, False)),
    # row 2: required node affinity
    ({"affinity": REQUIRED_ZONE_A}, {"labels": {"zone": "a"}}, (True, True)),
    ({"affinity": REQUIRED_ZONE_A}, {"labels": {"zone": "b"}}, (False, False)),
    # empty term list matches nothing
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}},
     {}, (False, False)),
    # matchFields on the node name
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}}, {}, (True, True)),
    # row 3: untolerated NoExecute
    ({}, {"taints": [taint("dedicated", "NoExecute", "x")]}, (False, False)),
    # row 4: untolerated NoSchedule only
    ({}, {"taints": [taint("dedicated", "NoSchedule", "x")]}, (False, True)),
    ({}, {"taints": [taint("node-role.kubernetes.io/control-plane", "NoSchedule")]}, (False, True)),
    # tolerated by the template
    ({"tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                       "effect": "NoSchedule"}]},
     {"taints": [taint("node-role.kubernetes.io/control-plane", "NoSchedule")]}, (True, True)),
    # NoExecute tolerated with tolerationSeconds still counts as tolerated
    ({"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]},
     {"taints": [taint("k", "NoExecute")]}, (True, True)),
    # PreferNoSchedule is ignored
    ({}, {"taints": [taint("soft", "PreferNoSchedule")]}, (True, True)),
    # default tolerations: pressure / cordon / not-ready:NoExecute tolerated
    ({}, {"taints": [taint("node.kubernetes.io/unschedulable", "NoSchedule"),
                     taint("node.kubernetes.io/memory-pressure", "NoSchedule"),
                     taint("node.kubernetes.io/disk-pressure", "NoSchedule"),
                     taint("node.kubernetes.io/pid-pressure", "NoSchedule"),
                     taint("node.kubernetes.io/not-ready", "NoExecute"),
                     taint("node.kubernetes.io/unreachable", "NoExecute")]}, (True, True)),
    # ... but not the NoSchedule variants of not-ready / unreachable (NotReady node)
    ({}, {"taints": [taint("node.kubernetes.io/not-ready", "NoSchedule")]}, (False, True)),
    ({}, {"taints": [taint("node.kubernetes.io/unreachable", "NoSchedule")]}, (False, True)),
    # network-unavailable only for hostNetwork pods
    ({}, {"taints": [taint("node.kubernetes.io/network-unavailable", "NoSchedule")]}, (False, True)),
    ({"host_network": True}, {"taints": [taint("node.kubernetes.io/network-unavailable", "NoSchedule")]},
     (True, True)),
    # first matching row wins: node selector mismatch beats taints
    ({"node_selector": {"a": "b"}}, {"taints": [taint("x", "NoSchedule")]}, (False, False)),
])
def test_decision_table(ds_kwargs, node_kwargs, expected):
    assert node_should_run_daemon_pod(make_node(**node_kwargs), make_ds(**ds_kwargs)) == expected


# ---- default tolerations ---------------------------------------------------------------------

def test_default_tolerations_order_and_host_network():
    keys = [t["key"] for t in default_daemon_tolerations(host_network=False)]
    assert keys == ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
                    "node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure",
                    "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable"]
    with_net = default_daemon_tolerations(host_network=True)
    assert with_net[-1] == {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists",
                            "effect": "NoSchedule"}
    assert all("tolerationSeconds" not in t for t in with_net)


def test_matching_toleration_with_seconds_is_replaced_in_place():
    user = [{"key": "a", "operator": "Exists"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
            {"key": "b", "operator": "Equal", "value": "v", "effect": "NoSchedule"}]
    merged = with_daemon_tolerations(user, host_network=False)
    assert merged[0] == user[0]
    assert merged[1] == {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    assert merged[2] == user[2]
    assert [t["key"] for t in merged[3:]] == ["node.kubernetes.io/unreachable", "node.kubernetes.io/disk-pressure",
                                              "node.kubernetes.io/memory-pressure", "node.kubernetes.io/pid-pressure",
                                              "node.kubernetes.io/unschedulable"]
    assert user[1]["tolerationSeconds"] == 300  # input untouched


@pytest.mark.parametrize("existing,changed", [
    # identical (value "" and absent are the same in Go) → unchanged list object
    ([{"key": "k", "operator": "Exists", "effect": "NoSchedule", "value": ""}], False),
    # operator differs → appended
    ([{"key": "k", "operator": "Equal", "effect": "NoSchedule"}], True),
    # effect differs → appended
    ([{"key": "k", "operator": "Exists", "effect": "NoExecute"}], True),
])
def test_add_or_update_toleration_identity(existing, changed):
    ours = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
    result = add_or_update_toleration(existing, ours)
    if changed:
        assert result == existing + [ours]
    else:
        assert result is existing


def test_default_tolerations_are_not_duplicated_when_present():
    merged = with_daemon_tolerations(default_daemon_tolerations(host_network=True), host_network=True)
    assert merged == default_daemon_tolerations(host_network=True)


# ---- pod template and pinning ------------------------------------------------------------------

@pytest.mark.parametrize("affinity,expected_extra", [
    (None, {}),
    ({"podAntiAffinity": {"x": 1}}, {"podAntiAffinity": {"x": 1}}),
    ({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1}]}}, {}),
    (REQUIRED_ZONE_A, {}),
])
def test_pin_to_node_replaces_required_terms(affinity, expected_extra):
    pinned = pin_to_node(affinity, "node-7")
    req = pinned["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert req["nodeSelectorTerms"] == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-7"]}]}]
    for k, v in expected_extra.items():
        assert pinned[k] == v
    if affinity and "preferredDuringSchedulingIgnoredDuringExecution" in affinity.get("nodeAffinity", {}):
        assert pinned["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == [{"weight": 1}]
    if affinity is REQUIRED_ZONE_A:  # input not mutated
        assert "matchExpressions" in affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"][0]


def test_pod_template_labels_and_tolerations():
    ds = make_ds(annotations={"deprecated.daemonset.template.generation": "3"})
    template = pod_template_for(ds, "6b9f8c7d45")
    assert template["metadata"]["labels"] == {"app": "x", "pod-template-generation": "3",
                                              "controller-revision-hash": "6b9f8c7d45"}
    assert len(template["spec"]["tolerations"]) == 6
    assert "tolerations" not in ds["spec"]["template"]["spec"]  # the DS is untouched


@pytest.mark.parametrize("annotations,expected", [
    ({}, None), ({"deprecated.daemonset.template.generation": "7"}, 7),
    ({"deprecated.daemonset.template.generation": "x"}, None),
])
def test_template_generation(annotations, expected):
    assert template_generation(make_ds(annotations=annotations)) == expected


# ---- target node -------------------------------------------------------------------------------

def _pod(spec):
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


def _terms(*terms):
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}


@pytest.mark.parametrize("spec,expected", [
    ({"nodeName": "bound"}, "bound"),
    ({"nodeName": "bound", **_terms({"matchFields": [{"key": "metadata.name", "operator": "In",
                                                       "values": ["other"]}]})}, "bound"),
    (_terms({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n3"]}]}), "n3"),
    (_terms({"matchExpressions": [{"key": "a", "operator": "Exists"}]},
            {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["x"]},
                             {"key": "metadata.name", "operator": "In", "values": ["n4"]}]}), "n4"),
])
def test_target_node_name(spec, expected):
    assert target_node_name(_pod(spec)) == expected


@pytest.mark.parametrize("spec,message", [
    ({}, "no spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution for pod ns/p"),
    ({"affinity": {"nodeAffinity": {}}},
     "no spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution for pod ns/p"),
    (_terms(), "no nodeSelectorTerms in requiredDuringSchedulingIgnoredDuringExecution of pod ns/p"),
    (_terms({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}),
     "the matchFields value of 'metadata.name' is not unique for pod ns/p"),
    (_terms({"matchExpressions": [{"key": "a", "operator": "Exists"}]}), "no node name found for pod ns/p"),
])
def test_target_node_name_errors(spec, message):
    with pytest.raises(TargetNodeError) as e:
        target_node_name(_pod(spec))
    assert str(e.value) == message


# ---- budgets ---------------------------------------------------------------------------------

def rolling(max_unavailable=None, max_surge=None):
    ru = {}
    if max_unavailable is not None:
        ru["maxUnavailable"] = max_unavailable
    if max_surge is not None:
        ru["maxSurge"] = max_surge
    return make_ds(strategy={"type": "RollingUpdate", "rollingUpdate": ru})


@pytest.mark.parametrize("ds,desired,expected", [
    (rolling(1, 0), 5, (0, 1)),
    (rolling("30%", 0), 10, (0, 3)),
    (rolling("30%", 0), 7, (0, 3)),     # ceil(2.1)
    (rolling("30%", 0), 3, (0, 1)),     # ceil(0.9)
    (rolling("30%", 0), 0, (0, 0)),     # nothing desired: no safety net
    (rolling("10%", 0), 1000, (0, 100)),
    (rolling(0, 1), 3, (1, 0)),
    (rolling(0, "25%"), 10, (3, 0)),    # ceil(2.5)
    (rolling(0, "1%"), 1, (1, 0)),      # any positive percentage is at least one
    (rolling(0, 0), 4, (0, 1)),         # both zero: safety net
    (rolling("0%", "0%"), 4, (0, 1)),
    (rolling(0, 0), 0, (0, 0)),
    (make_ds(strategy={"type": "OnDelete"}), 5, (0, 1)),  # no budgets → safety net
])
def test_update_budgets(ds, desired, expected):
    assert update_budgets(ds, desired) == expected


@pytest.mark.parametrize("ds,prefix", [
    (rolling("abc", 0), "invalid value for MaxUnavailable: "),
    (rolling(1, "x%"), "invalid value for MaxSurge: "),
])
def test_update_budget_errors(ds, prefix):
    with pytest.raises(BudgetError) as e:
        update_budgets(ds, 3)
    assert str(e.value).startswith(prefix)


@pytest.mark.parametrize("ds,expected", [
    (rolling(1, 0), False), (rolling(0, 1), True), (rolling(0, "1%"), True), (rolling(0, "0%"), False),
    (rolling(1), False), (make_ds(strategy={"type": "OnDelete", "rollingUpdate": {"maxSurge": 1}}), False),
])
def test_allows_surge(ds, expected):
    assert allows_surge(ds) is expected


# ---- ordering, updated, ready, available ---------------------------------------------------------

def mk_pod(name, *, created=None, node=None, labels=None, ready=None, since=None):
    md = {"name": name, "labels": labels or {}}
    if created is not None:
        md["creationTimestamp"] = format_rfc3339(created)
    pod = {"metadata": md, "spec": {}, "status": {}}
    if node:
        pod["spec"]["nodeName"] = node
    if ready is not None:
        cond = {"type": "Ready", "status": "True" if ready else "False"}
        if since is not None:
            cond["lastTransitionTime"] = format_rfc3339(since)
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}, cond]
    return pod


def test_oldest_first_bound_before_unbound_then_time_then_name():
    pods = [mk_pod("e", created=100), mk_pod("d", created=300, node="n"), mk_pod("c", created=200, node="n"),
            mk_pod("b", created=200, node="n"), mk_pod("a", created=50)]
    assert [p["metadata"]["name"] for p in sort_oldest_first(pods)] == ["b", "c", "d", "a", "e"]


@pytest.mark.parametrize("labels,hash_,generation,expected", [
    ({"controller-revision-hash": "h1"}, "h1", None, True),
    ({"controller-revision-hash": "h0"}, "h1", None, False),
    ({"controller-revision-hash": "h0", "pod-template-generation": "2"}, "h1", 2, True),
    ({"pod-template-generation": "1"}, "h1", 2, False),
    ({}, "", None, False),
])
def test_is_pod_updated(labels, hash_, generation, expected):
    assert is_pod_updated(mk_pod("p", labels=labels), hash_, generation) is expected


@pytest.mark.parametrize("ready,since,min_ready,now,expected_ready,expected_available", [
    (None, None, 0, 1000, False, False),
    (False, 0, 0, 1000, False, False),
    (True, 900, 0, 1000, True, True),
    (True, 900, 100, 1000, True, False),   # exactly minReadySeconds: not strictly before now
    (True, 899, 100, 1000, True, True),
    (True, 950, 100, 1000, True, False),
    (True, None, 10, 1000, True, False),   # no transition time with minReadySeconds
])
def test_ready_and_available(ready, since, min_ready, now, expected_ready, expected_available):
    pod = mk_pod("p", ready=ready, since=since)
    assert is_pod_ready(pod) is expected_ready
    assert is_pod_available(pod, min_ready, now) is expected_available


_DS = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "ops", "uid": "u1"}}


@pytest.mark.parametrize("template_md,expected_md", [
    ({}, None),  # no labels: upstream refuses to create the pod
    ({"labels": {"app": "a"}},
     {"generateName": "agent-", "namespace": "ops", "labels": {"app": "a"}}),
    ({"labels": {"app": "a"}, "annotations": {"x": "1"}, "finalizers": ["f"]},
     {"generateName": "agent-", "namespace": "ops", "labels": {"app": "a"}, "annotations": {"x": "1"},
      "finalizers": ["f"]}),
])
def test_daemon_pod_metadata(template_md, expected_md):
    from everynode.controllers.daemonset.daemonpods import daemon_pod

    pod = daemon_pod(_DS, {"metadata": template_md, "spec": {"containers": [{"name": "c", "image": "i"}]}}, "n7")
    if expected_md is None:
        assert pod is None
        return
    refs = pod["metadata"].pop("ownerReferences")
    assert pod["metadata"] == expected_md
    assert refs == [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u1",
                     "controller": True, "blockOwnerDeletion": True}]
    assert pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]}]}


def test_daemon_pod_does_not_change_the_template():
    from everynode.controllers.daemonset.daemonpods import daemon_pod

    template = {"metadata": {"labels": {"app": "a"}},
                "spec": {"containers": [], "affinity": {"podAffinity": {"x": 1}}}}
    before = repr(template)
    pod = daemon_pod(_DS, template, "n1")
    assert repr(template) == before
    assert pod["spec"]["affinity"]["podAffinity"] == {"x": 1}
