"""Addresses and organisations, typed or as a recogniser writes them.

A street is found by its kind after the name ("Quarry Lane"), before it ("rue des Martyrs",
"ul. Mickiewicza") or inside one word ("Kastanienallee", "Prinsengracht"); it is then widened
to what locates a home on it: the house number on either side, the flat, suite or unit, a
floor. Postcodes are read by each country's shape, the bare five digits only where a city,
a state or a house number stands by them. An organisation is a name with a company suffix,
or the name after "work for", "employed by" ("i work for dunmore haulage").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from itertools import islice

from companion.research.context import RELATIONS, STOP
from companion.research.gazetteer import Gazetteer
from companion.research.ner import Span
from companion.research.words import WORDS, part, pattern, word_set

# The patterns are in companion/data/patterns.toml ([addresses]).
_PREFIXED, _COMPOUND, _CORNER, _LEFT, _RIGHT, _TOWN = (pattern(f"addresses.{n}") for n in (
    "PREFIXED", "COMPOUND", "CORNER", "LEFT", "RIGHT", "TOWN"))
_PREFIXES = word_set("street_prefixes")  # a street's kind before its name, English has none


def _near(text: str, span: Span, gaz: Gazetteer | None) -> Span:
    """A street grown over its number and flat or floor on either side, and over the town
    the gazetteer knows after it (a postcode read out between)."""
    start, end = span.start, span.end
    if m := _LEFT.search(text, max(0, start - 80), start):
        start = m.start()
    if m := _RIGHT.match(text, end):
        end = m.end()
    if gaz is not None and (m := _TOWN.match(text, end)):
        words = list(_WORD.finditer(text, m.end(), m.end() + 60))[:3]
        # the most of the three words after it that name a town
        end = next((w.end() for w in reversed(words)
                    if text[words[0].start() : w.end()].lower() in gaz.place_names), end)
    return Span(start, end, "ADDRESS")


def foreign_streets(text: str, nameish: Callable[[str], bool] | None) -> list[Span]:
    """Streets named by a kind before or inside the name, and the two of a corner."""
    lower = not any(c.isupper() for c in text)

    def named(word: str, kind: str = "") -> bool:  # typed: capitalised; said: no ordinary
        if not lower:  # word, or any but a function word after a kind no English shares
            return word[0].isupper()
        return nameish is not None and nameish(word) or kind in _PREFIXES and word not in STOP

    spans = [Span(*m.span(), "ADDRESS") for m in _PREFIXED.finditer(text)
             if named(m[1], m[0].split()[0].rstrip("."))]  # fmt: skip
    spans += [Span(*m.span(), "ADDRESS") for m in _COMPOUND.finditer(text)
              if named(m[0].split()[0])]  # fmt: skip
    return spans + [Span(*m.span(g), "ADDRESS") for m in _CORNER.finditer(text)
                    for g in (1, 2) if named(m[g])]  # fmt: skip


def widened(text: str, found: list[Span], gaz: Gazetteer | None = None) -> list[Span]:
    """Every street found so far, grown over the number and unit around it."""
    return [_near(text, s, gaz) for s in found if s.label == "ADDRESS"]


_SUFFIXED, _SHOP, _CUE, _KIND_FIRST, _WORD, _STRONG = (pattern(f"addresses.{n}") for n in (
    "SUFFIXED", "SHOP", "CUE", "KIND_FIRST", "ORG_WORD", "STRONG_CUE"))
# A suffix written in capitals is said letter by letter ("l l c", "d a c").
_CAPS = (s.replace(".", "") for s in WORDS["org_suffixes"] if s.replace(".", "").isupper())
_SPELLED = {" ".join(w.lower()) for w in _CAPS if 2 <= len(w) <= 4 and w.isalpha()}
_SAID_SUFFIX = re.compile(rf"{part('addresses.SAID_SUFFIX')}|(?<=\s)(?:{'|'.join(_SPELLED)})\b")
_STOP = STOP - {"and", "of"} | word_set("org_stops")
_KINDS = word_set("org_heads", "place_heads", "org_suffixes_said") | {"group", "services"}
_JOINS = ("and", "of", "&", "de", "del", "la")


def _run(text: str, words: Iterable[re.Match[str]], lower: bool) -> list[re.Match[str]]:
    """The name words of `words` (in reading order from the cue): up to a function word,
    a punctuation mark or, typed, a word without a capital."""
    kept: list[re.Match[str]] = []
    for w in islice(words, 6):
        base = w.group(0).lower()
        gap = text[kept[-1].end() : w.start()] if kept else ""
        if base in _STOP or gap.strip() or not (lower or w[0][0].isupper() or base in _JOINS):
            break
        kept.append(w)
    return kept


def organisations(text: str, gaz: Gazetteer) -> list[Span]:
    """ORG spans: typed, a capitalised name with a company suffix or a shop's "X's"; typed
    or said, the name words after a cue or a kind said first, or before a suffix, when one
    is no ordinary word or the last is the organisation's kind."""
    lower = not any(c.isupper() for c in text)
    spans = [] if lower else [Span(*m.span(), "ORG") for p in (_SUFFIXED, _SHOP)
                              for m in p.finditer(text)]  # fmt: skip
    if lower:
        for m in _SAID_SUFFIX.finditer(text):
            before = _run(text, list(_WORD.finditer(text, 0, m.start()))[::-1][:5], True)
            if len(before) > 1 or before and not gaz.is_ordinary(before[0].group(0)):
                spans.append(Span(before[-1].start(), m.end(), "ORG"))
    # the name words after a cue, or a kind said first and two words ("liceo mario rossi");
    # after a cue only a firm follows, any words but a person or a kind alone
    for p, how in ((_CUE, "cue"), (_KIND_FIRST, "first"), (_STRONG, "strong")):
        for m in p.finditer(text):
            start = m.start() if how == "first" else m.end()
            words = _run(text, _WORD.finditer(text, start), lower)
            while words and words[-1].group(0).lower() in _JOINS:
                words.pop()
            low = [w.group(0).lower().removesuffix("'s") for w in words]
            rare = any(not gaz.is_ordinary(w) for w in low)
            kind = len(words) > 1 and low[-1] in _KINDS
            plain = how == "strong" and not set(low) <= _KINDS | RELATIONS
            if words and (rare or kind or plain or how == "first" and len(words) > 2):
                spans.append(Span(words[0].start(), words[-1].end(), "ORG"))
    return spans
