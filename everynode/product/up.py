"""`everynode up`: start the control plane, report progress, serve until a signal.

The start-up summary tells a newcomer everything needed next: the nodes, the kubeconfig path,
the ``export KUBECONFIG=…`` line and a few kubectl commands to try.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

from rich.console import Console

from everynode.product.controlplane import ControlPlane, ControlPlaneConfig, ControlPlaneError

console = Console(stderr=False, highlight=False)
errors = Console(stderr=True, highlight=False)


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
        errors.print(f"error: {e}")
        await plane.stop()
        return 1
    kubeconfig = config.kubeconfig_path.resolve()
    console.print(f"everynode is up: {config.control_planes} control-plane node(s), {config.nodes} worker node(s)")
    console.print(f"API server:  {plane.url}")
    console.print(f"kubeconfig:  {kubeconfig}")
    console.print(f"  export KUBECONFIG={kubeconfig}")
    if apply_files:
        from everynode.product.manifests import ManifestError

        try:
            for line in await plane.apply_manifests(apply_files):
                console.print(line)
        except (ManifestError, OSError) as e:
            errors.print(f"error: {e}")
        except Exception as e:  # an ApiError from the server: show its message
            errors.print(f"error: {getattr(e, 'message', e)}")
    console.print("next: kubectl get nodes; kubectl get daemonsets -A; kubectl get pods -A -o wide")
    console.print("Press Ctrl-C to stop.")
    await stop.wait()
    console.print("stopping …")
    await plane.stop()
    return 0
