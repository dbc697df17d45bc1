"""Server-side Tables: upstream column sets and cell rules (pkg/printers/internalversion)."""

from __future__ import annotations

from datetime import datetime

import pytest

from everynode.api.registry import RESOURCES, resource
from everynode.apiserver.tables import human_duration, pod_status, to_table

NOW = datetime.fromisoformat("2026-11-29T18:05:34+00:00").timestamp()
T0 = "2026-11-29T18:05:31Z"


@pytest.mark.parametrize("seconds, text", [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (45, "45s"), (119, "119s"), (120, "2m"), (330, "5m30s"),
    (599, "9m59s"), (600, "10m"), (42 * 60, "42m"), (3 * 3600 - 1, "179m"), (3 * 3600, "3h"),
    (5 * 3600 + 20 * 60, "5h20m"), (8 * 3600, "8h"), (30 * 3600, "30h"), (48 * 3600, "2d"),
    (3 * 86400 + 5 * 3600, "3d5h"), (8 * 86400, "8d"), (300 * 86400, "300d"), (730 * 86400, "2y"),
    (800 * 86400, "2y70d"), (8 * 365 * 86400, "8y"), (20 * 365 * 86400, "20y"),
])
def test_human_duration(seconds, text):
    assert human_duration(seconds) == text


def ds():
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "node-exporter", "namespace": "monitoring", "uid": "u", "resourceVersion": "122",
                         "creationTimestamp": T0, "labels": {"app.kubernetes.io/name": "node-exporter"},
                         "managedFields": [{"manager": "x"}]},
            "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "node-exporter"}},
                     "template": {"spec": {"containers": [{"name": "node-exporter",
                                                           "image": "quay.io/prometheus/node-exporter:v1.8.1"}]}}},
            "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberReady": 2,
                       "updatedNumberScheduled": 2, "numberAvailable": 2}}


def test_daemonset_table_matches_contract_example():
    t = to_table(resource("daemonsets.apps"), [ds()], now=NOW, resource_version="122")
    assert t["kind"] == "Table" and t["apiVersion"] == "meta.k8s.io/v1"
    assert t["metadata"] == {"resourceVersion": "122"}
    cols = [(c["name"], c["type"], c["format"], c["priority"]) for c in t["columnDefinitions"]]
    assert cols == [("Name", "string", "name", 0), ("Desired", "integer", "", 0), ("Current", "integer", "", 0),
                    ("Ready", "integer", "", 0), ("Up-to-date", "integer", "", 0), ("Available", "integer", "", 0),
                    ("Node Selector", "string", "", 0), ("Age", "string", "", 0), ("Containers", "string", "", 1),
                    ("Images", "string", "", 1), ("Selector", "string", "", 1)]
    assert all(c["description"] for c in t["columnDefinitions"])
    (row,) = t["rows"]
    assert row["cells"] == ["node-exporter", 2, 2, 2, 2, 2, "<none>", "3s", "node-exporter",
                            "quay.io/prometheus/node-exporter:v1.8.1", "app.kubernetes.io/name=node-exporter"]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["apiVersion"] == "meta.k8s.io/v1"
    assert "managedFields" not in row["object"]["metadata"]
    assert row["object"]["metadata"]["labels"] == {"app.kubernetes.io/name": "node-exporter"}


def test_include_object_modes_and_watch_columns():
    rt = resource("daemonsets.apps")
    assert "object" not in to_table(rt, [ds()], now=NOW, resource_version="1", include_object="None")["rows"][0]
    full = to_table(rt, [ds()], now=NOW, resource_version="1", include_object="Object")["rows"][0]["object"]
    assert full["kind"] == "DaemonSet" and full["spec"]
    assert to_table(rt, [], now=NOW, resource_version="1", include_columns=False)["columnDefinitions"] is None


def cs(name, *, ready=True, state=None, restarts=0, last_finished=None):
    c = {"name": name, "ready": ready, "restartCount": restarts, "state": state or {"running": {"startedAt": T0}}}
    if last_finished:
        c["lastState"] = {"terminated": {"exitCode": 1, "finishedAt": last_finished}}
    return c


def pod(phase="Running", statuses=(), conditions=(), deleting=False, reason=None, init=None, n_containers=1):
    p = {"metadata": {"name": "p", "creationTimestamp": T0},
         "spec": {"containers": [{"name": f"c{i}"} for i in range(n_containers)], "nodeName": "n1"},
         "status": {"phase": phase, "containerStatuses": list(statuses), "conditions": list(conditions)}}
    if deleting:
        p["metadata"]["deletionTimestamp"] = T0
    if reason:
        p["status"]["reason"] = reason
    if init is not None:
        p["spec"]["initContainers"] = [{"name": "i0"}]
        p["status"]["initContainerStatuses"] = init
    return p


READY = [{"type": "Ready", "status": "True"}]


