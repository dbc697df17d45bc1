"""The EndpointSlice controller: ``discovery.k8s.io/v1`` slices for every Service with a selector.

Upstream: ``pkg/controller/endpointslice/endpointslice_controller.go`` and
``staging/src/k8s.io/endpointslice`` (``reconciler.go``, ``utils.go``,
``util/endpointslice_tracker.go``).  The shared pod rules live in
:mod:`everynode.controllers.servicepods`.

What a Service gets: slices named ``<service>-<5 random characters>`` (``generateName``),
labelled ``kubernetes.io/service-name`` and ``endpointslice.kubernetes.io/managed-by:
endpointslice-controller.k8s.io`` (plus the Service's own labels and
``service.kubernetes.io/headless`` for headless Services), owned by the Service (controller
reference with ``blockOwnerDeletion``, so the garbage collector deletes them with it), one
address type (the Service's IP family), endpoints with ``ready``/``serving``/``terminating``
conditions, ``nodeName``, ``targetRef`` and ``hostname``, and the ports that resolved on the
pods.  Unlike Endpoints, terminating pods stay listed (``terminating: true``, ``ready: false``)
so consumers can drain them.

The plan (:func:`plan_slices`, pure) follows the reconciler's shape in a simplified form:
endpoints are grouped by their resolved port set; existing slices keep the endpoints still
wanted (updated in place when their conditions changed) and drop the others; the rest is
filled into slices already being updated, then into the existing slice it fits best
(``getSliceToFill``), then into new slices of at most ``max_endpoints_per_slice`` (100).
A Service without endpoints keeps exactly one empty placeholder slice, and a placeholder is
reused when endpoints appear.  Nothing is written when nothing changed.  What is left out:
topology hints, traffic distribution, dual-stack (one address type per Service) and the
mirroring of hand-made Endpoints.

Stale caches: right after a write, the informer may not show it yet; a sync computed from that
cache would create a second slice.  Like upstream's ``EndpointSliceTracker`` (which compares
generations), the controller remembers the resourceVersion of each slice it wrote and each
slice it deleted, and retries a Service whose cache is behind those.  Slice events that are
not the echo of its own write (someone else changed or deleted a slice) queue the Service.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from everynode.api.errors import ApiError
from everynode.api.meta import deep_copy, split_key
from everynode.client.base import Client
from everynode.client.events import EventRecorder
from everynode.client.informer import Informer, SharedInformerFactory
from everynode.client.workqueue import RateLimiter
from everynode.clock import Clock
from everynode.controllers.servicepods import (
    FIELD_MANAGER,
    HEADLESS_LABEL,
    LAST_CHANGE_TRIGGER_TIME,
    SERVICE_NAME_LABEL,
    SLICE_MANAGED_BY_LABEL,
    PortTuple,
    ServicePodsController,
    StaleCache,
    is_service_ip_set,
    namespace_terminating,
    service_ip_family,
    service_selector,
    should_pod_be_in_endpoints,
    slice_endpoint,
    slice_port_dicts,
    slice_ports,
)

log = logging.getLogger(__name__)

Obj = dict[str, Any]

CONTROLLER_NAME = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS_PER_SLICE = 100
SLICES = "endpointslices.discovery.k8s.io"
SERVICE_INDEX = "endpointslice-controller-service"
_RESERVED_LABELS = (SERVICE_NAME_LABEL, SLICE_MANAGED_BY_LABEL, HEADLESS_LABEL)


def index_managed_slice_by_service(eps: Obj) -> list[str]:
    """Index of the slices this controller manages: ``namespace/service``."""
    md = eps.get("metadata") or {}
    labels = md.get("labels") or {}
    svc = labels.get(SERVICE_NAME_LABEL)
    if not svc or labels.get(SLICE_MANAGED_BY_LABEL) != CONTROLLER_NAME:
        return []
    return [f"{md.get('namespace') or ''}/{svc}"]


# --------------------------------------------------------------------------------------------
# The pure plan


def _endpoint_key(ep: Obj) -> tuple[Any, ...]:
    """``hashEndpoint``: addresses, hostname and the target's identity."""
    ref = ep.get("targetRef") or {}
    return (tuple(ep.get("addresses") or ()), ep.get("hostname"), ref.get("namespace"), ref.get("name"),
            ref.get("uid"))


