"""First names that are also ordinary words ("will", "hope", "amber", "miles"), found by
what only a person or a pet does around them, in typed text or a recogniser's.

`context` takes such a word for a name only between a relation and a verb, or after "with";
these rules read what English grammar rules out for the ordinary word: the modal before a
verb already finite ("will says"); a word opening a clause before an act only a person does
("ruby smiled at me"; a feeling or virtue, "hope", only before speech or contact: "hope is
everything" stays); a job before it; a relation it owns ("will's mum"); "the" and an animal
after it ("toby the cat"). Each rule needs the word to be a census first name (or no English
word), and a cue on both sides, so one ordinary word alone never makes a name.
"""

from __future__ import annotations

import re

from companion.research.context import BE, PETS, RELATIONS, ROLES, STOP, at, base
from companion.research.gazetteer import Gazetteer
from companion.research.ner import Span
from companion.research.propagate import RARE_ZIPF
from companion.research.unknown import load_frequencies
from companion.research.words import TOKEN, pattern, word_set


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_AGE_NEXT, _STOP, _BARE_INITIALS, _PAST, _PLACE_CUE, _INITIALS = (pattern(f"cues.{n}") for n in (
    "AGE_NEXT", "STOP", "BARE_INITIALS", "PAST", "PLACE_CUE", "INITIALS"))
# Finite verbs no modal "will" takes and no abstract noun does: speech, contact, and what a
# body does ("mark beat me", "miles fell off").
_ACTS = word_set("cues_acts")
_SPEECH = word_set("cues_speech")
# Words opening a clause in a recogniser's text, which has no full stops.
_OPENERS = word_set("cues_openers")
# Feelings and virtues that are first names too: a noun before "is" as often as a name.
_ABSTRACT = word_set("cues_abstract")
# Things that are first names too, and are or have things as often ("rose is my favourite").
_THINGS = word_set("cues_things")
# A second word of a job ("the health visitor faith", "the dinner lady pat").
_AFTER_JOB = _set("and said came is was has had")  # "the nurse grace came", not "the nurse is"
_JOB_TAILS = word_set("cues_job_tails")
# Words that make "W the dog" a verb on an animal ("feed the dog").
_NOT_BEFORE_PET = word_set("cues_not_before_pet")
_VERB_NAMES = word_set("cues_verb_names")  # "pat the dog"
_TITLES = word_set("cues_titles")
_AGED = _set("is was turns turned turning")
_LITTLE = _set("little wee baby young big")  # "little faith is five and"
# What a person has that a story gives ("bills number is", "franks email is").
_HAS = _set("email e-mail number mobile phone address birthday")
# Subjects that are a number without being anyone ("the score is three and")
_NOT_AGED = word_set("cues_not_aged")
_OWNER = _set("my our the his her their")
_ANIMALS = PETS | _set("bitch tup ewe ram sheepdog mare gelding stallion bird")


def _aged(view: str, raw: list[str], words: list[re.Match[str]], i: int) -> bool:
    """raw[i] is followed by an age: "is three and", "turns four on", "will be ten on"."""
    after = raw[i + 1 : i + 4]  # "bunty would have been eighty"
    n = 2 if after[:2] == ["will", "be"] else 3 if after == ["would", "have", "been"] else 1
    return (n > 1 or at(after, 0) in _AGED) and bool(_AGE_NEXT.match(view, words[i + n].end()))


def _does(word: str) -> frozenset[str]:
    """The verbs after which `word`, opening a clause, can only be a person."""
    return _SPEECH if word in _ABSTRACT else _ACTS if word in _THINGS else _ACTS | BE


