"""Merge safety (issue 11, item 8): all or nothing over every export, every file read is
checksummed and inside its export, types and scale ranges as the codebook says, CSV cells of
any size, and sessions that only progressed between two collects."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from companion.research.export import ExportOptions, export_home
from companion.research.merge import MergeError, merge_exports
from tests.helpers.adversarial import db_signature
from tests.helpers.forkrun import run_many
from tests.helpers.study import (
    build_study,
    make_home,
    rewrite_export_file,
    run_scripted,
    session_lines,
)

pytestmark = pytest.mark.slow  # builds and exports three devices' studies (about 100 s here)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("merge-safety")
    _, csv_exports = build_study(root / "csv", homes=2, days=3)
    _, jsonl_exports = build_study(root / "jsonl", homes=1, days=3, fmt="jsonl")
    return csv_exports, jsonl_exports[0]


def _copy(export: Path, tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(export, target)
    return target


def _rewrite(export: Path, file: str, edit) -> None:
    """Edit one file and re-sign it in the manifest (as a careless or hostile editor would)."""
    rewrite_export_file(export, file, edit)


def _jsonl_edit(column: str, value):
    def edit(text: str) -> str:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        answered = next(r for r in rows if r.get(column) is not None)
        answered[column] = value
        return "".join(json.dumps(r) + "\n" for r in rows)

    return edit


def _sessions_file(export: Path) -> str:
    manifest = json.loads((export / "manifest.json").read_text())
    return str(manifest["tables"]["sessions"]["file"])


def _reports_file(export: Path) -> str:
    manifest = json.loads((export / "manifest.json").read_text())
    return str(manifest["tables"]["self_reports"]["file"])


@pytest.mark.parametrize("value", [4.7, True, 9, -1, "4", None.__class__.__name__])
def test_values_off_the_codebook_refuse_every_export(study, tmp_path, value) -> None:
    csv_exports, jsonl = study
    bad = _copy(jsonl, tmp_path, "bad")
    _rewrite(bad, _reports_file(bad), _jsonl_edit("value", value))
    out = tmp_path / "study.db"
    with pytest.raises(MergeError):
        merge_exports(out, [*csv_exports, bad])  # the good ones first: nothing is kept
    assert not out.exists()
    merge_exports(out, csv_exports)
    before = db_signature(out)
    with pytest.raises(MergeError):
        merge_exports(out, [jsonl, bad])
    assert db_signature(out) == before  # an existing study database is left exactly as it was


def test_a_file_outside_the_export_is_refused(study, tmp_path) -> None:
    csv_exports, _ = study
    bad = _copy(csv_exports[0], tmp_path, "bad")
    name = _sessions_file(bad)
    outside = tmp_path / "outside.csv"
    shutil.copy(bad / name, outside)
    manifest = json.loads((bad / "manifest.json").read_text())
    manifest["tables"]["sessions"]["file"] = "../outside.csv"
    (bad / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(MergeError, match="checksummed|outside"):
        merge_exports(tmp_path / "a.db", [bad])
    manifest["files"]["../outside.csv"] = {
        "sha256": hashlib.sha256(outside.read_bytes()).hexdigest()
    }
    (bad / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(Exception, match="outside"):
        merge_exports(tmp_path / "b.db", [bad])
    assert not (tmp_path / "a.db").exists() and not (tmp_path / "b.db").exists()


def test_csv_cells_of_any_size_and_progressed_sessions(tmp_path) -> None:
    opened = make_home(tmp_path / "home", "P001", "Ada")
    story = "It rained all week and the roof leaked into the kitchen. " * 4000  # ~230 KB
    lines = session_lines(__import__("random").Random(1))
    lines[2] = story
    at = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
    assert run_scripted(opened, lines, at) == "completed"
    # A session still running at the first collect (as `running` on the device then).
    opened.db.execute("UPDATE sessions SET status = 'running', ended_at = NULL WHERE id = 1")
    options = ExportOptions(include_transcripts=True)
    export_home(opened.home, tmp_path / "first", options)
    opened.db.execute("UPDATE sessions SET status = 'completed', ended_at = ? WHERE id = 1",
                      ["2026-03-02T18:20:00.000+00:00"])  # fmt: skip
    export_home(opened.home, tmp_path / "second", options)
    out = tmp_path / "study.db"
    merge_exports(out, [tmp_path / "first"])
    merge_exports(out, [tmp_path / "second"])  # progressed: updated, not a conflict
    conn = sqlite3.connect(out)
    assert conn.execute("SELECT status, ended_at FROM sessions").fetchall() == [
        ("completed", "2026-03-02T18:20:00.000+00:00")
    ]
    assert max(len(t or "") for (t,) in conn.execute("SELECT text FROM turns")) > 200_000
    conn.close()
    # The older collect merged again: the newer state is kept (a changed start would conflict,
    # tests/research/test_merge_progress.py).
    before = db_signature(out)
    (again,) = merge_exports(out, [tmp_path / "first"])
    assert sum(again.added.values()) == sum(again.updated.values()) == 0
    assert db_signature(out) == before


def test_merge_refusals_through_the_cli(study, tmp_path) -> None:
    csv_exports, jsonl = study
    bad = _copy(jsonl, tmp_path, "bad")
    _rewrite(bad, _reports_file(bad), _jsonl_edit("value", 4.7))
    tampered = _copy(csv_exports[1], tmp_path, "tampered")
    (tampered / _sessions_file(tampered)).write_text("id\n1\n")
    argvs = [["merge", str(tmp_path / "s1.db"), str(csv_exports[0]), str(bad)],
             ["merge", str(tmp_path / "s2.db"), str(csv_exports[0]), str(tampered)],
             ["merge", str(tmp_path / "s3.db"), str(tmp_path)]]  # fmt: skip
    for argv, result in zip(argvs, run_many([{"argv": a} for a in argvs]), strict=True):
        assert result["rc"] == 2, (argv, result)
        # warnings about the data (e.g. the default id P001) may come first; one error line
        lines = [x for x in result["stderr"].splitlines() if not x.startswith("WARNING ")]
        assert len(lines) == 1 and lines[0].startswith("companion: error"), result["stderr"]
        assert "Traceback" not in result["stderr"]
        assert not Path(argv[1]).exists()
