"""ClusterIP allocation: upstream ipallocator ranges, messages, and the Service wiring helpers."""

from __future__ import annotations

import ipaddress
import random

import pytest

from everynode.api.errors import ApiError
from everynode.api.validation import validate_update
from everynode.apiserver.clusterip import (
    ClusterIPAllocator,
    ClusterIPError,
    assign_cluster_ip,
    carry_cluster_ip,
    release_cluster_ip,
    update_cluster_ip,
)

IN_USE = "provided IP is already allocated"
OUT_OF_RANGE = "provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12"


def svc(name: str = "web", **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
            "spec": {"type": "ClusterIP", "ports": [{"port": 80, "protocol": "TCP"}], **spec}}


@pytest.mark.parametrize(("requested", "error"), [
    ("10.96.0.1", None),            # first usable address (the kubernetes Service's)
    ("10.96.0.10", None),           # static band, e.g. kube-dns
    ("10.111.255.254", None),       # last usable address
    ("10.96.0.0", OUT_OF_RANGE),    # network address
    ("10.111.255.255", OUT_OF_RANGE),  # broadcast address
    ("10.112.0.1", OUT_OF_RANGE),
    ("192.168.1.1", OUT_OF_RANGE),
    ("fd00::1", OUT_OF_RANGE),
    ("not-an-ip", OUT_OF_RANGE),
])
def test_requested_address(requested: str, error: str | None) -> None:
    alloc = ClusterIPAllocator("10.96.0.0/12")
    if error is None:
        assert alloc.allocate(requested) == requested
        assert alloc.has(requested)
        with pytest.raises(ClusterIPError, match=IN_USE):
            alloc.allocate(requested)
    else:
        with pytest.raises(ClusterIPError) as exc:
            alloc.allocate(requested)
        assert str(exc.value) == error


def test_random_allocation_prefers_the_upper_band_and_skips_the_first_address() -> None:
    alloc = ClusterIPAllocator("10.96.0.0/12", rng=random.Random(7))
    static_end = ipaddress.ip_address("10.96.1.1")  # 256 static addresses after 10.96.0.1
    seen = {alloc.allocate() for _ in range(200)}
    assert len(seen) == 200
    assert all(ipaddress.ip_address(ip) >= static_end for ip in seen)
    assert alloc.first_ip == "10.96.0.1" and not alloc.has("10.96.0.1")


def test_small_range_fills_up_then_reports_full_and_reuses_released() -> None:
    alloc = ClusterIPAllocator("10.0.0.0/29", rng=random.Random(1))  # usable .1-.6, .1 reserved
    got = {alloc.allocate() for _ in range(5)}
    assert got == {f"10.0.0.{i}" for i in range(2, 7)}
    with pytest.raises(ClusterIPError, match="range is full"):
        alloc.allocate()
    alloc.release("10.0.0.4")
    assert alloc.allocate() == "10.0.0.4"
    assert alloc.allocate("10.0.0.1") == "10.0.0.1"  # asked for by name: allowed


def test_static_band_used_when_upper_band_is_full() -> None:
    alloc = ClusterIPAllocator("10.0.0.0/24", rng=random.Random(3))  # 254 usable, 16 static
    upper = [alloc.allocate() for _ in range(254 - 16)]
    assert all(int(ip.rsplit(".", 1)[1]) >= 17 for ip in upper)
    lower = alloc.allocate()
    assert 2 <= int(lower.rsplit(".", 1)[1]) <= 16


def test_restore_rebuilds_state_and_ignores_headless_and_foreign() -> None:
    alloc = ClusterIPAllocator()
    alloc.allocate("10.96.0.7")
    alloc.restore(["10.96.0.5", "None", "", "1.2.3.4", "10.100.0.1"])
    assert alloc.allocated() == ["10.96.0.5", "10.100.0.1"]
    assert not alloc.has("10.96.0.7")
    with pytest.raises(ClusterIPError, match=IN_USE):
        alloc.allocate("10.96.0.5")


def test_release_ignores_unknown_addresses() -> None:
    alloc = ClusterIPAllocator()
    alloc.release("None")
    alloc.release("8.8.8.8")
    alloc.release("10.96.0.9")
    assert alloc.free == alloc.size


def test_dry_run_reserves_nothing() -> None:
    alloc = ClusterIPAllocator()
    assert alloc.allocate("10.96.0.5", dry_run=True) == "10.96.0.5"
    assert alloc.allocate(dry_run=True) == "10.96.0.0"
    assert alloc.allocated() == []
    with pytest.raises(ClusterIPError, match="not in the valid range"):
        alloc.allocate("1.1.1.1", dry_run=True)


