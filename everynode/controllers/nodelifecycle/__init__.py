"""Node lifecycle: condition taints, the health monitor and NotReady handling.

One concern per module: :mod:`.taints` (which taints a node's conditions call for, pure),
:mod:`.zones` (zone keys, states and the tainting rate, pure), :mod:`.health` (what is recorded
per node, how a silent node is marked Unknown), :mod:`.monitor` (which nodes a monitor pass
visits, and the bookkeeping that lets it skip the others) and :mod:`.controller` (the
controller on the kit: taint writes, the NoExecute queue, zones, pods).  The names importers
use are re-exported here.
"""

from everynode.controllers.nodelifecycle.controller import NodeLifecycleController
from everynode.controllers.nodelifecycle.health import HeartbeatModel, mark_unknown
from everynode.controllers.nodelifecycle.taints import (
    NOT_READY,
    UNREACHABLE,
    desired_noschedule_keys,
    reconcile_noschedule_taints,
    swap_noexecute_taint,
)
from everynode.controllers.nodelifecycle.zones import (
    EXCLUDE_DISRUPTION_LABEL,
    FULL_DISRUPTION,
    NORMAL,
    PARTIAL_DISRUPTION,
    TokenBucket,
    zone_key,
    zone_rate,
    zone_state,
)

__all__ = [
    "EXCLUDE_DISRUPTION_LABEL",
    "FULL_DISRUPTION",
    "NORMAL",
    "NOT_READY",
    "PARTIAL_DISRUPTION",
    "UNREACHABLE",
    "HeartbeatModel",
    "NodeLifecycleController",
    "TokenBucket",
    "desired_noschedule_keys",
    "mark_unknown",
    "reconcile_noschedule_taints",
    "swap_noexecute_taint",
    "zone_key",
    "zone_rate",
    "zone_state",
]
