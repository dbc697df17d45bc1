"""The README's walkthrough of the article, run for real: every command, every printed line.

The README demonstrates each claim of the seed article with the exact commands a user types and
what they print on everynode.  This test runs them in order against a fresh `everynode up` and
compares the output, so the README cannot go stale.

What is run
-----------
Every fenced block with the info string ``console`` is part of the walkthrough.  In such a
block, a line starting with ``$ `` is a command; the lines up to the next command are its
expected output (stdout and stderr, merged as a terminal shows them).  Commands run in README
order with bash, in a temporary working directory that holds a link ``examples`` to the
repository's examples, so the README's relative paths work.  ``kubectl`` is kubectl 1.33
(``/usr/lib/google-cloud-sdk/bin/kubectl.1.33`` through a ``kubectl`` link on PATH), and
``everynode`` is this venv's.  Exit codes are not compared — an error shows in the output.

Special commands:

* ``$ everynode up ...`` (exactly one, the first command) starts the cluster in the background,
  with the README's flags plus ``--port 0`` (a free port) and a free port substituted for the
  one given to ``--dns-port``; its output is read up to ``Press Ctrl-C to stop.`` and compared.
  The cluster is stopped with SIGINT at the end.
* ``$ export NAME=value`` lines are kept and prepended to every later command (one shell session).
* In later commands, ``-p <the README's DNS port>`` is rewritten to the DNS port actually used.
* ``dig``: when the machine has no ``dig``, a stand-in of the same name (``tests/support/dig.py``:
  dnspython, a dependency of everynode) answers ``dig @SERVER -p PORT NAME [TYPE] +short`` — the
  query still goes to everynode's DNS server over UDP; only the client differs.

Eventual consistency: read-only commands (``kubectl get``, ``kubectl describe``, ``kubectl
explain``, ``kubectl rollout history``, ``everynode node list``, ``everynode status`` without
``--watch``) are re-run until their output
matches, for at most ``SETTLE_SECONDS`` — as a person would look again a moment later; the
failure shows the last output.  Every other command runs exactly once; commands that wait
(``kubectl rollout status``, ``kubectl wait``) are how the README itself waits.

Normalisation (applied to expected and actual output alike, line by line)
-------------------------------------------------------------------------
1. Trailing whitespace is dropped; runs of spaces collapse to one (column alignment of tables
   depends on the widths of varying values).  Leading and trailing blank lines are dropped.
2. UIDs (``8-4-4-4-12`` hex) → ``<uid>``; RFC 3339 timestamps → ``<time>``.
3. Generated name suffixes (``-`` + 5 characters of the apimachinery alphabet
   ``bcdfghjklmnpqrstvwxz2456789``, after a name) → ``-<suffix>``.
4. Ages (``5s``, ``2m3s``, ``4h``, ``12d``) → ``<age>``.
5. IPv4 addresses other than node addresses (``10.0.x.y`` stay literal: they are the simulated
   nodes' stable InternalIPs) → ``<ip>``: pod IPs from the pod CIDRs and Service ClusterIPs.
6. ``https://127.0.0.1:<port>`` → the port becomes ``<port>``.

Comparison
----------
* If the expected output contains a line ``...``, it is matched in order, each ``...``
  standing for any number of lines (used for ``kubectl rollout status``, whose intermediate
  ``Waiting for ...`` lines depend on timing, and for `everynode up`'s banner).
* Otherwise, if the expected output starts with a table header (upper-case column names), the
  header must match exactly and the rows are compared as sorted lists — kubectl sorts rows by
  name, and names end in random suffixes.
* Otherwise the lines must match exactly, in order.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.dig import dig_executable

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
KUBECTL_133 = Path("/usr/lib/google-cloud-sdk/bin/kubectl.1.33")
SETTLE_SECONDS = 30.0
COMMAND_TIMEOUT = 180.0
UP_TIMEOUT = 60.0

READ_ONLY = re.compile(
    r"^(kubectl\s+(get|describe|explain)\b|kubectl\s.*\brollout\s+history\b|everynode\s+node\s+list\b"
    r"|everynode\s+status\b(?!.*\s(-w|--watch)\b))")


# ------------------------------------------------------------------------------------------ parsing

@dataclass
class Step:
    command: str
    expected: list[str] = field(default_factory=list)
    line: int = 0  # 1-based line of the command in README.md


def parse_console_blocks(text: str) -> list[Step]:
    """The ``$ `` commands of every ```console block, each with its expected output lines."""
    steps: list[Step] = []
    in_block = False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not in_block:
            if stripped == "```console":
                in_block = True
            continue
        if stripped.startswith("```"):
            in_block = False
            continue
        if line.startswith("$ "):
            steps.append(Step(line[2:].strip(), line=number))
        elif steps:
            steps[-1].expected.append(line)
        elif line.strip():
            raise AssertionError(f"README.md:{number}: output before the first command: {line!r}")
    if in_block:
        raise AssertionError("README.md: a ```console block is not closed")
    return steps


