"""DaemonSet spec accessors: the fields every DaemonSet consumer reads, read in one place.

Defaulting (``SetDefaults_DaemonSet``) sets ``updateStrategy.type`` (``RollingUpdate``) on every
stored DaemonSet; ``minReadySeconds`` is an ``int32`` with ``omitempty``, so 0 arrives as an
absent field.  The accessors encode exactly that, and keep their fallbacks for objects that never
went through an API server (a dump, a table test).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from everynode.api.meta import field_of

Obj = Mapping[str, Any]  # read-only: any JSON-shaped object

ROLLING_UPDATE: Final = "RollingUpdate"
ON_DELETE: Final = "OnDelete"


def min_ready_seconds(ds: Obj) -> int:
    """``spec.minReadySeconds`` (0 when absent)."""
    return int(field_of(field_of(ds, "spec"), "minReadySeconds") or 0)


def update_strategy_type(ds: Obj) -> str:
    """``spec.updateStrategy.type`` (``RollingUpdate`` when absent, as defaulting sets it)."""
    kind = field_of(field_of(field_of(ds, "spec"), "updateStrategy"), "type")
    return kind if isinstance(kind, str) and kind else ROLLING_UPDATE
