"""How the kubelet's lease and renewal pace follow the node monitor grace period
(ControlPlaneConfig): upstream's 40 s lease renewed every 10 s at the default 50 s, scaled in
both directions, the monitor never slower than upstream's 5 s."""

from __future__ import annotations

import pytest

from everynode.product.controlplane import ControlPlaneConfig


@pytest.mark.parametrize("grace,renew,lease,monitor", [
    (50.0, 10.0, 40, 5.0),       # upstream defaults
    (15.0, 3.0, 12, 1.5),        # README demo: faster, healthy nodes still never look dead
    (2.0, 0.4, 1, 0.2),
    (0.5, 0.1, 1, 0.05),         # the lease is at least a second (an integer field)
    (3000.0, 600.0, 2400, 5.0),  # very large simulations: fewer heartbeat writes
])
def test_pace_scales_with_the_grace_period(grace: float, renew: float, lease: int, monitor: float) -> None:
    cfg = ControlPlaneConfig(node_monitor_grace_period=grace)
    assert (cfg.heartbeat_interval, cfg.lease_duration, cfg.node_monitor_period) == (renew, lease, monitor)
    # a renewal always lands well inside the lease and the grace period
    assert cfg.heartbeat_interval < cfg.lease_duration
    assert cfg.heartbeat_interval * 5 == pytest.approx(grace)