# --- wiring helpers -------------------------------------------------------------------------


def test_assign_sets_ip_fields_for_a_cluster_ip_service() -> None:
    alloc = ClusterIPAllocator(rng=random.Random(0))
    body = svc()
    assign_cluster_ip(alloc, body)
    spec = body["spec"]
    assert spec["clusterIPs"] == [spec["clusterIP"]] and alloc.has(spec["clusterIP"])
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"


@pytest.mark.parametrize("spec", [{"clusterIP": "None"}, {"clusterIPs": ["None"]}])
def test_assign_headless_takes_no_address(spec: dict) -> None:
    alloc = ClusterIPAllocator()
    body = svc(**spec)
    assign_cluster_ip(alloc, body)
    assert body["spec"]["clusterIP"] == "None" and body["spec"]["clusterIPs"] == ["None"]
    assert alloc.allocated() == []


def test_assign_external_name_is_left_alone() -> None:
    alloc = ClusterIPAllocator()
    body = {"metadata": {"name": "ext"}, "spec": {"type": "ExternalName", "externalName": "example.com"}}
    assign_cluster_ip(alloc, body)
    assert body["spec"] == {"type": "ExternalName", "externalName": "example.com"}


@pytest.mark.parametrize(("requested", "message"), [
    ("10.96.0.5", 'Service "web" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.5"]: '
                  "failed to allocate IP 10.96.0.5: provided IP is already allocated"),
    ("10.200.0.5", 'Service "web" is invalid: spec.clusterIPs: Invalid value: ["10.200.0.5"]: '
                   "failed to allocate IP 10.200.0.5: provided IP is not in the valid range. "
                   "The range of valid IPs is 10.96.0.0/12"),
])
def test_assign_errors_are_upstream_422s(requested: str, message: str) -> None:
    alloc = ClusterIPAllocator()
    alloc.allocate("10.96.0.5")
    with pytest.raises(ApiError) as exc:
        assign_cluster_ip(alloc, svc(clusterIP=requested))
    assert exc.value.code == 422
    assert exc.value.message == message
    cause = exc.value.status["details"]["causes"][0]
    assert cause["field"] == "spec.clusterIPs" and cause["reason"] == "FieldValueInvalid"


def test_release_returns_the_address() -> None:
    alloc = ClusterIPAllocator()
    body = svc(clusterIP="10.96.0.20")
    assign_cluster_ip(alloc, body)
    release_cluster_ip(alloc, body)
    assert not alloc.has("10.96.0.20")


def test_carry_keeps_allocated_ips_on_an_update_without_them() -> None:
    old = svc(clusterIP="10.96.3.3", clusterIPs=["10.96.3.3"])
    new = svc()
    carry_cluster_ip(new, old)
    assert new["spec"]["clusterIP"] == "10.96.3.3" and new["spec"]["clusterIPs"] == ["10.96.3.3"]


def test_changed_cluster_ip_is_rejected_by_update_validation() -> None:
    old = svc(clusterIP="10.96.3.3", clusterIPs=["10.96.3.3"], sessionAffinity="None",
              internalTrafficPolicy="Cluster", ipFamilies=["IPv4"], ipFamilyPolicy="SingleStack")
    old["metadata"].update(resourceVersion="5", uid="u", creationTimestamp="2024-01-01T00:00:00Z")
    new = {**old, "spec": {**old["spec"], "clusterIP": "10.96.9.9", "clusterIPs": ["10.96.9.9"]}}
    rendered = [str(e) for e in validate_update("services", new, old)]
    assert 'spec.clusterIPs[0]: Invalid value: ["10.96.9.9"]: may not change once set' in rendered


def test_update_type_changes() -> None:
    alloc = ClusterIPAllocator()
    old = {"metadata": {"name": "x"}, "spec": {"type": "ExternalName", "externalName": "example.com"}}
    new = svc("x")
    assert update_cluster_ip(alloc, new, old) == []
    ip = new["spec"]["clusterIP"]
    assert alloc.has(ip)
    back = {"metadata": {"name": "x"}, "spec": {**new["spec"], "type": "ExternalName", "externalName": "e.com"}}
    assert update_cluster_ip(alloc, back, new) == [ip]
    assert "clusterIP" not in back["spec"] and "clusterIPs" not in back["spec"]
