"""Whole sessions through the real engine, real text channel and real SQLite files."""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from companion import app
from companion.engine.protocol import load_protocol
from companion.store.db import open_db
from tests.helpers.run import CHECKIN, POST_STORY, REPO, SCRIPT, STORY, run_text_session

EXPECTED = {
    ("mood", "valence"): 4, ("mood", "arousal"): 2,
    **{("story_empathy", item.id): value for item, (_, value) in zip(
        load_protocol(None).instruments[1].items, POST_STORY, strict=True)},
    ("felt_understood", "felt_understood"): 5,
}  # fmt: skip


def stored_answers(db, session_id: int) -> dict[tuple[str, str], int | None]:
    rows = db.execute(
        "SELECT instrument, item, value FROM self_reports WHERE session_id = ?", [session_id]
    )
    return {(i, it): v for i, it, v in rows}


def test_full_session_stores_every_answer(home: Path) -> None:
    result, output, db = run_text_session(home, SCRIPT)
    assert result.status == "completed"
    assert stored_answers(db, result.session_id) == EXPECTED
    assert result.story_id is not None
    # turns are ordered, timed and alternate as spoken
    turns = list(db.query("SELECT * FROM turns WHERE session_id = ? ORDER BY seq",
                          [result.session_id]))  # fmt: skip
    assert [t["seq"] for t in turns] == list(range(1, len(turns) + 1))
    starts = [datetime.fromisoformat(t["started_at"]) for t in turns]
    assert starts == sorted(starts)
    assert all(t["ended_at"] >= t["started_at"] for t in turns)
    assert all(s.utcoffset().total_seconds() == 0 for s in starts)
    assert turns[0]["speaker"] == "companion" and turns[-1]["purpose"] == "goodbye"
    participant_said = [t["text"] for t in turns if t["speaker"] == "participant"]
    assert participant_said == SCRIPT
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    exposure = db.execute("SELECT * FROM story_exposures").fetchone()
    assert exposure is not None
    session = dict(db["sessions"].get(result.session_id))
    assert session["kind"] == "enrolment" and session["timezone"] == "Europe/London"
    assert session["mode"] == "text" and session["ended_at"]
    assert "Robin" in output.splitlines()[0]


def test_a_story_that_ends_itself_is_stored_whole_and_not_followed_up(home: Path) -> None:
    story = ("The hospital rang at six to say my father could come home, so I drove over with "
             "his slippers and a flask of tea, and that's about it really.")
    replies = [r for r, _ in CHECKIN] + [story] + [r for r, _ in POST_STORY] + ["five"]
    result, output, db = run_text_session(home, replies)
    assert result.status == "completed"
    assert stored_answers(db, result.session_id) == EXPECTED  # nothing asked was lost
    said = db.execute("SELECT speaker, purpose, text FROM turns WHERE session_id = ? "
                      "ORDER BY seq", [result.session_id]).fetchall()  # fmt: skip
    purposes = [p for _, p, _ in said]
    assert "follow_up" not in purposes  # no "anything else?" after the story ended
    after = purposes.index("story") + 1
    assert purposes[after] == "acknowledgement" and purposes[after + 1] != "story"
    assert [t for s, p, t in said if p == "story"] == [story]


def test_a_follow_up_reply_that_ends_the_story_ends_the_sharing(home: Path) -> None:
    story = ["Our choir sang at the cathedral on Saturday for the first time in years.",
             "My sister came all the way from Leeds to hear it, and that's my story."]
    replies = [r for r, _ in CHECKIN] + story + [r for r, _ in POST_STORY] + ["five"]
    result, _, db = run_text_session(home, replies)
    assert stored_answers(db, result.session_id) == EXPECTED
    purposes = [r[0] for r in db.execute(
        "SELECT purpose FROM turns WHERE session_id = ? ORDER BY seq", [result.session_id])]
    assert purposes.count("follow_up") == 1 and purposes.count("story") == 2
    assert purposes[purposes.index("story") + 3] == "acknowledgement"


