#!/usr/bin/env bash
# Set up everything (venv, dependencies) and run the whole test suite: unit, integration and the
# end-to-end tests that start `everynode up` and drive it with real kubectl.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
cd "$ROOT"
exec python -m pytest -q -p no:cacheprovider "$@"
