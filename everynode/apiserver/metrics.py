"""API request metrics in Prometheus format, named as kube-apiserver names them.

``apiserver_request_total{verb,group,version,resource,subresource,scope,component,code}`` and
``apiserver_request_duration_seconds`` (a histogram with upstream's buckets) are recorded by the
HTTP layer's middleware, one ``observe`` per request (two dictionary look-ups and an add: cheap
enough for the hot path).  The registry is per server, so several embedded clusters in one
process (tests) do not share counters.  Other layers add collectors to the same registry (the
product layer registers work-queue, sync and object-count collectors).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

# kube-apiserver's request duration buckets (staging/src/k8s.io/apiserver/pkg/endpoints/metrics).
DURATION_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10,
                    15, 20, 30, 45, 60)

CONTENT_TYPE = CONTENT_TYPE_LATEST


class ApiRequestMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        labels = ("verb", "group", "version", "resource", "subresource", "scope", "code")
        self.requests = Counter("apiserver_request", "Counter of apiserver requests broken out by verb, "
                                "resource and HTTP response code.", labels, registry=self.registry)
        self.duration = Histogram("apiserver_request_duration_seconds", "Response latency distribution in "
                                  "seconds for each verb, resource and subresource.",
                                  ("verb", "group", "version", "resource", "subresource", "scope"),
                                  buckets=DURATION_BUCKETS, registry=self.registry)

    def observe(self, *, verb: str, group: str, version: str, resource: str, subresource: str, scope: str,
                code: int, seconds: float) -> None:
        self.requests.labels(verb, group, version, resource, subresource, scope, str(code)).inc()
        self.duration.labels(verb, group, version, resource, subresource, scope).observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
