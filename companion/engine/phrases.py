"""The protocol's [acknowledgements]: what the companion says after a story turn, as data.

The wording lives in the protocol file (companion/data/default_protocol.toml ships it); this
module knows only its shape and the rules every study's phrases keep, checked at load: every
emotion, family and valence group has its phrases; at least two different ones per list, so the
variety memory (`engine.variety`) has an alternative; only exact naming says {feeling}; and a
phrase of a broader level names no single feeling, a neutral one not even gladness or sorrow.
A key left out of a protocol file takes the shipped wording.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from companion.emotions import EMOTIONS, FAMILIES, VALENCE
from companion.settings.validate import Table

T = TypeVar("T")
KEYS = ("neutral", "feeling_words", "named", "family", "valence")
# Every list the companion picks from needs this many different phrases.
MIN_WORDINGS = 2
# Words that make a phrase sound glad or sorry: a neutral phrase must fit a loss as well as a joy.
VALENCED = ("good", "great", "lovely", "wonderful", "happy", "pleased", "nice", "something",
            "sorry", "hard", "painful", "sad", "tough", "difficult", "rough", "worry")  # fmt: skip


@dataclass(frozen=True)
class Acknowledgements:
    # How each emotion is named in "you felt {feeling}" ("afraid" -> "scared").
    feeling_words: Mapping[str, str]
    # Exact naming, by the feeling's family: templates with {feeling}.
    named: Mapping[str, tuple[str, ...]]
    # Naming only the family (companion.emotions.FAMILIES): each fits every feeling of it.
    family: Mapping[str, tuple[str, ...]]
    # Naming only the valence group (companion.emotions.VALENCE): each fits every feeling of it.
    valence: Mapping[str, tuple[str, ...]]
    # Reflecting without naming: each fits any feeling.
    neutral: tuple[str, ...]


def words(text: str) -> str:
    """`text` as lower-case words between single spaces, with a space at each end."""
    return " " + " ".join(re.findall(r"[a-z']+", text.lower())) + " "


def parse_acknowledgements(root: Table, shipped: Acknowledgements | None) -> Acknowledgements:
    """The [acknowledgements] table of a protocol; a key left out is `shipped`'s (None: every
    key is required, as in the shipped file itself)."""
    t = root.sub("acknowledgements")
    t.unknown(KEYS)  # first: a misspelt key must not fall back to the shipped wording silently

    def part(key: str, parse: Callable[[], T]) -> T:
        if shipped is not None and key not in t:
            kept: T = getattr(shipped, key)
            return kept
        return parse()

    feeling_words = part("feeling_words", lambda: _feeling_words(t.sub("feeling_words")))
    # What a phrase must not say as a word unless it names the exact feeling.
    names = sorted({words(w).strip() for w in (*EMOTIONS, *feeling_words.values())} - {""})
    return Acknowledgements(
        feeling_words=feeling_words,
        named=part("named", lambda: _groups(t, "named", FAMILIES, ("feeling",), ())),
        family=part("family", lambda: _groups(t, "family", FAMILIES, (), names)),
        valence=part("valence", lambda: _groups(t, "valence", VALENCE, (), names)),
        neutral=part("neutral", lambda: _wordings(t, "neutral", (), [*names, *VALENCED])),
    )


def _feeling_words(t: Table) -> dict[str, str]:
    t.unknown(EMOTIONS)
    return {emotion: t.text(emotion).strip() for emotion in EMOTIONS}


def _groups(
    t: Table, key: str, groups: Mapping[str, object], placeholders: tuple[str, ...],
    unsaid: Sequence[str],
) -> dict[str, tuple[str, ...]]:  # fmt: skip
    sub = t.sub(key)
    sub.unknown(groups)
    return {group: _wordings(sub, group, placeholders, unsaid) for group in groups}


def _wordings(
    t: Table, key: str, placeholders: tuple[str, ...], unsaid: Sequence[str]
) -> tuple[str, ...]:
    """One list of phrases: varied, distinct, each using exactly `placeholders` and saying
    none of `unsaid` (feeling names, glad or sorry words) as a word."""
    phrases = t.unique(key, t.strings(key))
    if len(phrases) < MIN_WORDINGS:
        raise t.fail(key, f"needs at least {MIN_WORDINGS} different phrases, so the companion "
                          "does not say the same one every time; add one")  # fmt: skip
    for phrase in phrases:
        t.template(key, phrase, placeholders)
        used = {f for _, f, _, _ in string.Formatter().parse(phrase) if f is not None}
        for name in placeholders:
            if name not in used:
                raise t.fail(key, f"{phrase!r} must say {{{name}}}: this phrase names it")
        said = next((w for w in unsaid if f" {w} " in words(phrase)), None)
        if said is not None:
            raise t.fail(key, f"{phrase!r} says {said!r}; at this level a phrase must fit "
                              "every feeling it is said for: reword it")  # fmt: skip
    return phrases
