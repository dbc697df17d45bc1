"""The JSONPath subset CRDs use: ``additionalPrinterColumns[].jsonPath`` and the scale
subresource's ``specReplicasPath``/``statusReplicasPath``/``labelSelectorPath``.

Why a subset: upstream evaluates printer columns with client-go's ``util/jsonpath`` (the
template is ``{`` + jsonPath + ``}``), and CRD validation already restricts scale paths to
simple field paths (``.spec.replicas``).  Column paths in real CRDs are field paths with
``[n]``/``['key']``/``[*]`` steps and ``[?(@.type=="Ready")]`` condition filters; those are
what is supported here.  A path that does not parse is refused by CRD validation with
upstream's words; a path that finds nothing gives an empty cell, as upstream's printer does.
"""

from __future__ import annotations

import re
from typing import Any

_STEP = re.compile(r"""\.(?P<field>[A-Za-z0-9_\-$]+)|\[(?P<index>-?\d+)\]|\[(?P<star>\*)\]"""
                   r"""|\[['"](?P<key>[^'"]+)['"]\]|\[\?\(@\.(?P<fpath>[A-Za-z0-9_.\-]+)\s*==\s*['"]"""
                   r"""(?P<fvalue>[^'"]*)['"]\)\]""")

Step = tuple[str, Any]


def parse(path: str) -> list[Step] | None:
    """The steps of ``path`` (``.spec.replicas``), or None when outside the subset."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    if not path.startswith((".", "[")):
        return None
    steps: list[Step] = []
    at = 0
    while at < len(path):
        m = _STEP.match(path, at)
        if m is None:
            return None
        if m.group("field") is not None:
            steps.append(("field", m.group("field")))
        elif m.group("index") is not None:
            steps.append(("index", int(m.group("index"))))
        elif m.group("star") is not None:
            steps.append(("star", None))
        elif m.group("key") is not None:
            steps.append(("field", m.group("key")))
        else:
            steps.append(("filter", (m.group("fpath").split("."), m.group("fvalue"))))
        at = m.end()
    return steps


def find(obj: Any, path: str) -> list[Any]:
    """Every value ``path`` selects in ``obj`` (empty when it selects nothing)."""
    steps = parse(path)
    if steps is None:
        return []
    current = [obj]
    for kind, arg in steps:
        following: list[Any] = []
        for value in current:
            if kind == "field":
                if isinstance(value, dict) and arg in value:
                    following.append(value[arg])
            elif kind == "index":
                if isinstance(value, list) and -len(value) <= arg < len(value):
                    following.append(value[arg])
            elif kind == "star":
                if isinstance(value, list):
                    following.extend(value)
                elif isinstance(value, dict):
                    following.extend(value.values())
            else:
                fpath, fvalue = arg
                for item in value if isinstance(value, list) else ():
                    probe = item
                    for name in fpath:
                        probe = probe.get(name) if isinstance(probe, dict) else None
                    if probe is not None and str(probe) == fvalue:
                        following.append(item)
        current = following
    return current


def field_path(path: str) -> list[str] | None:
    """A plain field path (``.spec.replicas``) as its names, or None (scale paths must be plain)."""
    steps = parse(path)
    if not steps or any(kind != "field" for kind, _ in steps):
        return None
    return [name for _, name in steps]