def _endpoint_equal(a: Obj, b: Obj) -> bool:
    """``EndpointsEqualBeyondHash``: node, conditions and targetRef (ignoring its resourceVersion)."""
    ref_a = {k: v for k, v in (a.get("targetRef") or {}).items() if k != "resourceVersion"}
    ref_b = {k: v for k, v in (b.get("targetRef") or {}).items() if k != "resourceVersion"}
    return (a.get("nodeName") == b.get("nodeName") and a.get("zone") == b.get("zone")
            and (a.get("conditions") or {}) == (b.get("conditions") or {}) and ref_a == ref_b)


def _slice_port_key(eps: Obj) -> tuple[PortTuple, ...]:
    return tuple(sorted(((p.get("name") or "", p.get("port"), p.get("protocol") or "TCP", p.get("appProtocol"))
                         for p in eps.get("ports") or ()), key=lambda p: (p[0], p[1] or 0, p[2])))


def slice_labels(svc: Obj) -> dict[str, str]:
    """``setEndpointSliceLabels``: the Service's labels minus the reserved ones, plus them."""
    labels = {k: v for k, v in (svc["metadata"].get("labels") or {}).items() if k not in _RESERVED_LABELS}
    if not is_service_ip_set(svc):
        labels[HEADLESS_LABEL] = ""
    labels[SERVICE_NAME_LABEL] = svc["metadata"]["name"]
    labels[SLICE_MANAGED_BY_LABEL] = CONTROLLER_NAME
    return labels


def _owned_by(eps: Obj, svc: Obj) -> bool:
    uid = svc["metadata"].get("uid")
    return any(ref.get("uid") == uid and ref.get("kind") == "Service" and ref.get("apiVersion") == "v1"
               for ref in (eps.get("metadata") or {}).get("ownerReferences") or ())


def _owner_ref(svc: Obj) -> Obj:
    md = svc["metadata"]
    return {"apiVersion": "v1", "kind": "Service", "name": md["name"], "uid": md.get("uid") or "",
            "controller": True, "blockOwnerDeletion": True}


def _is_placeholder(eps: Obj) -> bool:
    return not eps.get("endpoints") and not eps.get("ports")


@dataclass
class SlicePlan:
    create: list[Obj] = field(default_factory=list)
    update: list[Obj] = field(default_factory=list)
    delete: list[Obj] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.create or self.update or self.delete)


def desired_endpoints(svc: Obj, pods: list[Obj], address_type: str) -> dict[tuple[PortTuple, ...], list[Obj]]:
    """The endpoints the Service should have, grouped by resolved port set."""
    out: dict[tuple[PortTuple, ...], list[Obj]] = {}
    for pod in pods:
        if not should_pod_be_in_endpoints(pod, include_terminating=True):
            continue
        ep = slice_endpoint(svc, pod, address_type)
        if ep is None:
            continue
        out.setdefault(slice_ports(svc, pod), []).append(ep)
    for eps in out.values():
        eps.sort(key=lambda e: (tuple(a.encode() for a in e["addresses"]), (e.get("targetRef") or {}).get("uid", "")))
    return out


