"""The policy API group: PodDisruptionBudgets (``poddisruptionbudget.py``)."""