def test_piped_cli_session_converses_turn_by_turn(home: Path) -> None:
    """A program drives `companion session --text` through a pipe, answering each question."""
    protocol = load_protocol(None)
    questions = {item.text for inst in protocol.instruments for item in inst.items}
    replies = iter(SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "companion", "session", "--text", "--home", str(home)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=REPO, bufsize=1,
    )  # fmt: skip
    assert proc.stdin and proc.stdout
    heard = []
    for line in proc.stdout:
        heard.append(line.rstrip("\n"))
        text = heard[-1]
        waits = (
            text in questions or text.startswith("I'd love to hear")
            or text.rstrip().endswith("?") and not text.startswith("Hello")
        )  # fmt: skip
        if waits:
            proc.stdin.write(next(replies) + "\n")
            proc.stdin.flush()
        if text.startswith("Goodbye"):
            break
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    db = open_db(home / "companion.db")
    session_id = db.execute("SELECT MAX(id) FROM sessions").fetchone()[0]
    assert db["sessions"].get(session_id)["status"] == "completed"
    assert stored_answers(db, session_id) == EXPECTED


@pytest.mark.parametrize("answered", range(len(SCRIPT)))
def test_eof_at_every_turn_keeps_earlier_answers(home: Path, answered: int) -> None:
    result, _, db = run_text_session(home, SCRIPT[:answered])
    assert result.status == "interrupted"
    session = db["sessions"].get(result.session_id)
    assert session["reason"] == "end of input (EOF)" and session["ended_at"]
    stored = stored_answers(db, result.session_id)
    # every stored answer is right, and every answer given before EOF is stored
    for key, value in stored.items():
        assert EXPECTED[key] == value
    scored = [r for r, _ in CHECKIN] + [""] * len(STORY) + [r for r, _ in POST_STORY]
    assert len(stored) == sum(1 for r in scored[:answered] if r)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_eof_through_the_cli_exits_cleanly(home: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "companion", "session", "--text", "--home", str(home)],
        input="four\n", capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0
    assert "Traceback" not in proc.stderr
    assert "interrupted" in proc.stderr
    db = open_db(home / "companion.db")
    assert db.execute("SELECT value FROM self_reports").fetchall() == [(4,)]


def test_unclear_answers_are_reprompted_then_stored_missing(home: Path) -> None:
    replies = ["three or four", "fivefold", "not five", "2"] + SCRIPT[2:]
    result, output, db = run_text_session(home, replies)
    row = db.execute(
        "SELECT value, raw_answer, attempts, status FROM self_reports WHERE item = 'valence'"
    ).fetchone()
    assert row == (None, "three or four | fivefold | not five", 3, "missing")
    assert output.count("Sorry, I didn't quite catch that.") == 2
    # the next question took the "2"
    arousal = db.execute("SELECT value FROM self_reports WHERE item = 'arousal'").fetchone()
    assert arousal == (2,)


def test_skip_and_repeat(home: Path) -> None:
    replies = ["repeat that", "skip"] + SCRIPT[1:]
    result, output, db = run_text_session(home, replies)
    row = db.execute(
        "SELECT value, attempts, status FROM self_reports WHERE item = 'valence'"
    ).fetchone()
    assert row == (None, 2, "skipped")
    first_question = load_protocol(None).instruments[0].items[0].text
    assert output.count(first_question) == 2


def test_participant_never_hears_the_same_story_twice(home: Path) -> None:
    opened = app.open_home(home)
    all_ids = [r[0] for r in opened.db.execute("SELECT id FROM stories ORDER BY id")]
    assert len(all_ids) >= 60
    heard = []
    for _ in range(3):
        result, _, _ = run_text_session(home, SCRIPT)
        heard.append(result.story_id)
    assert len(set(heard)) == 3
    # Exhaust the bank but one story: the next session reads it, the one after reads none.
    db = opened.db
    with db.conn:
        for story_id in all_ids:
            if story_id not in heard and story_id != all_ids[-1]:
                db.execute(
                    "INSERT INTO story_exposures (session_id, story_id, condition, exposed_at) "
                    "VALUES (1, ?, 'random', '2026-01-01T00:00:00+00:00')",
                    [story_id],
                )
    last = run_text_session(home, SCRIPT)[0]
    assert last.story_id == all_ids[-1] if all_ids[-1] not in heard else last.story_id is None
    result, output, db = run_text_session(home, SCRIPT)
    assert result.story_id is None and result.status == "completed"
    assert "I've shared every story" in output
    assert db.execute("SELECT COUNT(*) FROM events WHERE kind = 'bank_exhausted'").fetchone()[0]


