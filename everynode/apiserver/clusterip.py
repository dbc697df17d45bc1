"""ClusterIP allocation for Services: which address of the service CIDR a Service gets.

Upstream: ``pkg/registry/core/service/ipallocator`` (``bitmap.go``: the range, the reserved
network/broadcast addresses, the static/dynamic split; ``interfaces.go``: the error texts) and
``pkg/registry/core/service/storage/alloc.go`` (how a Service's ``spec.clusterIP(s)`` are filled
in and how a failure is reported).  Kept from upstream:

* The usable range of an IPv4 CIDR excludes its network and broadcast addresses
  (10.96.0.0/12 → 10.96.0.1 … 10.111.255.254).
* Dynamic allocation is random, and it prefers the *upper* band of the range: the lowest
  ``min(max(16, size/16), 256)`` addresses form a static band (KEP-3070) that users pick from by
  hand (``clusterIP: 10.96.0.10`` for DNS), so random allocation only falls back to it when the
  upper band is full.  The first address, 10.96.0.1, is what the API server gives the
  ``kubernetes`` Service; random allocation never hands it out, a request for it succeeds.
* A requested address must be inside the usable range and free; errors carry upstream's words
  (``provided IP is already allocated``, ``provided IP is not in the valid range. The range of
  valid IPs is 10.96.0.0/12``, ``range is full``) and become a 422 on ``spec.clusterIPs``.
* ``"None"`` (headless) and ExternalName Services take no address.

Why a set instead of upstream's bitmap: the allocator lives in one process and only needs
O(1) membership; random probing of a 2^20 range with a set is O(1) expected per allocation.
The allocation state is not persisted: :meth:`ClusterIPAllocator.restore` rebuilds it from the
stored Services on start-up (what upstream's repair controller guarantees eventually, done once
and synchronously here).

HOW THE SERVICE STORAGE WIRES IT (``apiserver/registry/core/service.py``; this module does no I/O):

* One ``ClusterIPAllocator("10.96.0.0/12")`` per API service.  On start, after the store is
  open and before serving writes: ``allocator.restore(cluster_ips_of_stored_services)`` where the
  list holds every stored Service's ``spec.clusterIPs`` (``restore`` ignores ``"None"``, ``""``
  and addresses outside the range).
* Create (after defaulting and validation, right before the store write; skipped entirely on
  dry-run except for the range check, see ``dry_run``): ``assign_cluster_ip(allocator, svc,
  dry_run=...)``.  It sets ``spec.clusterIP`` and ``spec.clusterIPs`` (``["None"]`` for headless),
  ``spec.ipFamilies = ["IPv4"]`` and ``spec.ipFamilyPolicy = "SingleStack"``, or raises the 422
  ``ApiError``.  If the store write then fails (409 AlreadyExists, ...), call
  ``release_cluster_ip(allocator, svc)`` so the address is not leaked.
* Update: ``carry_cluster_ip(new, old)`` first (upstream ``patchAllocatedValues``: a PUT/apply
  that omits ``clusterIP``/``clusterIPs`` keeps the allocated ones), then validation, which
  already rejects a changed address with ``spec.clusterIPs[0]: Invalid value: [...]: may not
  change once set`` (api/validation/core.py).  ``update_cluster_ip(allocator, new, old)`` handles
  type changes to/from ExternalName (allocate for the new type, release the old address once the
  write succeeded).
* Delete: once the Service is really gone from the store, ``release_cluster_ip(allocator, svc)``.
* Seed the ``kubernetes`` Service in ``default`` with ``clusterIP: allocator.first_ip``
  (10.96.0.1), port 443 (name ``https``, targetPort 6443) and no selector, as kube-apiserver does.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterable
from typing import Any

from everynode.api import errors
from everynode.api import field_errors as fielderr

DEFAULT_SERVICE_CIDR = "10.96.0.0/12"
HEADLESS = "None"

# bitmap.go calculateRangeOffset: min(max(16, size/16), 256)
_STATIC_MIN = 16
_STATIC_MAX = 256
_STATIC_STEP = 16

Obj = dict[str, Any]


class ClusterIPError(ValueError):
    """An allocation failure; ``str()`` is upstream's allocator error text."""