def plan_slices(svc: Obj, existing: list[Obj], desired: dict[tuple[PortTuple, ...], list[Obj]], *,
                address_type: str = "IPv4", max_endpoints: int = MAX_ENDPOINTS_PER_SLICE,
                trigger_time: str | None = None) -> SlicePlan:
    """What to create, update and delete so that the slices hold exactly ``desired``."""
    labels = slice_labels(svc)
    plan = SlicePlan()

    def fresh(ports: tuple[PortTuple, ...], endpoints: list[Obj]) -> Obj:
        md: Obj = {"generateName": f"{svc['metadata']['name']}-", "namespace": svc["metadata"].get("namespace") or "",
                   "labels": dict(labels), "ownerReferences": [_owner_ref(svc)]}
        if trigger_time:
            md["annotations"] = {LAST_CHANGE_TRIGGER_TIME: trigger_time}
        return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": md,
                "addressType": address_type, "endpoints": endpoints, "ports": slice_port_dicts(ports)}

    def revised(eps: Obj, endpoints: list[Obj]) -> Obj:
        new = deep_copy(eps)
        new["apiVersion"], new["kind"] = "discovery.k8s.io/v1", "EndpointSlice"
        new["endpoints"] = endpoints
        md = new["metadata"]
        md["labels"] = dict(labels)
        annotations = dict(md.get("annotations") or {})
        if trigger_time:
            annotations[LAST_CHANGE_TRIGGER_TIME] = trigger_time
        else:
            annotations.pop(LAST_CHANGE_TRIGGER_TIME, None)
        if annotations:
            md["annotations"] = annotations
        else:
            md.pop("annotations", None)
        return new

    by_ports: dict[tuple[PortTuple, ...], list[Obj]] = {}
    for eps in existing:
        if eps.get("addressType") != address_type or not _owned_by(eps, svc):
            plan.delete.append(eps)
        else:
            by_ports.setdefault(_slice_port_key(eps), []).append(eps)

    for ports in sorted(set(by_ports) | set(desired), key=repr):
        slices = sorted(by_ports.get(ports, ()), key=lambda s: s["metadata"].get("name", ""))
        if not desired.get(ports):
            plan.delete.extend(slices)  # (a placeholder may be kept below)
            continue
        remaining = {_endpoint_key(ep): ep for ep in desired[ports]}
        updating: list[tuple[Obj, list[Obj]]] = []
        unchanged: list[Obj] = []
        for eps in slices:
            kept: list[Obj] = []
            changed = (eps["metadata"].get("labels") or {}) != labels
            for ep in eps.get("endpoints") or ():
                want = remaining.pop(_endpoint_key(ep), None)
                if want is None:
                    changed = True
                elif _endpoint_equal(ep, want):
                    kept.append(ep)
                else:
                    kept.append(want)
                    changed = True
            if changed:
                updating.append((eps, kept))  # an emptied slice may be refilled below
            else:
                unchanged.append(eps)
        todo = list(remaining.values())
        # 1. Fill the slices that are being written anyway.
        for _eps, kept in updating:
            room = max_endpoints - len(kept)
            if room > 0 and todo:
                kept.extend(todo[:room])
                todo = todo[room:]
        # 2. Whole new slices for full chunks.
        while len(todo) >= max_endpoints:
            plan.create.append(fresh(ports, todo[:max_endpoints]))
            todo = todo[max_endpoints:]
        # 3. The last partial chunk: the unchanged slice it fits best, else a new slice.
        if todo:
            best: Obj | None = None
            best_diff = max_endpoints
            for eps in unchanged:
                diff = max_endpoints - (len(todo) + len(eps.get("endpoints") or ()))
                if 0 <= diff < best_diff:
                    best, best_diff = eps, diff
            if best is not None:
                unchanged.remove(best)
                updating.append((best, list(best.get("endpoints") or ()) + todo))
            else:
                plan.create.append(fresh(ports, todo))
        for eps, kept in updating:
            if kept:
                plan.update.append(revised(eps, kept))
            else:
                plan.delete.append(eps)

    # Placeholder handling: a Service always has at least one slice.
    total = sum(len(v) for v in desired.values())
    kept_count = len(existing) - len(plan.delete)
    placeholders = [eps for eps in plan.delete if _is_placeholder(eps) and eps.get("addressType") == address_type
                    and _owned_by(eps, svc)]
    if total == 0 and kept_count == 0 and not plan.create:
        if placeholders:
            plan.delete.remove(placeholders[0])
            if (placeholders[0]["metadata"].get("labels") or {}) != labels:
                plan.update.append(revised(placeholders[0], []))
        else:
            placeholder = fresh((), [])
            placeholder["endpoints"] = []
            placeholder["ports"] = []
            plan.create.append(placeholder)
    elif plan.create and placeholders:
        # Reuse the placeholder's name for the first new slice rather than delete + create.
        reuse = placeholders[0]
        plan.delete.remove(reuse)
        first = plan.create.pop(0)
        new = revised(reuse, first["endpoints"])
        new["ports"] = first["ports"]
        plan.update.append(new)
    return plan


# --------------------------------------------------------------------------------------------
# Tracking our own writes


class SliceTracker:
    """The resourceVersion of every slice this controller wrote (None: deleted by it), per
    Service, to tell a lagging cache and its own echoes from other writers' changes."""

    def __init__(self) -> None:
        self._expected: dict[str, dict[str, str | None]] = {}

    def written(self, svc_key: str, eps: Obj) -> None:
        md = eps["metadata"]
        self._expected.setdefault(svc_key, {})[md["name"]] = md.get("resourceVersion")

    def deleted(self, svc_key: str, name: str) -> None:
        self._expected.setdefault(svc_key, {})[name] = None

    def forget(self, svc_key: str) -> None:
        self._expected.pop(svc_key, None)

    @staticmethod
    def _older(cached_rv: str | None, expected_rv: str) -> bool:
        try:
            return int(cached_rv or 0) < int(expected_rv)
        except ValueError:
            return cached_rv != expected_rv

    def stale(self, svc_key: str, cached: dict[str, Obj]) -> bool:
        for name, rv in (self._expected.get(svc_key) or {}).items():
            present = cached.get(name)
            if rv is None:
                if present is not None:
                    return True
            elif present is None or self._older(present["metadata"].get("resourceVersion"), rv):
                return True
        return False

    def observe(self, svc_key: str, eps: Obj) -> bool:
        """An add/update event: True if it is not the echo of this controller's own write."""
        expected = self._expected.get(svc_key, {})
        name = eps["metadata"]["name"]
        if name not in expected:
            return True
        rv = expected[name]
        return rv is None or eps["metadata"].get("resourceVersion") != rv

    def observe_deleted(self, svc_key: str, eps: Obj) -> bool:
        """A delete event: True if this controller did not expect it."""
        expected = self._expected.get(svc_key)
        name = eps["metadata"]["name"]
        if expected is None or name not in expected:
            return True
        was = expected.pop(name)
        if not expected:
            del self._expected[svc_key]
        return was is not None


