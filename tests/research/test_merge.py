"""Merging devices' exports: provenance, idempotence, refusing conflicts and tampering."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from companion.research.export import TABLES, ExportError, ExportOptions, export_home
from companion.research.identity import IdentityError
from companion.research.merge import DEVICE_TABLES, MergeError, merge_exports
from tests.helpers.run import run_cli
from tests.helpers.study import build_study, rewrite_export_file


@pytest.fixture(scope="module")
def devices(tmp_path_factory):
    root = tmp_path_factory.mktemp("merge")
    return build_study(root, homes=3, days=4)


def counts(path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        conn.close()


def test_merge_keeps_every_row_with_provenance_and_is_idempotent(devices, tmp_path):
    homes, exports = devices
    study = tmp_path / "study.db"
    done = run_cli("merge", str(study), *map(str, exports))
    assert done.returncode == 0, done.stderr
    merged = counts(study)
    for table in DEVICE_TABLES:
        assert merged[table] == sum(h.db[table].count for h in homes), table
    assert merged["invitations"] > merged["sessions"] > 0
    assert merged["participants"] == 3
    assert merged["stories"] == homes[0].db["stories"].count  # one shared bank
    assert merged["protocols"] == 1  # every device ran the same protocol version

    conn = sqlite3.connect(study)
    devices_seen = {r[0] for r in conn.execute("SELECT DISTINCT device_id FROM sessions")}
    manifests = [json.loads((e / "manifest.json").read_text()) for e in exports]
    assert devices_seen == {m["device_id"] for m in manifests}
    # every device's turns still point at that device's sessions, with the same participant
    wrong = conn.execute(
        "SELECT COUNT(*) FROM turns t JOIN sessions s ON s.id = t.session_id "
        "WHERE s.device_id != t.device_id"
    ).fetchone()[0]
    assert wrong == 0
    per_device = dict(conn.execute("SELECT device_id, COUNT(DISTINCT participant_id) "
                                   "FROM sessions GROUP BY device_id").fetchall())  # fmt: skip
    assert set(per_device.values()) == {1}
    links = conn.execute("SELECT COUNT(*) FROM participant_devices").fetchone()[0]
    # an accepted invitation points at its own device's session, held on the slot's date
    accepted = conn.execute(
        "SELECT i.device_id, s.device_id, substr(i.slot_key, 1, 10), s.local_date "
        "FROM invitations i JOIN sessions s ON s.id = i.session_id WHERE i.outcome = 'accepted'"
    ).fetchall()
    unlinked = conn.execute(
        "SELECT COUNT(*) FROM invitations WHERE outcome = 'accepted' AND session_id IS NULL"
    ).fetchone()[0]
    (definition,) = conn.execute("SELECT definition FROM protocols").fetchone()
    conn.close()
    assert links == 3
    assert len(accepted) == merged["sessions"] and unlinked == 0
    assert all(a == b and c == d for a, b, c, d in accepted)
    stored = homes[0].db.execute("SELECT definition FROM protocols").fetchone()[0]
    assert json.loads(definition) == json.loads(stored)

    again = run_cli("merge", str(study), *map(str, exports))
    assert again.returncode == 0, again.stderr
    assert "0 rows added" in again.stdout
    assert counts(study) == merged


def rewrite(export, name: str, old: str, new: str) -> None:
    """Change one file of an export and re-sign it, as a changed device would."""

    def replaced(text: str) -> str:
        assert old in text
        return text.replace(old, new, 1)

    rewrite_export_file(export, name, replaced)


def test_conflicting_duplicate_refused_and_nothing_written(devices, tmp_path):
    _, exports = devices
    study = tmp_path / "study.db"
    merge_exports(study, [exports[0]])
    before = counts(study)
    changed = tmp_path / "changed"
    shutil.copytree(exports[0], changed)
    rewrite(changed, "self_reports.csv", ",answered\n", ",skipped\n")
    done = run_cli("merge", str(study), str(changed))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "conflicts with the merged copy" in done.stderr
    assert counts(study) == before


def test_conflicting_protocol_refused(devices, tmp_path):
    """Same protocol id and version, different wording: one of the devices is mislabelled."""
    _, exports = devices
    study = tmp_path / "study.db"
    merge_exports(study, [exports[0]])
    before = counts(study)
    changed = tmp_path / "changed"
    shutil.copytree(exports[1], changed)
    rewrite(changed, "protocols.csv", "how pleasant is your mood", "how good is your mood")
    with pytest.raises(MergeError, match=r"protocols row empathic-stories-daily/1 .*definition"):
        merge_exports(study, [changed])
    assert counts(study) == before


def test_tampered_or_mixed_exports_refused(devices, tmp_path):
    homes, exports = devices
    tampered = tmp_path / "tampered"
    shutil.copytree(exports[1], tampered)
    with (tampered / "turns.csv").open("a") as f:
        f.write("999,1,99,companion,greeting,2026-01-01,2026-01-01,\n")
    with pytest.raises(ExportError, match="sha256 does not match"):
        merge_exports(tmp_path / "a.db", [tampered])

    identified = tmp_path / "identified"
    export_home(homes[2].home, identified, ExportOptions())
    study = tmp_path / "b.db"
    merge_exports(study, [exports[0]])
    with pytest.raises(MergeError, match="export every device the same way"):
        merge_exports(study, [identified])


def test_jsonl_and_csv_exports_of_one_device_agree(devices, tmp_path):
    homes, exports = devices
    as_jsonl = tmp_path / "jsonl"
    export_home(homes[0].home, as_jsonl, ExportOptions(format="jsonl", deidentify=True))
    study = tmp_path / "study.db"
    (first,) = merge_exports(study, [exports[0]])
    (second,) = merge_exports(study, [as_jsonl])
    assert sum(second.added.values()) == 0
    assert second.skipped["turns"] == first.added["turns"] > 0


def test_export_from_an_older_device_merges(devices, tmp_path):
    """A device still on schema v3 (no invitations or protocols tables): the export says so in
    its codebook, and merges next to newer devices' exports."""
    homes, exports = devices
    old = tmp_path / "old-home"
    shutil.copytree(homes[2].home.path, old)
    conn = sqlite3.connect(old / "companion.db")
    conn.executescript("DROP TABLE invitations; DROP TABLE protocols; "
                       "DELETE FROM schema_migrations WHERE version >= 4;")  # fmt: skip
    conn.close()
    out = tmp_path / "old-export"
    done = run_cli("export", "--home", str(old), "--out", str(out), "--deidentify")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert "invitations" not in manifest["tables"] and manifest["schema_version"] == 3
    notes = json.loads((out / "codebook.json").read_text())["notes"]
    assert any("Table invitations is not in this database" in n for n in notes)
    study = tmp_path / "study.db"
    merge_exports(study, [exports[0], out])
    assert (
        counts(study)["sessions"] == homes[0].db["sessions"].count + homes[2].db["sessions"].count
    )


