"""Names by their place in a sentence, for text a recogniser wrote (no capitals).

`casing` capitalises the words the gazetteer knows as names; these rules find names whose
word is also ordinary English ("precious", "piers", "toffee") or unknown to every list, by
what a story says around them: a word between a relation and what that person does ("my
husband piers lives"), a word after "is called" ("the dog is called fudge"), a known or
unknown first name opening a sentence before "from the" ("ambrose from the choir"). Each
rule needs both sides, so one ordinary word alone never makes a name.
"""

from __future__ import annotations

from collections.abc import Callable

from companion.research.gazetteer import Gazetteer
from companion.research.ner import Span
from companion.research.words import TOKEN, word_set


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_WORD = TOKEN
# Never a name where these rules look: function words, auxiliaries, common adverbs.
STOP = word_set("context_stop")
_POSSESSIVE = _set("my our his her their your")
RELATIONS = word_set("context_relations")
# People known by their job, who come into a story with their name ("the physio kofi says",
# "frank the milkman").
ROLES = word_set("context_roles")
# What a person named as a sentence's subject does next ("my husband piers lives in ...").
_DOES = word_set("context_does")
# What only a person does, for a word with no relation before it ("and olga rang").
_SAYS = word_set("context_says")
# ... and what may follow a name that is not a verb ("ambrose from the choir", "olga who").
_AFTER_NAME = _set("and who from at")
# A first name that is also a word ("dawn", "frank", "violet") is a name between these:
# someone you are with, talk to, give to, and what follows a person in a clause.
_SOCIAL = word_set("context_social")
_TALK_TO = word_set("context_talk_to")
_CLAUSE = word_set("context_clause")
_UNKNOWN_DOES = word_set("context_unknown_does")
_BE = _set("is was has had")
_ACTS = word_set("context_acts")
# Nouns that follow "with"/"for" as often as a name does ("with joy", "for love").
_ABSTRACT = word_set("context_abstract")
# Animals a story names (with the breeds people say instead, and a Scot's "dug").
PETS = word_set("context_pets")
_PETS = PETS | {"guinea", "tom"}  # "our guinea pig", "the old tom"
_TITLES = _set("mr mrs ms miss mister missus dr auntie aunt uncle")
_PRONOUNS = _set("i we you he she they it who")
_NEVER = STOP | RELATIONS | _PETS  # words these rules never take for a name
_NEXT_TO_NAME = _AFTER_NAME | _SAYS


def _base(word: str) -> str:
    return word[:-2] if word.endswith("'s") else word


