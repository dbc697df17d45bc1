"""The objects a diagnosis reads — nodes, pods, DaemonSets, ControllerRevisions, Events,
PriorityClasses — from a dump on disk or from a live cluster, read-only either way.

Why one module for both: ``everynode why`` (and ``everynode plan`` after it) must give the same
answer for a cluster and for its dump, so both sources end in the same :class:`ClusterObjects`
and nothing downstream knows where the objects came from.

A dump is what ``kubectl get nodes,pods,daemonsets,controllerrevisions,events,priorityclasses -A
-o yaml`` (or ``-o json``) writes: a ``v1 List`` whose items carry their own ``apiVersion`` and
``kind``.  Also accepted, because people concatenate and split such files: several YAML documents
in one file, a bare object, a typed list (``kind: PodList``, items without kind — the kind is
taken from the list's), and a directory of such files (``*.yaml``, ``*.yml``, ``*.json``, not
recursive, in name order).  Kinds outside the six are ignored; a file that is not YAML/JSON, or
a document that is not an object, is an error naming the file.  YAML is parsed like the API
server parses it (timestamps stay strings), with libyaml; JSON with orjson — a 5,000-node JSON
dump loads in a fraction of a second, the same dump in YAML takes several seconds (libyaml's
pace), which is why the benchmark reads JSON.

A dump is explained at its own moment, not at the moment it is read: :func:`dump_time` (the
newest timestamp in it) is the "now" its ages are measured from.

Live reading lists the same six resources through any :class:`~everynode.client.base.Client`
(GET only: the ClusterRole in ``examples/everynode-why-rbac.yaml`` is all it needs).  Nodes,
pods and PriorityClasses are read cluster-wide — a node's free resources and host ports depend on
every pod bound to it, whatever its namespace; DaemonSets, revisions and events only in the
namespace asked about (all when ``None``), and only Warning events (``fieldSelector=type=Warning``):
the two the explainer reads, ``FailedScheduling`` and ``FailedDaemonPod``, are warnings, while a
converged cluster holds several Normal events per pod (Scheduled, Pulled, Created, Started) that
would cost more to list than the pods themselves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import yaml

from everynode.apiserver.tables import parse_time
from everynode.product.dumpyaml import load_documents

if TYPE_CHECKING:
    from everynode.client.base import Client

Obj = dict[str, Any]

# kind -> the ClusterObjects field holding it
KINDS: Mapping[str, str] = {
    "Node": "nodes",
    "Pod": "pods",
    "DaemonSet": "daemonsets",
    "ControllerRevision": "controllerrevisions",
    "Event": "events",
    "PriorityClass": "priorityclasses",
}
DUMP_SUFFIXES = (".yaml", ".yml", ".json")
DUMP_COMMAND = "kubectl get nodes,pods,daemonsets,controllerrevisions,events,priorityclasses -A -o yaml"

# (client resource, namespaced, ClusterObjects field, field selector)
LIVE_RESOURCES: tuple[tuple[str, bool, str, str | None], ...] = (
    ("nodes", False, "nodes", None),
    ("pods", False, "pods", None),
    ("daemonsets.apps", True, "daemonsets", None),
    ("controllerrevisions.apps", True, "controllerrevisions", None),
    ("events", True, "events", "type=Warning"),
    ("priorityclasses.scheduling.k8s.io", False, "priorityclasses", None),
)


class _YamlLoader(yaml.CSafeLoader):
    """YAML → JSON-shaped values as the API server reads them: timestamps stay strings.

    The same rule as the API server's request decoder (``everynode.apiserver.http``); not imported
    from there because that module pulls in aiohttp and the API service (~0.45 s of a command
    that should answer in about a second).  Candidate for one shared loader in the api layer."""


_YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}


class DumpError(Exception):
    """A dump that cannot be read; the message is one line naming the file."""


@dataclass(slots=True)
class ClusterObjects:
    """The objects of one cluster at one moment, as plain API dicts."""

    nodes: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    daemonsets: list[Obj] = field(default_factory=list)
    controllerrevisions: list[Obj] = field(default_factory=list)
    events: list[Obj] = field(default_factory=list)
    priorityclasses: list[Obj] = field(default_factory=list)

    def add(self, obj: Obj) -> bool:
        """File ``obj`` under its kind; False (ignored) for other kinds."""
        name = KINDS.get(obj.get("kind") or "")
        if name is None:
            return False
        getattr(self, name).append(obj)
        return True

    def daemonset(self, name: str, namespace: str | None) -> Obj | None:
        """The DaemonSet ``name`` in ``namespace`` (None: the only one of that name anywhere)."""
        found = [ds for ds in self.daemonsets
                 if (ds.get("metadata") or {}).get("name") == name
                 and (namespace is None or ((ds.get("metadata") or {}).get("namespace") or "") == namespace)]
        return found[0] if len(found) == 1 else None

    def counts(self) -> dict[str, int]:
        return {name: len(getattr(self, name)) for name in KINDS.values()}


# ------------------------------------------------------------------------------------------ dumps

def _documents(data: bytes, source: str) -> list[Any]:
    stripped = data.lstrip()
    if stripped[:1] in (b"{", b"["):
        try:
            return [orjson.loads(data)]
        except orjson.JSONDecodeError:
            pass  # JSON is YAML: let the YAML parser say what is wrong
    try:
        return [d for d in load_documents(data, loader=_YamlLoader) if d is not None]
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise DumpError(f"{source}:{where}: not YAML or JSON ({problem})") from None


def _objects(doc: Any, source: str) -> Iterator[Obj]:
    """The objects in one document: a List's items (kinds from a typed list), or the object."""
    if not isinstance(doc, dict):
        raise DumpError(f"{source}: expected a Kubernetes object or List, found {type(doc).__name__}")
    kind = doc.get("kind") or ""
    if "items" in doc and (kind == "List" or kind.endswith("List")):
        item_kind = kind[:-4] if kind != "List" else ""
        for item in doc.get("items") or ():
            if not isinstance(item, dict):
                raise DumpError(f"{source}: a List item is not an object")
            if item_kind and not item.get("kind"):
                item = {**item, "kind": item_kind}
            yield item
        return
    yield doc


