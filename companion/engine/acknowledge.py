"""Acknowledging what the participant felt. Pure: emotion estimate in, phrase out.

The calibrated rule (`ackrule`, thresholds in companion/data/acknowledge_rule.json) decides the
level: name the exact feeling where the model is reliably right, name only the feeling's family
in words that fit every feeling of that family where only the family is reliable, only whether
it was pleasant or painful (valence, in words that fit every feeling of that group) where only
that is reliable, otherwise reflect without naming. Among the phrases of that level the
freshest is chosen (`variety`): none said twice in a session, none again within the
protocol's window while alternatives remain. All wording written by the companion team.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from companion.emotions import family_of
from companion.engine.ackrule import Decision, decide, load_rule
from companion.engine.variety import PhraseMemory

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

# Exact naming, by the feeling's family; {feeling} is a FEELING_WORDS entry of that family.
NAMED: dict[str, tuple[str, ...]] = {
    "joy": (
        "It sounds like you felt {feeling}. I'm glad you told me about it.",
        "I can hear how {feeling} that made you. That's lovely to share.",
        "That sounds like a moment that left you feeling {feeling}.",
        "Feeling {feeling} like that is worth remembering. Thank you for sharing it.",
        "You sound {feeling} about that, and I'm glad for you.",
    ),
    "tender": (
        "It sounds like you felt {feeling}. Thank you for sharing something so close to you.",
        "I can hear how {feeling} you felt. That's something worth holding on to.",
        "Feeling {feeling} like that shows how much it means to you.",
        "You sound {feeling} when you talk about it. Thank you for letting me hear it.",
        "It's lovely to hear you felt {feeling}.",
    ),
    "anticipation": (
        "It sounds like you felt {feeling}. Thank you for telling me.",
        "I can hear that you were {feeling}. That's quite a moment.",
        "That sounds like it left you feeling {feeling}.",
        "You sound {feeling}, and I can understand why.",
        "That sounds like a moment when you felt {feeling}.",
    ),
    "sadness": (
        "It sounds like that left you feeling {feeling}. Thank you for telling me.",
        "That sounds hard. I can understand feeling {feeling} after that.",
        "I'm sorry. It makes sense that you'd feel {feeling}.",
        "Feeling {feeling} after something like that is very understandable.",
        "I can hear that you felt {feeling}. I'm glad you could share it with me.",
    ),
    "fear": (
        "That sounds like it made you feel {feeling}. That's a lot to carry.",
        "It makes sense to feel {feeling} when things are uncertain like that.",
        "I can hear that you felt {feeling}. Thank you for sharing it with me.",
        "Feeling {feeling} in a moment like that is very human.",
        "It sounds like you were {feeling}. I'm glad you told me.",
    ),
    "anger": (
        "It sounds like that made you feel {feeling}, and that's understandable.",
        "I can understand feeling {feeling} after that.",
        "That would leave a lot of people feeling {feeling}.",
        "It makes sense that you felt {feeling}.",
        "I can hear that you were {feeling}. Thank you for telling me.",
    ),
    "shame": (
        "It sounds like you felt {feeling}. Those moments can stay with us.",
        "Feeling {feeling} like that is very human. Thank you for being open about it.",
        "I appreciate you telling me, even though you felt {feeling}.",
        "It takes courage to share something that made you feel {feeling}.",
        "Everyone feels {feeling} sometimes. Thank you for trusting me with it.",
    ),
}

# Family-level naming: each phrase fits every feeling of the family (companion.emotions.FAMILIES),
# e.g. a "sadness" phrase fits sad, lonely, disappointed and heartbroken alike.
FAMILY: dict[str, tuple[str, ...]] = {
    "joy": (  # excited, proud, grateful, impressed, confident, joyful, content
        "What a lovely thing to hear about. I'm glad you told me.",
        "That sounds like a really good moment.",
        "It sounds like that brought you something good. Thank you for sharing it.",
        "That sounds like a bright spot. I'm glad you had it.",
        "I can hear that it was a good thing for you.",
    ),
    "tender": (  # caring, trusting, faithful, sentimental, nostalgic
        "That sounds like something close to your heart.",
        "I can hear how much that means to you.",
        "That sounds like it matters a great deal to you. Thank you for sharing it.",
        "It sounds like there's a lot of warmth in that for you.",
        "That sounds precious. Thank you for letting me hear it.",
    ),
    "anticipation": (  # surprised, hopeful, anticipating, prepared
        "That sounds like quite a moment. Thank you for telling me.",
        "I can hear that it was a moment that stood out for you.",
        "That sounds like a moment worth telling. Thank you.",
        "It sounds like that really had your attention.",
        "Thank you for sharing that moment with me.",
    ),
    "sadness": (  # sad, lonely, disappointed, devastated
        "That sounds really painful. Thank you for telling me.",
        "I'm sorry. That sounds hard to go through.",
        "That sounds like it hurt. I'm glad you could share it with me.",
        "That must have been hard. I'm sorry it happened.",
        "It sounds like that weighed on you. Thank you for sharing it with me.",
    ),
    "fear": (  # afraid, terrified, anxious, apprehensive
        "That sounds really unsettling.",
        "It sounds like that was a worrying time.",
        "That sounds like a lot to have on your mind.",
        "That sounds frightening. Thank you for telling me about it.",
        "That sounds like it put you on edge.",
    ),
    "anger": (  # annoyed, angry, furious, disgusted, jealous
        "That sounds really unpleasant to deal with.",
        "It sounds like that got under your skin, and that's understandable.",
        "That sounds hard to put up with.",
        "I can hear that it really bothered you.",
        "That sounds like it didn't sit right with you, and that makes sense.",
    ),
    "shame": (  # guilty, embarrassed, ashamed
        "That sounds like an uncomfortable moment to look back on.",
        "Those moments can be hard to sit with. Thank you for being open about it.",
        "It takes courage to share something like that.",
        "That sounds like it stayed with you. Thank you for telling me about it.",
        "We all have moments like that. I appreciate you telling me.",
    ),
}

# Valence-level naming: each phrase fits every feeling of the group (companion.emotions.VALENCE),
# so it speaks of how it felt, never of what happened ("hopeful" may be about the future).
VALENCE: dict[str, tuple[str, ...]] = {
    "positive": (  # the joy family, hopeful, eager
        "That sounds good. I'm glad you told me.",
        "It sounds like that put you in a good place.",
        "That's good to hear.",
        "I'm glad there's something good in that for you.",
        "It sounds like that felt good.",
        "I like hearing that. Thank you for sharing it.",
        "That sounds like a good feeling to have.",
        "It's nice to hear you feeling good about this.",
        "That sounds lovely. Thank you for telling me.",
        "That sounds like something to smile about.",
        "It's good to hear something positive.",
        "I'm really pleased to hear that.",
    ),
    "negative": (  # the sadness, fear, anger and shame families
        "That sounds really hard.",
        "That doesn't sound easy. Thank you for telling me.",
        "I'm sorry you had to deal with that.",
        "That sounds like a tough one.",
        "That sounds difficult. I'm glad you could tell me about it.",
        "It sounds like that weighed on you.",
        "That's a hard thing to go through.",
        "That sounds like a lot to deal with.",
        "That can't have been easy.",
        "That sounds like a rough moment. Thank you for telling me.",
        "I'm sorry you went through that.",
        "I can hear that it wasn't a good feeling.",
    ),
}

# Reflecting without naming: said when the model is not reliably right about the feeling, so
# each phrase must fit any feeling, a loss as well as a joy (no praise, no pity).
NEUTRAL: tuple[str, ...] = (
    "Thank you for telling me that.",
    "I'm listening. That sounds like it mattered to you.",
    "I appreciate you sharing that with me.",
    "Thank you for letting me hear it.",
    "I see. It means a lot that you'd share that.",
    "Mm, I hear you.",
    "Thank you. I'm glad you told me.",
    "I'm glad you shared that with me.",
    "That sounds like quite an experience.",
    "Thank you for letting me in on that.",
    "I can tell that stayed with you.",
    "I'm following you. Thank you for explaining.",
    "That's a lot to think about.",
    "Thank you for putting that into words for me.",
    "Thank you for taking the time to tell me.",
    "I can hear how much it meant to you.",
)


@lru_cache(maxsize=1)
def shipped_rule() -> dict[str, Any]:
    return load_rule()


def phrases_for(decision: Decision) -> list[str]:
    """The candidate phrases of a decision, the feeling filled in for exact naming."""
    if decision.level == "exact" and decision.label:
        feeling = FEELING_WORDS[decision.label]
        family = family_of(decision.label) or ""
        return [t.format(feeling=feeling) for t in NAMED[family]]
    if decision.level == "family" and decision.label:
        return list(FAMILY[decision.label])
    if decision.level == "valence" and decision.label:
        return list(VALENCE[decision.label])
    return list(NEUTRAL)


def acknowledgement(
    emotions: Mapping[str, float] | None,
    memory: PhraseMemory,
    rng: random.Random,
    rule: Mapping[str, Any] | None = None,
) -> str:
    """The phrase for what was heard, noted in `memory` so it is not said again soon."""
    return acknowledged(emotions, memory, rng, rule)[0]


def acknowledged(
    emotions: Mapping[str, float] | None,
    memory: PhraseMemory,
    rng: random.Random,
    rule: Mapping[str, Any] | None = None,
) -> tuple[str, Decision]:
    """The phrase and the rule's decision (the level named, for the log)."""
    decision = decide(shipped_rule() if rule is None else rule, emotions)
    if decision.level == "exact" and decision.label:
        templates: tuple[str, ...] = NAMED[family_of(decision.label) or ""]
    else:
        templates = tuple(phrases_for(decision))
    if not memory.fresh(templates) and memory.fresh(NEUTRAL):
        templates = NEUTRAL  # all of this level's phrases said lately: reflect rather than repeat
        decision = Decision("neutral")
    phrase = memory.choose(templates, rng)
    if decision.level == "exact" and decision.label:
        phrase = phrase.format(feeling=FEELING_WORDS[decision.label])
    memory.note(phrase)
    return phrase, decision


def logged(decision: Decision) -> str:
    """An `acknowledged` event's detail: the level named and what it named ("valence:negative",
    "neutral")."""
    return f"{decision.level}:{decision.label}" if decision.label else decision.level
