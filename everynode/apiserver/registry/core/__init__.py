"""The core group's resources with rules of their own (upstream ``pkg/registry/core``)."""
