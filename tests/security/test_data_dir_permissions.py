"""Attack 1: another local user reads a Secret out of ``everynode.db`` / ``everynode.db-wal``.

Fixed by a 0700 data dir and 0600 files (storage/private.py).  As root the test really is
"another user": it creates a throwaway account with ``useradd`` and tries to read the files as
that user; otherwise it checks the modes that make such a read impossible."""

from __future__ import annotations

import base64
import os
import shutil
import stat
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from everynode.api.registry import resource
from everynode.apiserver.service import ApiService, RequestOptions
from everynode.clock import Clock
from everynode.storage.private import ensure_private_dir
from everynode.storage.sqlite import SqliteStore

SECRET_VALUE = "s3cr3t-" + uuid.uuid4().hex


async def _store_a_secret(data_dir: Path) -> SqliteStore:
    """A store holding a Secret, left open: its WAL (the attack read it too) exists until close."""
    ensure_private_dir(data_dir)  # what `everynode up` does before opening the store
    store = SqliteStore(data_dir / "everynode.db")
    service = ApiService(store, clock=Clock())
    await service.start()
    await service.create(resource("secrets"), "default", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db-password"},
        "data": {"password": base64.b64encode(SECRET_VALUE.encode()).decode()}}, opts=RequestOptions())
    files = {p.name for p in data_dir.iterdir()}
    assert "everynode.db-wal" in files, files
    return store


def _modes(data_dir: Path) -> dict[str, int]:
    out = {".": stat.S_IMODE(data_dir.stat().st_mode)}
    for p in data_dir.rglob("*"):
        out[str(p.relative_to(data_dir))] = stat.S_IMODE(p.lstat().st_mode)
    return out


async def test_data_dir_and_database_files_are_owner_only(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    store = await _store_a_secret(data_dir)
    try:
        modes = _modes(data_dir)
    finally:
        await store.close()
    assert modes["."] == 0o700, oct(modes["."])
    assert {"everynode.db", "everynode.db-wal"} <= set(modes)  # no -shm: EXCLUSIVE locking
    loose = {name: oct(mode) for name, mode in modes.items() if name != "." and mode & 0o077}
    assert not loose, loose


async def test_loosened_modes_are_repaired_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data_dir = tmp_path / "data"
    await (await _store_a_secret(data_dir)).close()
    os.chmod(data_dir, 0o755)
    os.chmod(data_dir / "everynode.db", 0o644)
    (data_dir / "backup.db").write_bytes((data_dir / "everynode.db").read_bytes())
    os.chmod(data_dir / "backup.db", 0o664)
    caplog.set_level("WARNING")
    repaired = ensure_private_dir(data_dir)
    assert len(repaired) == 3, repaired
    assert any("everynode.db was 0644" in line for line in repaired)
    assert "readable by other users" in caplog.text
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((data_dir / "backup.db").stat().st_mode) == 0o600
    assert ensure_private_dir(data_dir) == []  # idempotent: nothing left to repair


@pytest.fixture
def other_user() -> Iterator[str]:
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("needs root and useradd to create a throwaway user (the mode tests cover the rest)")
    name = "evn" + uuid.uuid4().hex[:8]
    subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", name], check=True, capture_output=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


async def test_another_local_user_cannot_read_the_secret(tmp_path: Path, other_user: str) -> None:
    os.chmod(tmp_path, 0o755)  # the attacker may walk up to the data dir, as with ~/.everynode
    data_dir = tmp_path / "data"
    store = await _store_a_secret(data_dir)
    try:
        wal = data_dir / "everynode.db-wal"
        assert base64.b64encode(SECRET_VALUE.encode()) in wal.read_bytes()  # the secret is there to steal
        for path in (data_dir / "everynode.db", wal, data_dir):
            command = ["ls", str(path)] if path.is_dir() else ["cat", str(path)]
            result = subprocess.run(["runuser", "-u", other_user, "--", *command], capture_output=True)
            assert result.returncode != 0, f"{other_user} read {path}"
            assert b"Permission denied" in result.stderr
    finally:
        await store.close()
