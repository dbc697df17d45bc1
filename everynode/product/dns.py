"""A small cluster DNS server: Service and Pod names answered from the informer caches.

It implements what the article's fourth pattern needs — a headless Service answered by DNS with
the addresses of every DaemonSet pod — and the rest of the Kubernetes DNS specification that a
client of ``everynode up`` is likely to query, answering the way CoreDNS's ``kubernetes``
plugin does (``plugin/kubernetes/kubernetes.go``: ``findServices``, ``findPods``,
``endpointHostname``; the schema is kubernetes/dns ``docs/specification.md``):

* ``<svc>.<ns>.svc.<zone>`` A: the ClusterIP; for a headless Service (``clusterIP: None``) the
  ready endpoint addresses (NXDOMAIN while it has none); an ExternalName Service: a CNAME.
* ``<host>.<svc>.<ns>.svc.<zone>`` A: one endpoint of a headless Service, by its ``hostname``
  or, without one, its dashed IP (``10-244-1-5``).
* ``_<port>._<proto>.<svc>.<ns>.svc.<zone>`` SRV (and SRV on the bare Service name for all its
  ports): target ``<svc>.<ns>.svc.<zone>`` for a ClusterIP Service, one target per endpoint for a
  headless one; the targets' A records in the additional section; weights split 100 evenly.
* ``a-b-c-d.<ns>.pod.<zone>`` A: ``a.b.c.d`` (CoreDNS ``pods insecure``, kubeadm's default).
* ``dns-version.<zone>`` TXT ``1.1.0``; SOA and NS at the zone apex.
* Unknown names in the zone: NXDOMAIN; known names without records of the asked type: NOERROR
  with no answer (NODATA); both with the SOA in the authority section.  Names outside the zone:
  REFUSED (there is no upstream to forward to).  TTL 5 everywhere (CoreDNS's default).

Design: the wire format is dnspython's (parsing, name compression, EDNS, truncation) — DNS
encoding is not something to write by hand.  The server itself is an asyncio datagram endpoint
plus a TCP listener on the same port (clients retry over TCP when a UDP answer is truncated).
It never calls the API: the two sources are plain callables reading informer caches, so a query
costs a dict lookup and the server runs on the control plane's event loop without I/O of its own.
:meth:`DNSServer.from_informers` wires them to a ``SharedInformerFactory`` (Services plus
EndpointSlices, as current CoreDNS reads; Endpoints objects work too).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import struct
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdatatype
import dns.rrset

log = logging.getLogger(__name__)

Obj = dict[str, Any]

TTL = 5
DNS_SCHEMA_VERSION = "1.1.0"
_UDP_DEFAULT_SIZE = 512
_OUR_PAYLOAD = 1232  # the EDNS buffer size DNS Flag Day 2020 recommends


@dataclass(frozen=True, slots=True)
class DNSEndpoint:
    """One ready endpoint of a Service as DNS needs it."""

    ip: str
    hostname: str | None = None
    ports: tuple[tuple[str, str, int], ...] = ()  # (name, protocol, port)

    @property
    def label(self) -> str:
        """``endpointHostname``: the hostname, else the IP with dashes."""
        if self.hostname:
            return self.hostname
        return self.ip.replace(".", "-").replace(":", "-")


ServicesSource = Callable[[str, str], Obj | None]
EndpointsSource = Callable[[str, str], Iterable[DNSEndpoint]]
NamespaceSource = Callable[[str], bool]


# --------------------------------------------------------------------------------------------
# Sources backed by informer caches


def services_from_informer(informer: Any) -> ServicesSource:
    """Service lookups in a Service informer's cache."""
    return lambda namespace, name: informer.get_by_name(namespace, name)


