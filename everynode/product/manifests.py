"""Apply manifests through the client, as ``kubectl apply --server-side`` would.

Used by ``everynode up --apply FILE`` and ``Cluster.apply``.  Server-side apply (field manager
``everynode``, conflicts forced as ``--force-conflicts`` does) creates missing objects and updates
existing ones in one request, so applying the same manifest twice is harmless.  Documents are
read with PyYAML's C loader (YAML 1.1, like kubectl); a ``v1 List`` is applied item by item, as
kubectl does.

What a source is (``documents``): YAML text, a path, one object or a list of objects.  A ``str``
is YAML text when it spans lines or starts with ``{`` (one-line JSON), else a path — a manifest
always has at least ``apiVersion`` and ``kind`` on lines of their own or inside braces, and a
file name has neither, so the two never meet.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from everynode.api import registry
from everynode.api.registry import ResourceType
from everynode.client.base import Client

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader

Obj = dict[str, Any]
Source = str | os.PathLike[str] | Mapping[str, Any] | Sequence[Mapping[str, Any]]
FIELD_MANAGER = "everynode"


class ManifestError(Exception):
    pass


def _checked(docs: list[Any]) -> list[Obj]:
    out: list[Obj] = []
    for doc in docs:
        if not isinstance(doc, Mapping) or "kind" not in doc or "apiVersion" not in doc:
            raise ManifestError("every document needs apiVersion and kind")
        if doc["kind"] == "List" and doc["apiVersion"] == "v1":
            out += _checked(list(doc.get("items") or ()))
        else:
            out.append(dict(doc))
    return out


def load_documents(text: str) -> list[Obj]:
    try:
        docs = [d for d in yaml.load_all(text, Loader=_Loader) if d]
    except yaml.YAMLError as e:
        raise ManifestError(f"invalid YAML: {e}") from None
    return _checked(docs)


def read_file(path: str | os.PathLike[str]) -> list[Obj]:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ManifestError(f"cannot read {path}: {e.strerror or e}") from None
    return load_documents(text)


def documents(source: Source) -> list[Obj]:
    """The objects of a source: YAML text, a path, one object or a list of objects."""
    if isinstance(source, str):
        if "\n" in source or source.lstrip().startswith("{"):
            return load_documents(source)
        return read_file(source)
    if isinstance(source, os.PathLike):
        return read_file(source)
    if isinstance(source, Mapping):
        return _checked([source])
    return _checked(list(source))


def resource_type(obj: Obj) -> ResourceType:
    rt = registry.by_kind(obj["apiVersion"], obj["kind"])
    if rt is None:
        raise ManifestError(f'no matches for kind "{obj["kind"]}" in version "{obj["apiVersion"]}"')
    return rt


async def apply_object(client: Client, obj: Obj, *, field_manager: str = FIELD_MANAGER) -> Obj:
    """Server-side apply of one object; returns the object as stored."""
    rt = resource_type(obj)
    md = obj.get("metadata") or {}
    namespace = (md.get("namespace") or "default") if rt.namespaced else ""
    return await client.patch(rt.key, md.get("name", ""), obj, namespace=namespace, patch_type="apply",
                              field_manager=field_manager, force=True)


def applied_line(obj: Obj) -> str:
    """kubectl's line for an applied object: ``daemonset.apps/node-exporter serverside-applied``."""
    rt = resource_type(obj)
    kind = rt.kind.lower() if not rt.group else f"{rt.kind.lower()}.{rt.group}"
    return f"{kind}/{(obj.get('metadata') or {}).get('name', '')} serverside-applied"


async def apply(client: Client, source: Source, *, field_manager: str = FIELD_MANAGER) -> list[Obj]:
    """Apply every object of ``source`` in order; returns them as stored."""
    return [await apply_object(client, doc, field_manager=field_manager) for doc in documents(source)]


async def apply_file(client: Client, path: Path) -> list[str]:
    return [applied_line(obj) for obj in await apply(client, path)]
