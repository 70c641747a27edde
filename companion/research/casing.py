"""Names and places by their words and their context, for text with and without capitals.

A recogniser writes no capitals, and spaCy's small pipeline finds almost no names without
them. So text with no capital letter is given a truecased copy (same length, so spans map
back unchanged) in which names and places the gazetteer knows, and words in a naming
context ("my friend X", "mr X", "me and X"), are capitalised; the NER pipeline and the
case-sensitive rules then read the copy. In typed text, a capitalised word inside a
sentence that the gazetteer knows as a name or place is redacted even when spaCy missed it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from companion.research.context import PETS as _PETS
from companion.research.context import ROLES, STOP
from companion.research.gazetteer import UK_AREAS, Gazetteer
from companion.research.ner import Span, tag
from companion.research.words import TOKEN, word_set


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_WORD = TOKEN
# Words before a name: relations, titles, naming verbs (lower case; the text has no capitals).
_PERSON_CUES = (
    word_set("casing_person_cues")
    | ROLES
)
# Cues too common to make an English word a name ("with cancer"): only unknown words.
_WEAK_CUES = _set("with for our poor dear")
# After a title even an ordinary word is a name ("mr brown", "mister pickwick"); after a
# relation it must be a known name ("my son keeps" is no name, "my son mark" is).
_TITLE_CUES = word_set("casing_title_cues")
_PLACE_CUES = _set("in from to near at via outside around visit visited")
# Capitalised words that are neither names nor places (typed text).
_NOT_PROPER = word_set("casing_not_proper")


_MONTHS = _set("april may june july august")  # the months that are also first names
_MOTION = word_set("casing_motion")
# After "in"/"from" an ordinary word is a place it names ("in bath", "in reading and") only
# at a clause's end, and never one of the nouns that follow "in" bare ("in bed", "in time").
_CLAUSE_END = word_set("casing_clause_end")
_BARE_NOUNS = word_set("casing_bare_nouns")
_IN_IDIOMS = _set("hope")  # "we live in hope"
# A place that is also a verb's -ing form ("reading", "barking") only after living or working
# in it: "studying in reading", not "interested in reading".
_LIVING = word_set("casing_living")
_OBJECTS = word_set("casing_objects")


def _base(word: str) -> str:
    word = word.lower()
    return word[:-2] if word.endswith("'s") else word


def truecase(text: str, gaz: Gazetteer, common: Callable[[str], bool]) -> tuple[str, list[Span]]:
    """A copy of lower-case `text` with names and places capitalised, and their spans.
    `common(word)` says whether a word is too ordinary to be a name without a cue."""
    chars = list(text)
    spans: list[Span] = []
    prev = prev2 = ""
    found = list(_WORD.finditer(text))
    for i, m in enumerate(found):
        word = _base(m.group(0))
        # "my friend stole my laptop": an English word before an object is a verb
        verb = gaz.is_ordinary(word) and i + 1 < len(found) and found[i + 1].group(0) in _OBJECTS
        if word == "i":
            chars[m.start()] = "I"
        cue = prev in _PERSON_CUES or (prev == "and" and prev2 == "me")
        name = gaz.is_name(word) and not gaz.is_ordinary(word) and not common(word)
        if (
            cue
            and not common(word)
            and len(word) > 2
            and word not in _NOT_PROPER
            and (
                not gaz.is_ordinary(word)
                or word in gaz.people
                and not verb
                and prev not in _WEAK_CUES
                or prev in _TITLE_CUES
            )
            or (
                prev in _PLACE_CUES
                and (
                    word in gaz.places
                    and word not in _BARE_NOUNS
                    and (prev != "to" or not gaz.is_ordinary(word) or prev2 in _MOTION)
                    or not gaz.is_ordinary(word)
                    and len(word) > 3
                    and (prev != "to" or prev2 in _MOTION or _from_before(found, i))
                )  # not "to download"
                and word not in _NOT_PROPER
                and not common(word)
            )
        ):
            name = True
        titled = prev in _TITLE_CUES and word in _MONTHS  # "auntie june", "aunt april"
        if _plain_place(found, i, gaz) or titled:
            name = True
        if name and (word not in _NOT_PROPER or titled):
            chars[m.start()] = chars[m.start()].upper()
            label = gaz.label(word)
            if prev in _PLACE_CUES and word not in gaz.people:  # "to lanzarote", unknown
                label = "PLACE"
            spans.append(Span(m.start(), m.start() + len(word), label))
        prev2, prev = prev, word
    return "".join(chars), spans


def _from_before(found: list[re.Match[str]], i: int) -> bool:
    """ "from holyhead to dun laoghaire": a journey's end after its start."""
    return any(m.group(0) == "from" for m in found[max(0, i - 4) : i - 1])


