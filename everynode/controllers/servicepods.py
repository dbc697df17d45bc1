"""What a Service sees of its Pods: membership, readiness, ports and endpoint records.

Shared by the Endpoints controller (``endpoints.py``) and the EndpointSlice controller
(``endpointslice.py``), as upstream shares ``staging/src/k8s.io/endpointslice/util``
(``controller_utils.go``: ``ShouldPodBeInEndpoints``, ``ShouldSetHostname``,
``podEndpointsChanged``, ``GetServicesToUpdateOnPodChange``; ``trigger_time_tracker.go``),
``pkg/api/v1/pod`` (``FindPort``, ``IsPodReady``) and ``pkg/api/v1/endpoints`` (``RepackSubsets``).

Three parts:

* **Pure rules** — which pods count, which address family, how a service port resolves against
  a pod's container ports (``targetPort`` by number, or by name *and* protocol, also in sidecar
  init containers), and the two endpoint shapes: Endpoints subsets (repacked into the canonical
  "one subset per distinct port set" form) and EndpointSlice endpoints/ports.
* **ServiceMembership** — a per-namespace map of Service selectors, so a pod event finds the
  Services selecting it in O(services in the namespace) without listing anything
  (upstream does the same walk over the service lister).
* **ServicePodsController** — the informer/queue/worker plumbing both controllers share: Service
  and Pod event handlers that enqueue ``namespace/name`` Service keys, the worker loop with
  upstream's retry budget (15 requeues, then drop), start/stop.

Deviation, on purpose: upstream orders subsets and ports by an md5 of their Go ``%#v`` dump (an
arbitrary but stable order).  That dump cannot be reproduced from Python, so ports are ordered
by (name, port, protocol) and subsets by their first address: just as stable, and readable.
A Service with ``selector: {}`` is treated as having no selector: after a storage round trip
upstream cannot tell the two apart either (protobuf drops the empty map).
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from everynode.api.errors import is_namespace_terminating
from everynode.api.meta import key_of
from everynode.api.pod import is_pod_ready, is_pod_terminal, pod_ready_condition
from everynode.client.base import Client
from everynode.client.informer import NAMESPACE_INDEX, Informer, SharedInformerFactory, index_by_namespace
from everynode.client.kit import ControllerKit, ControllerLifecycle
from everynode.client.workqueue import RateLimiter
from everynode.clock import Clock, parse_rfc3339

log = logging.getLogger(__name__)

Obj = dict[str, Any]

# k8s.io/api/core/v1 well-known labels/annotations
LAST_CHANGE_TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"
OVER_CAPACITY = "endpoints.kubernetes.io/over-capacity"
HEADLESS_LABEL = "service.kubernetes.io/headless"
# k8s.io/api/discovery/v1
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
SLICE_MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"

MAX_RETRIES = 15  # endpoints_controller.go / endpointslice_controller.go maxRetries
FIELD_MANAGER = "kube-controller-manager"  # the manager name upstream's writes carry

PortTuple = tuple[str, int, str, str | None]  # (name, port, protocol, appProtocol)


# --------------------------------------------------------------------------------------------
# Pod and Service predicates


def is_pod_terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def pod_ips(pod: Obj) -> list[str]:
    """``status.podIPs`` (``status.podIP`` alone when the list is missing)."""
    status = pod.get("status") or {}
    ips = [str(p["ip"]) for p in status.get("podIPs") or () if isinstance(p, dict) and p.get("ip")]
    if not ips and status.get("podIP"):
        ips = [status["podIP"]]
    return ips


def should_pod_be_in_endpoints(pod: Obj, *, include_terminating: bool) -> bool:
    """``ShouldPodBeInEndpoints``: not terminal, has an IP, and not terminating unless asked."""
    if is_pod_terminal(pod):
        return False
    if not pod_ips(pod):
        return False
    return include_terminating or not is_pod_terminating(pod)


def should_set_hostname(pod: Obj, svc: Obj) -> bool:
    """``ShouldSetHostname``: the pod names a hostname and its subdomain is this Service."""
    spec = pod.get("spec") or {}
    return (bool(spec.get("hostname")) and spec.get("subdomain") == svc["metadata"]["name"]
            and (svc["metadata"].get("namespace") or "") == (pod["metadata"].get("namespace") or ""))


def is_service_ip_set(svc: Obj) -> bool:
    ip = (svc.get("spec") or {}).get("clusterIP") or ""
    return ip not in ("", "None")


def is_headless(svc: Obj) -> bool:
    return (svc.get("spec") or {}).get("clusterIP") == "None"


def service_selector(svc: Obj) -> Mapping[str, str] | None:
    """The selector the controllers act on, or None (no selector, or ExternalName)."""
    spec = svc.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return None
    sel = spec.get("selector")
    return sel if isinstance(sel, dict) and sel else None


def selector_matches(selector: Mapping[str, str], labels: Mapping[str, str] | None) -> bool:
    """A Service selector (a plain label set) against a pod's labels."""
    return selector.items() <= (labels or {}).items()


