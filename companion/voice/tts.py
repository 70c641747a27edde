"""Which engine speaks: [voice] tts, piper when it is installed and its voice verifies.

A piper voice that is missing, corrupt or does not load never fails a session: the companion
speaks with pyttsx3 (espeak-ng) instead, saying so in one log line; `companion doctor` warns.
"""

from __future__ import annotations

import logging

from companion.errors import ConfigError
from companion.voice.audio import AudioSink
from companion.voice.speak import Speaker, SpeakerSettings, Speech

log = logging.getLogger(__name__)


def open_speaker(settings: SpeakerSettings, sink: AudioSink | None = None) -> Speech:
    """The engine `settings` ask for, loaded once (for a whole session)."""
    if settings.engine == "piper":
        from companion.voice.piper_tts import PiperSpeaker, VoiceUnavailable

        try:
            return PiperSpeaker(settings, sink)
        except VoiceUnavailable as exc:
            log.warning("speaking with pyttsx3 (espeak-ng): %s", exc)
    return Speaker(settings, sink)


def check(settings: SpeakerSettings) -> tuple[str, str]:
    """`companion doctor`'s finding on the engine a session would speak with, loaded as a
    session loads it: ("ok" | "warn" | "fail", detail). piper wanted but unavailable is a
    warning (sessions still speak, with pyttsx3)."""
    fallback = ""
    if settings.engine == "piper":
        from companion.voice.piper_tts import PiperSpeaker, VoiceUnavailable

        try:
            speech: Speech = PiperSpeaker(settings)
        except VoiceUnavailable as exc:
            fallback = f"{exc}; sessions speak with pyttsx3 (espeak-ng)"
        else:
            speech.close()
            return "ok", f"{speech.describe()}, loads and speaks"
    try:
        speech = Speaker(settings)
        try:
            spoke = bool(speech.render_pcm("Hello.")[0])
        finally:
            speech.close()
    except (ConfigError, RuntimeError) as exc:
        return "fail", f"pyttsx3 (espeak-ng): {exc}"
    if not spoke:
        return "fail", "pyttsx3 (espeak-ng) renders no audio; reinstall espeak-ng"
    return ("warn", fallback) if fallback else ("ok", f"{speech.describe()}, speaks")
