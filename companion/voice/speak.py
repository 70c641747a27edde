"""Companion speech: pyttsx3 (espeak-ng) renders to WAV, an AudioSink plays it.

Rendering to a file rather than pyttsx3's own `say()` keeps playback behind the
sink interface (testable without a speaker, loggable, works headless).
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from companion.errors import ConfigError
from companion.settings.config import TTS_RATE, TTS_VOLUME, VoiceConfig
from companion.voice.audio import AudioSink, read_wav

log = logging.getLogger(__name__)

_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
# pyttsx3.init() hands every caller the same engine per driver, so speakers with
# different voices share it: each render sets its own properties under this lock.
_ENGINE_LOCK = threading.Lock()
# pyttsx3 (2.99) runs espeak-ng in asynchronous mode: runAndWait() returns before
# the utterance is finished (the WAV is written later from espeak's thread), and its
# endLoop cancels espeak's command queue, dropping voice/rate/volume changes still
# queued there. So each render lets the property changes reach espeak first and
# then waits for the driver's finished-utterance notification.
_FINISHED = threading.Event()
_RENDER_TIMEOUT_S = 30.0


def _on_finished(**_: object) -> None:
    _FINISHED.set()


def _wait_settled() -> None:
    """Until espeak has applied the queued property changes (its queue is empty)."""
    from pyttsx3.drivers import _espeak

    deadline = time.monotonic() + 2.0
    while _espeak.IsPlaying() and time.monotonic() < deadline:
        time.sleep(0.001)


def _wait_idle(engine: Any, text: str) -> None:
    """Until espeak has finished the utterance and the driver is idle again (the
    driver turns idle just after notifying; properties set before are queued late)."""
    deadline = time.monotonic() + _RENDER_TIMEOUT_S
    finished = _FINISHED.wait(_RENDER_TIMEOUT_S)
    while engine.isBusy() and time.monotonic() < deadline:
        time.sleep(0.001)
    if not finished or engine.isBusy():
        log.warning("espeak-ng did not finish %r in time", text[:40])


_VOICE = VoiceConfig()  # config.toml's [voice] defaults, written once there


@dataclass(frozen=True)
class SpeakerSettings:
    """How the companion (or a simulated participant) sounds; defaults are [voice]'s."""

    voice: str = _VOICE.tts_voice  # espeak voice id, name or language ("en-us", "gmw/en-US")
    rate: int = _VOICE.tts_rate  # words per minute
    volume: float = _VOICE.tts_volume  # 0.0 .. 1.0


def split_sentences(text: str, max_chars: int = 200) -> list[str]:
    """Sentences, with over-long ones cut at commas/spaces so each renders quickly."""
    out: list[str] = []
    for sent in _SENTENCE.split(text.strip()):
        while len(sent) > max_chars:
            cut = max(sent.rfind(",", 0, max_chars), sent.rfind(" ", 0, max_chars))
            cut = cut if cut > 0 else max_chars
            out.append(sent[: cut + 1].strip())
            sent = sent[cut + 1 :].strip()
        if sent:
            out.append(sent)
    return out


class Speaker:
    """One warm pyttsx3 engine for a whole session."""

    def __init__(self, settings: SpeakerSettings | None = None, sink: AudioSink | None = None):
        import pyttsx3

        self.settings = settings or SpeakerSettings()
        self.sink = sink
        self._engine: Any = pyttsx3.init("espeak")
        self._token = self._engine.connect("finished-utterance", _on_finished)
        s = self.settings
        # config.toml is checked at load with the same ranges; settings built in code are not.
        if not TTS_RATE[0] <= s.rate <= TTS_RATE[1]:
            raise ConfigError(
                f"tts_rate {s.rate}: use {TTS_RATE[0]}..{TTS_RATE[1]} words per minute"
            )
        if not TTS_VOLUME[0] <= s.volume <= TTS_VOLUME[1]:
            raise ConfigError(f"tts_volume {s.volume}: use {TTS_VOLUME[0]}..{TTS_VOLUME[1]}")
        self._props = {"voice": self._voice_id(s.voice), "rate": s.rate, "volume": s.volume}
        self._tmp = tempfile.TemporaryDirectory(prefix="companion-tts-")
        self._player = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tts-play")

    def _voice_id(self, wanted: str) -> str:
        low = wanted.lower()
        for v in self._engine.getProperty("voices"):
            langs = [str(lang).lower() for lang in (v.languages or [])]
            if low in (str(v.id).lower(), str(v.name).lower()) or low in langs:
                return str(v.id)
        raise ConfigError(f"tts_voice {wanted!r}: no such espeak-ng voice (see espeak-ng --voices)")

    def render_wav(self, text: str, path: str | Path) -> Path:
        """Synthesise `text` into a WAV file (espeak-ng's rate, mono int16)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        # pyttsx3's espeak driver now and then finishes a run without writing the file
        # (seen about once per few hundred sentences); a second run has always worked.
        for attempt in range(3):
            path.unlink(missing_ok=True)  # never mistake an earlier utterance for this one
            with _ENGINE_LOCK, contextlib.redirect_stdout(io.StringIO()):  # the driver print()s
                for key, value in self._props.items():
                    self._engine.setProperty(key, value)
                _wait_settled()
                self._engine.save_to_file(text, str(path))
                _FINISHED.clear()
                self._engine.runAndWait()
                _wait_idle(self._engine, text)
            if path.exists() and path.stat().st_size > 44:
                return path
            log.warning("espeak-ng wrote no audio for %r (attempt %d)", text[:40], attempt + 1)
        raise RuntimeError(f"espeak-ng produced no audio for {text[:40]!r}")

    def render_pcm(self, text: str) -> tuple[bytes, int]:
        path = Path(self._tmp.name) / "utt.wav"
        self.render_wav(text, path)
        return read_wav(path)

    def speak(self, text: str) -> float:
        """Render sentence by sentence and play each while the next renders.

        Returns the seconds of audio played. Needs a sink.
        """
        if self.sink is None:
            raise RuntimeError("Speaker has no sink to play to")
        played = 0.0
        pending: Future[None] | None = None
        for sentence in split_sentences(text):
            pcm, rate = self.render_pcm(sentence)
            if pending is not None:
                pending.result()  # keep order; surfaces sink errors
            pending = self._player.submit(self.sink.play, pcm, rate)
            played += len(pcm) / 2 / rate
        if pending is not None:
            pending.result()
        return played

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._engine.disconnect(self._token)
        self._player.shutdown(wait=True)
        with contextlib.suppress(Exception):
            self._engine.stop()
        self._tmp.cleanup()
