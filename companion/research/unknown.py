"""Names by what is not English: a recall policy for the words no context rule reads.

A recogniser writes only words of its vocabulary, so in lower-case speech a word that is no
English word (Webster's with its inflections, prefixes and compounds) and not among the most
frequent English words is, in a story, almost always a name, and is redacted wherever it
stands; so is a listed name or place too rare as a word. This spends part of the
over-redaction budget on purpose (unknown brands and typos go too).

The frequencies are wordfreq's small English list (`wordfreq` 3.1.1, Apache-2.0 code; data
CC BY-SA 4.0), read directly from its pinned, sha256-checked data file (no wordfreq import).
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable
from functools import lru_cache

from companion.research.casing import NOT_PROPER, PLACE_CUES
from companion.research.context import STOP, base
from companion.research.gazetteer import Gazetteer, pinned
from companion.research.ner import NerUnavailable, Span
from companion.research.words import THRESHOLDS, TOKEN, pattern, word_set

FREQUENCIES = ("wordfreq", "data/small_en.msgpack.gz")
FREQUENCIES_SHA256 = "f94a80cba6a3857b260d0666b5432bb7ea9b85315574dee9c306e87f61298247"
# Zipf scale (log10 of uses per billion words): 3 is once per million words.
NAME_ZIPF = THRESHOLDS["rare_name_zipf"]  # a listed name that is a rarer English word: a name
UNKNOWN_ZIPF = THRESHOLDS["english_zipf"]  # a word no dictionary knows this frequent is English
CANDIDATE_ZIPF = THRESHOLDS["candidate_zipf"]  # a first name this frequent as a word stays

_PREFIXES = ("co", "re", "un", "non", "over", "out", "mis", "pre", "under", "super")
_JOINS = word_set("spelled_joins")  # said between the letters spelled out
_SPELLED, _OPENER = pattern("unknown.SPELLED"), pattern("unknown.OPENER")


@lru_cache(maxsize=1)
def load_frequencies() -> dict[str, float]:
    """word -> Zipf frequency for the English words of zipf >= 3, checked and read once."""
    raw = pinned(*FREQUENCIES, FREQUENCIES_SHA256, "word frequencies")
    # wordfreq's "cB" format: a header, then one list of words per centibel below 1.
    import msgpack  # a dependency of wordfreq (the extra), so not imported before here

    packed = msgpack.unpackb(gzip.decompress(raw), raw=False)
    return {w: 9 - i / 100 for i, bucket in enumerate(packed[1:]) for w in bucket}


def rare(word: str) -> bool:
    """An English word rarer than NAME_ZIPF, or none; False without the word list."""
    try:
        return load_frequencies().get(word, 0.0) < NAME_ZIPF
    except NerUnavailable:
        return False


def english(word: str, gaz: Gazetteer, freq: dict[str, float]) -> bool:
    """An English word: in Webster's (inflected), the plural of a frequent word, a prefixed
    form of one, a compound of two that the frequency list holds (names rarely split so), or
    frequent in today's English whatever the dictionary says."""
    stems = (word, word.removesuffix("s"), word.removesuffix("es"))
    rests = (word[len(prefix) :].lstrip("-") for prefix in _PREFIXES if word.startswith(prefix))
    return (gaz.is_ordinary(word) or any(freq.get(w, 0.0) >= UNKNOWN_ZIPF for w in stems)
            or any(len(rest) > 3 and english(rest, gaz, freq) for rest in rests)
            or word in freq and any(gaz.is_ordinary(word[:i])
                                    and gaz.is_ordinary(word[i:].lstrip("-"))
                                    for i in range(3, len(word) - 2)))  # fmt: skip


def _candidate(word: str) -> bool:
    return len(word) > 2 and word not in STOP and word not in NOT_PROPER


def unknown_names(text: str, gaz: Gazetteer, freq: dict[str, float], common: Callable[[str], bool]
                  ) -> list[Span]:  # fmt: skip
    """Words of lower-case `text` that are no English word, or a listed name or place too
    rare as a word; a PLACE when the gazetteer lists it as one or a place cue precedes it."""
    spans, tokens = [], list(TOKEN.finditer(text))
    for m, prev in zip(tokens, ["", *(t.group(0) for t in tokens)], strict=False):
        word = base(m.group(0)).strip("'-")
        rare_name = gaz.is_name(word) and freq.get(word, 0.0) < NAME_ZIPF
        if _candidate(word) and not common(word) and (rare_name or not english(word, gaz, freq)):
            place = word in gaz.place_names or prev in PLACE_CUES and word not in gaz.people
            spans.append(Span(m.start(), m.start() + len(word), "PLACE" if place else "PERSON"))
    return spans


def openers(text: str, gaz: Gazetteer, freq: dict[str, float], common: Callable[[str], bool]
            ) -> list[Span]:  # fmt: skip
    """Typed, the capitalised word opening a sentence that is no English word: a name, since
    a sentence's first word is capitalised whatever it is (elsewhere `typed_names` reads it)."""
    words = ((m, base(m.group(1).lower())) for m in _OPENER.finditer(text))
    return [Span(m.start(1), m.start(1) + len(w), "PLACE" if w in gaz.place_names else "PERSON")
            for m, w in words if _candidate(w) and not m.group(1).isupper()  # "BIC": no name
            and not common(w) and not english(w, gaz, freq)]  # fmt: skip


def spelled(text: str, names: list[Span]) -> list[Span]:
    """What a speaker spells letter by letter: a run with three letters or more, with the
    digits, "dot"s and "at"s inside it; and initials read before a name. Never "a" or "i"
    alone before a word."""
    tokens, spans = list(TOKEN.finditer(text)), []
    i = 0
    while i < len(tokens):
        j = i
        while j < len(tokens) and _SPELLED.fullmatch(tokens[j].group(0)):
            j += 1
        while j > i and tokens[j - 1].group(0) in _JOINS:  # the run ends before "at gmail"
            j -= 1
        run = [t.group(0) for t in tokens[i:j]]
        if sum(len(t) == 1 for t in run) >= 3 and len(run[0]) == 1:
            spans.append(Span(tokens[i].start(), tokens[j - 1].end(), "PERSON"))
            i = j
        else:
            i += 1
    starts = {s.start for s in names if s.label in ("PERSON", "PLACE")}  # a guess either way
    for k, tok in enumerate(tokens):
        first = k
        while tok.start() in starts and first and re.fullmatch(r"[b-hj-z]", tokens[first - 1][0]):
            first -= 1
        if first < k:
            spans.append(Span(tokens[first].start(), tok.start() - 1, "PERSON"))
    return spans


def name_candidates(view: str, gaz: Gazetteer, freq: dict[str, float]) -> str:
    """`view` with census first names that are also English words capitalised, so the NER
    pipeline judges them by their context; only its entities count."""
    chars = list(view)
    for m in TOKEN.finditer(view):
        word = m.group(0)
        if word in gaz.first and _candidate(word) and freq.get(word, 0.0) < CANDIDATE_ZIPF:
            chars[m.start()] = chars[m.start()].upper()
    return "".join(chars)
