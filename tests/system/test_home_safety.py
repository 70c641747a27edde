"""The home is never silently replaced (issue 11): restore, backup rotation that keeps the
last good backup, stale sessions closed by every writing command, bounded typed input."""

from __future__ import annotations

import io
import resource
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from companion import app
from companion.engine.textio import MAX_TURN_BYTES, TextChannel
from companion.errors import HomeError
from companion.store.backup import backup_now, list_backups, rotation
from tests.helpers.run import SCRIPT, one_error_line, run_cli, run_text_session

START = datetime(2027, 1, 1, 3, 30, tzinfo=UTC)


def test_rotation_keeps_the_last_backup_with_more_data_than_an_emptied_newest(home: Path) -> None:
    _, _, db = run_text_session(home, SCRIPT)
    opened = app.open_home(home)
    rich = [backup_now(db, opened.home, keep=3, clock=lambda n=n: START + timedelta(days=n))
            for n in range(2)]  # fmt: skip
    # The study data is wiped (by mistake); the daily backups go on.
    db.execute("PRAGMA foreign_keys=OFF")
    for table in ("self_reports", "story_exposures", "turns", "events", "sessions"):
        db.execute(f"DELETE FROM {table}")
    poor = [backup_now(db, opened.home, keep=3, clock=lambda n=n: START + timedelta(days=n))
            for n in range(2, 7)]  # fmt: skip
    kept = list_backups(opened.home)
    assert rich[-1] in kept and rich[0] not in kept  # the last good one survives the rotation
    assert kept == [rich[-1], *poor[-3:]]
    assert rich[-1] not in rotation(kept, 3)


def test_restore_puts_back_the_newest_verified_backup_and_keeps_the_damaged_file(
    home: Path,
) -> None:
    first, _, db = run_text_session(home, SCRIPT)
    opened = app.open_home(home)
    good = backup_now(db, opened.home)
    newer = good.with_name("companion-99990101T000000000000Z.db")
    newer.write_bytes(b"not a database at all" * 100)  # newest, but fails the check
    db.conn.close()
    opened.db.conn.close()
    damaged = (home / "companion.db").read_bytes()[:4096] + b"\xff" * 8192
    (home / "companion.db").write_bytes(damaged)
    for extra in ("-wal", "-shm"):
        (home / f"companion.db{extra}").unlink(missing_ok=True)
    refused = run_cli("session", "--text", "--home", str(home), input="4\n")
    assert refused.returncode == 2
    one_error_line(refused, "companion.db", good.name, "companion restore")
    done = run_cli("restore", "--home", str(home))
    assert done.returncode == 0, done.stderr
    assert good.name in done.stdout and "replaced-" in done.stdout
    aside = next(home.glob("companion.db.replaced-*"))
    assert aside.read_bytes() == damaged  # kept byte for byte
    conn = sqlite3.connect(home / "companion.db")
    assert conn.execute("SELECT COUNT(*) FROM self_reports WHERE session_id = ?",
                        [first.session_id]).fetchone()[0] == first.answers_stored  # fmt: skip
    assert conn.execute("SELECT kind FROM events ORDER BY id DESC LIMIT 1").fetchone() == (
        "restored",)  # fmt: skip
    conn.close()
    assert run_cli("session", "--text", "--home", str(home), input="4\n").returncode == 0


def test_a_missing_database_is_not_recreated_by_any_opener(home: Path) -> None:
    app.open_home(home).db.conn.close()
    (home / "companion.db").unlink()
    for extra in ("-wal", "-shm"):
        (home / f"companion.db{extra}").unlink(missing_ok=True)
    with pytest.raises(HomeError, match="database missing"):
        app.open_home(home)
    with pytest.raises(HomeError, match="database missing"):
        app.open_home(home, create=True)  # device_id present: init must not start afresh
    with pytest.raises(HomeError, match="database missing"):
        app.open_home_readonly(home)
    assert not (home / "companion.db").exists()


def test_stale_sessions_are_closed_by_the_next_writing_command(home: Path) -> None:
    result, _, db = run_text_session(home, SCRIPT[:3])  # cut short
    db.execute(
        "UPDATE sessions SET status = 'running', ended_at = NULL WHERE id = ?", [result.session_id]
    )  # fmt: skip  (as a power cut leaves it)
    db.conn.close()
    done = run_cli("stories", "list", "--home", str(home))
    assert done.returncode == 0, done.stderr
    conn = sqlite3.connect(home / "companion.db")
    status, reason = conn.execute("SELECT status, reason FROM sessions WHERE id = ?",
                                  [result.session_id]).fetchone()  # fmt: skip
    conn.close()
    assert status == "interrupted" and "crash" in reason


def _channel(data: bytes) -> TextChannel:
    stdin = io.TextIOWrapper(io.BufferedReader(io.BytesIO(data)), encoding="utf-8")
    return TextChannel(stdin, io.StringIO())


def test_invalid_utf8_is_replaced_and_logged(caplog) -> None:
    channel = _channel(b"I felt caf\xe9 and \xff\xfe tired\n4\n")
    heard = channel.listen(None)  # type: ignore[arg-type]
    assert heard.text == "I felt caf\ufffd and \ufffd\ufffd tired"
    assert "not UTF-8" in caplog.text
    assert channel.listen(None).text == "4"  # type: ignore[arg-type]


def test_a_10_mb_line_is_kept_whole_in_bounded_memory() -> None:
    line = b"word " * (2 * 1024 * 1024)  # 10 MiB, one line
    channel = _channel(line + b"\nnext\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    heard = channel.listen(None)  # type: ignore[arg-type]
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert len(heard.text) == len(line) == 10 * 1024 * 1024  # whole
    assert grown_mb < 200, grown_mb
    assert channel.listen(None).text == "next"  # type: ignore[arg-type]


def test_a_line_beyond_the_limit_is_cut_there_and_the_rest_dropped(caplog) -> None:
    channel = _channel(b"x" * (MAX_TURN_BYTES + 100_000) + b"\n4\n")
    assert len(channel.listen(None).text) == MAX_TURN_BYTES  # type: ignore[arg-type]
    assert "kept the first" in caplog.text
    assert channel.listen(None).text == "4"  # type: ignore[arg-type]


def test_a_database_deleted_during_a_session_is_rescued_not_reported_stored(home: Path) -> None:
    opened = app.open_home(home)
    inner = TextChannel(io.StringIO("".join(f"{line}\n" for line in SCRIPT)), io.StringIO())

    class Deleting:
        mode = "text"
        heard = 0

        def say(self, text: str) -> None:
            inner.say(text)

        def listen(self, expect):
            self.heard += 1
            if self.heard == 3:  # after the check-in answers: `rm companion.db*`
                for name in ("companion.db", "companion.db-wal", "companion.db-shm"):
                    (home / name).unlink(missing_ok=True)
            return inner.listen(expect)

        def close(self) -> None:
            pass

    with pytest.raises(HomeError, match="removed or replaced during the session"):
        app.run_in_home(opened, Deleting())  # type: ignore[arg-type]
    (rescued,) = home.glob("companion.db.rescued-*")
    conn = sqlite3.connect(rescued)
    status, answers = conn.execute(
        "SELECT s.status, COUNT(r.id) FROM sessions s JOIN self_reports r ON r.session_id = s.id "
        "WHERE s.id = (SELECT MAX(id) FROM sessions)"
    ).fetchone()
    conn.close()
    assert status == "completed" and answers == 10
    assert not (home / "companion.db").exists()  # and nothing pretends to be the study
