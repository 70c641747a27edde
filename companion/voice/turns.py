"""Turn-taking: when did the participant start, and when are they done?

Pure logic over a stream of (frame, is_speech) decisions from a VAD. Time is
counted in audio, not wall clock, so the same frames always give the same events.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

from companion.settings.config import FRAME_SIZES, VoiceConfig

_VOICE = VoiceConfig()  # config.toml's [voice] defaults, written once there


@dataclass(frozen=True)
class TurnConfig:
    """How one turn is detected. The config.toml knobs default to the [voice] defaults."""

    frame_ms: int = _VOICE.frame_ms  # 10, 20 or 30 (webrtcvad's frame sizes)
    end_silence_s: float = _VOICE.end_silence_s  # trailing silence that ends a turn
    # Trailing silence that ends a turn once the grammar hypothesis is a complete answer
    # ("four", not "strongly"): a one-word answer need not wait out the story pause.
    answer_end_silence_s: float = 0.3
    no_speech_timeout_s: float = _VOICE.no_speech_timeout_s  # give up if nobody starts talking
    max_turn_s: float = 120.0  # cap on one turn, measured from speech start
    onset_window_ms: int = 300  # look-back window for speech onset
    onset_speech_ms: int = 120  # voiced ms needed in that window to start

    def __post_init__(self) -> None:
        # config.toml is checked at load; this guards code that builds a TurnConfig itself.
        if self.frame_ms not in FRAME_SIZES:
            raise ValueError(f"frame_ms must be 10, 20 or 30, not {self.frame_ms}")


@dataclass(frozen=True)
class SpeechStarted:
    at_s: float  # audio time of the first voiced frame of the onset window


@dataclass(frozen=True)
class TurnEnded:
    start_s: float
    end_s: float  # end of the last voiced frame
    reason: Literal["silence", "max_length"]


@dataclass(frozen=True)
class NoSpeech:
    at_s: float


TurnEvent = SpeechStarted | TurnEnded | NoSpeech


class TurnDetector:
    """Feed one VAD decision per frame; get at most one event back per frame.

    After TurnEnded or NoSpeech the detector is finished; make a new one per turn.
    """

    def __init__(self, config: TurnConfig | None = None) -> None:
        self.config = config or TurnConfig()
        c = self.config
        self._frame_s = c.frame_ms / 1000.0
        self._window: deque[bool] = deque(maxlen=max(1, c.onset_window_ms // c.frame_ms))
        self._onset_frames = max(1, c.onset_speech_ms // c.frame_ms)
        self._n = 0
        self.started_at: float | None = None
        self._last_voiced_end = 0.0
        self.done = False
        self.answer_complete = False  # set by the listener when the hypothesis is an answer

    @property
    def now_s(self) -> float:
        return self._n * self._frame_s

    @property
    def in_speech(self) -> bool:
        return self.started_at is not None and not self.done

    def feed(self, is_speech: bool) -> TurnEvent | None:
        if self.done:
            raise RuntimeError("turn already finished; make a new TurnDetector")
        c = self.config
        frame_start = self.now_s
        self._n += 1
        now = self.now_s
        if self.started_at is None:
            self._window.append(is_speech)
            if sum(self._window) >= self._onset_frames:
                first = len(self._window) - 1 - list(self._window).index(True)
                self.started_at = max(0.0, frame_start - first * self._frame_s)
                self._last_voiced_end = now
                return SpeechStarted(self.started_at)
            if now >= c.no_speech_timeout_s:
                self.done = True
                return NoSpeech(now)
            return None
        if is_speech:
            self._last_voiced_end = now
        if now - self.started_at >= c.max_turn_s:
            self.done = True
            return TurnEnded(self.started_at, now, "max_length")
        silence = (
            min(c.end_silence_s, c.answer_end_silence_s)
            if self.answer_complete
            else (c.end_silence_s)
        )
        if now - self._last_voiced_end >= silence:
            self.done = True
            return TurnEnded(self.started_at, self._last_voiced_end, "silence")
        return None


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def is_complete_answer(hypothesis: str, vocabulary: tuple[str, ...]) -> bool:
    """Is the running hypothesis a whole answer phrase that no longer phrase continues?

    "agree" is complete; "strongly" (of "strongly agree") and "not" (of "not at all") are not.
    """
    text = _norm(hypothesis)
    if not text:
        return False
    phrases = {_norm(p) for p in vocabulary}
    return text in phrases and not any(p.startswith(text + " ") for p in phrases)
