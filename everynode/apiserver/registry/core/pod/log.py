"""``GET pods/{name}/log``: the container log, as kube-apiserver serves it from the node's kubelet.

Upstream (``pkg/registry/core/pod/rest/log.go``, ``strategy.go`` ``LogLocation``) validates the
options, picks the container, and proxies to the kubelet of the pod's node, which reads the
runtime's log file and applies ``tailLines``/``sinceSeconds``/``timestamps``/``limitBytes``.
Here the apiserver keeps the first half and asks a :class:`ContainerLogSource` — the kubelet
simulation, wired in by the control plane (``ApiService.container_logs``) — for the second: this
layer must not import the kubelet, and a node without a simulated kubelet (``everynode.io/kubelet:
external``, or the kubelet component disabled) answers as an unreachable kubelet does.

The filters are upstream's, in upstream's order: ``sinceSeconds``/``sinceTime`` drop older lines,
``tailLines`` keeps the last N of the rest, ``timestamps`` prefixes each line with its RFC 3339
time (nanoseconds), and ``limitBytes`` cuts the stream after that many bytes (mid-line, as the
kubelet's limit writer does).  ``follow`` keeps the response open and sends each new line of the
same container run as the pod's status changes (a watch on the one pod: no polling), until that
run ends, the pod goes, or the client hangs up.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from aiohttp import web

from everynode.api import errors
from everynode.api.registry import ResourceType
from everynode.clock import parse_rfc3339

Obj = dict[str, Any]
Line = tuple[str, str]  # (RFC 3339 timestamp, text)


class ContainerLogSource(Protocol):
    def container_log(self, pod: Obj, container: str, *, previous: bool = False,
                      container_id: str | None = None) -> tuple[str, list[Line], bool] | None:
        """(container id, lines, still running) of the run a request reads (or of the run with
        ``container_id``; None once the status no longer shows it); raises the kubelet's
        ApiError refusals.  None also when this source does not serve the pod's node."""


class LogOptions(NamedTuple):
    container: str
    follow: bool
    previous: bool
    timestamps: bool
    tail_lines: int | None
    since_seconds: int | None
    since_time: float | None
    limit_bytes: int | None