def ordinary_word_names(text: str, gaz: Gazetteer) -> list[Span]:
    """PERSON and PET spans for first names that are ordinary words, read from `text`
    lower-cased (typed text has the same offsets)."""
    view = text.lower()
    if len(view) != len(text):  # a letter whose lower case is longer: offsets would shift
        return []
    words = list(TOKEN.finditer(view))
    raw = [m.group(0) for m in words]
    freq = load_frequencies()
    spans = []
    for i, m in enumerate(words):
        word, prev, prev2, nxt = raw[i], at(raw, i - 1), at(raw, i - 2), at(raw, i + 1)
        # opening a clause: first, after a conjunction, or after a stop in typed text
        gap = words[i - 1].end() if i else 0  # a stop can only stand after the last word
        opens = not prev or prev in _OPENERS or bool(_STOP.search(text, gap, m.start()))
        label, end = "", m.end()
        if word == "will" and opens and _surname(nxt, gaz):
            label, end = "PERSON", words[i + 1].end()  # "will harker wants a job"
        elif word == "will" and opens and (nxt in _ACTS or nxt in BE or _PAST.fullmatch(nxt) or (
                nxt == "from" and any(w in _ACTS for w in raw[i + 2 : i + 6]))):  # fmt: skip
            label = "PERSON"  # "will says", "and will is outside", "will from next door"
        elif word in STOP or word in RELATIONS or len(word) < 3 or word in _NOT_AGED:
            pass
        elif (opens or prev in _LITTLE) and _aged(view, raw, words, i):
            label = "PERSON"  # "hope is four and she danced", "gruff turns four on the 23rd"
        elif opens and nxt in BE and at(raw, i + 2) in _OWNER and any(
                w in _ANIMALS for w in raw[i + 3 : i + 6]):  # fmt: skip
            label = "PET"  # "flint is my young dog", "nell is the old collie who"
        elif word not in gaz.first and freq.get(word, 0.0) >= RARE_ZIPF:
            pass  # neither a first name nor a word too rare to be anything but a name here
        elif _surname(nxt, gaz) and opens:
            label, end = "PERSON", words[i + 1].end()  # "hope tran and femi started at the school"
        elif prev in _TITLES and prev2 not in ("the", "a") and nxt != "christmas":
            label = "PERSON"  # "doctor dawn sent me for an x-ray"
        elif opens and (nxt in _does(word) or nxt in ("at", "on", "from") and any(
                w in _does(word) for w in raw[i + 2 : i + 6])):  # fmt: skip
            label = "PERSON"  # "ruby smiled", "because miles has hurt", "penny at school says"
        elif (prev in ROLES or prev in _JOB_TAILS) and prev2 in ("the", "our", "my", "health") \
                and nxt not in STOP - _AFTER_JOB:  # fmt: skip
            label = "PERSON"  # "the carer grace sang", "the health visitor faith came"
        elif nxt == "the" and at(raw, i + 2) in PETS \
                and prev not in _NOT_BEFORE_PET and word not in _VERB_NAMES:  # fmt: skip
            label = "PET"  # "we still talk about ranger the whippet"
        if not label and i == 0 and nxt == "the" and at(raw, 2) in _ANIMALS | {"guinea"} \
                and word not in _NOT_BEFORE_PET | _VERB_NAMES | STOP:  # fmt: skip
            label = "PET"  # "pickle the guinea pig got out": a story opening with its pet
        if label:
            spans.append(Span(m.start(), end, label))
        stem = word[:-1]  # "franks email is": a recogniser drops the apostrophe
        if word.endswith("s") and stem in gaz.first and nxt in _HAS \
                and stem not in STOP and len(stem) > 2:  # fmt: skip
            spans.append(Span(m.start(), m.start() + len(stem), "PERSON"))
        owner = base(word)  # "will's mum texted", "hope's husband"
        if owner != word and owner in gaz.first and nxt in RELATIONS:
            spans.append(Span(m.start(), m.start() + len(owner), "PERSON"))
    spans += [Span(m.start(), m.end(), "PERSON") for m in _INITIALS.finditer(text)]
    spans += [Span(*m.span(), "PLACE" if _PLACE_CUE.search(text, 0, m.start()) else "PERSON")
              for m in TOKEN.finditer(text)  # "Siobhán", "Łódź": a capital, a letter English lacks
              if m[0][0].isupper() and not m[0].isascii() and len(m[0]) > 1]
    spans += [Span(m.start(), m.end(), "PERSON") for m in _BARE_INITIALS.finditer(view)
              if _surname(m.group(2), gaz)]  # "on the forms i am just w a metcalfe"
    return spans


def _surname(word: str, gaz: Gazetteer) -> bool:
    """A census surname that is no English word and no first name ("nguyen", "harker")."""
    return word in gaz.people and not gaz.is_ordinary(word) and word not in gaz.first
