"""rbac.authorization.k8s.io: the policy-based storages of the four RBAC kinds (``policy.py``)."""