def parse_dump(data: bytes | str, *, source: str = "<dump>") -> ClusterObjects:
    """The objects in one file's contents."""
    raw = data.encode() if isinstance(data, str) else data
    out = ClusterObjects()
    for doc in _documents(raw, source):
        for obj in _objects(doc, source):
            out.add(obj)
    return out


def dump_files(path: Path) -> list[Path]:
    """The files a dump path stands for (raises :class:`DumpError` when there are none)."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in DUMP_SUFFIXES)
        if not files:
            raise DumpError(f"{path}: no *.yaml, *.yml or *.json files in this directory")
        return files
    if not path.exists():
        raise DumpError(f"{path}: no such file or directory")
    return [path]


def load_dump(path: Path | str) -> ClusterObjects:
    """Read a dump file or directory (see the module docstring for what is accepted)."""
    out = ClusterObjects()
    for file in dump_files(Path(path)):
        try:
            data = file.read_bytes()
        except OSError as e:
            raise DumpError(f"{file}: cannot read ({e.strerror or e})") from None
        part = parse_dump(data, source=str(file))
        for name in KINDS.values():
            getattr(out, name).extend(getattr(part, name))
    if not any(out.counts().values()):
        raise DumpError(f"{path}: no nodes, pods, daemonsets, controllerrevisions, events or priorityclasses "
                        f"(write one with `{DUMP_COMMAND}`)")
    return out


# ------------------------------------------------------------------------------------------ dump time

_EVENT_TIMES = ("lastTimestamp", "firstTimestamp", "eventTime", "deprecatedLastTimestamp",
                "deprecatedFirstTimestamp")


def _object_times(obj: Mapping[str, Any], out: list[Any]) -> None:
    """Append the times one object says something happened at (never ``deletionTimestamp``: it
    is the end of a grace period, in the future while the pod terminates)."""
    md = obj.get("metadata") or {}
    out.append(md.get("creationTimestamp"))
    for entry in md.get("managedFields") or ():
        out.append(entry.get("time"))
    if obj.get("kind") == "Event" or "involvedObject" in obj or "regarding" in obj:
        out.extend(obj.get(key) for key in _EVENT_TIMES)
        out.append((obj.get("series") or {}).get("lastObservedTime"))
    status = obj.get("status")
    if not isinstance(status, dict):
        return
    for cond in status.get("conditions") or ():
        out.append(cond.get("lastHeartbeatTime"))
        out.append(cond.get("lastTransitionTime"))
        out.append(cond.get("lastProbeTime"))


def dump_time(objects: ClusterObjects) -> float | None:
    """When the dump was taken, as well as the dump itself can tell: its newest timestamp
    (epoch seconds), None when it has none.

    A dump's ages ("not Ready for 4m", "terminating for 30s", minReadySeconds left, backoff left)
    must be measured against the moment it was written, not the moment it is read — a dump
    attached to an issue is read hours or days later.  The file's mtime does not survive a copy
    or a download; the objects' own times do: node heartbeats and condition changes, event
    times, pod condition changes, creation times, and managedFields times when the
    dump kept them (``kubectl get -o yaml`` drops them unless ``--show-managed-fields``).
    Container start and finish times are not read: a container starting or stopping moves the
    pod's Ready/ContainersReady condition at the same moment, and skipping them keeps the pass
    cheap (some 40 ms for 5,000 nodes and 5,000 pods).  The
    newest of them is a lower bound on the dump's moment, close to it on a live cluster: the
    kubelet refreshes ``lastHeartbeatTime`` at least every ``nodeStatusReportFrequency``
    (5 min) and events come all the time.  Leases (renewed every 10 s) would be closer still,
    but they are not among the dump's kinds.  Times are compared as text: the API writes every
    time in UTC (``metav1.Time`` marshals ``t.UTC()``, RFC 3339 ``...Z``), so text order is time
    order (to the second: ``...:05Z`` sorts after ``...:05.123456Z``), and only the newest is
    parsed — one cheap pass over a 5,000-node dump.
    """
    values: list[Any] = []
    for name in KINDS.values():
        for obj in getattr(objects, name):
            _object_times(obj, values)
    texts = [v for v in values if isinstance(v, str) and v]
    if not texts:
        return None
    newest = parse_time(max(texts))
    if newest is not None:
        return newest
    parsed = [t for t in map(parse_time, texts) if t is not None]  # the newest text is not a time
    return max(parsed) if parsed else None


# ------------------------------------------------------------------------------------------ live

async def read_live(client: Client, *, namespace: str | None = None) -> ClusterObjects:
    """List the six resources through ``client`` (read-only), concurrently."""

    async def items(resource: str, namespaced: bool, field_selector: str | None) -> list[Obj]:
        listed = await client.list(resource, namespace=namespace if namespaced else None,
                                   field_selector=field_selector)
        return list(listed.get("items") or ())

    lists = await asyncio.gather(*(items(r, namespaced, fs) for r, namespaced, _, fs in LIVE_RESOURCES))
    out = ClusterObjects()
    for (_, _, name, _), found in zip(LIVE_RESOURCES, lists, strict=True):
        getattr(out, name).extend(found)
    return out


def iter_objects(objects: ClusterObjects) -> Iterable[Obj]:
    for name in KINDS.values():
        yield from getattr(objects, name)


__all__ = ["DUMP_COMMAND", "KINDS", "LIVE_RESOURCES", "ClusterObjects", "DumpError", "dump_files", "dump_time",
           "iter_objects", "load_dump", "parse_dump", "read_live"]
