"""The database: migrations, durability settings, private permissions."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import sqlite_utils

from companion.store.db import SCHEMA_VERSION, DatabaseError, migrate, open_db, schema_version
from tests.conftest import run_cli, run_text_session

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


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = open_db(tmp_path / "c.db")
    db.execute("INSERT INTO schema_migrations VALUES (999, 'future', NULL)")
    db.close()
    with pytest.raises(DatabaseError, match="newer than this companion"):
        open_db(tmp_path / "c.db")


def test_not_a_database_is_one_line_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
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
