"""Daily online backups of the study database, with rotation and a checked restore.

Uses SQLite's backup API, which copies a consistent snapshot while the service
keeps writing (WAL), unlike copying the file, which can catch a half-written page.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import sqlite_utils

from companion import files
from companion.clock import utc_now
from companion.errors import CompanionError
from companion.settings.config import Home
from companion.store.db import log_event
from companion.store.lock import session_lock

log = logging.getLogger(__name__)
PREFIX, SUFFIX = "companion-", ".db"


class BackupError(CompanionError):
    """A backup is missing or damaged, or a restore is not possible right now."""


def backup_dir(home: Home) -> Path:
    return home.path / "backups"


def list_backups(home: Home) -> list[Path]:
    """Backups, oldest first (names sort by time)."""
    folder = backup_dir(home)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.startswith(PREFIX) and p.suffix == SUFFIX)


def _check(path: Path) -> None:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"{path}: not a usable SQLite database ({exc})") from exc
    if rows != ["ok"]:
        raise BackupError(f"{path}: integrity check failed ({'; '.join(rows[:3])})")


def backup_now(
    db: sqlite_utils.Database,
    home: Home,
    *,
    keep: int = 7,
    clock: Callable[[], datetime] = utc_now,
) -> Path:
    """Write a verified snapshot to HOME/backups and delete all but the newest `keep`."""
    folder = files.private_dir(backup_dir(home))
    stamp = clock().astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = folder / f"{PREFIX}{stamp}{SUFFIX}"
    partial = target.with_suffix(".partial")
    try:
        with files.open_private(partial, "wb"):
            pass  # created 0600 before SQLite writes into it
        dest = sqlite3.connect(str(partial))
        try:
            db.conn.backup(dest)
            dest.execute("PRAGMA journal_mode=DELETE")  # a single self-contained file
        finally:
            dest.close()
        _check(partial)
        with open(partial, "rb") as f:
            os.fsync(f.fileno())
        os.replace(partial, target)
        files.fsync_dir(folder)  # the rename itself must survive a power cut
    except BaseException:
        partial.unlink(missing_ok=True)  # never leave half a backup behind (a full disk)
        raise
    removed = [old for old in list_backups(home)[:-keep]]
    for old in removed:
        old.unlink()
    log_event(db, "backup", f"{target.name} (removed {len(removed)} old)", at=clock())
    return target


def restore(home: Home, backup: Path) -> None:
    """Replace the home's database with a checked backup. Refuses while a session runs."""
    if not backup.is_file():
        raise BackupError(f"{backup}: no such backup; see {backup_dir(home)}")
    _check(backup)
    with session_lock(home):
        source = sqlite3.connect(f"file:{backup}?mode=ro", uri=True)
        live = sqlite3.connect(str(home.db_path), timeout=10.0)
        try:
            source.backup(live)
        finally:
            source.close()
            live.close()
        db = sqlite_utils.Database(sqlite3.connect(str(home.db_path), isolation_level=None))
        try:
            log_event(db, "restored", backup.name, level="warning")
        finally:
            db.conn.close()
    log.warning("restored %s from %s", home.db_path, backup)
