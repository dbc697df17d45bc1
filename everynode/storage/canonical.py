"""Structural sharing of stored objects: equal sub-trees are kept once (hash-consing).

Why: at 65k nodes the stored dicts are most of the process's memory, and most of their content
repeats from object to object — every DaemonSet pod has the same containers, tolerations and
managedFields field sets, every node the same nodeInfo, capacity and condition reasons, every
Lease the same ``fieldsV1``.  The decoders (``orjson.loads``, ``deep_copy``) hand the store fresh
objects for all of it, so N equal sub-trees cost N times the memory.  Stored objects are
immutable and shared (storage/base.py), so equal immutable sub-trees can just as well be *the
same* object: the store passes each object it is about to keep through :class:`Canonicalizer`,
which replaces every sub-tree (dict, list, str, int) equal to one it has seen recently with that
earlier instance.  Measured (`everynode bench converge`): a running DaemonSet pod goes from
~17 KB to ~6 KB, a Node from ~10.5 KB to ~3.9 KB, a Lease from ~3.9 KB to ~2.5 KB, an Event from
~2.8 KB to ~1.4 KB; what remains is really each object's own (name, uid, IPs, timestamps, and the
dicts holding them).  (Leases are nevertheless stored unshared — memory.py
``UNSHARED_RESOURCES``: at one renewal per node every 10 s the CPU costs more than the memory.)

How, and what it costs:

* **Keyed by content and place.**  A container's key is the hash of its path in the object (the
  object's kind, then the position of each step: a key's index in its object, an item's in its
  list) combined with the hash of its JSON text (``orjson.dumps``: one C call, key order and types
  included, so ``true`` is not ``1`` and ``1.0`` is not ``1``).  A hit is confirmed by comparing
  the texts, so two different contents never share.  (Comparing the contents in step instead, with
  the members both share by identity skipped, was tried: compiled, it cost more than serialising
  the hit again — 454 M instructions of api_floor's 2,548 M.) A container found this way keeps its
  text from its first hit on (a quarter of ``capacity`` at most), so its next hits compare bytes
  without serialising it again.  Work is top-down: a hit shares the whole sub-tree at once; only a
  miss descends into the children (and serialises them in turn), so the cost is about one
  serialisation per level of what is new.  Strings and ints are shared by value.
* **Why the path is part of the key**: equal sub-trees at two places of *one* object (a
  DaemonSet's ``metadata.labels``, ``spec.selector.matchLabels`` and template labels) must stay
  distinct objects, because ``copy.deepcopy`` — used by the jsonpatch library — keeps such
  aliases, and a patch of one place would then change the other.  With the path in the key no
  container can be placed twice in an object; a canonical container found at another path than
  its own is replaced by a private copy.  Objects of the same kind have the same paths, which is
  where the sharing is.
* **Already-canonical sub-trees are skipped in O(1)** (by identity and path): an update that
  carries sub-trees of the stored object over unchanged (managedFields kept, a patch's untouched
  branches) costs nothing for them.  The table of identities maps a canonical container's id to
  its path's hash (a plain int) and holds its generation's containers in a list, so that an id it
  names cannot be a later object's at a freed address.  It held ``(container, path)`` tuples
  before: one tracked object per canonical container, which the collector's young passes walk like
  any other — 13 of the 48 tracked objects a pod's three writes left for them in ``api_floor``.
  Without them, medians of four interleaved ``bench converge --nodes 5000`` runs: ``api_floor``
  0.567 → 0.506 s and the converge 2.09 → 1.69 s, for 0.8 % fewer instructions: the passes touch
  each young object's memory, which the CPU no longer caches.
* **Places where nothing repeats are not looked up.**  Some places hold a new container in every
  object: a DaemonSet pod's node pin (``spec.affinity`` and the 7 levels below it), its IPs, its
  status (new each time, though its conditions repeat).  Looking them up serialised and hashed
  every level only to miss.  A place (a path, told apart from the others at its position by its
  key and by its container's size) whose last ``UNSHARED_STREAK`` look-ups all missed is no longer
  looked up: its container is kept as it is (and known by identity, so an update that carries it
  over still skips it), its children are shared as usual — unless nothing below it was shared
  either in as many visits (a node pin's 7 levels, a pod's IP list): then it is kept as it is,
  unwalked (its strings are not interned: a few unique bytes per object).  Every
  ``PROBE_EVERY``-th visit looks up again (and every half of that walks again), so a place that
  starts repeating is shared again within a few dozen writes.  Measured in ``api_floor``
  (in-process writes of a DaemonSet's pods): half of the look-ups were such misses; not walking
  the barren places took 3.6 % of its instructions for +160 bytes per pod.
* **Bounded memory**: each table has two generations of ``capacity`` entries; a hit in the old
  generation promotes the entry, and the old generation is dropped when the new one is full.  So
  what is still being written stays shared, while sub-trees no longer seen are forgotten (objects
  that already share them keep sharing them).  Tables never hold more than ``2 × capacity``
  entries each, whatever the run time.  The default capacity (16,384) costs ~10 MB of tables
  plus the forgotten-but-retained sub-trees of one generation; in ``bench converge`` at 10k
  nodes, 4,096 / 16,384 / 65,536 gave 332 / 338 / 369 MiB peak: popular sub-trees are seen
  again long before a generation ends, so a small table shares as well as a big one.
* **The top-level object and its ``metadata`` are never entered in the tables**: they carry the
  name, uid and resourceVersion, so they are unique by construction, and keeping them would only
  keep old versions alive.  Their values are canonicalised.
* Containers are rewritten **in place** (a child replaced by an equal canonical one).  This is
  safe for the store's inputs: the write paths hand the store private copies (the in-process
  client copies bodies, HTTP decodes them, the top level and ``metadata`` are copied by
  :func:`~everynode.storage.watch.with_resource_version`), and anything the store keeps is
  immutable from then on — which is why a canonical sub-tree may be shared by many objects.
  Only equal values are ever substituted, so what a reader sees never changes.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from everynode.compiled import i64
from everynode.memo import PROBE_EVERY, UNSHARED_STREAK

# Final: under mypyc these are C globals, not look-ups in the module's dict at every use.
dumps: Final = orjson.dumps
loads: Final = orjson.loads

DEFAULT_CAPACITY: Final = 1 << 14  # entries per generation and table (module docstring)
# A place whose look-ups found nothing UNSHARED_STREAK times in a row is not looked up any more,
# but once every PROBE_EVERY visits (module docstring: places where nothing repeats); the numbers
# are memo.py's, which the managedFields memos skip by.

_LIST = object()  # tags list keys so that a list never matches a dict
_EMPTY_DICT_TEXT_HASH: Final = hash(dumps({}))
_EMPTY_LIST_TEXT_HASH: Final = hash(dumps([]))

# The hashes of paths, places and table keys: one multiply-add per step on native 64-bit ints
# (mypyc's ``i64``), kept to 62 bits.  They were ``hash()`` of tuples: a tuple made, its members
# boxed and hashed one by one, and the result boxed again, at every container visited and every
# child passed down (about a sixth of the sharing's instructions in api_floor).  Compiled, the
# product wraps modulo 2**64 (CPython's extensions build with ``-fwrapv``); from source it is
# exact; the mask keeps the same low bits of both, so both runs key their tables alike.  Mixing
# by an odd multiplier keeps two steps from one parent apart (``n`` differs, so does the sum),
# and two parents' children apart unless their hashes differ by a multiple of it modulo 2**62:
# as unlikely as a collision of the tuple hashes it replaces.  A collision would cost no
# correctness in the tables (a hit is confirmed on the text), and in the identity table it
# would need two paths of one object with one hash, as before.
_MIX: Final[i64] = 0x2545F4914F6CDD1D  # (below 2**62: a literal mypyc keeps native)
_MASK: Final[i64] = (1 << 62) - 1
_NO_PATH: Final[i64] = -1  # (path hashes are never negative)


def _step(at: i64, n: i64) -> i64:
    """The hash of step ``n`` (a position, or another hash) below the path hashed ``at``."""
    return (at * _MIX + n) & _MASK


class _Generations:
    """A bounded map with two generations (see module docstring)."""

    __slots__ = ("capacity", "new", "old")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.new: dict[Any, Any] = {}
        self.old: dict[Any, Any] = {}

    def intern(self, key: Any, value: Any) -> Any:
        """The canonical value for ``key``: the one already known, or ``value`` (now canonical)."""
        new = self.new
        hit = new.get(key)
        if hit is not None:
            return hit
        hit = self.old.get(key)
        if hit is not None:
            value = hit
        elif len(new) >= self.capacity:
            self.old = new
            new = self.new = {}
        new[key] = value
        return value

    def put(self, key: Any, value: Any) -> None:
        new = self.new
        if key not in new and len(new) >= self.capacity:
            self.old = new
            new = self.new = {}
        new[key] = value

    def __len__(self) -> int:
        return len(self.new) + len(self.old)

    def clear(self) -> None:
        self.new = {}
        self.old = {}


class _Identities:
    """id(canonical container) -> the hash of its path, in two generations like
    :class:`_Generations`.  Each generation also holds the containers entered in it (a list),
    so an id found in it is the id of the container entered under it, never of a later object
    at a freed address.  The entries are plain ints: (container, path) tuples were a quarter of
    the tracked objects the collector's young passes walked in api_floor (13 of 48 per pod)."""

    __slots__ = ("capacity", "new", "old", "held", "held_old")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        # (keyed by the id as an object: boxed once per container by its caller, where an ``int``
        # parameter was boxed again for each look-up)
        self.new: dict[object, int] = {}
        self.old: dict[object, int] = {}
        self.held: list[Any] = []
        self.held_old: list[Any] = []

    def put(self, i: object, v: Any, at: i64) -> None:
        """Enter container ``v`` (``i`` is its id) as canonical at the path hashed ``at``."""
        new = self.new
        if len(new) >= self.capacity:
            self.old = new
            self.held_old = self.held
            new = self.new = {}
            self.held = []
        new[i] = at
        self.held.append(v)

    def path(self, i: object) -> i64:
        """The hash of the path the container whose id is ``i`` is canonical at, if it is
        (else ``_NO_PATH``)."""
        at = self.new.get(i)
        if at is None:
            at = self.old.get(i)
            if at is None:
                return _NO_PATH
        return at

    def __len__(self) -> int:
        return len(self.new) + len(self.old)

    def clear(self) -> None:
        self.new = {}
        self.old = {}
        self.held = []
        self.held_old = []


