"""Export round trip on databases filled by real sessions: counts, codebook, manifest, options."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import stat
from datetime import date
from pathlib import Path

import pytest

from companion.research import browse, codebook
from companion.research.export import TABLES, ExportError, ExportOptions, export_home, read_manifest
from companion.settings.config import Home
from tests.helpers.run import run_cli
from tests.helpers.study import fill_study, make_home, session_lines


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Two homes: one filled through the real CLI over a pipe, one by the engine in-process."""
    import random

    root = tmp_path_factory.mktemp("export")
    piped = make_home(root / "piped", "P100", "Ada")
    lines = session_lines(random.Random(3))
    script = "".join(f"{x}\n" for x in lines)
    done = run_cli("session", "--text", input=script, home=piped.home.path)
    assert done.returncode == 0, done.stderr
    done = run_cli("session", "--text", input="4\n3\n", home=piped.home.path)  # cut short
    assert done.returncode == 0, done.stderr
    other = make_home(root / "engine", "P200", "Bruno")
    fill_study(other, 5, seed=11, interrupt=0.3)
    return root, piped, other


def table_columns(path: Path, fmt: str) -> tuple[list[str], list[dict]]:
    if fmt == "csv":
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            return list(reader.fieldnames or []), rows
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return (list(rows[0]) if rows else []), rows


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_round_trip_counts_codebook_and_checksums(study, tmp_path, fmt):
    _, piped, _ = study
    out = tmp_path / "out"
    result = export_home(piped.home, out, ExportOptions(format=fmt, include_transcripts=True))
    db = piped.db
    statuses = {r[0] for r in db.execute("SELECT status FROM sessions")}
    assert statuses == {"completed", "interrupted"}
    book = json.loads((out / "codebook.json").read_text())
    markdown = (out / "codebook.md").read_text()
    manifest = read_manifest(out)  # verifies every sha256
    assert manifest["device_id"] == result.device_id
    for table in TABLES:
        columns, rows = table_columns(out / f"{table}.{fmt}", fmt)
        expected = db[table].count
        assert len(rows) == expected == result.rows[table] == manifest["tables"][table]["rows"]
        if not rows and fmt == "jsonl":
            columns = manifest["tables"][table]["columns"]
        assert set(columns) == set(book["tables"][table]), table
        for column in columns:
            entry = book["tables"][table][column]
            assert entry["type"] in ("TEXT", "INTEGER", "REAL") and entry["meaning"]
            assert f"`{column}`" in markdown
    # every exported value of a column with allowed values is one of them
    _, sessions = table_columns(out / f"sessions.{fmt}", fmt)
    assert {s["status"] for s in sessions} <= set(book["tables"]["sessions"]["status"]["allowed"])
    # instruments with wording, scale and anchors, from the protocol the sessions used
    (proto,) = book["protocols"]
    assert (proto["id"], proto["version"]) == (piped.protocol.id, piped.protocol.version)
    for inst in piped.protocol.instruments:
        entry = next(i for i in proto["instruments"] if i["id"] == inst.id)
        for item in inst.items:
            got = next(i for i in entry["items"] if i["id"] == item.id)
            assert got["wording"] == item.text and got["wording"] in markdown
            assert got["scale"] == [item.min, item.max]
            assert got["anchors"] == {str(k): v for k, v in (item.anchors or {}).items()}
    listed = set(manifest["files"])
    on_disk = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} - {"manifest.json"}
    assert listed == on_disk
    assert stat.S_IMODE(os.stat(out / f"turns.{fmt}").st_mode) == 0o600


