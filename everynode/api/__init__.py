"""Layer 1, the object model: Kubernetes objects as plain JSON-shaped dicts.

The wire format *is* the model: no generated classes, no conversion on the hot path.  This
layer holds the resource registry, defaulting, validation with Kubernetes' field paths and
messages, and the pure predicates (selectors, taints, affinity, quantities).  No I/O here.
"""
