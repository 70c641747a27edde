"""The study database `companion merge` writes: every device's rows in one file.

Its tables are the device tables (`store.schema.TABLES`) with provenance (`device_id`, the
row's id on that device as `source_id`), the shared tables under their own keys, and merge's
bookkeeping (`study_meta`, `merges`, `participant_devices`, `participant_identities`).
`research.merge` and `research.identity` decide what is merged; the SQL is here. Table names
come from the schema's own lists, never from an export.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlite_utils

from companion.clock import iso
from companion.files import open_private
from companion.store.db import DatabaseError
from companion.store.readonly import ReadOnly
from companion.store.schema import TABLES

# Tables only merge's bookkeeping makes: a database holding one is a study database.
STUDY_MARKERS = frozenset({"study_meta", "merges"})
# A table every device database has and no study database: a home's companion.db.
DEVICE_MARKER = "schema_migrations"


def create_schema(
    db: sqlite_utils.Database, shared: Iterable[str], per_device: Sequence[str]
) -> None:
    """The study tables (none changed if they exist): `shared` keyed as on a device,
    `per_device` (in dependency order, sessions first) with provenance."""
    db.execute("CREATE TABLE IF NOT EXISTS study_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute(
        "CREATE TABLE IF NOT EXISTS merges (export_key TEXT PRIMARY KEY, device_id TEXT NOT NULL, "
        "exported_at TEXT, merged_at TEXT NOT NULL, source TEXT NOT NULL, rows TEXT NOT NULL)"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS participant_devices (participant_id TEXT NOT NULL, "
        "device_id TEXT NOT NULL, PRIMARY KEY (participant_id, device_id))"
    )
    for table in shared:
        cols = ", ".join(f"{col.name} {col.type}" for col in TABLES[table].columns)
        key = ", ".join(TABLES[table].key)
        db.execute(f"CREATE TABLE IF NOT EXISTS {table} ({cols}, PRIMARY KEY ({key}))")
    for table in per_device:
        cols = ", ".join(f"{c.name} {c.type}" for c in TABLES[table].columns if c.name != "id")
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {table} (id INTEGER PRIMARY KEY, device_id TEXT NOT NULL, "
            f"source_id INTEGER NOT NULL, {cols}, UNIQUE (device_id, source_id))"
        )
    db.execute("CREATE INDEX IF NOT EXISTS sessions_pid ON sessions(participant_id, local_date)")
    for table in per_device[1:]:
        db.execute(f"CREATE INDEX IF NOT EXISTS {table}_sid ON {table}(session_id)")


def target_refusal(path: Path) -> str | None:
    """Why `path` cannot be merged into, found by reading only (nothing is created or added
    there); None for a new or empty file or an existing study database."""
    if not path.exists() or (path.is_file() and path.stat().st_size == 0):
        return None
    try:
        with ReadOnly(path) as reader:
            names = set(reader.db.table_names())
    except (sqlite3.DatabaseError, DatabaseError, OSError) as exc:
        return f"not a usable study database ({exc})"
    if DEVICE_MARKER in names:
        return ("a device's own database (a home's companion.db), not a study database; "
                "export the device and merge into a new file")  # fmt: skip
    if names and not names & STUDY_MARKERS:
        return "an SQLite database that is not a study database; merge into a new file"
    return None


def open_study(
    path: Path, shared: Iterable[str], per_device: Sequence[str], schema: bool = True
) -> sqlite_utils.Database:
    """Open (creating it 0600: it holds every participant's answers) a study database with
    its tables in WAL mode. `schema=False`: neither, so a caller can create the tables in its
    own transaction and a refused one leaves an empty file empty (`use_wal` after it).
    Raises sqlite3.DatabaseError for a file that is not one."""
    if not path.exists():
        with open_private(path, "wb"):
            pass
    conn = sqlite3.connect(str(path), timeout=10.0, isolation_level=None)
    db = sqlite_utils.Database(conn)
    try:
        if schema:
            use_wal(db)
            create_schema(db, shared, per_device)
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db


def use_wal(db: sqlite_utils.Database) -> None:
    """WAL: a report or browse can read while a merge writes (kept by the file once set)."""
    db.execute("PRAGMA journal_mode=WAL")


def meta(db: sqlite_utils.Database, key: str) -> str | None:
    row = db.execute("SELECT value FROM study_meta WHERE key = ?", [key]).fetchone()
    return None if row is None else str(row[0])


def set_meta(db: sqlite_utils.Database, key: str, value: str) -> None:
    db.execute("INSERT INTO study_meta VALUES (?, ?)", [key, value])


# -- shared rows (participants, stories, protocols) ------------------------------------------


def shared_row(
    db: sqlite_utils.Database, table: str, columns: Sequence[str], key: Mapping[str, Any]
) -> tuple | None:
    """`columns` of the row of `table` with primary key `key` (column -> value), if merged."""
    where = " AND ".join(f"{k} = ?" for k in key)
    return db.execute(
        f"SELECT {', '.join(columns)} FROM {table} WHERE {where}", list(key.values())
    ).fetchone()


def insert_shared(db: sqlite_utils.Database, table: str, row: Mapping[str, Any]) -> None:
    cols = list(row)
    db.execute(
        f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
        list(row.values()),
    )


def link_device(db: sqlite_utils.Database, participant_id: str, device: str) -> None:
    db.execute("INSERT OR IGNORE INTO participant_devices VALUES (?, ?)", [participant_id, device])


# -- per-device rows --------------------------------------------------------------------------


def device_row(
    db: sqlite_utils.Database, table: str, columns: Sequence[str], device: str, source_id: Any
) -> tuple | None:
    """(study id, *columns) of the row merged from `device` under its id there, if any."""
    return db.execute(
        f"SELECT id, {', '.join(columns)} FROM {table} WHERE device_id = ? AND source_id = ?",
        [device, source_id],
    ).fetchone()


def insert_device_row(
    db: sqlite_utils.Database, table: str, device: str, source_id: Any, row: Mapping[str, Any]
) -> int:
    """Store a device's row with its provenance; returns its id in the study database."""
    cols = list(row)
    cursor = db.execute(
        f"INSERT INTO {table} (device_id, source_id, {', '.join(cols)}) "
        f"VALUES (?, ?, {', '.join('?' * len(cols))})",
        [device, source_id, *row.values()],
    )
    return int(cursor.lastrowid or 0)


def update_device_row(
    db: sqlite_utils.Database, table: str, row_id: int, values: Mapping[str, Any]
) -> None:
    """Set `values` (column -> value) on the merged row `row_id` of `table` (a row that
    progressed on its device since it was merged)."""
    sets = ", ".join(f"{c} = ?" for c in values)
    db.execute(f"UPDATE {table} SET {sets} WHERE id = ?", [*values.values(), row_id])


def protocol_definitions(db: sqlite_utils.Database) -> list[tuple[str, int, str]]:
    """(id, version, definition JSON) of every merged protocol."""
    return db.execute("SELECT id, version, definition FROM protocols").fetchall()


def device_answers(db: sqlite_utils.Database, device: str) -> list[tuple]:
    """(source id, instrument, item, value, protocol id, protocol version) of every answer
    with a value merged from `device`."""
    return db.execute(
        "SELECT r.source_id, r.instrument, r.item, r.value, s.protocol_id, s.protocol_version "
        "FROM self_reports r JOIN sessions s ON s.id = r.session_id "
        "WHERE r.device_id = ? AND r.value IS NOT NULL", [device],
    ).fetchall()  # fmt: skip


def record_merge(
    db: sqlite_utils.Database, export_key: str, device: str, exported_at: str | None,
    merged_at: datetime, source: str, rows: str,
) -> None:  # fmt: skip
    """That an export (`export_key`: its files' checksums) was merged; `rows` JSON counts."""
    db.execute(
        "INSERT OR IGNORE INTO merges VALUES (?, ?, ?, ?, ?, ?)",
        [export_key, device, exported_at, iso(merged_at), source, rows],
    )


# -- who participants are across devices (`research.identity`) -------------------------------


def ensure_identities(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS participant_identities (participant_id TEXT PRIMARY KEY, "
        "name_check TEXT, timezone TEXT, device_id TEXT NOT NULL)"
    )


def identity(db: sqlite_utils.Database, participant_id: str) -> tuple | None:
    """(name check, timezone, device id) first merged for the participant, if any."""
    return db.execute(
        "SELECT name_check, timezone, device_id FROM participant_identities "
        "WHERE participant_id = ?",
        [participant_id],
    ).fetchone()


def add_identity(
    db: sqlite_utils.Database, participant_id: str, name_check: str | None,
    timezone: str | None, device: str,
) -> None:  # fmt: skip
    db.execute(
        "INSERT INTO participant_identities VALUES (?, ?, ?, ?)",
        [participant_id, name_check, timezone, device],
    )
