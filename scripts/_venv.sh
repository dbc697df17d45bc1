# Sourced by the scripts in this folder: creates ./.venv (once) and installs everynode with its
# test dependencies into it.  uv is used when it can be installed (×5 faster, python-stack.md §8);
# plain pip otherwise.  Bytecode is compiled so every CLI start is fast.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${EVERYNODE_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  if "$PY" -m pip install --quiet --disable-pip-version-check uv >/dev/null 2>&1 && "$PY" -m uv --version >/dev/null 2>&1; then
    "$PY" -m uv venv --quiet -p "$PY" "$VENV"
  else
    "$PY" -m venv "$VENV"
  fi
fi
if "$PY" -m uv --version >/dev/null 2>&1; then
  "$PY" -m uv pip install --quiet --python "$VENV/bin/python" --compile-bytecode -e "$ROOT[test]"
else
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$ROOT[test]"
fi
export PATH="$VENV/bin:$PATH"