def test_transcripts_and_audio_stay_unless_asked(study, tmp_path):
    _, piped, _ = study
    wav = piped.home.path / "audio" / "t1.wav"
    wav.parent.mkdir(exist_ok=True)
    wav.write_bytes(b"RIFF" + os.urandom(400))
    piped.db.execute("UPDATE turns SET audio_path = 'audio/t1.wav' WHERE id = 4")
    story = piped.db.execute("SELECT text FROM turns WHERE purpose = 'story' LIMIT 1").fetchone()[0]

    plain = tmp_path / "plain"
    export_home(piped.home, plain, ExportOptions())
    columns, _ = table_columns(plain / "turns.csv", "csv")
    assert "text" not in columns and "audio_path" not in columns
    assert not (plain / "audio").exists()
    for file in plain.iterdir():
        assert story not in file.read_text(), file.name

    full = tmp_path / "full"
    export_home(piped.home, full, ExportOptions(include_transcripts=True, include_audio=True))
    _, rows = table_columns(full / "turns.csv", "csv")
    assert story in {r["text"] for r in rows}
    (copied,) = [r["audio_path"] for r in rows if r["audio_path"]]
    assert (full / copied).read_bytes() == wav.read_bytes()
    assert copied in read_manifest(full)["files"]


def test_filters_by_participant_and_dates(study, tmp_path):
    _, _, other = study
    dates = [r[0] for r in other.db.execute("SELECT local_date FROM sessions ORDER BY id")]
    since, until = date.fromisoformat(dates[1]), date.fromisoformat(dates[2])
    out = tmp_path / "some"
    result = export_home(other.home, out, ExportOptions(since=since, until=until))
    _, sessions = table_columns(out / "sessions.csv", "csv")
    assert sorted(s["local_date"] for s in sessions) == dates[1:3]
    ids = {s["id"] for s in sessions}
    _, answers = table_columns(out / "self_reports.csv", "csv")
    assert answers and {a["session_id"] for a in answers} <= ids
    assert result.rows["sessions"] == 2

    nobody = tmp_path / "nobody"
    export_home(other.home, nobody, ExportOptions(participant="P999"))
    assert read_manifest(nobody)["tables"]["sessions"]["rows"] == 0


def test_cli_export_and_refusals(study, tmp_path):
    root, piped, _ = study
    out = tmp_path / "cli"
    done = run_cli("export", "--home", str(piped.home.path), "--out", str(out), "--format", "jsonl")
    assert done.returncode == 0, done.stderr
    assert "exported device" in done.stdout and (out / "manifest.json").exists()
    again = run_cli("export", "--home", str(piped.home.path), "--out", str(out))
    assert again.returncode == 2
    assert again.stderr.strip().count("\n") == 0 and "not empty" in again.stderr
    (out / "sessions.jsonl").write_text("tampered\n")
    with pytest.raises(ExportError, match="sha256 does not match"):
        read_manifest(out)


def test_device_id_is_stable_and_private(tmp_path):
    opened = make_home(tmp_path / "h", "P1", "Ada")
    first = export_home(opened.home, tmp_path / "a", ExportOptions())
    second = export_home(Home(opened.home.path), tmp_path / "b", ExportOptions())
    assert first.device_id == second.device_id and first.device_id.startswith("dev-")
    assert stat.S_IMODE(os.stat(opened.home.path / "device_id").st_mode) == 0o600


def test_codebook_refuses_undocumented_columns():
    with pytest.raises(KeyError, match="sessions.mystery"):
        codebook.build_codebook({"sessions": ["id", "mystery"]}, [])


def test_browse_metadata_and_missing_datasette(study, tmp_path):
    import importlib.util

    _, piped, _ = study
    meta = browse.datasette_metadata({"sessions": ["id", "status", "device_id"]})
    described = meta["databases"]["*"]["tables"]["sessions"]["columns"]
    assert "completed" in described["status"] and "Device" in described["device_id"]
    if importlib.util.find_spec("datasette") is None:
        done = run_cli("browse", "--home", str(piped.home.path))
        assert done.returncode == 2
        assert done.stderr.count("\n") == 1 and "pip install 'companion[browse]'" in done.stderr
    else:
        argv, path = browse.browse_command(piped.home.db_path, 8123)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert json.loads(path.read_text())["databases"]["*"]["tables"]["sessions"]
        path.unlink()
        assert argv[1:4] == ["serve", "-i", str(piped.home.db_path)]
        assert "127.0.0.1" in argv