def context_names(text: str, gaz: Gazetteer, common: Callable[[str], bool]) -> list[Span]:
    """Names in lower-case `text` by the words on both sides of them."""
    words = [m for m in _WORD.finditer(text)]
    raw = [m.group(0) for m in words]
    spans = []
    for i, m in enumerate(words):
        word = _base(raw[i])
        # "tom the registrar": a pet's word too, but a name before "the" and a job
        by_role = (
            i + 2 < len(raw) and raw[i + 1] == "the" and raw[i + 2] in ROLES
            and word not in STOP | RELATIONS
        )  # fmt: skip
        if word in _NEVER and not by_role or len(word) < 2 or word.endswith("ly"):
            continue
        prev = raw[i - 1] if i else ""
        prev2 = raw[i - 2] if i > 1 else ""
        nxt = raw[i + 1] if i + 1 < len(raw) else ""
        end = m.start() + len(word)
        label = ""
        if prev in ("him", "her", "it", "them") and prev2 in ("named", "called", "calls", "call"):
            label = "PERSON"  # "we named her bella"
        elif (
            (prev in RELATIONS or prev in _PETS)
            and prev2 in _POSSESSIVE | {"the"}
            and raw[i - 3 : i - 2] in (["named"], ["called"], ["christened"])
            and (word in gaz.people or not gaz.is_ordinary(word) or prev in _PETS)
        ):
            label = "PET" if prev in _PETS else "PERSON"  # "we called the baby hope"
        elif (
            prev in ("is", "was")
            and prev2 in PETS
            and raw[i - 3 : i - 2] in (["the"], ["our"], ["my"], ["her"], ["his"], ["their"])
            and (word in gaz.people or not gaz.is_ordinary(word))
        ):
            label = "PET"  # "the budgie is joey and he talks"
        elif prev == "named" or (prev == "called" and (
                prev2 in ("is", "was", "were", "are", "be", "been") or prev2.endswith("'s")
                or prev2 not in STOP and prev2 not in _PRONOUNS)):  # fmt: skip
            # "the dog is called fudge", "a town called tavira": naming, not phoning
            label = "PET" if any(w in _PETS for w in raw[max(0, i - 5) : i]) else gaz.label(word)
            if word in _TITLES and nxt:  # "called mr whiskers"
                end = words[i + 1].start() + len(_base(nxt))
        elif (
            prev in RELATIONS
            and any(w in _POSSESSIVE for w in raw[max(0, i - 4) : i - 1])
            and (nxt in _DOES or nxt in ("from", "who") and word in gaz.people)
            and (word not in _DOES or word in gaz.first and nxt in _ACTS | _BE)  # "will is"
            and not (gaz.is_ordinary(word) and word.endswith(("ed", "ing")))
        ):
            label = "PERSON"  # "my daughter in law blessing is from", "our boy dwayne plays"
        elif (
            (not prev or prev in ("and", "with", "remember", "of", "about", "see", "saw"))
            and nxt in _NEXT_TO_NAME
            and (
                word in gaz.people or not gaz.is_ordinary(word) or not prev and nxt == "from"
            )  # opening a story: "quintus from the club"
            and (not common(word) or nxt in _ACTS and word in gaz.first
                 and word not in _ABSTRACT)  # "carol came round"  # fmt: skip
            and len(word) > 2
        ):
            label = "PERSON"  # "ambrose from the choir sings", "and olga who lives"
        elif (
            prev in ("", "and", "with", "to")
            and nxt == "next"
            and raw[i + 2 : i + 3] == ["door"]
            and word in gaz.people
            and len(word) > 2
        ):
            label = "PERSON"  # "pat next door has got a dog"
        elif (
            prev == "the"
            and word.endswith("s")
            and len(word) > 4
            and (base := word[:-1]) in gaz.people
            and not gaz.is_ordinary(base)
            and not base.endswith("an")  # "the italians"
            and not common(base)
        ):
            label = "PERSON"  # a family: "lunch with the hendersons"
        elif (
            not prev
            and word in gaz.people
            and nxt in gaz.people
            and nxt not in _NEVER
            and i + 2 < len(raw)
            and raw[i + 2] in ("from", "who")
        ):
            label = "PERSON"  # "cyril mason from the bowls club"
            end = words[i + 1].end()
        elif (
            not prev
            and nxt == "the"
            and i + 2 < len(raw)
            and raw[i + 2] in ROLES
            and word in gaz.people
            and len(word) > 2
        ):
            label = "PERSON"  # "stan the postman used to"
        elif (
            word in gaz.first
            and len(word) > 2
            and (prev in _SOCIAL and word not in _ABSTRACT or prev == "to" and prev2 in _TALK_TO)
            and (nxt in _CLAUSE or i + 1 == len(raw) or _surname(raw, i + 1, gaz))
            and not raw[i].endswith("'s")
        ):
            label = "PERSON"  # "a long chat with dawn on the phone", "talking to violet about"
            if _surname(raw, i + 1, gaz):  # "and rose brown was there"
                end = words[i + 1].end()
        elif (
            nxt in _UNKNOWN_DOES
            and len(word) > 3
            and not gaz.is_ordinary(word)
            and not gaz.is_name(word)
            and not common(word)
            and prev not in _POSSESSIVE | {"the", "a", "an"}
        ):
            label = "PERSON"  # a word no list knows, doing what people do: "oluwaseun is coming"
        elif raw[i].endswith("'s") and nxt in RELATIONS and not common(word) and (
                word in gaz.people or not gaz.is_ordinary(word)):  # fmt: skip
            label = "PERSON"  # "rosalie's husband"
        elif (
            nxt in _POSSESSIVE
            and i + 2 < len(raw)
            and raw[i + 2] in RELATIONS
            and prev not in _POSSESSIVE
            and (word in gaz.people or not gaz.is_ordinary(word))
            and not common(word)
        ):
            label = "PERSON"  # "i rang sheila my neighbour"
        elif _possessive_name(raw[i], prev, gaz, common):
            label = "PERSON"  # "patel's shop", "the morgans' house"
            end = m.end()
        if label:
            spans.append(Span(m.start(), end, label))
    return spans


def _surname(raw: list[str], i: int, gaz: Gazetteer) -> bool:
    """raw[i] is a known surname and a clause goes on after it."""
    return (i + 1 < len(raw) and raw[i] in gaz.people and raw[i] not in _NEVER
            and raw[i + 1] in _CLAUSE)  # fmt: skip


def _possessive_name(token: str, prev: str, gaz: Gazetteer, common: Callable[[str], bool]) -> bool:
    """A known name in the possessive: "patel's" (no determiner before: "the baker's" is a
    shop) or a family's "the morgans'"."""
    if token.endswith("s'"):
        word = token[:-2]
        return len(word) > 2 and word in gaz.people and not common(word) and word not in STOP
    visit = prev in ("to", "at", "round", "from", "over")  # "went back to kath's"
    if not token.endswith("'s") or prev in STOP and not visit or prev in RELATIONS:
        return False
    word = token[:-2]
    known = word in gaz.people or visit and not gaz.is_ordinary(word)
    return (len(word) > 2 and known and not common(word)
            and word not in RELATIONS and word not in STOP)  # fmt: skip


