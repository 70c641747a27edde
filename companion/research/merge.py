"""Merge many devices' exports into one study database.

Each per-device row (sessions, turns, exposures, answers, events, invitations) keeps
its provenance: `device_id` and its id on that device (`source_id`); session
references are renumbered to the study database's ids. Participants, stories and
protocols are shared across devices under their own keys; a duplicate must agree
on what identifies it (a story's text, a protocol's wording) or the export is refused.
Merging is idempotent (a row already present and identical is skipped) and all
or nothing: a row that differs from the one already merged under the same
device and id refuses the whole export, with nothing written.
"""

from __future__ import annotations

import csv
import json
import logging
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_utils

from companion.clock import iso, utc_now
from companion.errors import CompanionError
from companion.files import open_private
from companion.research import identity
from companion.research.cells import restore
from companion.research.export import read_manifest
from companion.store.db import transaction
from companion.store.schema import TABLES

log = logging.getLogger(__name__)

# Tables whose rows belong to one device (renumbered, with provenance), in dependency order.
DEVICE_TABLES = ("sessions", "turns", "story_exposures", "self_reports", "events", "invitations")
# Keyed by their own primary key across devices. A duplicate must agree on the columns that
# identify it; the rest (first-seen times) may differ per device and the first merged is kept.
SHARED_TABLES = {
    "participants": ("name", "timezone"),
    "stories": ("content_hash",),
    "protocols": ("title", "definition"),
}


class MergeError(CompanionError):
    """An export cannot be merged (conflicting rows, mixed de-identification, bad files)."""


@dataclass(frozen=True)
class MergeResult:
    device_id: str
    added: dict[str, int]
    skipped: dict[str, int]
    warnings: tuple[str, ...] = ()  # identity warnings (the default participant id)


