#!/usr/bin/env bash
# Set up everything (venv, dependencies, dig) and run the whole test suite: unit, integration,
# property and the end-to-end tests that start `everynode up` and drive it with real kubectl.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
cd "$ROOT"
# dig (Debian's dnsutils) queries the embedded cluster DNS in one test; install it when we can.
if ! command -v dig >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dnsutils >/dev/null) \
    || echo "warning: could not install dnsutils (dig)" >&2
fi
python -m mypy  # the type check ([tool.mypy] in pyproject.toml), before the tests
exec python -m pytest -q -p no:cacheprovider "$@"
