"""The namespace controller: empties a terminating namespace, then finalizes it.

Upstream: ``pkg/controller/namespace`` (``namespace_controller.go``,
``deletion/namespaced_resources_deleter.go``).  A namespace deleted through the API gets a
deletionTimestamp and phase ``Terminating``; the API server then refuses new content in it
(``unable to create new content in namespace X because it is being terminated``).  This
controller, for a terminating namespace whose ``spec.finalizers`` still holds ``kubernetes``:

1. deletes every namespaced resource in it with one deletecollection per resource (events
   last, so the deletion stays observable), which leaves graceful pods terminating;
2. lists what is left; if anything remains it checks again later — after the longest grace
   period among the remaining pods (upstream's ``estimateGracefulTermination``), else after
   ``recheck`` seconds;
3. when nothing is left, removes ``kubernetes`` through the ``finalize`` subresource, sending
   the whole namespace as upstream does; the API server deletes the namespace once both
   ``spec.finalizers`` and ``metadata.finalizers`` are empty.

Left out: the ``NamespaceDeletion*`` / ``NamespaceContentRemaining`` status conditions upstream
writes after each pass, and discovery (the resource list is the registry's).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from everynode.api import registry
from everynode.api.errors import ApiError
from everynode.api.meta import deep_copy
from everynode.client.base import Client
from everynode.client.informer import SharedInformerFactory
from everynode.client.workqueue import WorkQueue, run_worker
from everynode.clock import Clock

log = logging.getLogger(__name__)

Obj = dict[str, Any]

FINALIZER = "kubernetes"
RECHECK_SECONDS = 1.0


def namespaced_resources() -> list[str]:
    """Every namespaced resource that supports deletecollection (custom resources included), events last."""
    namespaced = [rt for rt in registry.served_resources() if rt.namespaced and "deletecollection" in rt.verbs]
    return ([rt.key for rt in namespaced if rt.kind != "Event"]
            + [rt.key for rt in namespaced if rt.kind == "Event"])


def termination_estimate(pods: list[Obj]) -> float:
    """Seconds until the remaining pods should be gone: the longest grace period among them."""
    longest = 0
    for pod in pods:
        md = pod.get("metadata") or {}
        grace = md.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds") or 0
        longest = max(longest, int(grace))
    return float(longest)


class NamespaceController:
    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock,
                 recheck: float = RECHECK_SECONDS) -> None:
        self.client = client
        self.clock = clock
        self.recheck = recheck
        self._informer = informers.informer("namespaces")
        self._informer.add_handler(
            on_add=self._enqueue,
            on_update=lambda old, new: self._enqueue(new),
        )
        self.queue: WorkQueue = WorkQueue(name="namespace")
        self._task: asyncio.Task[None] | None = None

    def _enqueue(self, ns: Obj) -> None:
        if ns["metadata"].get("deletionTimestamp"):
            self.queue.add(ns["metadata"]["name"])

    async def start(self) -> None:
        self._informer.start()
        await self._informer.wait_synced()
        self._task = asyncio.create_task(self._worker(), name="namespace-controller")

    async def stop(self) -> None:
        self.queue.shutdown()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _worker(self) -> None:
        def failed(name: Any, exc: Exception, _retried: bool) -> None:
            log.debug("namespace %s: %s", name, exc)

        await run_worker(self.queue, self.sync, on_error=failed)

    async def sync(self, name: str) -> float | None:
        """One pass.  Returns None when finished (finalized, gone, or not ours), else the delay
        after which to look again."""
        ns = self._informer.get(name)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return None
        if FINALIZER not in ((ns.get("spec") or {}).get("finalizers") or ()):
            return None
        remaining = 0
        estimate = 0.0
        for resource in namespaced_resources():  # per pass: CRDs come and go
            try:
                await self.client.delete_collection(resource, namespace=name)
                left = await self.client.list(resource, namespace=name)
            except ApiError as e:
                if e.code in (404, 405):
                    continue
                raise
            items = left.get("items") or []
            remaining += len(items)
            if resource == "pods" and items:
                estimate = termination_estimate(items)
        if remaining:
            return estimate if estimate > 0 else self.recheck
        return await self._finalize(ns)

    async def _finalize(self, ns: Obj) -> float | None:
        body = deep_copy(ns)
        body.setdefault("apiVersion", "v1")
        body.setdefault("kind", "Namespace")
        spec = body.setdefault("spec", {})
        spec["finalizers"] = [f for f in spec.get("finalizers") or () if f != FINALIZER]
        try:
            await self.client.update("namespaces", body, subresource="finalize")
        except ApiError as e:
            if e.code == 404:
                return None
            if e.code == 409:
                return self.recheck  # a newer version is on its way through the informer
            raise
        return None
