"""``everynode controller``: the DaemonSet controller against any API server, with leader election.

The same :class:`~everynode.controllers.daemonset.controller.DaemonSetController` that runs inside
the embedded control plane, here as a standalone process talking HTTPS to whatever the kubeconfig
names (the embedded cluster started with ``--disable daemonset``, or a real cluster with its own
DaemonSet controller switched off).  Choices, after kube-controller-manager
(``cmd/kube-controller-manager/app/controllermanager.go``, ``options``):

* **Leader election on by default** (``--leader-elect``), on a ``coordination.k8s.io/v1`` Lease
  (``--lease-namespace``/``--lease-name``, default ``kube-system/everynode-daemonset-controller``)
  with upstream's timings: lease duration 15 s, renew deadline 10 s, retry period 2 s
  (``--leader-elect-lease-duration`` etc.).  A replica starts its controller only once it holds
  the Lease, so several replicas never act at once (the CAS rules are in
  :mod:`everynode.client.leaderelection`).  Identity = ``<hostname>_<uuid>``, as upstream.
* **Losing the Lease ends the process** with exit code 1 (``error: leader election lost``), as
  kube-controller-manager does (``klog.FlushAndExit`` in ``OnStoppedLeading``): the controller is
  cancelled first, so it never acts without the Lease, and a supervisor restarts the process, which
  campaigns again with empty caches — simpler and safer than reusing state gathered while the
  process was not the leader.
* **SIGINT / SIGTERM** stop the controller, release the Lease (empty holder, so a standby takes
  over at its next retry instead of waiting out the lease duration) and exit 0.
* **Errors a user can cause** end in one line on stderr and exit 1, never a traceback (the
  wording of :mod:`everynode.product.connect`): no kubeconfig, unreachable server, a server
  answer such as Forbidden.  Reachability is checked once before campaigning (a GET of the Lease;
  404 is fine), so a wrong kubeconfig fails at once instead of retrying forever.
* ``--namespace`` restricts the controller to one namespace: its DaemonSets, pods and
  ControllerRevisions informers are namespaced (nodes stay cluster-wide); the controller code is
  unchanged — it only ever reads through its informer factory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from everynode.api.errors import ApiError
from everynode.client.base import Client
from everynode.client.http import HttpClient
from everynode.client.informer import SharedInformerFactory
from everynode.client.leaderelection import LEASES, LeaderElector
from everynode.clock import Clock
from everynode.controllers.daemonset.controller import DaemonSetController
from everynode.product.connect import kubeconfig_option, run_with_client

log = logging.getLogger(__name__)

DEFAULT_LEASE_NAME = "everynode-daemonset-controller"
DEFAULT_LEASE_NAMESPACE = "kube-system"
# kube-controller-manager's --leader-elect-* defaults (componentbaseconfig LeaderElectionConfiguration)
DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0
DEFAULT_WORKERS = 2  # ConcurrentDaemonSetSyncs


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    namespace: str | None = None
    workers: int = DEFAULT_WORKERS
    leader_elect: bool = True
    lease_name: str = DEFAULT_LEASE_NAME
    lease_namespace: str = DEFAULT_LEASE_NAMESPACE
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD
    identity: str | None = None


def default_identity() -> str:
    """``<hostname>_<uuid>``, as kube-controller-manager names its leader-election identity."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def say(message: str) -> None:
    click.echo(f"everynode controller: {message}", err=True)


async def run_controller(client: Client, options: ControllerOptions, *, stop: asyncio.Event) -> int:
    """Run until ``stop`` is set (exit code 0) or the Lease is lost / the controller fails (1)."""
    await check_reachable(client, options)
    if not options.leader_elect:
        return await _run_unelected(client, options, stop)

    identity = options.identity or default_identity()
    failed: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()
    led = False

    async def lead() -> None:
        nonlocal led
        led = True
        say(f"{identity} acquired lease {options.lease_namespace}/{options.lease_name}; "
            "starting the DaemonSet controller")
        try:
            await _run_controller_until_cancelled(client, options)
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # noqa: BLE001 - reported by the main task
            if not failed.done():
                failed.set_result(e)
            raise

    def new_leader(holder: str) -> None:
        if holder != identity:
            say(f"lease {options.lease_namespace}/{options.lease_name} is held by {holder}")

    elector = LeaderElector(client, lease_name=options.lease_name, namespace=options.lease_namespace,
                            identity=identity, lease_duration=options.lease_duration,
                            renew_deadline=options.renew_deadline, retry_period=options.retry_period,
                            on_new_leader=new_leader)
    say(f"{identity} campaigning for lease {options.lease_namespace}/{options.lease_name}")
    election = asyncio.ensure_future(elector.run(lead))
    stopping = asyncio.ensure_future(stop.wait())
    try:
        watched: set[asyncio.Future[Any]] = {election, stopping, failed}
        done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    if election in done:
        election.result()  # an unexpected error propagates
        click.echo("error: leader election lost", err=True)
        return 1
    election.cancel()  # stops the controller, then releases the Lease (release_on_cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await election
    if failed.done() and not stop.is_set():
        raise failed.result()
    say("stopped; lease released" if led else "stopped")
    return 0


