"""Loading a cluster snapshot into an in-memory control plane, for ``everynode plan``.

The plan replays a DaemonSet change on a copy of the cluster, so the copy must start where the
cluster is — every node with its labels, taints, conditions and allocatable; every bound pod with
its requests, priority and host ports, Running and Ready as it was; the DaemonSets with their
ControllerRevisions — and the controllers must *adopt* that state rather than "repair" it.  The
choices that make them adopt:

* **Loaded before any controller starts** (``ControlPlane.start(seed=...)``): the informers'
  first list already holds the whole snapshot, so the DaemonSet controller's first sync sees
  every pod with its revision and does nothing a converged cluster would not do.
* **Server-set fields are stripped** (uid, resourceVersion, generation, creationTimestamp,
  managedFields, selfLink, DaemonSet status): the copy's API server assigns its own, as it would
  on a restore.  Owner references are remapped: a DaemonSet's new uid replaces its old one in its
  pods and revisions (``controller: true`` kept, so the controller owns rather than orphans
  them).  References to owners the snapshot does not hold (ReplicaSets, Jobs, Nodes) are
  dropped, and the garbage collector does not run in the plan: nothing would delete those pods in
  the real cluster during a DaemonSet rollout.
* **Pods are created bound and then given their status** (the API server resets a new pod's
  status, as upstream's strategy does, so the status is written in a second call, as a kubelet
  would).  The priority admission recomputes ``spec.priority`` from the class, so the value is
  dropped from the spec and a PriorityClass the snapshot lacks is made from the pods' values.  A
  ``globalDefault`` class is made the default only after the pods are loaded: a pod without a
  class was created before the cluster had a default (admission names the default in the pods it
  gives it to) and keeps the priority it has, not the default's.
  Unbound pods are not loaded, except a DaemonSet's own (the plan is about what the change does;
  an application pod that was already Pending would otherwise preempt in the plan's name) and
  those the scheduler has nominated to a node (``status.nominatedNodeName``): it has already
  preempted for them there, and they bind there as soon as their victims are gone.
* **A node stays as its kubelet reports it**: the cluster's kubelets are real, so the copy's
  stand-ins must not "heal" what they report — every node is loaded with
  ``everynode.io/node-status: kept``, and its simulated kubelet goes on reporting the conditions it
  had (MemoryPressure, DiskPressure, PIDPressure, a Ready=False of a kubelet that runs but posts
  NotReady), its addresses and nodeInfo, refreshing only heartbeats.  The node lifecycle controller
  then keeps the taints those conditions call for, as in the cluster.  A node whose kubelet is
  silent (Ready Unknown, or no Ready condition) stays so: its simulated kubelet is stopped
  (``everynode.io/kubelet: stopped``), so nothing reports for it and the node lifecycle
  controller treats it as upstream's does an unreachable node.  Pods being deleted are loaded only
  on such nodes (created, then deleted gracefully: they stay Terminating there, as in the cluster);
  where a kubelet runs it would have removed them.

Names and labels are kept, so the plan's answer names the cluster's own nodes and pods.

Where the copy knowingly differs from the cluster (``tests/integration/test_plan_fidelity.py``
checks the rest: ``why`` explains the copy as it explains the snapshot): the node lifecycle
controller starts as upstream's does after a restart, removing the NoExecute ``not-ready`` /
``unreachable`` taints of the nodes it first sees and adding them back to those still not Ready
a few seconds later (their ``timeAdded`` moves, so other pods' ``tolerationSeconds`` count from
the copy's start; the DaemonSet's pods tolerate them); a pod being deleted where a kubelet runs
is left out (the simulated kubelet ends a termination at once); a pod whose class was re-created
with another value gets the class's value from the admission.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from everynode.api.errors import ApiError
from everynode.api.meta import metadata_of
from everynode.api.node import ready_status
from everynode.client.base import Client
from everynode.kubelet.nodeagent import EXTERNAL, KUBELET_ANNOTATION, STOPPED
from everynode.kubelet.podstatus import KEPT, NODE_STATUS_ANNOTATION
from everynode.product.clusterdump import ClusterObjects

Obj = dict[str, Any]

SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
                 "deletionGracePeriodSeconds", "managedFields", "selfLink")
PRIORITY_CLASSES = "priorityclasses.scheduling.k8s.io"
SEEDED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


class LoadError(Exception):
    """The snapshot holds something the copy cannot take; one line naming the object."""


def stripped(obj: Mapping[str, Any], *, keep_status: bool = True) -> Obj:
    """A copy of ``obj`` without the fields the API server sets (and without status unless kept)."""
    out: Obj = {k: v for k, v in obj.items() if k != "status" or keep_status}
    md = {k: v for k, v in metadata_of(obj).items() if k not in SERVER_FIELDS}
    out["metadata"] = md
    return out


def _remapped_owners(obj: Mapping[str, Any], uids: Mapping[str, str]) -> list[Obj]:
    refs = []
    for ref in metadata_of(obj).get("ownerReferences") or ():
        new = uids.get(ref.get("uid") or "")
        if ref.get("kind") == "DaemonSet" and new is not None:
            refs.append({**ref, "uid": new})
    return refs


@dataclass
class Loaded:
    """What the copy holds after loading: the old uid → new uid of each DaemonSet, the nodes whose
    kubelet was stopped, and counts per kind (for the answer's "loaded" line)."""

    daemonset_uids: dict[str, str] = field(default_factory=dict)
    stopped_nodes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    skipped_pods: int = 0


def _bump(loaded: Loaded, kind: str) -> None:
    loaded.counts[kind] = loaded.counts.get(kind, 0) + 1


async def _create(client: Client, resource: str, obj: Obj, what: str) -> Obj:
    try:
        return await client.create(resource, obj)
    except ApiError as e:
        raise LoadError(f"cannot load {what}: {e.message}") from None


def node_copy(node: Mapping[str, Any]) -> Obj:
    """The node as loaded: stripped, its status kept by its kubelet, which is stopped when it is
    silent (Ready Unknown or never reported) or was stopped."""
    out = stripped(node)
    md = out["metadata"]
    annotations = dict(md.get("annotations") or {})
    annotations[NODE_STATUS_ANNOTATION] = KEPT
    if ready_status(node) in (None, "Unknown") or annotations.get(KUBELET_ANNOTATION) == STOPPED:
        annotations[KUBELET_ANNOTATION] = STOPPED
    elif annotations.get(KUBELET_ANNOTATION) == EXTERNAL:
        del annotations[KUBELET_ANNOTATION]  # simulated in the plan like every other node
    md["annotations"] = annotations
    md.pop("ownerReferences", None)
    return out


def _priority_classes(objects: ClusterObjects) -> list[Obj]:
    """The snapshot's PriorityClasses, plus one per class name its pods use and it lacks."""
    have = {metadata_of(pc).get("name") for pc in objects.priorityclasses}
    out = [stripped(pc) for pc in objects.priorityclasses]
    for pod in objects.pods:
        spec = pod.get("spec") or {}
        name = spec.get("priorityClassName")
        if name and name not in have and not name.startswith("system-"):
            have.add(name)
            out.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                        "metadata": {"name": name}, "value": int(spec.get("priority") or 0)})
    return out


