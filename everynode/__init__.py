"""everynode: the Kubernetes DaemonSet, built in Python.

The package is split into the eight layers of DESIGN.md; each imports only from the layers
above it: ``api`` → ``storage`` → ``apiserver`` → ``client`` → ``controllers`` →
``scheduler`` → ``kubelet`` → ``product``.  The public Python API (``everynode.Cluster``)
lives in the product layer and is imported lazily so that ``import everynode`` stays cheap.
"""

from __future__ import annotations

from typing import Any

from everynode import compiled
from everynode.version import __version__

# Before any other module: the compiled modules run only from a fresh build (compiled.py).
BUILD = compiled.guard()

__all__ = ["Cluster", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Cluster":
        from everynode.product.cluster import Cluster

        return Cluster
    raise AttributeError(name)
