"""The examples of docs/python-api.md, run as printed: each ```python block is a script run with
this venv's Python in a fresh directory (the examples check themselves with ``assert``); a block
that starts with a ``# test_*.py`` line is a user's test file, run by pytest (with ``-W error``)
next to the ``agent.yaml`` it applies."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

DOC = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
TEST_FILE = re.compile(r"^# (test_\w+\.py)\n")
AGENT_YAML = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: default}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: registry.k8s.io/pause:3.9}]
"""


def blocks() -> list[str]:
    found = BLOCK.findall(DOC.read_text())
    assert len(found) >= 4, "docs/python-api.md lost its examples"
    return found


SCRIPTS = [b for b in blocks() if not TEST_FILE.match(b)]
TESTS = [b for b in blocks() if TEST_FILE.match(b)]


@pytest.mark.parametrize("code", SCRIPTS, ids=[f"example-{i + 1}" for i in range(len(SCRIPTS))])
def test_example_script(code: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("code", TESTS, ids=[f"pytest-example-{i + 1}" for i in range(len(TESTS))])
def test_example_test_file(code: str, pytester: pytest.Pytester) -> None:
    m = TEST_FILE.match(code)
    assert m is not None
    (pytester.path / m.group(1)).write_text(code)
    (pytester.path / "agent.yaml").write_text(AGENT_YAML)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "-W", "error")
    result.assert_outcomes(passed=1)
