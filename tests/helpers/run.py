"""Running the companion as its users do: the real CLI in a subprocess, a text session in
process, and one scripted participant whose replies every session test reuses."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from companion import app
from companion.settings.config import Config

REPO = Path(__file__).resolve().parent.parent.parent
TEST_CONFIG = Config(participant_id="P042", participant_name="Robin", timezone="Europe/London")

# One scripted participant: each entry is (reply, expected stored value or None).
CHECKIN = [("four", 4), ("I'd say two", 2)]
STORY = [
    "My neighbour's dog got out last night and I spent an hour looking for him in the rain.",
    "We found him under a bench at the park, soaked and very pleased with himself.",
    "That's all.",
]
POST_STORY = [("strongly agree", 5), ("3", 3), ("a two", 2), ("agree", 4), ("five", 5),
              ("one", 1), ("4", 4)]  # fmt: skip
CLOSING = [("five", 5)]
SCRIPT = [r for r, _ in CHECKIN] + STORY + [r for r, _ in POST_STORY] + [r for r, _ in CLOSING]


def run_cli(*args: str, input: str | None = None, home: Path | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """Run the real `companion` CLI in a subprocess."""
    env = {k: v for k, v in os.environ.items() if k != "COMPANION_HOME"}
    if home is not None:
        env["COMPANION_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "companion", *args],
        input=input, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO,
    )  # fmt: skip


def run_python(script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run `script` with this interpreter in its own process, from the repository root."""
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=REPO, timeout=timeout)  # fmt: skip


def answering_lines(answers: Iterable[str]) -> str:
    return "".join(f"{a}\n" for a in answers)


def run_text_session(home: Path, replies: list[str], kind: str | None = None):
    """Run a session in-process through the real TextChannel; returns (result, output, db)."""
    from companion.engine.textio import TextChannel

    opened = app.open_home(home)
    out = io.StringIO()
    channel = TextChannel(io.StringIO(answering_lines(replies)), out)
    result = app.run_in_home(opened, channel, kind=kind)
    return result, out.getvalue(), opened.db


def one_error_line(proc, *needles: str) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def home_with_config(tmp_path: Path, text: str) -> Path:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.toml").write_text(text)
    os.chmod(home / "config.toml", 0o600)
    return home


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in sorted(root.rglob("*"))
    }
