"""Which modules run compiled by mypyc, and the guard that runs them from source when their build
is missing, stale or unwanted.

Why: the write path (#16) and ``plan``'s virtual-time rollout (#15) spend most of their time in
modules of plain, fully typed functions — structural sharing, managedFields, strategic merge,
the type check, validation, defaulting, the DaemonSet controller's helpers.  mypyc (part of
mypy, which already checks these types in CI) compiles those same sources to C extensions;
unchanged, they make a pod's three API writes about 1.5× faster and a 5,000-node converge about
a third faster (`everynode bench`, A/B with ``EVERYNODE_PURE=1`` in the closing note of #16).
The sources stay the one truth: the extensions are built from them by ``scripts/compile.py``
(which the set-up scripts run), they are never committed, and the tests run on them in CI.

The guard, run once when ``everynode`` is imported: when any listed module's extension is
missing or older than its source (an edit since the last build, a checkout), or when
``EVERYNODE_PURE`` is set, a finder placed first on ``sys.meta_path`` loads *every* listed module
from its source — never a mix, because compiled modules of one build call each other directly
(a fresh module could still run a stale one's code).  This is silent — a stale build is the
normal state between an edit and the next set-up, and no build at all (no C compiler, a plain
install) is simply pure Python — but ``everynode bench`` reports the state with its figures.
``EVERYNODE_PURE=1`` is also how to profile these modules (cProfile sees only Python frames) and
how to measure what compiling gains.

Trade-offs: a listed module can no longer be monkeypatched for calls made from compiled code,
and its tracebacks have no source lines (``EVERYNODE_PURE=1`` gives them back).  mypyc checks
declared types at run time, so an annotation that lies fails loudly instead of passing.

And a listed module awaits nothing inside a ``finally`` or an ``except`` block, and has no
``async with`` (mypyc awaits its ``__aexit__`` in one; ``test_compiled`` checks): a compiled
coroutine has no exception state of its own, it sets the thread's.  A ``finally`` that awaits
leaves the exception it handled in ``sys.exc_info()`` for good, and on leaving decides whether
to raise again by looking there, so a later one that ends cleanly raises an exception of some
other task, long handled (the informer relisted after a clean end of its watch, on an earlier
410).  A handler suspended at an ``await`` shows its exception to every other task meanwhile,
and two that interleave restore each other's.  Await after the block instead (hold the
exception, raise it again).

A listed module's constants and memo tables are ``Final``: compiled code reads a ``Final`` name
from a C static (and an int or string literal inline), any other module-level name from the
module's dict at each use.  The type check alone looked up ``_ABSENT``, ``_ANY`` and
``_STRING`` about a hundred times per pod in ``api_floor``.  What a test replaces with
``monkeypatch`` stays a plain global (compiled code would not see a ``Final`` one replaced).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_extensions import i64 as i64
    from mypy_extensions import mypyc_attr as mypyc_attr
else:
    try:
        from mypy_extensions import i64, mypyc_attr
    except ImportError:  # (mypy is not installed: nothing is compiled, and the decorator does nothing)
        i64 = int  # (mypyc's native 64-bit int; from source, a plain int)

        def mypyc_attr(*_args: Any, **_kwargs: Any) -> Any:
            return lambda cls: cls

PACKAGE_DIR = Path(__file__).resolve().parent

# The modules compiled, by what the profiles of api_floor and plan's rollout show: functions over
# JSON-shaped values (sharing, managedFields, merge, type check, validation, defaulting, the
# object accessors), the DaemonSet controller (its sync and event handlers: in a rollout at
# maxUnavailable 1 it syncs seven times per pod replaced, and compiled the 5,000-node plan's
# rollout took 9% less time) with its helpers (expectations and failed-pod back-off among them)
# and incremental state (its pod index and the re-derivation of dirty nodes), work queue, Event
# recorder and pod simulation around them, the template creates, the scheduler (its loop and
# helpers: node and pod infos, filters, scores, queue, cache), the kubelet simulation (node agent,
# pod lifecycle, writers, and the helpers each pod start calls: addresses, container events, the
# downward API, mounts), the wake-up signal the kubelet writers and the scheduler queue sleep on,
# ``plan``'s rollout recorder (fed every event of its copy), the stores (memory and SQLite: every
# write's apply and every read), admission and the API service (an ordinary class with compiled
# methods, ``mypyc_attr(native_class=False)``: a test replaces one on an instance), the registry's
# context (the clock every write reads), the update's system metadata rules (systemmeta.py), the
# pods' binding and strategy hooks and the bounded memo
# (``remember``, on every memo miss of managedFields; together 2.3% of ``api_floor``'s
# instructions — the generic strategy stays source: kinds' strategies derive from it and
# override its class attributes, which a compiled class would not see), and the
# virtual-time event loop's turn, callbacks and timers (virtualtime.py); no class here is
# subclassed by code outside the list.  What tests used to replace in them has a seam instead,
# since compiled callers would not see a replaced global or method: a test fails a SQLite commit
# through the connection's authorizer, the golden converge records the published events with a
# watch, the kubelet writers' yield interval is an attribute of the simulation, and the
# scheduler's default spreading selector is a function of its inputs, the DaemonSet controller
# counts its revision passes and node evaluations and awaits an optional hook after each burst of
# creates (its class derives from the kit's interpreted ``ControllerLifecycle``, so mypyc makes it
# an ordinary class with compiled methods, which call each other directly: a method replaced on an
# instance or overridden in a subclass is not seen), and ``plan`` and the golden converge seed
# generated names and uids through api/meta.py's module attributes (``suffix_source``, read at
# every draw, and ``new_uid``, which only interpreted code calls, by attribute: keep it so). Left
# out on purpose, because tests (or ``plan``'s seeding) replace a part of them, which compiled
# callers would not see, or build or subclass their classes in ways compiled classes refuse: the
# DaemonSet controller's history module.  A compiled class that source code derives from says so
# (``mypyc_attr`` with ``allow_interpreted_subclasses``, re-exported here so that a plain install
# without mypy runs the sources unchanged): the generic registry's store, which every resource's
# storage with more to do subclasses, and the clock, which tests replace by fixed and stepped ones
# (a method such a subclass overrides is called through Python, the rest natively; compiled, the
# registry's write path took 1.4% fewer instructions in a virtual rollout, 1% fewer in
# ``api_floor``).  The registry's watch module uses async generators, which this mypyc does not
# compile; the in-process client is compiled (tests derive recording clients from it, so it
# allows interpreted subclasses), its watch stream, an async generator, is not.  The informer is
# compiled since its ``_watch`` no longer awaits in a ``finally``: compiled, that ``finally`` left
# a watch's 410 in ``sys.exc_info()`` and the next clean end of a stream raised it again, a
# relist where the source resumes (the docstring's last paragraph).
MODULES: tuple[str, ...] = (
    "everynode.api.daemonset",
    "everynode.api.defaults",
    "everynode.api.gojson",
    "everynode.api.intstr",
    "everynode.api.meta",
    "everynode.api.names",
    "everynode.api.node",
    "everynode.api.pod",
    "everynode.api.quantity",
    "everynode.api.scheduling",
    "everynode.api.schema",
    "everynode.api.selectors",
    "everynode.api.typecheck",
    "everynode.api.validation.apps",
    "everynode.api.validation.core",
    "everynode.api.validation.meta",
    "everynode.api.validation.pod",
    "everynode.api.validation.workloads",
    "everynode.apiserver.admission",
    "everynode.apiserver.patch.apply",
    "everynode.apiserver.patch.strategic",
    "everynode.apiserver.registry.context",
    "everynode.apiserver.registry.copies",
    "everynode.apiserver.registry.core.pod.binding",
    "everynode.apiserver.registry.core.pod.strategy",
    "everynode.apiserver.registry.decode",
    "everynode.apiserver.registry.generic",
    "everynode.apiserver.registry.options",
    "everynode.apiserver.registry.systemmeta",
    "everynode.apiserver.registry.templates",
    "everynode.apiserver.service",
    "everynode.client.events",
    "everynode.client.expectations",
    "everynode.client.informer",
    "everynode.client.inprocess",
    "everynode.client.wakeup",
    "everynode.client.workqueue",
    "everynode.clock",
    "everynode.controllers.daemonset.adoption",
    "everynode.controllers.daemonset.backoff",
    "everynode.controllers.daemonset.budgets",
    "everynode.controllers.daemonset.controller",
    "everynode.controllers.daemonset.daemonpods",
    "everynode.controllers.daemonset.incremental",
    "everynode.controllers.daemonset.manage",
    "everynode.controllers.daemonset.placement",
    "everynode.controllers.daemonset.status",
    "everynode.controllers.daemonset.update",
    "everynode.kubelet.addresses",
    "everynode.kubelet.containerevents",
    "everynode.kubelet.downward",
    "everynode.kubelet.mounts",
    "everynode.kubelet.nodeagent",
    "everynode.kubelet.podlifecycle",
    "everynode.kubelet.podstatus",
    "everynode.kubelet.simulator",
    "everynode.memo",
    "everynode.product.plan_recorder",
    "everynode.scheduler.cache",
    "everynode.scheduler.cycle",
    "everynode.scheduler.filters",
    "everynode.scheduler.interpodaffinity",
    "everynode.scheduler.nodeinfo",
    "everynode.scheduler.podinfo",
    "everynode.scheduler.preemption",
    "everynode.scheduler.queue",
    "everynode.scheduler.scheduler",
    "everynode.scheduler.scoring",
    "everynode.scheduler.topologyspread",
    "everynode.storage.canonical",
    "everynode.storage.memory",
    "everynode.storage.sqlite",
    "everynode.storage.watch",
    "everynode.virtualtime",
)

# Hand-written C extensions built with them, from ``<module>.c`` beside the module's place: what
# Python itself cannot do (storage/untracked.py).  Each has a Python module that does without it.
C_MODULES: tuple[str, ...] = (
    "everynode.storage._untrack",
)

# mypyc's shared library of the build (its runtime and the modules' code): one per build.
GROUP = "everynode._compiled"
LIBRARY = f"{GROUP}__mypyc"  # the module name mypyc gives that library


def source_path(module: str, *, package_dir: Path = PACKAGE_DIR) -> Path:
    """The source file of a listed module."""
    return package_dir.joinpath(*module.split(".")[1:]).with_suffix(".py")


def c_source_path(module: str, *, package_dir: Path = PACKAGE_DIR) -> Path:
    """The C source of a hand-written extension (``C_MODULES``)."""
    return package_dir.joinpath(*module.split(".")[1:]).with_suffix(".c")


def extension_path(module: str, *, package_dir: Path = PACKAGE_DIR) -> Path | None:
    """The built extension of a module (or of ``GROUP``'s library) for this interpreter, if any."""
    base = package_dir.joinpath(*module.split(".")[1:])
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = base.with_name(base.name + suffix)
        if candidate.exists():
            return candidate
    return None


def build_state(modules: Sequence[str] = MODULES, *, c_modules: Sequence[str] = C_MODULES,
                package_dir: Path = PACKAGE_DIR) -> str:
    """``"fresh"`` (every module's extension, and the build's library, is as new as its
    source or newer), ``"absent"`` (none built) or ``"stale"`` (anything in between)."""
    extensions = [extension_path(m, package_dir=package_dir) for m in modules]
    c_extensions = [extension_path(m, package_dir=package_dir) for m in c_modules]
    library = extension_path(LIBRARY, package_dir=package_dir)
    if library is None and not any(extensions) and not any(c_extensions):
        return "absent"
    if library is None or None in extensions or None in c_extensions:
        return "stale"
    sources = [source_path(m, package_dir=package_dir) for m in modules]
    sources += [c_source_path(m, package_dir=package_dir) for m in c_modules]
    for source, extension in zip(sources, extensions + c_extensions, strict=True):
        assert extension is not None
        if source.stat().st_mtime > extension.stat().st_mtime:
            return "stale"
    # The list itself (this file) may have changed since the build: then modules left out of it
    # may still be built, and one build's modules initialise each other.
    listing = package_dir / "compiled.py"
    if listing.exists() and listing.stat().st_mtime > library.stat().st_mtime:
        return "stale"
    return "fresh"


def extension_files(*, package_dir: Path = PACKAGE_DIR) -> list[Path]:
    """Every extension file in the package, whatever the list says (a build of another list,
    another interpreter's)."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return [path for path in package_dir.rglob("*") if path.name.endswith(suffixes) and path.is_file()]


def built_modules(*, package_dir: Path = PACKAGE_DIR) -> list[str]:
    """The modules of the package that have an extension file."""
    found = []
    for path in extension_files(package_dir=package_dir):
        stem = path.name[:path.name.index(".")]
        parts = path.parent.relative_to(package_dir).parts
        found.append(".".join((package_dir.name, *parts, stem)))
    return found


def running_compiled(module: ModuleType) -> bool:
    """Whether an imported module is the extension (not its source)."""
    return isinstance(getattr(module, "__loader__", None), importlib.machinery.ExtensionFileLoader)


class _SourceFinder:
    """Finds the listed modules as their source files (see the module docstring)."""

    def __init__(self, modules: Sequence[str]) -> None:
        self.modules = frozenset(modules)

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.modules:
            return None
        if fullname in C_MODULES:  # no source to run instead: its Python module does without it
            raise ModuleNotFoundError(f"{fullname} is not used while the build is not fresh", name=fullname)
        source = source_path(fullname)
        if not source.exists():  # the build's library: nothing imports it once its modules are sources
            return None
        return importlib.util.spec_from_file_location(fullname, source)


def guard(*, environ: Mapping[str, str] = os.environ) -> str:
    """Install the source finder unless the build is fresh and wanted; returns the build state,
    or ``"pure"`` when ``EVERYNODE_PURE`` asked for the sources."""
    state = build_state()
    if environ.get("EVERYNODE_PURE"):
        state = "pure" if state != "absent" else state
    if state == "fresh":
        return state
    if not any(isinstance(f, _SourceFinder) for f in sys.meta_path):
        # Every module with an extension, not only the listed ones: a build of another list may
        # be lying there (never a mix: see the module docstring).
        sys.meta_path.insert(0, _SourceFinder((*MODULES, *C_MODULES, *built_modules())))
    return state
