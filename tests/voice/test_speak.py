"""Companion speech: real pyttsx3 + espeak-ng rendering, checked as audio."""

from __future__ import annotations

import wave
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from companion.errors import ConfigError
from companion.voice.audio import DeviceError, WavSink, resample
from companion.voice.listen import PocketsphinxFactory
from companion.voice.speak import Speaker, SpeakerSettings, split_sentences
from tests.helpers.speech import ANSWER_VOCAB, HEDGES, pad

pytestmark = pytest.mark.slow  # real espeak-ng rendering, recognised back

PANGRAM = "The quick brown fox jumps over the lazy dog near the quiet river bank."


@pytest.fixture(scope="module")
def speaker() -> Iterator[Speaker]:
    s = Speaker(SpeakerSettings(voice="en-us"))
    yield s
    s.close()


def speech_span_s(pcm: bytes, rate: int, threshold: int = 300) -> float:
    """Seconds from the first to the last sample above `threshold` (leading and trailing
    silence excluded)."""
    x = np.abs(np.frombuffer(pcm, dtype=np.int16).astype(np.int32))
    loud = np.flatnonzero(x > threshold)
    return 0.0 if loud.size == 0 else (loud[-1] - loud[0]) / rate


def test_rendered_utterance_is_plausible_speech(speaker: Speaker, tmp_path: Path) -> None:
    path = speaker.render_wav(PANGRAM, tmp_path / "utt.wav")
    with wave.open(str(path)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getcomptype()) == (1, 2, "NONE")
        rate = w.getframerate()
        pcm = w.readframes(w.getnframes())
    assert 8000 <= rate <= 48000
    per_word = speech_span_s(pcm, rate) / len(PANGRAM.split())
    assert 0.15 <= per_word <= 0.8
    x = np.frombuffer(pcm, dtype=np.int16).astype(np.float64)
    assert 500 < np.sqrt(np.mean(x**2)) < 20000  # audible, not clipped noise


def test_rate_changes_duration(tmp_path: Path) -> None:
    spans = {}
    for wpm in (100, 250):
        s = Speaker(SpeakerSettings(voice="en-us", rate=wpm))
        spans[wpm] = speech_span_s(*s.render_pcm(PANGRAM))
        s.close()
    # espeak-ng's rate is words per minute: 2.5x the rate, well under half the time.
    assert spans[100] / spans[250] > 1.8


def test_two_live_speakers_keep_their_own_settings() -> None:
    """The companion and a synthesised participant share pyttsx3's one engine; each
    render must use its own speaker's rate (pyttsx3's driver used to drop the change)."""
    slow = Speaker(SpeakerSettings(voice="en-us", rate=100))
    fast = Speaker(SpeakerSettings(voice="en-gb", rate=250))
    spans = [speech_span_s(*s.render_pcm(PANGRAM)) for s in (slow, fast, slow, fast)]
    slow.close()
    fast.close()
    assert spans[0] / spans[1] > 1.8 and spans[2] / spans[3] > 1.8
    assert spans[0] == pytest.approx(spans[2], rel=0.02)


def test_volume_setting_scales_level() -> None:
    levels = {}
    for vol in (0.25, 1.0):
        s = Speaker(SpeakerSettings(volume=vol))
        x = np.frombuffer(s.render_pcm("Hello there, friend.")[0], dtype=np.int16)
        levels[vol] = float(np.abs(x.astype(np.int32)).max())
        s.close()
    assert levels[0.25] < 0.6 * levels[1.0]


def test_long_text_is_split_and_played_in_order(speaker: Speaker) -> None:
    text = (
        "Thank you for telling me that. It sounds like it was a hard week! "
        "Shall I read you a story? " + "It is about a garden, " * 12 + "and a friend."
    )
    parts = split_sentences(text)
    assert parts[:3] == [
        "Thank you for telling me that.",
        "It sounds like it was a hard week!",
        "Shall I read you a story?",
    ]
    assert len(parts) >= 5 and all(len(p) <= 200 for p in parts)
    assert " ".join(parts).split() == text.split()  # nothing lost or reordered

    sink = WavSink()
    speaker.sink = sink
    try:
        played = speaker.speak(text)
    finally:
        speaker.sink = None
    assert len(sink.played) == len(parts)
    assert played == pytest.approx(sink.seconds)
    # Played in sentence order: each chunk's length follows its sentence's word count.
    words = [len(p.split()) for p in parts[:3]]
    secs = [len(pcm) / 2 / rate for pcm, rate in sink.played[:3]]
    assert secs[0] < secs[1] and secs[2] < secs[1]
    assert words[0] < words[1] and words[2] < words[1]


def test_rendered_speech_is_recognised(speaker: Speaker, sphinx: PocketsphinxFactory) -> None:
    pcm, rate = speaker.render_pcm("Strongly agree.")
    rec = sphinx.create("grammar", ANSWER_VOCAB, HEDGES)
    audio = pad(resample(pcm, rate))
    for i in range(0, len(audio), 960):
        rec.accept(audio[i : i + 960])
    assert rec.final().text == "strongly agree"


def test_sink_errors_surface_from_speak() -> None:
    class Unplugged(WavSink):
        def play(self, pcm: bytes, sample_rate: int) -> None:
            raise DeviceError("output device vanished")

    s = Speaker(SpeakerSettings(), Unplugged())
    with pytest.raises(DeviceError, match="vanished"):
        s.speak("Hello. Are you there?")
    s.close()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (SpeakerSettings(rate=20), "tts_rate 20"),
        (SpeakerSettings(volume=1.5), "tts_volume 1.5"),
        (SpeakerSettings(voice="klingon-xx"), "tts_voice 'klingon-xx'"),
    ],
)
def test_bad_settings_are_config_errors(settings: SpeakerSettings, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Speaker(settings)
