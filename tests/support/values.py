"""Helpers over JSON-shaped values for tests."""

from __future__ import annotations

from typing import Any


def containers_of(value: Any) -> list[Any]:
    """Every dict and list in ``value`` (itself included), each once per place it holds."""
    out, stack = [], [value]
    while stack:
        x = stack.pop()
        if isinstance(x, dict | list):
            out.append(x)
            stack.extend(x.values() if isinstance(x, dict) else x)
    return out
