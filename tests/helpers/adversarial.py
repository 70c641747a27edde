"""Machinery of the adversarial corpus (tests/system/test_adversarial*.py): cases, homes copied from
one template with real data, one forking runner for all command lines, and the checks every
case makes (exit code, one message line and no traceback, database signature).

The corpus is run once per test session: the first xdist worker to need it runs it and
stores the outcomes beside the homes; the other reads them. Each parametrized test then
asserts its own case.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.forkrun import run_many
from tests.helpers.run import SCRIPT, TEST_CONFIG, run_text_session

# What a case expects of the database afterwards.
SAME = "same"  # every row as before (or still no file)
ABSENT = "absent"  # no database file (and no home) was created


@dataclass
class Case:
    family: str
    name: str
    argv: list[str]
    rc: int = 2
    needles: tuple[str, ...] = ()  # each must be in the one error line
    stdin: bytes = b""
    db: str = SAME
    prepare: Callable[[Path], None] | None = None  # edits the case's home before the run
    home: bool = True  # False: the case gets no home (the path does not exist)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.family}:{self.name}"


def db_signature(path: Path) -> str | None:
    """A digest of every row of every table; None without a database file. Read-only."""
    if not path.exists():
        return None
    raw = hashlib.sha256(path.read_bytes()).hexdigest()
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            digest = hashlib.sha256()
            tables = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]  # fmt: skip
            for table in tables:
                rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
                digest.update(f"{table}:{sorted(map(repr, rows))}".encode())
            return digest.hexdigest()
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return f"bytes:{raw}"  # not readable as a database: its bytes are its signature


def make_template(root: Path, template_db: Path) -> Path:
    """A home with one completed session (real answers) and one verified backup."""
    from companion.settings.config import Home, write_config
    from companion.store.backup import backup_now

    home = root / "template"
    write_config(Home(home), TEST_CONFIG)
    shutil.copy(template_db, home / "companion.db")
    os.chmod(home / "companion.db", 0o600)
    result, _, db = run_text_session(home, SCRIPT)
    assert result.status == "completed"
    from companion import app

    backup_now(db, app.open_home(home).home)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.conn.close()
    for extra in ("-wal", "-shm"):
        (home / f"companion.db{extra}").unlink(missing_ok=True)
    return home


def one_line_error(result: dict[str, Any]) -> str:
    err = result["stderr"]
    assert "Traceback" not in err, err[-2000:]
    lines = err.strip().splitlines()
    assert len(lines) == 1, err[-2000:]
    return lines[0]


def run_corpus(root: Path, template_db: Path, cases: list[Case]) -> dict[str, dict[str, Any]]:
    """Run every case once per test session (shared by the xdist workers)."""
    root.mkdir(parents=True, exist_ok=True)
    outcomes = root / "outcomes.json"
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if outcomes.exists():
            stored: dict[str, dict[str, Any]] = json.loads(outcomes.read_text())
            return stored
        template = make_template(root, template_db)
        jobs = []
        for n, case in enumerate(cases):
            home = root / f"case{n:03d}" / "home"
            home.parent.mkdir()
            if case.home:
                shutil.copytree(template, home)
            if case.prepare is not None:
                case.prepare(home)
            argv = [a.replace("{home}", str(home)).replace("{dir}", str(home.parent))
                    for a in case.argv]  # fmt: skip
            jobs.append({"argv": argv, "stdin": case.stdin, "cwd": home.parent})
            case.extra["home"] = home
            case.extra["before"] = db_signature(home / "companion.db")
            case.extra["files_before"] = sorted(p.name for p in home.iterdir()) if (
                home.is_dir()) else None  # fmt: skip
        results = run_many(jobs)
        stored = {}
        for case, result in zip(cases, results, strict=True):
            home = case.extra["home"]
            stored[case.id] = {
                **result,
                "home": str(home),
                "before": case.extra["before"],
                "after": db_signature(home / "companion.db"),
                "home_exists": home.exists(),
                "files_before": case.extra["files_before"],
                "files_after": sorted(p.name for p in home.iterdir()) if home.is_dir() else None,
            }
        outcomes.write_text(json.dumps(stored))
        return stored


def shared_root(tmp_path_factory: Any, name: str) -> Path:
    """A folder all xdist workers of this test session share."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name


def check(case: Case, outcome: dict[str, Any]) -> None:
    """The assertions every case makes."""
    assert outcome["rc"] == case.rc, (case.id, outcome["stderr"][-2000:], outcome["stdout"][-500:])
    if case.rc == 2:
        line = one_line_error(outcome)
        assert line.startswith("companion: error:"), line
        for needle in case.needles:
            assert needle in line, (needle, line)
    else:
        assert "Traceback" not in outcome["stderr"], outcome["stderr"][-2000:]
    if case.db == SAME:
        assert outcome["after"] == outcome["before"], f"{case.id}: database changed"
    elif case.db == ABSENT:
        assert outcome["after"] is None and not outcome["home_exists"], case.id


def mount_tmpfs(target: Path, options: str) -> None:
    """A small tmpfs at `target` (`options`: "size=2048k", "nr_inodes=16"), for a full disk or
    no free inodes; skips the test when this is not root or tmpfs cannot be mounted."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    target.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


def umount(target: Path) -> None:
    subprocess.run(["umount", "-l", str(target)], check=False)
