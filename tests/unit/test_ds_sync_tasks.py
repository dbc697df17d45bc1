"""The DaemonSet controller's creates and deletes of one batch, each in a task of its own
(``controller._in_tasks``): what ``asyncio.gather`` gives, step for step.

Why step for step: the golden converge compares every watch event in order, and in virtual time
the events of one instant are ordered only by the loop's turns.  A helper that took one turn
more or less than ``gather`` (a batch of one awaited directly, say) would move a pod's create
among the other components' writes of that instant.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from everynode.controllers.daemonset.controller import _in_tasks

Log = list[str]


async def _worker(log: Log, name: str, turns: int, *, fail: bool = False) -> Exception | None:
    for i in range(turns):
        log.append(f"{name}{i}")
        await asyncio.sleep(0)
    if fail:
        raise RuntimeError(f"{name} failed")
    return ValueError(name) if name == "b" else None


async def _ticker(log: Log, turns: int) -> None:
    for i in range(turns):
        log.append(f"t{i}")
        await asyncio.sleep(0)


def _interleaving(join: Callable[[list[Any]], Awaitable[Any]], spec: list[tuple[str, int, bool]]) -> Log:
    log: Log = []

    async def main() -> None:
        ticker = asyncio.get_running_loop().create_task(_ticker(log, 12))
        await asyncio.sleep(0)
        try:
            results = await join([_worker(log, name, turns, fail=fail) for name, turns, fail in spec])
            log.append(f"done {[type(r).__name__ for r in results]}")
        except RuntimeError as e:
            log.append(f"raised {e}")
        await ticker

    asyncio.run(main())
    return log


async def _gather(coros: list[Any]) -> Any:
    return await asyncio.gather(*coros)


@pytest.mark.parametrize("spec", [
    [("a", 0, False)],
    [("a", 1, False)],
    [("a", 3, False), ("b", 1, False)],
    [("a", 2, False), ("b", 0, False), ("c", 4, False)],
    [("a", 3, False), ("b", 1, True)],
    [("a", 1, True), ("b", 3, False)],
])
def test_the_same_turns_as_gather(spec: list[tuple[str, int, bool]]) -> None:
    expected = _interleaving(_gather, spec)
    assert _interleaving(_in_tasks, spec) == expected
    assert expected[-1].startswith("t")  # (the ticker outlived the join: the turns were compared)


async def test_results_in_order_and_each_in_its_own_task() -> None:
    started = asyncio.Event()

    async def waits() -> Exception | None:
        await started.wait()  # only another task can set it: run one by one, this would hang
        return None

    async def sets() -> Exception | None:
        started.set()
        return KeyError("second")

    results = await asyncio.wait_for(_in_tasks([waits(), sets()]), 5)
    assert results[0] is None and isinstance(results[1], KeyError)


async def test_cancelled_it_cancels_its_tasks() -> None:
    blocked = asyncio.Event()
    cancelled: list[bool] = []

    async def forever() -> Exception | None:
        try:
            await blocked.wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return None

    join = asyncio.get_running_loop().create_task(_in_tasks([forever(), forever()]))
    await asyncio.sleep(0)
    join.cancel()
    with pytest.raises(asyncio.CancelledError):
        await join
    await asyncio.sleep(0)
    assert cancelled == [True, True]
