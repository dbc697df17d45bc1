"""Pod and node status documents as a kubelet writes them (pure functions, no I/O).

Shapes follow ``pkg/kubelet/kubelet_pods.go`` (``generateAPIPodStatus``), ``pkg/kubelet/status``
and ``pkg/kubelet/nodestatus/setters.go``: the condition types and reasons, the container
state/lastState layout, the ``containerID``/``imageID`` forms, and the node conditions'
reasons and messages.  Only what a user or controller reads is produced; images, volumes and
resource accounting of a real node are left out.

Every function returns a fresh dict meant as a strategic-merge patch body's ``status`` (lists
of conditions merge by ``type``; ``containerStatuses`` are replaced whole).
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

from everynode.api.meta import field_of
from everynode.memo import remember

Obj = dict[str, Any]

RUNTIME: Final = "everynode"
RUNTIME_VERSION: Final = "everynode://0.1.0"
KUBELET_VERSION: Final = "v1.33.0"
OS_IMAGE: Final = "everynode simulated node"
KERNEL_VERSION: Final = "6.1.0-everynode"
KUBELET_PORT: Final = 10250

DEFAULT_CAPACITY: Final = {"cpu": "4", "memory": "16Gi", "pods": "110"}


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def container_id(pod_uid: str, name: str, restart: int) -> str:
    return f"{RUNTIME}://{_digest(pod_uid, name, str(restart))}"


def image_ref(image: str) -> str:
    """Fully qualified image name, as the runtime reports it (docker.io/library/ for short names);
    remembered like :func:`image_id` (every status a kubelet writes names its pod's images)."""
    known = _IMAGE_REFS.get(image)
    if known is None:
        known = remember(_IMAGE_REFS, image, _qualified(image), limit=_IMAGE_IDS_MAX)
    return known


def _qualified(image: str) -> str:
    name = image.split("@", 1)[0]
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = f"docker.io/library/{name}"
    elif "." not in first and ":" not in first and first != "localhost":
        name = f"docker.io/{name}"
    if ":" not in name.rsplit("/", 1)[-1]:
        name += ":latest"
    return name


def image_id(image: str) -> str:
    """The digest reference the runtime reports for ``image``: a pure function of the image name,
    so remembered (every pod of a DaemonSet runs the same images; hashing it was a tenth of
    building a Running status)."""
    known = _IMAGE_IDS.get(image)
    if known is None:
        repo = image_ref(image).rsplit(":", 1)[0]
        known = remember(_IMAGE_IDS, image, f"{repo}@sha256:{_digest(image)}", limit=_IMAGE_IDS_MAX)
    return known


_IMAGE_IDS: Final[dict[str, str]] = {}
_IMAGE_REFS: Final[dict[str, str]] = {}
_IMAGE_IDS_MAX: Final = 1024


def _containers(spec: Obj) -> list[Obj]:
    return list(spec.get("containers") or ())


def _names(spec: Obj) -> str:
    return " ".join(c.get("name", "") for c in _containers(spec))


def condition(type_: str, status: str, now: str, *, reason: str | None = None, message: str | None = None) -> Obj:
    # reason/message are always present: None deletes a stale value in a strategic-merge patch.
    return {"type": type_, "status": status, "lastProbeTime": None, "lastTransitionTime": now,
            "reason": reason or None, "message": message or None}


def _keep_transition(conds: list[Obj], previous: list[Obj] | None) -> list[Obj]:
    """Keep ``lastTransitionTime`` of conditions whose status did not change."""
    if not previous:
        return conds
    old = {c.get("type"): c for c in previous}
    for c in conds:
        o = old.get(c["type"])
        if o is not None and o.get("status") == c["status"] and o.get("lastTransitionTime"):
            c["lastTransitionTime"] = o["lastTransitionTime"]
    return conds


def pod_conditions(pod: Obj, now: str, *, sandbox: bool, ready: bool, failed: bool = False) -> list[Obj]:
    spec: dict[str, Any] = pod.get("spec") or {}
    previous = field_of(pod.get("status"), "conditions")
    if ready:
        cr = condition("ContainersReady", "True", now)
        r = condition("Ready", "True", now)
    elif failed:
        cr = condition("ContainersReady", "False", now, reason="PodFailed")
        r = condition("Ready", "False", now, reason="PodFailed")
    else:
        msg = f"containers with unready status: [{_names(spec)}]"
        cr = condition("ContainersReady", "False", now, reason="ContainersNotReady", message=msg)
        r = condition("Ready", "False", now, reason="ContainersNotReady", message=msg)
    conds = [
        condition("PodReadyToStartContainers", "True" if sandbox else "False", now),
        condition("Initialized", "True", now),
        r,
        cr,
    ]
    if not any(c.get("type") == "PodScheduled" for c in previous or ()):
        conds.append(condition("PodScheduled", "True", now))
    return _keep_transition(conds, previous)


def with_conditions(pod: Obj, conditions: list[Obj]) -> Obj:
    """``pod`` as it reads once a status patch carrying ``conditions`` is stored: the conditions
    are merged by type (their strategic merge key), one already there replaced in its place, a
    new one appended."""
    status = dict(pod.get("status") or {})
    merged = {c.get("type"): c for c in status.get("conditions") or ()}
    for c in conditions:
        merged[c.get("type")] = c
    status["conditions"] = list(merged.values())
    return {**pod, "status": status}


def placement(host_ip: str, start_time: str, pod_ip: str | None = None) -> Obj:
    """The fields every status write of a bound pod carries: where it runs, since when, and its
    IP once the sandbox has one (``hostIPs``/``podIPs`` list the same single-stack addresses)."""
    out: Obj = {"hostIP": host_ip, "hostIPs": [{"ip": host_ip}], "startTime": start_time}
    if pod_ip:
        out["podIP"] = pod_ip
        out["podIPs"] = [{"ip": pod_ip}]
    return out


def running(pod: Obj, pod_uid: str, now: str, *, ready: bool) -> Obj:
    """Phase, conditions and container statuses of a pod whose containers have started."""
    return {"phase": "Running",
            "conditions": pod_conditions(pod, now, sandbox=True, ready=ready),
            "containerStatuses": running_statuses(pod.get("spec") or {}, pod_uid, now, ready=ready)}


def _base_status(c: Obj, pod_uid: str, restart: int) -> Obj:
    image = c.get("image") or ""
    return {
        "name": c.get("name", ""),
        "image": image_ref(image) if image else "",
        "imageID": "",
        "ready": False,
        "restartCount": restart,
        "started": False,
    }


def waiting_statuses(spec: Obj, pod_uid: str, *, reason: str, message: str | None = None,
                     restart: int = 0, last_state: Obj | None = None) -> list[Obj]:
    out = []
    for c in _containers(spec):
        s = _base_status(c, pod_uid, restart)
        w: Obj = {"reason": reason}
        if message:
            w["message"] = message.replace("{image}", c.get("image") or "")
        s["state"] = {"waiting": w}
        s["lastState"] = last_state or {}
        out.append(s)
    return out


def running_statuses(spec: Obj, pod_uid: str, now: str, *, ready: bool, restart: int = 0,
                     last_state: Obj | None = None, started_at: str | None = None) -> list[Obj]:
    out = []
    for c in _containers(spec):
        s = _base_status(c, pod_uid, restart)
        s["containerID"] = container_id(pod_uid, c.get("name", ""), restart)
        s["imageID"] = image_id(c.get("image") or "")
        s["ready"] = ready
        s["started"] = True
        s["state"] = {"running": {"startedAt": started_at or now}}
        s["lastState"] = last_state or {}
        out.append(s)
    return out


def terminated_state(pod_uid: str, name: str, restart: int, *, started: str, finished: str,
                     exit_code: int = 1, reason: str = "Error") -> Obj:
    return {"terminated": {"exitCode": exit_code, "reason": reason, "startedAt": started, "finishedAt": finished,
                           "containerID": container_id(pod_uid, name, restart)}}


def terminated_statuses(spec: Obj, pod_uid: str, *, started: str, finished: str, exit_code: int = 1,
                        reason: str = "Error", restart: int = 0) -> list[Obj]:
    out = []
    for c in _containers(spec):
        s = _base_status(c, pod_uid, restart)
        s["containerID"] = container_id(pod_uid, c.get("name", ""), restart)
        s["imageID"] = image_id(c.get("image") or "")
        s["state"] = terminated_state(pod_uid, c.get("name", ""), restart, started=started, finished=finished,
                                      exit_code=exit_code, reason=reason)
        s["lastState"] = {}
        out.append(s)
    return out


def init_container_statuses(spec: Obj, pod_uid: str, now: str) -> list[Obj]:
    """Init containers ran to completion (the simulation does not fail them)."""
    out = []
    for c in spec.get("initContainers") or ():
        name = c.get("name", "")
        s = _base_status(c, pod_uid, 0)
        s["containerID"] = container_id(pod_uid, name, 0)
        s["imageID"] = image_id(c.get("image") or "")
        if c.get("restartPolicy") == "Always":  # sidecar: keeps running
            s["ready"] = True
            s["started"] = True
            s["state"] = {"running": {"startedAt": now}}
        else:
            s["ready"] = True
            s["state"] = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now,
                                         "containerID": s["containerID"]}}
        s["lastState"] = {}
        out.append(s)
    return out