def endpoints_from_endpoints_informer(informer: Any) -> EndpointsSource:
    """Ready addresses (``subsets[].addresses``) of core/v1 Endpoints objects."""

    def lookup(namespace: str, name: str) -> list[DNSEndpoint]:
        ep = informer.get_by_name(namespace, name)
        if ep is None:
            return []
        merged: dict[tuple[str, str | None], list[tuple[str, str, int]]] = {}
        for subset in ep.get("subsets") or ():
            ports = [(p.get("name") or "", p.get("protocol") or "TCP", p.get("port"))
                     for p in subset.get("ports") or ()]
            for addr in subset.get("addresses") or ():
                merged.setdefault((addr.get("ip", ""), addr.get("hostname") or None), []).extend(ports)
        return [DNSEndpoint(ip, host, tuple(ports)) for (ip, host), ports in merged.items()]

    return lookup


_SLICE_INDEX = "dns-service"


def _index_slice_by_service(eps: Obj) -> list[str]:
    md = eps.get("metadata") or {}
    svc = (md.get("labels") or {}).get("kubernetes.io/service-name")
    return [f"{md.get('namespace') or ''}/{svc}"] if svc else []


def endpoints_from_slice_informer(informer: Any) -> EndpointsSource:
    """Ready endpoints of the EndpointSlices labelled with the Service's name (all managers,
    like CoreDNS).  Adds an index to the informer."""
    informer.add_indexers({_SLICE_INDEX: _index_slice_by_service})

    def lookup(namespace: str, name: str) -> list[DNSEndpoint]:
        out: list[DNSEndpoint] = []
        seen: set[tuple[str, str | None]] = set()
        for eps in informer.by_index(_SLICE_INDEX, f"{namespace}/{name}"):
            ports = tuple((p.get("name") or "", p.get("protocol") or "TCP", p.get("port"))
                          for p in eps.get("ports") or () if p.get("port") is not None)
            for ep in eps.get("endpoints") or ():
                if (ep.get("conditions") or {}).get("ready") is False:
                    continue
                for ip in ep.get("addresses") or ():
                    ident = (ip, ep.get("hostname"))
                    if ident not in seen:
                        seen.add(ident)
                        out.append(DNSEndpoint(ip, ep.get("hostname") or None, ports))
        return out

    return lookup


# --------------------------------------------------------------------------------------------
# Answering


@dataclass(frozen=True, slots=True)
class _Record:
    host: str  # an IP, or a domain for ExternalName
    port: int | None
    target: dns.name.Name  # the name SRV records point at


class _NoSuchName(Exception):
    pass


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


