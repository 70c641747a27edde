"""Whole spoken sessions: espeak-ng speech -> real VAD and pocketsphinx -> engine -> SQLite.

The participant's answers are synthesised, so the test knows what was meant: every
stored value must be what was meant, or NULL. Never a different value.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from companion import app
from companion.engine.answers import NUMBER_NAMES
from companion.engine.confirm import load_fit
from companion.engine.dialogue import Expectation
from companion.engine.protocol import default_protocol_text, load_protocol
from companion.settings.config import Home, load_config, write_config
from companion.store.db import open_db
from companion.voice.channels import SynthesizedParticipantChannel
from companion.voice.speak import SpeakerSettings
from tests.helpers.run import REPO
from tests.helpers.speech import speech_wav

pytestmark = pytest.mark.slow  # whole spoken sessions through espeak-ng and the recogniser

PROTOCOL = load_protocol(None)
ITEMS = {item.text: (inst.id, item.id) for inst in PROTOCOL.instruments for item in inst.items}
MEANT = {
    ("mood", "valence"): 4, ("mood", "arousal"): 2,
    ("story_empathy", "similar_emotions"): 5, ("story_empathy", "felt_emotions"): 3,
    ("story_empathy", "recognised_situation"): 1, ("story_empathy", "understandable_reactions"): 4,
    ("story_empathy", "related_experience"): 2, ("story_empathy", "identified_situation"): 5,
    ("story_empathy", "identified_narrator"): 3, ("felt_understood", "felt_understood"): 4,
}  # fmt: skip
PURPOSES = {f"{i}.{it}" for i, it in MEANT}
STORY = "Yesterday I walked to the market in the rain and met an old friend from school."


class Participant:
    """Answers by meaning: confirms a read-back only if it is what they meant."""

    def __init__(self) -> None:
        self.current: tuple[str, str] | None = None

    def __call__(self, prompt: str, expect: Expectation) -> str | None:
        if expect.kind == "story":
            return STORY if self.current != ("story", "") else "that's all"
        if "Is that right?" in prompt:
            heard = prompt.split("I heard ", 1)[1].split(".", 1)[0]
            assert self.current is not None
            return "yes" if heard == NUMBER_NAMES[MEANT[self.current]] else "no"
        for text, key in ITEMS.items():
            if text in prompt:
                self.current = key
        assert self.current is not None, prompt
        return NUMBER_NAMES[MEANT[self.current]]


def stored(db, session_id: int) -> dict[tuple[str, str], int | None]:
    rows = db.execute(
        "SELECT instrument, item, value FROM self_reports WHERE session_id = ?", [session_id]
    )
    return {(i, it): v for i, it, v in rows}


@pytest.mark.parametrize(
    "voice", [SpeakerSettings(voice="en-us", rate=150), SpeakerSettings(voice="en-gb", rate=185)]
)
def test_spoken_session_stores_meant_values_or_nothing(home: Path, voice) -> None:
    opened = app.open_home(home)
    channel = SynthesizedParticipantChannel(
        Participant(), app.voice_settings(opened), participant_voice=voice
    )
    result = app.run_in_home(opened, channel)
    assert result.status == "completed"
    answers = stored(opened.db, result.session_id)
    assert set(answers) == set(MEANT)
    wrong = {k: v for k, v in answers.items() if v is not None and v != MEANT[k]}
    assert wrong == {}
    assert sum(v is not None for v in answers.values()) >= 8, answers
    session = opened.db["sessions"].get(result.session_id)
    assert session["mode"] == "voice"
    turns = list(opened.db.query("SELECT * FROM turns WHERE session_id = ?", [result.session_id]))
    # Read back only when unsure: every answer heard with a confidence under the threshold
    # (or none) was read back before anything was stored.
    answered = [t for t in turns if t["speaker"] == "participant" and t["purpose"] in PURPOSES]
    bar = load_fit().read_back_below
    unsure = [t for t in answered if t["text"] and (t["asr_confidence"] or 0) < bar]
    confirmations = [t for t in turns if t["purpose"].endswith(".confirm")]
    assert len(confirmations) >= 2 * len([t for t in unsure if t["text"] not in ("skip",)]) - 4
    heard = [t for t in turns if t["speaker"] == "participant" and t["purpose"] == "story"]
    # free-mode recognition of a story is rough, but it is the story being transcribed
    said = set(STORY.lower().replace(".", "").split())
    assert len(said & set(heard[0]["text"].split())) >= 4, heard[0]["text"]
    # Answers carry a real confidence, stories none (NULL, not a made-up 1.0).
    confident = [t["asr_confidence"] for t in answered if t["text"]]
    assert confident and all(0.0 < c < 1.0 for c in confident)
    assert len(set(confident)) > 1
    assert heard[0]["asr_confidence"] is None


def test_replayed_session_from_wav_files(home: Path, tmp_path: Path) -> None:
    """`companion session --voice --replay DIR`: the participant's turns from recordings."""
    replies = ["four", "yes", "two", "yes", STORY, "that's all"]
    replies += [w for item in PROTOCOL.instruments[1].items for w in ("three", "yes")]
    replies += ["five", "yes"]
    # The recordings answer every read-back, so this protocol reads back every answer.
    shipped = default_protocol_text()
    (home / "always.toml").write_text(
        shipped.replace("confirm_voice_answers = true", 'confirm_voice_answers = "always"')
    )
    config = load_config(Home(home))
    write_config(Home(home), dataclasses.replace(config, protocol="always.toml"))
    turns = tmp_path / "turns"
    turns.mkdir()
    for n, text in enumerate(replies):
        speech_wav(turns / f"{n:03d}.wav", text, "en-us", 150, snr_db=35)
    proc = subprocess.run(
        [sys.executable, "-m", "companion", "session", "--voice", "--replay", str(turns),
         "--home", str(home)],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    db = open_db(home / "companion.db")
    session_id = db.execute("SELECT MAX(id) FROM sessions").fetchone()[0]
    assert db["sessions"].get(session_id)["status"] == "completed"
    answers = stored(db, session_id)
    expected = {("mood", "valence"): 4, ("mood", "arousal"): 2,
                ("felt_understood", "felt_understood"): 5}  # fmt: skip
    expected |= {("story_empathy", item.id): 3 for item in PROTOCOL.instruments[1].items}
    assert {k: v for k, v in answers.items() if v is not None} == expected
    assert "participant: four" in proc.stdout


def test_replay_needs_voice(home: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "companion", "session", "--replay", str(tmp_path), "--home",
         str(home)],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and "--replay needs --voice" in proc.stderr


def test_voice_demo_needs_no_microphone_and_stores_right_answers(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "companion", "demo", "--voice", "--home", str(tmp_path / "h")],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "completed" in proc.stdout and ", 0 wrong" in proc.stdout
    db = open_db(tmp_path / "h" / "companion.db")
    assert db.execute("SELECT mode FROM sessions").fetchone() == ("voice",)
    assert db.execute("SELECT COUNT(value) FROM self_reports").fetchone()[0] >= 8
