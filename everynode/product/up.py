"""`everynode up`: start the control plane, report progress, serve until a signal.

The start-up summary tells a newcomer everything needed next: the nodes, the kubeconfig path,
the ``export KUBECONFIG=…`` line and a few kubectl commands to try.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from rich.console import Console

from everynode.product.controlplane import ControlPlane, ControlPlaneConfig, ControlPlaneError

console = Console(stderr=False, highlight=False, soft_wrap=True)


def _error(message: str) -> None:
    """One line on stderr, never wrapped (rich would wrap at the terminal width)."""
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()


async def run_up(config: ControlPlaneConfig, *, apply_files: list[Path]) -> int:
    plane = ControlPlane(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        with console.status("starting everynode …") as status:
            await plane.start(progress=lambda msg: status.update(f"starting everynode: {msg}"))
    except ControlPlaneError as e:
        _error(str(e))
        await plane.stop()
        return 1
    kubeconfig = config.kubeconfig_path.resolve()
    console.print(f"everynode is up: {plane.control_plane_nodes} control-plane node(s), "
                  f"{plane.worker_nodes} worker node(s)")
    console.print(f"API server:  {plane.url}")
    console.print(f"kubeconfig:  {kubeconfig}")
    if plane.dns_port is not None:
        console.print(f"cluster DNS: {config.host}:{plane.dns_port} (e.g. dig @{config.host} -p {plane.dns_port} "
                      "<service>.<namespace>.svc.cluster.local)")
    console.print(f"  export KUBECONFIG={kubeconfig}")
    if apply_files:
        from everynode.product.manifests import ManifestError

        try:
            for line in await plane.apply_manifests(apply_files):
                console.print(line)
        except (ManifestError, OSError) as e:
            _error(str(e))
        except Exception as e:  # an ApiError from the server: show its message
            _error(str(getattr(e, "message", e)))
    console.print("next: kubectl get nodes; kubectl get daemonsets -A; kubectl get pods -A -o wide")
    console.print("      everynode status --watch; everynode node add worker-9")
    console.print("Press Ctrl-C to stop.")
    await stop.wait()
    console.print("stopping …")
    await plane.stop()
    return 0