def _device(root, name, participant, person, timezone="Europe/London", seed=0):
    from tests.helpers.study import fill_study, make_home

    opened = make_home(root / name, participant, person, timezone=timezone)
    fill_study(opened, 2, seed=seed, interrupt=0)
    return opened


def _export(opened, out, salt):
    export_home(opened.home, out, ExportOptions(deidentify=True, salt_file=salt))
    return out


@pytest.fixture(scope="module")
def replacement(tmp_path_factory):
    """A participant's first device, its replacement (same id and name), and someone else
    claiming the same id in another timezone; every device has the one study salt."""
    root = tmp_path_factory.mktemp("replace")
    salt = root / "study_salt"
    salt.write_text("the-one-study-salt-set-at-provisioning\n")
    first = _device(root, "first", "P207", "Imogen Pike", seed=1)
    second = _device(root, "second", "P207", "imogen  pike", seed=2)
    other = _device(root, "other", "P207", "Desmond Roe", timezone="America/Toronto", seed=3)
    return root, salt, first, second, other


def test_replacement_device_links_the_participant(replacement, tmp_path):
    root, salt, first, second, _ = replacement
    a = _export(first, tmp_path / "a", salt)
    b = _export(second, tmp_path / "b", salt)
    study = tmp_path / "study.db"
    done = run_cli("merge", str(study), str(a), str(b))
    assert done.returncode == 0, done.stderr
    conn = sqlite3.connect(study)
    (pid,) = {r[0] for r in conn.execute("SELECT participant_id FROM sessions")}
    assert pid.startswith("S") and pid != "P207"
    assert conn.execute("SELECT COUNT(*) FROM participants").fetchone()[0] == 1
    devices = conn.execute("SELECT COUNT(*) FROM participant_devices WHERE participant_id = ?",
                           [pid]).fetchone()[0]  # fmt: skip
    assert devices == 2
    held = first.db["sessions"].count + second.db["sessions"].count
    assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == held
    assert "Imogen" not in (a / "manifest.json").read_text()


def test_same_id_different_person_refused_unless_told(replacement, tmp_path):
    root, salt, first, _, other = replacement
    a = _export(first, tmp_path / "a", salt)
    c = _export(other, tmp_path / "c", salt)
    study = tmp_path / "study.db"
    merge_exports(study, [a])
    before = counts(study)
    done = run_cli("merge", str(study), str(c))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    pid = json.loads((c / "manifest.json").read_text())["options"]["participant"] or next(
        iter(json.loads((c / "manifest.json").read_text())["identities"])
    )
    assert "different name and timezone" in done.stderr and f"--same-person {pid}" in done.stderr
    assert counts(study) == before  # nothing of the refused export was written
    done = run_cli("merge", str(study), str(c), "--same-person", pid)
    assert done.returncode == 0, done.stderr
    assert counts(study)["sessions"] == before["sessions"] + other.db["sessions"].count


def test_identified_exports_conflict_and_default_id_warns(replacement, tmp_path):
    root, _, first, _, other = replacement
    a, c = tmp_path / "a", tmp_path / "c"
    export_home(first.home, a, ExportOptions())
    export_home(other.home, c, ExportOptions())
    with pytest.raises(IdentityError, match="same-person P207"):
        merge_exports(tmp_path / "s.db", [a, c])
    default = _device(root, "default", "P001", "Ada", seed=4)
    d = tmp_path / "d"
    export_home(default.home, d, ExportOptions())
    done = run_cli("merge", str(tmp_path / "t.db"), str(d))
    assert done.returncode == 0, done.stderr
    assert "warning:" in done.stderr and "default id P001" in done.stderr


def test_device_without_the_study_salt_warns(replacement, tmp_path):
    root, salt, first, second, _ = replacement
    a = _export(first, tmp_path / "a", salt)
    own = tmp_path / "own-salt"
    own.write_text("a-device-that-made-its-own-salt\n")
    b = _export(second, tmp_path / "b", own)
    (_, result) = merge_exports(tmp_path / "s.db", [a, b])
    assert any("different salt" in w for w in result.warnings)
