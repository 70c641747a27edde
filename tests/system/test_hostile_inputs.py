"""Hostile inputs through the real CLI (issue 30): files that are devices or endless pipes,
JSON nested too deep or holding a lone surrogate, closed standard streams, ids that are not
ids (JSON true, another script's lookalike letters), a duplicate CSV column, an export for
nobody, a schedule that can never invite, a path with a newline, and a disk out of space or
of inodes. Each: exit 2, one line naming the file or field and what to do, no traceback,
and the stored data unchanged.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from companion.engine.protocol import default_protocol_text
from tests.helpers.adversarial import db_signature, mount_tmpfs, one_line_error, umount
from tests.helpers.forkrun import run_many
from tests.helpers.run import REPO, one_error_line, run_cli

STORY = " ".join(["The lift broke and I carried the shopping up nine floors in the heat."] * 3)


def story_line(**fields: Any) -> str:
    return json.dumps({"title": "Stairs", "text": STORY, **fields}) + "\n"


def schedule_protocol(folder: Path, schedule: str) -> Path:
    path = folder / "never.toml"
    path.write_text(default_protocol_text() + "\n[schedule]\n" + schedule)
    return path


def check_refused(result: dict[str, Any], home: Path, before: str | None, *needles: str) -> str:
    assert result["rc"] == 2, result
    line = one_line_error(result)
    for needle in needles:
        assert needle in line, line
    assert db_signature(home / "companion.db") == before
    return line


def test_hostile_files_and_values_are_refused_in_one_line(tmp_path: Path, home: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    (files / "zero.jsonl").symlink_to("/dev/zero")  # a device behind a story file's name
    (files / "deep.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    (files / "deep-field.jsonl").write_text(story_line(tags=json.loads("[" * 40 + "]" * 40)))
    (files / "surrogate.jsonl").write_text(
        '{"title": "\\ud800", "text": "' + STORY + '"}\n'
    )
    (files / "true-id.jsonl").write_text(story_line(id=True))
    (files / "lookalike-id.jsonl").write_text(story_line(id="\u0420042"))
    (files / "twice.csv").write_text(f'title,text,title\n"Stairs","{STORY}","Lift"\n')
    newline = files / "two\nlines.jsonl"
    newline.write_text("{not json\n")
    bad_toml = files / "bad\nname.toml"
    bad_toml.write_text("[protocol\n")
    quiet = schedule_protocol(files, 'windows = ["18:00-20:00"]\nquiet_hours = "17:00-21:00"\n')
    no_day = files / "no-day.toml"
    no_day.write_text(default_protocol_text() + "\n[schedule]\nstart_date = 2027-03-02\n"
                      'days = 1\nweekdays = ["mon"]\n')  # fmt: skip
    manifest_dev = files / "export"
    manifest_dev.mkdir()
    (manifest_dev / "manifest.json").symlink_to("/dev/zero")
    h = str(home)
    before = db_signature(home / "companion.db")
    config_before = (home / "config.toml").read_bytes()
    cases = [  # (argv, needles in the one error line)
        (["protocol", "check", "/dev/zero"], ("/dev/zero", "device", "regular file")),
        (["init", "--home", h, "--protocol", "/dev/zero"], ("/dev/zero", "device")),
        (["stories", "import", "--home", h, str(files / "zero.jsonl")], ("zero.jsonl", "device")),
        (["stories", "import", "--home", h, str(files / "deep.jsonl")], ("deep.jsonl:1", "nested")),
        (["stories", "import", "--home", h, str(files / "deep-field.jsonl")],
         ("deep-field.jsonl:1", "nested")),
        (["stories", "import", "--home", h, str(files / "surrogate.jsonl")],
         ("surrogate.jsonl:1", "\\ud800", "surrogate", "remove it")),
        (["stories", "import", "--home", h, str(files / "true-id.jsonl")],
         ("true-id.jsonl:1", "id", "true")),
        (["stories", "import", "--home", h, str(files / "lookalike-id.jsonl")],
         ("lookalike-id.jsonl:1: id", "CYRILLIC", "ASCII")),
        (["stories", "import", "--home", h, str(files / "twice.csv")],
         ("twice.csv:1", "'title'", "twice")),
        (["stories", "import", "--home", h, str(newline)], ("two\\nlines.jsonl:1", "JSON")),
        (["protocol", "check", str(bad_toml)], ("bad\\nname.toml", "TOML")),
        (["protocol", "check", str(files / "missing\nfile.toml")], ("missing\\nfile.toml",)),
        (["protocol", "check", str(quiet)], ("never.toml", "schedule.quiet_hours", "never")),
        (["init", "--home", h, "--protocol", str(quiet)], ("schedule.quiet_hours", "never")),
        (["protocol", "check", str(no_day)], ("no-day.toml", "schedule.weekdays", "never")),
        (["export", "--home", h, "--participant", "NOBODY", "--out", str(tmp_path / "ex1")],
         ("--participant", "'NOBODY'", "P042")),
        (["export", "--home", h, "--participant", "\u0420042", "--out", str(tmp_path / "ex2")],
         ("--participant", "CYRILLIC CAPITAL LETTER ER", "ASCII")),
        (["init", "--home", h, "--participant", "\u0420042"], ("--participant", "CYRILLIC")),
        (["session", "--text", "--home", h, "--participant", "P\u0435042"],
         ("--participant", "CYRILLIC SMALL LETTER IE")),
        (["model", "replay", "--home", h, "--participant", "\u0420042"], ("--participant",)),
        # the other files a command reads: a names file, a salt file, an evaluation CSV, an
        # export's manifest (from another device)
        (["export", "--home", h, "--out", str(tmp_path / "ex3"), "--deidentify",
          "--names-file", "/dev/zero"], ("/dev/zero", "names file", "device")),
        (["export", "--home", h, "--out", str(tmp_path / "ex4"), "--deidentify",
          "--salt-file", str(files / "zero.jsonl")], ("zero.jsonl", "salt file", "device")),
        (["model", "eval", str(files / "zero.jsonl")], ("zero.jsonl", "CSV file", "device")),
        (["merge", str(tmp_path / "study.db"), str(manifest_dev)],
         ("manifest.json", "export manifest", "device")),
    ]
    results = run_many([{"argv": argv, "stdin": b"4\n"} for argv, _ in cases])
    for (argv, needles), result in zip(cases, results, strict=True):
        assert result["seconds"] < 60, (argv, result)  # refused at once, nothing read whole
        check_refused(result, home, before, *needles)
    assert (home / "config.toml").read_bytes() == config_before
    assert not (tmp_path / "ex1").exists() and not (tmp_path / "ex2").exists()
    assert not (tmp_path / "study.db").exists()


def test_a_full_width_id_is_normalised_not_refused(tmp_path: Path, home: Path) -> None:
    out = tmp_path / "export"
    done = run_cli("export", "--home", str(home), "--participant", "\uff30042", "--out", str(out))
    assert done.returncode == 0, done.stderr
    participants = (out / "participants.csv").read_text().splitlines()
    assert len(participants) == 2 and participants[1].startswith("P042,")


def test_pipes_with_a_writer_that_never_stops_are_not_read(tmp_path: Path, home: Path) -> None:
    """A story file and config.toml that are FIFOs fed forever: refused, never waited on."""
    fifo = tmp_path / "endless.jsonl"
    os.mkfifo(fifo)
    writer = subprocess.Popen(
        [sys.executable, "-c", "import sys\nwith open(sys.argv[1], 'wb') as f:\n"
         "    while True: f.write(b'{' * 65536)", str(fifo)],
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        before = db_signature(home / "companion.db")
        done = run_cli("stories", "import", "--home", str(home), str(fifo), timeout=30)
        assert done.returncode == 2
        one_error_line(done, "endless.jsonl", "pipe", "regular file")
        assert db_signature(home / "companion.db") == before

        config = home / "config.toml"
        saved = config.read_bytes()
        config.unlink()
        os.mkfifo(config)
        try:
            done = run_cli("session", "--text", "--home", str(home), input="4\n", timeout=30)
        finally:
            config.unlink()
            config.write_bytes(saved)
        assert done.returncode == 2
        one_error_line(done, "config.toml", "pipe")
        assert db_signature(home / "companion.db") == before
    finally:
        writer.kill()
        writer.wait(timeout=10)


def _with_streams(redirect: str, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The real CLI with a standard stream closed by the shell (`<&-`, `>&-`)."""
    env = {**os.environ, "COMPANION_HOME": str(home)}
    return subprocess.run(
        ["sh", "-c", f'exec "$0" -m companion "$@" {redirect}', sys.executable, *args],
        capture_output=True, text=True, timeout=60, env=env, cwd=REPO,
    )  # fmt: skip


