"""A simulated participant for `companion demo`: answers like a person would.

Its replies are varied on purpose (digits, words, anchor labels, fillers, a
request to repeat, an unclear answer) so the demo shows the whole engine at work.
The story text is written by the companion team.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime
from typing import TextIO

from companion.dialogue import EndOfInput, Expectation, Heard
from companion.store import utc_now

STORY_TURNS = (
    "Last weekend my sister and I finally cleared out our late grandmother's garden shed. "
    "Under a pile of flower pots we found the tin where she kept seed packets, each one "
    "labelled in her handwriting with the year she saved them.",
    "We both went quiet for a while. Then we laughed, because she had written rude little "
    "notes about the neighbour's cabbages on some of them. It felt like she was right there.",
    "That's all, really.",
)


class SimulatedParticipant:
    """Decides what the participant says next, given the companion's last utterance."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.story_turn = 0
        self.asked_repeat = False
        self.was_unclear = False
        self.answers: list[tuple[str, int | None]] = []  # (question, intended value)

    def reply(self, last_prompt: str, expect: Expectation) -> str | None:
        if expect.kind == "story":
            text = STORY_TURNS[min(self.story_turn, len(STORY_TURNS) - 1)]
            self.story_turn += 1
            return text
        if "yes or no" in last_prompt.lower():
            return self.rng.choice(["yes", "yeah", "no"])
        if not self.asked_repeat:
            self.asked_repeat = True
            return "sorry, could you repeat that?"
        if not self.was_unclear:
            self.was_unclear = True
            return "hmm, three or four"
        value = self.rng.randint(2, 5)
        words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
        phrasing = self.rng.choice(["{d}", "{w}", "I'd say {w}", "a {w}", "{w}, I think"])
        self.answers.append((last_prompt, value))
        return phrasing.format(d=value, w=words[value])


class SimulatedChannel:
    """Drives a session with a SimulatedParticipant and prints the conversation."""

    mode = "text"

    def __init__(
        self,
        participant: SimulatedParticipant,
        out: TextIO,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.participant, self.out, self.clock = participant, out, clock
        self.last_prompt = ""

    def say(self, text: str) -> None:
        self.last_prompt = text
        self.out.write(f"  companion: {text}\n")

    def listen(self, expect: Expectation) -> Heard:
        started = self.clock()
        text = self.participant.reply(self.last_prompt, expect)
        if text is None:
            raise EndOfInput("simulated participant left")
        self.out.write(f"participant: {text}\n")
        return Heard(text, started, self.clock())

    def close(self) -> None:
        self.out.flush()