async def check_reachable(client: Client, options: ControllerOptions) -> None:
    """One request before anything else, so a wrong kubeconfig fails at once (404 is fine)."""
    try:
        if options.leader_elect:
            await client.get(LEASES, options.lease_name, namespace=options.lease_namespace)
        else:
            await client.list("daemonsets.apps", namespace=options.namespace, limit=1)
    except ApiError as e:
        if e.code != 404:
            raise


async def _run_unelected(client: Client, options: ControllerOptions, stop: asyncio.Event) -> int:
    say("leader election disabled; starting the DaemonSet controller")
    task = asyncio.ensure_future(_run_controller_until_cancelled(client, options))
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    if task.done():
        task.result()  # the controller ended on its own: report why
        return 1
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    say("stopped")
    return 0


async def _run_controller_until_cancelled(client: Client, options: ControllerOptions) -> None:
    factory = SharedInformerFactory(client, namespace=options.namespace)
    controller = DaemonSetController(client, clock=Clock(), workers=options.workers, informers=factory)
    try:
        await controller.run_until_stopped()
    finally:
        await factory.stop()


def _install_signal_handlers(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # non-Unix, non-main thread
            loop.add_signal_handler(sig, stop.set)


@click.command("controller")
@kubeconfig_option
@click.option("--namespace", "-n", default=None, metavar="NS",
              help="Only manage DaemonSets in this namespace [default: all namespaces].")
@click.option("--workers", type=click.IntRange(min=1), default=DEFAULT_WORKERS, show_default=True,
              help="DaemonSets synced concurrently (ConcurrentDaemonSetSyncs).")
@click.option("--leader-elect/--no-leader-elect", default=True, show_default=True,
              help="Act only while holding the Lease, so that several replicas never act at once.")
@click.option("--lease-name", default=DEFAULT_LEASE_NAME, show_default=True, help="Leader-election Lease name.")
@click.option("--lease-namespace", default=DEFAULT_LEASE_NAMESPACE, show_default=True,
              help="Leader-election Lease namespace.")
@click.option("--leader-elect-lease-duration", "lease_duration", type=click.FloatRange(min=0, min_open=True),
              default=DEFAULT_LEASE_DURATION, show_default=True,
              help="Seconds a standby waits after the last observed renewal before taking over.")
@click.option("--leader-elect-renew-deadline", "renew_deadline", type=click.FloatRange(min=0, min_open=True),
              default=DEFAULT_RENEW_DEADLINE, show_default=True,
              help="Seconds the leader keeps trying to renew before it gives up (and exits).")
@click.option("--leader-elect-retry-period", "retry_period", type=click.FloatRange(min=0, min_open=True),
              default=DEFAULT_RETRY_PERIOD, show_default=True,
              help="Seconds between attempts to acquire or renew the Lease.")
def controller_command(kubeconfig: Path | None, namespace: str | None, workers: int, leader_elect: bool,
                       lease_name: str, lease_namespace: str, lease_duration: float, renew_deadline: float,
                       retry_period: float) -> None:
    """Run the DaemonSet controller against the API server of a kubeconfig, until SIGINT/SIGTERM."""
    if leader_elect and not lease_duration > renew_deadline > 1.2 * retry_period:
        raise click.UsageError("leader election needs lease duration > renew deadline > 1.2 × retry period")
    options = ControllerOptions(namespace=namespace, workers=workers, leader_elect=leader_elect,
                                lease_name=lease_name, lease_namespace=lease_namespace,
                                lease_duration=lease_duration, renew_deadline=renew_deadline,
                                retry_period=retry_period)

    async def command(client: HttpClient) -> int:
        stop = asyncio.Event()
        _install_signal_handlers(stop)
        client.user_agent = "everynode-controller"
        return await run_controller(client, options, stop=stop)

    run_with_client(kubeconfig, command)
