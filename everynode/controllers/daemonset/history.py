"""ControllerRevisions of a DaemonSet: hashing, revision data, construction and cleanup (§7).

Upstream: ``pkg/controller/daemon/update.go`` (``constructHistory``, ``snapshot``,
``dedupCurHistories``, ``cleanupHistory``, ``getPatch``/``Match``) and
``pkg/controller/controller_utils.go`` (``ComputeHash``).  The DaemonSet does *not* use the
generic ``pkg/controller/history`` helper, and neither do we.

Two representations matter, and they are kept apart on purpose:

* **Revision data** is what ``kubectl rollout undo`` byte-compares and sends back as a strategic
  merge patch: ``{"spec":{"template":{"$patch":"replace", …template…}}}`` encoded the way Go's
  ``json.Marshal`` encodes a ``map[string]interface{}`` (compact, keys sorted, ``<>&`` escaped —
  :func:`everynode.api.gojson.go_json`).  Because upstream marshals the *typed* DaemonSet first,
  zero values that Go always writes appear too: ``metadata.creationTimestamp: null`` in the
  template and ``resources: {}`` on every container.  :func:`go_template` adds exactly those so
  the bytes equal what a Go client computes from the same object.
* **The hash** (the ``controller-revision-hash`` label and the revision name suffix) is
  FNV-1a-32 over a canonical serialization.  Upstream hashes a Go ``spew`` dump, which cannot be
  reproduced bit for bit in Python; only internal consistency matters, so we hash the same
  canonical Go-JSON bytes of the (normalized) template, followed — when
  ``status.collisionCount`` is set — by the count as a little-endian uint32 and four zero bytes,
  and print the decimal value through the ``rand.SafeEncodeString`` alphabet exactly as upstream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

from everynode.api.errors import ApiError
from everynode.api.gojson import go_json
from everynode.api.meta import NAME_ALPHABET, deep_copy, make_controller_ref
from everynode.client.base import Client
from everynode.controllers.daemonset.daemonpods import CONTROLLER_REVISION_HASH_LABEL

Obj = dict[str, Any]

REVISIONS = "controllerrevisions.apps"
DAEMONSETS = "daemonsets.apps"
PODS = "pods"

FNV32_OFFSET = 0x811C9DC5
FNV32_PRIME = 0x01000193

DEFAULT_REVISION_HISTORY_LIMIT = 10


class HistoryError(Exception):
    """A failure in revision bookkeeping (message as upstream's)."""


# ---------------------------------------------------------------------------------------------
# Hash (ComputeHash + rand.SafeEncodeString)
# ---------------------------------------------------------------------------------------------

def fnv1a_32(data: bytes, value: int = FNV32_OFFSET) -> int:
    for byte in data:
        value = ((value ^ byte) * FNV32_PRIME) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: each byte mapped to ``alphanums[b % 27]``."""
    return "".join(NAME_ALPHABET[b % len(NAME_ALPHABET)] for b in text.encode())


def compute_hash(template: Obj, collision_count: int | None) -> str:
    """``controller.ComputeHash(template, collisionCount)``."""
    value = fnv1a_32(go_json(go_template(template)))
    if collision_count is not None:
        value = fnv1a_32((collision_count & 0xFFFFFFFF).to_bytes(4, "little") + b"\x00\x00\x00\x00", value)
    return safe_encode(str(value))


# ---------------------------------------------------------------------------------------------
# Revision data (getPatch / Match)
# ---------------------------------------------------------------------------------------------

_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def go_template(template: Obj | None) -> Obj:
    """The template as Go's ``json.Marshal`` of a typed ``PodTemplateSpec`` shows it.

    Adds the zero values Go always writes (``metadata.creationTimestamp: null``, container
    ``resources: {}``, the ``metadata``/``spec`` objects themselves).  Returns a new dict that
    shares untouched sub-objects with the input (treat it as read-only).
    """
    template = dict(template or {})
    metadata = dict(template.get("metadata") or {})
    metadata.setdefault("creationTimestamp", None)
    template["metadata"] = metadata
    spec = template.get("spec")
    spec = dict(spec) if spec is not None else {}
    for field in _CONTAINER_LISTS:
        containers = spec.get(field)
        if containers and any("resources" not in c for c in containers):
            spec[field] = [c if "resources" in c else {**c, "resources": {}} for c in containers]
    if "containers" not in spec:
        spec["containers"] = None  # Go: non-omitempty nil slice
    template["spec"] = spec
    return template


def revision_data(ds: Obj) -> bytes:
    """``getPatch(ds)``: the bytes a revision of this template stores (and kubectl compares)."""
    template = go_template((ds.get("spec") or {}).get("template"))
    template["$patch"] = "replace"
    return go_json({"spec": {"template": template}})


class DataCache:
    """Memoizes revision bytes: DaemonSets by (uid, generation), revisions by uid (data is
    immutable).  Keeps the per-sync history check O(revisions) dict lookups."""

    def __init__(self) -> None:
        self._ds: dict[str, tuple[Any, bytes]] = {}
        self._rev: dict[str, tuple[str, bytes]] = {}

    def ds_data(self, ds: Obj) -> bytes:
        md = ds.get("metadata") or {}
        uid = md.get("uid") or ""
        # A template change always bumps generation (§1.3); objects without one fall back to rv.
        stamp = md.get("generation") or ("rv", md.get("resourceVersion"))
        hit = self._ds.get(uid)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        data = revision_data(ds)
        if uid:
            self._ds[uid] = (stamp, data)
        return data

    def revision_bytes(self, revision: Obj) -> bytes:
        md = revision.get("metadata") or {}
        uid = md.get("uid") or ""
        rv = md.get("resourceVersion") or ""
        hit = self._rev.get(uid)
        if hit is not None and hit[0] == rv:
            return hit[1]
        data = stored_data_bytes(revision)
        if uid:
            self._rev[uid] = (rv, data)
        return data

    def forget(self, uid: str) -> None:
        self._ds.pop(uid, None)
        self._rev.pop(uid, None)


def stored_data_bytes(revision: Obj) -> bytes:
    data = revision.get("data")
    if isinstance(data, (bytes, bytearray)):
        return bytes(data)
    if isinstance(data, str):
        return data.encode()
    return go_json(data)


def matches(ds: Obj, revision: Obj, *, cache: DataCache | None = None) -> bool:
    """``Match``: the revision's data equals this DaemonSet's patch, byte for byte."""
    if cache is not None:
        return cache.revision_bytes(revision) == cache.ds_data(ds)
    return stored_data_bytes(revision) == revision_data(ds)


def revision_number(revision: Obj) -> int:
    return int(revision.get("revision") or 0)


def max_revision(revisions: Iterable[Obj]) -> int:
    return max((revision_number(r) for r in revisions), default=0)


def collision_count(ds: Obj) -> int | None:
    value = (ds.get("status") or {}).get("collisionCount")
    return None if value is None else int(value)


MAX_REVISION_NAME_PREFIX = 223  # 253 (a DNS subdomain) minus the hash and its dash


def revision_name(prefix: str, hash_: str) -> str:
    """``history.ControllerRevisionName``: ``prefix-hash`` with the prefix cut to 223 characters,
    so a DaemonSet with a name of up to 253 characters still gets valid revision names."""
    return f"{prefix[:MAX_REVISION_NAME_PREFIX]}-{hash_}"


def new_revision(ds: Obj, hash_: str, number: int, data: bytes) -> Obj:
    """The ControllerRevision ``snapshot`` creates."""
    md = ds["metadata"]
    labels = dict(((ds.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {})
    labels[CONTROLLER_REVISION_HASH_LABEL] = hash_
    metadata: Obj = {
        "name": revision_name(md["name"], hash_),
        "namespace": md.get("namespace") or "",
        "labels": labels,
        "ownerReferences": [make_controller_ref(ds, api_version="apps/v1", kind="DaemonSet")],
    }
    if md.get("annotations"):
        metadata["annotations"] = dict(md["annotations"])
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": metadata,
            "data": orjson.loads(data), "revision": number}


def split_revisions(ds: Obj, revisions: Iterable[Obj], *, cache: DataCache | None = None
                    ) -> tuple[list[Obj], list[Obj]]:
    """(current, old): revisions whose data match the DaemonSet's template, and the rest."""
    current: list[Obj] = []
    old: list[Obj] = []
    for rev in revisions:
        (current if matches(ds, rev, cache=cache) else old).append(rev)
    return current, old


def pick_current(current: list[Obj]) -> Obj:
    """``dedupCurHistories``' choice: the highest revision number; ties go to the later one."""
    keep = current[0]
    best = -1
    for rev in current:
        if revision_number(rev) >= best:
            keep, best = rev, revision_number(rev)
    return keep


def revisions_to_delete(old: list[Obj], limit: int, live_hashes: set[str] | frozenset[str]) -> list[Obj]:
    """``cleanupHistory``' choice: oldest revision numbers first, skipping hashes pods still use."""
    to_kill = len(old) - limit
    if to_kill <= 0:
        return []
    doomed: list[Obj] = []
    for rev in sorted(old, key=revision_number):
        if to_kill <= 0:
            break
        label = ((rev.get("metadata") or {}).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL)
        if label in live_hashes:
            continue
        doomed.append(rev)
        to_kill -= 1
    return doomed


def revision_history_limit(ds: Obj) -> int:
    value = (ds.get("spec") or {}).get("revisionHistoryLimit")
    return DEFAULT_REVISION_HISTORY_LIMIT if value is None else int(value)


# ---------------------------------------------------------------------------------------------
# constructHistory / cleanupHistory (the I/O parts)
# ---------------------------------------------------------------------------------------------

async def construct_history(client: Client, ds: Obj, revisions: list[Obj], *,
                            daemon_pods: Callable[[], list[Obj]],
                            cache: DataCache | None = None) -> tuple[Obj, list[Obj]]:
    """``constructHistory``: returns ``(current revision, old revisions)``.

    ``revisions`` are the revisions already claimed by this DaemonSet (adoption/release done by
    the caller); ``daemon_pods`` yields the DaemonSet's pods for relabelling on dedupe.
    """
    fixed: list[Obj] = []
    for rev in revisions:
        labels = (rev.get("metadata") or {}).get("labels") or {}
        if CONTROLLER_REVISION_HASH_LABEL not in labels:
            # Use the revision's name, not a computed hash: no collision worries.
            to_update = deep_copy(rev)
            to_update["metadata"].setdefault("labels", {})[CONTROLLER_REVISION_HASH_LABEL] = rev["metadata"]["name"]
            rev = await client.update(REVISIONS, to_update)
        fixed.append(rev)
    current, old = split_revisions(ds, fixed, cache=cache)
    next_number = max_revision(old) + 1
    if not current:
        cur = await snapshot(client, ds, next_number, cache=cache)
        return cur, old
    cur = await dedupe_current(client, ds, current, daemon_pods=daemon_pods)
    if revision_number(cur) < next_number:
        to_update = deep_copy(cur)
        to_update["revision"] = next_number
        cur = await client.update(REVISIONS, to_update)
    return cur, old


async def snapshot(client: Client, ds: Obj, number: int, *, cache: DataCache | None = None) -> Obj:
    """Create the revision of the current template (``snapshot``), with the collision path."""
    md = ds["metadata"]
    namespace = md.get("namespace") or ""
    data = cache.ds_data(ds) if cache is not None else revision_data(ds)
    hash_ = compute_hash((ds.get("spec") or {}).get("template") or {}, collision_count(ds))
    revision = new_revision(ds, hash_, number, data)
    try:
        return await client.create(REVISIONS, revision, namespace=namespace)
    except ApiError as outer:
        if outer.reason != "AlreadyExists":
            raise
        existing = await client.get(REVISIONS, revision["metadata"]["name"], namespace=namespace)
        if matches(ds, existing, cache=cache):
            return existing
        # A genuine hash collision: bump collisionCount (on a fresh read) so the next hash differs.
        fresh = await client.get(DAEMONSETS, md["name"], namespace=namespace)
        fresh_count = collision_count(fresh)
        used = collision_count(ds)
        if fresh_count != used:
            raise HistoryError(
                f"found a stale collision count ({_go_ptr(used)}, expected {_go_ptr(fresh_count)}) of DaemonSet "
                f'"{md["name"]}" while processing; will retry until it is updated') from outer
        to_update = deep_copy(fresh)
        to_update.setdefault("status", {})["collisionCount"] = (fresh_count or 0) + 1
        await client.update_status(DAEMONSETS, to_update)
        raise


def _go_ptr(value: int | None) -> str:
    return "<nil>" if value is None else str(value)


async def dedupe_current(client: Client, ds: Obj, current: list[Obj], *,
                         daemon_pods: Callable[[], list[Obj]]) -> Obj:
    """``dedupCurHistories``: keep one current revision, relabel pods to its hash, delete the rest."""
    if len(current) == 1:
        return current[0]
    keep = pick_current(current)
    keep_hash = ((keep.get("metadata") or {}).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL)
    namespace = ds["metadata"].get("namespace") or ""
    for pod in daemon_pods():
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if labels.get(CONTROLLER_REVISION_HASH_LABEL) != keep_hash:
            await client.patch(PODS, pod["metadata"]["name"],
                               {"metadata": {"labels": {CONTROLLER_REVISION_HASH_LABEL: keep_hash}}},
                               namespace=namespace, patch_type="merge")
    for rev in current:
        if rev["metadata"]["name"] == keep["metadata"]["name"]:
            continue
        await client.delete(REVISIONS, rev["metadata"]["name"], namespace=namespace)
    return keep


async def cleanup_history(client: Client, ds: Obj, old: list[Obj], live_hashes: set[str] | frozenset[str]) -> None:
    """``cleanupHistory``: delete the oldest unused revisions beyond ``revisionHistoryLimit``."""
    namespace = ds["metadata"].get("namespace") or ""
    for rev in revisions_to_delete(old, revision_history_limit(ds), live_hashes):
        await client.delete(REVISIONS, rev["metadata"]["name"], namespace=namespace)
