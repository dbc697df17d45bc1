"""The ``apps`` group's resources with rules of their own (upstream ``pkg/registry/apps``)."""
