"""Companion speech: one interface over two engines, and the pacing they share.

`Speech` renders text and plays it sentence by sentence through an AudioSink, each sentence
rendered while the one before plays, with the protocol's pauses between them. `Speaker`
is the pyttsx3 (espeak-ng) engine: it renders to a WAV file rather than pyttsx3's own
`say()`, which keeps playback behind the sink interface (testable without a speaker,
loggable, works headless). The piper engine is `voice.piper_tts`; `voice.tts` picks one.
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

import numpy as np

from companion.engine.protocol import Protocol
from companion.errors import ConfigError
from companion.settings.config import TTS_RATE, TTS_VOLUME, VoiceConfig
from companion.voice.audio import AudioSink, read_wav, write_wav

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
    """How the companion (or a simulated participant) sounds; defaults are [voice]'s and the
    protocol's."""

    voice: str = _VOICE.tts_voice  # espeak voice id, name or language ("en-us", "gmw/en-US")
    rate: int = _VOICE.tts_rate  # words per minute (pyttsx3)
    volume: float = _VOICE.tts_volume  # 0.0 .. 1.0
    engine: str = _VOICE.tts  # "piper" or "pyttsx3" (voice.tts.open_speaker)
    piper_voice: Path | None = None  # the .onnx; None = the packaged voice
    speed: float = Protocol.speaking_rate  # relative to the voice's own pace
    sentence_pause_s: float = Protocol.sentence_pause_seconds


def split_sentences(text: str, max_chars: int = 200) -> list[str]:
    """Sentences, with over-long ones cut at commas/spaces so each renders quickly."""
    return [piece.text for piece in plan(text, max_chars, max_chars, 0.0)]


def _head(sentence: str, max_chars: int) -> str:
    """The start of `sentence` up to `max_chars`, cut after a comma, else at a space."""
    comma = max(sentence.rfind(",", 0, max_chars), sentence.rfind(";", 0, max_chars))
    # A comma in the second half; else the last word that fits (never a stub like "Well,").
    cut = comma + 1 if comma >= max_chars // 2 else sentence.rfind(" ", 0, max_chars + 1)
    return sentence[: cut if cut > 0 else max_chars].strip()


@dataclass(frozen=True)
class Piece:
    """One rendering of an utterance and the silence played after it."""

    text: str
    pause_s: float


def plan(text: str, first_chars: int, max_chars: int, pause_s: float) -> list[Piece]:
    """The pieces an utterance is rendered in: sentences of at most `max_chars`, the first
    piece of at most `first_chars` (a long sentence is cut after a comma or at a word), so
    the first audio starts quickly whatever the length. A sentence's last piece is followed
    by `pause_s` of silence, except the utterance's last."""
    pieces: list[Piece] = []
    for sentence in _SENTENCE.split(text.strip()):
        rest = sentence.strip()
        while rest:
            limit = max_chars if pieces else first_chars
            part = _head(rest, limit) if len(rest) > limit else rest
            rest = rest[len(part) :].strip()
            pieces.append(Piece(part, 0.0 if rest else pause_s))
    if pieces:
        pieces[-1] = Piece(pieces[-1].text, 0.0)
    return pieces


# Below this level (-56 dBFS) a piece's tail is the engine's own silence (espeak-ng pads about
# 0.3 s, piper 0.1-0.2 s), trimmed so that the pause after it is the protocol's.
QUIET = 50


def silence(seconds: float, rate: int) -> bytes:
    return bytes(2 * round(seconds * rate))


def trim_tail(pcm: bytes) -> bytes:
    x = np.frombuffer(pcm, dtype=np.int16)
    loud = np.flatnonzero(np.abs(x.astype(np.int32)) > QUIET)
    return x[: loud[-1] + 1].tobytes() if loud.size else b""


