"""Layer 2: the versioned object store (one global resourceVersion, CAS writes, watch)."""
