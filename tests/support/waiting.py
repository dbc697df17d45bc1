"""Polling for end-to-end tests: wait until a predicate holds, with a generous deadline that is
never the thing under test (a timeout fails the test with what was awaited)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_until(predicate: Callable[[], Any], *, what: str = "condition", timeout: float = 30.0,
               interval: float = 0.1) -> Any:
    """The first truthy result of ``predicate()``, polled every ``interval`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)
