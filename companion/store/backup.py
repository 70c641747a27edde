"""Daily online backups of the study database, with rotation and a checked restore.

Uses SQLite's backup API, which copies a consistent snapshot while the service
keeps writing (WAL), unlike copying the file, which can catch a half-written page.
A restore opens and migrates its candidate in a scratch copy, checks it against
`store.schema` and against the home's participant, and only then swaps it in.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import sqlite_utils

from companion import files
from companion.clock import utc_now
from companion.errors import CompanionError
from companion.settings.config import Home, load_config
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
        copy_database(db.conn, partial, single_file=True)
        _check(partial)
        with open(partial, "rb") as f:
            os.fsync(f.fileno())
        os.replace(partial, target)
        files.fsync_dir(folder)  # the rename itself must survive a power cut
    except BaseException:
        partial.unlink(missing_ok=True)  # never leave half a backup behind (a full disk)
        raise
    removed = rotation(list_backups(home), keep)
    for old in removed:
        old.unlink()
    log_event(db, "backup", f"{target.name} (removed {len(removed)} old)", at=clock())
    return target


def copy_database(source: sqlite3.Connection, target: Path, *, single_file: bool = False) -> None:
    """Copy everything `source` holds into the new file `target` (created 0600 before SQLite
    writes into it), as it is now; `single_file`: a self-contained file, no -wal beside it."""
    with files.open_private(target, "wb"):
        pass
    dest = sqlite3.connect(str(target))
    try:
        source.backup(dest)
        if single_file:
            dest.execute("PRAGMA journal_mode=DELETE")
    finally:
        dest.close()


def data_rows(path: Path) -> int:
    """How much study data a backup holds (sessions, turns, answers); -1 if unreadable."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return sum(
                int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])  # noqa: S608
                for t in ("sessions", "turns", "self_reports")
            )
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return -1


def verified(path: Path) -> bool:
    try:
        _check(path)
    except BackupError:
        return False
    return True


def rotation(backups: list[Path], keep: int) -> list[Path]:
    """The backups to delete: all but the newest `keep`, except the last verified backup that
    holds more data than the newest one (an emptied database must not rotate it away)."""
    old = backups[:-keep] if keep > 0 else list(backups)
    if not old:
        return []
    newest = data_rows(backups[-1])
    kept = backups[-keep:] if keep > 0 else []
    if any(data_rows(p) > newest and verified(p) for p in kept):
        return old
    for candidate in reversed(old):
        if data_rows(candidate) > newest and verified(candidate):
            log.warning("keeping %s: it holds more data than the newest backup", candidate)
            return [p for p in old if p != candidate]
    return old


def newest_verified(home: Home) -> Path | None:
    """The newest backup that passes SQLite's integrity check."""
    return next((p for p in reversed(list_backups(home)) if verified(p)), None)


def backup_hint(home: Home) -> str:
    """What to tell someone whose database is missing or damaged."""
    best = newest_verified(home)
    if best is None:
        return f"no verified backup in {backup_dir(home)}"
    return f"newest verified backup: {best.name}; run companion restore --home {home.path}"


def _schema_of(path: Path) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "schema_migrations" not in names or "sessions" not in names:
            raise BackupError(f"{path}: not a companion database (no study tables)")
        return int(conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] or 0)
    finally:
        conn.close()