def _plain_place(found: list[re.Match[str]], i: int, gaz: Gazetteer) -> bool:
    """A GeoNames place that is also an English word, after "in"/"from"/"near" (or "to"
    after a journey) and at a clause's end: "in bath", "moved to bath in somerset"."""
    word = found[i].group(0)
    prev = found[i - 1].group(0) if i else ""
    prev2 = found[i - 2].group(0) if i > 1 else ""
    nxt = found[i + 1].group(0) if i + 1 < len(found) else ""
    cue = prev in ("in", "from", "near") or prev == "to" and (
        prev2 in _MOTION or _from_before(found, i))  # fmt: skip
    return (cue and word in gaz.place_names and word not in _BARE_NOUNS and word not in STOP
            and not (prev == "in" and word in _IN_IDIOMS)
            and not (prev == "in" and word.endswith("ing") and prev2 not in _LIVING)
            and word not in _NOT_PROPER and (not nxt or nxt in _CLAUSE_END))  # fmt: skip


# After "our dog": words that are not its name (verbs and function words a story puts there).
_NOT_PET_NAMES = word_set("casing_not_pet_names")
# "we had sooty the rabbit", "they got biscuit the dog": having, losing or naming a pet
# before its name and its kind.
_HAVING = word_set("casing_having")
_PAST = word_set("casing_past")
_TITLES = re.compile(
    r"\b(?i:mr|mrs|ms|miss|mx|dr|mister|missus|auntie|aunt|uncle|grandma|grandpa|grandad|"
    r"granddad|granny|nan|nana|reverend|rev|sir|dame|lady|lord)\.?,?\s+$"
)


def pet_names(text: str, gaz: Gazetteer) -> list[Span]:
    """The word after "our dog" / "the cat called" in text without capitals, unless it is a
    verb or function word that a story puts there."""
    spans, words = [], list(_WORD.finditer(text))
    for i, m in enumerate(words):
        if m.group(0) not in _PETS:  # "the dog's tail" is no name
            continue
        if i >= 3 and words[i - 1].group(0) == "the" and words[i - 3].group(0) in _HAVING:
            name = words[i - 2]
            if name.group(0) not in STOP and name.group(0) not in _NOT_PET_NAMES:
                spans.append(Span(name.start(), name.end(), "PET"))
        if i + 1 == len(words):
            continue
        nxt = words[i + 1]
        if nxt.group(0) in ("called", "named") and i + 2 < len(words):
            nxt = words[i + 2]
        word = _base(nxt.group(0))
        after = text[nxt.end() :].split(maxsplit=1)
        # "the hamster crumbs escaped": a verb right after shows the -s word is its name
        named = bool(after) and (after[0].endswith("ed") or after[0] in _PAST)
        if (
            word not in _NOT_PET_NAMES
            and word not in STOP
            and not word.endswith(("ed", "n't"))
            and (
                named
                or not (word.endswith("s") and gaz.is_ordinary(word) and word not in gaz.people)
            )
            and len(word) > 1
        ):  # "our dog keeps", "the cat hasn't"
            spans.append(Span(nxt.start(), nxt.start() + len(word), "PET"))
    return spans


def widen(
    text: str, spans: list[Span], gaz: Gazetteer, common: Callable[[str], bool]
) -> list[Span]:
    """Names grown to their neighbours: a title before ("Dr Siddiqui"), and in text without
    capitals an unknown word next to a name ("olwen baptiste"), or before "and I"."""
    words = list(_WORD.finditer(text))
    lower = not any(c.isupper() for c in text)

    def unknown(i: int) -> bool:
        w = _base(words[i].group(0))
        return (0 <= i < len(words) and (not gaz.is_ordinary(w) or w in gaz.people)
                and not common(w) and w not in _PERSON_CUES
                and w not in _NOT_PROPER and len(w) > 1)  # fmt: skip

    def surname(i: int) -> bool:  # "my friend mark cook from the club": a surname, however common
        w = _base(words[i].group(0)) if i < len(words) else ""
        nxt = words[i + 1].group(0) if i + 1 < len(words) else ""
        return (w in gaz.people and w not in _PERSON_CUES and w not in _NOT_PROPER
                and len(w) > 2 and (nxt in _AFTER_SURNAME or i + 1 == len(words)))  # fmt: skip

    if lower:  # "siobhan and declan", "ranjit and gurpreet": names joined by "and"
        spans = spans + tag("joined", _joined(words, spans, unknown))
    out = []
    for span in spans:
        start, end = span.start, span.end
        if span.label in ("PERSON", "PET") and (t := _TITLES.search(text[:start])):
            start = t.start()
        elif span.label == "PERSON" and (t := _BARE_RELATION.search(text[:start])):
            start = t.start(1)  # "a card from cousin Astrid": the relation used as a title
        if lower and span.label == "PLACE":  # "new [york]", "north [berwick]"
            before = [m for m in words if m.end() <= start]
            if before and before[-1].group(0) in _PLACE_PREFIX:
                start = before[-1].start()
        if not lower and span.label == "PERSON":  # "Winifred [Price]", "[Mateusz] Nowak"
            idx = [i for i, m in enumerate(words) if start <= m.start() < end]
            if idx and idx[0] > 0:
                nb = words[idx[0] - 1]
                if _capital_name(nb, text[nb.end() : start], gaz):
                    start = nb.start()
            if idx and idx[-1] + 1 < len(words):
                nb = words[idx[-1] + 1]
                if _capital_name(nb, text[end : nb.start()], gaz):
                    end = nb.end()
        if lower and span.label in ("PERSON", "PLACE"):
            idx = [i for i, m in enumerate(words) if start <= m.start() < end]
            if (
                idx
                and idx[-1] + 1 < len(words)
                and (unknown(idx[-1] + 1) or span.label == "PERSON" and surname(idx[-1] + 1))
            ):
                end = words[idx[-1] + 1].start() + len(_base(words[idx[-1] + 1].group(0)))
            if idx and idx[0] > 0 and unknown(idx[0] - 1):
                start = min(start, words[idx[0] - 1].start())
        out.append(replace(span, start=start, end=end))
    return out


