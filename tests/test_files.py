"""companion.files: private files and folders whatever the umask; atomic replacement."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from companion.files import open_private, private_dir, write_private


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_private_whatever_the_umask(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    old = os.umask(0)
    try:
        deep = private_dir(shared / "a" / "b" / "c")
        write_private(deep / "x.toml", "k = 1\n")
        with open_private(deep / "y.bin", "wb") as f:
            f.write(b"\0")
        loose = tmp_path / "loose"
        loose.write_text("old")
        os.chmod(loose, 0o666)
        write_private(loose, b"new")  # replacing a world-readable file makes it private
    finally:
        os.umask(old)
    assert [mode(p) for p in (shared / "a", shared / "a" / "b", deep)] == [0o700] * 3
    assert mode(deep / "x.toml") == mode(deep / "y.bin") == mode(loose) == 0o600
    assert loose.read_bytes() == b"new" and mode(shared) == 0o755  # existing parents alone
    assert sorted(p.name for p in deep.iterdir()) == ["x.toml", "y.bin"]  # no temp file left