def restore(
    home: Home, backup: Path | None = None, *, other_participant: bool = False
) -> tuple[Path, Path | None]:
    """Replace the home's database with a checked backup (the newest verified one by default).

    The backup is copied into a scratch folder in the home and opened there as a session
    would open it (integrity check, migrations, the schema `store.schema` describes); a
    backup of another participant than config.toml's is refused unless `other_participant`.
    Only then is the current database (with its -wal/-shm) moved aside as
    companion.db.replaced-STAMP, never overwritten or deleted, and the checked copy renamed
    into place. Refuses while a session runs. Returns (backup, moved-aside file).
    """
    from companion.store.migrations import SCHEMA_VERSION

    if backup is None:
        backup = newest_verified(home)
        if backup is None:
            raise BackupError(f"{backup_dir(home)}: no verified backup to restore")
    if not backup.is_file():
        raise BackupError(f"{backup}: no such backup; see {backup_dir(home)}")
    _check(backup)
    version = _schema_of(backup)
    if version > SCHEMA_VERSION:
        raise BackupError(
            f"{backup}: schema v{version} is newer than this companion (v{SCHEMA_VERSION}); "
            "update the companion package first"
        )
    ours = None if other_participant else load_config(home).participant_id  # before any work
    if files.free_bytes(home.path) < 2 * backup.stat().st_size + (1 << 20):
        raise BackupError(f"{home.path}: not enough free disk to restore {backup.name}; free some")
    with session_lock(home):
        scratch = Path(tempfile.mkdtemp(prefix=".restore-", dir=home.path))
        try:
            staged = scratch / home.db_path.name
            source = sqlite3.connect(f"file:{backup}?mode=ro", uri=True)
            try:
                copy_database(source, staged)
            finally:
                source.close()
            theirs = _open_as_home(staged, backup, home)
            if ours is not None and theirs and ours not in theirs:
                raise BackupError(
                    f"{backup}: a backup of participant {', '.join(theirs)}, but this home's "
                    f"config.toml says {ours}; nothing was changed: check the file, or pass "
                    "--other-participant to restore it anyway"
                )
            with open(staged, "rb") as f:
                os.fsync(f.fileno())
            aside = _move_aside(home)
            os.replace(staged, home.db_path)
            files.fsync_dir(home.path)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    from companion.store.db import open_db

    db = open_db(home.db_path)
    try:
        log_event(db, "restored", f"{backup.name} (participant {', '.join(theirs) or 'none'}); "
                  f"previous database kept as {aside.name if aside else 'none'}",
                  level="warning")  # fmt: skip
    finally:
        db.conn.close()
    log.warning("restored %s from %s", home.db_path, backup)
    return backup, aside


def _open_as_home(staged: Path, backup: Path, home: Home) -> list[str]:
    """Open the scratch copy as a session would (migrations included), check its schema and
    integrity, and leave it one self-contained file. Returns its participant ids."""
    from companion.store.db import DatabaseError, integrity_ok, open_db

    again = f"nothing was changed: restore another backup (see {backup_dir(home)})"
    try:
        db = open_db(staged)
    except DatabaseError as exc:
        why = exc.__cause__ or exc
        raise BackupError(f"{backup}: does not open as a companion database ({why}); {again}"
                          ) from exc  # fmt: skip
    try:
        problems = schema_problems(db.conn)
        if problems:
            shown = "; ".join(problems[:3]) + ("; ..." if len(problems) > 3 else "")
            raise BackupError(f"{backup}: not this companion's schema ({shown}); {again}")
        ok, detail = integrity_ok(db)
        if not ok:
            raise BackupError(f"{backup}: integrity check failed after migrating ({detail}); "
                              f"{again}")  # fmt: skip
        ids = [r[0] for r in db.execute("SELECT id FROM participants ORDER BY created_at, id")]
        db.execute("PRAGMA journal_mode=DELETE")  # fold the WAL in: one file to rename
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"{backup}: does not open as a companion database ({exc}); {again}"
                          ) from exc  # fmt: skip
    finally:
        db.conn.close()
    return ids


def schema_problems(conn: sqlite3.Connection) -> list[str]:
    """How a database differs from `store.schema` (tables, columns, declared types)."""
    from companion.store.schema import TABLES

    problems = []
    for table in TABLES.values():
        info = {r[1]: r[2] for r in conn.execute(f"PRAGMA table_info({table.name})")}
        if not info:
            problems.append(f"no table {table.name}")
            continue
        for col in table.columns:
            if col.name not in info:
                problems.append(f"{table.name} has no column {col.name}")
            elif info[col.name].upper() != col.type:
                problems.append(f"{table.name}.{col.name} is {info[col.name] or 'untyped'}, "
                                f"not {col.type}")  # fmt: skip
        problems += [f"{table.name} has an unknown column {name}" for name in info
                     if table.column(name) is None]  # fmt: skip
    return problems


def _move_aside(home: Home) -> Path | None:
    """Rename the current database (and its WAL files) to an unused name; None if none."""
    if not home.db_path.exists():
        return None
    stamp = utc_now().strftime("%Y%m%dT%H%M%SZ")
    n = 0
    while (
        aside := home.path / f"{home.db_path.name}.replaced-{stamp}{f'-{n}' if n else ''}"
    ).exists():
        n += 1
    for suffix in ("-wal", "-shm"):
        extra = home.db_path.with_name(home.db_path.name + suffix)
        if extra.exists():
            os.replace(extra, aside.with_name(aside.name + suffix))
    os.replace(home.db_path, aside)
    return aside
