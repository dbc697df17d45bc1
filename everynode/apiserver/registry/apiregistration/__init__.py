"""apiregistration.k8s.io: APIService."""
