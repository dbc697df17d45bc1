"""Where the real-world manifests are (``../shared/realworld/``), for every test that applies them.

One rule for all of them: ``EVERYNODE_REALWORLD`` when set, else the folder beside the project
(the main checkout's sibling; a worktree under ``wt/`` finds it one level further up).  The
tests each had their own (one honoured the variable, one looked one level up, one named
``/work``), so a clone elsewhere ran some and failed others.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def folder() -> Path:
    """The folder of the real-world manifests (it may be missing: the caller decides)."""
    configured = os.environ.get("EVERYNODE_REALWORLD")
    if configured:
        return Path(configured)
    for base in (ROOT.parent, ROOT.parent.parent):
        path = base / "shared" / "realworld"
        if path.is_dir():
            return path
    return ROOT.parent / "shared" / "realworld"


def manifest(name: str) -> Path:
    """One manifest of the folder; a test that needs it fails (never skips) without it."""
    path = folder() / name
    if not path.exists():
        pytest.fail(f"{path} not found (set EVERYNODE_REALWORLD)")
    return path