def _bool(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1", "t")


def _int(query: Any, key: str, *, minimum: int) -> int | None:
    text = query.get(key)
    if text is None or text == "":
        return None
    try:
        value = int(text)
    except ValueError:
        raise errors.bad_request(f'{key}: Invalid value: "{text}": must be an integer') from None
    if value < minimum:
        bound = "greater than or equal to 0" if minimum == 0 else "greater than 0"
        raise errors.bad_request(f"{key}: Invalid value: {value}: must be {bound}")
    return value


def parse_options(query: Any) -> LogOptions:
    """``PodLogOptions`` from the query (``ValidatePodLogOptions``' rules)."""
    since_time = None
    if query.get("sinceTime"):
        try:
            since_time = parse_rfc3339(query["sinceTime"])
        except ValueError:
            raise errors.bad_request(f'sinceTime: Invalid value: "{query["sinceTime"]}": must be RFC 3339') from None
    opts = LogOptions(container=query.get("container") or "", follow=_bool(query.get("follow")),
                      previous=_bool(query.get("previous")), timestamps=_bool(query.get("timestamps")),
                      tail_lines=_int(query, "tailLines", minimum=0),
                      since_seconds=_int(query, "sinceSeconds", minimum=1), since_time=since_time,
                      limit_bytes=_int(query, "limitBytes", minimum=1))
    if opts.since_seconds is not None and opts.since_time is not None:
        raise errors.bad_request("at most one of sinceTime or sinceSeconds may be specified")
    return opts


def choose_container(pod: Obj, container: str) -> str:
    """``ValidateContainer``: the named container must exist; none named is fine for a pod with
    exactly one container."""
    spec = pod.get("spec") or {}
    name = (pod.get("metadata") or {}).get("name") or ""
    names = [c.get("name") or "" for group in ("initContainers", "containers", "ephemeralContainers")
             for c in spec.get(group) or ()]
    if not container:
        app = spec.get("containers") or []
        if len(app) == 1:
            return app[0].get("name") or ""
        if not app:
            raise errors.bad_request(f"a container name must be specified for pod {name}")
        raise errors.bad_request(f"a container name must be specified for pod {name}, "
                                 f"choose one of: [{' '.join(names)}]")
    if container not in names:
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    return container


def select(lines: list[Line], opts: LogOptions, *, now: float) -> list[Line]:
    """sinceSeconds/sinceTime, then tailLines."""
    since = opts.since_time if opts.since_time is not None else (
        now - opts.since_seconds if opts.since_seconds is not None else None)
    if since is not None:
        lines = [ln for ln in lines if ln[0] and parse_rfc3339(ln[0]) >= since]
    if opts.tail_lines is not None:
        lines = lines[len(lines) - opts.tail_lines:] if opts.tail_lines else []
    return lines


def encode(lines: list[Line], *, timestamps: bool) -> bytes:
    out = []
    for at, text in lines:
        if timestamps:
            stamp = at[:-1] + ".000000000Z" if at.endswith("Z") and "." not in at else at
            out.append(f"{stamp} {text}\n")
        else:
            out.append(f"{text}\n")
    return "".join(out).encode()


def unreachable(pod: Obj, container: str) -> errors.ApiError:
    """What kube-apiserver says when the node's kubelet does not answer."""
    md, status = pod.get("metadata") or {}, pod.get("status") or {}
    host = status.get("hostIP") or (pod.get("spec") or {}).get("nodeName") or ""
    return errors.internal(f'Get "https://{host}:10250/containerLogs/{md.get("namespace") or ""}/'
                           f'{md.get("name") or ""}/{container}": dial tcp {host}:10250: connect: connection refused')


async def serve_log(request: web.Request, service: Any, rt: ResourceType, namespace: str, name: str
                    ) -> web.StreamResponse:
    """The whole request: options, pod, container, the source's lines, filters, follow."""
    opts = parse_options(request.query)
    pod = await service.get(rt, namespace, name)
    container = choose_container(pod, opts.container)
    if not (pod.get("spec") or {}).get("nodeName"):  # not scheduled: no location, an empty log
        return web.Response(body=b"", content_type="text/plain")
    source: ContainerLogSource | None = getattr(service, "container_logs", None)
    result = source.container_log(pod, container, previous=opts.previous) if source is not None else None
    if result is None:
        raise unreachable(pod, container)
    container_id, lines, running = result
    budget = opts.limit_bytes
    response = web.StreamResponse(status=200)
    response.content_type = "text/plain"
    response.enable_chunked_encoding()
    await response.prepare(request)

    async def send(chunk: bytes) -> bool:
        nonlocal budget
        if budget is not None:
            chunk = chunk[:budget]
            budget -= len(chunk)
        if chunk:
            await response.write(chunk)
        return budget is None or budget > 0

    try:
        more = await send(encode(select(lines, opts, now=service.clock.now()), timestamps=opts.timestamps))
        if opts.follow and running and more and source is not None:
            sent = len(lines)
            rv = (pod.get("metadata") or {}).get("resourceVersion")
            async for event in service.watch(rt, namespace, field_selector=f"metadata.name={name}",
                                             resource_version=rv):
                if event.type == "DELETED" or event.type == "ERROR":
                    break
                if event.type not in ("ADDED", "MODIFIED"):
                    continue
                again = source.container_log(event.object, container, container_id=container_id)
                if again is None:
                    break
                _, now_lines, running = again
                if len(now_lines) > sent and not await send(encode(now_lines[sent:], timestamps=opts.timestamps)):
                    break
                sent = max(sent, len(now_lines))
                if not running:
                    break
        await response.write_eof()
    except (ConnectionResetError, ConnectionError):
        pass
    return response
