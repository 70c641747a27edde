"""The small interface between the session engine and the participant.

The same engine drives text (stdin/stdout), simulated participants and voice
(microphone + speaker, or WAV files). Only implementations of `Channel` do I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol


class EndOfInput(Exception):
    """The participant is gone (EOF, Ctrl-C, audio device lost): end as interrupted."""


@dataclass(frozen=True)
class Expectation:
    """What the engine expects to hear next, so a recognizer can constrain itself.

    kind "answer": a short answer to a question; `vocabulary` lists the words and
    phrases that make a valid answer (a grammar recognizer may restrict itself to them).
    kind "story": free, possibly long speech; `max_seconds` caps it.
    """

    kind: Literal["answer", "story"]
    vocabulary: tuple[str, ...] = ()
    max_seconds: float | None = None
    # Unclear replies ("not sure") a grammar recognizer should hear as themselves, so they are
    # asked again instead of being forced onto an answer: the protocol's spoken_hedges.
    hedges: tuple[str, ...] = ()


@dataclass(frozen=True)
class Heard:
    """One participant turn as received. Empty text means nothing was heard in time."""

    text: str
    started_at: datetime
    ended_at: datetime
    confidence: float | None = None
    audio_path: str | None = None


class Channel(Protocol):
    """Two-way conversation with the participant."""

    mode: str  # "text" or "voice": stored on the session row

    def say(self, text: str) -> None:
        """Deliver one companion utterance; returns once it has been delivered."""

    def listen(self, expect: Expectation) -> Heard:
        """Wait for the participant's next turn. Raises EndOfInput if they are gone."""

    def close(self) -> None:
        """Release devices. Safe to call twice."""


def pause(channel: Channel, seconds: float) -> None:
    """A silence in the companion's speech, on a channel that speaks (its optional
    `pause(seconds)`); text has none."""
    hold = getattr(channel, "pause", None)
    if hold is not None and seconds > 0:
        hold(seconds)
