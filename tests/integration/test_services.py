"""Services for DaemonSet pods, through the real in-process API: the Endpoints and EndpointSlice
controllers follow pod readiness and deletion, and the cluster DNS server answers headless and
ClusterIP Services from the informer caches (the seed article's "Service" and "headless Service"
ways to reach DaemonSet pods).

The test plays the kubelet: it writes ``status.podIP`` and the Ready condition through
``pods/status`` and finishes graceful deletions with a zero grace period.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import dns.asyncquery
import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import pytest

from everynode.api.errors import ApiError
from everynode.apiserver.clusterip import ClusterIPAllocator, assign_cluster_ip
from everynode.apiserver.service import ApiService
from everynode.client.informer import SharedInformerFactory
from everynode.client.inprocess import InProcessClient
from everynode.clock import Clock
from everynode.controllers.endpoints import EndpointsController
from everynode.controllers.endpointslice import EndpointSliceController
from everynode.controllers.garbagecollector import GarbageCollector
from everynode.product.dns import DNSServer, Resolver
from everynode.storage.memory import MemoryStore
from tests.support.dig import dig_executable

Obj = dict[str, Any]
NS = "monitoring"
SLICES = "endpointslices.discovery.k8s.io"
EXPORTER_LABELS = {"app": "node-exporter"}


class Cluster:
    def __init__(self) -> None:
        self.clock = Clock()
        self.service = ApiService(MemoryStore(), clock=self.clock)
        self.client = InProcessClient(self.service)
        self.informers = SharedInformerFactory(self.client)
        self.allocator = ClusterIPAllocator()

    async def start(self) -> None:
        await self.service.start()
        await self.client.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})

    async def create_service(self, name: str, *, headless: bool, labels: Obj | None = None) -> Obj:
        body: Obj = {"apiVersion": "v1", "kind": "Service",
                     "metadata": {"name": name, "namespace": NS, "labels": labels or {}},
                     "spec": {"selector": dict(EXPORTER_LABELS),
                              "ports": [{"name": "metrics", "port": 9100, "targetPort": "metrics"}]}}
        if headless:
            body["spec"]["clusterIP"] = "None"
        # What the API server's Service admission does once wired (apiserver/clusterip.py).
        assign_cluster_ip(self.allocator, body)
        return await self.client.create("services", body)

    async def create_pod(self, name: str, *, ip: str | None, ready: bool, node: str = "worker-1",
                         labels: Obj | None = None) -> Obj:
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": NS, "labels": labels or dict(EXPORTER_LABELS)},
                "spec": {"nodeName": node, "containers": [{
                    "name": "node-exporter", "image": "quay.io/prometheus/node-exporter:v1.8.2",
                    "ports": [{"name": "metrics", "containerPort": 9100}]}]}}
        await self.client.create("pods", body)
        if ip is not None:
            await self.set_status(name, ip=ip, ready=ready)
        return await self.client.get("pods", name, namespace=NS)

    async def set_status(self, name: str, *, ip: str, ready: bool) -> None:
        status = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                  "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                  "lastTransitionTime": self.clock.rfc3339()}]}
        await self.client.patch("pods", name, {"status": status}, namespace=NS, patch_type="strategic",
                                subresource="status")

    async def delete_pod(self, name: str, *, grace: int | None = None) -> None:
        await self.client.delete("pods", name, namespace=NS, grace_period_seconds=grace)

    async def endpoints(self, name: str) -> Obj | None:
        try:
            return await self.client.get("endpoints", name, namespace=NS)
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise

    async def slices(self, service: str) -> list[Obj]:
        page = await self.client.list(SLICES, namespace=NS, label_selector=f"kubernetes.io/service-name={service}")
        return page["items"]


async def eventually(check: Callable[[], Any], *, what: str, attempts: int = 400) -> Any:
    """Poll an async check until it returns something truthy (the controllers work
    asynchronously, through watches).  Not a timing assertion: it only bounds the wait."""
    last = None
    for _ in range(attempts):
        last = await check()
        if last:
            return last
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what} (last: {last!r})")


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    c = Cluster()
    await c.start()
    yield c
    await c.informers.stop()


def ips(addresses: list[Obj] | None) -> list[str]:
    return [a["ip"] for a in addresses or ()]


async def test_endpoints_follow_readiness_and_deletion(cluster: Cluster) -> None:
    ctrl = EndpointsController(cluster.client, informers=cluster.informers, clock=cluster.clock)
    await ctrl.start()
    try:
        await cluster.create_service("node-exporter", headless=True, labels={"team": "infra"})
        await cluster.create_pod("ne-1", ip="10.244.1.5", ready=True, node="worker-1")
        await cluster.create_pod("ne-2", ip="10.244.2.5", ready=False, node="worker-2")
        await cluster.create_pod("ne-3", ip=None, ready=False, node="worker-3")  # no IP yet
        await cluster.create_pod("other", ip="10.244.1.9", ready=True, labels={"app": "other"})

        async def state() -> tuple[list[str], list[str]] | None:
            ep = await cluster.endpoints("node-exporter")
            if ep is None or not ep.get("subsets"):
                return None
            subset = ep["subsets"][0]
            return ips(subset.get("addresses")), ips(subset.get("notReadyAddresses"))

        assert await eventually(state, what="endpoints created") == (["10.244.1.5"], ["10.244.2.5"])
        ep = await cluster.endpoints("node-exporter")
        assert len(ep["subsets"]) == 1
        assert ep["subsets"][0]["ports"] == [{"name": "metrics", "port": 9100, "protocol": "TCP"}]
        first = ep["subsets"][0]["addresses"][0]
        pod1 = await cluster.client.get("pods", "ne-1", namespace=NS)
        assert first == {"ip": "10.244.1.5", "nodeName": "worker-1",
                         "targetRef": {"kind": "Pod", "namespace": NS, "name": "ne-1",
                                       "uid": pod1["metadata"]["uid"]}}
        assert ep["metadata"]["labels"] == {"team": "infra", "service.kubernetes.io/headless": "",
                                            "endpoints.kubernetes.io/managed-by": "endpoint-controller"}
        assert "endpoints.kubernetes.io/last-change-trigger-time" in ep["metadata"]["annotations"]

        # readiness: ne-2 becomes ready, ne-3 gets an IP (not ready yet)
        await cluster.set_status("ne-2", ip="10.244.2.5", ready=True)
        await cluster.set_status("ne-3", ip="10.244.3.5", ready=False)

        async def moved() -> tuple | None:
            s = await state()
            return s if s == (["10.244.1.5", "10.244.2.5"], ["10.244.3.5"]) else None

        await eventually(moved, what="readiness followed")

        # an irrelevant pod change writes nothing
        await ctrl.wait_idle()
        writes = ctrl.writes
        await cluster.client.patch("pods", "ne-1", {"metadata": {"annotations": {"touched": "yes"}}}, namespace=NS)
        await ctrl.wait_idle()
        assert ctrl.writes == writes

        # graceful deletion: a terminating pod leaves the Endpoints at once
        await cluster.delete_pod("ne-1")
        terminating = await cluster.client.get("pods", "ne-1", namespace=NS)
        assert terminating["metadata"].get("deletionTimestamp")

        async def without_ne1() -> tuple | None:
            s = await state()
            return s if s == (["10.244.2.5"], ["10.244.3.5"]) else None

        await eventually(without_ne1, what="terminating pod removed")
        await cluster.delete_pod("ne-1", grace=0)
        await cluster.delete_pod("ne-3", grace=0)

        async def only_ne2() -> tuple | None:
            s = await state()
            return s if s == (["10.244.2.5"], []) else None

        await eventually(only_ne2, what="deleted pod removed")

        # the Service goes: so do its Endpoints
        await cluster.client.delete("services", "node-exporter", namespace=NS)

        async def gone() -> bool:
            return await cluster.endpoints("node-exporter") is None

        await eventually(gone, what="endpoints deleted with the service")
    finally:
        await ctrl.stop()


async def test_endpointslices_follow_readiness_and_deletion(cluster: Cluster) -> None:
    ctrl = EndpointSliceController(cluster.client, informers=cluster.informers, clock=cluster.clock,
                                   max_endpoints_per_slice=3)
    await ctrl.start()
    try:
        svc = await cluster.create_service("node-exporter", headless=True)

        # no pods yet: one empty placeholder slice
        async def placeholder() -> list[Obj] | None:
            slices = await cluster.slices("node-exporter")
            return slices if len(slices) == 1 and not slices[0].get("endpoints") else None

        (empty,) = await eventually(placeholder, what="placeholder slice")
        name = empty["metadata"]["name"]
        assert name.startswith("node-exporter-") and len(name) == len("node-exporter-") + 5
        assert empty["metadata"]["labels"] == {"kubernetes.io/service-name": "node-exporter",
                                               "endpointslice.kubernetes.io/managed-by":
                                                   "endpointslice-controller.k8s.io",
                                               "service.kubernetes.io/headless": ""}
        assert empty["metadata"]["ownerReferences"] == [{
            "apiVersion": "v1", "kind": "Service", "name": "node-exporter", "uid": svc["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]
        assert empty["addressType"] == "IPv4"

        await cluster.create_pod("ne-1", ip="10.244.1.5", ready=True, node="worker-1")
        await cluster.create_pod("ne-2", ip="10.244.2.5", ready=False, node="worker-2")

        def conditions(slices: list[Obj]) -> dict[str, tuple[bool, bool, bool]]:
            out = {}
            for s in slices:
                for e in s.get("endpoints") or ():
                    c = e["conditions"]
                    out[e["targetRef"]["name"]] = (c["ready"], c["serving"], c["terminating"])
            return out

        async def two() -> list[Obj] | None:
            slices = await cluster.slices("node-exporter")
            want = {"ne-1": (True, True, False), "ne-2": (False, False, False)}
            return slices if conditions(slices) == want else None

        slices = await eventually(two, what="two endpoints")
        assert [s["metadata"]["name"] for s in slices] == [name]  # the placeholder was filled in place
        (slice_,) = slices
        assert slice_["ports"] == [{"name": "metrics", "port": 9100, "protocol": "TCP"}]
        ep1 = next(e for e in slice_["endpoints"] if e["targetRef"]["name"] == "ne-1")
        assert ep1["addresses"] == ["10.244.1.5"] and ep1["nodeName"] == "worker-1"

        await cluster.set_status("ne-2", ip="10.244.2.5", ready=True)

        async def ready() -> list[Obj] | None:
            slices = await cluster.slices("node-exporter")
            ok = conditions(slices) == {"ne-1": (True, True, False), "ne-2": (True, True, False)}
            return slices if ok else None

        assert [s["metadata"]["name"] for s in await eventually(ready, what="ne-2 ready")] == [name]

        # terminating pods stay listed as terminating, then go
        await cluster.delete_pod("ne-1")

        async def terminating() -> bool:
            slices = await cluster.slices("node-exporter")
            return conditions(slices).get("ne-1") == (False, True, True)

        await eventually(terminating, what="ne-1 terminating")
        await cluster.delete_pod("ne-1", grace=0)

        async def deleted() -> bool:
            return set(conditions(await cluster.slices("node-exporter"))) == {"ne-2"}

        await eventually(deleted, what="ne-1 gone")

        # more endpoints than fit in one slice (max 3 here): more slices
        for i in range(3, 9):
            await cluster.create_pod(f"ne-{i}", ip=f"10.244.{i}.5", ready=True, node=f"worker-{i}")

        async def spread() -> list[Obj] | None:
            slices = await cluster.slices("node-exporter")
            return slices if len(conditions(slices)) == 7 else None

        slices = await eventually(spread, what="seven endpoints")
        assert all(len(s["endpoints"]) <= 3 for s in slices)
        assert len(slices) == 3
        await ctrl.wait_idle()
        writes = ctrl.writes
        await ctrl.wait_idle()
        assert ctrl.writes == writes
        assert len(await cluster.slices("node-exporter")) == 3  # no duplicate slices from a stale cache

        # the Service goes: its slices go with it, through their owner reference (GC)
        gc = GarbageCollector(cluster.client, informers=cluster.informers, clock=cluster.clock)
        await gc.start()
        try:
            await cluster.client.delete("services", "node-exporter", namespace=NS)

            async def no_slices() -> bool:
                return not await cluster.slices("node-exporter")

            await eventually(no_slices, what="slices garbage-collected")
        finally:
            await gc.stop()
    finally:
        await ctrl.stop()


async def _query(port: int, name: str, rdtype: str = "A") -> dns.message.Message:
    return await dns.asyncquery.udp(dns.message.make_query(name, rdtype), "127.0.0.1", port=port, timeout=2)


def _answer_ips(response: dns.message.Message) -> list[str]:
    return sorted(rd.address for rrset in response.answer for rd in rrset
                  if rrset.rdtype in (dns.rdatatype.A, dns.rdatatype.AAAA))


@pytest.fixture(params=["endpointslices", "endpoints"])
async def dns_cluster(request: pytest.FixtureRequest, cluster: Cluster) -> AsyncIterator[tuple[Cluster, DNSServer]]:
    """The DNS server reading EndpointSlices (as CoreDNS does today) or Endpoints objects."""
    use_slices = request.param == "endpointslices"
    controller_cls = EndpointSliceController if use_slices else EndpointsController
    controller = controller_cls(cluster.client, informers=cluster.informers, clock=cluster.clock)
    server = DNSServer.from_informers(cluster.informers, port=0, use_endpoint_slices=use_slices)
    await controller.start()  # starts the factory's informers, the DNS server's included
    await server.start()
    try:
        yield cluster, server
    finally:
        await server.stop()
        await controller.stop()


async def test_dns_answers_headless_and_cluster_ip_services(dns_cluster: tuple[Cluster, DNSServer]) -> None:
    cluster, server = dns_cluster
    await cluster.create_service("node-exporter", headless=True)
    web = await cluster.create_service("node-exporter-lb", headless=False)
    await cluster.create_pod("ne-1", ip="10.244.1.5", ready=True, node="worker-1")
    await cluster.create_pod("ne-2", ip="10.244.2.5", ready=True, node="worker-2")
    await cluster.create_pod("ne-3", ip="10.244.3.5", ready=False, node="worker-3")
    headless = "node-exporter.monitoring.svc.cluster.local"

    async def resolved() -> list[str] | None:
        got = _answer_ips(await _query(server.port, headless))
        return got if got == ["10.244.1.5", "10.244.2.5"] else None

    # A for the headless Service: the ready pods' IPs (ne-3 is not ready)
    await eventually(resolved, what="headless A records")
    response = await _query(server.port, headless)
    assert response.rcode() == dns.rcode.NOERROR and response.flags & dns.flags.AA
    assert all(rrset.ttl == 5 for rrset in response.answer)

    # A for the ClusterIP Service: the allocated ClusterIP
    cluster_ip = web["spec"]["clusterIP"]
    assert cluster_ip != "None"
    response = await _query(server.port, "node-exporter-lb.monitoring.svc.cluster.local")
    assert _answer_ips(response) == [cluster_ip]

    # SRV per endpoint for the named port
    response = await _query(server.port, f"_metrics._tcp.{headless}", "SRV")
    targets = sorted((rd.port, rd.target.to_text()) for rrset in response.answer for rd in rrset)
    assert targets == [(9100, f"10-244-1-5.{headless}."), (9100, f"10-244-2-5.{headless}.")]

    # readiness follows: ne-3 becomes ready and appears
    await cluster.set_status("ne-3", ip="10.244.3.5", ready=True)

    async def three() -> bool:
        return _answer_ips(await _query(server.port, headless)) == ["10.244.1.5", "10.244.2.5", "10.244.3.5"]

    await eventually(three, what="ne-3 in DNS")

    # unknown names: NXDOMAIN
    for name in ("nothing.monitoring.svc.cluster.local", "node-exporter.elsewhere.svc.cluster.local",
                 "x.y.z.cluster.local"):
        assert (await _query(server.port, name)).rcode() == dns.rcode.NXDOMAIN, name

    # TCP answers the same
    tcp = await dns.asyncquery.tcp(dns.message.make_query(headless, "A"), "127.0.0.1", port=server.port, timeout=2)
    assert _answer_ips(tcp) == ["10.244.1.5", "10.244.2.5", "10.244.3.5"]


async def test_dig_resolves_the_headless_service(dns_cluster: tuple[Cluster, DNSServer], tmp_path: Path) -> None:
    cluster, server = dns_cluster
    await cluster.create_service("node-exporter", headless=True)
    await cluster.create_pod("ne-1", ip="10.244.1.5", ready=True)
    name = "node-exporter.monitoring.svc.cluster.local"

    async def dig() -> str | None:
        proc = await asyncio.create_subprocess_exec(
            dig_executable(tmp_path / "bin"), "@127.0.0.1", "-p", str(server.port), name, "+short",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate()
        text = out.decode().strip()
        return text if text == "10.244.1.5" else None

    assert await eventually(dig, what="dig answer", attempts=100) == "10.244.1.5"


# --- the resolver's other answers, without sockets or controllers ------------------------------


def _resolve(name: str, rdtype: str = "A") -> dns.message.Message:
    services = {
        ("default", "ext"): {"spec": {"type": "ExternalName", "externalName": "example.com"}},
        ("default", "empty"): {"spec": {"clusterIP": "None"}},
        ("default", "web"): {"spec": {"clusterIP": "10.96.5.5", "clusterIPs": ["10.96.5.5"],
                                      "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}},
    }
    resolver = Resolver(services_source=lambda ns, n: services.get((ns, n)), endpoints_source=lambda ns, n: [],
                        namespace_source=lambda ns: ns == "default")
    return resolver.answer(dns.message.make_query(name, rdtype))


@pytest.mark.parametrize(("name", "rdtype", "rcode", "answer"), [
    ("ext.default.svc.cluster.local", "A", dns.rcode.NOERROR, ["example.com."]),          # CNAME
    ("empty.default.svc.cluster.local", "A", dns.rcode.NXDOMAIN, []),  # headless, no endpoints
    ("web.default.svc.cluster.local", "AAAA", dns.rcode.NOERROR, []),  # NODATA
    ("_http._tcp.web.default.svc.cluster.local", "A", dns.rcode.NOERROR, ["10.96.5.5"]),
    ("_grpc._tcp.web.default.svc.cluster.local", "SRV", dns.rcode.NXDOMAIN, []),
    ("10-1-2-3.default.pod.cluster.local", "A", dns.rcode.NOERROR, ["10.1.2.3"]),
    ("10-1-2-3.nowhere.pod.cluster.local", "A", dns.rcode.NXDOMAIN, []),
    ("default.svc.cluster.local", "A", dns.rcode.NOERROR, []),
    ("dns-version.cluster.local", "TXT", dns.rcode.NOERROR, ['"1.1.0"']),
    ("example.org", "A", dns.rcode.REFUSED, []),
])
def test_resolver_answers(name: str, rdtype: str, rcode: int, answer: list[str]) -> None:
    response = _resolve(name, rdtype)
    assert response.rcode() == rcode
    assert [rd.to_text() for rrset in response.answer for rd in rrset] == answer
    if rcode != dns.rcode.REFUSED and not answer:
        assert response.authority and response.authority[0].rdtype == dns.rdatatype.SOA
