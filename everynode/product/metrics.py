"""Prometheus collectors for the embedded control plane's components.

Read at scrape time from what the components already count (``WorkQueue.metrics``, the
store's object counts), so that metrics cost nothing on the hot paths.  Names follow the
upstream components: ``workqueue_*`` as client-go's workqueue exports them, plus
``everynode_objects{resource}`` (upstream: ``apiserver_storage_objects``, which we also export).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, SummaryMetricFamily
from prometheus_client.registry import Collector

from everynode.api import registry
from everynode.client.kit import ControllerKit
from everynode.client.workqueue import WorkQueue


def _queues(components: Mapping[str, Any]) -> Iterator[WorkQueue]:
    """Every work queue of the components (their controller kits' queues; the DNS server has
    none)."""
    seen: set[int] = set()
    for component in components.values():
        kit = getattr(component, "kit", None)
        if not isinstance(kit, ControllerKit):
            continue
        for q in kit.queues:
            if id(q) not in seen:
                seen.add(id(q))
                yield q


class ControlPlaneCollector(Collector):
    def __init__(self, plane: Any) -> None:
        self.plane = plane

    def collect(self) -> Iterator[Any]:
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of workqueue", labels=["name"])
        adds = CounterMetricFamily("workqueue_adds", "Total number of adds handled by workqueue", labels=["name"])
        retries = CounterMetricFamily("workqueue_retries", "Total number of retries handled by workqueue",
                                      labels=["name"])
        latency = SummaryMetricFamily("workqueue_queue_duration_seconds",
                                      "How long in seconds an item stays in workqueue before being requested.",
                                      labels=["name"])
        work = SummaryMetricFamily("workqueue_work_duration_seconds",
                                   "How long in seconds processing an item from workqueue takes (the sync).",
                                   labels=["name"])
        for q in _queues(self.plane.components):
            m = q.metrics
            name = q.name or "unnamed"
            depth.add_metric([name], q.depth)
            adds.add_metric([name], m.adds)
            retries.add_metric([name], m.retries)
            latency.add_metric([name], m.gets, m.latency_sum)
            work.add_metric([name], m.work_duration_count, m.work_duration_sum)
        yield from (depth, adds, retries, latency, work)
        store = self.plane.store
        if store is not None:
            objects = GaugeMetricFamily("apiserver_storage_objects", "Number of stored objects at the time of "
                                        "last check split by kind.", labels=["resource"])
            for rt in registry.RESOURCES:
                objects.add_metric([rt.key], store.count(rt.key))
            yield objects
            rv = GaugeMetricFamily("everynode_storage_resource_version", "The store's latest resourceVersion.")
            rv.add_metric([], store.current_rv())
            yield rv
        ds = self.plane.components.get("daemonset")
        if ds is not None and hasattr(ds, "syncs"):
            syncs = CounterMetricFamily("everynode_daemonset_syncs", "DaemonSet syncs performed.")
            syncs.add_metric([], ds.syncs)
            yield syncs
