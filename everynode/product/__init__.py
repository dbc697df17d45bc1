"""Layer 8: what a user meets — the CLI, the Python API, the pytest plugin, benchmarks."""