def _is_ipv6(ip: str) -> bool:
    return ":" in ip


def service_ip_family(svc: Obj, pod: Obj | None = None) -> str:
    """``podToEndpointAddressForService``'s family choice: ``ipFamilies[0]``; without it, the
    ClusterIP's family; for a headless Service without families, the pod IP's."""
    spec = svc.get("spec") or {}
    families = spec.get("ipFamilies") or ()
    if families:
        return families[0]
    ip = spec.get("clusterIP") or ""
    if ip and ip != "None":
        return "IPv6" if _is_ipv6(ip) else "IPv4"
    if pod is not None:
        ips = pod_ips(pod)
        if ips and _is_ipv6(ips[0]):
            return "IPv6"
    return "IPv4"


def pod_ip_for_family(pod: Obj, family: str) -> str | None:
    want_v6 = family == "IPv6"
    for ip in pod_ips(pod):
        if _is_ipv6(ip) == want_v6:
            return ip
    return None


def find_port(pod: Obj, svc_port: Obj) -> int | None:
    """``FindPort``: a numeric ``targetPort`` is used as is; a named one is looked up among the
    containers' ports with the same protocol (then among sidecar init containers); None when
    no container port matches."""
    target = svc_port.get("targetPort")
    if target is None or target == 0 or target == "":
        target = svc_port.get("port")
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    if isinstance(target, str):
        if target.isdigit():  # an IntOrString that arrived as a numeric string
            return int(target)
        protocol = svc_port.get("protocol") or "TCP"
        spec = pod.get("spec") or {}
        for container in spec.get("containers") or ():
            for port in container.get("ports") or ():
                if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                    return port.get("containerPort")
        for container in spec.get("initContainers") or ():
            if container.get("restartPolicy") != "Always":
                continue
            for port in container.get("ports") or ():
                if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                    return port.get("containerPort")
    return None


def resolved_ports(svc: Obj, pod: Obj) -> list[PortTuple]:
    """Every service port that resolves on this pod, as (name, port, protocol, appProtocol)."""
    out: list[PortTuple] = []
    for sp in (svc.get("spec") or {}).get("ports") or ():
        number = find_port(pod, sp)
        if number is None:
            continue
        out.append((sp.get("name") or "", number, sp.get("protocol") or "TCP", sp.get("appProtocol")))
    return out


def pod_endpoints_changed(old: Obj, new: Obj) -> tuple[bool, bool]:
    """``podEndpointsChanged``: (endpoint-relevant change, membership-relevant change)."""
    old_md, new_md = old.get("metadata") or {}, new.get("metadata") or {}
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    labels_changed = ((old_md.get("labels") or {}) != (new_md.get("labels") or {})
                      or old_spec.get("hostname") != new_spec.get("hostname")
                      or old_spec.get("subdomain") != new_spec.get("subdomain"))
    if old_md.get("deletionTimestamp") != new_md.get("deletionTimestamp"):
        return True, labels_changed
    if is_pod_ready(old) != is_pod_ready(new):
        return True, labels_changed
    if pod_ips(old) != pod_ips(new):
        return True, labels_changed
    # Beyond upstream (whose pods always reach the terminal phase through a kubelet that also
    # drops readiness): a phase change to Succeeded/Failed removes the pod from the endpoints.
    if is_pod_terminal(old) != is_pod_terminal(new):
        return True, labels_changed
    return False, labels_changed


