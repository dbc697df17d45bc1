"""The two floors of ``bench converge`` are measured alike: each the median of three runs."""

from __future__ import annotations

import asyncio

from everynode.product import bench


def test_the_api_floor_is_the_median_of_three_runs(monkeypatch) -> None:
    runs = iter([0.5, 0.2, 0.9, 7.0])
    taken: list[tuple[int, bool]] = []

    async def once(n: int, *, events: bool = False) -> float:
        taken.append((n, events))
        return next(runs)

    monkeypatch.setattr(bench, "api_floor_once", once)
    assert asyncio.run(bench.api_floor(40)) == 0.5
    assert taken == [(40, False)] * 3
    runs = iter([0.5, 0.2, 0.9, 7.0])
    taken.clear()
    assert asyncio.run(bench.api_floor(40, events=True)) == 0.5
    assert taken == [(40, True)] * 3


def test_the_storage_floor_is_the_median_of_three_runs(monkeypatch) -> None:
    runs = iter([0.03, 0.01, 0.02, 9.0])

    async def once(n: int, *, writes_per_pod: int) -> float:
        return next(runs)

    monkeypatch.setattr(bench, "_storage_floor_once", once)
    assert asyncio.run(bench.storage_floor(40, writes_per_pod=3)) == 0.02
