"""Per-node scheduling state: what the node offers and what the pods bound to it already take.

Why incremental: a decision must not look at every pod (``O(pods)``); the cache adds and
removes one pod's requests and host ports as pod events arrive, so NodeResourcesFit and
NodePorts read two integers and a small dict.  The pods themselves are kept per node
(for preemption, which has to pick victims among them).

Allocatable follows upstream: ``status.allocatable`` (cpu in milli-units, memory and other
resources as integers, ``pods`` as the pod count).  A node that reports nothing (no kubelet has
posted status yet) offers nothing — as upstream, where such a node fits only pods that request
nothing and then fails "Too many pods".
"""

from __future__ import annotations

from typing import Any, Final

from everynode.api.meta import field_of
from everynode.api.quantity import int_value, milli_value
from everynode.scheduler.podinfo import CPU, MEMORY, HostPort, PodInfo

Obj = dict[str, Any]

ANY_IP: Final = "0.0.0.0"


def _quantity(name: str, value: Any) -> int:
    try:
        return milli_value(str(value)) if name == CPU else int_value(str(value))
    except (ValueError, ArithmeticError):
        return 0


class NodeInfo:
    __slots__ = (
        "name", "node", "labels", "taints", "unschedulable", "alloc_milli_cpu", "alloc_memory",
        "alloc_pods", "alloc_scalar", "req_milli_cpu", "req_memory", "req_scalar", "pods", "ports",
        "nominated", "nonzero_milli_cpu", "nonzero_memory",
    )

    def __init__(self, node: Obj) -> None:
        self.name: str = node["metadata"]["name"]
        self.req_milli_cpu = 0
        self.req_memory = 0
        self.req_scalar: dict[str, int] = {}
        # Requests as the scoring plugins count them (a container without one counts the default).
        self.nonzero_milli_cpu = 0
        self.nonzero_memory = 0
        self.pods: dict[str, PodInfo] = {}
        # (protocol, port) -> {hostIP: count}
        self.ports: dict[tuple[str, int], dict[str, int]] = {}
        # Pods nominated to this node by preemption, waiting for their victims to go.
        self.nominated: dict[str, PodInfo] = {}
        self.set_node(node)

    def set_node(self, node: Obj) -> None:
        self.node = node
        md: dict[str, Any] = node.get("metadata") or {}
        spec: dict[str, Any] = node.get("spec") or {}
        self.labels: dict[str, str] = md.get("labels") or {}
        self.taints: list[Obj] = spec.get("taints") or []
        self.unschedulable = bool(spec.get("unschedulable"))
        alloc = field_of(node.get("status"), "allocatable") or {}
        self.alloc_milli_cpu = _quantity(CPU, alloc[CPU]) if CPU in alloc else 0
        self.alloc_memory = _quantity(MEMORY, alloc[MEMORY]) if MEMORY in alloc else 0
        self.alloc_pods = _quantity("pods", alloc["pods"]) if "pods" in alloc else 0
        self.alloc_scalar = {k: _quantity(k, v) for k, v in alloc.items() if k not in (CPU, MEMORY, "pods")}

    def scheduling_signature(self) -> tuple[Any, ...]:
        """What a node update must change to possibly make a pending pod schedulable."""
        return (self.labels, self.taints, self.unschedulable, self.alloc_milli_cpu, self.alloc_memory,
                self.alloc_pods, self.alloc_scalar)

    # -- pods -----------------------------------------------------------------------------------

    def add_pod(self, pi: PodInfo) -> None:
        self.pods[pi.key] = pi
        self.req_milli_cpu += pi.milli_cpu
        self.req_memory += pi.memory
        self.nonzero_milli_cpu += pi.nonzero_milli_cpu
        self.nonzero_memory += pi.nonzero_memory
        for k, v in pi.scalar.items():
            self.req_scalar[k] = self.req_scalar.get(k, 0) + v
        for ip, proto, port in pi.host_ports:
            ips = self.ports.setdefault((proto, port), {})
            ips[ip] = ips.get(ip, 0) + 1

    def remove_pod(self, key: str) -> PodInfo | None:
        pi = self.pods.pop(key, None)
        if pi is None:
            return None
        self.req_milli_cpu -= pi.milli_cpu
        self.req_memory -= pi.memory
        self.nonzero_milli_cpu -= pi.nonzero_milli_cpu
        self.nonzero_memory -= pi.nonzero_memory
        for k, v in pi.scalar.items():
            left = self.req_scalar.get(k, 0) - v
            if left:
                self.req_scalar[k] = left
            else:
                self.req_scalar.pop(k, None)
        for ip, proto, port in pi.host_ports:
            ips = self.ports.get((proto, port))
            if ips is None:
                continue
            n = ips.get(ip, 0) - 1
            if n > 0:
                ips[ip] = n
            else:
                ips.pop(ip, None)
                if not ips:
                    del self.ports[(proto, port)]
        return pi

    def clone_usage(self) -> NodeInfo:
        """A copy sharing the node but with its own usage (for "what if" during preemption)."""
        # (through the constructor, which reads the node again: a compiled class has no bare
        # ``__new__``, and preemption's what-ifs are rare)
        c = NodeInfo(self.node)
        c.req_milli_cpu = self.req_milli_cpu
        c.req_memory = self.req_memory
        c.req_scalar = dict(self.req_scalar)
        c.nonzero_milli_cpu = self.nonzero_milli_cpu
        c.nonzero_memory = self.nonzero_memory
        c.pods = dict(self.pods)
        c.ports = {k: dict(v) for k, v in self.ports.items()}
        c.nominated = dict(self.nominated)
        return c

    def port_conflict(self, wanted: tuple[HostPort, ...]) -> bool:
        ports = self.ports
        if not ports:
            return False
        for ip, proto, port in wanted:
            used = ports.get((proto, port))
            if not used:
                continue
            if ip == ANY_IP or ANY_IP in used or ip in used:
                return True
        return False
