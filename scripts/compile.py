"""Build the modules ``everynode.compiled.MODULES`` lists into C extensions with mypyc, in place.

Run by the set-up scripts (``_venv.sh``) with ``--if-stale``: nothing happens when the build is
fresh, so a start after no edit costs one look at a few dozen file times.  A build takes one to
two minutes (gcc on two cores).  When it cannot be made (no C compiler or Python headers), the
extensions are removed and everynode runs the same modules from their sources, only slower:
set-up never fails for want of a compiler.  ``build/`` keeps mypyc's intermediate C (git-ignored).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["EVERYNODE_PURE"] = "1"  # this process only reads the list

from everynode import compiled  # noqa: E402


def remove_extensions() -> None:
    for path in compiled.extension_files():
        path.unlink()


def build() -> None:
    from mypyc.build import mypycify
    from setuptools import Extension, setup

    paths = [str(compiled.source_path(m).relative_to(ROOT)) for m in compiled.MODULES]
    extensions = [Extension(m, [str(compiled.c_source_path(m).relative_to(ROOT))]) for m in compiled.C_MODULES]
    log = io.StringIO()
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        try:
            setup(name="everynode-compiled", ext_modules=[*mypycify(paths, group_name=compiled.GROUP), *extensions],
                  script_args=["build_ext", "--inplace", "--parallel", str(os.cpu_count() or 1)])
        except (Exception, SystemExit) as e:
            raise RuntimeError(f"{e}\n{log.getvalue()[-4000:]}") from None
    # setuptools copies an extension it did not need to rebuild with its old time; it is built
    # from the sources as they are now, which is what the time stands for (compiled.build_state).
    for module in (*compiled.MODULES, compiled.LIBRARY, *compiled.C_MODULES):
        extension = compiled.extension_path(module)
        if extension is not None:
            os.utime(extension)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--if-stale", action="store_true", help="do nothing when the build is fresh")
    parser.add_argument("--strict", action="store_true", help="fail (exit 1) when the build fails")
    args = parser.parse_args()
    os.chdir(ROOT)
    if args.if_stale and compiled.build_state() == "fresh":
        return 0
    print("compiling everynode's hot modules with mypyc (one to two minutes, once) …", file=sys.stderr)
    remove_extensions()
    try:
        build()
    except RuntimeError as e:
        remove_extensions()
        print(f"warning: mypyc could not build the compiled modules; everynode runs them from source: {e}",
              file=sys.stderr)
        return 1 if args.strict else 0
    state = compiled.build_state()
    if state != "fresh":
        print(f"warning: the compiled build is {state} after building", file=sys.stderr)
        return 1 if args.strict else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
