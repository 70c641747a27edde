"""Online backups with rotation, a checked restore, and the disk-full refusal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import time_machine

from companion import app
from companion.store.backup import BackupError, backup_now, list_backups, restore
from tests.helpers.run import run_text_session
from tests.helpers.world import World, local, make_home, slot_rows

REPLIES = ["4", "3", "my cat learned to open the fridge", "that's all"] + ["4"] * 12


def test_backup_rotation_keeps_the_newest(home: Path) -> None:
    _, _, db = run_text_session(home, REPLIES)
    opened = app.open_home(home)
    start = datetime(2027, 1, 1, 3, 30, tzinfo=UTC)
    made = [
        backup_now(db, opened.home, keep=3, clock=lambda n=n: start + timedelta(days=n))
        for n in range(5)
    ]
    kept = list_backups(opened.home)
    assert kept == made[-3:]
    assert all(not p.exists() for p in made[:2])
    assert oct(kept[0].stat().st_mode & 0o777) == "0o600"
    assert db.execute("SELECT COUNT(*) FROM events WHERE kind = 'backup'").fetchone()[0] == 5


def test_a_failed_backup_leaves_no_partial_file(home: Path) -> None:
    """A disk that fills while the snapshot is written leaves no half backup behind."""
    import sqlite3

    _, _, db = run_text_session(home, REPLIES)
    opened = app.open_home(home)
    folder = home / "backups"
    folder.mkdir(mode=0o700)
    (folder / "x").touch()

    class Boom(sqlite3.Connection):
        def execute(self, *args, **kwargs):  # the snapshot's journal switch fails: disk full
            raise sqlite3.OperationalError("database or disk is full")

    real = sqlite3.connect
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sqlite3, "connect", lambda *a, **k: real(*a, **{**k, "factory": Boom}))
        with pytest.raises(sqlite3.OperationalError):
            backup_now(db, opened.home)
    assert sorted(p.name for p in folder.iterdir()) == ["x"]


def test_restore_brings_back_the_answers_and_refuses_damaged_backups(home: Path) -> None:
    first, _, db = run_text_session(home, REPLIES)
    opened = app.open_home(home)
    saved = backup_now(db, opened.home)
    second, _, db = run_text_session(home, REPLIES)
    assert db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 2
    damaged = saved.with_name("companion-99999999T000000000000Z.db")
    damaged.write_bytes(saved.read_bytes()[:4096] + b"\0garbage" * 512)
    with pytest.raises(BackupError, match="companion-9999"):
        restore(opened.home, damaged)
    with pytest.raises(BackupError, match="no such backup"):
        restore(opened.home, saved.with_name("nope.db"))
    restore(opened.home, saved)
    after = app.open_home(home).db
    assert [r[0] for r in after.execute("SELECT id FROM sessions")] == [first.session_id]
    answers = after.execute(
        "SELECT COUNT(*) FROM self_reports WHERE session_id = ?", [first.session_id]
    ).fetchone()[0]
    assert answers == first.answers_stored > 0
    assert after.execute("SELECT kind FROM events ORDER BY id DESC LIMIT 1").fetchone()[0] == (
        "restored"
    )


def test_disk_full_means_no_session_an_event_and_a_missed_row(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    with time_machine.travel(local(0, 8), tick=False) as traveller:
        world = World(home, traveller)
        world.free = 50 * 1024 * 1024  # below min_free_mb = 100
        world.boot()
        world.run_until(local(0, 12))
        assert world.service is not None
        rows = slot_rows(world.service.db)
        events = world.service.db.execute(
            "SELECT detail FROM events WHERE kind = 'disk_low'"
        ).fetchall()
    assert [(r[1], r[2]) for r in rows] == [("missed", "disk_full")]
    assert world.invitations == []  # nobody was invited to a session that could not be saved
    assert events and "50 MB free" in events[0][0]
