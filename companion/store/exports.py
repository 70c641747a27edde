"""What an export reads from a home's database (through `store.readonly`): the rows of each
exported table that a selection keeps, and the protocols and participants the codebook and
manifest describe. `research.export` decides what the files hold.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from typing import Any

import sqlite_utils


@dataclass(frozen=True)
class Selection:
    """Which sessions an export keeps: one participant (None: all), local dates within
    [since, until]; `device_participant` is the one the device's schedule invites."""

    participant: str | None
    since: date | None
    until: date | None
    device_participant: str


def _date_range(column: str, selection: Selection) -> tuple[list[str], list[Any]]:
    """Conditions keeping `column` (an ISO date) within since/until."""
    cond: list[str] = []
    args: list[Any] = []
    for op, bound in ((">=", selection.since), ("<=", selection.until)):
        if bound:
            cond.append(f"{column} {op} ?")
            args.append(bound.isoformat())
    return cond, args


def _session_filter(selection: Selection) -> tuple[str, list[Any]]:
    where, args = ["1=1"], []
    if selection.participant:
        where.append("participant_id = ?")
        args.append(selection.participant)
    cond, dates = _date_range("local_date", selection)
    return " AND ".join(where + cond), args + dates


def queries(selection: Selection) -> dict[str, tuple[str, list[Any]]]:
    """Per exported table, in export order: the SELECT of the rows kept, and its arguments."""
    where, args = _session_filter(selection)
    chosen = f"SELECT id FROM sessions WHERE {where}"
    by_session = f"WHERE session_id IN ({chosen}) ORDER BY id"
    events = f"WHERE session_id IN ({chosen})"
    event_args = list(args)
    if not selection.participant:  # device-level events (start-up, errors) belong to no one
        cond, extra = _date_range("substr(ts, 1, 10)", selection)
        events += " OR (" + " AND ".join(["session_id IS NULL", *cond]) + ")"
        event_args += extra
    if selection.participant:
        people = ("SELECT * FROM participants WHERE id = ? ORDER BY id", [selection.participant])
    else:
        people = ("SELECT * FROM participants ORDER BY id", [])
    # The schedule invites the device's participant: their invitations are all theirs (by
    # local date); anyone else's are only those that led to one of their sessions.
    cond, slot_dates = _date_range("substr(slot_key, 1, 10)", selection)
    invited = " AND ".join(["1=1", *cond])
    if selection.participant and selection.participant != selection.device_participant:
        invited += f" AND session_id IN ({chosen})"
        slot_dates += args
    return {
        "participants": people,
        "sessions": (f"SELECT * FROM sessions WHERE {where} ORDER BY id", args),
        "turns": (f"SELECT * FROM turns {by_session}", args),
        "stories": ("SELECT * FROM stories ORDER BY id", []),
        "story_exposures": (f"SELECT * FROM story_exposures {by_session}", args),
        "self_reports": (f"SELECT * FROM self_reports {by_session}", args),
        "events": (f"SELECT * FROM events {events} ORDER BY id", event_args),
        "invitations": (f"SELECT * FROM invitations WHERE {invited} ORDER BY id", slot_dates),
        "protocols": ("SELECT * FROM protocols ORDER BY id, version", []),
    }


@contextmanager
def snapshot(db: sqlite_utils.Database) -> Iterator[None]:
    """Every read inside sees the database as of one moment (one read transaction on the
    autocommit connection; WAL lets a session go on writing meanwhile)."""
    db.execute("BEGIN")
    try:
        yield
    finally:
        db.execute("ROLLBACK")  # nothing was written: ending the read is all it does


def rows(db: sqlite_utils.Database, sql: str, args: list[Any]) -> Iterator[dict[str, Any]]:
    """The rows of one of `queries`' SELECTs, column -> value, read as they are written out."""
    cursor = db.execute(sql, args)
    names = [d[0] for d in cursor.description]
    for values in cursor:
        yield dict(zip(names, values, strict=True))


def tables(db: sqlite_utils.Database) -> set[str]:
    return set(db.table_names())


def columns(db: sqlite_utils.Database, table: str) -> list[str]:
    return [c.name for c in db[table].columns]


def row_total(db: sqlite_utils.Database, names: tuple[str, ...]) -> int:
    """Rows in the tables of `names` that the database has (for a progress bar)."""
    present = tables(db)
    return sum(db[t].count for t in names if t in present)


def recorded_protocols(db: sqlite_utils.Database) -> list[dict[str, Any]]:
    """Every recorded protocol row (none in a database older than the table)."""
    if "protocols" not in tables(db):
        return []
    return list(rows(db, "SELECT * FROM protocols ORDER BY id, version", []))


def protocols_used(db: sqlite_utils.Database) -> list[tuple[str, int]]:
    """(protocol id, version) of every protocol a session ran under."""
    return db.execute("SELECT DISTINCT protocol_id, protocol_version FROM sessions").fetchall()


def participants(db: sqlite_utils.Database) -> list[tuple[str, str | None]]:
    """(id, name) of every participant."""
    return db.execute("SELECT id, name FROM participants").fetchall()


def participant_ids(db: sqlite_utils.Database) -> list[str]:
    return [r[0] for r in db.execute("SELECT id FROM participants").fetchall()]