class Resolver:
    """The pure part: a question in, the response sections out (no sockets)."""

    def __init__(self, *, services_source: ServicesSource, endpoints_source: EndpointsSource,
                 domain: str = "cluster.local", namespace_source: NamespaceSource | None = None) -> None:
        self.services = services_source
        self.endpoints = endpoints_source
        self.namespace_exists = namespace_source or (lambda ns: True)
        self.zone = dns.name.from_text(domain.strip(".") + ".")
        self.serial = int(time.time()) & 0xFFFFFFFF

    def soa(self) -> dns.rrset.RRset:
        zone = self.zone.to_text()
        return dns.rrset.from_text(self.zone, TTL, "IN", "SOA",
                                   f"ns.dns.{zone} hostmaster.{zone} {self.serial} 7200 1800 86400 {TTL}")

    def answer(self, query: dns.message.Message) -> dns.message.Message:
        response = dns.message.make_response(query, our_payload=_OUR_PAYLOAD)
        if query.opcode() != dns.opcode.QUERY:
            response.set_rcode(dns.rcode.NOTIMP)
            return response
        if len(query.question) != 1:
            response.set_rcode(dns.rcode.FORMERR)
            return response
        question = query.question[0]
        qname, qtype = question.name, question.rdtype
        if not qname.is_subdomain(self.zone):
            response.set_rcode(dns.rcode.REFUSED)
            return response
        response.flags |= dns.flags.AA
        try:
            self._fill(response, qname, qtype)
        except _NoSuchName:
            response.answer.clear()
            response.additional.clear()
            response.set_rcode(dns.rcode.NXDOMAIN)
        if not response.answer:
            response.authority.append(self.soa())
        return response

    # -- name → records ------------------------------------------------------------------------

    def _fill(self, response: dns.message.Message, qname: dns.name.Name, qtype: int) -> None:
        labels = [lbl.decode("ascii", "replace").lower() for lbl in qname.relativize(self.zone).labels]
        if not labels or labels == ["@"]:
            self._apex(response, qname, qtype)
            return
        if labels == ["dns-version"]:
            if qtype in (dns.rdatatype.TXT, dns.rdatatype.ANY):
                response.answer.append(dns.rrset.from_text(qname, TTL, "IN", "TXT", f'"{DNS_SCHEMA_VERSION}"'))
            return
        kind = labels[-1]
        if kind == "svc":
            records = self._service_records(labels[:-1])
        elif kind == "pod":
            records = self._pod_records(labels[:-1])
        else:
            raise _NoSuchName
        if records is None:
            return  # NODATA
        self._emit(response, qname, qtype, records)

    def _apex(self, response: dns.message.Message, qname: dns.name.Name, qtype: int) -> None:
        if qtype in (dns.rdatatype.SOA, dns.rdatatype.ANY):
            response.answer.append(self.soa())
        if qtype in (dns.rdatatype.NS, dns.rdatatype.ANY):
            response.answer.append(dns.rrset.from_text(qname, TTL, "IN", "NS", f"ns.dns.{self.zone.to_text()}"))

    def _svc_name(self, namespace: str, service: str, endpoint: str | None = None) -> dns.name.Name:
        labels = ([endpoint] if endpoint else []) + [service, namespace, "svc"]
        return dns.name.Name([lbl.encode() for lbl in labels]).derelativize(self.zone)

    def _service_records(self, labels: list[str]) -> list[_Record] | None:
        # parseRequest: [endpoint | _port, _proto] . service . namespace
        if len(labels) in (0, 1):
            if labels and not self.namespace_exists(labels[0]):
                raise _NoSuchName
            return None
        endpoint = port = protocol = None
        if len(labels) == 2:
            service, namespace = labels
        elif len(labels) == 3:
            endpoint, service, namespace = labels
        elif len(labels) == 4:
            port, protocol, service, namespace = labels
            port, protocol = port.removeprefix("_"), protocol.removeprefix("_")
        else:
            raise _NoSuchName
        svc = self.services(namespace, service)
        if svc is None:
            raise _NoSuchName
        spec = svc.get("spec") or {}
        if spec.get("type") == "ExternalName":
            if endpoint or port or protocol or not spec.get("externalName"):
                raise _NoSuchName
            target = dns.name.from_text(spec["externalName"].rstrip(".") + ".")
            return [_Record(spec["externalName"], None, target)]

        def port_ok(name: str, proto: str) -> bool:
            return ((port is None or port == name.lower())
                    and (protocol is None or protocol == proto.lower()))

        records: list[_Record] = []
        if spec.get("clusterIP") == "None" or endpoint:
            for ep in self.endpoints(namespace, service):
                if endpoint and endpoint != ep.label.lower():
                    continue
                target = self._svc_name(namespace, service, ep.label)
                if not ep.ports and port is None and protocol is None:
                    records.append(_Record(ep.ip, None, target))  # headless without ports
                for name, proto, number in ep.ports:
                    if port_ok(name, proto):
                        records.append(_Record(ep.ip, number, target))
        else:
            target = self._svc_name(namespace, service)
            ips = [ip for ip in spec.get("clusterIPs") or [spec.get("clusterIP")] if ip and _is_ip(ip)]
            for sp in spec.get("ports") or ():
                if port_ok(sp.get("name") or "", sp.get("protocol") or "TCP"):
                    records.extend(_Record(ip, sp.get("port"), target) for ip in ips)
        if not records:
            raise _NoSuchName
        return records

    def _pod_records(self, labels: list[str]) -> list[_Record] | None:
        if len(labels) == 1:
            if not self.namespace_exists(labels[0]):
                raise _NoSuchName
            return None
        if len(labels) != 2:
            raise _NoSuchName
        dashed, namespace = labels
        if not self.namespace_exists(namespace):
            raise _NoSuchName
        if dashed.count("-") == 3 and "--" not in dashed:
            ip = dashed.replace("-", ".")
        else:
            ip = dashed.replace("-", ":")
        if not _is_ip(ip):
            raise _NoSuchName
        return [_Record(ip, None, dns.name.empty)]

    def _emit(self, response: dns.message.Message, qname: dns.name.Name, qtype: int,
              records: list[_Record]) -> None:
        any_type = qtype == dns.rdatatype.ANY
        external = [r for r in records if not _is_ip(r.host)]
        if external:
            if qtype in (dns.rdatatype.CNAME, dns.rdatatype.A, dns.rdatatype.AAAA) or any_type:
                response.answer.append(dns.rrset.from_text(qname, TTL, "IN", "CNAME", external[0].target.to_text()))
            return
        for rdtype, version in ((dns.rdatatype.A, 4), (dns.rdatatype.AAAA, 6)):
            if qtype == rdtype or any_type:
                ips = list(dict.fromkeys(r.host for r in records if ipaddress.ip_address(r.host).version == version))
                if ips:
                    response.answer.append(dns.rrset.from_text_list(qname, TTL, "IN", rdtype, ips))
        if qtype == dns.rdatatype.SRV or any_type:
            srv = list(dict.fromkeys((r.target, r.port, r.host) for r in records if r.port is not None))
            if srv:
                weight = max(1, 100 // len(srv))
                texts = list(dict.fromkeys(f"0 {weight} {port} {target.to_text()}" for target, port, _ in srv))
                response.answer.append(dns.rrset.from_text_list(qname, TTL, "IN", "SRV", texts))
                extra: dict[tuple[dns.name.Name, int], list[str]] = {}
                for target, _port, host in srv:
                    version = ipaddress.ip_address(host).version
                    hosts = extra.setdefault((target, version), [])
                    if host not in hosts:
                        hosts.append(host)
                for (target, version), hosts in extra.items():
                    rdtype = dns.rdatatype.A if version == 4 else dns.rdatatype.AAAA
                    response.additional.append(dns.rrset.from_text_list(target, TTL, "IN", rdtype, hosts))


# --------------------------------------------------------------------------------------------
# The server


def _formerr(data: bytes) -> bytes | None:
    """A FORMERR answer for a packet dnspython cannot parse (None if not even a header)."""
    if len(data) < 12:
        return None
    qid, flags = struct.unpack("!HH", data[:4])
    opcode = flags & 0x7800
    return struct.pack("!HHHHHH", qid, 0x8000 | opcode | dns.rcode.FORMERR, 0, 0, 0, 0)


class _UDPProtocol(asyncio.DatagramProtocol):
    def __init__(self, server: DNSServer) -> None:
        self.server = server
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)  # a datagram endpoint's transport

    def datagram_received(self, data: bytes, addr: Any) -> None:
        reply = self.server.handle(data, tcp=False)
        if reply is not None and self.transport is not None:
            self.transport.sendto(reply, addr)

    def error_received(self, exc: Exception) -> None:  # pragma: no cover - OS-level hiccups
        log.debug("dns udp error: %s", exc)


