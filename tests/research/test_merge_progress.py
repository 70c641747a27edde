"""Merging never strands answers (issue 30): a device exported while a session runs and again
after it ends merges to the finished session in any order, once; only a true conflict is
refused. Damaged manifests, a device database as the target and lookalike participant ids
are refused in one line before anything is written. Real homes, real sessions through the
real CLI, real exports."""

from __future__ import annotations

import csv
import io
import json
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from companion.research.progress import compare
from tests.helpers.adversarial import db_signature
from tests.helpers.forkrun import run_many
from tests.helpers.run import REPO, SCRIPT, one_error_line, run_cli, snapshot
from tests.helpers.study import make_home, rewrite_export_file, run_scripted, session_lines

MID = 7  # replies before the mid-session export: check-in, story, two post-story items


def _read(db: Path, sql: str, args: tuple = (), live: bool = False) -> list[tuple]:
    """Rows, read without writing anything beside `db` (immutable: no -wal or -shm is made);
    `live`: a database a running session writes to, read through its WAL."""
    conn = sqlite3.connect(f"file:{db}?mode=ro" + ("" if live else "&immutable=1"), uri=True)
    try:
        return sorted(conn.execute(sql, args).fetchall(), key=repr)
    finally:
        conn.close()


def _data(study: Path) -> dict[str, list[tuple]]:
    """Every row of every table but the log of merges (which records each export merged)."""
    names = [r[0] for r in _read(study, "SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {t: _read(study, f'SELECT * FROM "{t}"') for t in names if t != "merges"}


def _home(path: Path) -> Path:
    """A new home, closed again: its sessions run in `companion session` processes."""
    opened = make_home(path, "P042", "Robin")
    opened.db.close()
    return opened.home.path


def _start_session(home: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "companion", "session", "--text", "--home", str(home)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        cwd=REPO, bufsize=1,
    )  # fmt: skip


def _say(proc: subprocess.Popen, lines: list[str], pause: float = 0.0) -> None:
    assert proc.stdin
    for line in lines:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        time.sleep(pause)


def _wait_for_answers(home: Path, n: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if _read(home / "companion.db", "SELECT COUNT(*) FROM self_reports", live=True)[0][0] >= n:
            return
        time.sleep(0.2)
    raise AssertionError(f"the session stored fewer than {n} answers in 120 s")


def _finish(proc: subprocess.Popen) -> None:
    assert proc.stdin
    proc.stdin.close()
    assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""


def _export(home: Path, out: Path) -> Path:
    done = run_cli("export", "--home", str(home), "--out", str(out), "--deidentify")
    assert done.returncode == 0, done.stderr
    return out


def _merge(study: Path, *exports: Path) -> subprocess.CompletedProcess[str]:
    return run_cli("merge", str(study), *map(str, exports))


def _device_id(export: Path) -> str:
    return str(json.loads((export / "manifest.json").read_text())["device_id"])


@pytest.fixture(scope="module")
def device(tmp_path_factory):
    """A home exported while its session ran (after MID replies) and after it completed."""
    root = tmp_path_factory.mktemp("progress")
    home = _home(root / "home")
    proc = _start_session(home)
    _say(proc, SCRIPT[:MID])
    _wait_for_answers(home, 4)
    mid = _export(home, root / "mid")
    _say(proc, SCRIPT[MID:])
    _finish(proc)
    final = _export(home, root / "final")
    return home, mid, final


def _assert_holds_the_device(study: Path, home: Path, device: str) -> None:
    """The study database holds the device's finished session and every row once."""
    db = home / "companion.db"
    assert _read(study, "SELECT source_id, status, reason, ended_at FROM sessions "
                 "WHERE device_id = ?", (device,)) == _read(
        db, "SELECT id, status, reason, ended_at FROM sessions")  # fmt: skip
    assert _read(study, "SELECT COUNT(*) FROM sessions WHERE status = 'running'") == [(0,)]
    answers = "instrument, item, value, status, attempts, answered_at"
    merged = _read(study, f"SELECT source_id, {answers} FROM self_reports WHERE device_id = ?",
                   (device,))  # fmt: skip
    assert merged == _read(db, f"SELECT id, {answers} FROM self_reports") and len(merged) == 10
    for table, cols in (("turns", "seq, speaker, purpose, started_at"),
                        ("story_exposures", "story_id, learned_rating"),
                        ("events", "ts, kind")):  # fmt: skip
        assert _read(study, f"SELECT source_id, {cols} FROM {table} WHERE device_id = ?",
                     (device,)) == _read(db, f"SELECT id, {cols} FROM {table}"), table  # fmt: skip
    (learned,) = _read(study, "SELECT learned_rating FROM story_exposures")
    assert learned[0] is not None  # learned only once the session ended


def test_mid_session_export_then_final_export(device, tmp_path) -> None:
    home, mid, final = device
    assert "running" in (mid / "sessions.csv").read_text()
    study = tmp_path / "study.db"
    first = _merge(study, mid)
    assert first.returncode == 0, first.stderr
    assert _read(study, "SELECT status FROM sessions") == [("running",)]
    done = _merge(study, final)
    assert done.returncode == 0, done.stderr
    _assert_holds_the_device(study, home, _device_id(final))


def test_final_export_then_the_older_one_keeps_the_newer(device, tmp_path) -> None:
    home, mid, final = device
    study = tmp_path / "study.db"
    assert _merge(study, final).returncode == 0
    newer = _data(study)
    done = _merge(study, mid)
    assert done.returncode == 0, done.stderr
    assert "0 rows added" in done.stdout
    assert _data(study) == newer  # the older export changed no row (only the log of merges)
    _assert_holds_the_device(study, home, _device_id(final))
    both = tmp_path / "both.db"  # one command, older last: the same end state
    assert _merge(both, final, mid).returncode == 0
    _assert_holds_the_device(both, home, _device_id(final))


def test_merging_again_is_a_no_op(device, tmp_path) -> None:
    home, mid, final = device
    study = tmp_path / "study.db"
    assert _merge(study, mid, final).returncode == 0
    before = db_signature(study)
    again = _merge(study, mid, final)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("0 rows added") == 2
    assert db_signature(study) == before
    _assert_holds_the_device(study, home, _device_id(final))


def _edit_csv(export: Path, name: str, edit) -> None:
    """Change one CSV file of an export and re-sign it (as a changed device would)."""

    def edited(text: str) -> str:
        rows = list(csv.reader(io.StringIO(text, newline="")))
        edit(rows[0], rows[1:])
        out = io.StringIO(newline="")
        csv.writer(out, lineterminator="\r\n").writerows(rows)
        return out.getvalue()

    rewrite_export_file(export, name, edited)


def _set(column: str, change):
    def edit(header: list[str], rows: list[list[str]]) -> None:
        i = header.index(column)
        row = next(r for r in rows if r[i])
        row[i] = change(row[i])

    return edit


CONFLICTS = {  # (file, edit, the column the refusal names)
    "answer value": ("self_reports.csv", _set("value", lambda v: str(int(v) % 5 + 1)), "value"),
    "session start": ("sessions.csv", _set("started_at", lambda v: v.replace("20", "19", 1)),
                      "started_at"),
    "one end for another": ("sessions.csv", _set("status", lambda v: "interrupted"), "status"),
}  # fmt: skip


@pytest.mark.parametrize("case", CONFLICTS)
def test_a_true_conflict_is_refused_and_nothing_written(device, tmp_path, case) -> None:
    home, mid, final = device
    study = tmp_path / "study.db"
    assert _merge(study, final).returncode == 0
    before = db_signature(study)
    name, edit, column = CONFLICTS[case]
    changed = tmp_path / "changed"
    shutil.copytree(final, changed)
    original = (changed / name).read_text()
    _edit_csv(changed, name, edit)
    assert (changed / name).read_text() != original
    done = _merge(study, mid, changed)  # an acceptable export first: it is not kept either
    assert done.returncode == 2
    one_error_line(done, "conflicts with the merged copy", f"column {column} differs")
    assert db_signature(study) == before
    empty = tmp_path / "empty.db"  # a file made for the study: refused, it stays empty
    empty.touch()
    done = _merge(empty, final, changed)
    assert done.returncode == 2 and empty.stat().st_size == 0, done.stderr


def test_progress_rules_refuse_a_row_half_forward_half_back() -> None:
    merged = {"status": "completed", "reason": None, "ended_at": "2026-03-02T18:20:00"}
    assert compare("sessions", merged, {**merged, "status": "running", "ended_at": None}).older
    mixed = {"status": "running", "reason": "end of input (EOF)", "ended_at": None}
    assert compare("sessions", merged, mixed).conflict == "status"
    assert compare("turns", {"text": "a"}, {"text": "b"}).conflict == "text"
    assert compare("story_exposures", {"learned_rating": 3.5}, {"learned_rating": 4.0}).conflict


def _drop(*keys: str):
    def edit(m: dict) -> None:
        *path, last = keys
        for k in path:
            m = m[k]
        del m[last]

    return edit


def _put(value, *keys: str):
    def edit(m: dict) -> None:
        *path, last = keys
        for k in path:
            m = m[k]
        m[last] = value

    return edit


DAMAGED = {  # edit of the manifest, the key the refusal names
    "no device id": (_drop("device_id"), "device_id is missing"),
    "integer device id": (_put(42, "device_id"), "device_id must be text"),
    "unknown format": (_put(3, "format"), "format is 3"),
    "format as text": (_put("2", "format"), "format must be a whole number"),
    "no files": (_drop("files"), "files is missing"),
    "no checksum": (_put({}, "files", "sessions.csv"), "files.sessions.csv.sha256 is missing"),
    "rows as text": (_put("many", "tables", "sessions", "rows"), "tables.sessions.rows must"),
    "tables a list": (_put([], "tables"), "tables must be an object"),
    "no de-identification flag": (_drop("options", "deidentified"),
                                  "options.deidentified is missing"),
    "unknown table": (_put({"file": "x.csv", "rows": 0, "columns": []}, "tables", "secrets"),
                      "tables.secrets is not a table"),
    "file format": (_put("xlsx", "file_format"), "file_format is 'xlsx'"),
}  # fmt: skip


def test_damaged_manifests_are_refused_in_one_line(device, tmp_path) -> None:
    _, mid, final = device
    study = tmp_path / "study.db"
    assert _merge(study, mid).returncode == 0
    before = db_signature(study)
    cases, exports = [], []
    for n, (edit, _) in enumerate(DAMAGED.values()):
        damaged = tmp_path / f"damaged-{n}"
        shutil.copytree(final, damaged)
        manifest = json.loads((damaged / "manifest.json").read_text())
        edit(manifest)
        (damaged / "manifest.json").write_text(json.dumps(manifest))
        exports.append(damaged)
        cases.append({"argv": ["merge", str(study), str(final), str(damaged)]})
        cases.append({"argv": ["merge", str(tmp_path / f"new-{n}.db"), str(damaged)]})
    results = run_many(cases)
    for n, (case, (_, key)) in enumerate(zip(DAMAGED, DAMAGED.values(), strict=True)):
        for result in results[2 * n : 2 * n + 2]:
            lines = result["stderr"].strip().splitlines()
            assert result["rc"] == 2 and len(lines) == 1, (case, result["stderr"])
            assert str(exports[n] / "manifest.json") in lines[0], (case, lines[0])
            assert f"key {key}" in lines[0], (case, lines[0])
        assert not (tmp_path / f"new-{n}.db").exists(), case
    assert db_signature(study) == before  # not even the good export before it was merged
    not_json = tmp_path / "not-an-object"
    shutil.copytree(final, not_json)
    (not_json / "manifest.json").write_text("[]\n")
    one_error_line(_merge(study, not_json), str(not_json / "manifest.json"), "object")


def test_a_device_database_is_refused_as_the_target(device) -> None:
    home, _, final = device
    before = snapshot(home), _data(home / "companion.db")
    assert not (home / "companion.db-wal").exists()  # so a read would show as a new file
    done = _merge(home / "companion.db", final)
    assert done.returncode == 2
    one_error_line(done, str(home / "companion.db"), "a device's own database")
    assert (snapshot(home), _data(home / "companion.db")) == before
    listed = _read(home / "companion.db", "SELECT name FROM sqlite_master WHERE type = 'table'")
    tables = {name for (name,) in listed}
    assert not tables & {"study_meta", "merges", "participant_devices"}


def _identified_export(root: Path, participant: str) -> Path:
    """A device whose database names its participant `participant` (set before config
    checked ids: config.toml refuses such an id now), exported with ids as they are."""
    opened = make_home(root / "home", "P042", "Robin")
    at = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
    assert run_scripted(opened, session_lines(random.Random(3)), at) == "completed"
    opened.db.execute("PRAGMA foreign_keys = OFF")  # both tables renamed, then consistent
    opened.db.execute("UPDATE participants SET id = ?", [participant])
    opened.db.execute("UPDATE sessions SET participant_id = ?", [participant])
    opened.db.execute("PRAGMA foreign_keys = ON")
    opened.db.close()
    out = root / "export"
    done = run_cli("export", "--home", str(opened.home.path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert participant in (out / "participants.csv").read_text("utf-8")
    return out


def test_a_lookalike_participant_id_is_refused(tmp_path) -> None:
    cyrillic = _identified_export(tmp_path / "cyrillic", "\u0420042")  # Р042, not P042
    study = tmp_path / "study.db"
    done = _merge(study, cyrillic)
    assert done.returncode == 2
    one_error_line(done, "participants.csv", "participant id", "CYRILLIC CAPITAL LETTER ER")
    assert not study.exists()
    # Full-width letters are the same id after NFKC: merged as P042.
    wide = _identified_export(tmp_path / "wide", "\uff30\uff10\uff14\uff12")
    done = _merge(study, wide)
    assert done.returncode == 0, done.stderr
    assert _read(study, "SELECT id FROM participants") == [("P042",)]
    assert _read(study, "SELECT DISTINCT participant_id FROM sessions") == [("P042",)]
    done = run_cli("merge", str(study), str(wide), "--same-person", "\u0420042")
    one_error_line(done, "--same-person", "ASCII")


def test_exports_and_merges_while_a_session_runs(tmp_path) -> None:
    """A few replies at a time, each followed at once by an export and a merge that run while
    the session answers them: every merge is accepted, and the last leaves the finished
    session with every answer once."""
    home = _home(tmp_path / "home")
    proc = _start_session(home)
    study = tmp_path / "study.db"
    seen = set()
    for n, start in enumerate(range(0, len(SCRIPT), 3)):
        _say(proc, SCRIPT[start : start + 3])
        done = _merge(study, _export(home, tmp_path / f"export-{n}"))
        assert done.returncode == 0, done.stderr
        seen |= {status for (status,) in _read(study, "SELECT status FROM sessions")}
    _finish(proc)
    final = _export(home, tmp_path / "final")
    assert _merge(study, final).returncode == 0
    assert "running" in seen  # merged while the session ran
    _assert_holds_the_device(study, home, _device_id(final))
