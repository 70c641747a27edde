"""The export's datapackage.json, validated by the Frictionless framework itself: every
resource's fields, types, allowed values, primary key, size and sha256 match the files."""

from __future__ import annotations

import json

import pytest

from companion.research.export import ExportOptions, export_home, read_manifest
from tests.helpers.study import fill_study, make_home

frictionless = pytest.importorskip("frictionless")  # the test extra installs it


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    opened = make_home(tmp_path_factory.mktemp("dp") / "home", "P300", "Ada")
    fill_study(opened, 3, seed=7, interrupt=0.3)
    # a reply a spreadsheet would run: neutralised in the CSV, still a valid string field
    opened.db.execute("UPDATE turns SET text = '=HYPERLINK(\"x\")' WHERE id = (SELECT MIN(id) "
                      "FROM turns WHERE speaker = 'participant')")  # fmt: skip
    return opened


@pytest.mark.parametrize("options", [
    ExportOptions(include_transcripts=True),
    ExportOptions(deidentify=True, patterns_only=True),
    ExportOptions(format="jsonl", include_transcripts=True),
])  # fmt: skip
def test_frictionless_validates_the_export(home, tmp_path, options):
    out = tmp_path / "out"
    result = export_home(home.home, out, options)
    package = json.loads((out / "datapackage.json").read_text())
    assert {r["name"] for r in package["resources"]} == set(result.rows)
    turns = next(r for r in package["resources"] if r["name"] == "turns")
    fields = {f["name"]: f for f in turns["schema"]["fields"]}
    assert ("text" in fields) == options.include_transcripts
    assert fields["speaker"]["constraints"]["enum"] == ["companion", "participant"]
    assert fields["seq"]["type"] == "integer" and turns["schema"]["primaryKey"] == ["id"]
    assert "datapackage.json" in read_manifest(out)["files"]
    report = frictionless.validate(out / "datapackage.json")
    assert report.valid, report.flatten(["resourceName", "rowNumber", "fieldName", "type"])
    assert report.stats["tasks"] == len(result.rows)


def test_frictionless_finds_a_changed_file(home, tmp_path):
    out = tmp_path / "out"
    export_home(home.home, out, ExportOptions())
    with (out / "sessions.csv").open("a", newline="") as f:
        f.write("999,P300,x,1,sometimes,text,completed,,,,,\r\n")
    report = frictionless.validate(out / "datapackage.json")
    assert not report.valid
    errors = {e[0] for e in report.flatten(["type"])}
    assert {"constraint-error", "hash-count", "byte-count"} <= errors, errors