# -- nodes -----------------------------------------------------------------------------------------

NODE_CONDITIONS: Final = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)
READY_CONDITION: Final = ("Ready", "KubeletReady", "kubelet is posting ready status")

# ``everynode.io/node-status: kept`` on a Node: its simulated kubelet stands in for a real one
# whose readings it cannot know (``plan``'s copy of a cluster), so it reports the node as it finds
# it — the conditions a kubelet owns with their status, reason, message and transition time (a
# node under MemoryPressure stays so, and keeps the taint the node lifecycle controller gives it;
# a kubelet posting Ready=False goes on posting it), and the node's own addresses and nodeInfo —
# and only refreshes the heartbeat times.  What the node does not say yet (a condition, the
# addresses) is reported as a healthy kubelet reports it, and so is a condition the node lifecycle
# controller set to Unknown (a kubelet that runs has readings of its own again).  Without the
# annotation the kubelet reports a healthy node, as it is the node's only kubelet.
NODE_STATUS_ANNOTATION: Final = "everynode.io/node-status"
KEPT: Final = "kept"
_KUBELET_STATUSES: Final = ("True", "False")


def keeps_status(node: Obj) -> bool:
    """Whether ``node``'s kubelet reports its status as it finds it (see :data:`NODE_STATUS_ANNOTATION`)."""
    return (field_of(node.get("metadata"), "annotations") or {}).get(NODE_STATUS_ANNOTATION) == KEPT


