"""Reading a study database without writing anything next to it.

A plain read-only SQLite connection to a WAL database still creates `-wal` and `-shm` files
beside it and leaves them behind. Export and report must leave the home as they found it, so:

- no `-wal` file: no connection has the database open (the last one to close removes it), so
  everything committed is in the main file. It is opened immutable, which creates nothing, and
  `check()` confirms the main file did not change meanwhile (a checkpoint by a writer that
  started during the read would); if it did, the reader is told to run again.
- a `-wal` file: a session or the service has the database open, and recent answers may be
  only in the WAL, so an ordinary read-only connection reads it. SQLite then records its read
  lock in the existing `-shm` (shared-memory bookkeeping, no data); nothing else changes.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

import sqlite_utils

from companion.store.db import DatabaseError


class DatabaseChangedError(DatabaseError):
    """The database file changed while it was read without locks."""


def _identity(path: Path) -> tuple[int, int, int]:
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns


class ReadOnly:
    """A read-only connection (`conn`, and `db` for sqlite-utils) that writes no file."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise DatabaseError(f"{path}: no database here; check --home or --db")
        self.path = path
        self.immutable = not path.with_name(f"{path.name}-wal").exists()
        self._before = _identity(path)
        uri = f"file:{quote(str(path.resolve()))}?mode=ro" + (
            "&immutable=1" if self.immutable else ""
        )
        self.conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        self.db = sqlite_utils.Database(self.conn)

    def check(self) -> None:
        """Raise if an unlocked (immutable) read may have seen the file change under it."""
        if self.immutable and _identity(self.path) != self._before:
            raise DatabaseChangedError(
                f"{self.path}: the database changed while it was read (a session ended?); "
                "run the command again"
            )

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> ReadOnly:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
