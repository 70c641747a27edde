"""Places named by what they are: "the Isle of Mull", "the Brecon Beacons", "Loch Ness",
"the Leeds and Liverpool Canal", "the Norwegian fjords", typed or as a recogniser writes them.

GeoNames lists towns, not hills, lakes, islands or canals, yet a story about a holiday or a
childhood names them as often. A word that says what kind of place it is ("isle of", "lake",
"canal", "beacons") next to a word that is no ordinary English word (or, typed, capitalised)
makes a place; "the" before it goes with it ("the philippines").
"""

from __future__ import annotations

import re
from dataclasses import replace

from companion.research.context import STOP
from companion.research.gazetteer import Gazetteer
from companion.research.ner import Span, tag
from companion.research.words import pattern, word_set

_KIND_OF, _KIND_NAME, _NAME_KIND, _HEAD, _ORG_HEAD, _INSIDE = (pattern(f"landmarks.{n}") for n in (
    "KIND_OF", "KIND_NAME", "NAME_KIND", "HEAD", "ORG_HEAD", "INSIDE"))
_BEFORE_HEAD, _QUARTER, _VENUE, _PUB, _THE, _KIND_AFTER = (pattern(f"landmarks.{n}") for n in (
    "BEFORE_HEAD", "QUARTER", "VENUE", "PUB", "THE", "KIND_AFTER"))

_WORD = re.compile(r"\S+")
_NOT_A_NAME = STOP | {"north", "south", "east", "west", "upper", "lower", "great", "high"}
# Words that make a kind ordinary rather than a name ("the local hospital", "the train
# station", "primary school"): checked on every name word.
_MODIFIERS = word_set("landmarks_modifiers")
# "at city hospital", "to central station": bare, after a preposition, a kind with a name
# part of ordinary words is still a proper name ("at the city hospital" stays).
_BARE_CUES = word_set("landmarks_bare_cues")
_BARE_HEADS = word_set("landmarks_bare_heads")
_TITLED = frozenset({"st", "saint", "royal", "queen", "king", "prince", "princess"})
_NOT_VENUES = _MODIFIERS | word_set("landmarks_not_venues")


def _named(word: str, lower: bool, gaz: Gazetteer) -> bool:
    """A word that can be the name part: capitalised when typed; in a recogniser's text
    no ordinary English word, or a place GeoNames knows."""
    base = word.lower().removesuffix("'s")
    return base not in _NOT_A_NAME and len(base) > 2 and (
        (not gaz.is_ordinary(base) or base in gaz.places) if lower else word[0].isupper())


def landmarks(text: str, gaz: Gazetteer) -> list[Span]:
    """Places named with their kind, in typed text or a recogniser's."""
    lower = not any(c.isupper() for c in text)
    # the whole match, if each name word in it can be one ("the isle of [mull]", "loch [ness]")
    spans = [Span(*m.span(), "PLACE") for p in (_KIND_OF, _KIND_NAME, _NAME_KIND, _QUARTER)
             for m in p.finditer(text) if all(_named(w, lower, gaz) for w in m.groups() if w)]
    spans += [Span(*m.span(1), "PLACE") for m in _PUB.finditer(text)]
    spans += [Span(*m.span(1), "PLACE") for m in _VENUE.finditer(text)
              if m.group(1).split()[0].lower() not in _NOT_VENUES
              or " " in m.group(1) and m.group(1).split()[0] in ("Queen", "King")]  # fmt: skip
    orgs = tag("org_kind", _headed(text, lower, gaz, _ORG_HEAD, "ORG"))
    return spans + _headed(text, lower, gaz) + orgs


def _headed(text: str, lower: bool, gaz: Gazetteer, kinds: re.Pattern[str] = _HEAD,
            label: str = "PLACE") -> list[Span]:  # fmt: skip
    """Buildings and districts named with their kind: the name words just before the kind,
    as many as can be (typed: capitalised with the kind capitalised too; spoken: at least
    one no English word, two before an organisation's kind, or bare after a preposition)."""
    spans = []
    for h in kinds.finditer(text):
        # up to three words before every kind, so that "kings college hospital" is read at
        # "hospital" and not only at "college"
        if not (before := _BEFORE_HEAD.search(text, max(0, h.start() - 160), h.start())):
            continue
        # a modifier or "and" only between name words ("leeds general", "x and y society")
        kept, between = [], []  # type: tuple[list[re.Match[str]], list[re.Match[str]]]
        for w in reversed(list(_WORD.finditer(text, before.start(), h.start()))):
            base = w.group(0).lower().removesuffix("'s")
            if base in _MODIFIERS or base in _NOT_A_NAME - STOP or base in ("and", "&") and kept:
                between.insert(0, w)
            elif base in STOP or not (lower or base[0] != w[0][0]):
                break
            else:
                kept, between = [w, *between, *kept], []
        if not kept:
            continue
        if not lower:  # "Perry Barr depot" inside a sentence: the name is capitalised
            ok = h[0][0].isupper() or bool(_INSIDE.search(text, 0, kept[0].start()))
        elif (text[: kept[0].start()].split() or [""])[-1] in _BARE_CUES \
                and (h[0].lower() in _BARE_HEADS or label == "ORG" and len(kept) > 1):
            ok = True  # "at city hospital", "to holy cross academy", "from good turn furniture"
        else:
            # not the verb that leads up to it ("walking [around] sf zoo")
            while kept and (kept[0][0] in ("and", "&") or gaz.is_ordinary(kept[0][0])
                            and kept[0][0] not in gaz.places and kept[0][0] not in _TITLED):
                kept.pop(0)
            # GeoNames knows "mine", "gas" and "son" as places: a name word here must be no
            # English word at all ("glasgow", "moseley", "jewellery"), or a saint's or a
            # royal name that makes an institution ("st mary's", "the royal infirmary")
            ok = any(not gaz.is_ordinary(w.group(0).removesuffix("'s")) or w.group(0) in _TITLED
                     for w in kept) or label == "ORG" and len(kept) > 1  # fmt: skip
        if ok:  # (false where the loop above left no word)
            spans.append(Span(kept[0].start(), h.end(), label))
    return spans


def with_places(text: str, spans: list[Span], gaz: Gazetteer) -> list[Span]:
    """`spans` with the named places added: a person found inside one is part of it ("the
    [Norwegian] fjords"), and a place takes the "the" before it ("the philippines")."""
    places = tag("landmarks", landmarks(text, gaz))
    out = []
    for span in spans + places:
        if span.label == "PERSON" and any(p.start <= span.start and span.end <= p.end
                                          for p in places):  # fmt: skip
            continue
        named = span.label in ("PERSON", "PLACE", "ORG") and not text.endswith("'s", 0, span.end)
        if named and (kind := _KIND_AFTER.match(text, span.end)):
            span = replace(span, end=kind.end(), label="PLACE")
        if span.label in ("PLACE", "ORG") and (m := _THE.search(text, 0, span.start)):
            span = replace(span, start=m.start())
        out.append(span)
    return out
