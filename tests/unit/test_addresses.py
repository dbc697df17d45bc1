"""The simulated kubelets' pod IPs: computed from the node's podCIDR without parsing it per pod,
and the same addresses as ipaddress gives."""

from __future__ import annotations

import ipaddress

import pytest

from everynode.kubelet import addresses

CASES = [
    ("10.244.0.0/24", 2),
    ("10.244.0.0/24", 254),
    ("10.255.255.0/24", 7),
    ("10.1.0.0/24", 2),
    ("10.1.2.0/23", 300),  # wider than a /24
    ("10.1.2.77/24", 5),  # host bits set: the network is 10.1.2.0 (strict=False, as before)
    ("192.168.0.0/16", 513),
]


@pytest.mark.parametrize(("cidr", "host"), CASES)
def test_pod_ip_is_the_network_address_plus_the_host(cidr, host):
    expected = str(ipaddress.IPv4Network(cidr, strict=False).network_address + host)
    assert addresses.pod_ip(cidr, host) == expected
    assert addresses.pod_ip(cidr, host) == expected  # the remembered network
    assert addresses.host_of(cidr, expected) == host


@pytest.mark.parametrize("address", [0, 1, 255, 256, 0x0A000002, 0x7F000001, 0xC0A80101, 0xFFFFFFFF])
def test_dotted_is_the_dotted_quad(address):
    assert addresses.dotted(address) == str(ipaddress.IPv4Address(address))


def test_pod_ip_refuses_an_address_past_the_ipv4_space_and_a_bad_cidr():
    with pytest.raises(ipaddress.AddressValueError):
        addresses.pod_ip("255.255.255.0/24", 256)
    with pytest.raises(ValueError):
        addresses.pod_ip("not-a-cidr", 2)


def test_node_addresses_follow_the_layout():
    assert addresses.node_ip(0) == "10.0.0.2"
    assert addresses.pod_cidr(0) == "10.244.0.0/24"
    assert addresses.pod_ip(addresses.pod_cidr(11), 2) == "10.244.11.2"


@pytest.mark.parametrize("cidr", [
    "10.244.0.0/24", "10.1.2.77/24", "0.0.0.0/0", "255.255.255.255/32", "10.1.2.3", "10.1.2.3/0",
    "192.168.7.9/31", "1.2.3.4/8", "172.16.5.4/12",
    # not plain: leading zeros, signs, spaces, non-ASCII digits, out of range, wrong shapes
    "010.1.2.0/24", "10.1.2.0/024", "10.1.2.0/33", "10.1.2.256/24", "10.1.2/24", "10.1.2.0.0/24",
    "+10.1.2.0/24", " 10.1.2.0/24", "10.1.2.0/", "10.1.2.0/-1", "１０.1.2.0/24", "10.1.2.0/2٤", "",
    "10.1.2.0/255.255.255.0",
])
def test_a_network_is_what_ipaddress_makes_of_it(cidr):
    try:
        expected: int | None = int(ipaddress.IPv4Network(cidr, strict=False).network_address)
    except ValueError:
        expected = None
    plain = addresses._plain_network(cidr)
    assert plain is None or plain == expected  # the plain parse never disagrees
    if cidr in ("10.244.0.0/24", "10.1.2.77/24", "0.0.0.0/0", "1.2.3.4/8"):
        assert plain is not None  # and takes the usual forms itself
    if expected is None:
        with pytest.raises(ValueError):
            addresses.pod_ip(cidr, 2)
    else:
        assert addresses.pod_ip(cidr, 0) == addresses.dotted(expected)
