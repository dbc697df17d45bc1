"""Layer 7: one object that plays the kubelet of every simulated node.

A kubelet has two jobs a cluster can see, and they live in two modules: the node's own status
and Lease heartbeats (:mod:`everynode.kubelet.nodeagent`) and the lifecycle of the pods bound to
it (:mod:`everynode.kubelet.podlifecycle`), which asks :mod:`everynode.kubelet.referenced` for the
ConfigMaps, Secrets and ServiceAccounts its pods mount.  This module only joins them: it subscribes
them to the shared informers, connects the node agent's "node adopted/resumed/gone" hooks to
the pod half, and runs the few writer tasks that perform their API writes.

Its lifecycle is the controller kit's (:class:`~everynode.client.kit.ControllerKit`): the writers
are kit loops, the subscriptions kit handlers (removed on stop), pending writes count for
``wait_idle``.  One difference from the controllers: the informers and handlers are wired when
the simulation *starts*, not in its constructor, so that its handlers run after those of every
controller built before it starts (in ``everynode up``, all of them) — the order in which
same-instant events have always been handled, which the recorded converge (tests/golden) and the
virtual-time benchmarks depend on.  Nothing waits for its caches (``wait_for_sync`` off): a node
or pod that arrives later is handled when it arrives.

Why one pool of writers for both: node adoption and pod steps are the simulation's bursty writes
(65,000 nodes registering, a DaemonSet's pods binding); one bounded pool keeps the number of
in-flight writes fixed whatever the burst, and adoption goes first (a node's pods cannot proceed
before it).  The Lease heartbeats are paced by the node agent's own timer wheel instead, since
they must keep their rhythm under a pod burst.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Final

from everynode.client.base import Client
from everynode.client.events import EventRecorder
from everynode.client.informer import SharedInformerFactory
from everynode.client.kit import ControllerKit, ControllerLifecycle
from everynode.client.wakeup import Wakeup
from everynode.clock import Clock
from everynode.kubelet.nodeagent import STATUS_REPORT_INTERVAL, YIELD_EVERY, NodeAgent, NodeState
from everynode.kubelet.podlifecycle import PodLifecycle, PodState
from everynode.kubelet.referenced import ReferencedObjects

Obj = dict[str, Any]

WRITERS: Final = 4
HEARTBEAT_MODES: Final = ("writes", "modelled")

__all__ = ["HEARTBEAT_MODES", "KubeletSimulator", "WRITERS", "YIELD_EVERY"]


class KubeletSimulator(ControllerLifecycle):
    def __init__(self, client: Client, *, clock: Clock, informers: SharedInformerFactory | None = None,
                 pod_startup: float = 1.0, recorder: EventRecorder | None = None, lease_duration: int = 40,
                 heartbeat_interval: float = 10, status_report_interval: float = STATUS_REPORT_INTERVAL,
                 pod_events: bool = True, heartbeats: str = "writes", pending_status: bool = True) -> None:
        if heartbeats not in HEARTBEAT_MODES:
            raise ValueError(f"heartbeats must be one of {', '.join(HEARTBEAT_MODES)}, not {heartbeats!r}")
        self.client = client
        self.clock = clock
        self.informers = informers if informers is not None else SharedInformerFactory(client)
        self.recorder = recorder if recorder is not None else EventRecorder(client, component="kubelet", clock=clock)
        self.modelled = heartbeats == "modelled"
        # A writer hands the loop over after this many queue items (nodeagent.YIELD_EVERY); an
        # attribute, not the module constant, so that a test can shorten it on one simulation
        # (a compiled caller would not see the module's global replaced).
        self.yield_every = YIELD_EVERY
        self._wake = Wakeup()
        self.agent = NodeAgent(client, clock=clock, wake=self._wake.set, lease_duration=lease_duration,
                               heartbeat_interval=heartbeat_interval, status_report_interval=status_report_interval,
                               modelled=self.modelled)
        self.objects = ReferencedObjects(wake=lambda key: self.lifecycle.wake(key))
        self.lifecycle = PodLifecycle(client, clock=clock, nodes=self.agent.nodes, node_obj=self.agent.node_obj,
                                      wake=self._wake.set, recorder=self.recorder, objects=self.objects,
                                      pod_startup=pod_startup, pod_events=pod_events, pending_status=pending_status)
        self.agent.on_node_resumed = self.lifecycle.resume_node
        self.agent.on_node_dropped = self.lifecycle.drop_node
        # Informers and handlers are wired in start() (see the module docstring); what runs is here.
        self.kit = ControllerKit("kubelet", informers=self.informers, wait_for_sync=False)
        for i in range(WRITERS):
            self.kit.loop(self._writer, name=f"writer-{i}")
        self.kit.idle_when(lambda: self.idle)
        if recorder is None:
            self.kit.on_stop(lambda: self.recorder.close(flush=False))
        if informers is None:
            self.kit.on_stop(self.informers.stop)

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        kit = self.kit
        self.agent.start(kit, kit.informer("nodes"))
        self.lifecycle.start(kit, kit.informer("pods"))
        self.objects.start(kit)
        await super().start()

    async def stop(self) -> None:
        await self.agent.stop()  # the heartbeat wheel first: no new writes
        await super().stop()
        self.lifecycle.stop()

    async def _writer(self) -> None:
        agent, lifecycle = self.agent, self.lifecycle
        turns = 0
        while True:
            turns += 1
            if turns % self.yield_every == 0:
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