# --------------------------------------------------------------------------------------------
# Endpoints (core/v1) subsets


def _target_ref(pod: Obj) -> Obj:
    md = pod["metadata"]
    return {"kind": "Pod", "namespace": md.get("namespace") or "", "name": md["name"], "uid": md.get("uid") or ""}


def endpoint_address(svc: Obj, pod: Obj) -> Obj | None:
    """``podToEndpointAddressForService`` plus the hostname rule; None when the pod has no IP
    of the Service's family."""
    ip = pod_ip_for_family(pod, service_ip_family(svc, pod))
    if ip is None:
        return None
    addr: Obj = {"ip": ip}
    if should_set_hostname(pod, svc):
        addr["hostname"] = pod["spec"]["hostname"]
    addr["nodeName"] = (pod.get("spec") or {}).get("nodeName") or ""
    addr["targetRef"] = _target_ref(pod)
    return addr


def _port_dict(port: PortTuple) -> Obj:
    name, number, protocol, app_protocol = port
    d: Obj = {"port": number, "protocol": protocol}
    if name:
        d = {"name": name, **d}
    if app_protocol:
        d["appProtocol"] = app_protocol
    return d


def _ip_sort_key(addr: Obj) -> tuple[bytes, str]:
    # LessEndpointAddress: the IP strings byte-wise, then the target's UID.
    return (addr.get("ip", "").encode(), ((addr.get("targetRef") or {}).get("uid") or ""))


def build_subsets(svc: Obj, pods: Iterable[Obj]) -> tuple[list[Obj], int, int]:
    """The Endpoints subsets for a Service and the pods its selector matches
    (``syncService`` + ``addEndpointSubset`` + ``RepackSubsets``); also the ready and
    not-ready counts (per address and port, as upstream counts them)."""
    publish_not_ready = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
    svc_ports = (svc.get("spec") or {}).get("ports") or ()
    # (ip, uid) -> address; port -> {(ip, uid): ready}
    addresses: dict[tuple[str, str], Obj] = {}
    by_port: dict[PortTuple | None, dict[tuple[str, str], bool]] = {}
    ready_count = not_ready_count = 0
    for pod in pods:
        if not should_pod_be_in_endpoints(pod, include_terminating=publish_not_ready):
            continue
        addr = endpoint_address(svc, pod)
        if addr is None:
            continue
        ready = publish_not_ready or is_pod_ready(pod)
        key = (addr["ip"], addr["targetRef"]["uid"])
        addresses.setdefault(key, addr)
        if not svc_ports:
            if not is_headless(svc):
                continue  # a ClusterIP Service without ports gets no endpoints
            ports: list[PortTuple | None] = [None]
        else:
            ports = list(resolved_ports(svc, pod))
        for port in ports:
            states = by_port.setdefault(port, {})
            # not ready always trumps ready (mapAddressByPort)
            states[key] = states.get(key, True) and ready
            if ready:
                ready_count += 1
            else:
                not_ready_count += 1
    # Group the ports by the identical address sets they map to.
    groups: dict[frozenset[tuple[tuple[str, str], bool]], list[PortTuple | None]] = {}
    for port, states in by_port.items():
        groups.setdefault(frozenset(states.items()), []).append(port)
    subsets: list[Obj] = []
    for group, ports in groups.items():
        ready_addrs = sorted((addresses[k] for k, r in group if r), key=_ip_sort_key)
        not_ready_addrs = sorted((addresses[k] for k, r in group if not r), key=_ip_sort_key)
        subset: Obj = {}
        if ready_addrs:
            subset["addresses"] = ready_addrs
        if not_ready_addrs:
            subset["notReadyAddresses"] = not_ready_addrs
        real_ports = sorted((p for p in ports if p is not None), key=lambda p: (p[0], p[1], p[2]))
        if real_ports:
            subset["ports"] = [_port_dict(p) for p in real_ports]
        subsets.append(subset)
    subsets.sort(key=_subset_sort_key)
    return subsets, ready_count, not_ready_count