def test_closed_standard_streams_end_in_one_line(home: Path) -> None:
    before = db_signature(home / "companion.db")
    done = _with_streams("<&-", "session", "--text", home=home)
    assert done.returncode == 2
    one_error_line(done, "standard input is closed")
    done = _with_streams(">&-", "session", "--text", home=home)
    assert done.returncode == 2
    one_error_line(done, "standard output is closed")
    done = _with_streams(">&-", "status", home=home)
    assert done.returncode == 2
    one_error_line(done, "standard output is closed")
    assert db_signature(home / "companion.db") == before  # no session was begun


# -- the disk: out of space, out of inodes (a small tmpfs, when root may mount one) ---------


def test_a_disk_filling_during_an_import_says_the_disk_is_full(tmp_path: Path, home: Path) -> None:
    """Room to start (the 1 MB margin) but not for 3 MB of stories: SQLite's own rollback
    must not be hidden behind "cannot rollback", nor the advice be to restore a backup."""
    disk = tmp_path / "disk"
    used = sum(p.stat().st_size for p in home.rglob("*") if p.is_file())
    mount_tmpfs(disk, f"size={used // 1024 + 1536}k")
    try:
        shutil.copytree(home, disk / "home")
        many = tmp_path / "many.jsonl"
        many.write_text("".join(
            story_line(title=f"Day {n}", text=f"On day {n} " + " ".join([f"w{n}x{k}" for k in
                                                                       range(1300)]))
            for n in range(300)))  # fmt: skip
        before = db_signature(disk / "home" / "companion.db")
        done = run_cli("stories", "import", "--home", str(disk / "home"), str(many))
        assert done.returncode == 2, done.stderr
        line = one_error_line(done, "full", "free")
        assert "rollback" not in line and "restore" not in line, line
        assert db_signature(disk / "home" / "companion.db") == before
    finally:
        umount(disk)


