"""Helpers that play a kubelet's part against the API in controller tests."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


async def post_condition(client: Any, clock: Any, name: str, ctype: str, status: str, *,
                         node: Obj | None = None) -> None:
    """What a kubelet posts: one node condition (replacing the one of its type), stamped now."""
    node = node or await client.get("nodes", name)
    stamp = clock.rfc3339()
    conds = [c for c in (node.get("status") or {}).get("conditions") or () if c["type"] != ctype]
    conds.append({"type": ctype, "status": status, "reason": "Kubelet", "message": "posted",
                  "lastHeartbeatTime": stamp, "lastTransitionTime": stamp})
    await client.patch("nodes", name, {"status": {"conditions": conds}}, patch_type="merge", subresource="status")
