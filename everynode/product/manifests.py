"""Apply YAML manifests through the client, as ``kubectl apply --server-side`` would.

Used by ``everynode up --apply FILE`` and the Python API.  Server-side apply (field manager
``everynode``) creates missing objects and updates existing ones in one request, so applying the
same file twice is harmless.  Documents are read with PyYAML's C loader (YAML 1.1, like kubectl).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from everynode.api import registry
from everynode.client.base import Client

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader


class ManifestError(Exception):
    pass


def load_documents(text: str) -> list[dict[str, Any]]:
    try:
        docs = [d for d in yaml.load_all(text, Loader=_Loader) if d]
    except yaml.YAMLError as e:
        raise ManifestError(f"invalid YAML: {e}") from None
    for doc in docs:
        if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
            raise ManifestError("every document needs apiVersion and kind")
    return docs


async def apply_object(client: Client, obj: dict[str, Any], *, field_manager: str = "everynode") -> str:
    rt = registry.by_kind(obj["apiVersion"], obj["kind"])
    if rt is None:
        raise ManifestError(f'no resource for "{obj["apiVersion"]}, Kind={obj["kind"]}"')
    md = obj.get("metadata") or {}
    namespace = (md.get("namespace") or "default") if rt.namespaced else ""
    await client.patch(rt.key, md.get("name", ""), obj, namespace=namespace, patch_type="apply",
                       field_manager=field_manager, force=True)
    kind = rt.kind.lower() if not rt.group else f"{rt.kind.lower()}.{rt.group}"
    return f"{kind}/{md.get('name', '')} serverside-applied"


async def apply_file(client: Client, path: Path) -> list[str]:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ManifestError(f"cannot read {path}: {e.strerror or e}") from None
    return [await apply_object(client, doc) for doc in load_documents(text)]
