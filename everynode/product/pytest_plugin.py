"""pytest plugin (registered through the ``pytest11`` entry point): the ``everynode_cluster``
fixture, a running embedded cluster per test.

Usage in a user's own tests::

    def test_my_daemonset(everynode_cluster):
        subprocess.run(["kubectl", "--kubeconfig", str(everynode_cluster.kubeconfig),
                        "apply", "-f", "my-daemonset.yaml"], check=True)

Options come from the ``everynode`` marker: ``@pytest.mark.everynode(nodes=5, pod_startup=0.1)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "everynode(**options): options for the everynode_cluster fixture (see everynode.Cluster)")


@pytest.fixture
def everynode_cluster(request: pytest.FixtureRequest) -> Iterator[Any]:
    from everynode.product.cluster import Cluster

    marker = request.node.get_closest_marker("everynode")
    options = dict(marker.kwargs) if marker else {}
    options.setdefault("pod_startup", 0.2)
    with Cluster(**options) as cluster:
        yield cluster
