"""Acknowledging what the participant felt. Pure: emotion estimate in, phrase out.

The calibrated rule (`ackrule`, thresholds in companion/data/acknowledge_rule.json) decides the
level: name the exact feeling where the model is reliably right, name only the feeling's family
in words that fit every feeling of that family where only the family is reliable, only whether
it was pleasant or painful (valence, in words that fit every feeling of that group) where only
that is reliable, otherwise reflect without naming. Among the phrases of that level the
freshest is chosen (`variety`): none said twice in a session, none again within the
protocol's window while alternatives remain. The wording is the protocol's [acknowledgements]
(`engine.phrases`; shipped in companion/data/default_protocol.toml), never code.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from companion.emotions import family_of
from companion.engine.ackrule import Decision, decide, load_rule
from companion.engine.phrases import Acknowledgements
from companion.engine.protocol import shipped_protocol
from companion.engine.variety import PhraseMemory


def shipped_phrases() -> Acknowledgements:
    """The shipped protocol's [acknowledgements]."""
    return shipped_protocol().acknowledgements


@lru_cache(maxsize=1)
def shipped_rule() -> dict[str, Any]:
    return load_rule()


def phrases_for(decision: Decision, phrases: Acknowledgements | None = None) -> list[str]:
    """The candidate phrases of a decision, the feeling filled in for exact naming."""
    phrases = phrases or shipped_phrases()
    if decision.level == "exact" and decision.label:
        return [t.format(feeling=phrases.feeling_words[decision.label])
                for t in _templates(decision, phrases)]  # fmt: skip
    return [t.format() for t in _templates(decision, phrases)]


def _templates(decision: Decision, phrases: Acknowledgements) -> tuple[str, ...]:
    """The phrases of a decision's level and label, as written ({feeling} unfilled)."""
    if decision.level == "exact" and decision.label:
        return phrases.named[family_of(decision.label) or ""]
    if decision.level == "family" and decision.label:
        return phrases.family[decision.label]
    if decision.level == "valence" and decision.label:
        return phrases.valence[decision.label]
    return phrases.neutral


def acknowledgement(
    emotions: Mapping[str, float] | None,
    memory: PhraseMemory,
    rng: random.Random,
    rule: Mapping[str, Any] | None = None,
    phrases: Acknowledgements | None = None,
) -> str:
    """The phrase for what was heard, noted in `memory` so it is not said again soon."""
    return acknowledged(emotions, memory, rng, rule, phrases)[0]


def acknowledged(
    emotions: Mapping[str, float] | None,
    memory: PhraseMemory,
    rng: random.Random,
    rule: Mapping[str, Any] | None = None,
    phrases: Acknowledgements | None = None,
) -> tuple[str, Decision]:
    """The phrase and the rule's decision (the level named, for the log). `phrases`: the
    protocol's [acknowledgements]; None = the shipped ones."""
    phrases = phrases or shipped_phrases()
    decision = decide(shipped_rule() if rule is None else rule, emotions)
    templates = _templates(decision, phrases)
    if not memory.fresh(templates) and memory.fresh(phrases.neutral):
        templates = phrases.neutral  # all of this level's phrases said lately: reflect instead
        decision = Decision("neutral")
    phrase = memory.choose(templates, rng)
    if decision.level == "exact" and decision.label:
        phrase = phrase.format(feeling=phrases.feeling_words[decision.label])
    else:
        phrase = phrase.format()  # {{ and }} are literal braces, as in every protocol text
    memory.note(phrase)
    return phrase, decision


def logged(decision: Decision) -> str:
    """An `acknowledged` event's detail: the level named and what it named ("valence:negative",
    "neutral")."""
    return f"{decision.level}:{decision.label}" if decision.label else decision.level
