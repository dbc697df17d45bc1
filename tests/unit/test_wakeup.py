"""The compiled wake-up signal behaves as ``asyncio.Event`` for set / clear / wait, including the
order in which woken waiters run (the virtual-time runs depend on it)."""

from __future__ import annotations

import asyncio

import pytest

from everynode.client.wakeup import Wakeup


async def settle(rounds: int = 10) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


async def test_wait_returns_at_once_when_set_and_waits_after_clear() -> None:
    signal = Wakeup()
    assert not signal.is_set()
    signal.set()
    assert signal.is_set()
    await asyncio.wait_for(signal.wait(), 1)
    signal.clear()
    waiting = asyncio.ensure_future(signal.wait())
    await settle()
    assert not waiting.done()
    signal.set()
    await asyncio.wait_for(waiting, 1)


@pytest.mark.parametrize("make", [asyncio.Event, Wakeup], ids=["asyncio.Event", "Wakeup"])
async def test_woken_waiters_and_other_callbacks_run_in_the_same_order_as_with_an_event(make) -> None:
    order: list[str] = []
    signal = make()

    async def waiter(name: str) -> None:
        await signal.wait()
        order.append(name)

    tasks = [asyncio.ensure_future(waiter(n)) for n in ("a", "b", "c")]
    await settle()
    loop = asyncio.get_running_loop()
    loop.call_soon(order.append, "before")
    signal.set()
    loop.call_soon(order.append, "after")
    await asyncio.gather(*tasks)
    await settle()
    assert order == ["before", "a", "b", "c", "after"]


async def test_a_cancelled_waiter_is_forgotten_and_the_others_still_wake() -> None:
    signal = Wakeup()
    first = asyncio.ensure_future(signal.wait())
    second = asyncio.ensure_future(signal.wait())
    await settle()
    first.cancel()
    await settle()
    assert first.cancelled()
    assert len(signal._waiters) == 1
    signal.set()
    await asyncio.wait_for(second, 1)
    assert signal._waiters == []