# --------------------------------------------------------------------------------------------
# The controller


class EndpointSliceController(ServicePodsController):
    queue_name = "endpointslice"

    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock, workers: int = 2,
                 max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE, recorder: EventRecorder | None = None,
                 rate_limiter: RateLimiter | None = None) -> None:
        super().__init__(client, informers=informers, clock=clock, workers=workers, rate_limiter=rate_limiter)
        self.max_endpoints_per_slice = max_endpoints_per_slice
        self.recorder = recorder
        self.tracker = SliceTracker()
        self.slice_informer: Informer = self.kit.informer(
            SLICES, indexers={SERVICE_INDEX: index_managed_slice_by_service})
        self.kit.watch(self.slice_informer, on_add=self._slice_added,
                       on_update=lambda old, new: self._slice_added(new), on_delete=self._slice_deleted)
        self.writes = 0

    def _slice_added(self, eps: Obj) -> None:
        for svc_key in index_managed_slice_by_service(eps):
            if self.tracker.observe(svc_key, eps):
                self.queue.add(svc_key)

    def _slice_deleted(self, eps: Obj) -> None:
        for svc_key in index_managed_slice_by_service(eps):
            if self.tracker.observe_deleted(svc_key, eps):
                self.queue.add(svc_key)

    async def sync(self, key: str) -> None:
        svc = self.service_informer.get(key)
        if svc is None:
            # The slices go with the Service through their owner reference (garbage collector).
            self.triggers.delete(key)
            self.tracker.forget(key)
            return
        selector = service_selector(svc)
        if selector is None:
            return
        existing = self.slice_informer.by_index(SERVICE_INDEX, key)
        if self.tracker.stale(key, {e["metadata"]["name"]: e for e in existing}):
            raise StaleCache(f"EndpointSlice informer cache is out of date for service {key}")
        pods = self.selected_pods(svc, selector)
        trigger_time = self.triggers.compute(svc, pods)
        address_type = service_ip_family(svc)
        desired = desired_endpoints(svc, pods, address_type)
        plan = plan_slices(svc, existing, desired, address_type=address_type,
                           max_endpoints=self.max_endpoints_per_slice, trigger_time=trigger_time)
        if plan.empty:
            return
        try:
            await self._apply(key, plan)
        except ApiError as exc:
            if self.recorder is not None:
                self.recorder.event(svc, "Warning", "FailedToUpdateEndpointSlices",
                                    f"Error updating Endpoint Slices for Service {key}: {exc}")
            raise

    async def _apply(self, key: str, plan: SlicePlan) -> None:
        namespace, _ = split_key(key)
        for eps in plan.create:
            try:
                created = await self.client.create(SLICES, eps, namespace=namespace, field_manager=FIELD_MANAGER)
            except ApiError as exc:
                if exc.code == 403 and namespace_terminating(exc):
                    return
                raise
            self.tracker.written(key, created)
            self.writes += 1
        for eps in plan.update:
            updated = await self.client.update(SLICES, eps, field_manager=FIELD_MANAGER)
            self.tracker.written(key, updated)
            self.writes += 1
        for eps in plan.delete:
            name = eps["metadata"]["name"]
            try:
                await self.client.delete(SLICES, name, namespace=namespace)
            except ApiError as exc:
                if exc.code != 404:
                    raise
                continue  # already gone: no delete event of ours to wait for
            self.tracker.deleted(key, name)
            self.writes += 1


__all__ = [
    "CONTROLLER_NAME",
    "MAX_ENDPOINTS_PER_SLICE",
    "EndpointSliceController",
    "SlicePlan",
    "SliceTracker",
    "desired_endpoints",
    "index_managed_slice_by_service",
    "plan_slices",
    "slice_labels",
]
