"""Layer 7: one object that plays the kubelet of every simulated node.

A kubelet has two jobs a cluster can see, and they live in two modules: the node's own status
and Lease heartbeats (:mod:`everynode.kubelet.nodeagent`) and the lifecycle of the pods bound to
it (:mod:`everynode.kubelet.podlifecycle`), which asks :mod:`everynode.kubelet.referenced` for the
ConfigMaps, Secrets and ServiceAccounts its pods mount.  This module only joins them: it subscribes
them to the shared informers, connects the node agent's "node adopted/resumed/gone" hooks to
the pod half, and runs the few writer tasks that perform their API writes.

Why one pool of writers for both: node adoption and pod steps are the simulation's bursty writes
(65,000 nodes registering, a DaemonSet's pods binding); one bounded pool keeps the number of
in-flight writes fixed whatever the burst, and adoption goes first (a node's pods cannot proceed
before it).  The Lease heartbeats are paced by the node agent's own timer wheel instead, since
they must keep their rhythm under a pod burst.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from everynode.client.base import Client
from everynode.client.events import EventRecorder
from everynode.client.informer import Informer, SharedInformerFactory
from everynode.clock import Clock
from everynode.kubelet.nodeagent import STATUS_REPORT_INTERVAL, YIELD_EVERY, NodeAgent, NodeState
from everynode.kubelet.podlifecycle import PodLifecycle, PodState
from everynode.kubelet.referenced import ReferencedObjects

Obj = dict[str, Any]

WRITERS = 4
HEARTBEAT_MODES = ("writes", "modelled")

__all__ = ["HEARTBEAT_MODES", "KubeletSimulator", "WRITERS", "YIELD_EVERY"]


class KubeletSimulator:
    def __init__(self, client: Client, *, clock: Clock, informers: SharedInformerFactory | None = None,
                 pod_startup: float = 1.0, recorder: EventRecorder | None = None, lease_duration: int = 40,
                 heartbeat_interval: float = 10, status_report_interval: float = STATUS_REPORT_INTERVAL,
                 pod_events: bool = True, heartbeats: str = "writes") -> None:
        if heartbeats not in HEARTBEAT_MODES:
            raise ValueError(f"heartbeats must be one of {', '.join(HEARTBEAT_MODES)}, not {heartbeats!r}")
        self.client = client
        self.clock = clock
        self._own_factory = informers is None
        self.informers = informers if informers is not None else SharedInformerFactory(client)
        self._own_recorder = recorder is None
        self.recorder = recorder if recorder is not None else EventRecorder(client, component="kubelet", clock=clock)
        self.modelled = heartbeats == "modelled"
        self._wake = asyncio.Event()
        self.agent = NodeAgent(client, clock=clock, wake=self._wake.set, lease_duration=lease_duration,
                               heartbeat_interval=heartbeat_interval, status_report_interval=status_report_interval,
                               modelled=self.modelled)
        self.objects = ReferencedObjects(self.informers, wake=lambda key: self.lifecycle.wake(key))
        self.lifecycle = PodLifecycle(client, clock=clock, nodes=self.agent.nodes, node_obj=self.agent.node_obj,
                                      wake=self._wake.set, recorder=self.recorder, objects=self.objects,
                                      pod_startup=pod_startup, pod_events=pod_events)
        self.agent.on_node_resumed = self.lifecycle.resume_node
        self.agent.on_node_dropped = self.lifecycle.drop_node
        self._tasks: list[asyncio.Task[Any]] = []
        self._regs: list[Any] = []
        self._node_informer: Informer | None = None
        self._pod_informer: Informer | None = None
        self._running = False

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._running = True
        self._node_informer = self.informers.informer("nodes")
        self._pod_informer = self.informers.informer("pods")
        self._regs.append(self.agent.start(self._node_informer))
        self._regs.append(self.lifecycle.start(self._pod_informer))
        self._regs.extend(self.objects.start())
        self.informers.start()
        for i in range(WRITERS):
            self._tasks.append(loop.create_task(self._writer(), name=f"kubelet-writer-{i}"))

    async def wait_synced(self) -> None:
        for inf in (self._node_informer, self._pod_informer):
            if inf is not None:
                await inf.wait_synced()

    async def stop(self) -> None:
        self._running = False
        await self.agent.stop()
        for reg in self._regs:
            reg.remove()
        self._regs.clear()
        self.lifecycle.stop()
        self._wake.set()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks.clear()
        if self._own_factory:
            await self.informers.stop()
        if self._own_recorder:
            await self.recorder.close(flush=False)

    async def _writer(self) -> None:
        agent, lifecycle = self.agent, self.lifecycle
        turns = 0
        while self._running:
            turns += 1
            if turns % YIELD_EVERY == 0:
                await asyncio.sleep(0)
            if agent.to_adopt:
                await agent.adopt_next()
            elif lifecycle.ready:
                await lifecycle.step_next()
            else:
                self._wake.clear()
                await self._wake.wait()

    # -- public helpers -------------------------------------------------------------------------

    @property
    def nodes(self) -> dict[str, NodeState]:
        return self.agent.nodes

    @property
    def pods(self) -> dict[str, PodState]:
        return self.lifecycle.pods

    def environment(self, pod: Obj) -> dict[str, dict[str, str]]:
        """The environment each container of ``pod`` sees (Downward API resolved)."""
        return self.lifecycle.environment(pod)

    def container_log(self, pod: Obj, container: str, *, previous: bool = False,
                      container_id: str | None = None) -> tuple[str, list[tuple[str, str]], bool] | None:
        """The simulated container's log (what ``kubectl logs`` shows; see ``containerlog.py``)."""
        return self.lifecycle.container_log(pod, container, previous=previous, container_id=container_id)

    def node_ip(self, name: str) -> str | None:
        return self.agent.node_ip(name)

    @property
    def idle(self) -> bool:
        """No write queued or running, no adoption pending (pod timers may still be set)."""
        return not self.agent.to_adopt and not self.lifecycle.busy

    # -- the heartbeat model (node lifecycle's HeartbeatModel) ------------------------------------

    def renewing(self, name: str) -> bool:
        return self.agent.renewing(name)

    def last_renewal(self, name: str) -> float | None:
        return self.agent.last_renewal(name)

    def subscribe_stops(self, callback: Callable[[str], None]) -> None:
        self.agent.subscribe_stops(callback)

    # -- counters (diagnostics, benchmarks) -------------------------------------------------------

    @property
    def lease_renewals(self) -> int:
        return self.agent.lease_renewals

    @property
    def modelled_renewals(self) -> int:
        return self.agent.modelled_renewals

    @property
    def node_status_updates(self) -> int:
        return self.agent.node_status_updates

    @property
    def pod_status_updates(self) -> int:
        return self.lifecycle.pod_status_updates

    @property
    def pod_removals(self) -> int:
        return self.lifecycle.pod_removals

    @property
    def errors(self) -> int:
        return self.agent.errors + self.lifecycle.errors
