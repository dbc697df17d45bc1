"""Layer 3: the Kubernetes REST surface — semantics (service, registry/) and HTTP transport
(http, server)."""
