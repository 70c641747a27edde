"""The database: migrations, durability settings, private permissions."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import sqlite_utils

from companion.store.db import DatabaseError, migrate, open_db, schema_version
from companion.store.migrations import SCHEMA_VERSION
from tests.helpers.run import run_cli, run_text_session

TABLES = {"participants", "sessions", "turns", "stories", "story_exposures", "self_reports",
          "events", "schema_migrations"}  # fmt: skip


def test_migrate_from_empty(tmp_path: Path) -> None:
    db = open_db(tmp_path / "c.db")
    assert schema_version(db) == SCHEMA_VERSION
    assert set(db.table_names()) >= TABLES
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert migrate(db) == []  # idempotent


def test_migrate_from_previous_version_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    migrate(db, target=SCHEMA_VERSION - 1)
    assert schema_version(db) == SCHEMA_VERSION - 1
    db.execute("INSERT INTO participants VALUES ('P1', 'Ann', 'UTC', '2026-01-01T00:00:00+00:00')")
    db.execute(
        "INSERT INTO sessions (participant_id, protocol_id, protocol_version, mode, status, "
        "started_at, timezone, local_date) VALUES ('P1', 'p', 1, 'text', 'completed', "
        "'2026-01-01T10:00:00+00:00', 'UTC', '2026-01-01')"
    )
    db.execute(
        "INSERT INTO self_reports (session_id, instrument, item, value, raw_answer, attempts, "
        "answered_at) VALUES (1, 'mood', 'valence', 4, 'four', 1, '2026-01-01T10:01:00+00:00')"
    )
    db.conn.commit()
    db.close()
    upgraded = open_db(path)
    assert schema_version(upgraded) == SCHEMA_VERSION
    row = upgraded.execute("SELECT value, raw_answer FROM self_reports").fetchone()
    assert row == (4, "four")
    assert upgraded.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_v4_moves_invitation_log_text_into_the_invitations_table(tmp_path: Path) -> None:
    """What v3 services wrote into events.detail becomes rows the service and status read."""
    from companion.store import queries

    path = tmp_path / "v3.db"
    db = sqlite_utils.Database(path)
    migrate(db, target=3)
    db.execute("INSERT INTO participants VALUES ('P1', 'Ann', 'UTC', '2026-12-01T00:00:00+00:00')")
    db.execute(
        "INSERT INTO sessions (participant_id, protocol_id, protocol_version, mode, status, "
        "started_at, timezone, local_date) VALUES ('P1', 'p', 1, 'text', 'completed', "
        "'2026-12-02T18:40:00.000+00:00', 'UTC', '2026-12-02')"
    )
    old = [  # (ts, detail, session_id) exactly as v3 logged them
        ("2026-12-01T18:00:00.000+00:00", "2026-12-01#0 attempt=1 outcome=no_answer", None),
        ("2026-12-01T18:20:00.000+00:00", "2026-12-01#0 attempt=2 outcome=snoozed", None),
        ("2026-12-02T18:00:00.000+00:00", "2026-12-02#0 attempt=1 outcome=declined", None),
        ("2026-12-01T18:35:00.000+00:00", "2026-12-01#0 attempt=3 outcome=busy", None),
        ("2026-12-02T18:40:00.000+00:00", "2026-12-02#1 attempt=1 outcome=accepted", 1),
    ]
    for ts, detail, session_id in old:
        db.execute(
            "INSERT INTO events (ts, level, kind, detail, session_id) "
            "VALUES (?, 'info', 'invitation', ?, ?)",
            [ts, detail, session_id],
        )
    db.execute("INSERT INTO events (ts, level, kind, detail) VALUES (?, 'info', 'backup', 'x')",
               ["2026-12-01T03:30:00.000+00:00"])  # fmt: skip
    db.conn.commit()
    db.close()

    upgraded = open_db(path)
    rows = upgraded.execute(
        "SELECT slot_key, attempt, outcome, at, session_id FROM invitations ORDER BY id"
    ).fetchall()
    assert rows == [
        ("2026-12-01#0", 1, "no_answer", "2026-12-01T18:00:00.000+00:00", None),
        ("2026-12-01#0", 2, "snoozed", "2026-12-01T18:20:00.000+00:00", None),
        ("2026-12-02#0", 1, "declined", "2026-12-02T18:00:00.000+00:00", None),
        ("2026-12-01#0", 3, "busy", "2026-12-01T18:35:00.000+00:00", None),
        ("2026-12-02#1", 1, "accepted", "2026-12-02T18:40:00.000+00:00", 1),
    ]
    history = queries.attempt_history(upgraded, "2026-12-01#0")
    assert [outcome for _, outcome in history] == ["no_answer", "snoozed", "busy"]
    # Nothing lost: the old log lines stay in events.
    assert upgraded.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 6
    from datetime import UTC, datetime

    at = datetime(2026, 12, 1, 18, 50, tzinfo=UTC)
    assert queries.record_invitation(upgraded, "2026-12-01#0", "declined", at) == 4


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = open_db(tmp_path / "c.db")
    db.execute("INSERT INTO schema_migrations VALUES (999, 'future', NULL)")
    db.close()
    with pytest.raises(DatabaseError, match="newer than this companion"):
        open_db(tmp_path / "c.db")


def test_not_a_database_is_one_line_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('participant_id = "P1"\n')
    (home / "companion.db").write_bytes(b"this is not sqlite" * 100)
    proc = run_cli("session", "--text", "--home", str(home), input="")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "companion.db" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_home_and_files_are_private(home: Path) -> None:
    run_text_session(home, ["four"])
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    for name in ("companion.db", "config.toml", "session.lock"):
        assert stat.S_IMODE((home / name).stat().st_mode) == 0o600, name
    for extra in home.glob("companion.db-*"):
        assert stat.S_IMODE(extra.stat().st_mode) == 0o600, extra


def test_documented_tables_via_sqlite_utils_cli(home: Path) -> None:
    import subprocess
    import sys

    run_text_session(home, ["four"])
    tables = subprocess.run(
        [str(Path(sys.executable).parent / "sqlite-utils"), "tables", str(home / "companion.db")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for table in TABLES:
        assert f'"{table}"' in tables


def test_a_missed_window_is_rechecked_inside_the_write_transaction(tmp_path: Path) -> None:
    from datetime import UTC, date, datetime

    from companion.store.queries import ensure_participant
    from companion.store.recorder import Recorder

    db = open_db(tmp_path / "c.db")
    ensure_participant(db, "P1", "Ann", "UTC")
    recorder = Recorder(db)
    start, end = datetime(2026, 3, 2, 9, tzinfo=UTC), datetime(2026, 3, 2, 11, tzinfo=UTC)
    asked: list[bool] = []

    def open_now(answer: bool):
        def still_open() -> bool:
            asked.append(db.conn.in_transaction)  # another process cannot start one meanwhile
            return answer

        return still_open

    args = ("P1", "daily-v1", 1, "no_answer", start, end, "UTC", date(2026, 3, 2))
    assert recorder.missed(open_now(False), *args) is None
    assert db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 0
    session_id = recorder.missed(open_now(True), *args)
    row = db.execute(
        "SELECT status, reason, started_at, ended_at, local_date FROM sessions WHERE id = ?",
        [session_id],
    ).fetchone()
    assert row[:2] == ("missed", "no_answer") and row[4] == "2026-03-02"
    assert (datetime.fromisoformat(row[2]), datetime.fromisoformat(row[3])) == (start, end)
    assert asked == [True, True]
    assert not db.conn.in_transaction
