"""Moving a real home made by companion-empathy-1 to the active model.

tests/fixtures/model1-home.sqlite (its companion.db) and model1-home.toml (its config.toml) are
a home the released 0.1 companion made (commit 17a14b6, schema v4, companion-empathy-1): four
text sessions, four rated stories, two stories imported. Nothing in them was written by this
version of the code. (Named so that no file on a provisioned device, which gets the source tree,
looks like a participant's database or config: the rehearsal's wipe check looks for those.)
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from companion import app
from companion.model.encode import model_build
from tests.helpers.run import REPO, answering_lines, run_cli

FIXTURE_DB = REPO / "tests" / "fixtures" / "model1-home.sqlite"
FIXTURE_CONFIG = REPO / "tests" / "fixtures" / "model1-home.toml"
MODEL_1 = "companion-empathy-1+ec042ce68b49"
REPLIES = ["four", "three",
           "My grandson came round with a box of tomato seedlings and we planted them together.",
           "no", "agree", "4", "four", "agree", "4", "three", "4", "four"]  # fmt: skip


@pytest.fixture
def old_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    shutil.copy(FIXTURE_DB, home / "companion.db")
    shutil.copy(FIXTURE_CONFIG, home / "config.toml")
    for name in ("companion.db", "config.toml"):
        (home / name).chmod(0o600)
    return home


def rows(home: Path, sql: str, args: tuple = ()) -> list[tuple]:
    con = sqlite3.connect(home / "companion.db" if home.is_dir() else home)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def test_the_fixture_is_a_model_1_home() -> None:
    assert rows(FIXTURE_DB, "SELECT MAX(version) FROM schema_migrations") == [(4,)]
    assert rows(FIXTURE_DB, "SELECT DISTINCT model_version FROM story_embeddings") == [(MODEL_1,)]
    assert rows(FIXTURE_DB, "SELECT n FROM participant_models") == [(4,)]


def test_the_first_session_after_the_upgrade_moves_the_home_before_it_begins(
    old_home: Path,
) -> None:
    active = model_build()
    assert active != MODEL_1, "the shipped model is the one the fixture was made with"
    before_stories = rows(old_home, "SELECT COUNT(*) FROM stories")[0][0]
    proc = run_cli("session", "--kind", "daily", input=answering_lines(REPLIES), home=old_home)
    assert proc.returncode == 0, proc.stderr
    # the bank: every story encoded by the active model, model 1's rows kept beside them
    by_model = dict(rows(old_home, "SELECT model_version, COUNT(*) FROM story_embeddings "
                                   "GROUP BY model_version"))  # fmt: skip
    assert by_model == {MODEL_1: before_stories, active: before_stories}
    # the preference model: learned again from the same four ratings on the new features
    (state, n, version), = rows(old_home, "SELECT state, n, model_version FROM participant_models")
    assert (n, version) == (5, active)  # four re-fitted, then this session's rating
    refit = rows(old_home, "SELECT exposure_id, model_version FROM exposure_features")
    assert sorted(refit) == [(i, active) for i in (1, 2, 3, 4)]
    # recorded, and finished before the session's first word (no dead air inside it)
    (from_models, to_model, stories, participants, finished), = rows(
        old_home, "SELECT from_models, to_model, stories, participants, finished_at "
                  "FROM model_upgrades")  # fmt: skip
    assert (json.loads(from_models), to_model) == ([MODEL_1], active)
    assert (stories, participants) == (before_stories, 1)
    (first_turn,), = rows(old_home, "SELECT MIN(t.started_at) FROM turns t "
                                    "WHERE t.session_id = (SELECT MAX(id) FROM sessions)")
    assert finished < first_turn
    exposure = json.loads(rows(old_home, "SELECT components FROM story_exposures "
                                         "ORDER BY id DESC LIMIT 1")[0][0])  # fmt: skip
    assert exposure["model_version"] == active
    # the replayed preference model equals the stored one exactly
    replay = run_cli("model", "replay", home=old_home)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    # a second start moves nothing again
    again = run_cli("session", "--kind", "daily", input=answering_lines(REPLIES), home=old_home)
    assert again.returncode == 0, again.stderr
    assert rows(old_home, "SELECT COUNT(*) FROM model_upgrades") == [(1,)]


def test_status_and_doctor_say_which_model_is_active_and_whether_a_move_is_due(
    old_home: Path,
) -> None:
    active = model_build()
    app.open_home(old_home).db.conn.close()  # migrated to v5, as the service's start does first
    status = run_cli("status", "--json", home=old_home)
    assert status.returncode == 0, status.stderr
    model = json.loads(status.stdout)["model"]
    assert model["active"] == active and model["upgrade_due"] is True
    assert MODEL_1 in model["encoded_by"]
    doctor = run_cli("doctor", "--json", "--skip", "audio", "--skip", "service", home=old_home)
    findings = {f["check"]: f for f in json.loads(doctor.stdout)["findings"]}
    assert active in findings["encoder-model"]["detail"]
    assert findings["model-upgrade"]["status"] == "warn"

    opened = app.open_home(old_home)
    app.prepare_bank(opened)  # the service's start, before its scheduler
    opened.db.conn.close()
    model = json.loads(run_cli("status", "--json", home=old_home).stdout)["model"]
    assert model["upgrade_due"] is False and model["last_upgrade"]["to_model"] == active
    assert "moved from" in run_cli("status", home=old_home).stdout
    doctor = run_cli("doctor", "--json", "--skip", "audio", "--skip", "service", home=old_home)
    findings = {f["check"]: f for f in json.loads(doctor.stdout)["findings"]}
    assert findings["model-upgrade"]["status"] == "ok"


def test_an_old_backup_restored_into_an_upgraded_home_is_moved_too(
    old_home: Path, tmp_path: Path
) -> None:
    opened = app.open_home(old_home)
    app.prepare_bank(opened)
    opened.db.conn.close()
    backup = tmp_path / "old-backup.db"
    shutil.copy(FIXTURE_DB, backup)
    restored = run_cli("restore", "--from", str(backup), home=old_home)
    assert restored.returncode == 0, restored.stderr
    assert rows(old_home, "SELECT COUNT(*) FROM model_upgrades") == [(0,)]  # the old file's
    proc = run_cli("session", "--kind", "daily", input=answering_lines(REPLIES), home=old_home)
    assert proc.returncode == 0, proc.stderr
    assert rows(old_home, "SELECT to_model FROM model_upgrades") == [(model_build(),)]
    assert rows(old_home, "SELECT n, model_version FROM participant_models") == [
        (5, model_build())
    ]