def _subset_sort_key(subset: Obj) -> tuple[Any, ...]:
    first = (subset.get("addresses") or subset.get("notReadyAddresses") or [{}])[0]
    ports = tuple((p.get("name", ""), p["port"], p["protocol"]) for p in subset.get("ports") or ())
    return (_ip_sort_key(first), ports)


def _without_rv(value: Any) -> Any:
    """Subsets compared ignoring ``targetRef.resourceVersion`` (semanticIgnoreResourceVersion)."""
    if isinstance(value, dict):
        return {k: _without_rv(v) for k, v in value.items()
                if not (k == "resourceVersion" and "kind" in value and "uid" in value)}
    if isinstance(value, list):
        return [_without_rv(v) for v in value]
    return value


def subsets_equal(a: list[Obj] | None, b: list[Obj] | None) -> bool:
    return _without_rv(a or []) == _without_rv(b or [])


def truncate_subsets(subsets: list[Obj], max_capacity: int) -> bool:
    """``truncateEndpoints``: keep at most ``max_capacity`` addresses, ready ones first,
    proportionally per subset.  Changes ``subsets`` in place; True if it truncated."""
    total_ready = sum(len(s.get("addresses") or ()) for s in subsets)
    total_not_ready = sum(len(s.get("notReadyAddresses") or ()) for s in subsets)
    if total_ready + total_not_ready <= max_capacity:
        return False
    truncate_ready = total_ready > max_capacity
    limit = max_capacity if truncate_ready else max_capacity - total_ready
    num_total = total_ready if truncate_ready else total_not_ready
    can_be_added = limit
    for subset in subsets:
        field = "addresses" if truncate_ready else "notReadyAddresses"
        in_subset = len(subset.get(field) or ())
        to_add = min(-(-in_subset * limit // num_total) if num_total else 0, can_be_added)
        kept = (subset.get(field) or [])[:to_add]
        if kept:
            subset[field] = kept
        else:
            subset.pop(field, None)
        if truncate_ready:
            subset.pop("notReadyAddresses", None)
        can_be_added -= len(kept)
    subsets[:] = [s for s in subsets if s.get("addresses") or s.get("notReadyAddresses")]
    return True


# --------------------------------------------------------------------------------------------
# EndpointSlice (discovery.k8s.io/v1) endpoints


def slice_endpoint(svc: Obj, pod: Obj, address_type: str = "IPv4") -> Obj | None:
    """``podToEndpoint``: one endpoint with its conditions, or None without an IP of the type."""
    want_v6 = address_type == "IPv6"
    addresses = [ip for ip in pod_ips(pod) if _is_ipv6(ip) == want_v6]
    if not addresses:
        return None
    serving = is_pod_ready(pod)
    terminating = is_pod_terminating(pod)
    publish = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
    ep: Obj = {
        "addresses": addresses,
        "conditions": {"ready": publish or (serving and not terminating), "serving": serving,
                       "terminating": terminating},
    }
    if should_set_hostname(pod, svc):
        ep["hostname"] = pod["spec"]["hostname"]
    ep["targetRef"] = _target_ref(pod)
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        ep["nodeName"] = node
    return ep


def slice_ports(svc: Obj, pod: Obj) -> tuple[PortTuple, ...]:
    """``getEndpointPorts``, as a sorted tuple usable as a grouping key."""
    return tuple(sorted(resolved_ports(svc, pod), key=lambda p: (p[0], p[1], p[2])))


def slice_port_dicts(ports: Iterable[PortTuple]) -> list[Obj]:
    """EndpointSlice ports: ``name`` is always present (a pointer upstream, "" when unnamed)."""
    out = []
    for name, number, protocol, app_protocol in ports:
        d: Obj = {"name": name, "port": number, "protocol": protocol}
        if app_protocol:
            d["appProtocol"] = app_protocol
        out.append(d)
    return out


# --------------------------------------------------------------------------------------------
# Membership and trigger times


class ServiceMembership:
    """Service selectors per namespace: which Services select a pod."""

    def __init__(self) -> None:
        self._by_namespace: dict[str, dict[str, Mapping[str, str]]] = {}

    def set(self, svc: Obj) -> None:
        ns = svc["metadata"].get("namespace") or ""
        key = key_of(svc)
        selector = service_selector(svc)
        if selector is None:
            self.remove(svc)
            return
        self._by_namespace.setdefault(ns, {})[key] = selector

    def remove(self, svc: Obj) -> None:
        ns = svc["metadata"].get("namespace") or ""
        services = self._by_namespace.get(ns)
        if services is not None:
            services.pop(key_of(svc), None)
            if not services:
                del self._by_namespace[ns]

    def selector(self, key: str) -> Mapping[str, str] | None:
        ns = key.rpartition("/")[0]
        return self._by_namespace.get(ns, {}).get(key)

    def services_for(self, pod: Obj) -> builtins.set[str]:
        """``GetPodServiceMemberships``."""
        md = pod.get("metadata") or {}
        services = self._by_namespace.get(md.get("namespace") or "")
        if not services:
            return set()
        labels = md.get("labels") or {}
        return {key for key, sel in services.items() if selector_matches(sel, labels)}

    def services_to_update(self, old: Obj, new: Obj) -> builtins.set[str]:
        """``GetServicesToUpdateOnPodChange``."""
        md = new.get("metadata") or {}
        if not self._by_namespace.get(md.get("namespace") or ""):
            return set()  # no Service in the pod's namespace (a pod keeps its namespace): none to update
        old_rv = (old.get("metadata") or {}).get("resourceVersion")
        if old is new or (old_rv is not None and old_rv == md.get("resourceVersion")):
            return set()  # a resync re-delivers an unchanged pod
        pod_changed, labels_changed = pod_endpoints_changed(old, new)
        if not pod_changed and not labels_changed:
            return set()
        services = self.services_for(new)
        if labels_changed:
            old_services = self.services_for(old)
            if pod_changed:
                services |= old_services
            else:
                services ^= old_services
        return services


class TriggerTimeTracker:
    """``TriggerTimeTracker``: the ``last-change-trigger-time`` of an Endpoints object is the
    earliest change (a pod's Ready transition, the Service's creation) not yet reflected by an
    earlier sync of that Service."""

    def __init__(self) -> None:
        # service key -> (pod name -> (seconds, text), (seconds, text) of the service)
        self._states: dict[str, tuple[dict[str, tuple[float, str]], tuple[float, str] | None]] = {}

    @staticmethod
    def _parse(text: str | None) -> tuple[float, str] | None:
        if not text:
            return None
        try:
            return parse_rfc3339(text), text
        except ValueError:
            return None

    def compute(self, svc: Obj, pods: Iterable[Obj]) -> str | None:
        key = key_of(svc)
        old_pods, old_svc = self._states.get(key, ({}, None))
        new_pods: dict[str, tuple[float, str]] = {}
        earliest: tuple[float, str] | None = None
        for pod in pods:
            ready = pod_ready_condition(pod)
            t = self._parse(ready.get("lastTransitionTime")) if ready else None
            if t is None:
                continue
            name = pod["metadata"]["name"]
            new_pods[name] = t
            before = old_pods.get(name)
            if (before is None or t[0] > before[0]) and (earliest is None or t[0] < earliest[0]):
                earliest = t
        svc_time = self._parse(svc["metadata"].get("creationTimestamp"))
        if svc_time is not None and (old_svc is None or svc_time[0] > old_svc[0]):
            if earliest is None or svc_time[0] < earliest[0]:
                earliest = svc_time
        self._states[key] = (new_pods, svc_time)
        return earliest[1] if earliest is not None else None

    def delete(self, key: str) -> None:
        self._states.pop(key, None)


# --------------------------------------------------------------------------------------------
# The shared controller plumbing


namespace_terminating = is_namespace_terminating


class StaleCache(Exception):
    """The informer cache does not show this controller's own last writes yet: retry later."""


class ServicePodsController(ControllerLifecycle):
    """Informers, membership index, work queue and workers shared by the Endpoints and
    EndpointSlice controllers.  Subclasses implement :meth:`sync` (one Service key)."""

    queue_name = "service-pods"

    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock, workers: int = 2,
                 rate_limiter: RateLimiter | None = None) -> None:
        self.client = client
        self.clock = clock
        self.workers = workers
        self.informers = informers
        self.kit = ControllerKit(f"{self.queue_name} controller", informers=informers)
        ns_index = {NAMESPACE_INDEX: index_by_namespace}
        self.service_informer: Informer = self.kit.informer("services", indexers=ns_index)
        self.pod_informer: Informer = self.kit.informer("pods", indexers=ns_index)
        self.membership = ServiceMembership()
        self.triggers = TriggerTimeTracker()
        self.queue = self.kit.queue(self.queue_name, rate_limiter=rate_limiter)
        self.syncs = 0
        self.kit.watch(self.service_informer, on_add=self._service_added, on_update=self._service_updated,
                       on_delete=self._service_deleted)
        self.kit.watch(self.pod_informer, on_add=self._pod_added, on_update=self._pod_updated,
                       on_delete=self._pod_deleted)
        self.kit.workers(self.queue, self._process, count=workers, max_retries=MAX_RETRIES, on_error=self._failed)
        self.kit.on_synced(self._on_synced)

    # -- events ------------------------------------------------------------------------------

    def _service_added(self, svc: Obj) -> None:
        self.membership.set(svc)
        self.queue.add(key_of(svc))

    def _service_updated(self, old: Obj, new: Obj) -> None:
        self.membership.set(new)
        self.queue.add(key_of(new))

    def _service_deleted(self, svc: Obj) -> None:
        self.membership.remove(svc)
        self.queue.add(key_of(svc))

    def _pod_added(self, pod: Obj) -> None:
        for key in self.membership.services_for(pod):
            self.queue.add(key)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        for key in self.membership.services_to_update(old, new):
            self.queue.add(key)

    def _pod_deleted(self, pod: Obj) -> None:
        self._pod_added(pod)

    # -- cache reads ---------------------------------------------------------------------------

    def selected_pods(self, svc: Obj, selector: Mapping[str, str]) -> list[Obj]:
        """The cached pods of the Service's namespace that its selector matches."""
        ns = svc["metadata"].get("namespace") or ""
        return [p for p in self.pod_informer.by_index(NAMESPACE_INDEX, ns)
                if selector_matches(selector, (p.get("metadata") or {}).get("labels"))]

    # -- lifecycle (the kit's) -----------------------------------------------------------------

    def _on_synced(self) -> None:  # noqa: B027 - optional hook
        pass

    async def _process(self, key: str) -> None:
        self.syncs += 1
        await self.sync(key)

    def _failed(self, key: Any, exc: Exception, retried: bool) -> None:
        if retried:
            log.debug("%s: error syncing %s, retrying: %s", self.queue_name, key, exc)
        else:
            log.info("%s: dropping service %s out of the queue: %s", self.queue_name, key, exc)

    async def sync(self, key: str) -> None:
        raise NotImplementedError


__all__ = [
    "FIELD_MANAGER",
    "HEADLESS_LABEL",
    "LAST_CHANGE_TRIGGER_TIME",
    "OVER_CAPACITY",
    "SERVICE_NAME_LABEL",
    "SLICE_MANAGED_BY_LABEL",
    "ServiceMembership",
    "ServicePodsController",
    "StaleCache",
    "TriggerTimeTracker",
    "build_subsets",
    "endpoint_address",
    "find_port",
    "namespace_terminating",
    "pod_endpoints_changed",
    "resolved_ports",
    "selector_matches",
    "should_pod_be_in_endpoints",
    "should_set_hostname",
    "slice_endpoint",
    "slice_port_dicts",
    "slice_ports",
    "subsets_equal",
    "truncate_subsets",
]
