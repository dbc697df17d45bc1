#!/usr/bin/env bash
# Set up everything (the project's venv, see _venv.sh) and run the whole test suite: unit,
# integration, property and the end-to-end tests that start `everynode up` and drive it with real
# kubectl.  Nothing outside the project folder is installed: the one test tool that may be
# missing, dig, has a stand-in that sends the same DNS query with dnspython.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
cd "$ROOT"
python -m mypy  # the type check ([tool.mypy] in pyproject.toml), before the tests
exec python -m pytest -q -p no:cacheprovider "$@"