# ------------------------------------------------------------------------------------------ normalising

_UID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z\b")
_SUFFIX = re.compile(r"(?<=[a-z0-9])-[bcdfghjklmnpqrstvwxz2456789]{5}\b")
_AGE = re.compile(r"\b\d+[smhd](\d+[smh])?\b")
_IP = re.compile(r"\b10\.(\d{1,3})\.\d{1,3}\.\d{1,3}\b")
_URL_PORT = re.compile(r"(https://127\.0\.0\.1):\d+")
_HEADER = re.compile(r"^[A-Z][A-Z0-9()/_.-]*( [A-Z][A-Z0-9()/_.-]*)*$")


def normalise_line(line: str) -> str:
    line = re.sub(r" +", " ", line.rstrip())
    line = _UID.sub("<uid>", line)
    line = _TIME.sub("<time>", line)
    line = _SUFFIX.sub("-<suffix>", line)
    line = _AGE.sub("<age>", line)
    line = _IP.sub(lambda m: m.group(0) if m.group(1) == "0" else "<ip>", line)
    return _URL_PORT.sub(r"\1:<port>", line)


def normalise(lines: list[str]) -> list[str]:
    out = [normalise_line(line) for line in lines]
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return out


def _match_ellipsis(expected: list[str], actual: list[str]) -> bool:
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head == "...":
        return any(_match_ellipsis(rest, actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and actual[0] == head and _match_ellipsis(rest, actual[1:])


def outputs_match(expected: list[str], actual: list[str]) -> bool:
    exp, act = normalise(expected), normalise(actual)
    if "..." in exp:
        return _match_ellipsis(exp, act)
    if exp and _HEADER.match(exp[0]):
        return bool(act) and exp[0] == act[0] and sorted(exp[1:]) == sorted(act[1:])
    return exp == act


# ------------------------------------------------------------------------------------------ running

def free_port() -> int:
    """A port free for both UDP and TCP on loopback right now."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind(("127.0.0.1", 0))
            port = tcp.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                try:
                    udp.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    raise AssertionError("no free port")


@dataclass
class Session:
    workdir: Path
    env: dict[str, str]
    exports: list[str] = field(default_factory=list)
    port_rewrites: dict[str, str] = field(default_factory=dict)
    up: subprocess.Popen[str] | None = None

    def rewrite(self, command: str) -> str:
        for old, new in self.port_rewrites.items():
            command = command.replace(old, new)
        return command

    def run(self, command: str) -> list[str]:
        script = "\n".join([*self.exports, self.rewrite(command)])
        proc = subprocess.run(["bash", "-c", script], cwd=self.workdir, env=self.env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=COMMAND_TIMEOUT)
        return proc.stdout.splitlines()

    def start_up(self, command: str) -> list[str]:
        args = command.split()
        m = re.search(r"--dns-port[ =](\d+)", command)
        if m:
            port = str(free_port())
            args = [a for a in re.sub(r"--dns-port[ =]\d+", f"--dns-port {port}", command).split()]
            self.port_rewrites[f"-p {m.group(1)}"] = f"-p {port}"
        self.up = subprocess.Popen(["bash", "-c", "exec " + " ".join([*args, "--port", "0"])],
                                   cwd=self.workdir, env=self.env, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        lines: list[str] = []
        deadline = time.monotonic() + UP_TIMEOUT
        assert self.up.stdout is not None
        while time.monotonic() < deadline:
            line = self.up.stdout.readline()
            if not line:
                raise AssertionError("everynode up exited:\n" + "\n".join(lines))
            lines.append(line.rstrip("\n"))
            if line.strip() == "Press Ctrl-C to stop.":
                return lines
        raise AssertionError("everynode up did not come up:\n" + "\n".join(lines))

    def stop(self) -> None:
        if self.up is None or self.up.poll() is not None:
            return
        self.up.send_signal(signal.SIGINT)
        try:
            self.up.wait(30)
        except subprocess.TimeoutExpired:
            self.up.kill()
            self.up.wait()


def make_session(tmp_path: Path) -> Session:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kubectl = KUBECTL_133 if KUBECTL_133.exists() else shutil.which("kubectl")
    if kubectl is None:
        pytest.fail("no kubectl on this machine (wanted /usr/lib/google-cloud-sdk/bin/kubectl.1.33)")
    (bin_dir / "kubectl").symlink_to(kubectl)
    dig_executable(bin_dir)  # the machine's dig, or a stand-in of that name in bin_dir
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "examples").symlink_to(REPO / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBECONFIG")}
    env["PATH"] = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), env.get("PATH", "")])
    env["HOME"] = str(tmp_path)  # no ~/.kube/config of the machine's user
    env["COLUMNS"] = "200"  # rich wraps at 80 columns when stdout is not a terminal
    return Session(workdir=workdir, env=env)


def describe_mismatch(step: Step, actual: list[str]) -> str:
    return (f"README.md:{step.line}: $ {step.command}\n"
            "--- expected (normalised)\n" + "\n".join(normalise(step.expected)) +
            "\n--- actual (normalised)\n" + "\n".join(normalise(actual)) +
            "\n--- actual (as printed)\n" + "\n".join(actual))


# ------------------------------------------------------------------------------------------ tests

@pytest.mark.parametrize(("expected", "actual", "match"), [
    (["NAME AGE", "a-x2b4z 3s", "b-q9w8r 12s"], ["NAME    AGE", "b-kkkkk   1m2s", "a-bbbbb 5s"], True),
    (["NAME AGE", "a 3s"], ["NAME AGE", "b 3s"], False),
    (["...", 'daemon set "x" successfully rolled out'],
     ["Waiting ...", "Waiting again", 'daemon set "x" successfully rolled out'], True),
    (["...", 'daemon set "x" successfully rolled out'], ["error: timed out waiting for the condition"], False),
    (["10.0.0.2 10.244.1.5"], ["10.0.0.2 10.244.3.2"], True),
    (["10.0.0.2"], ["10.0.0.3"], False),
    (["line 1", "line 2"], ["line 2", "line 1"], False),
    (["uid 0c8f5d6e-0000-4000-8000-000000000001"], ["uid 9f1a2b3c-1111-4111-8111-111111111111"], True),
])
def test_output_comparison(expected: list[str], actual: list[str], match: bool) -> None:
    assert outputs_match(expected, actual) is match


def test_readme_opens_with_the_two_setup_commands() -> None:
    text = README.read_text()
    first = text.split("\n## ")[1]  # the first section after the title
    assert "scripts/demo.sh" in first and "scripts/test.sh" in first


def test_readme_walkthrough(tmp_path: Path) -> None:
    steps = parse_console_blocks(README.read_text())
    assert steps and steps[0].command.startswith("everynode up"), "the walkthrough starts with `everynode up`"
    assert not any(s.command.startswith("everynode up") for s in steps[1:]), "only one `everynode up`"
    session = make_session(tmp_path)
    try:
        actual = session.start_up(steps[0].command)
        if not outputs_match(steps[0].expected, actual):
            pytest.fail(describe_mismatch(steps[0], actual), pytrace=False)
        for step in steps[1:]:
            if re.match(r"^export \w+=", step.command):
                session.exports.append(step.command)
                actual = session.run("true")
            else:
                actual = session.run(step.command)
                deadline = time.monotonic() + SETTLE_SECONDS
                while (not outputs_match(step.expected, actual) and READ_ONLY.match(step.command)
                       and time.monotonic() < deadline):
                    time.sleep(0.3)
                    actual = session.run(step.command)
            if not outputs_match(step.expected, actual):
                pytest.fail(describe_mismatch(step, actual), pytrace=False)
    finally:
        session.stop()
