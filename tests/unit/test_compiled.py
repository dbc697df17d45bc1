"""The mypyc build of the hot modules (everynode/compiled.py): when it is used, when the sources
are, and that both give the same objects.

In CI the whole suite runs on the build (``scripts/test.sh`` compiles first), so the build is
what these tests require there; the sources are checked against it by running the golden
converge and the write-path unit tests again with ``EVERYNODE_PURE=1``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import os
import subprocess
import sys
from pathlib import Path

import pytest

import everynode
from everynode import compiled
from everynode.storage import untracked

ROOT = Path(__file__).resolve().parents[2]
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
MODULES = ("pkg.a", "pkg.sub.b")
C_MODULES = ("pkg.sub._c",)


def _fake_package(tmp_path: Path, *, built: dict[str, int]) -> Path:
    """A package with the two MODULES as sources and C_MODULES' C source (time 100), and
    extensions with the given times."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    for name in ("a.py", "sub/b.py", "sub/_c.c"):
        source = package / name
        source.write_text("")
        os.utime(source, (100, 100))
    for name, when in built.items():
        extension = package / f"{name}{SUFFIX}"
        extension.write_bytes(b"")
        os.utime(extension, (when, when))
    return package


LIB = compiled.LIBRARY.split(".", 1)[1]


@pytest.mark.parametrize(("built", "state"), [
    ({}, "absent"),
    ({"a": 200, "sub/b": 200, "sub/_c": 200, LIB: 200}, "fresh"),
    ({"a": 100, "sub/b": 100, "sub/_c": 100, LIB: 100}, "fresh"),  # built in the same second as the edit
    ({"a": 200, "sub/b": 50, "sub/_c": 200, LIB: 200}, "stale"),  # b edited since the build
    ({"a": 200, "sub/_c": 200, LIB: 200}, "stale"),  # b never built
    ({"a": 200, "sub/b": 200, "sub/_c": 200}, "stale"),  # no library of the build
    ({"a": 200, "sub/b": 200, LIB: 200}, "stale"),  # the C extension never built
    ({"a": 200, "sub/b": 200, "sub/_c": 50, LIB: 200}, "stale"),  # its C source edited since
    ({"sub/_c": 200}, "stale"),  # only the C extension
])
def test_build_state(tmp_path: Path, built: dict[str, int], state: str) -> None:
    package = _fake_package(tmp_path, built=built)
    assert compiled.build_state(MODULES, c_modules=C_MODULES, package_dir=package) == state


def test_a_list_newer_than_the_build_is_stale(tmp_path: Path) -> None:
    package = _fake_package(tmp_path, built={"a": 200, "sub/b": 200, "sub/_c": 200, LIB: 200})
    listing = package / "compiled.py"
    listing.write_text("")
    os.utime(listing, (150, 150))
    assert compiled.build_state(MODULES, c_modules=C_MODULES, package_dir=package) == "fresh"
    os.utime(listing, (300, 300))
    assert compiled.build_state(MODULES, c_modules=C_MODULES, package_dir=package) == "stale"


def test_built_modules_are_found_whatever_the_list(tmp_path: Path) -> None:
    package = _fake_package(tmp_path, built={"a": 200, "sub/b": 200, "sub/_c": 200, LIB: 200})
    assert sorted(compiled.built_modules(package_dir=package)) == [
        "pkg._compiled__mypyc", "pkg.a", "pkg.sub._c", "pkg.sub.b"]


def test_every_listed_module_exists_as_source() -> None:
    for module in compiled.MODULES:
        assert compiled.source_path(module).is_file(), module


def _awaits_in(statements: list[ast.stmt]) -> list[int]:
    """Lines of the awaits run by these statements (not by functions they define)."""
    found: list[int] = []
    todo: list[ast.AST] = list(statements)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, (ast.Await, ast.AsyncFor, ast.AsyncWith)):
            found.append(node.lineno)
        todo.extend(ast.iter_child_nodes(node))
    return found


def test_no_listed_module_awaits_in_finally_or_except() -> None:
    """Compiled, such an await corrupts ``sys.exc_info()`` (the compiled.py docstring)."""
    offences = []
    for module in compiled.MODULES:
        tree = ast.parse(compiled.source_path(module).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.AsyncWith):
                offences.append(f"{module}:{node.lineno} async with")
            if isinstance(node, (ast.Try, ast.TryStar)):
                blocks = [("finally", node.finalbody), *(("except", h.body) for h in node.handlers)]
                for name, body in blocks:
                    offences += [f"{module}:{line} await in {name}" for line in _awaits_in(body)]
    assert offences == []