def _kept_as_found(old: Obj | None, kept: bool) -> bool:
    """Whether the kubelet reports a node's own condition as it is (see :data:`NODE_STATUS_ANNOTATION`)."""
    return kept and old is not None and old.get("status") in _KUBELET_STATUSES


def reported_pressures(node: Obj) -> list[str]:
    """The pressure conditions :func:`node_conditions` reports True, in its order, without
    building the conditions (the kubelet's admission asks for every pod it starts): a healthy
    kubelet reports none (its pressures are False); a node whose status is kept, those it says
    are True."""
    if not keeps_status(node):
        return []
    previous = {c.get("type"): c for c in field_of(node.get("status"), "conditions") or ()}
    out = []
    for type_, _, _ in NODE_CONDITIONS:
        old = previous.get(type_)
        if _kept_as_found(old, True) and (old or {}).get("status") == "True":
            out.append(type_)
    return out


def node_conditions(node: Obj, now: str) -> list[Obj]:
    """The four conditions the kubelet reports: a healthy kubelet's (transition times kept where
    the status is unchanged), or, for a node whose status is kept, the node's own."""
    previous = {c.get("type"): c for c in field_of(node.get("status"), "conditions") or ()}
    kept = keeps_status(node)
    out = []
    for type_, reason, message in (*NODE_CONDITIONS, READY_CONDITION):
        old = previous.get(type_)
        if _kept_as_found(old, kept):
            assert old is not None
            out.append({**old, "lastHeartbeatTime": now, "lastTransitionTime": old.get("lastTransitionTime") or now})
            continue
        status = "True" if type_ == "Ready" else "False"
        ltt = old["lastTransitionTime"] if old and old.get("status") == status and old.get("lastTransitionTime") else now
        out.append({"type": type_, "status": status, "lastHeartbeatTime": now, "lastTransitionTime": ltt,
                    "reason": reason, "message": message})
    return out


