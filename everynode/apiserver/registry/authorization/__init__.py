"""The authorization.k8s.io storages (``pkg/registry/authorization``)."""