def _namespaces(objects: ClusterObjects, extra: Iterable[str]) -> list[str]:
    names = {metadata_of(o).get("namespace") or "" for o in (*objects.pods, *objects.daemonsets,
                                                      *objects.controllerrevisions)}
    names.update(extra)
    return sorted(n for n in names if n and n not in SEEDED_NAMESPACES)


def pod_copy(pod: Mapping[str, Any], uids: Mapping[str, str]) -> Obj:
    """The pod as created: stripped, owners remapped, priority left to the admission."""
    out = stripped(pod, keep_status=False)
    md = out["metadata"]
    owners = _remapped_owners(pod, uids)
    if owners:
        md["ownerReferences"] = owners
    else:
        md.pop("ownerReferences", None)
    md.pop("finalizers", None)
    spec = dict(out.get("spec") or {})
    spec.pop("priority", None)
    spec.pop("preemptionPolicy", None)
    out["spec"] = spec
    return out


async def load_snapshot(client: Client, objects: ClusterObjects, *, extra_nodes: Iterable[Obj] = (),
                        namespaces: Iterable[str] = ()) -> Loaded:
    """Create the snapshot's objects in the (not yet running) copy behind ``client``."""
    loaded = Loaded()
    for ns in _namespaces(objects, namespaces):
        await _create(client, "namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                      f"namespace {ns}")
    defaults: list[str] = []
    for pc in _priority_classes(objects):
        name = metadata_of(pc).get("name") or ""
        if name.startswith("system-"):
            continue  # built into every API server
        if pc.get("globalDefault"):
            defaults.append(name)
            pc = {**pc, "globalDefault": False}
        await _create(client, PRIORITY_CLASSES, pc, f"priorityclass {name}")
        _bump(loaded, "priorityclasses")
    ready_nodes: set[str] = set()
    for node in [*objects.nodes, *extra_nodes]:
        copy = node_copy(node)
        name = copy["metadata"].get("name") or ""
        await _create(client, "nodes", copy, f"node {name}")
        _bump(loaded, "nodes")
        if copy["metadata"]["annotations"].get(KUBELET_ANNOTATION) == STOPPED:
            loaded.stopped_nodes.append(name)
        else:
            ready_nodes.add(name)
    for ds in objects.daemonsets:
        copy = stripped(ds, keep_status=False)
        copy["metadata"].pop("ownerReferences", None)
        created = await _create(client, "daemonsets.apps", copy,
                                f"daemonset {metadata_of(ds).get('namespace')}/{metadata_of(ds).get('name')}")
        loaded.daemonset_uids[metadata_of(ds).get("uid") or ""] = created["metadata"]["uid"]
        _bump(loaded, "daemonsets")
    uids = loaded.daemonset_uids
    for rev in objects.controllerrevisions:
        owners = _remapped_owners(rev, uids)
        if not owners:
            continue  # a revision of another kind of owner (StatefulSet): not the plan's business
        copy = stripped(rev)
        copy["metadata"]["ownerReferences"] = owners
        await _create(client, "controllerrevisions.apps", copy, f"controllerrevision {metadata_of(rev).get('name')}")
        _bump(loaded, "controllerrevisions")
    for pod in objects.pods:
        await _load_pod(client, pod, uids, ready_nodes, loaded)
    for name in defaults:  # only now: the pods loaded without a class keep the priority they had
        await client.patch(PRIORITY_CLASSES, name, {"globalDefault": True}, patch_type="merge")
    return loaded


async def _load_pod(client: Client, pod: Obj, uids: Mapping[str, str], ready_nodes: set[str],
                    loaded: Loaded) -> None:
    md = metadata_of(pod)
    node = (pod.get("spec") or {}).get("nodeName")
    owners = _remapped_owners(pod, uids)
    terminating = bool(md.get("deletionTimestamp"))
    phase = (pod.get("status") or {}).get("phase")
    nominated = (pod.get("status") or {}).get("nominatedNodeName")
    if (not node and not owners and not nominated) or (terminating and node in ready_nodes) or (
            terminating and phase in ("Succeeded", "Failed")):
        loaded.skipped_pods += 1
        return
    what = f"pod {md.get('namespace')}/{md.get('name')}"
    created = await _create(client, "pods", pod_copy(pod, uids), what)
    status = pod.get("status")
    if status:
        try:
            await client.update("pods", {**created, "status": status}, subresource="status")
        except ApiError as e:
            raise LoadError(f"cannot load the status of {what}: {e.message}") from None
    if terminating:
        await client.delete("pods", created["metadata"]["name"], namespace=created["metadata"]["namespace"])
    _bump(loaded, "pods")


__all__ = ["LoadError", "Loaded", "load_snapshot", "node_copy", "pod_copy", "stripped"]
