"""The everynode version, in a module of its own: the package root re-exports it for
``everynode.__version__`` and the CLI reads it from here, so no layer imports the package's
``__init__`` (which reaches down into the product layer for ``everynode.Cluster``)."""

__version__ = "0.1.0"
