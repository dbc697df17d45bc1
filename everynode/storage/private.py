"""Owner-only files: the data directory is 0700 and every file in it 0600.

Why: the database and its write-ahead log hold every Secret in clear (base64 is not
encryption), so a 0644 ``everynode.db`` in a 0755 directory lets any local user read them.
etcd keeps its data dir at 0700 for the same reason (``fileutil.CheckDirPermission`` warns
when it is looser); kube-apiserver's key files are 0600.  Two layers of defence, both cheap:

* files are *created* owner-only (``os.open(..., 0o600)`` before SQLite opens the database:
  SQLite gives its ``-wal`` and ``-shm`` files the mode of the database file), so there is no
  window in which a fresh file is readable;
* at start-up the whole directory tree is *checked*, and anything looser (a copied backup, a
  file restored by a tool that ignores modes, an old data dir from an earlier version) is
  repaired with a warning naming the path and its old mode, rather than refused: the operator
  sees what happened and nothing stays exposed.

Symbolic links are neither followed nor changed (a link inside the data dir must not make us
chmod a file elsewhere).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
_GROUP_OR_OTHER = 0o077


def ensure_private_dir(path: Path) -> list[str]:
    """Create ``path`` (0700) if missing, then repair the modes below it.

    Returns one line per repaired path (also logged as a warning)."""
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    repaired: list[str] = []
    _repair(path, PRIVATE_DIR_MODE, repaired)
    for root, dirs, files in os.walk(path):
        for name in dirs:
            _repair(Path(root) / name, PRIVATE_DIR_MODE, repaired)
        for name in files:
            _repair(Path(root) / name, PRIVATE_FILE_MODE, repaired)
    return repaired


def ensure_private_file(path: Path) -> list[str]:
    """Create ``path`` empty and 0600 if missing (so later opens keep that mode); repair it if looser."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    except FileExistsError:
        repaired: list[str] = []
        _repair(path, PRIVATE_FILE_MODE, repaired)
        return repaired
    os.close(fd)
    return []


def repair_private_files(paths: list[Path]) -> list[str]:
    """Repair the modes of the existing files among ``paths`` (missing ones are skipped)."""
    repaired: list[str] = []
    for path in paths:
        _repair(path, PRIVATE_FILE_MODE, repaired)
    return repaired


def _repair(path: Path, wanted: int, repaired: list[str]) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        return
    mode = stat.S_IMODE(st.st_mode)
    if mode & _GROUP_OR_OTHER == 0:
        return
    os.chmod(path, wanted)
    line = f"{path} was {mode:04o}, readable by other users; changed to {wanted:04o}"
    log.warning("data dir permissions: %s", line)
    repaired.append(line)