def test_invitations_follow_the_date_and_participant_filters(study, tmp_path):
    _, _, other = study
    slots = [r[0] for r in other.db.execute("SELECT DISTINCT substr(slot_key, 1, 10) FROM "
                                            "invitations ORDER BY 1")]  # fmt: skip
    assert len(slots) == 5
    out = tmp_path / "some"
    since, until = date.fromisoformat(slots[1]), date.fromisoformat(slots[3])
    export_home(other.home, out, ExportOptions(since=since, until=until, participant="P200"))
    _, rows = table_columns(out / "invitations.csv", "csv")
    assert rows and {r["slot_key"][:10] for r in rows} == set(slots[1:4])
    _, sessions = table_columns(out / "sessions.csv", "csv")
    assert {r["session_id"] for r in rows if r["session_id"]} <= {s["id"] for s in sessions}
    stranger = tmp_path / "stranger"
    export_home(other.home, stranger, ExportOptions(participant="P999"))
    assert read_manifest(stranger)["tables"]["invitations"]["rows"] == 0
    assert read_manifest(stranger)["tables"]["protocols"]["rows"] == 1


def test_every_exported_file_is_private(study, tmp_path):
    _, piped, _ = study
    wav = piped.home.path / "audio" / "t2.wav"
    wav.parent.mkdir(exist_ok=True)
    wav.write_bytes(b"RIFF" + os.urandom(100))
    os.chmod(wav, 0o644)
    piped.db.execute("UPDATE turns SET audio_path = 'audio/t2.wav' WHERE id = 5")
    out = tmp_path / "deep" / "out"
    done = run_cli("export", "--home", str(piped.home.path), "--out", str(out), "--deidentify",
                   "--include-audio", "--salt-file", str(tmp_path / "salts" / "salt"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    files = [p for p in [*out.rglob("*"), tmp_path / "salts" / "salt"] if p.is_file()]
    assert {"manifest.json", "codebook.md", "protocols.csv", "audio"} <= {
        str(p.relative_to(out)).split("/")[0] for p in files if out in p.parents
    }
    for path in files:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    for folder in (out, out / "audio", tmp_path / "salts"):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700, folder


def hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.slow  # a study, two exports and a report
def test_export_and_report_leave_an_idle_home_untouched(tmp_path):
    opened = make_home(tmp_path / "h", "P1", "Ada")
    fill_study(opened, 3, seed=2)
    opened.db.close()  # the device is idle: no connection, so no -wal or -shm beside the db
    home = opened.home.path
    first = hashes(home)
    assert "companion.db" in first and "companion.db-wal" not in first
    assert "device_id" in first  # made with the home, so no export has to write it

    before = first
    done = run_cli("export", "--home", str(home), "--out", str(tmp_path / "a"))
    assert done.returncode == 0, done.stderr
    assert hashes(home) == before

    for args in (("report", "--out", str(tmp_path / "rep")),
                 ("export", "--format", "jsonl", "--out", str(tmp_path / "b"))):  # fmt: skip
        done = run_cli(*args, "--home", str(home))
        assert done.returncode == 0, done.stderr
        assert hashes(home) == before, args
    done = run_cli("export", "--deidentify", "--out", str(tmp_path / "c"), "--home", str(home))
    assert done.returncode == 0, done.stderr
    after = hashes(home)
    assert set(after) - set(before) == {"export_salt"}
    assert {k: v for k, v in after.items() if k != "export_salt"} == before


def test_export_reads_a_database_a_session_has_open(tmp_path):
    """With a writer connected, recent answers may be only in the WAL: the export reads them
    and changes neither the database nor the WAL (SQLite notes its read lock in -shm)."""
    opened = make_home(tmp_path / "h", "P1", "Ada")
    fill_study(opened, 2, seed=4, skip=0, interrupt=0)
    home = opened.home.path
    run_cli("export", "--home", str(home), "--out", str(tmp_path / "first"))
    before = hashes(home)
    assert "companion.db-wal" in before
    done = run_cli("export", "--home", str(home), "--out", str(tmp_path / "a"))
    assert done.returncode == 0, done.stderr
    after = hashes(home)
    assert set(after) == set(before)
    for name in ("companion.db", "companion.db-wal"):
        assert after[name] == before[name], name
    _, sessions = table_columns(tmp_path / "a" / "sessions.csv", "csv")
    assert len(sessions) == opened.db["sessions"].count == 2


LEAKY_REPLY = "ask my wife Anna Brown, anna.brown@mail.com, 07700 900123, 12 Baker Street"


@pytest.fixture(scope="module")
def leaky(tmp_path_factory):
    """A real session over a pipe whose first rating reply is a sentence full of details."""
    import random

    root = tmp_path_factory.mktemp("leaky")
    opened = make_home(root / "home", "P-RAW-4411", "Quentin Leaky")
    lines = session_lines(random.Random(8))
    script = "".join(f"{x}\n" for x in [LEAKY_REPLY, *lines])
    done = run_cli("session", "--text", input=script, home=opened.home.path)
    assert done.returncode == 0, done.stderr
    return opened, lines


def exported_text(folder: Path) -> str:
    """Every byte written, file names included (but not the public story bank)."""
    parts = [str(p.relative_to(folder)) for p in folder.rglob("*")]
    parts += [p.read_text() for p in folder.rglob("*") if p.is_file() and p.name != "stories.csv"]
    return "\n".join(parts)


def test_plain_export_has_no_participant_free_text(leaky, tmp_path):
    opened, lines = leaky
    raw = opened.db.execute("SELECT raw_answer FROM self_reports WHERE raw_answer LIKE "
                            "'%Anna Brown%'").fetchone()  # fmt: skip
    assert raw, "the reply must be stored on the device as said"
    said = [r[0] for r in opened.db.execute("SELECT text FROM turns WHERE speaker = "
                                            "'participant' AND length(text) > 12")]  # fmt: skip
    assert len(said) >= 3
    out = tmp_path / "plain"
    done = run_cli("export", "--home", str(opened.home.path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    text = exported_text(out)
    for secret in [LEAKY_REPLY, "Anna Brown", "anna.brown", "900123", "Baker", *said]:
        assert secret not in text, secret
    _, answers = table_columns(out / "self_reports.csv", "csv")
    assert answers and "raw_answer" not in answers[0] and "value_text" not in answers[0]
    assert {"status", "attempts", "value"} <= set(answers[0])
    assert any(int(a["attempts"]) >= 2 for a in answers)  # the unclear reply is still counted
    book = json.loads((out / "codebook.json").read_text())
    adds = book["options"]["--include-transcripts"]
    assert adds["used"] is False
    assert set(adds["adds"]) == {"turns.text", "self_reports.raw_answer", "self_reports.value_text"}
    assert book["options"]["--include-audio"]["adds"] == ["turns.audio_path"]
    assert "| `--include-transcripts` | no |" in (out / "codebook.md").read_text()

    full = tmp_path / "full"
    export_home(opened.home, full, ExportOptions(include_transcripts=True))
    _, answers = table_columns(full / "self_reports.csv", "csv")
    assert any(LEAKY_REPLY in (a["raw_answer"] or "") for a in answers)
    assert "raw_answer" in json.loads((full / "codebook.json").read_text())["tables"][
        "self_reports"
    ]


def test_deidentified_export_has_no_raw_participant_id(leaky, tmp_path):
    opened, _ = leaky
    out = tmp_path / "deid"
    done = run_cli("export", "--home", str(opened.home.path), "--out", str(out), "--deidentify",
                   "--include-transcripts", "--participant", "P-RAW-4411")  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = exported_text(out)
    for secret in ["P-RAW-4411", "Quentin", "Leaky", "Anna Brown", "anna.brown", "900123"]:
        assert secret.lower() not in text.lower(), secret
    manifest = read_manifest(out)
    assert manifest["options"]["participant"].startswith("S")
    assert manifest["options"]["redaction"].startswith("patterns+ner")
    _, sessions = table_columns(out / "sessions.csv", "csv")
    assert {s["participant_id"] for s in sessions} == {manifest["options"]["participant"]}
