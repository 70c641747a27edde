"""Names by their place in a sentence, for text a recogniser wrote (no capitals).

`casing` capitalises the words the gazetteer knows as names; these rules find names whose
word is also ordinary English or unknown to every list, by what a story says around them: a
word between a relation and what that person does, a word after "is called", a first name
opening a sentence before what follows a person. Each rule needs both sides, so one
ordinary word alone never makes a name.
"""

from __future__ import annotations

from collections.abc import Callable

from companion.research.gazetteer import Gazetteer
from companion.research.ner import Span
from companion.research.words import TOKEN, word_set

# Never a name where these rules look: function words, auxiliaries, common adverbs.
STOP = word_set("context_stop")
RELATIONS = word_set("context_relations")
ROLES = word_set("context_roles")  # people known by their job, who come with their name
PETS = word_set("context_pets")  # animals a story names, with the breeds people say instead
POSSESSIVE = frozenset(["my", "our", "his", "her", "their", "your"])
DETERMINERS = word_set("determiners")
DOES = word_set("context_does")  # what a person named as a sentence's subject does next
ACTS = word_set("context_acts")
# What may follow a name: what only a person does, or a clause about them.
AFTER_NAME = frozenset(["and", "who", "from", "at"]) | word_set("context_says")
# A first name that is also a word, between social words and a clause that goes on.
_SOCIAL = word_set("context_social")
_TALK_TO = word_set("context_talk_to")
_CLAUSE = word_set("context_clause") | {""}
BE = frozenset(["is", "was", "has", "had"])
ABSTRACT = word_set("context_abstract")  # nouns that follow "with"/"for" as often as a name
_PETS = PETS | {"guinea", "tom"}
_NEVER = STOP | RELATIONS | _PETS  # words these rules never take for a name
_NAMING = frozenset(["named", "called", "calls", "call"])
_NOT_BEFORE_CALLED = STOP - {"is", "was", "were", "are", "be", "been"}  # phoning, not naming
_OPENERS = frozenset(["", "and", "with", "remember", "of", "about", "see", "saw"])
_GREETINGS, _AFTER_GREETING = word_set("context_greetings"), word_set("context_after_greeting")
_ENDEARMENTS = word_set("context_endearments")


def base(word: str) -> str:
    """A word without its possessive "'s"."""
    return word.removesuffix("'s")


def at(words: list[str], k: int) -> str:
    """words[k], or "" before the first word and after the last."""
    return words[k] if 0 <= k < len(words) else ""


def context_names(text: str, gaz: Gazetteer, common: Callable[[str], bool]) -> list[Span]:
    """Names in lower-case `text` by the words on both sides of them."""
    words = list(TOKEN.finditer(text))
    raw = [m.group(0) for m in words]
    spans = []
    for i, m in enumerate(words):
        if (label := _label(raw, i, gaz, common)) == "FULL":
            spans.append(Span(m.start(), words[i + 1].end(), "PERSON"))
        elif label:
            spans.append(Span(m.start(), m.start() + len(base(raw[i])), label))
    return spans


def _label(raw: list[str], i: int, gaz: Gazetteer, common: Callable[[str], bool]) -> str:
    """The label of raw[i] as a name by the words around it ("FULL": with the next word)."""
    word, prev, prev2, nxt, nxt2 = base(raw[i]), *(at(raw, i + k) for k in (-1, -2, 1, 2))
    by_role = nxt == "the" and nxt2 in ROLES  # a job after: a name, though a pet's word too
    never = word in _NEVER and not (by_role and word not in STOP | RELATIONS)
    if never or len(word) < 2 or word.endswith("ly"):
        return ""
    if prev in ("him", "her", "it", "them") and prev2 in _NAMING:
        return "PERSON"  # naming a child or a pet
    if prev == "named" or prev == "called" and prev2 not in _NOT_BEFORE_CALLED:  # naming
        return "PET" if any(w in _PETS for w in raw[max(0, i - 5) : i]) else gaz.label(word)
    if (prev in RELATIONS and any(w in POSSESSIVE for w in raw[max(0, i - 4) : i - 1])
            and (nxt in DOES or nxt in ("from", "who") and word in gaz.people)
            and (word not in DOES or word in gaz.first and nxt in ACTS | BE)
            and not (gaz.is_ordinary(word) and word.endswith(("ed", "ing")))):  # fmt: skip
        return "PERSON"  # the relation's name, before what they do
    if (prev in _OPENERS and nxt in AFTER_NAME and len(word) > 2
            and (word in gaz.people or not gaz.is_ordinary(word) or not prev and nxt == "from")
            and (not common(word) or nxt in ACTS and word in gaz.first
                 and word not in ABSTRACT)):  # fmt: skip
        return "PERSON"  # opening a story, or joined to one
    if prev in _GREETINGS and nxt in _AFTER_GREETING and word not in _ENDEARMENTS \
            and word in gaz.first:  # fmt: skip
        return "PERSON"  # greeted or thanked by name, before the talk goes on ("thanks love" not)
    if not prev and by_role and word in gaz.people and len(word) > 2:
        return "PERSON"  # someone known by their job
    if (word in gaz.first and nxt in gaz.people and nxt not in _NEVER and nxt2 in AFTER_NAME
            and prev not in DETERMINERS):  # fmt: skip
        return "FULL"  # a first name and a surname, before what follows a person
    if (word in gaz.first and len(word) > 2 and not raw[i].endswith("'s") and nxt in _CLAUSE
            and (prev in _SOCIAL and word not in ABSTRACT or prev == "to" and prev2 in _TALK_TO)):
        return "PERSON"  # someone you are with, talk to, give to, before a clause goes on
    return ""
