"""authentication.k8s.io: the review resources (``reviews.py``)."""
