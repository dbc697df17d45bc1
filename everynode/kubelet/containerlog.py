"""What ``kubectl logs`` shows for a simulated container (pure: a function of the pod object).

A simulated node runs no process, so a container has no output of its own.  What a user wants
from ``kubectl logs`` on such a pod is still real: did it start, with which image, on which node,
with which environment (the Downward API values such as ``NODE_NAME`` are the usual question),
how often did it restart, and why did it fail when an ``everynode.io/behavior`` made it fail.
The log is therefore *derived* from the pod's status — the container's ``startedAt`` /
``finishedAt``, ``restartCount``, ``lastState`` — and the environment the kubelet resolved when
it started the container (the ``everynode.io/resolved-env`` annotation, see ``downward.py``).
Being derived, it is the same on every read and after a restart of ``everynode up``, and costs
nothing to keep; the trade-off is that only the current and the previous attempt have a log (as
on a real node, where the kubelet keeps one terminated container per container name).

Which attempt a request reads, and the refusals, follow the kubelet
(``pkg/kubelet/kubelet_pods.go``: ``validateContainerLogStatus``): ``previous`` reads the last
terminated attempt (``previous terminated container "c" in pod "p" not found`` when there is
none); otherwise the running attempt, else the terminated one, else the last terminated one
(a container in ``CrashLoopBackOff`` shows the run that crashed); a container that never ran is
``waiting to start: <reason>`` (``image can't be pulled`` / ``trying and failing to pull image``
for the image errors).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from everynode.api import errors

Obj = dict[str, Any]

PREFIX = "everynode"


class Attempt(NamedTuple):
    """One run of a container: its id, attempt number, start/finish times, exit code, running or not."""

    container_id: str
    number: int
    started: str
    finished: str
    exit_code: int | None
    running: bool


def _status(pod: Obj, container: str) -> Obj | None:
    status = pod.get("status") or {}
    for group in ("containerStatuses", "initContainerStatuses"):
        for s in status.get(group) or ():
            if s.get("name") == container:
                return s
    return None


def _terminated(state: Obj, number: int) -> Attempt | None:
    t = (state or {}).get("terminated")
    if not t or not t.get("containerID"):
        return None
    return Attempt(t["containerID"], number, t.get("startedAt") or "", t.get("finishedAt") or "",
                   int(t.get("exitCode") or 0), False)


def select_attempt(pod: Obj, container: str, *, previous: bool = False) -> Attempt:
    """The attempt a log request reads, or the kubelet's refusal (400 BadRequest)."""
    name = (pod.get("metadata") or {}).get("name") or ""
    s = _status(pod, container)
    if s is None:
        raise errors.bad_request(f'container "{container}" in pod "{name}" is not available')
    restarts = int(s.get("restartCount") or 0)
    state = s.get("state") or {}
    last = _terminated(s.get("lastState") or {}, max(restarts - 1, 0))
    if previous:
        if last is None:
            raise errors.bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        return last
    if "running" in state:
        return Attempt(s.get("containerID") or "", restarts, (state["running"] or {}).get("startedAt") or "", "",
                       None, True)
    if "terminated" in state:
        current = _terminated(state, restarts)
        if current is not None:
            return current
        if last is not None:
            return last
        raise errors.bad_request(f'container "{container}" in pod "{name}" is terminated')
    if last is not None:
        return last
    reason = ((state.get("waiting") or {}).get("reason")) or ""
    if reason == "ErrImagePull":
        reason = "image can't be pulled"
    elif reason == "ImagePullBackOff":
        reason = "trying and failing to pull image"
    if "waiting" in state:
        raise errors.bad_request(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
    raise errors.bad_request(f'container "{container}" in pod "{name}" is waiting to start - no logs yet')


def find_attempt(pod: Obj, container: str, container_id: str) -> Attempt | None:
    """The attempt with this container id, if the pod's status still shows it (``-f`` follows one)."""
    s = _status(pod, container)
    if s is None:
        return None
    restarts = int(s.get("restartCount") or 0)
    state = s.get("state") or {}
    if s.get("containerID") == container_id and "running" in state:
        return Attempt(container_id, restarts, (state["running"] or {}).get("startedAt") or "", "", None, True)
    for attempt in (_terminated(state, restarts), _terminated(s.get("lastState") or {}, max(restarts - 1, 0))):
        if attempt is not None and attempt.container_id == container_id:
            return attempt
    return None


def _spec_container(pod: Obj, container: str) -> Obj:
    spec = pod.get("spec") or {}
    for group in ("initContainers", "containers"):
        for c in spec.get(group) or ():
            if c.get("name") == container:
                return c
    return {}


def log_lines(pod: Obj, container: str, attempt: Attempt, *, env: dict[str, str] | None = None,
              behavior: str = "ready") -> list[tuple[str, str]]:
    """The attempt's log as (timestamp, line) pairs, oldest first."""
    md = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    c = _spec_container(pod, container)
    at = attempt.started
    lines = [(at, f'{PREFIX}: simulated container "{container}" started (attempt {attempt.number}): '
                  f'image {c.get("image") or ""}, pod {md.get("namespace") or ""}/{md.get("name") or ""}, '
                  f'node {spec.get("nodeName") or ""}')]
    if attempt.number > 0:
        lines.append((at, f"{PREFIX}: restart {attempt.number} after back-off (the previous attempt exited; "
                          f"kubectl logs --previous shows it)"))
    for key, value in (env or {}).items():
        lines.append((at, f"{PREFIX}: env {key}={value}"))
    if attempt.running:
        if behavior == "never-ready":
            lines.append((at, f"{PREFIX}: running, never Ready (everynode.io/behavior: never-ready)"))
        elif behavior == "crash-loop":
            lines.append((at, f"{PREFIX}: running; will exit with code 1 (everynode.io/behavior: crash-loop)"))
        else:
            lines.append((at, f"{PREFIX}: running (a simulated node runs no process; this log is the kubelet "
                              f"simulation's record)"))
    else:
        reason = f" (everynode.io/behavior: {behavior})" if attempt.exit_code and behavior != "ready" else ""
        lines.append((attempt.finished or at, f"{PREFIX}: exited with code {attempt.exit_code}{reason}"))
    return lines
