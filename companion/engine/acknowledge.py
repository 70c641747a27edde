"""Acknowledging what the participant felt. Pure: text in, phrase out.

With a confident emotion estimate the companion names the feeling; otherwise it
uses a neutral reflective phrase. Phrases are never repeated within a session.
All wording written by the companion team.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from companion.emotions import family_of

# How each emotion is named in a sentence ("you felt ___").
FEELING_WORDS: dict[str, str] = {
    "surprised": "surprised", "excited": "excited", "annoyed": "annoyed", "proud": "proud",
    "angry": "angry", "sad": "sad", "grateful": "grateful", "lonely": "lonely",
    "impressed": "impressed", "afraid": "scared", "disgusted": "put off", "confident": "confident",
    "terrified": "really frightened", "hopeful": "hopeful", "anxious": "anxious",
    "disappointed": "disappointed", "joyful": "happy", "prepared": "ready for it",
    "guilty": "guilty", "furious": "furious", "nostalgic": "nostalgic", "jealous": "jealous",
    "anticipating": "eager about what was coming", "embarrassed": "embarrassed",
    "content": "content", "devastated": "heartbroken", "sentimental": "sentimental",
    "caring": "caring", "trusting": "trusting", "ashamed": "ashamed",
    "apprehensive": "uneasy", "faithful": "loyal",
}  # fmt: skip

# Phrases per emotion family (companion.emotions.FAMILIES); each fits every member's feeling word.
NAMED: dict[str, tuple[str, ...]] = {
    "joy": (
        "It sounds like you felt {feeling}. I'm glad you told me about it.",
        "I can hear how {feeling} that made you. That's lovely to share.",
        "That sounds like a moment that left you feeling {feeling}.",
    ),
    "tender": (
        "It sounds like you felt {feeling}. Thank you for sharing something so close to you.",
        "I can hear how {feeling} you felt. That's something worth holding on to.",
        "Feeling {feeling} like that shows how much it means to you.",
    ),
    "anticipation": (
        "It sounds like you felt {feeling}. Thank you for telling me.",
        "I can hear that you were {feeling}. That's quite a moment.",
        "That sounds like it left you feeling {feeling}.",
    ),
    "sadness": (
        "It sounds like that left you feeling {feeling}. Thank you for telling me.",
        "That sounds hard. I can understand feeling {feeling} after that.",
        "I'm sorry. It makes sense that you'd feel {feeling}.",
    ),
    "fear": (
        "That sounds like it made you feel {feeling}. That's a lot to carry.",
        "It makes sense to feel {feeling} when things are uncertain like that.",
        "I can hear that you felt {feeling}. Thank you for sharing it with me.",
    ),
    "anger": (
        "It sounds like that made you feel {feeling}, and that's understandable.",
        "I can see why you'd be {feeling} about that.",
        "That would leave a lot of people feeling {feeling}.",
    ),
    "shame": (
        "It sounds like you felt {feeling}. Those moments can stay with us.",
        "Feeling {feeling} like that is very human. Thank you for being open about it.",
        "I appreciate you telling me, even though you felt {feeling}.",
    ),
}

NEUTRAL: tuple[str, ...] = (
    "Thank you for telling me that.",
    "I'm listening. That sounds like it mattered to you.",
    "I appreciate you sharing that with me.",
    "That's really something. Thank you for letting me hear it.",
    "I see. It means a lot that you'd share that.",
    "Mm, I hear you.",
    "Thank you. I'm glad you told me.",
)

DEFAULT_THRESHOLD = 0.35


def acknowledgement(
    emotions: Mapping[str, float] | None,
    used: set[str],
    rng: random.Random,
    threshold: float = DEFAULT_THRESHOLD,
) -> str:
    """Pick a phrase for what was heard; adds it to `used` so it is not said twice."""
    candidates: list[str] = []
    if emotions:
        top, prob = max(emotions.items(), key=lambda kv: kv[1])
        family = family_of(top)
        if prob >= threshold and family is not None:
            feeling = FEELING_WORDS[top]
            candidates = [p.format(feeling=feeling) for p in NAMED[family]]
            if feeling[0] in "aeiou":
                candidates = [c.replace(" a " + feeling, " an " + feeling) for c in candidates]
    fresh = [c for c in candidates if c not in used] or [p for p in NEUTRAL if p not in used]
    if not fresh:  # a very long session: allow repeats rather than fall silent
        fresh = list(NEUTRAL)
    phrase = rng.choice(fresh)
    used.add(phrase)
    return phrase
