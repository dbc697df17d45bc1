#!/usr/bin/env bash
# Set up everything and run the main job: the embedded cluster (`everynode up`) with the seed
# article's example — the Prometheus node exporter as a DaemonSet on every node, control plane
# included — then keep the cluster running until Ctrl-C.  Extra arguments go to `everynode up`.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
cd "$ROOT"
exec everynode up --apply examples/node-exporter.yaml "$@"
