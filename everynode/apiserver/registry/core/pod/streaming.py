"""``pods/{name}/exec``, ``attach`` and ``portforward``: answered, and refused with one clear line.

On a real cluster these subresources are upgraded connections (SPDY, or WebSocket first since
kubectl 1.30 for exec/attach and 1.31 for port-forward) that kube-apiserver proxies to the
node's kubelet, which joins them to a process in the container.  A simulated node runs no
process, so there is nothing to join — but answering "the server could not find the requested
resource" (what an unknown subresource gets) would read like a broken API server.

So the apiserver knows the subresources (they are in discovery, as upstream lists them) and
answers every request on them, GET or POST, upgrade or not, with a ``Status`` (400 BadRequest)
saying why.  What kubectl does with it: the WebSocket dialer sees a failed handshake whose body
is a JSON Status and, as an upgrade failure, falls back to SPDY; SPDY's POST gets the same Status,
which client-go turns into a StatusError — kubectl prints the one line
``Error from server (BadRequest): <message>`` (``error: error upgrading connection: <message>``
for port-forward).  The pod must exist (404 otherwise, as upstream) so the message can name its
node.
"""

from __future__ import annotations

from typing import Any

from everynode.api import errors
from everynode.api.registry import ResourceType

Obj = dict[str, Any]

STREAMING_SUBRESOURCES = ("exec", "attach", "portforward")
_WHAT = {"exec": "run a command in", "attach": "attach to", "portforward": "forward a port to"}


def refusal(pod: Obj, subresource: str) -> errors.ApiError:
    md = pod.get("metadata") or {}
    node = (pod.get("spec") or {}).get("nodeName") or ""
    where = f"simulated node {node}" if node else "no node yet (the pod is not scheduled)"
    return errors.bad_request(
        f"cannot {_WHAT[subresource]} pod {md.get('namespace') or ''}/{md.get('name') or ''}: it runs on {where}, "
        f"and a simulated node runs no processes (everynode); see kubectl logs for what its kubelet recorded")


async def refuse(service: Any, rt: ResourceType, namespace: str, name: str, subresource: str) -> None:
    """Raise the refusal for an exec/attach/portforward request (404 for a pod that does not exist)."""
    pod = await service.get(rt, namespace, name)
    raise refusal(pod, subresource)
