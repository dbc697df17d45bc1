"""The client commands' pure parts: flag parsing, kubeconfig lookup, one-line error texts."""

from __future__ import annotations

import socket
from pathlib import Path

import aiohttp
import pytest

from everynode.api.errors import ApiError, not_found, status
from everynode.product import connect
from everynode.product.commands_node import count_pods_by_node, format_taint, parse_label, parse_taint


@pytest.mark.parametrize(("text", "expected"), [
    ("gpu=true:NoSchedule", {"key": "gpu", "value": "true", "effect": "NoSchedule"}),
    ("dedicated:NoExecute", {"key": "dedicated", "effect": "NoExecute"}),
    ("example.com/k=v:PreferNoSchedule", {"key": "example.com/k", "value": "v", "effect": "PreferNoSchedule"}),
])
def test_parse_taint(text: str, expected: dict[str, str]) -> None:
    assert parse_taint(text) == expected
    assert format_taint(expected) == text


@pytest.mark.parametrize(("text", "message"), [
    ("gpu=true", "expected key[=value]:Effect"),
    ("gpu=true:Sometimes", "invalid taint effect: Sometimes, unsupported taint effect"),
    ("=v:NoSchedule", "the key may not be empty"),
    (":NoSchedule", "expected key[=value]:Effect"),
])
def test_parse_taint_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_taint(text)


@pytest.mark.parametrize(("text", "expected"), [
    ("a=b", ("a", "b")),
    ("a=", ("a", "")),
    ("example.com/x=y=z", ("example.com/x", "y=z")),
])
def test_parse_label(text: str, expected: tuple[str, str]) -> None:
    assert parse_label(text) == expected


@pytest.mark.parametrize("text", ["novalue", "=v"])
def test_parse_label_errors(text: str) -> None:
    with pytest.raises(ValueError, match="expected key=value"):
        parse_label(text)


def test_count_pods_by_node_skips_terminated_and_unbound() -> None:
    pods = [
        {"spec": {"nodeName": "a"}, "status": {"phase": "Running"}},
        {"spec": {"nodeName": "a"}, "status": {"phase": "Pending"}},
        {"spec": {"nodeName": "a"}, "status": {"phase": "Succeeded"}},
        {"spec": {"nodeName": "b"}, "status": {"phase": "Failed"}},
        {"spec": {}, "status": {"phase": "Pending"}},
    ]
    assert dict(count_pods_by_node(pods)) == {"a": 2}


# --------------------------------------------------------------------------- kubeconfig lookup

def test_kubeconfig_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    with pytest.raises(connect.CliError, match=r"^error: no kubeconfig at \.everynode/kubeconfig or "
                                               r"~/\.kube/config \(start one with `everynode up`\)$"):
        connect.resolve_kubeconfig(None)
    home = tmp_path / "home" / ".kube" / "config"
    home.parent.mkdir(parents=True)
    home.write_text("{}")
    assert connect.resolve_kubeconfig(None) == home
    local = tmp_path / ".everynode" / "kubeconfig"
    local.parent.mkdir()
    local.write_text("{}")
    assert connect.resolve_kubeconfig(None) == Path(".everynode/kubeconfig")
    env = tmp_path / "env-config"
    monkeypatch.setenv("KUBECONFIG", str(env))
    with pytest.raises(connect.CliError, match="no kubeconfig at .*env-config"):
        connect.resolve_kubeconfig(None)
    env.write_text("{}")
    assert connect.resolve_kubeconfig(None) is None  # the client merges $KUBECONFIG's files
    explicit = tmp_path / "explicit"
    with pytest.raises(connect.CliError, match="no kubeconfig at .*explicit"):
        connect.resolve_kubeconfig(explicit)
    explicit.write_text("{}")
    assert connect.resolve_kubeconfig(explicit) == explicit


# --------------------------------------------------------------------------- error lines

class _Key:
    host, port, ssl, is_ssl = "example.invalid", 6443, True, True


@pytest.mark.parametrize(("exc", "line"), [
    (aiohttp.ClientConnectorError(_Key(), ConnectionRefusedError(111, "Connect call failed")),  # type: ignore[arg-type]
     "error: cannot reach the API server at https://s:1: connection refused"),
    (aiohttp.ClientConnectorError(_Key(), socket.gaierror(-2, "Name or service not known")),  # type: ignore[arg-type]
     "error: cannot reach the API server at https://s:1: unknown host example.invalid: Name or service not known"),
    (TimeoutError(), "error: cannot reach the API server at https://s:1: request timed out"),
    (aiohttp.ServerDisconnectedError(), "error: cannot reach the API server at https://s:1: "
                                        "the server closed the connection"),
    (not_found("nodes", "", "x"), 'Error from server (NotFound): nodes "x" not found'),
    (ApiError(status(401, "Unauthorized", "Unauthorized")),
     "error: You must be logged in to the server (Unauthorized)"),
    (ApiError(status(500, "", "boom")), "Error from server: boom"),
    (connect.CliError("error: no kubeconfig at x"), "error: no kubeconfig at x"),
    (KeyError("bug"), None),
])
def test_error_line(exc: BaseException, line: str | None) -> None:
    assert connect.error_line(exc, "https://s:1") == line
