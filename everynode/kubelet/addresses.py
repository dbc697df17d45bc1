"""Addresses of simulated nodes and their pods, derived from a per-node index.

Why an index: a node's InternalIP and podCIDR must be unique, and stable across restarts of
``everynode up`` (a pod's IP must not change because the process restarted).  Each adopted node
gets the next free small integer, persisted on the Node as the annotation
``everynode.io/node-index``; everything else is computed from it.

Layout (10.0.0.0/8, enough for the 65,000-node target):
* node ``i`` has InternalIP ``10.0.0.0 + i + 2`` → 10.0.0.2, 10.0.0.3, …, 10.0.255.255 (the
  first 65,534 nodes stay inside 10.0.0.0/16, as "10.0.x.y");
* node ``i`` has podCIDR the ``i``-th /24 counted from 10.244.0.0/24 upward through
  10.255.255.0/24 and then wrapping to 10.1.0.0/24 … 10.243.255.0/24 (10.0.0.0/16 is left to the
  node IPs): 65,280 distinct /24s; beyond that, CIDRs repeat (documented limit);
* pod ``k`` on a node gets ``<podCIDR>.k`` for k in 2..254 (``.1`` is the bridge, as with the
  usual CNI plugins); hostNetwork pods get the node's InternalIP.
"""

from __future__ import annotations

import ipaddress
from typing import Final

from everynode.memo import remember

NODE_IP_BASE: Final = int(ipaddress.IPv4Address("10.0.0.0")) + 2
TEN: Final = int(ipaddress.IPv4Address("10.0.0.0"))
POD_SUBNETS: Final = 65536 - 256  # /24s in 10.0.0.0/8 outside 10.0.0.0/16
FIRST_POD_SUBNET: Final = 244 * 256  # 10.244.0.0/24 as the /24 number inside 10/8
FIRST_POD_HOST: Final = 2
LAST_POD_HOST: Final = 254


def node_ip(index: int) -> str:
    return dotted(NODE_IP_BASE + index)


def _subnet_number(index: int) -> int:
    """The /24 number inside 10.0.0.0/8 (0..65535), never in 10.0.0.0/16 (0..255)."""
    # Walk 10.244 … 10.255, then 10.1 … 10.243 (i.e. numbers 256..65535 rotated to start at 244*256).
    offset = (FIRST_POD_SUBNET - 256 + index) % POD_SUBNETS
    return 256 + offset


def pod_cidr(index: int) -> str:
    return f"{dotted(TEN + _subnet_number(index) * 256)}/24"


# podCIDR -> its network address as an integer.  Every pod a kubelet starts takes an IP from its
# node's CIDR; parsing the CIDR with ipaddress each time was most of the cost of a pod's IP.
_NETWORKS: Final[dict[str, int]] = {}
_NETWORKS_MAX: Final = 65_536


def _network(cidr: str) -> int:
    base = _NETWORKS.get(cidr)
    if base is None:
        plain = _plain_network(cidr)
        if plain is None:  # anything unusual: ipaddress decides (and words the error)
            plain = int(ipaddress.IPv4Network(cidr, strict=False).network_address)
        base = remember(_NETWORKS, cidr, plain, limit=_NETWORKS_MAX)
    return base


def _plain_number(text: str, limit: int) -> int | None:
    """A decimal number of at most three ASCII digits without a leading zero, up to ``limit``."""
    if not (0 < len(text) <= 3 and text.isascii() and text.isdigit()) or (text[0] == "0" and len(text) > 1):
        return None
    number = int(text)
    return number if number <= limit else None


def _plain_network(cidr: str) -> int | None:
    """The network address of ``a.b.c.d/n`` written plainly (what ipaddress accepts without
    question), or None for any other text.  A converge starts one pod per node, so the memo
    above never hits there: ipaddress's parse was 1.6% of a converge's wall time."""
    address, slash, prefix_text = cidr.partition("/")
    prefix = _plain_number(prefix_text, 32) if slash else 32
    parts = address.split(".")
    if prefix is None or len(parts) != 4:
        return None
    value = 0
    for part in parts:
        octet = _plain_number(part, 255)
        if octet is None:
            return None
        value = value << 8 | octet
    return value & (0xFFFFFFFF << (32 - prefix)) & 0xFFFFFFFF


def dotted(address: int) -> str:
    """An IPv4 address (an integer) in dotted-quad form, as ``str(IPv4Address(address))``."""
    return f"{address >> 24 & 255}.{address >> 16 & 255}.{address >> 8 & 255}.{address & 255}"


def pod_ip(cidr: str, host: int) -> str:
    address = _network(cidr) + host
    if address > 0xFFFFFFFF:
        raise ipaddress.AddressValueError(f"{address} (>2**32) is not permitted as an IPv4 address")
    return dotted(address)


def host_of(cidr: str, ip: str) -> int | None:
    """The host number of ``ip`` inside ``cidr`` (None when outside)."""
    try:
        net = ipaddress.IPv4Network(cidr, strict=False)
        addr = ipaddress.IPv4Address(ip)
    except ValueError:
        return None
    if addr not in net:
        return None
    return int(addr) - int(net.network_address)