@pytest.mark.parametrize("p, expected", [
    (pod(statuses=[cs("c0")], conditions=READY), ("1/1", "Running", "0")),
    (pod(phase="Pending", statuses=[cs("c0", ready=False, state={"waiting": {"reason": "ContainerCreating"}})]),
     ("0/1", "ContainerCreating", "0")),
    (pod(statuses=[cs("c0", ready=False, state={"waiting": {"reason": "CrashLoopBackOff"}}, restarts=4,
                      last_finished="2026-11-29T18:00:34Z")]), ("0/1", "CrashLoopBackOff", "4 (5m ago)")),
    (pod(phase="Succeeded", statuses=[cs("c0", ready=False, state={"terminated": {"exitCode": 0, "reason": "Completed"}})]),
     ("0/1", "Completed", "0")),
    (pod(statuses=[cs("c0", ready=False, state={"terminated": {"exitCode": 0, "reason": "Completed"}}), cs("c1")],
         conditions=READY, n_containers=2), ("1/2", "Running", "0")),
    (pod(statuses=[cs("c0", ready=False, state={"terminated": {"exitCode": 0, "reason": "Completed"}}), cs("c1")],
         n_containers=2), ("1/2", "NotReady", "0")),
    (pod(phase="Failed", statuses=[cs("c0", ready=False, state={"terminated": {"exitCode": 137}})]),
     ("0/1", "ExitCode:137", "0")),
    (pod(statuses=[cs("c0")], deleting=True), ("1/1", "Terminating", "0")),
    (pod(statuses=[cs("c0")], deleting=True, reason="NodeLost"), ("1/1", "Unknown", "0")),
    (pod(phase="Failed", reason="Evicted"), ("0/1", "Evicted", "0")),
    (pod(phase="Pending", init=[{"name": "i0", "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}]),
     ("0/1", "Init:0/1", "0")),
    (pod(phase="Pending", init=[{"name": "i0", "restartCount": 0,
                                 "state": {"terminated": {"exitCode": 2}}}]), ("0/1", "Init:ExitCode:2", "0")),
    (pod(phase="Pending", conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]),
     ("0/1", "SchedulingGated", "0")),
])
def test_pod_status_strings(p, expected):
    assert pod_status(p, NOW) == expected


def test_pod_row_wide_cells():
    p = pod(statuses=[cs("c0")], conditions=READY)
    p["status"]["podIPs"] = [{"ip": "10.244.1.9"}]
    (row,) = to_table(resource("pods"), [p], now=NOW, resource_version="1")["rows"]
    assert row["cells"] == ["p", "1/1", "Running", "0", "3s", "10.244.1.9", "n1", "<none>", "<none>"]


def node(labels=None, ready="True", unschedulable=False):
    n = {"metadata": {"name": "n1", "creationTimestamp": T0, "labels": labels or {}},
         "spec": {"unschedulable": True} if unschedulable else {},
         "status": {"nodeInfo": {"kubeletVersion": "v1.33.0", "osImage": "Ubuntu", "kernelVersion": "6.8",
                                 "containerRuntimeVersion": "containerd://1.7"},
                    "addresses": [{"type": "InternalIP", "address": "192.168.1.10"}]}}
    if ready is not None:
        n["status"]["conditions"] = [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": ready}]
    return n


@pytest.mark.parametrize("n, status, roles", [
    (node(), "Ready", "<none>"),
    (node(ready="False"), "NotReady", "<none>"),
    (node(ready="Unknown"), "NotReady", "<none>"),
    (node(ready=None), "Unknown", "<none>"),
    (node(unschedulable=True), "Ready,SchedulingDisabled", "<none>"),
    (node({"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": "",
           "kubernetes.io/role": "edge"}), "Ready", "control-plane,edge,worker"),
])
def test_node_status_and_roles(n, status, roles):
    (row,) = to_table(resource("nodes"), [n], now=NOW, resource_version="1")["rows"]
    assert row["cells"][:5] == ["n1", status, roles, "3s", "v1.33.0"]
    assert row["cells"][5:] == ["192.168.1.10", "<none>", "Ubuntu", "6.8", "containerd://1.7"]


def test_event_controller_revision_and_misc_rows():
    ev = {"metadata": {"name": "e1"}, "involvedObject": {"kind": "DaemonSet", "name": "ne"}, "type": "Normal",
          "reason": "SuccessfulCreate", "message": " Created pod: ne-abcde ", "source": {"component": "daemonset-controller"},
          "firstTimestamp": T0, "lastTimestamp": T0, "count": 2}
    (row,) = to_table(resource("events"), [ev], now=NOW, resource_version="1")["rows"]
    assert row["cells"] == ["3s", "Normal", "SuccessfulCreate", "daemonset/ne", "", "daemonset-controller",
                            "Created pod: ne-abcde", "3s", 2, "e1"]
    cr = {"metadata": {"name": "ne-6b9c", "creationTimestamp": T0,
                       "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ne", "controller": True}]},
          "revision": 2}
    (row,) = to_table(resource("controllerrevisions.apps"), [cr], now=NOW, resource_version="1")["rows"]
    assert row["cells"] == ["ne-6b9c", "daemonset.apps/ne", 2, "3s"]
    svc = {"metadata": {"name": "s", "creationTimestamp": T0},
           "spec": {"type": "NodePort", "clusterIPs": ["10.96.0.10"], "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}],
                    "selector": {"app": "x"}}}
    (row,) = to_table(resource("services"), [svc], now=NOW, resource_version="1")["rows"]
    assert row["cells"] == ["s", "NodePort", "10.96.0.10", "<none>", "80:30080/TCP", "3s", "app=x"]


@pytest.mark.parametrize("rt", RESOURCES, ids=lambda rt: rt.key)
def test_every_served_kind_prints_aligned_cells(rt):
    t = to_table(rt, [{"metadata": {"name": "x", "creationTimestamp": T0}}], now=NOW, resource_version="1")
    assert t["columnDefinitions"][0 if rt.key not in ("events", "events.events.k8s.io") else -1]["format"] == "name"
    assert len(t["rows"][0]["cells"]) == len(t["columnDefinitions"])
