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

from companion.clock import utc_now
from companion.engine.dialogue import Channel, EndOfInput, Expectation, Heard, pause

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

    def __init__(self, seed: int = 7, spoken: bool = False) -> None:
        self.rng = random.Random(seed)
        # Spoken answers are single words, as a recogniser's answer grammar expects.
        self.phrasings = (
            ["{w}"] if spoken else ["{d}", "{w}", "I'd say {w}", "a {w}", "{w}, I'd say"]
        )
        self.story_turn = 0
        self.asked_repeat = False
        self.was_unclear = False
        self.question = ""  # the question being answered (not a reprompt of it)
        self.meant: dict[str, int] = {}  # question text -> the value the participant meant
        self.last_meant = ""  # the last answer meant, as the companion would read it back

    def reply(self, last_prompt: str, expect: Expectation) -> str | None:
        if "is that right" in last_prompt.lower():
            # A read-back of what the companion heard: confirm only what was meant.
            heard = last_prompt.lower().split("i heard ", 1)[-1].split(".", 1)[0].strip()
            return "yes" if heard == self.last_meant else "no"
        if expect.kind == "story":
            text = STORY_TURNS[min(self.story_turn, len(STORY_TURNS) - 1)]
            self.story_turn += 1
            return text
        if not any(marker in last_prompt for marker in ("try once more", "didn't quite catch")):
            self.question = last_prompt
        if "yes or no" in last_prompt.lower():
            value = self.meant.setdefault(self.question, self.rng.choice([0, 1]))
            self.last_meant = ("no", "yes")[value]
            return self.last_meant
        if not self.asked_repeat:
            self.asked_repeat = True
            return "sorry, could you repeat that?"
        if not self.was_unclear:
            self.was_unclear = True
            return "hmm, three or four"
        value = self.meant.setdefault(self.question, self.rng.randint(2, 5))
        words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
        self.last_meant = words[value]
        phrasing = self.rng.choice(self.phrasings)
        return phrasing.format(d=value, w=words[value])


class PrintingChannel:
    """Wraps any channel and prints the conversation as it happens (for demos)."""

    def __init__(self, inner: Channel, out: TextIO) -> None:
        self.inner, self.out, self.mode = inner, out, inner.mode

    def say(self, text: str) -> None:
        self.out.write(f"  companion: {text}\n")
        self.out.flush()
        self.inner.say(text)

    def pause(self, seconds: float) -> None:
        pause(self.inner, seconds)

    def listen(self, expect: Expectation) -> Heard:
        heard = self.inner.listen(expect)
        conf = f" (confidence {heard.confidence:.2f})" if heard.confidence is not None else ""
        self.out.write(f"participant: {heard.text or '[nothing heard]'}{conf}\n")
        self.out.flush()
        return heard

    def close(self) -> None:
        self.inner.close()


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
