"""Layer 3: the Kubernetes REST surface — semantics (service) and HTTP transport (http)."""
