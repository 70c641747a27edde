"""Turn-taking logic on synthetic VAD sequences and on real espeak-ng audio."""

from __future__ import annotations

import pytest
import webrtcvad

from companion.voice.audio import frame_bytes
from companion.voice.turns import NoSpeech, SpeechStarted, TurnConfig, TurnDetector, TurnEnded
from tests.helpers.speech import pad, speech_pcm


def run(seq: list[bool], **cfg: float) -> list[object]:
    det = TurnDetector(TurnConfig(frame_ms=10, **cfg))  # type: ignore[arg-type]
    events = []
    for v in seq:
        ev = det.feed(v)
        if ev is not None:
            events.append(ev)
        if det.done:
            break
    return events


def test_start_and_end_after_trailing_silence() -> None:
    seq = [False] * 50 + [True] * 100 + [False] * 200
    ev = run(seq, end_silence_s=0.5)
    assert isinstance(ev[0], SpeechStarted) and ev[0].at_s == pytest.approx(0.50)
    end = ev[1]
    assert isinstance(end, TurnEnded) and end.reason == "silence"
    assert end.start_s == pytest.approx(0.50) and end.end_s == pytest.approx(1.50)


def test_short_pause_does_not_end_turn() -> None:
    seq = [True] * 50 + [False] * 30 + [True] * 50 + [False] * 100
    ev = run(seq, end_silence_s=0.4)
    assert isinstance(ev[-1], TurnEnded) and ev[-1].end_s == pytest.approx(1.30)


def test_clicks_are_not_speech() -> None:
    seq = ([True] + [False] * 40) * 5
    assert run(seq, no_speech_timeout_s=10) == []


def test_no_speech_timeout() -> None:
    ev = run([False] * 500, no_speech_timeout_s=2.0)
    assert ev == [NoSpeech(2.0)]


def test_max_length_cap() -> None:
    ev = run([True] * 1000, max_turn_s=3.0)
    assert isinstance(ev[-1], TurnEnded) and ev[-1].reason == "max_length"
    assert ev[-1].end_s - ev[-1].start_s == pytest.approx(3.0)


def test_feeding_after_done_is_an_error() -> None:
    det = TurnDetector(TurnConfig(frame_ms=10, no_speech_timeout_s=0.01))
    det.feed(False)
    with pytest.raises(RuntimeError):
        det.feed(False)


def test_bad_frame_size() -> None:
    with pytest.raises(ValueError):
        TurnDetector(TurnConfig(frame_ms=25))


@pytest.mark.parametrize("frame_ms", [10, 20, 30])
def test_real_speech_endpoints(frame_ms: int) -> None:
    speech = speech_pcm("I walked to the market and bought some bread.", wpm=170)
    pcm = pad(speech, 1.0, 2.0)
    vad = webrtcvad.Vad(2)
    det = TurnDetector(TurnConfig(frame_ms=frame_ms, end_silence_s=0.7))
    fb = frame_bytes(frame_ms)
    events = []
    for i in range(0, len(pcm) - fb + 1, fb):
        ev = det.feed(vad.is_speech(pcm[i : i + fb], 16000))
        if ev:
            events.append(ev)
        if det.done:
            break
    speech_s = len(speech) / 32000
    start, end = events[0], events[-1]
    assert isinstance(start, SpeechStarted) and start.at_s == pytest.approx(1.0, abs=0.15)
    assert isinstance(end, TurnEnded) and end.reason == "silence"
    assert end.end_s == pytest.approx(1.0 + speech_s, abs=0.25)
