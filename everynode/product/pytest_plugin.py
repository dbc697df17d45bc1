"""pytest plugin (registered through the ``pytest11`` entry point): the ``everynode_cluster``
fixture, a running embedded cluster per test.

Usage in a user's own tests::

    def test_my_daemonset(everynode_cluster):
        subprocess.run(["kubectl", "--kubeconfig", str(everynode_cluster.kubeconfig),
                        "apply", "-f", "my-daemonset.yaml"], check=True)

Options come from the ``everynode`` marker: ``@pytest.mark.everynode(nodes=5, pod_startup=0.1)``.

pytest-asyncio (installed with everynode's test extra) warns in every run of a project that has
not set ``asyncio_default_fixture_loop_scope`` — a deprecation warning in the user's own output,
an error under ``-W error``, though nothing of ours is async.  So, when pytest-asyncio is there,
this plugin gives that option the default ``"function"`` (the value pytest-asyncio announces as
its future default, and the one everynode's own tests use), through the public ``addini``: a value
the user sets in their configuration or with ``-o`` still wins, and pytest-asyncio behaves as it
will without being told.  The declaration happens in ``pytest_configure`` before
pytest-asyncio's own (``tryfirst``), whichever plugin was loaded first.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

ASYNCIO_LOOP_SCOPE_OPTION = "asyncio_default_fixture_loop_scope"
_parser: pytest.Parser | None = None


def pytest_addoption(parser: pytest.Parser) -> None:
    global _parser
    _parser = parser


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if _parser is not None and config.pluginmanager.hasplugin("asyncio"):
        _parser.addini(ASYNCIO_LOOP_SCOPE_OPTION, type="string", default="function",
                       help="default scope of the asyncio event loop used to execute async fixtures "
                            "(everynode's default: function)")
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
