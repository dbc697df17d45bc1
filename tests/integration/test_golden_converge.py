"""The write path's golden: a converge (and rolling update) of 50 nodes publishes exactly the
watch events and leaves exactly the objects recorded before the write path was optimised.

See ``tests/support/golden_converge.py`` for what is recorded and how it is made repeatable
(virtual clock, seeded uids, name suffixes and ``random``, fixed hash seed; nothing normalised).
A difference is reported as the first differing line, in full, beside the recorded one."""

from __future__ import annotations

from tests.support.golden_converge import load_golden, record_in_child


def test_converge_matches_the_golden_recording() -> None:
    golden = load_golden()
    actual = record_in_child()
    for i, (want, got) in enumerate(zip(golden, actual, strict=False)):
        assert got == want, f"line {i} differs:\nrecorded: {want.decode()}\nnow:      {got.decode()}"
    assert len(actual) == len(golden), f"{len(actual)} lines now, {len(golden)} recorded"