class Canonicalizer:
    """Hash-consing of JSON-shaped values (dict, list, str, int; other values pass through).

    Methods and typed attributes, no closures: this runs for every stored object, and under mypyc
    (compiled.py) the methods of a native class call each other directly in C and its attributes
    are typed slots, where closures over ``nonlocal`` state go through generic Python calls and
    environment objects.  From source it costs what closures did: the methods read the attributes
    they use more than once into locals.
    """

    __slots__ = ("_containers", "_canonical", "_scalars", "_texts", "_misses", "_barren", "_shared", "_capacity",
                 "_updating")

    _containers: _Generations  # hash of path and JSON text -> container
    _canonical: _Identities  # id(canonical container) -> hash of its path
    # str -> str and int -> int; one table (a str never equals an int; bools are not entered).
    _scalars: _Generations
    # Table key -> (the container found under it, its JSON text), for containers found by a
    # look-up (at most a quarter of ``capacity``): a hit is confirmed on the texts, and the
    # popular ones (a second's conditions, the kubelet's conditions field tree) were serialised
    # again at every hit.
    _texts: dict[int, tuple[Any, bytes]]
    # Place (path hash and key) -> how many look-ups in a row found nothing there, and how many
    # visits in a row found nothing shared in the whole sub-tree (module docstring).
    _misses: dict[int, int]
    _barren: dict[int, int]
    _shared: int  # containers found shared so far (a sub-tree's share is the difference)
    _capacity: int  # entries per generation (the place tables are cleared at this size)
    # Whether the object being canonicalised replaces a stored version: a place's look-up
    # statistics are kept per kind of write, since the same place can repeat in every create
    # and in no update (a pod's spec: its template's at the create, with its node's name
    # after the binding), and an update's misses then stop its look-ups there.
    _updating: bool

    def __init__(self, *, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._containers = _Generations(capacity)
        self._canonical = _Identities(capacity)
        self._scalars = _Generations(capacity)
        self._texts = {}
        self._misses = {}
        self._barren = {}
        self._shared = 0
        self._updating = False

    def value(self, v: Any, at: i64 = 0, name: Any = None) -> Any:
        """The canonical instance of a value (the value itself when it is the first of its kind).

        ``at`` is the hash of the value's path in its object, ``name`` its key there (module
        docstring: why containers are shared per path)."""
        t = type(v)
        if t is str or t is int:
            scalars = self._scalars
            hit = scalars.new.get(v)
            return hit if hit is not None else scalars.intern(v, v)
        if t is not dict and t is not list:  # bool, float, None, anything unexpected: as is
            return v
        containers = self._containers
        canonical = self._canonical
        if not v:
            # ``{}`` / ``[]``: the key of its text without serialising it, confirmed by type
            # (the same table entry ``dumps`` would give; empty leaves are a third of the
            # containers in managedFields trees).  The one of its place is the answer, so
            # identity only matters when there is none yet.
            key = _step(at, _EMPTY_DICT_TEXT_HASH if t is dict else _EMPTY_LIST_TEXT_HASH)
            hit = containers.new.get(key)
            if hit is not None and type(hit) is t and not hit:
                self._shared += 1
                return hit
            if hit is None:
                hit = containers.old.get(key)
                if hit is not None and type(hit) is t and not hit:
                    self._shared += 1
                    return containers.intern(key, hit)
            i: object = id(v)
            known = canonical.path(i)
            if known != _NO_PATH:
                if known == at:
                    return v
                v = t()  # canonical at another path (below): a private one
                i = id(v)
            containers.put(key, v)
            canonical.put(i, v, at)
            return v
        i = id(v)  # (an object: see _Identities)
        known = canonical.path(i)
        if known == at:
            self._shared += 1
            return v
        # (``at`` is positional; the key tells places apart; creates and updates keep their own
        # statistics: see ``_updating``; so do containers of different sizes at one place: a
        # pod's status has 3 members after its binding, which repeat from pod to pod, and 9
        # after the kubelet's write, which never do — one streak for both was reset by every
        # binding, so the kubelet's status was serialised for a look-up that always missed)
        place = _step(_step(at, hash(name)), len(v) * 2 + self._updating)
        misses = self._misses
        streak = misses.get(place, 0)
        capacity = self._capacity
        if streak >= UNSHARED_STREAK and streak % PROBE_EVERY:
            # A place whose containers have all been new lately (a pod's node pin, its IPs):
            # no look-up, only its children are shared.  Every PROBE_EVERY-th visit looks
            # again, so a place that starts repeating is shared again.
            misses[place] = streak + 1
            if known != _NO_PATH:
                try:
                    v = loads(dumps(v))  # canonical at another path (below): a private copy
                except TypeError:
                    return v
                i = id(v)
            barren = self._barren
            dry = barren.get(place, 0)
            if dry < UNSHARED_STREAK or not streak % (PROBE_EVERY // 2):
                before = self._shared
                # (unlooked-up, so unchecked: values that are not JSON pass as always)
                self._children(v, t, at)
                if self._shared == before:
                    barren[place] = dry + 1
                elif dry:
                    barren[place] = 0
            canonical.put(i, v, at)  # (skipped by identity when carried over)
            return v
        try:
            text = dumps(v)
        except TypeError:  # not JSON-shaped: leave it alone
            return v
        key = _step(at, hash(text))  # one int: the table's keys are most of its memory
        # Equal hashes are confirmed on the text (exact: ``true`` is not ``1``; ``_has_text``).
        hit = containers.new.get(key)
        if hit is not None:
            if self._has_text(key, hit, text):
                if streak:
                    misses[place] = 0
                self._shared += 1
                return hit
        else:
            hit = containers.old.get(key)
            if hit is not None and self._has_text(key, hit, text):
                if streak:
                    misses[place] = 0
                self._shared += 1
                return containers.intern(key, hit)
        if len(misses) >= capacity:
            misses.clear()
            self._barren.clear()
        misses[place] = streak + 1
        if known != _NO_PATH:
            # Canonical at another path: sharing it here too would alias two places of one
            # object.  Use a private copy.
            v = loads(text)
            i = id(v)
        self._children(v, t, at)
        # containers.put(key, v), inlined (every miss ends here)
        new = containers.new
        if len(new) >= capacity and key not in new:
            containers.old = new
            new = containers.new = {}
        new[key] = v  # (replaces a colliding entry, if any)
        canonical.put(i, v, at)  # (``i`` is in neither generation here: see ``known`` above)
        return v

    def _has_text(self, key: int, hit: Any, text: bytes) -> bool:
        """Whether ``hit``, the container the tables hold under ``key``, has the JSON text
        ``text``: its text is kept from its first hit on, so that later hits compare bytes
        instead of serialising it again (bounded like the place tables)."""
        texts = self._texts
        known = texts.get(key)
        if known is not None and known[0] is hit:
            return known[1] == text
        hit_text = dumps(hit)
        if len(texts) >= self._capacity >> 2:
            texts.clear()
        texts[key] = (hit, hit_text)
        return hit_text == text

    def _children(self, v: Any, t: type, at: i64) -> None:
        # The children of a container that is kept (a dict when ``t`` is dict, else a list),
        # replaced in place by their canonical instances; ``n`` is a child's position, the key
        # of a dict's child its name, the index of a list's.  Two loops, each over its own type,
        # rather than one over generic (key, child) pairs.
        scalars = self._scalars
        if t is dict:
            d: dict[Any, Any] = v
            for n, (k, child) in enumerate(d.items()):
                ct = type(child)
                if ct is str or ct is int:
                    canon = scalars.new.get(child)
                    if canon is None:
                        canon = scalars.intern(child, child)
                elif ct is dict or ct is list:
                    canon = self.value(child, _step(at, n), k)
                else:
                    continue
                if canon is not child:
                    d[k] = canon
        else:
            items: list[Any] = v
            for n, child in enumerate(items):
                ct = type(child)
                if ct is str or ct is int:
                    canon = scalars.new.get(child)
                    if canon is None:
                        canon = scalars.intern(child, child)
                elif ct is dict or ct is list:
                    canon = self.value(child, _step(at, n), n)
                else:
                    continue
                if canon is not child:
                    items[n] = canon

    def _level(self, container: dict[Any, Any], previous: Any, at: i64, top: bool) -> None:
        # One level of a stored object kept out of the tables (the object itself, and its
        # ``metadata`` when ``top``): its values are canonicalised in place.  ``previous``:
        # the same level of the stored version this one replaces.  A child that is the same
        # object at the same place (an update carries it over) is canonical there already:
        # it is skipped without a look-up (the same answer ``value`` gives, minus the work).
        # (the keys alone, and the old child looked up by its key where the key is the same:
        # listing the (key, child) pairs of ``items()`` made a tuple per member at each write)
        old_level: dict[Any, Any] = previous if type(previous) is dict else {}
        before: list[Any] = list(old_level)
        n_before = len(before)
        scalars = self._scalars
        for n, (key, child) in enumerate(container.items()):
            ct = type(child)
            if ct is str or ct is int:
                canon = scalars.new.get(child)
                if canon is None:
                    canon = scalars.intern(child, child)
                if canon is not child:
                    container[key] = canon
                continue
            old_child: Any = None
            if n < n_before and before[n] == key:
                old_child = old_level[key]
                if old_child is child:
                    continue
            if top and key == "metadata" and ct is dict:
                self._level(child, old_child, _step(at, n), False)
                continue
            if not top and ct is list and key == "managedFields" and self._updating:
                # An update's managedFields: the list is new at every write (its writer's entry
                # gets a new time), while the other entries are the stored ones, canonical here
                # by identity.  Only its entries are shared: looking the list up serialised all
                # of them (every manager's field tree) to find one new entry, the largest part
                # of sharing a status write (api_floor: the kubelet's Running status).
                self._children(child, list, _step(at, n))
                continue
            canon = self.value(child, _step(at, n), key)
            if canon is not child:
                container[key] = canon

    def object(self, obj: dict[str, Any], previous: dict[str, Any] | None = None) -> dict[str, Any]:
        """Canonicalise a stored object's content in place and return it.

        The object and its ``metadata`` must be private to the caller (the store's fresh copies);
        they are kept out of the tables (module docstring).  No container ends up twice in the
        object.  ``previous`` is the stored version ``obj`` replaces, if any (its carried-over
        children are skipped by identity)."""
        # Paths start from the object's kind: the places of one kind are shared with each
        # other, and the look-up statistics of a Pod's places are not an Event's.
        kind = obj.get("kind")
        self._updating = previous is not None
        self._level(obj, previous, hash(kind) & _MASK if type(kind) is str else 0, True)
        return obj

    def entries(self) -> int:
        """Table entries held now (for tests and diagnostics)."""
        return len(self._containers) + len(self._canonical) + len(self._scalars)

    def clear(self) -> None:
        for table in (self._containers, self._canonical, self._scalars):
            table.clear()
        self._texts.clear()
