"""Layer 5: the controllers (DaemonSet, node lifecycle, pod GC, garbage collector, namespaces).

Each controller talks to the API only through :mod:`everynode.client` (informers, work queue,
expectations, events), so the same code runs in-process and against a real cluster.
"""