class ClusterIPAllocator:
    """Allocates IPv4 addresses from one service CIDR (see the module docstring)."""

    def __init__(self, cidr: str = DEFAULT_SERVICE_CIDR, *, rng: random.Random | None = None) -> None:
        net = ipaddress.ip_network(cidr, strict=False)
        if net.version != 4:
            raise ValueError(f"only IPv4 service CIDRs are supported, not {cidr}")
        self.cidr = str(net)
        self._net = net
        size = net.num_addresses
        self._base = int(net.network_address) + 1  # offset 0 = first usable address
        self._max = max(0, size - 2)  # minus network and broadcast
        offset = 0 if size <= _STATIC_MIN else min(max(_STATIC_MIN, size // _STATIC_STEP), _STATIC_MAX)
        self._static = min(offset, self._max)
        self._used: set[int] = set()  # offsets
        self._rng = rng if rng is not None else random.Random()

    # -- queries ---------------------------------------------------------------------------

    @property
    def first_ip(self) -> str:
        """The address kube-apiserver gives the ``kubernetes`` Service (10.96.0.1)."""
        return str(ipaddress.IPv4Address(self._base))

    @property
    def size(self) -> int:
        return self._max

    @property
    def free(self) -> int:
        return self._max - len(self._used)

    def has(self, ip: str) -> bool:
        offset = self._offset(ip)
        return offset is not None and offset in self._used

    def allocated(self) -> list[str]:
        return sorted((str(ipaddress.IPv4Address(self._base + o)) for o in self._used),
                      key=lambda s: int(ipaddress.IPv4Address(s)))

    def _offset(self, ip: str) -> int | None:
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            return None
        if addr.version != 4 or addr not in self._net:
            return None
        offset = int(addr) - self._base
        if offset < 0 or offset >= self._max:
            return None
        return offset

    def _not_in_range(self) -> ClusterIPError:
        return ClusterIPError(f"provided IP is not in the valid range. The range of valid IPs is {self.cidr}")

    # -- changes ---------------------------------------------------------------------------

    def allocate(self, requested: str | None = None, *, dry_run: bool = False) -> str:
        """The requested address (if free and in range) or a random free one.

        ``dry_run`` checks the request without reserving anything (upstream's dry-run allocator
        only checks the range and returns the network address for a dynamic allocation)."""
        if requested:
            offset = self._offset(requested)
            if offset is None:
                raise self._not_in_range()
            if dry_run:
                return requested
            if offset in self._used:
                raise ClusterIPError("provided IP is already allocated")
            self._used.add(offset)
            return str(ipaddress.IPv4Address(self._base + offset))
        if dry_run:
            return str(self._net.network_address)
        offset = self._pick()
        self._used.add(offset)
        return str(ipaddress.IPv4Address(self._base + offset))

    def _pick(self) -> int:
        # Upper (dynamic) band first, then the static band; never offset 0 (kubernetes svc).
        for lo, hi in ((max(self._static, 1), self._max), (1, self._static)):
            found = self._probe(lo, hi)
            if found is not None:
                return found
        raise ClusterIPError("range is full")

    def _probe(self, lo: int, hi: int) -> int | None:
        """A random free offset in [lo, hi): random start, then a linear scan that wraps
        (upstream's randomScanStrategyWithOffset)."""
        n = hi - lo
        if n <= 0:
            return None
        used = self._used
        start = self._rng.randrange(n)
        for i in range(n):
            candidate = lo + (start + i) % n
            if candidate not in used:
                return candidate
        return None

    def release(self, ip: str) -> None:
        """Return an address to the pool; unknown or out-of-range addresses are ignored."""
        offset = self._offset(ip)
        if offset is not None:
            self._used.discard(offset)

    def restore(self, ips: Iterable[str]) -> None:
        """Rebuild the allocation state from the addresses stored Services hold (restart).
        ``"None"``, empty strings and addresses outside the range are skipped."""
        self._used.clear()
        for ip in ips:
            if not ip or ip == HEADLESS:
                continue
            offset = self._offset(ip)
            if offset is not None:
                self._used.add(offset)


# --- Service wiring helpers (pure: they change the dict they are given) ---------------------

def needs_cluster_ip(svc: Obj) -> bool:
    """Upstream ``needsClusterIP``: every type but ExternalName."""
    return ((svc.get("spec") or {}).get("type") or "ClusterIP") != "ExternalName"


def _requested_ips(spec: Obj) -> list[str]:
    ips = [ip for ip in spec.get("clusterIPs") or () if isinstance(ip, str)]
    if ips:
        return ips
    ip = spec.get("clusterIP")
    return [ip] if isinstance(ip, str) and ip else []


def _allocation_error(svc: Obj, ips: list[str], ip: str, err: ClusterIPError) -> errors.ApiError:
    name = (svc.get("metadata") or {}).get("name") or ""
    cause = fielderr.invalid("spec.clusterIPs", ips, f"failed to allocate IP {ip}: {err}")
    return errors.invalid("Service", "", name, [cause])


def assign_cluster_ip(allocator: ClusterIPAllocator, svc: Obj, *, dry_run: bool = False) -> None:
    """Fill in ``spec.clusterIP``/``clusterIPs``/``ipFamilies``/``ipFamilyPolicy`` of a Service
    being created (upstream ``allocClusterIPs`` for single-stack IPv4); raise the 422 ApiError
    upstream gives when the requested address is taken or outside the range."""
    spec = svc.setdefault("spec", {})
    if not needs_cluster_ip(svc):
        return
    requested = _requested_ips(spec)
    if requested and requested[0] == HEADLESS:
        spec["clusterIP"] = HEADLESS
        spec["clusterIPs"] = [HEADLESS]
    else:
        want = requested[0] if requested else None
        try:
            ip = allocator.allocate(want, dry_run=dry_run)
        except ClusterIPError as err:
            if want is None:
                raise errors.internal(f"failed to allocate a serviceIP: {err}") from None
            raise _allocation_error(svc, requested, want, err) from None
        spec["clusterIP"] = ip
        spec["clusterIPs"] = [ip]
    spec["ipFamilies"] = ["IPv4"]
    spec["ipFamilyPolicy"] = "SingleStack"


def release_cluster_ip(allocator: ClusterIPAllocator, svc: Obj) -> None:
    """Give back the address of a deleted Service (or of a create that failed to store)."""
    for ip in _requested_ips(svc.get("spec") or {}):
        allocator.release(ip)


def carry_cluster_ip(new: Obj, old: Obj) -> None:
    """Upstream ``patchAllocatedValues``: an update that leaves ``clusterIP``/``clusterIPs``
    empty keeps the allocated values (``kubectl replace`` of a manifest without them)."""
    if not (needs_cluster_ip(old) and needs_cluster_ip(new)):
        return
    new_spec = new.setdefault("spec", {})
    old_spec = old.get("spec") or {}
    if not new_spec.get("clusterIP") and old_spec.get("clusterIP"):
        new_spec["clusterIP"] = old_spec["clusterIP"]
    if not new_spec.get("clusterIPs") and old_spec.get("clusterIPs"):
        new_spec["clusterIPs"] = list(old_spec["clusterIPs"])


def update_cluster_ip(allocator: ClusterIPAllocator, new: Obj, old: Obj, *, dry_run: bool = False) -> list[str]:
    """Type changes on update: ExternalName → ClusterIP allocates (like a create);
    ClusterIP → ExternalName drops the fields.  Returns the addresses to release *after* the
    write succeeded (upstream releases them in the transaction's commit)."""
    if needs_cluster_ip(new) and not needs_cluster_ip(old):
        assign_cluster_ip(allocator, new, dry_run=dry_run)
        return []
    if needs_cluster_ip(old) and not needs_cluster_ip(new):
        spec = new.setdefault("spec", {})
        for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            spec.pop(key, None)
        return [ip for ip in _requested_ips(old.get("spec") or {}) if ip != HEADLESS]
    return []


__all__ = [
    "DEFAULT_SERVICE_CIDR",
    "HEADLESS",
    "ClusterIPAllocator",
    "ClusterIPError",
    "assign_cluster_ip",
    "carry_cluster_ip",
    "needs_cluster_ip",
    "release_cluster_ip",
    "update_cluster_ip",
]