_BARE_RELATION = re.compile(
    r"(?:^|\b(?!(?i:my|our|his|her|their|your|a|the|an)\b)[\w']+\s+)"
    r"((?i:cousin|grandma|grandpa|granny|grandad|nana|nanna|nanny|gran|sister|brother)\s+)$"
)


def _joined(words: list[re.Match[str]], spans: list[Span], nameish: Callable[[int], bool]
            ) -> list[Span]:  # fmt: skip
    """The word on the other side of "and" from a name, when it may be a name too."""
    starts = {s.start: s for s in spans if s.label == "PERSON"}
    ends = {s.end for s in spans if s.label == "PERSON"}
    out = []
    for i in range(1, len(words) - 1):
        if words[i].group(0) != "and":
            continue
        before, after = words[i - 1], words[i + 1]
        end_before = before.start() + len(_base(before.group(0)))
        if end_before in ends and nameish(i + 1) and after.start() not in starts:
            out.append(Span(after.start(), after.start() + len(_base(after.group(0))), "PERSON"))
        if after.start() in starts and nameish(i - 1) and end_before not in ends:
            out.append(Span(before.start(), end_before, "PERSON"))
    return out


def _capital_name(m: re.Match[str], gap: str, gaz: Gazetteer) -> bool:
    """A capitalised word next to a name (only spaces between) that is a name too."""
    word, base = m.group(0), _base(m.group(0))
    return (gap.isspace() and word[0].isupper() and base in gaz.people
            and base not in _NOT_PROPER and not word.isupper()
            and base not in _PERSON_CUES)  # fmt: skip


_AFTER_SURNAME = word_set("casing_after_surname")
_PLACE_PREFIX = word_set("casing_place_prefix")  # fmt: skip


def place_phrases(text: str, gaz: Gazetteer) -> list[Span]:
    """Places of two or three words in text without capitals ("new zealand", "stoke on
    trent", "isle of wight"): a phrase the gazetteer lists, one of whose words is no ordinary
    word or that follows a preposition of place."""
    words = list(_WORD.finditer(text))
    spans = []
    for i in range(len(words)):
        for n in (3, 2):
            group = [m.group(0) for m in words[i : i + n]]
            if len(group) < n or group[0] == "the":  # "the mountain" is a town somewhere
                continue
            if (" ".join(group) in gaz.place_names or "-".join(group) in gaz.place_names) and (
                any(not gaz.is_ordinary(w) for w in group)
                or _after_cue([m.group(0) for m in words[max(0, i - 2) : i]])
                and (" ".join(group) in UK_AREAS or words[i - 1].group(0) != "the")
            ):  # "up to the peak district", not "to the mountain top"
                spans.append(Span(words[i].start(), words[i + n - 1].end(), "PLACE"))
                break
    return spans


def _after_cue(before: list[str]) -> bool:
    """The words before are a preposition of place, with or without "the"."""
    if before and before[-1] == "the":
        before = before[:-1]
    return bool(before) and (before[-1] in _PLACE_CUES or before[-1] == "on")


_FOLLOWS_PERSON = re.compile(
    r"(?:'s)?\s+(?:and (?:I|me)\b|from\b|said|says|rang|rings|phoned|came|comes|told|tells|"
    r"popped|next door|who\b|has been|had a|passed away|died)"
)


def typed_names(text: str, gaz: Gazetteer) -> list[Span]:
    """Capitalised words inside a sentence that the gazetteer knows as names or places, or
    that are no English word."""
    spans = []
    for m in _WORD.finditer(text):
        word = m.group(0)
        if not word[0].isupper() or word.isupper() and len(word) > 1:
            continue
        before = text[: m.start()].rstrip()
        base = _base(word)
        if not before or before[-1] in ".!?\"'(:;\n":
            # a sentence's first word is capitalised anyway: a name when it is no word, or a
            # first name before what follows a person ("Joy and I", "Dot from next door")
            after = text[m.end() :]
            if (gaz.is_name(base) and not gaz.is_ordinary(base) or base in gaz.first
                    and _FOLLOWS_PERSON.match(after)) and base not in _NOT_PROPER:  # fmt: skip
                spans.append(Span(m.start(), m.start() + len(base), gaz.label(base)))
            continue
        if base in _NOT_PROPER or not (gaz.is_name(base) or not gaz.is_ordinary(base)):
            continue  # known as a name or place, or no English word at all ("Oduya")
        spans.append(Span(m.start(), m.start() + len(base), gaz.label(base)))
    return spans