def test_counterbalanced_alternates_conditions(home: Path, tmp_path: Path) -> None:
    protocol_file = tmp_path / "cb.toml"
    text = (Path(app.__file__).parent / "data" / "default_protocol.toml").read_text()
    protocol_file.write_text(text.replace('condition = "matched"', 'condition = "counterbalanced"'))
    from companion.settings.config import Config, Home, write_config

    write_config(Home(home), Config(participant_id="P042", participant_name="Robin",
                                    protocol=str(protocol_file)))  # fmt: skip
    for _ in range(4):
        run_text_session(home, SCRIPT)
    db = open_db(home / "companion.db")
    conditions = [r[0] for r in db.execute("SELECT condition FROM story_exposures ORDER BY id")]
    assert conditions in (["matched", "random"] * 2, ["random", "matched"] * 2)
    assert {r[0] for r in db.execute("SELECT story_condition FROM story_exposures")} == {
        "counterbalanced"
    }


def test_second_session_is_daily_and_greets_differently(home: Path) -> None:
    first = run_text_session(home, SCRIPT)
    second = run_text_session(home, SCRIPT)
    assert (first[0].kind, second[0].kind) == ("enrolment", "daily")
    assert second[1].splitlines()[0].startswith("Hello Robin, it's nice to see you")


def test_a_session_opens_no_network_socket(home: Path, monkeypatch) -> None:
    created = []
    real_socket = socket.socket

    class GuardSocket(real_socket):  # type: ignore[misc,valid-type]
        def __init__(self, family=-1, *args, **kwargs):
            if family in (socket.AF_INET, socket.AF_INET6):
                created.append(family)
                raise AssertionError("network socket created during a session")
            super().__init__(family, *args, **kwargs)

    monkeypatch.setattr(socket, "socket", GuardSocket)
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: created.append(a))
    result, _, _ = run_text_session(home, SCRIPT)
    assert result.status == "completed"
    assert created == []


def test_demo_runs_and_summarises(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "companion", "demo", "--home", str(tmp_path / "demo")],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "completed" in proc.stdout
    assert "mood.valence = 4 (answered)" in proc.stdout  # after a repeat and an unclear reply
    assert "felt_understood.felt_understood" in proc.stdout
    assert "check: 10 of 10 stored values are what the participant meant" in proc.stdout
    assert ", 0 wrong" in proc.stdout
    db = open_db(tmp_path / "demo" / "companion.db")
    assert db["sessions"].count == 1 and db["self_reports"].count == 10


def test_a_session_records_the_protocol_it_ran_under(home: Path) -> None:
    """Codebooks and reports read the instruments as asked, from the database itself."""
    import json

    result, _, db = run_text_session(home, SCRIPT)
    rows = db.execute("SELECT id, version, definition FROM protocols").fetchall()
    assert len(rows) == 1
    (protocol_id, version, definition) = rows[0]
    session = db.execute(
        "SELECT protocol_id, protocol_version FROM sessions WHERE id = ?", [result.session_id]
    ).fetchone()
    assert session == (protocol_id, version)
    asked = {
        i["id"]: [it["id"] for it in i["items"]] for i in json.loads(definition)["instruments"]
    }
    stored = db.execute(
        "SELECT DISTINCT instrument, item FROM self_reports WHERE session_id = ?",
        [result.session_id],
    ).fetchall()
    assert stored and all(item in asked[inst] for inst, item in stored)
    run_text_session(home, SCRIPT)  # a second session under the same protocol adds no row
    assert db.execute("SELECT COUNT(*) FROM protocols").fetchone()[0] == 1


def test_an_edited_protocol_under_the_same_version_is_flagged(home: Path, tmp_path: Path) -> None:
    """Researchers must bump the version when they change wording; the device says so."""
    import dataclasses

    from companion.engine.protocol import default_protocol_text
    from companion.settings.config import Home, load_config, write_config

    run_text_session(home, SCRIPT)
    edited = tmp_path / "edited.toml"
    edited.write_text(default_protocol_text().replace('id = "mood"', 'id = "wellbeing"'))
    config = load_config(Home(home))
    write_config(Home(home), dataclasses.replace(config, protocol=str(edited)))
    result, _, db = run_text_session(home, SCRIPT)
    assert result.status == "completed"  # the participant's session is not held up
    (detail,) = db.execute("SELECT detail FROM events WHERE kind = 'protocol_changed'").fetchone()
    assert "new [protocol] version" in detail
    assert db.execute("SELECT COUNT(*) FROM protocols").fetchone()[0] == 1
