"""Which engine speaks: [voice] tts, piper when it is installed and its voice verifies.

A piper voice that is missing, corrupt or does not load never fails a session: the companion
speaks with pyttsx3 (espeak-ng) instead, saying so in one log line; `companion doctor` warns.
"""

from __future__ import annotations

import logging

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
