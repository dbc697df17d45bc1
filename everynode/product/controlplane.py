"""Assembles the embedded control plane: storage, API service, HTTPS server, controllers,
scheduler and the kubelet simulation — the one object behind `everynode up` and
``everynode.Cluster``.

Every component talks to the API through the in-process client (no HTTP, no encoding), while
the HTTPS server serves kubectl and other clients from the same service.  Components are
started in dependency order and can be switched off one by one (``--disable``), so that a user
can bring their own controller (as with envtest) and tests can step by hand.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from everynode.api.errors import ApiError
from everynode.apiserver.http import VERSION_INFO
from everynode.apiserver.service import ApiService
from everynode.client.inprocess import InProcessClient
from everynode.client.kit import Component
from everynode.clock import Clock
from everynode.product.nodes import CONTROL_PLANE_ROLE, contract_nodes
from everynode.storage.base import Store
from everynode.storage.private import ensure_private_dir

log = logging.getLogger(__name__)

COMPONENTS = ("daemonset", "scheduler", "kubelet", "node-lifecycle", "pod-gc", "garbage-collector", "endpoints",
              "deployment", "replicaset", "serviceaccount", "root-ca-publisher", "clusterrole-aggregation",
              "disruption", "job")

Progress = Callable[[str], None]

VIRTUAL_FULL_RESYNC_PERIOD = 6 * 3600.0  # simulated seconds; see ControlPlane._full_resync_period


def _on_virtual_time() -> bool:
    """Whether the running loop is a virtual-time one (``everynode.virtualtime``)."""
    from everynode.virtualtime import VirtualTimeEventLoop

    return isinstance(asyncio.get_running_loop(), VirtualTimeEventLoop)


class ControlPlaneError(Exception):
    """A start-up problem with a one-line, user-facing message (no traceback)."""


@dataclass
class ControlPlaneConfig:
    nodes: int = 3
    control_planes: int = 1
    host: str = "127.0.0.1"
    port: int = 6443
    data_dir: Path = Path(".everynode")
    in_memory: bool = False
    kubeconfig: Path | None = None
    pod_startup: float = 1.0
    disable: frozenset[str] = frozenset()
    serve_http: bool = True
    fsync: bool = False
    node_monitor_grace_period: float = 50.0
    pod_gc_period: float = 20.0
    dns_port: int | None = None
    pod_gc_quarantine: float = 40.0
    # How the simulated kubelets prove liveness: "writes" (Lease renewals and status reports at
    # upstream's pace), "modelled" (no write that would change nothing but a heartbeat time; node
    # lifecycle takes liveness from the kubelet simulation, with the same decisions — see
    # everynode/kubelet/nodeagent.py), or "auto": modelled on a virtual-time loop, else writes.
    heartbeats: str = "auto"
    # --authorization: "always-allow" (every authenticated request) or "rbac" (kube-apiserver's
    # RBAC authorizer; the admin kubeconfig's user is in system:masters).
    authorization: str = "always-allow"
    # The Event reasons written (None: all); every event is still correlated, so the spam filter
    # and aggregation of the written ones are unchanged.  Only ``plan``'s copy narrows it, to the
    # reasons its answer reads: a rollout step writes as many kubelet events (Pulling, Pulled,
    # Created, Started, Killing) as it writes pods, and node registration one per node.
    event_reasons: frozenset[str] | None = None
    # Whether an update's new content joins the in-memory store's structural sharing
    # (storage/memory.py ``share_updates``); creates are always shared.  Only ``plan``'s copy
    # turns it off: see plan.py ``running_copy``.
    share_updates: bool = True
    # Whether the simulated kubelets write a pod's Pending status before its containers start
    # (kubelet/podlifecycle.py, "The Pending write").  Only ``plan``'s copy turns it off.
    pending_status: bool = True
    # Whether the API server keeps metadata.managedFields (apiserver/registry/context.py).  Only
    # ``plan``'s copy turns it off.
    managed_fields: bool = True
    # Whether the components' writes are taken as a typed client's (RequestOptions.typed): their
    # bodies are not searched for badly typed values or unknown fields, as none can come from
    # upstream's components (Go structs).  Only ``plan``'s copy says so; everynode up keeps the
    # check, where it guards the simulated components' own code.
    typed_components: bool = False

    # Upstream's proportions: the kubelet renews its 40 s lease every 10 s and the node monitor
    # looks every 5 s, against a 50 s grace period.  Another grace period scales the kubelet's
    # lease and renewal with it (upstream: the kubelet's nodeLeaseDurationSeconds and the
    # controller manager's --node-monitor-grace-period are set together): shorter for tests and
    # demos, so that healthy nodes never look dead; longer for very large simulations, where a
    # renewal per node every 10 s would be most of the work (a virtual-time rollout over 5,000
    # nodes at the default pace writes 12.5 million leases).  The monitor keeps its 5 s pace.
    @property
    def heartbeat_interval(self) -> float:
        return self.node_monitor_grace_period / 5

    @property
    def lease_duration(self) -> int:
        return max(1, int(self.node_monitor_grace_period * 0.8))

    @property
    def node_monitor_period(self) -> float:
        return min(5.0, self.node_monitor_grace_period / 10)

    @property
    def kubeconfig_path(self) -> Path:
        return self.kubeconfig if self.kubeconfig is not None else self.data_dir / "kubeconfig"


@dataclass
class ControlPlane:
    config: ControlPlaneConfig
    clock: Clock = field(default_factory=Clock)
    store: Store | None = None
    service: ApiService | None = None
    client: InProcessClient | None = None
    server: Any = None
    components: dict[str, Component] = field(default_factory=dict)
    informers: Any = None
    recorders: list[Any] = field(default_factory=list)
    ready: bool = False
    # Nodes stored once start-up made sure of the contract's: on a restart on the same data dir
    # also those added since (``everynode node add``, ``kubectl apply``), so the banner counts
    # what the cluster has, not what the flags asked for.
    control_plane_nodes: int = 0
    worker_nodes: int = 0
    ca_pem: bytes | None = None  # the cluster CA (PEM): the kubeconfig's and kube-root-ca.crt's

    @property
    def url(self) -> str | None:
        return getattr(self.server, "url", None)

    @property
    def dns_port(self) -> int | None:
        dns = self.components.get("dns")
        return getattr(dns, "port", None)

    async def start(self, *, progress: Progress | None = None,
                    seed: Callable[[InProcessClient], Awaitable[None]] | None = None) -> None:
        """Start everything; ``seed(client)``, when given, writes objects after the nodes and before
        any controller starts, so that the controllers' first look already sees them (``plan``
        loads a cluster snapshot this way and the controllers adopt it instead of repairing it)."""
        say = progress or (lambda _msg: None)
        cfg = self.config
        unknown = set(cfg.disable) - set(COMPONENTS)
        if unknown:
            raise ControlPlaneError(
                f"unknown component(s) for --disable: {', '.join(sorted(unknown))} "
                f"(choose from {', '.join(COMPONENTS)})")
        self.store = await self._open_store(say)
        self.service = ApiService(self.store, clock=self.clock, authorization=cfg.authorization,
                                  service_account_key_dir=None if cfg.in_memory else cfg.data_dir / "pki",
                                  service_account_admission="serviceaccount" not in cfg.disable,
                                  managed_fields=cfg.managed_fields)
        await self.service.start()
        self.client = InProcessClient(self.service)
        if cfg.serve_http:
            await self._serve(say)
        await self._ensure_nodes(say)
        if seed is not None:
            await seed(self.client)
        await self._start_components(say)
        self.ready = True
        if self.server is not None and hasattr(self.server, "set_ready"):
            self.server.set_ready(True)
        say("ready")

    async def _open_store(self, say: Progress) -> Store:
        cfg = self.config
        if cfg.in_memory:
            from everynode.storage.memory import MemoryStore

            say("storage: in memory")
            return MemoryStore(share_updates=cfg.share_updates)
        from everynode.storage.sqlite import SqliteStore

        try:
            ensure_private_dir(cfg.data_dir)  # 0700, files 0600; repairs are logged as warnings
            probe = cfg.data_dir / ".write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as e:
            raise ControlPlaneError(f"data dir {cfg.data_dir} is not writable: {e.strerror or e}") from None
        path = cfg.data_dir / "everynode.db"
        say(f"storage: {path}")
        try:
            return SqliteStore(path, fsync=cfg.fsync)
        except Exception as e:  # sqlite3.DatabaseError and friends
            raise ControlPlaneError(f"cannot open {path}: {e}") from None

    def _token(self) -> str:
        cfg = self.config
        if cfg.in_memory:
            return secrets.token_urlsafe(32)
        path = cfg.data_dir / "token"
        if path.exists():
            return path.read_text().strip()
        token = secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
        return token

    async def _serve(self, say: Progress) -> None:
        from everynode.apiserver import kubeconfig as kubeconfig_writer
        from everynode.apiserver import server as http_server
        from everynode.apiserver import tls

        cfg = self.config
        assert self.service is not None  # start() creates it before serving
        pki = cfg.data_dir / "pki" if not cfg.in_memory else None
        certs = tls.ensure_certs(pki, hosts=[cfg.host])
        self.ca_pem = certs.ca_pem
        token = self._token()
        try:
            self.server = await http_server.serve(self.service, host=cfg.host, port=cfg.port, certs=certs, token=token)
        except OSError as e:
            if e.errno in (98, 48):  # EADDRINUSE (Linux, macOS)
                raise ControlPlaneError(
                    f"port {cfg.port} on {cfg.host} is already in use (another `everynode up`? "
                    f"choose one with --port, or --port 0 for a free one)") from None
            raise ControlPlaneError(f"cannot listen on {cfg.host}:{cfg.port}: {e.strerror or e}") from None
        from everynode.product.metrics import ControlPlaneCollector

        self.server.metrics.registry.register(ControlPlaneCollector(self))
        path = cfg.kubeconfig_path
        path.parent.mkdir(parents=True, exist_ok=True)
        kubeconfig_writer.write_kubeconfig(path, server=self.server.url, ca_pem=certs.ca_pem, token=token)
        say(f"API server: {self.server.url}")
        say(f"kubeconfig: {path}")

    async def _ensure_nodes(self, say: Progress) -> None:
        assert self.client is not None
        wanted = contract_nodes(workers=self.config.nodes, control_planes=self.config.control_planes)
        created = 0
        for node in wanted:
            try:
                await self.client.create("nodes", node)
                created += 1
            except ApiError as e:
                if e.code != 409:  # already there from an earlier run on this data dir
                    raise
        nodes = (await self.client.list("nodes"))["items"]
        self.control_plane_nodes = sum(CONTROL_PLANE_ROLE in (n["metadata"].get("labels") or {}) for n in nodes)
        self.worker_nodes = len(nodes) - self.control_plane_nodes
        say(f"nodes: {len(nodes)} ({created} created)")

    async def _start_components(self, say: Progress) -> None:
        from everynode.client.events import EventRecorder
        from everynode.client.informer import SharedInformerFactory

        assert self.client is not None
        client, clock, cfg = self.client, self.clock, self.config
        self.informers = SharedInformerFactory(client)
        enabled = [c for c in COMPONENTS if c not in cfg.disable]

        # Each component writes as its upstream binary does, so managedFields name the same managers
        # a real cluster's do (the manager is the user agent up to its first "/").
        kcm = self.component_client("kube-controller-manager")
        scheduler_client = self.component_client("kube-scheduler")
        kubelet_client = self.component_client("kubelet")

        def recorder(component: str, via: InProcessClient = kcm) -> EventRecorder:
            rec = EventRecorder(via, component=component, clock=clock, written_reasons=cfg.event_reasons)
            self.recorders.append(rec)
            return rec

        if "garbage-collector" in enabled:
            from everynode.controllers.garbagecollector import MONITORED, GarbageCollector
            from everynode.controllers.namespace import NamespaceController

            # Jobs own the pods the Job controller makes: watched as owners when it runs.
            monitored = MONITORED + (("jobs.batch",) if "job" in enabled else ())
            self.components["garbage-collector"] = GarbageCollector(kcm, informers=self.informers, clock=clock,
                                                                    resources=monitored)
            self.components["namespace"] = NamespaceController(kcm, informers=self.informers, clock=clock)
        if "serviceaccount" in enabled:
            from everynode.controllers.serviceaccounts import ServiceAccountsController

            self.components["serviceaccount"] = ServiceAccountsController(kcm, informers=self.informers,
                                                                          clock=clock)
        if "root-ca-publisher" in enabled:
            from everynode.controllers.rootcacertpublisher import RootCACertPublisher

            self.components["root-ca-publisher"] = RootCACertPublisher(
                kcm, informers=self.informers, clock=clock, root_ca=self._root_ca().decode())
        if "clusterrole-aggregation" in enabled:
            from everynode.controllers.clusterroleaggregation import ClusterRoleAggregationController

            self.components["clusterrole-aggregation"] = ClusterRoleAggregationController(
                kcm, informers=self.informers, clock=clock)
        if "node-lifecycle" in enabled:
            from everynode.controllers.nodelifecycle import NodeLifecycleController
            from everynode.controllers.tainteviction import TaintEvictionController

            node_lifecycle = NodeLifecycleController(
                kcm, informers=self.informers, clock=clock, recorder=recorder("node-controller"),
                grace_period=cfg.node_monitor_grace_period, monitor_period=cfg.node_monitor_period)
            self.components["node-lifecycle"] = node_lifecycle
            self.components["taint-eviction"] = TaintEvictionController(
                kcm, informers=self.informers, clock=clock, recorder=recorder("taint-eviction-controller"))
        if "pod-gc" in enabled:
            from everynode.controllers.podgc import PodGC

            self.components["pod-gc"] = PodGC(kcm, informers=self.informers, clock=clock,
                                              period=cfg.pod_gc_period, quarantine=cfg.pod_gc_quarantine)
        if "endpoints" in enabled:
            from everynode.controllers.endpoints import EndpointsController
            from everynode.controllers.endpointslice import EndpointSliceController

            self.components["endpoints"] = EndpointsController(
                kcm, informers=self.informers, clock=clock, recorder=recorder("endpoint-controller"))
            self.components["endpointslice"] = EndpointSliceController(
                kcm, informers=self.informers, clock=clock, recorder=recorder("endpointslice-controller"))
        if cfg.dns_port is not None:
            from everynode.product.dns import DNSServer

            self.components["dns"] = DNSServer.from_informers(self.informers, host=cfg.host, port=cfg.dns_port)
        if "scheduler" in enabled:
            from everynode.scheduler.scheduler import Scheduler

            self.components["scheduler"] = Scheduler(scheduler_client, clock=clock, informers=self.informers,
                                                     recorder=recorder("default-scheduler", scheduler_client))
        if "kubelet" in enabled:
            from everynode.kubelet.simulator import KubeletSimulator

            kubelet = KubeletSimulator(kubelet_client, clock=clock, informers=self.informers, pod_startup=cfg.pod_startup,
                                       recorder=recorder("kubelet", kubelet_client), heartbeat_interval=cfg.heartbeat_interval,
                                       lease_duration=cfg.lease_duration, heartbeats=self._heartbeat_mode(),
                                       pending_status=cfg.pending_status)
            self.components["kubelet"] = kubelet
            assert self.service is not None
            self.service.container_logs = kubelet  # pods/{name}/log asks the node's kubelet
            if kubelet.modelled and "node-lifecycle" in self.components:
                node_lifecycle.use_heartbeat_model(kubelet)
        if "daemonset" in enabled:
            from everynode.controllers.daemonset.controller import DaemonSetController

            self.components["daemonset"] = DaemonSetController(kcm, clock=clock, informers=self.informers,
                                                               recorder=recorder("daemonset-controller"),
                                                               full_resync_period=self._full_resync_period())
        if "replicaset" in enabled:
            from everynode.controllers.replicaset import ReplicaSetController

            self.components["replicaset"] = ReplicaSetController(kcm, clock=clock, informers=self.informers,
                                                                 recorder=recorder("replicaset-controller"))
        if "deployment" in enabled:
            from everynode.controllers.deployment.controller import DeploymentController

            self.components["deployment"] = DeploymentController(kcm, clock=clock, informers=self.informers,
                                                                 recorder=recorder("deployment-controller"))
        if "disruption" in enabled:
            from everynode.controllers.disruption import EVENT_COMPONENT, DisruptionController

            self.components["disruption"] = DisruptionController(
                kcm, informers=self.informers, clock=clock, recorder=recorder(EVENT_COMPONENT))
        if "job" in enabled:
            from everynode.controllers.job import JobController

            self.components["job"] = JobController(kcm, informers=self.informers, clock=clock,
                                                   recorder=recorder("job-controller"))
        for name, component in self.components.items():
            say(f"starting {name}")
            try:
                await component.start()
            except OSError as e:  # the DNS port
                raise ControlPlaneError(f"{name}: cannot listen on {cfg.host}:{cfg.dns_port}: {e.strerror or e}") from None
        if "dns" in self.components:
            say(f"cluster DNS: {cfg.host}:{self.dns_port} (zone cluster.local)")

    def component_client(self, binary: str) -> InProcessClient:
        """A client of the API service that writes as ``binary`` (``kubelet``, ``kube-scheduler``,
        ``kube-controller-manager``) does: its user agent, hence its managedFields manager."""
        assert self.service is not None
        return InProcessClient(self.service, user_agent=f"{binary}/{VERSION_INFO['gitVersion']} (linux/amd64) kubernetes/everynode",
                               typed=self.config.typed_components)

    def _full_resync_period(self) -> float:
        """The DaemonSet controller's safety-net full pass: every 5 minutes on a real clock, every
        6 simulated hours in virtual time.

        The pass rebuilds a DaemonSet's incremental state from the caches (O(nodes)); it guards
        against a defect in that bookkeeping, which accumulates with the work done, not with the
        time simulated.  In virtual time 5 simulated minutes pass in a few wall milliseconds: a
        5,000-node rollout (25,000 simulated seconds) would make 83 full passes, O(N²) in all and
        a third of its cost, for no decision of its own (the tests compare the incremental state
        with the full recount after every step).  Deterministic either way: the period is
        simulated time."""
        from everynode.controllers.daemonset.controller import FULL_RESYNC_PERIOD

        return VIRTUAL_FULL_RESYNC_PERIOD if _on_virtual_time() else FULL_RESYNC_PERIOD

    def _root_ca(self) -> bytes:
        """The cluster CA: the HTTPS server's, or (no server) the data dir's, made if need be."""
        if self.ca_pem is None:
            from everynode.apiserver import tls

            cfg = self.config
            self.ca_pem = tls.ensure_certs(cfg.data_dir / "pki" if not cfg.in_memory else None,
                                           hosts=[cfg.host]).ca_pem
        return self.ca_pem

    def _heartbeat_mode(self) -> str:
        mode = self.config.heartbeats
        if mode == "auto":
            return "modelled" if _on_virtual_time() else "writes"
        return mode

    async def stop(self) -> None:
        self.ready = False
        for component in reversed(list(self.components.values())):
            try:
                await component.stop()
            except Exception as e:  # pragma: no cover - best effort on shutdown
                log.debug("stopping %s: %s", component, e)
        self.components.clear()
        for rec in self.recorders:
            await rec.close(flush=False)
        self.recorders.clear()
        if self.informers is not None:
            await self.informers.stop()
        if self.server is not None:
            await self.server.stop()
            self.server = None
        if self.service is not None:
            self.service.close()
        if self.client is not None:
            await self.client.close()
        if self.store is not None:
            await self.store.close()
            self.store = None

    async def apply_manifests(self, paths: Iterable[Path]) -> list[str]:
        """Create (or leave unchanged) the objects of YAML manifests; returns kubectl-style lines."""
        from everynode.product.manifests import apply_file

        assert self.client is not None
        lines: list[str] = []
        for path in paths:
            lines += await apply_file(self.client, path)
        return lines


async def wait_for(predicate: Callable[[], Any], *, timeout: float, interval: float = 0.05) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = predicate()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        if loop.time() > deadline:
            raise TimeoutError("condition not met")
        await asyncio.sleep(interval)