def _create_schema(db: sqlite_utils.Database) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS study_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute(
        "CREATE TABLE IF NOT EXISTS merges (export_key TEXT PRIMARY KEY, device_id TEXT NOT NULL, "
        "exported_at TEXT, merged_at TEXT NOT NULL, source TEXT NOT NULL, rows TEXT NOT NULL)"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS participant_devices (participant_id TEXT NOT NULL, "
        "device_id TEXT NOT NULL, PRIMARY KEY (participant_id, device_id))"
    )
    for table in SHARED_TABLES:
        cols = ", ".join(f"{col.name} {col.type}" for col in TABLES[table].columns)
        key = ", ".join(TABLES[table].key)
        db.execute(f"CREATE TABLE IF NOT EXISTS {table} ({cols}, PRIMARY KEY ({key}))")
    for table in DEVICE_TABLES:
        cols = ", ".join(f"{c.name} {c.type}" for c in TABLES[table].columns if c.name != "id")
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {table} (id INTEGER PRIMARY KEY, device_id TEXT NOT NULL, "
            f"source_id INTEGER NOT NULL, {cols}, UNIQUE (device_id, source_id))"
        )
    db.execute("CREATE INDEX IF NOT EXISTS sessions_pid ON sessions(participant_id, local_date)")
    for table in DEVICE_TABLES[1:]:
        db.execute(f"CREATE INDEX IF NOT EXISTS {table}_sid ON {table}(session_id)")


def open_study(path: Path) -> sqlite_utils.Database:
    if not path.exists():
        with open_private(path, "wb"):
            pass  # created 0600: the study database holds every participant's answers
    conn = sqlite3.connect(str(path), timeout=10.0, isolation_level=None)
    db = sqlite_utils.Database(conn)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        _create_schema(db)
    except sqlite3.DatabaseError as exc:
        raise MergeError(f"{path}: not a usable study database ({exc})") from exc
    return db


def _convert(table: str, column: str, value: Any) -> Any:
    if value is None:
        return None
    col = TABLES[table].column(column)
    kind = col.type if col else "TEXT"
    if isinstance(value, str) and kind == "INTEGER":
        return int(value)
    if isinstance(value, str) and kind == "REAL":
        return float(value)
    return value


def _format1_cell(value: str) -> str | None:
    return value or None


def read_table(export_dir: Path, manifest: dict[str, Any], table: str) -> Iterator[dict]:
    meta = manifest["tables"].get(table)
    if meta is None:
        return
    path = export_dir / meta["file"]
    for column in meta["columns"]:
        if TABLES[table].column(column) is None:
            raise MergeError(f"{path}: unknown column {column!r}; update companion")
    # A CSV cell is text: format 2 exports neutralised formula-like cells (undone exactly here);
    # format 1 wrote every value as stored, with an empty cell for NULL. JSONL is exact.
    cell: Callable[[str], str | None] | None = None
    if manifest["file_format"] == "csv":
        cell = restore if manifest["format"] >= 2 else _format1_cell
    try:
        with path.open(encoding="utf-8", newline="") as f:
            if manifest["file_format"] == "csv":
                reader: Iterator[dict] = csv.DictReader(f)
            else:
                reader = (json.loads(line) for line in f if line.strip())
            for n, raw in enumerate(reader, start=2):
                if cell is not None:
                    raw = {c: cell(v) if isinstance(v, str) else v for c, v in raw.items()}
                try:
                    yield {c: _convert(table, c, raw[c]) for c in meta["columns"]}
                except (KeyError, ValueError) as exc:
                    raise MergeError(f"{path}: row {n}: bad value ({exc})") from exc
    except OSError as exc:
        raise MergeError(f"{path}: cannot read ({exc.strerror})") from exc


def _check_mode(db: sqlite_utils.Database, manifest: dict[str, Any], source: Path) -> None:
    mode = "deidentified" if manifest["options"]["deidentified"] else "identified"
    row = db.execute("SELECT value FROM study_meta WHERE key = 'ids'").fetchone()
    if row is None:
        db.execute("INSERT INTO study_meta VALUES ('ids', ?)", [mode])
    elif row[0] != mode:
        raise MergeError(
            f"{source}: export is {mode} but the study database holds {row[0]} data; "
            "export every device the same way"
        )


def _conflict(source: Path, table: str, key: Any, device: str, column: str) -> MergeError:
    return MergeError(
        f"{source}: {table} row {key} from device {device} conflicts with the merged copy "
        f"(column {column} differs); was this device's data changed or its id reused?"
    )


def _merge_shared(db, source: Path, table: str, rows: Iterator[dict], device: str) -> int:
    added = 0
    key = TABLES[table].key
    where = " AND ".join(f"{k} = ?" for k in key)
    for row in rows:
        cols = list(row)
        found = db.execute(
            f"SELECT {', '.join(cols)} FROM {table} WHERE {where}", [row[k] for k in key]
        ).fetchone()
        if found is None:
            db.execute(
                f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                list(row.values()),
            )
            added += 1
        else:
            for col in SHARED_TABLES[table]:
                if col in row and found[cols.index(col)] != row[col]:
                    label = "/".join(str(row[k]) for k in key)
                    raise _conflict(source, table, label, device, col)
        if table == "participants":
            db.execute(
                "INSERT OR IGNORE INTO participant_devices VALUES (?, ?)", [row["id"], device]
            )
    return added


def _merge_device(db, source: Path, table: str, rows: Iterator[dict], device: str,
                  sessions: dict[int, int]) -> tuple[int, int]:  # fmt: skip
    added = skipped = 0
    for row in rows:
        source_id = row.pop("id")
        if "session_id" in row and row["session_id"] is not None:
            if row["session_id"] not in sessions:
                raise MergeError(f"{source}: {table} row {source_id} names a session not exported")
            row["session_id"] = sessions[row["session_id"]]
        cols = list(row)
        found = db.execute(
            f"SELECT id, {', '.join(cols)} FROM {table} WHERE device_id = ? AND source_id = ?",
            [device, source_id],
        ).fetchone()
        if found is None:
            cursor = db.execute(
                f"INSERT INTO {table} (device_id, source_id, {', '.join(cols)}) "
                f"VALUES (?, ?, {', '.join('?' * len(cols))})",
                [device, source_id, *row.values()],
            )
            new_id = int(cursor.lastrowid or 0)
            added += 1
        else:
            for i, col in enumerate(cols, start=1):
                if found[i] != row[col]:
                    raise _conflict(source, table, source_id, device, col)
            new_id = found[0]
            skipped += 1
        if table == "sessions":
            sessions[source_id] = new_id
    return added, skipped


def merge_export(
    db: sqlite_utils.Database, export_dir: Path, same_person: frozenset[str] = frozenset()
) -> MergeResult:
    """Merge one verified export into the study database, all or nothing. `same_person`:
    participant ids whose devices disagree on name or timezone but are one person."""
    manifest = read_manifest(export_dir)
    device = manifest.get("device_id")
    if not device:
        raise MergeError(f"{export_dir}: manifest has no device_id; re-export with this companion")
    key = "|".join(f"{n}:{m['sha256']}" for n, m in sorted(manifest["files"].items()))
    added: dict[str, int] = {}
    skipped: dict[str, int] = {}
    with transaction(db):
        _check_mode(db, manifest, export_dir)
        warnings: list[str] = []
        for table in SHARED_TABLES:
            rows = read_table(export_dir, manifest, table)
            if table == "participants":  # who they are: identity checks (identity.py)
                checked, warnings = identity.check(db, manifest, export_dir, list(rows),
                                                   same_person)  # fmt: skip
                rows = iter(checked)
            added[table] = _merge_shared(db, export_dir, table, rows, device)
            skipped[table] = manifest["tables"].get(table, {}).get("rows", 0) - added[table]
        sessions: dict[int, int] = {}
        for table in DEVICE_TABLES:
            rows = read_table(export_dir, manifest, table)
            added[table], skipped[table] = _merge_device(
                db, export_dir, table, rows, device, sessions
            )
        db.execute(
            "INSERT OR IGNORE INTO merges VALUES (?, ?, ?, ?, ?, ?)",
            [key, device, manifest.get("exported_at"), iso(utc_now()), str(export_dir),
             json.dumps(added)],
        )  # fmt: skip
    log.info("merged %s from device %s: %s", export_dir, device, added)
    for warning in warnings:
        log.warning("%s", warning)
    return MergeResult(device, added, skipped, tuple(warnings))


def merge_exports(
    out: Path, export_dirs: list[Path], same_person: frozenset[str] = frozenset()
) -> list[MergeResult]:
    db = open_study(out)
    try:
        return [merge_export(db, Path(d), same_person) for d in export_dirs]
    finally:
        db.close()