def node_info(node: Obj) -> Obj:
    md: dict[str, Any] = node.get("metadata") or {}
    uid = md.get("uid") or md.get("name") or ""
    machine = _digest("machine", uid)[:32]
    system = _digest("system", uid)
    return {
        "machineID": machine,
        "systemUUID": f"{system[:8]}-{system[8:12]}-{system[12:16]}-{system[16:20]}-{system[20:32]}",
        "bootID": f"{machine[:8]}-{machine[8:12]}-{machine[12:16]}-{machine[16:20]}-{machine[20:32]}",
        "kernelVersion": KERNEL_VERSION,
        "osImage": OS_IMAGE,
        "containerRuntimeVersion": RUNTIME_VERSION,
        "kubeletVersion": KUBELET_VERSION,
        "kubeProxyVersion": "",
        "operatingSystem": "linux",
        "architecture": "amd64",
    }


def node_resources(node: Obj) -> tuple[Obj, Obj]:
    """(capacity, allocatable): what the Node already says, else the defaults (cpu 4, 16Gi, 110)."""
    status: dict[str, Any] = node.get("status") or {}
    capacity = dict(status.get("capacity") or {}) or dict(DEFAULT_CAPACITY)
    for k, v in DEFAULT_CAPACITY.items():
        capacity.setdefault(k, v)
    allocatable = dict(status.get("allocatable") or {}) or dict(capacity)
    for k, v in capacity.items():
        allocatable.setdefault(k, v)
    return capacity, allocatable


def node_internal_ip(node: Obj, default: str) -> str:
    """The node IP its kubelet gives pods (``hostIP``, host-network ``podIP``): a kept node's own
    InternalIP, else ``default`` (the simulated address)."""
    if keeps_status(node):
        for a in field_of(node.get("status"), "addresses") or ():
            if a.get("type") == "InternalIP" and a.get("address"):
                return str(a["address"])
    return default


def node_status_report(node: Obj, *, ip: str, hostname: str, now: str) -> Obj:
    """The node status the kubelet posts (a strategic-merge patch body's ``status``): a healthy
    node at ``ip``, or the node's own status with new heartbeat times when it is kept."""
    capacity, allocatable = node_resources(node)
    status: dict[str, Any] = node.get("status") or {}
    kept = keeps_status(node)
    return {
        "conditions": node_conditions(node, now),
        "addresses": (kept and status.get("addresses")) or [{"type": "InternalIP", "address": ip},
                                                            {"type": "Hostname", "address": hostname}],
        "capacity": capacity,
        "allocatable": allocatable,
        "nodeInfo": (kept and status.get("nodeInfo")) or node_info(node),
        "daemonEndpoints": (kept and status.get("daemonEndpoints")) or {"kubeletEndpoint": {"Port": KUBELET_PORT}},
    }


def report_would_change(node: Obj, *, ip: str, hostname: str) -> bool:
    """Whether posting :func:`node_status_report` would change ``node`` in more than the
    conditions' ``lastHeartbeatTime``: the report merges into the status as a strategic merge
    does (conditions and addresses by ``type``, maps key by key), so it changes something only
    where one of its entries differs from what is there."""
    status: dict[str, Any] = node.get("status") or {}
    report = node_status_report(node, ip=ip, hostname=hostname, now="")
    by_type = {c.get("type"): c for c in status.get("conditions") or ()}
    for cond in report["conditions"]:
        have = by_type.get(cond["type"])
        if have is None or any(have.get(k) != v for k, v in cond.items() if k != "lastHeartbeatTime"):
            return True
    addresses = {a.get("type"): a for a in status.get("addresses") or ()}
    if any(addresses.get(a["type"]) != a for a in report["addresses"]):
        return True
    for key in ("capacity", "allocatable", "nodeInfo", "daemonEndpoints"):
        have_map = status.get(key) or {}
        if any(have_map.get(k) != v for k, v in report[key].items()):
            return True
    return False