class Speech:
    """What channels and the CLI use of an engine: render_wav, render_pcm, speak, pause and
    close. An engine implements `render_pcm` (one piece, mono int16) and `_shut`."""

    name = ""  # the engine, as [voice] tts names it
    first_chars = 200  # the longest first piece (how quickly the first audio starts)
    max_chars = 200  # the longest piece

    def __init__(self, settings: SpeakerSettings, sink: AudioSink | None) -> None:
        self.settings = settings
        self.sink = sink
        self._player = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tts-play")

    def render_pcm(self, text: str) -> tuple[bytes, int]:
        raise NotImplementedError

    def render_wav(self, text: str, path: str | Path) -> Path:
        """Synthesise `text` as one piece into a 16-bit mono WAV file."""
        path = Path(path)
        write_wav(path, *self.render_pcm(text))
        return path

    def describe(self) -> str:
        """The engine and voice, for logs and `companion doctor`."""
        return self.name

    def pieces(self, text: str) -> list[Piece]:
        return plan(text, self.first_chars, self.max_chars, self.settings.sentence_pause_s)

    def speak(self, text: str) -> float:
        """Render piece by piece and play each (its tail's silence replaced by its pause) while
        the next renders.

        Returns the seconds of audio played. Needs a sink.
        """
        if self.sink is None:
            raise RuntimeError("Speaker has no sink to play to")
        played = 0.0
        pending: Future[None] | None = None
        for piece in self.pieces(text):
            pcm, rate = self.render_pcm(piece.text)
            pcm = trim_tail(pcm) + silence(piece.pause_s, rate)
            if pending is not None:
                pending.result()  # keep order; surfaces sink errors
            pending = self._player.submit(self.sink.play, pcm, rate)
            played += len(pcm) / 2 / rate
        if pending is not None:
            pending.result()
        return played

    def pause(self, seconds: float, rate: int = 16000) -> None:
        """Play `seconds` of silence (before a story)."""
        if self.sink is None:
            raise RuntimeError("Speaker has no sink to play to")
        if seconds > 0:
            self.sink.play(silence(seconds, rate), rate)

    def close(self) -> None:
        self._player.shutdown(wait=True)
        self._shut()

    def _shut(self) -> None:
        pass


class Speaker(Speech):
    """The pyttsx3 (espeak-ng) engine, one warm instance for a whole session."""

    name = "pyttsx3"

    def __init__(self, settings: SpeakerSettings | None = None, sink: AudioSink | None = None):
        import pyttsx3

        s = settings or SpeakerSettings()
        # config.toml is checked at load with the same ranges; settings built in code are not.
        if not TTS_RATE[0] <= s.rate <= TTS_RATE[1]:
            raise ConfigError(
                f"tts_rate {s.rate}: use {TTS_RATE[0]}..{TTS_RATE[1]} words per minute"
            )
        if not TTS_VOLUME[0] <= s.volume <= TTS_VOLUME[1]:
            raise ConfigError(f"tts_volume {s.volume}: use {TTS_VOLUME[0]}..{TTS_VOLUME[1]}")
        self._engine: Any = pyttsx3.init("espeak")
        self._token = self._engine.connect("finished-utterance", _on_finished)
        rate = min(max(round(s.rate * s.speed), TTS_RATE[0]), TTS_RATE[1])
        self._props = {"voice": self._voice_id(s.voice), "rate": rate, "volume": s.volume}
        self._tmp = tempfile.TemporaryDirectory(prefix="companion-tts-")
        super().__init__(s, sink)

    def _voice_id(self, wanted: str) -> str:
        low = wanted.lower()
        for v in self._engine.getProperty("voices"):
            langs = [str(lang).lower() for lang in (v.languages or [])]
            if low in (str(v.id).lower(), str(v.name).lower()) or low in langs:
                return str(v.id)
        raise ConfigError(f"tts_voice {wanted!r}: no such espeak-ng voice (see espeak-ng --voices)")

    def describe(self) -> str:
        return f"pyttsx3 (espeak-ng {self.settings.voice}, {self._props['rate']} wpm)"

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

    def _shut(self) -> None:
        with contextlib.suppress(Exception):
            self._engine.disconnect(self._token)
        with contextlib.suppress(Exception):
            self._engine.stop()
        self._tmp.cleanup()