class DNSServer:
    """Cluster DNS on UDP and TCP.  ``port=0`` picks a free port; read :attr:`port` after
    :meth:`start`."""

    def __init__(self, *, endpoints_source: EndpointsSource, services_source: ServicesSource,
                 host: str = "127.0.0.1", port: int = 0, domain: str = "cluster.local",
                 namespace_source: NamespaceSource | None = None, tcp: bool = True) -> None:
        self.resolver = Resolver(services_source=services_source, endpoints_source=endpoints_source,
                                 domain=domain, namespace_source=namespace_source)
        self.host = host
        self.port = port
        self.tcp = tcp
        self.queries = 0
        self._udp: asyncio.DatagramTransport | None = None
        self._tcp: asyncio.base_events.Server | None = None
        self._connections: dict[asyncio.StreamWriter, asyncio.Task[Any] | None] = {}
        self._factory: Any = None
        self._informers: list[Any] = []

    @classmethod
    def from_informers(cls, informers: Any, *, use_endpoint_slices: bool = True, **kwargs: Any) -> DNSServer:
        """Sources wired to a ``SharedInformerFactory`` (Services + EndpointSlices or Endpoints,
        Namespaces).  :meth:`start` then starts the factory's informers and waits for these
        caches, so the first answers are not NXDOMAIN for lack of data."""
        services = informers.informer("services")
        namespaces = informers.informer("namespaces")
        if use_endpoint_slices:
            endpoints = endpoints_from_slice_informer(informers.informer("endpointslices.discovery.k8s.io"))
        else:
            endpoints = endpoints_from_endpoints_informer(informers.informer("endpoints"))

        def namespace_exists(name: str) -> bool:
            return not namespaces.has_synced or namespaces.get(name) is not None

        server = cls(services_source=services_from_informer(services), endpoints_source=endpoints,
                     namespace_source=namespace_exists, **kwargs)
        server._factory = informers
        server._informers = [services, namespaces,
                             informers.informer("endpointslices.discovery.k8s.io" if use_endpoint_slices
                                                else "endpoints")]
        return server

    # -- one message ---------------------------------------------------------------------------

    def handle(self, data: bytes, *, tcp: bool) -> bytes | None:
        self.queries += 1
        try:
            query = dns.message.from_wire(data)
        except Exception:  # noqa: BLE001 - any malformed packet
            return _formerr(data)
        if query.flags & dns.flags.QR:
            return None  # a response, not a query: never answer those
        try:
            response = self.resolver.answer(query)
        except Exception:  # pragma: no cover - a bug must not kill the server
            log.exception("dns: failed to answer %s", query.question)
            response = dns.message.make_response(query)
            response.set_rcode(dns.rcode.SERVFAIL)
        if tcp:
            return response.to_wire(max_size=65535)
        size = _UDP_DEFAULT_SIZE
        if query.edns >= 0:
            size = max(_UDP_DEFAULT_SIZE, min(query.payload, _OUR_PAYLOAD))
        try:
            return response.to_wire(max_size=size, prefer_truncation=True)
        except dns.exception.TooBig:  # pragma: no cover - even the header section does not fit
            response.answer.clear()
            response.additional.clear()
            response.flags |= dns.flags.TC
            return response.to_wire(max_size=size)

    # -- TCP -----------------------------------------------------------------------------------

    async def _serve_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._connections[writer] = task
        try:
            while True:
                try:
                    head = await reader.readexactly(2)
                    (length,) = struct.unpack("!H", head)
                    data = await reader.readexactly(length)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                reply = self.handle(data, tcp=True)
                if reply is None:
                    return
                writer.write(struct.pack("!H", len(reply)) + reply)
                await writer.drain()
        finally:
            self._connections.pop(writer, None)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        if self._factory is not None:
            self._factory.start()
            await asyncio.gather(*(inf.wait_synced() for inf in self._informers))
        loop = asyncio.get_running_loop()
        attempts = 5 if self.port == 0 else 1
        for attempt in range(attempts):
            transport, _ = await loop.create_datagram_endpoint(lambda: _UDPProtocol(self),
                                                               local_addr=(self.host, self.port))
            port = transport.get_extra_info("sockname")[1]
            if not self.tcp:
                break
            try:
                self._tcp = await asyncio.start_server(self._serve_tcp, self.host, port)
                break
            except OSError:
                transport.close()
                if attempt == attempts - 1:
                    raise
        self._udp = transport
        self.port = port
        log.info("cluster DNS listening on %s:%d (zone %s)", self.host, self.port, self.resolver.zone)

    async def stop(self) -> None:
        if self._udp is not None:
            self._udp.close()
            self._udp = None
        if self._tcp is not None:
            self._tcp.close()
            connections = list(self._connections.items())
            for writer, _task in connections:  # idle keep-alive clients: end their reads
                writer.transport.abort()
            await asyncio.gather(*(t for _w, t in connections if t is not None), return_exceptions=True)
            with contextlib.suppress(Exception):
                await self._tcp.wait_closed()
            self._tcp = None

    async def __aenter__(self) -> DNSServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


__all__ = [
    "DNSEndpoint",
    "DNSServer",
    "Resolver",
    "endpoints_from_endpoints_informer",
    "endpoints_from_slice_informer",
    "services_from_informer",
]
