"""`everynode bench --json`: the DESIGN contract's result keys, through the real command line.

Tiny clusters only: this checks the contract (keys, types, ``ratio = seconds / floor_seconds``),
never the figures — benchmarks are not timed tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import everynode

CONTRACT = {"scenario": str, "nodes": int, "transport": str, "seconds": float, "cpu_seconds": float,
            "peak_rss_mib": float, "floor_seconds": float, "ratio": float}


def bench(*args: str, env: dict[str, str] | None = None) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "everynode", "bench", *args, "--json"],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("scenario", ["converge", "rollout", "churn", "schedule"])
def test_result_line_carries_the_contract_keys(scenario: str) -> None:
    (result,) = bench(scenario, "--nodes", "12")
    for key, kind in CONTRACT.items():
        assert isinstance(result[key], kind | int if kind is float else kind), (key, result[key])
    assert (result["scenario"], result["nodes"], result["transport"]) == (scenario, 12, "inprocess")
    assert result["floor_seconds"] > 0
    # whether the hot modules ran compiled (everynode/compiled.py): the same tree, the same answer
    assert result["compiled"] is (everynode.BUILD == "fresh")
    (pure,) = bench(scenario, "--nodes", "12", env={"EVERYNODE_PURE": "1"})
    assert pure["compiled"] is False
    # the output rounds seconds to 0.1 ms, the floor to 1 µs and the ratio to 0.01: the ratio
    # lies within what that allows
    seconds, floor = result["seconds"], result["floor_seconds"]
    assert ((seconds - 5e-5) / (floor + 5e-7) - 0.005 <= result["ratio"]
            <= (seconds + 5e-5) / (floor - 5e-7) + 0.005)


def test_converge_splits_the_ratio_at_the_api_floor() -> None:
    """``api_floor_seconds``: the same pods' three writes straight through the API service;
    ``api_ratio = seconds / api_floor_seconds`` (so ratio = api_ratio × api floor / storage floor)."""
    (result,) = bench("converge", "--nodes", "12")
    seconds, through_api = result["seconds"], result["api_floor_seconds"]
    assert through_api > result["floor_seconds"] > 0  # API semantics cost more than dict writes
    # seconds are rounded to 4 decimals and api_ratio to 2: the bounds allow for both roundings.
    assert ((seconds - 5e-5) / (through_api + 5e-5) - 0.005 <= result["api_ratio"]
            <= (seconds + 5e-5) / (through_api - 5e-5) + 0.005)


def test_sync_reports_microseconds_per_sync() -> None:
    (result,) = bench("sync", "--nodes", "12")
    assert result["scenario"] == "sync" and result["us_per_sync"] > 0


@pytest.mark.parametrize("max_unavailable", ["1", "25%"])
def test_plan_reports_simulated_and_wall_seconds(max_unavailable: str) -> None:
    """``plan``: a rollout in virtual time; ``ratio`` is simulated / wall, and the simulated
    duration is the arithmetic's (waves × 5 s start-up: 8 nodes: 8 waves, or 4 of 2 nodes at 25%)."""
    (result,) = bench("plan", "--nodes", "8", "--max-unavailable", max_unavailable)
    for key, kind in CONTRACT.items():
        assert isinstance(result[key], kind | int if kind is float else kind), (key, result[key])
    assert result["scenario"] == "plan" and result["seconds"] == result["wall_seconds"] > 0
    assert result["simulated_seconds"] == {"1": 40.0, "25%": 20.0}[max_unavailable]
    assert result["heartbeats"] == "modelled"
    # `everynode plan` itself: its phases, the rollout being `seconds`, and the whole plan's time.
    assert list(result["phases"]) == ["prepare", "load", "start", "rollout", "answer"]
    assert abs(result["phases"]["rollout"] - result["seconds"]) <= 0.001
    assert result["plan_seconds"] >= sum(result["phases"].values()) - 0.01
    assert sum(result["phases"].values()) > result["seconds"]  # (the other phases take some time)
    wall, simulated = result["wall_seconds"], result["simulated_seconds"]
    # wall is rounded to 4 decimals and ratio to 1: both bounds allow for the rounding of each.
    assert simulated / (wall + 5e-5) - 0.05 <= result["ratio"] <= simulated / (wall - 5e-5) + 0.05


def test_plan_rejects_a_budget_that_is_no_int_or_percent() -> None:
    proc = subprocess.run([sys.executable, "-m", "everynode", "bench", "plan", "--max-unavailable", "x"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and "--max-unavailable" in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_scenario_is_a_usage_error() -> None:
    proc = subprocess.run([sys.executable, "-m", "everynode", "bench", "nosuch"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 2 and "nosuch" in proc.stderr and "Traceback" not in proc.stderr
