"""The C function of storage/_untrack.c (see storage/untracked.py)."""

def untrack(value: object, /) -> bool:
    """Takes a JSON-shaped value's dicts and lists out of the cyclic garbage collector; True when
    nothing in it stays tracked."""
