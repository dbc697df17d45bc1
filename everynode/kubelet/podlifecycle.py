"""Layer 7: the pod half of the simulated kubelet — Pending → Running → Ready, restarts, behaviours.

What a kubelet does for the *pods* bound to its node that the rest of the system can see is
reproduced here: their status (phase, conditions, container states, restarts, IPs), the
environment their containers got, and removing terminated pods that are being deleted.  The
node half (``nodeagent.py``) decides which nodes run a kubelet; a pod of a node that is not
adopted, or whose kubelet is stopped, waits until the node agent calls :meth:`PodLifecycle.resume_node`.

Scale shapes it as the node half: **pod timers are ``loop.call_later`` handles** (asyncio keeps
them in its heap); when one fires the pod key goes onto the :attr:`PodLifecycle.ready` deque,
drained by the simulator's few writer tasks; nothing is O(nodes) per pod event, and pod events
for nodes we do not manage cost a dict lookup.  A pod is in at most one queue at a time
(``busy``/``dirty``: an event arriving while its write runs marks it for one more step).

Decisions a user can rely on (documented in the README's simulation section):
* **Pod behaviour** comes from the pod's annotations (DaemonSet pods copy them from the
  template): ``everynode.io/startup-seconds`` (else ``pod_startup``) and ``everynode.io/behavior``:
  ``ready`` (default), ``never-ready`` (Running, never Ready), ``crash-loop`` (restarts with
  back-off 10 s doubling to 5 min, waiting ``CrashLoopBackOff``, lastState terminated ``Error``;
  with ``restartPolicy: Never`` the pod fails instead), ``image-pull-error`` (stays Pending,
  waiting ``ErrImagePull`` then ``ImagePullBackOff``, retried with the same back-off), ``fail``
  (phase Failed, terminated ``Error`` exit code 1).
* **Admission**: a pod the kubelet has not acknowledged yet is refused, as upstream's eviction
  manager refuses it, when the node's kubelet reports pressure (only a node whose status is kept,
  ``everynode.io/node-status: kept``, can): phase ``Failed``, reason ``Evicted`` (``admission.py``).
* **Termination**: a pod with ``deletionTimestamp`` is removed (``delete`` with grace period 0
  and a uid precondition) promptly — after ``everynode.io/termination-seconds`` if the pod has
  that annotation, otherwise at once; ``terminationGracePeriodSeconds`` is not waited for,
  since no process needs the time.
* **The Pending write**: when the kubelet acknowledges a pod that takes time to start, it writes
  its status as Pending (``startTime``, containers waiting ``ContainerCreating``, conditions not
  ready), as upstream's kubelet does at its first sync.  ``plan``'s copy leaves that write out
  (``pending_status=False``): in its rollouts nothing reads it — the DaemonSet controller,
  the scheduler and the node lifecycle see a pod that is not ready either way, and the next
  write replaces all of it — yet it was one of the two status writes of every pod a rollout
  replaces, each with its watch fan-out and a sync of the DaemonSet.  The conditions it would
  have stored are kept with the pod's state and the next status is computed as if they had
  been (their transition times kept), so that write carries exactly what it carries after a
  written Pending status.  A Pending status shown for a volume that cannot be mounted is
  written in both modes: a pod can wait there for good, and ``why`` reads it.
* **Downward API**: the resolved environment of each container is written, when the containers
  start, to the pod annotation ``everynode.io/resolved-env`` (JSON; see ``downward.py``), and
  :meth:`PodLifecycle.environment` computes it for Python callers.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable
from typing import Any, Final

import orjson

from everynode.api.errors import ApiError
from everynode.api.meta import field_of
from everynode.api.pod import TERMINAL_PHASES
from everynode.client.base import Client
from everynode.client.events import EventRecorder
from everynode.client.informer import Informer
from everynode.client.kit import ControllerKit
from everynode.clock import Clock
from everynode.kubelet import addresses, admission, containerevents, containerlog, mounts, podstatus
from everynode.kubelet.containerevents import WARNING, ContainerEvent
from everynode.kubelet.downward import RESOLVED_ENV_ANNOTATION, has_env, resolve_environment
from everynode.kubelet.nodeagent import NodeState
from everynode.kubelet.referenced import ReferencedObjects

log = logging.getLogger(__name__)

Obj = dict[str, Any]

BEHAVIOR_ANNOTATION: Final = "everynode.io/behavior"
STARTUP_ANNOTATION: Final = "everynode.io/startup-seconds"
TERMINATION_ANNOTATION: Final = "everynode.io/termination-seconds"
BEHAVIORS: Final = ("ready", "never-ready", "crash-loop", "image-pull-error", "fail")
BACKOFF_INITIAL = 10.0  # container restart / image pull back-off
BACKOFF_MAX = 300.0
CRASH_AFTER: Final = 1.0  # seconds a crash-looping container runs before it exits
PULL_FAIL_SECONDS: Final = 1.0  # ErrImagePull shows this long before ImagePullBackOff
# API errors after which a pod's step is retried in a second (others end the step: the next
# event about the pod starts it again).
RETRIED_CODES: Final = (409, 429, 500, 503, 504)
# A volume that fails to mount is retried with the reconciler's exponential back-off
# (nestedpendingoperations: 500 ms doubling to 2m2s); a container whose configuration cannot be
# made is retried when the pod worker re-syncs it after an error (backOffPeriod, 10 s).
MOUNT_RETRY_INITIAL: Final = 0.5
MOUNT_RETRY_MAX: Final = 122.0
CONFIG_RETRY: Final = 10.0


def _annotation(obj: Obj, key: str) -> str | None:
    return (field_of(obj.get("metadata"), "annotations") or {}).get(key)


def _seconds(text: str | None, default: float) -> float:
    if text is None:
        return default
    try:
        v = float(text)
    except ValueError:
        return default
    return v if v >= 0 else default


def mount_retry_delay(attempts: int) -> float:
    """Seconds before mount attempt number ``attempts + 1`` (0.5 s doubling, capped at 2m2s)."""
    return min(MOUNT_RETRY_INITIAL * (2 ** max(attempts - 1, 0)), MOUNT_RETRY_MAX)


def backoff_delay(restarts: int) -> float:
    """Kubelet back-off before restart number ``restarts + 1``: 10 s doubling, capped at 5 min."""
    return min(BACKOFF_INITIAL * (2 ** max(restarts - 1, 0)), BACKOFF_MAX) if restarts > 0 else BACKOFF_INITIAL


class PodState:
    """One pod bound to a simulated node: where it is in its lifecycle, its timer, restarts, IP."""

    __slots__ = ("key", "namespace", "name", "uid", "node", "stage", "timer", "restarts", "host", "ip",
                 "started_at", "deleting", "busy", "dirty", "crash_started", "attempts", "blocked",
                 "unwritten")

    def __init__(self, key: str, namespace: str, name: str, uid: str, node: str) -> None:
        self.key = key
        self.namespace = namespace
        self.name = name
        self.uid = uid
        self.node = node
        self.stage = "new"
        self.timer: asyncio.TimerHandle | None = None
        self.restarts = 0
        self.host: int | None = None
        self.ip = ""
        self.started_at = ""
        self.crash_started = ""
        self.deleting = False
        self.busy = False
        self.dirty = False
        self.attempts = 0  # failed mount / container-config attempts in a row (the retry back-off)
        self.blocked = False  # its Pending status for a failed mount is written
        # The conditions of its Pending status when that write is left out (``pending_status``
        # off): the next status is computed as if they were stored.
        self.unwritten: list[Obj] | None = None




class PodLifecycle:
    """The pods of every simulated node.  ``nodes`` is the node agent's map (read only here);
    ``node_obj(name)`` the Node as the informer has it; ``wake`` tells the writers that
    :attr:`ready` has work."""

    def __init__(self, client: Client, *, clock: Clock, nodes: dict[str, NodeState],
                 node_obj: Callable[[str], Obj | None], wake: Callable[[], None], recorder: EventRecorder,
                 objects: ReferencedObjects, pod_startup: float = 1.0, pod_events: bool = True,
                 pending_status: bool = True) -> None:
        self.client = client
        self.clock = clock
        self.nodes = nodes
        self._node_obj = node_obj
        self._wake = wake
        self.recorder = recorder
        self.pod_startup = pod_startup
        self.pod_events = pod_events
        # Whether a pod's Pending status is written when the kubelet acknowledges it, before its
        # containers start (see the module docstring, "The Pending write").
        self.pending_status = pending_status
        self.objects = objects
        self.pods: dict[str, PodState] = {}
        self.ready: collections.deque[str] = collections.deque()
        self.informer: Informer | None = None
        # Counters (diagnostics, benchmarks).
        self.pod_status_updates = 0
        self.pod_removals = 0
        self.errors = 0

    def start(self, kit: ControllerKit, informer: Informer) -> None:
        """Watch ``informer`` (pods) through ``kit``."""
        self.informer = informer
        kit.watch(informer, on_add=self._on_pod_add, on_update=self._on_pod_update, on_delete=self._on_pod_delete)

    def stop(self) -> None:
        for ps in self.pods.values():
            if ps.timer is not None:
                ps.timer.cancel()

    @property
    def busy(self) -> bool:
        return bool(self.ready) or any(ps.busy for ps in self.pods.values())

    def environment(self, pod: Obj) -> dict[str, dict[str, str]]:
        """The environment each container of ``pod`` sees (Downward API resolved)."""
        node = self._node_obj(field_of(pod.get("spec"), "nodeName") or "")
        allocatable = ((node or {}).get("status") or {}).get("allocatable") or {}
        return resolve_environment(pod, allocatable=allocatable, lookup=self.objects.lookup)

    def container_log(self, pod: Obj, container: str, *, previous: bool = False,
                      container_id: str | None = None) -> tuple[str, list[tuple[str, str]], bool] | None:
        """The log of one run of a container (``ContainerLogSource`` of the API server's
        ``pods/log``): None for a pod of a node this simulation does not run."""
        if field_of(pod.get("spec"), "nodeName") not in self.nodes:
            return None
        if container_id is not None:
            attempt = containerlog.find_attempt(pod, container, container_id)
            if attempt is None:
                return None
        else:
            attempt = containerlog.select_attempt(pod, container, previous=previous)
        lines = containerlog.log_lines(pod, container, attempt, env=self._resolved_env(pod, container),
                                       behavior=self._behavior(pod))
        return attempt.container_id, lines, attempt.running

    def _resolved_env(self, pod: Obj, container: str) -> dict[str, str]:
        """The container's environment as recorded at its start (else as it would be now), in
        the order the spec defines it."""
        text = _annotation(pod, RESOLVED_ENV_ANNOTATION)
        env: dict[str, str] | None = None
        if text:
            try:
                env = (orjson.loads(text) or {}).get(container)
            except orjson.JSONDecodeError:
                env = None
        if env is None:
            env = self.environment(pod).get(container) or {}
        spec: dict[str, Any] = pod.get("spec") or {}
        order = [v.get("name") for g in ("initContainers", "containers") for c in spec.get(g) or ()
                 if c.get("name") == container for v in c.get("env") or ()]
        return {k: env[k] for k in dict.fromkeys([*order, *env]) if k in env}

    def drop_node(self, ns: NodeState) -> None:
        """The node went away: forget its pods (their IPs went with it)."""
        for key in list(ns.pods):
            ps = self.pods.pop(key, None)
            self.objects.forget(key)
            if ps is not None and ps.timer is not None:
                ps.timer.cancel()

    async def step_next(self) -> None:
        """Advance the next pod of :attr:`ready` by one step; a transient API error retries it in 1 s."""
        key = self.ready.popleft()
        ps = self.pods.get(key)
        if ps is None:
            return
        try:
            await self._step(ps)
        except ApiError as e:
            if e.code != 404:
                self.errors += 1
                log.info("updating pod %s failed: %s", key, e)
                if self.pods.get(key) is ps and e.code in RETRIED_CODES:
                    ps.dirty = False
                    ps.busy = False
                    self._set_timer(ps, 1.0)
                    return
        except Exception:
            self.errors += 1
            log.exception("updating pod %s failed", key)
        ps.busy = False
        if ps.dirty and self.pods.get(key) is ps:
            ps.dirty = False
            self._enqueue(ps)

    # -- pod events -----------------------------------------------------------------------------

    def _on_pod_add(self, pod: Obj) -> None:
        self._pod_seen(pod)

    def _on_pod_update(self, old: Obj, new: Obj) -> None:
        self._pod_seen(new)

    def _pod_seen(self, pod: Obj) -> None:
        spec: dict[str, Any] = pod.get("spec") or {}
        node_name = spec.get("nodeName")
        if not node_name:
            return
        ns = self.nodes.get(node_name)
        if ns is None:
            return
        md: dict[str, Any] = pod.get("metadata") or {}
        key = f"{md.get('namespace') or ''}/{md.get('name') or ''}"
        ps = self.pods.get(key)
        if ps is not None and md.get("uid") and ps.uid != md.get("uid"):
            self._forget_pod(key)
            ps = None
        if ps is None:
            phase = field_of(pod.get("status"), "phase")
            if phase in TERMINAL_PHASES and not md.get("deletionTimestamp"):
                return
            ps = PodState(key, md.get("namespace") or "", md.get("name") or "", md.get("uid") or "", node_name)
            self.pods[key] = ps
            ns.pods.add(key)
            self._recover(ps, pod, ns)
            if ns.stopped or not ns.adopted:
                return  # handled on adoption / resume
            if md.get("deletionTimestamp"):
                self._start_termination(ps, pod)
            elif ps.stage == "new":
                self._enqueue(ps)
            return
        if md.get("deletionTimestamp") and not ps.deleting and not ns.stopped and ns.adopted:
            self._start_termination(ps, pod)

    def _on_pod_delete(self, pod: Obj) -> None:
        md: dict[str, Any] = pod.get("metadata") or {}
        self._forget_pod(f"{md.get('namespace') or ''}/{md.get('name') or ''}")

    def _forget_pod(self, key: str) -> None:
        ps = self.pods.pop(key, None)
        if ps is None:
            return
        self.objects.forget(key)
        if ps.timer is not None:
            ps.timer.cancel()
        ns = self.nodes.get(ps.node)
        if ns is not None:
            ns.pods.discard(key)
            if ps.host is not None:
                ns.release_host(ps.host)

    def _recover(self, ps: PodState, pod: Obj, ns: NodeState) -> None:
        """Take over a pod whose status an earlier run (or kubelet) already wrote."""
        status: dict[str, Any] = pod.get("status") or {}
        ip = status.get("podIP") or ""
        if ip and not field_of(pod.get("spec"), "hostNetwork") and ns.cidr:
            h = addresses.host_of(ns.cidr, ip)
            if h is not None:
                ns.used_hosts.add(h)
                ps.host = h
        ps.ip = ip
        phase = status.get("phase")
        cs = (status.get("containerStatuses") or [{}])[0]
        ps.restarts = int(cs.get("restartCount") or 0)
        ps.started_at = status.get("startTime") or ""
        if phase in TERMINAL_PHASES:
            ps.stage = "done"
        elif phase == "Running" or (phase == "Pending" and ip):
            behavior = self._behavior(pod)
            if behavior in ("crash-loop", "image-pull-error"):
                ps.stage = "cycle"
                self._set_timer(ps, BACKOFF_INITIAL)
            else:
                ps.stage = "running"

    def resume_node(self, ns: NodeState) -> None:
        """The node was adopted or its kubelet resumed: take up the pods that waited for it."""
        inf = self.informer
        for key in list(ns.pods):
            ps = self.pods.get(key)
            pod = inf.get(key) if inf is not None else None
            if ps is None or pod is None:
                continue
            if field_of(pod.get("metadata"), "deletionTimestamp"):
                if not ps.deleting:
                    self._start_termination(ps, pod)
            elif ps.stage in ("new", "creating", "cycle") and ps.timer is None:
                self._enqueue(ps)

    # -- pod lifecycle --------------------------------------------------------------------------

    def _behavior(self, pod: Obj) -> str:
        b = _annotation(pod, BEHAVIOR_ANNOTATION) or "ready"
        return b if b in BEHAVIORS else "ready"

    def _set_timer(self, ps: PodState, delay: float) -> None:
        if ps.timer is not None:
            ps.timer.cancel()
        ps.timer = asyncio.get_running_loop().call_later(max(delay, 0.0), self._fire, ps.key, ps)

    def _fire(self, key: str, ps: PodState) -> None:
        ps.timer = None
        if self.pods.get(key) is ps:
            self._enqueue(ps)

    def _enqueue(self, ps: PodState) -> None:
        if ps.busy:
            ps.dirty = True
            return
        ps.busy = True
        self.ready.append(ps.key)
        self._wake()

    def _start_termination(self, ps: PodState, pod: Obj) -> None:
        if ps.stage == "running" or (ps.stage == "cycle" and self._behavior(pod) == "crash-loop"):
            self._events(ps, pod, [containerevents.killing(c) for c in field_of(pod.get("spec"), "containers") or ()])
        ps.deleting = True
        self.objects.forget(ps.key)
        if ps.timer is not None:
            ps.timer.cancel()
            ps.timer = None
        ps.stage = "terminating"
        delay = _seconds(_annotation(pod, TERMINATION_ANNOTATION), 0.0)
        if delay > 0:
            self._set_timer(ps, delay)
        else:
            self._enqueue(ps)


    async def _step(self, ps: PodState) -> None:
        """Advance one pod by one step of its lifecycle (one API write, usually)."""
        inf = self.informer
        pod = inf.get(ps.key) if inf is not None else None
        ns = self.nodes.get(ps.node)
        if pod is None or ns is None or ns.stopped or not ns.adopted:
            return
        if field_of(pod.get("metadata"), "uid") != ps.uid:
            return
        if ps.deleting:
            if ps.timer is not None:  # a termination-seconds wait still running
                return
            await self._remove(ps)
            return
        if ps.stage == "new":
            if not field_of(pod.get("status"), "startTime") and await self._refused(ps, pod):
                return
            if mounts.refers_to_objects(pod) and not await self._mounted(ps, pod, ns):
                return
            startup = self._startup(pod)
            if startup > 0:
                if self.pending_status:
                    await self._write_pending(ps, pod, ns)
                else:
                    ps.unwritten = self._pending_conditions(ps, pod, self.clock.rfc3339())
                ps.stage = "creating"
                self._set_timer(ps, startup)
                return
            ps.stage = "creating"
        if ps.unwritten is not None:
            pod = podstatus.with_conditions(pod, ps.unwritten)
        if ps.stage == "creating":
            await self._start_containers(ps, pod, ns)
            return
        if ps.stage == "cycle":
            await self._cycle(ps, pod, ns)

    async def _refused(self, ps: PodState, pod: Obj) -> bool:
        """Admission, once, before the kubelet acknowledges the pod (``startTime``): a pod the
        node's pressure refuses fails and never starts (see ``admission.py``)."""
        message = admission.pressure_refusal(pod, self._node_obj(ps.node) or {})
        if message is None:
            return False
        await self._patch_status(ps, {**admission.rejected_status(message), "startTime": self.clock.rfc3339()})
        self._events(ps, pod, [ContainerEvent(WARNING, admission.EVICTED, message, "")])
        ps.stage = "done"
        return True

    # -- what the pod mounts and refers to ------------------------------------------------------

    def wake(self, key: str) -> None:
        """An object ``key``'s pod waited for appeared: retry it now (``ReferencedObjects`` calls this)."""
        ps = self.pods.get(key)
        if ps is not None and not ps.deleting and ps.stage in ("new", "creating"):
            if ps.timer is not None:
                ps.timer.cancel()
                ps.timer = None
            self._enqueue(ps)

    def _retry(self, ps: PodState, pod: Obj, waits_for: tuple[mounts.Ref, ...], delay: float) -> None:
        self.objects.wait(ps.key, ps.namespace, waits_for)
        ps.attempts += 1
        self._set_timer(ps, delay)

    async def _mounted(self, ps: PodState, pod: Obj, ns: NodeState) -> bool:
        """Whether every volume can be set up; if not, the pod stays Pending/ContainerCreating with
        a ``FailedMount`` event and waits (for the object, or the retry back-off)."""
        if not self.objects.synced:  # the caches are filling: not a verdict yet
            self._set_timer(ps, MOUNT_RETRY_INITIAL)
            return False
        failed = mounts.mount_failure(pod, self.objects.lookup)
        if failed is None:
            self.objects.forget(ps.key)
            ps.attempts = 0
            return True
        volume, failure = failed
        if not ps.blocked:
            await self._write_pending(ps, pod, ns)
            ps.blocked = True
        self._events(ps, pod, [ContainerEvent(WARNING, mounts.FAILED_MOUNT, mounts.mount_message(volume, failure), "")])
        self._retry(ps, pod, failure.waits_for, mount_retry_delay(ps.attempts + 1))
        return False

    async def _configured(self, ps: PodState, pod: Obj, status: Obj, now: str) -> bool:
        """Whether every container's environment can be made; if not, the container waits in
        ``CreateContainerConfigError`` (sandbox and IP exist) and the pod retries later."""
        if not self.objects.synced:
            self._set_timer(ps, MOUNT_RETRY_INITIAL)
            return False
        spec: dict[str, Any] = pod.get("spec") or {}
        for group in ("initContainers", "containers"):
            for c in spec.get(group) or ():
                failure = mounts.env_failure(pod, c, self.objects.lookup)
                if failure is None:
                    continue
                status["phase"] = "Pending"
                status["conditions"] = podstatus.pod_conditions(pod, now, sandbox=True, ready=False)
                statuses = podstatus.waiting_statuses(spec, ps.uid, reason="ContainerCreating")
                for s in statuses:
                    if s["name"] == c.get("name"):
                        s["state"] = {"waiting": {"reason": "CreateContainerConfigError", "message": failure.message}}
                status["containerStatuses"] = statuses
                if current_waiting(pod, c.get("name") or "") != ("CreateContainerConfigError", failure.message):
                    await self._patch_status(ps, status)
                init = group == "initContainers"
                self._events(ps, pod, [*containerevents.image_present(c, pull_seconds=self._startup(pod), init=init),
                                       containerevents.config_error(c, failure.message, init=init)])
                self._retry(ps, pod, failure.waits_for, CONFIG_RETRY)
                return False
        self.objects.forget(ps.key)
        ps.attempts = 0
        return True

    # -- the writes -----------------------------------------------------------------------------

    async def _patch_status(self, ps: PodState, status: Obj) -> None:
        await self.client.patch("pods", ps.name, {"metadata": {"uid": ps.uid}, "status": status},
                                namespace=ps.namespace, patch_type="strategic", subresource="status")
        self.pod_status_updates += 1
        ps.unwritten = None  # what it modelled is stored now, or replaced by what this wrote

    def _ips(self, ps: PodState, pod: Obj, ns: NodeState) -> None:
        if ps.ip:
            return
        if field_of(pod.get("spec"), "hostNetwork"):
            ps.ip = ns.ip
            return
        if ps.host is None:
            ps.host = ns.allocate_host()
        ps.ip = addresses.pod_ip(ns.cidr, ps.host)

    def _common(self, ps: PodState, ns: NodeState, now: str, *, with_ip: bool) -> Obj:
        if not ps.started_at:
            ps.started_at = now
        return podstatus.placement(ns.ip, ps.started_at, ps.ip if with_ip else None)

    def _pending_status(self, ps: PodState, pod: Obj, ns: NodeState) -> Obj:
        """The status of an acknowledged pod whose containers are being created."""
        now = self.clock.rfc3339()
        spec: dict[str, Any] = pod.get("spec") or {}
        status = self._common(ps, ns, now, with_ip=False)
        status["phase"] = "Pending"
        status["conditions"] = self._pending_conditions(ps, pod, now)
        status["containerStatuses"] = podstatus.waiting_statuses(spec, ps.uid, reason="ContainerCreating")
        return status

    def _pending_conditions(self, ps: PodState, pod: Obj, now: str) -> list[Obj]:
        """The Pending status's conditions, and the start time it gives the pod: all that the
        next status keeps of a Pending write left out (the rest is built only when written)."""
        if not ps.started_at:
            ps.started_at = now
        return podstatus.pod_conditions(pod, now, sandbox=False, ready=False)

    async def _write_pending(self, ps: PodState, pod: Obj, ns: NodeState) -> None:
        await self._patch_status(ps, self._pending_status(ps, pod, ns))

    async def _start_containers(self, ps: PodState, pod: Obj, ns: NodeState) -> None:
        behavior = self._behavior(pod)
        spec: dict[str, Any] = pod.get("spec") or {}
        now = self.clock.rfc3339()
        self._ips(ps, pod, ns)
        status = self._common(ps, ns, now, with_ip=True)
        if spec.get("initContainers"):
            status["initContainerStatuses"] = podstatus.init_container_statuses(spec, ps.uid, now)
        restart_never = spec.get("restartPolicy") == "Never"
        if behavior == "image-pull-error":
            status["phase"] = "Pending"
            status["conditions"] = podstatus.pod_conditions(pod, now, sandbox=True, ready=False)
            status["containerStatuses"] = podstatus.waiting_statuses(
                spec, ps.uid, reason="ErrImagePull",
                message='failed to pull and unpack image "{image}": simulated pull failure (everynode.io/behavior)')
            await self._patch_status(ps, status)
            ps.stage = "cycle"
            ps.restarts = 0
            for c in spec.get("containers") or ():
                self._events(ps, pod, containerevents.pull_failed(c, reason="ErrImagePull"))
            self._set_timer(ps, PULL_FAIL_SECONDS)
            return
        if mounts.refers_to_objects(pod) and not await self._configured(ps, pod, status, now):
            return
        self._containers_started(ps, pod)
        if behavior == "fail" or (behavior == "crash-loop" and restart_never):
            status["phase"] = "Failed"
            status["conditions"] = podstatus.pod_conditions(pod, now, sandbox=False, ready=False, failed=True)
            status["containerStatuses"] = podstatus.terminated_statuses(spec, ps.uid, started=now, finished=now)
            await self._patch_status(ps, status)
            ps.stage = "done"
            self._release_ip(ps, ns)
            return
        if behavior == "ready" and runs_to_completion(pod):
            await self._complete(ps, pod, ns, status, now)
            return
        status.update(podstatus.running(pod, ps.uid, now, ready=behavior == "ready"))
        await self._patch_status(ps, status)
        if has_env(pod):
            await self._record_env(ps, pod, status)
        if behavior == "crash-loop":
            ps.stage = "cycle"
            ps.crash_started = now
            self._set_timer(ps, CRASH_AFTER)
        else:
            ps.stage = "running"

    async def _complete(self, ps: PodState, pod: Obj, ns: NodeState, status: Obj, now: str) -> None:
        """A Job's pod: its containers exit 0 once started (phase Succeeded, terminated
        ``Completed``), as a batch workload that did its work."""
        status["phase"] = "Succeeded"
        conditions = podstatus.pod_conditions(pod, now, sandbox=False, ready=False, failed=True)
        status["conditions"] = [dict(c, reason="PodCompleted") if c.get("reason") == "PodFailed" else c
                                for c in conditions]
        status["containerStatuses"] = podstatus.terminated_statuses(pod.get("spec") or {}, ps.uid, started=now,
                                                                    finished=now, exit_code=0, reason="Completed")
        await self._patch_status(ps, status)
        ps.stage = "done"
        self._release_ip(ps, ns)

    async def _cycle(self, ps: PodState, pod: Obj, ns: NodeState) -> None:
        """Next step of a crash loop or an image pull back-off."""
        behavior = self._behavior(pod)
        spec: dict[str, Any] = pod.get("spec") or {}
        now = self.clock.rfc3339()
        status = self._common(ps, ns, now, with_ip=True)
        if behavior == "image-pull-error":
            cs = (field_of(pod.get("status"), "containerStatuses") or [{}])[0]
            waiting = (field_of(cs.get("state"), "waiting") or {}).get("reason")
            if waiting == "ErrImagePull":
                status["containerStatuses"] = podstatus.waiting_statuses(
                    spec, ps.uid, reason="ImagePullBackOff", message='Back-off pulling image "{image}"')
                ps.restarts += 1
                await self._patch_status(ps, status)
                for c in spec.get("containers") or ():
                    self._events(ps, pod, containerevents.pull_failed(c, reason="ImagePullBackOff"))
                self._set_timer(ps, backoff_delay(ps.restarts))
            else:
                status["containerStatuses"] = podstatus.waiting_statuses(
                    spec, ps.uid, reason="ErrImagePull",
                    message='failed to pull and unpack image "{image}": simulated pull failure (everynode.io/behavior)')
                await self._patch_status(ps, status)
                for c in spec.get("containers") or ():
                    self._events(ps, pod, containerevents.pull_failed(c, reason="ErrImagePull"))
                self._set_timer(ps, PULL_FAIL_SECONDS)
            return
        if behavior != "crash-loop":
            # The annotation changed under a running pod: settle into the new behaviour.
            ps.stage = "creating"
            await self._start_containers(ps, pod, ns)
            return
        cs = (field_of(pod.get("status"), "containerStatuses") or [{}])[0]
        if "running" in (cs.get("state") or {}):
            # The container exits with an error; the kubelet backs off before restarting it.
            started = ps.crash_started or now
            last = {}
            status["phase"] = "Running"
            status["conditions"] = podstatus.pod_conditions(pod, now, sandbox=True, ready=False)
            statuses = podstatus.waiting_statuses(
                spec, ps.uid, reason="CrashLoopBackOff",
                message="back-off {delay} restarting failed container={name} pod={pod}", restart=ps.restarts + 1)
            delay = backoff_delay(ps.restarts + 1)
            for s in statuses:
                last = podstatus.terminated_state(ps.uid, s["name"], ps.restarts, started=started, finished=now)
                s["lastState"] = last
                s["containerID"] = last["terminated"]["containerID"]
                s["imageID"] = podstatus.image_id(next((c.get("image") or "" for c in spec.get("containers") or ()
                                                        if c.get("name") == s["name"]), ""))
                s["state"]["waiting"]["message"] = (
                    f"back-off {_duration(delay)} restarting failed container={s['name']} "
                    f"pod={ps.name}_{ps.namespace}({ps.uid})")
            status["containerStatuses"] = statuses
            ps.restarts += 1
            await self._patch_status(ps, status)
            self._events(ps, pod, [containerevents.restart_backoff(c, pod_name=ps.name, namespace=ps.namespace,
                                                                   uid=ps.uid) for c in spec.get("containers") or ()])
            self._set_timer(ps, delay)
        else:
            # Back-off over: the container runs again (and will crash again).
            last_state = cs.get("lastState") or {}
            status["phase"] = "Running"
            status["conditions"] = podstatus.pod_conditions(pod, now, sandbox=True, ready=False)
            status["containerStatuses"] = podstatus.running_statuses(spec, ps.uid, now, ready=False,
                                                                     restart=ps.restarts, last_state=last_state)
            ps.crash_started = now
            await self._patch_status(ps, status)
            self._events(ps, pod, [ev for c in spec.get("containers") or ()
                                   for ev in containerevents.started(c, pull_seconds=self._startup(pod))])
            self._set_timer(ps, CRASH_AFTER)

    async def _record_env(self, ps: PodState, pod: Obj, status: Obj) -> None:
        view = dict(pod)
        view["status"] = dict(pod.get("status") or {}, **status)
        env = self.environment(view)
        text = orjson.dumps(env, option=orjson.OPT_SORT_KEYS).decode()
        if _annotation(pod, RESOLVED_ENV_ANNOTATION) == text:
            return
        await self.client.patch("pods", ps.name, {"metadata": {"uid": ps.uid,
                                                               "annotations": {RESOLVED_ENV_ANNOTATION: text}}},
                                namespace=ps.namespace, patch_type="merge")

    def _release_ip(self, ps: PodState, ns: NodeState) -> None:
        if ps.host is not None:
            ns.release_host(ps.host)
            ps.host = None

    async def _remove(self, ps: PodState) -> None:
        try:
            await self.client.delete("pods", ps.name, namespace=ps.namespace, grace_period_seconds=0,
                                     preconditions={"uid": ps.uid} if ps.uid else None)
            self.pod_removals += 1
        except ApiError as e:
            if e.code not in (404, 409):
                raise

    def _startup(self, pod: Obj) -> float:
        return _seconds(_annotation(pod, STARTUP_ANNOTATION), self.pod_startup)

    def _containers_started(self, ps: PodState, pod: Obj) -> None:
        spec: dict[str, Any] = pod.get("spec") or {}
        pull = self._startup(pod)
        events = [ev for c in spec.get("initContainers") or ()
                  for ev in containerevents.started(c, pull_seconds=pull, init=True)]
        events += [ev for c in spec.get("containers") or () for ev in containerevents.started(c, pull_seconds=pull)]
        self._events(ps, pod, events)

    def _events(self, ps: PodState, pod: Obj, events: list[ContainerEvent]) -> None:
        """Record container events as the pod's node's kubelet (source host = node name)."""
        if self.pod_events:
            for ev in events:
                self.recorder.event(pod, ev.type, ev.reason, ev.message, host=ps.node, field_path=ev.field_path)




def runs_to_completion(pod: Obj) -> bool:
    """A pod a Job controls (its controller reference is a batch Job): its simulated containers
    exit 0 after start-up instead of running for ever."""
    for ref in field_of(pod.get("metadata"), "ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == "Job" and str(ref.get("apiVersion") or "").startswith("batch/"):
            return True
    return False


def current_waiting(pod: Obj, container: str) -> tuple[str, str] | None:
    """(reason, message) of the container's waiting state as the pod's status has it."""
    for s in field_of(pod.get("status"), "containerStatuses") or ():
        if s.get("name") == container:
            w = field_of(s.get("state"), "waiting")
            return (w.get("reason") or "", w.get("message") or "") if w else None
    return None


def _duration(seconds: float) -> str:
    """Go's ``time.Duration`` text for whole seconds/minutes (``10s``, ``1m20s``, ``5m0s``)."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    return f"{s // 60}m{s % 60}s"
