"""Generated uids and name suffixes (api/meta.py): the shapes upstream gives them."""

from __future__ import annotations

import re
import uuid

import pytest

from everynode.api import meta

UUID4_TEXT = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def test_a_uid_is_a_random_rfc4122_version_4_uuid_in_canonical_text() -> None:
    uids = [meta.new_uid() for _ in range(2000)]
    assert all(UUID4_TEXT.match(u) for u in uids), [u for u in uids if not UUID4_TEXT.match(u)][:3]
    parsed = [uuid.UUID(u) for u in uids]
    assert {(p.version, p.variant) for p in parsed} == {(4, uuid.RFC_4122)}
    assert all(str(p) == u for p, u in zip(parsed, uids, strict=True))  # canonical form, round trip
    assert len(set(uids)) == len(uids)
    # every variant nibble and every hex digit elsewhere occur: the bits are really random
    assert {u[19] for u in uids} == set("89ab")
    assert set("".join(u.replace("-", "") for u in uids)) == set("0123456789abcdef")


def test_a_forked_child_draws_uids_of_its_own() -> None:
    """uids come from a pool of random bits (api/meta.py): a child forked with a full pool
    must not hand out the uids its parent will."""
    import os

    meta.new_uid()  # the pool is now filled, with 255 uids left in it
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next uids, to the parent
        try:
            os.write(write, " ".join(meta.new_uid() for _ in range(8)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read().split()
    os.waitpid(pid, 0)
    parent = [meta.new_uid() for _ in range(8)]
    assert len(child) == 8 and all(UUID4_TEXT.match(u) for u in child)
    assert not set(child) & set(parent)


def test_a_name_suffix_is_drawn_from_upstreams_alphabet() -> None:
    suffixes = [meta.random_suffix() for _ in range(2000)]
    assert {len(s) for s in suffixes} == {meta.RANDOM_LENGTH}
    assert set("".join(suffixes)) == set(meta.NAME_ALPHABET)  # all of it, nothing else
    assert len(set(suffixes)) > 1990  # 27**5 ≈ 14 million: a few collisions at most
    assert len(meta.random_suffix(3)) == 3


@pytest.mark.parametrize("seed", [0, 1, 11, 2**40])
def test_a_seeded_suffix_is_what_random_choices_draws_from_the_same_seed(seed: int) -> None:
    """Seeded runs (plan, the golden converge) name what they make exactly as when the suffix was
    ``suffix_source.choices(NAME_ALPHABET, k=n)``."""
    import random

    original = meta.suffix_source
    try:
        meta.suffix_source = random.Random(seed)
        drawn = [meta.random_suffix(n) for n in (5, 5, 3, 1, 8)]
    finally:
        meta.suffix_source = original
    reference = random.Random(seed)
    assert drawn == ["".join(reference.choices(meta.NAME_ALPHABET, k=n)) for n in (5, 5, 3, 1, 8)]


def test_generate_name_cuts_the_base_to_58_characters() -> None:
    name = meta.generate_name("a" * 80)  # no vowel is in the suffix alphabet: the cut shows
    assert len(name) == meta.MAX_GENERATED_NAME_LENGTH
    assert name.startswith("a" * 58) and not set(name[58:]) & {"a"}
    assert meta.generate_name("agent-").startswith("agent-") and len(meta.generate_name("agent-")) == 11


def test_a_plans_seed_reaches_every_caller_of_random_suffix() -> None:
    """``plan`` seeds ``meta.suffix_source``, not one function: a module that imported
    ``random_suffix`` itself (the Event recorder, for a fresh Event's name) repeats too."""
    from everynode.client import events
    from everynode.product.plan import seeded_identities

    def draws() -> tuple[list[str], str, str]:
        with seeded_identities(11):
            return [events.random_suffix(3) for _ in range(8)], meta.generate_name("agent-"), meta.new_uid()

    original = meta.suffix_source, meta.new_uid
    first = draws()
    assert draws() == first
    assert UUID4_TEXT.match(first[2])
    assert (meta.suffix_source, meta.new_uid) == original  # unseeded again after the plan


@pytest.mark.parametrize("bits", [0, 1, (1 << 128) - 1, 0x0123456789ABCDEF0123456789ABCDEF, 1 << 127, 0xC000 << 48])
def test_a_seeded_uid_is_what_uuid_makes_of_the_same_bits(bits: int) -> None:
    assert meta.version4_uid(bits) == str(uuid.UUID(int=bits, version=4))
