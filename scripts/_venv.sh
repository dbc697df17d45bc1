# Sourced by the scripts in this folder: creates ./.venv (once) and installs everynode with its
# test dependencies into it, compiles its hot modules (scripts/compile.py), then puts .venv/bin
# first on PATH.
#
# It changes nothing outside the project folder: no global or user installs, no package
# manager.  uv is used only when it is already on PATH (it installs ~5× faster,
# python-stack.md §8); otherwise the standard library's venv and the venv's own pip.
# The interpreter is $PYTHON, else python3 (≥ 3.11).  The install is repeated only when
# pyproject.toml changed since the last one (a stamp file inside the venv), so every later
# start is quick.  EVERYNODE_VENV overrides where the venv lives.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${EVERYNODE_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
STAMP="$VENV/.everynode-installed"

_venv_fail() {
  echo "error: $*" >&2
  return 1
}

if [ ! -x "$VENV/bin/python" ]; then
  command -v "$PY" >/dev/null 2>&1 || _venv_fail "no $PY on PATH: install Python ≥ 3.11 (or set PYTHON=/path/to/python3)"
  "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || _venv_fail "$("$PY" -V 2>&1) is too old: everynode needs Python ≥ 3.11 (set PYTHON=/path/to/python3.11+)"
  echo "creating $VENV …" >&2
  if command -v uv >/dev/null 2>&1; then
    uv venv --quiet --seed --python "$PY" "$VENV"  # --seed: pip too, should uv go away
  else
    "$PY" -m venv "$VENV" \
      || _venv_fail "$PY -m venv failed (on Debian/Ubuntu the venv module is the package python3-venv)"
  fi
fi

if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ]; then
  echo "installing everynode and its dependencies into $VENV …" >&2
  if command -v uv >/dev/null 2>&1; then
    uv pip install --quiet --python "$VENV/bin/python" --compile-bytecode -e "$ROOT[test]"
  else
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -e "$ROOT[test]"
  fi
  touch "$STAMP"
fi
# The hot modules compiled with mypyc (everynode/compiled.py), rebuilt when a source changed;
# without a C compiler they run from source.
"$VENV/bin/python" "$ROOT/scripts/compile.py" --if-stale
export PATH="$VENV/bin:$PATH"
export VIRTUAL_ENV="$VENV"
