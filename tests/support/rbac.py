"""Builders for RBAC table tests: PolicyRules written the short way upstream's tests write them."""

from __future__ import annotations

from typing import Any


def rule(verbs: str, groups: str = "", resources: str = "", urls: str = "", names: str = "") -> dict[str, Any]:
    """A PolicyRule from comma-separated lists (``core`` stands for the core group ``""``); an
    empty string leaves a field out."""
    out: dict[str, Any] = {"verbs": verbs.split(",")}
    for key, value in (("apiGroups", groups), ("resources", resources), ("nonResourceURLs", urls),
                       ("resourceNames", names)):
        if value:
            out[key] = ["" if v == "core" else v for v in value.split(",")]
    return out
