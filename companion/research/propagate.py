"""A name found once is a name wherever the same participant says it again ("my friend
rose", later "rose came round"): the words of every PERSON and PET span of an export are
redacted in all its other texts too (and in later batches: `Redactor.propagated`) when they
can be told from ordinary words: no English word, a census first name that is not among the
most frequent words ("rose", "grant" spread; "will", "hope" do not), a rare word found as a
name, or a pet's name that is a rare word ("pickle"). A name that is a frequent word ("hope",
"bill") spreads only where a name stands: opening a clause, before what a person does.
Months, weekdays and a surname's particles ("van", "de") never spread.
"""

from __future__ import annotations

import re

from companion.research.gazetteer import Gazetteer
from companion.research.ner import Span
from companion.research.words import THRESHOLDS, TOKEN, part, word_set

NAME_ZIPF = THRESHOLDS["spread_name_zipf"]  # wordfreq Zipf: "rose" 4.8 spreads, "hope" 5.4 not
RARE_ZIPF = THRESHOLDS["spread_rare_zipf"]  # any word found as a name: "rowan" 3.3, not "brook"
PET_ZIPF = THRESHOLDS["spread_pet_zipf"]  # "pickle" 3.5 spreads; "buddy" 4.3 does not
_NEVER = word_set("months", "weekdays", "surname_particles")  # "van": a word of many names
_NEVER_A_NAME = _NEVER | word_set("context_stop")  # nor, where a name stands, a function word
# Where a frequent word is a name: opening a clause, then what a person does.
_OPENING, _DOES = part("propagate.OPENING"), part("propagate.DOES")


def spreads(word: str, label: str, gaz: Gazetteer, freq: dict[str, float]) -> bool:
    """May `word`, found in a `label` span, be redacted wherever else it is said?"""
    if len(word) < 3 or word in _NEVER:
        return False
    zipf = freq.get(word, 0.0)
    if not gaz.is_ordinary(word) and zipf < NAME_ZIPF:
        return True
    if label == "PET":
        return zipf < PET_ZIPF
    # a rare English word found as a person's name ("gruff", "rowan") is that person here
    return label == "PERSON" and (word in gaz.first and zipf < NAME_ZIPF or zipf < RARE_ZIPF)


def propagate(texts: list[str], found: list[list[Span]], known: dict[str, bool],
              gaz: Gazetteer, freq: dict[str, float]) -> list[list[Span]]:  # fmt: skip
    """`found` with every other mention of a spreading name added (as its span's label);
    `known` (the export's names so far: word -> spreads anywhere) grows by this batch's."""
    labels: dict[str, str] = {}
    for text, spans in zip(texts, found, strict=True):
        for span in (s for s in spans if s.label in ("PERSON", "PET")):
            for m in TOKEN.finditer(text[span.start : span.end].lower()):
                word = m.group(0).rstrip("'-").removesuffix("'s")
                if spreads(word, span.label, gaz, freq):
                    labels.setdefault(word, span.label)
                elif (word in gaz.first or span.label == "PET") and len(word) > 2 \
                        and word not in _NEVER_A_NAME:  # fmt: skip
                    known.setdefault(word, False)
    known.update(dict.fromkeys(labels, True))
    anywhere, at_names = ("|".join(sorted(re.escape(w) for w, v in known.items() if v is s))
                          for s in (True, False))  # fmt: skip
    sources = [(anywhere, rf"\b({anywhere})(?:'s)?\b", 0),
               (at_names, rf"{_OPENING}({at_names}){_DOES}", 1)]
    rxs = [(re.compile(p, re.I | re.M), g) for names, p, g in sources if names]
    return [spans + [Span(m.start(g), m.end(g), labels.get(m.group(1).lower(), "PERSON"),
                          "propagate") for rx, g in rxs for m in rx.finditer(text)]
            for text, spans in zip(texts, found, strict=True)]  # fmt: skip
