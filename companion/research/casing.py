"""Names and places by their words and their context, in text without capitals.

A recogniser writes no capitals, and spaCy's small pipeline finds almost no names without
them. So text with no capital letter is given a truecased copy (same length, so spans map
back unchanged) in which names and places the gazetteer knows, and words in a naming or
place context, are capitalised; the NER pipeline then reads the copy. Spans are widened to
the title before a name and, without capitals, to an unknown word next to one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from companion.research.context import ABSTRACT, DETERMINERS, PETS, RELATIONS, ROLES, STOP, at, base
from companion.research.gazetteer import UK_AREAS, Gazetteer
from companion.research.ner import Span
from companion.research.words import TOKEN, word_set

_PERSON_CUES = word_set("casing_person_cues") | ROLES  # relations, titles, naming verbs
# Cues too common to make an English word a name: only unknown words after them.
_WEAK_CUES = frozenset(["with", "for", "our", "poor", "dear"])
# After a title even an ordinary word is a name; after a relation it must be a known name.
_TITLE_CUES = word_set("casing_title_cues")
PLACE_CUES = frozenset(["in", "from", "to", "near", "at", "via", "outside", "around", "visit",
                       "visited"])  # fmt: skip
NOT_PROPER = word_set("casing_not_proper")  # capitalised words that are neither
_MOTION = word_set("casing_motion")
# After "in"/"from" an ordinary word is a place only at a clause's end, and never one of the
# nouns that follow "in" bare.
_CLAUSE_END = word_set("casing_clause_end")
_BARE_NOUNS = word_set("casing_bare_nouns")
# A place that is also a verb's -ing form only after living or working in it.
_LIVING = word_set("casing_living")
_OBJECTS = word_set("casing_objects")  # an English word before one of these is a verb
_NOT_PET_NAMES = word_set("casing_not_pet_names")
_PAST = word_set("casing_past")
_AFTER_SURNAME = word_set("casing_after_surname")
_TITLES = word_set("titles") | _TITLE_CUES | {"cousin", "gran", "nana", "nanna", "nanny", "rev"}


def truecase(text: str, gaz: Gazetteer, common: Callable[[str], bool]) -> tuple[str, list[Span]]:
    """A copy of lower-case `text` with names and places capitalised, and their spans.
    `common(word)` says whether a word is too ordinary to be a name without a cue."""
    chars = list(text)
    spans: list[Span] = []
    found = list(TOKEN.finditer(text))
    words = [base(m.group(0)) for m in found]
    for i, m in enumerate(found):
        word, prev, prev2, nxt = words[i], at(words, i - 1), at(words, i - 2), at(words, i + 1)
        if word == "i":
            chars[m.start()] = "I"
        ordinary = gaz.is_ordinary(word)
        # after "to", a place only on a journey, not "to download"
        journey = prev != "to" or prev2 in _MOTION or "from" in words[max(0, i - 4) : i - 1]
        usable = not common(word) and word not in NOT_PROPER
        person = prev in _PERSON_CUES and usable and len(word) > 2 and (
            not ordinary or prev in _TITLE_CUES
            or word in gaz.people and nxt not in _OBJECTS and prev not in _WEAK_CUES)  # fmt: skip
        place = prev in PLACE_CUES and usable and (
            word in gaz.places and word not in _BARE_NOUNS and (journey or not ordinary)
            or not ordinary and len(word) > 3 and journey)
        plain = (prev in ("in", "from", "near", "to") and journey and word not in NOT_PROPER
                 and word in gaz.place_names and word not in _BARE_NOUNS and word not in STOP
                 and not (prev == "in" and word.endswith("ing") and prev2 not in _LIVING)
                 and not (prev == "in" and word in ABSTRACT)  # living in hope
                 and nxt in _CLAUSE_END | {""})  # fmt: skip
        known = gaz.is_name(word) and not ordinary and usable
        if known or person or place or plain:
            chars[m.start()] = chars[m.start()].upper()
            label = "PLACE" if prev in PLACE_CUES and word not in gaz.people else gaz.label(word)
            spans.append(Span(m.start(), m.start() + len(word), label))
    return "".join(chars), spans


def pet_names(text: str, gaz: Gazetteer) -> list[Span]:
    """The word after a pet's kind ("called" or "named" between), unless it is a verb or
    function word that a story puts there."""
    spans, words = [], list(TOKEN.finditer(text))
    raw = [m.group(0) for m in words]
    for i in [i for i, w in enumerate(raw) if w in PETS]:  # the possessive is no name
        k = i + 2 if at(raw, i + 1) in ("called", "named") else i + 1
        word, after = base(at(raw, k)), at(raw, k + 1)  # past the end, "" (too short)
        # a plural word is no name, unless a verb follows it
        named = after.endswith("ed") or after in _PAST
        if (word not in _NOT_PET_NAMES and word not in STOP and len(word) > 1
                and not word.endswith(("ed", "n't"))
                and (named or not (word.endswith("s") and gaz.is_ordinary(word)
                                   and word not in gaz.people))):  # fmt: skip
            spans.append(Span(words[k].start(), words[k].start() + len(word), "PET"))
    return spans


def widen(
    text: str, spans: list[Span], gaz: Gazetteer, common: Callable[[str], bool]
) -> list[Span]:
    """Names grown to their neighbours: a title before, a capitalised name next to a name in
    typed text and, without capitals, an unknown word next to the name or a known surname
    before what follows a person."""
    words = list(TOKEN.finditer(text))
    low = [base(m.group(0).lower()) for m in words]
    lower = not any(c.isupper() for c in text)

    def near(i: int, gap: str) -> bool:  # an unknown word or, typed, a capitalised name
        w, token = low[i], words[i].group(0)
        if w in _PERSON_CUES or w in NOT_PROPER:
            return False
        if lower:
            return (not gaz.is_ordinary(w) or w in gaz.people) and not common(w) and len(w) > 1
        return gap.isspace() and token[0].isupper() and not token.isupper() and w in gaz.people

    def surname(i: int) -> bool:
        return (low[i] in gaz.people and len(low[i]) > 2 and at(low, i + 1) in _AFTER_SURNAME | {""}
                and low[i] not in NOT_PROPER and low[i] not in _PERSON_CUES)  # fmt: skip

    out = []
    for span in spans:
        start, end = span.start, span.end
        idx = [i for i, m in enumerate(words) if start <= m.start() < end]
        a, b = (idx[0] - 1, idx[-1] + 1) if idx else (-1, len(words))
        if (span.label in ("PERSON", "PET", "PLACE") and a >= 0 and low[a] in _TITLES
                and re.fullmatch(r"\.?,?\s+", text[words[a].end() : start])
                and not (low[a] in RELATIONS and low[max(a - 1, 0)] in DETERMINERS)):
            start, a = words[a].start(), a - 1
        if lower and span.label in ("PERSON", "PLACE") or span.label == "PERSON":
            if b < len(words) and (near(b, text[end : words[b].start()])
                                   or lower and span.label == "PERSON" and surname(b)):  # fmt: skip
                end = words[b].start() + len(low[b])
            if a >= 0 and near(a, text[words[a].end() : start]):
                start = words[a].start()
        out.append(replace(span, start=start, end=end))
    return out


def place_phrases(text: str, gaz: Gazetteer) -> list[Span]:
    """Places of two or three words in text without capitals: a phrase the gazetteer lists,
    one of whose words is no ordinary word or that follows a preposition of place."""
    found = list(TOKEN.finditer(text))
    words = [m.group(0) for m in found]
    spans = []
    for i in range(len(words)):
        prev = at(words, i - 1)
        before = at(words, i - 2) if prev == "the" else prev  # the word before, past a "the"
        cue = before in PLACE_CUES or before == "on"
        for n in (3, 2):
            group = words[i : i + n]
            if len(group) < n or group[0] == "the":  # "the mountain" is a town somewhere
                continue
            phrase = " ".join(group)
            if (phrase in gaz.place_names or "-".join(group) in gaz.place_names) and (
                any(not gaz.is_ordinary(w) for w in group)
                or cue and (phrase in UK_AREAS or prev != "the")
            ):  # the peak district, not the mountain top
                spans.append(Span(found[i].start(), found[i + n - 1].end(), "PLACE"))
                break
    return spans


def typed_names(text: str, gaz: Gazetteer) -> list[Span]:
    """Capitalised words inside a sentence of typed text that the gazetteer knows as names or
    places, or that are no English word (a sentence's first word is capitalised anyway)."""
    spans = []
    for m in TOKEN.finditer(text):
        token, before = m.group(0), text[: m.start()].rstrip()
        word = base(token.lower())
        if (token[0].isupper() and not (token.isupper() and len(token) > 1) and before
                and before[-1] not in ".!?\"'(:;\n" and word not in NOT_PROPER
                and (gaz.is_name(word) or not gaz.is_ordinary(word))):  # fmt: skip
            spans.append(Span(m.start(), m.start() + len(word), gaz.label(word)))
    return spans
