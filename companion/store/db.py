"""The study database: connections, transactions, events, and applying the migrations
(`store.migrations`) in order.

Researchers' scripts rely on these table and column names (documented in
docs/schema.md). Every answer is committed the moment it is given.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import sqlite_utils

from companion.clock import iso, utc_now
from companion.errors import CompanionError, DiskSpaceError, printable
from companion.files import open_private, space_problem
from companion.store.migrations import MIGRATIONS, SCHEMA_VERSION

log = logging.getLogger(__name__)


class DatabaseError(CompanionError):
    """The database file is unusable (corrupt, newer schema, not a database)."""


def schema_version(db: sqlite_utils.Database) -> int:
    if "schema_migrations" not in db.table_names():
        return 0
    row = db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def migrate(db: sqlite_utils.Database, target: int | None = None) -> list[int]:
    """Apply pending migrations in order, each in its own transaction. Returns versions applied."""
    target = SCHEMA_VERSION if target is None else target
    current = schema_version(db)
    if current > SCHEMA_VERSION:
        raise DatabaseError(
            f"{db_label(db)}: schema version {current} is newer than this companion "
            f"({SCHEMA_VERSION}); update the companion package"
        )
    applied = []
    for version, description, apply in MIGRATIONS:
        if current < version <= target:
            with transaction(db):
                db.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations "
                    "(version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT)"
                )
                apply(db)
                db.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                    [version, description, iso(utc_now())],
                )
            log.info("applied migration %s: %s", version, description)
            applied.append(version)
    return applied


def db_label(db: sqlite_utils.Database) -> str:
    row = db.execute("PRAGMA database_list").fetchone()
    return row[2] or ":memory:"


def open_db(path: Path) -> sqlite_utils.Database:
    """Open (and migrate) a study database with the durability settings below.

    To look without writing, use `store.readonly.ReadOnly` instead.
    """
    new = not path.exists()
    if new:
        with open_private(path, "wb", exclusive=True):
            pass  # 0600 before SQLite creates it with the umask's mode
    # isolation_level=None: we open transactions ourselves (with db.conn / BEGIN).
    conn = sqlite3.connect(str(path), timeout=10.0, check_same_thread=False, isolation_level=None)
    db = sqlite_utils.Database(conn)
    try:
        # WAL: readers (export, status) never block the session writing answers.
        db.execute("PRAGMA journal_mode=WAL")
        # FULL: each commit is fsynced, so an answer acknowledged to the participant survives
        # a power cut (NORMAL in WAL mode may lose the last transactions).
        db.execute("PRAGMA synchronous=FULL")
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA busy_timeout=10000")
        migrate(db)
    except sqlite3.DatabaseError as exc:
        # Out of space or inodes SQLite cannot make its -wal file ("unable to open"): the
        # database is fine, and restoring a backup would need the same room.
        full = space_problem(path)
        if full is not None:
            raise DiskSpaceError(f"{printable(str(path))}: cannot open ({exc}): {full}") from exc
        raise DatabaseError(
            f"{printable(str(path))}: not a usable SQLite database ({exc}); restore a backup"
        ) from exc
    return db


def integrity_ok(db: sqlite_utils.Database) -> tuple[bool, str]:
    rows = [r[0] for r in db.execute("PRAGMA integrity_check").fetchall()]
    return rows == ["ok"], "; ".join(rows[:5])


@contextmanager
def transaction(db: sqlite_utils.Database) -> Iterator[None]:
    """One atomic, durable write (the connection is in autocommit mode otherwise)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        # SQLite has already rolled back after some errors (a full disk): a second ROLLBACK
        # would fail and hide the error that says what happened.
        if db.conn.in_transaction:
            db.execute("ROLLBACK")
        raise


def log_event(
    db: sqlite_utils.Database,
    kind: str,
    detail: str = "",
    *,
    level: str = "info",
    session_id: int | None = None,
    at: datetime | None = None,
) -> None:
    with transaction(db):
        db.execute(
            "INSERT INTO events (ts, level, kind, detail, session_id) VALUES (?, ?, ?, ?, ?)",
            [iso(at or utc_now()), level, kind, detail, session_id],
        )
    getattr(log, "warning" if level == "warning" else "info")("%s %s", kind, detail)