def test_no_free_inodes_says_inodes_not_restore(tmp_path: Path, home: Path) -> None:
    disk = tmp_path / "inodes"
    mount_tmpfs(disk, "size=64m,nr_inodes=16")
    try:
        shutil.copytree(home, disk / "home")
        for extra in ("-wal", "-shm"):
            (disk / "home" / f"companion.db{extra}").unlink(missing_ok=True)
        before = db_signature(disk / "home" / "companion.db")
        fillers = disk / "fillers"
        fillers.mkdir()
        try:
            for n in range(1000):  # use up every inode left
                (fillers / f"f{n}").touch()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        (tmp_path / "one.csv").write_text(f'title,text\n"Stairs","{STORY}"\n')
        h = str(disk / "home")
        cases = [["stories", "import", "--home", h, str(tmp_path / "one.csv")],
                 ["session", "--text", "--home", h], ["init", "--home", h, "--name", "Sam"]]
        results = run_many([{"argv": a, "stdin": b"4\n"} for a in cases])
        shutil.rmtree(fillers)  # inodes again, so the database can be read to compare
        for argv, result in zip(cases, results, strict=True):
            line = check_refused(result, disk / "home", before, "inodes", "delete files")
            assert "restore" not in line, (argv, line)
    finally:
        umount(disk)