def _opens_to_subclasses(node: ast.ClassDef) -> bool:
    """Whether the class is decorated ``@mypyc_attr(allow_interpreted_subclasses=True)``, or
    ``@mypyc_attr(native_class=False)`` (an ordinary Python class with compiled methods)."""
    for deco in node.decorator_list:
        if isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name) and deco.func.id == "mypyc_attr":
            for kw in deco.keywords:
                if kw.arg == "allow_interpreted_subclasses" and isinstance(kw.value, ast.Constant) \
                        and kw.value.value is True:
                    return True
                if kw.arg == "native_class" and isinstance(kw.value, ast.Constant) and kw.value.value is False:
                    return True
    return False


def _compiled_classes() -> dict[str, set[str]]:
    """Module -> the classes it defines at its top level that refuse interpreted subclasses, for
    every listed module (one opened with ``mypyc_attr`` takes them)."""
    out: dict[str, set[str]] = {}
    for module in compiled.MODULES:
        tree = ast.parse(compiled.source_path(module).read_text())
        out[module] = {node.name for node in tree.body
                       if isinstance(node, ast.ClassDef) and not _opens_to_subclasses(node)}
    return out


def test_no_source_class_subclasses_a_compiled_one() -> None:
    """Compiled, a listed module's class refuses interpreted subclasses (instantiating one raises
    ``TypeError: interpreted classes cannot inherit from compiled``): the classes of modules left
    as source, and of the tests, do not derive from one (a listed module's own may)."""
    classes = _compiled_classes()
    offences = []
    for path in sorted([*(ROOT / "everynode").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]):
        dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        if dotted in classes:
            continue
        tree = ast.parse(path.read_text())
        imported: dict[str, str] = {}  # local name -> "module.Class" of a compiled class
        modules: dict[str, str] = {}  # local name -> a listed module
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    if alias.name in classes.get(node.module, ()):
                        imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                    if f"{node.module}.{alias.name}" in classes:
                        modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for base in node.bases:
                if isinstance(base, ast.Name) and base.id in imported:
                    offences.append(f"{dotted}.{node.name}({imported[base.id]})")
                elif isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) \
                        and base.value.id in modules and base.attr in classes[modules[base.value.id]]:
                    offences.append(f"{dotted}.{node.name}({modules[base.value.id]}.{base.attr})")
    assert offences == []


@pytest.mark.skipif(not os.environ.get("CI"), reason="outside CI the build is optional (no C compiler: sources)")
def test_ci_runs_the_compiled_build() -> None:
    assert everynode.BUILD == "fresh", "scripts/test.sh compiles the hot modules before the tests"
    for module in (*compiled.MODULES, *compiled.C_MODULES):
        assert compiled.running_compiled(importlib.import_module(module)), module
    assert untracked.ACTIVE


def _run(code: str, **env: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_everynode_pure_runs_every_listed_module_from_source() -> None:
    out = _run("import importlib, everynode; from everynode import compiled; "
               "print(everynode.BUILD, any(compiled.running_compiled(importlib.import_module(m)) "
               "for m in compiled.MODULES))", EVERYNODE_PURE="1")
    assert out in ("pure False", "absent False")


def test_everynode_pure_does_without_the_c_extensions() -> None:
    """Their Python modules' fallbacks, as without a build: never a build's C beside sources."""
    out = _run("import everynode; from everynode.storage import untracked; "
               "print(untracked.ACTIVE, untracked.untrack({'a': [{}]}))", EVERYNODE_PURE="1")
    assert out == "False False"


@pytest.mark.skipif(everynode.BUILD != "fresh", reason="without a build the suite itself ran the sources")
def test_sources_give_what_the_build_gives() -> None:
    """The golden converge (objects and watch events byte for byte) and the write path's unit
    tests, run again from source: the build and the sources agree on every object."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/integration/test_golden_converge.py", "tests/unit/test_patch_apply.py",
         "tests/unit/test_patch_strategic.py", "tests/unit/test_storage_sharing.py",
         "tests/unit/test_validation_pod.py", "tests/unit/test_template_creates.py"],
        cwd=ROOT, env={**os.environ, "EVERYNODE_PURE": "1"}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout
