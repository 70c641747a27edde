"""The recognizer registry: every rule that finds an identifier, as one small uniform object
in one ordered list (after Presidio's recognizer registry and Philter's ordered filters).

A `Recognizer` has a name, the entity type it tags, its patterns (or a finder for rules that
read more than a pattern), the stage it runs in, and its own examples and counterexamples
(from companion/data/deidentify.json, where the word lists and thresholds live too). Every
span records the recognizer that made it: the export's manifest counts spans per recognizer,
and `tests/bench/bench_pii.py --by-rule` measures what each one earns.
Stages: "text" runs on every text; "plain" on text without capitals when no gazetteer is
loaded; "gazetteer" with the gazetteer and NER pipeline; "after" names the steps the
`Redactor` runs last (NER, widening, landmarks, propagation), so their spans are named too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from companion.research import addresses, context, intros, spoken, unknown
from companion.research.casing import pet_names, place_phrases, typed_names
from companion.research.context import RELATIONS, context_names
from companion.research.cues import ordinary_word_names
from companion.research.ids import GROUPED_ID, ID, PLATE, SORT_CODE
from companion.research.ner import Span, tag
from companion.research.words import THRESHOLDS, alternation, data, ordinary, word_set

if TYPE_CHECKING:
    from companion.research.gazetteer import Gazetteer

_MONTHS = alternation("months", "month_abbreviations")
_ORD = r"\d{1,2}(?:st|nd|rd|th)?"
NOT_NAMES = alternation("not_names")
_RELATIONS = alternation("relations")

EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
# The same with its dots lost ("ann lee@mail co uk"): the word before is its first part.
LOST_DOTS = re.compile(
    rf"\b(?:[a-z][\w-]*\s)?[\w+-]+@[\w-]+(?:\s(?:{alternation('email_endings')})\b)+",
    re.IGNORECASE,
)
# Phone numbers: 7+ digits with optional country code and separators.
PHONE = re.compile(
    r"(?<![\w])(?:\+\d{1,3}(?:[\s.-]?\d{1,5}){2,5}"  # "+56 9 5555 0100"
    r"|(?:\+\d{1,3}[\s.-]?)?(?:\(?\d{2,5}\)?[\s.-]{0,3}){2,4}\d{2,4})(?![\w])"
)
DATE_NAMES = ("date_slashed", "date_day_month", "date_month_day")
DATES = [
    re.compile(r"\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b"),
    re.compile(rf"\b{_ORD}\s+(?:of\s+)?(?:{_MONTHS})\b\.?(?:,?\s+\d{{4}})?", re.IGNORECASE),
    re.compile(rf"\b(?:{_MONTHS})\.?\s+(?:the\s+)?{_ORD}\b(?:,?\s+\d{{4}})?", re.IGNORECASE),
]
# A title or a kinship word used as one, before a capitalised name.
_TITLED = re.compile(rf"\b(?i:{alternation('titles')})\.?\s+([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)")
# A capitalised word after a verb of naming or contact, or before one at a sentence start.
_CONTACT = re.compile(
    rf"\b(?i:{alternation('contact_verbs')})\s+"
    rf"(?!(?:{NOT_NAMES})\b)([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)"
)
# A capitalised word after a relation is a name (case-sensitive: "my friend said" stays).
_RELATED = re.compile(
    rf"\b(?i:{_RELATIONS})(?:,|\s+(?:called|named))?\s+([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)"
)
_PET = re.compile(rf"\b(?i:{alternation('pet_kinds')})(?:,|\s+(?:called|named))?\s+([A-Z][\w'-]+)")
# The same contexts without capitals: the word after is a name when it is no ordinary word.
_LOWER_NAMED = re.compile(
    rf"\b(?:(?:my|our|her|his|their)\s+(?:{_RELATIONS}|{alternation('pet_kinds_said')})"
    r"(?:\s+(?:called|named))?|rang|phoned|texted|visited|named|called)\s+"
    r"([a-z][\w'-]+(?:\s+[a-z][\w'-]+)?)"
)
_BIRTHDAY = re.compile(r"\b([A-Za-z][\w-]+)'s?\s+birthday\b")  # someone's birthday names them
# A year, with the day it names if any: dates pin people down.
YEAR = re.compile(
    rf"\b(?:(?i:{alternation('feast_days')})\s+"
    r"(?i:day|eve|night|sunday|monday)\s+)?(?:19|20)\d\d\b"
)
_DETERMINERS = word_set("determiners")


@dataclass
class Text:
    """One text as the recognizers read it: `view` is its truecased copy (text without
    capitals, read with the gazetteer), `found` the spans of the recognizers before."""

    text: str
    nameish: Callable[[str], bool] | None = None
    gaz: Gazetteer | None = None
    freq: dict[str, float] = field(default_factory=dict)
    names: tuple[str, ...] = ()  # the participant's names known so far
    view: str = ""
    cased: list[Span] = field(default_factory=list)  # names truecasing found
    found: list[Span] = field(default_factory=list)

    @property
    def lower(self) -> bool:
        return not any(c.isupper() for c in self.text)


@dataclass(frozen=True)
class Recognizer:
    """One rule: its name, the entity it tags, its patterns (the span is group `group`) or a
    finder, the stage and case it runs in ("any", "typed", "lower"), its examples (the
    identifier in [brackets]) and counterexamples, from the data file."""

    name: str
    entity: str
    patterns: tuple[re.Pattern[str], ...] = ()
    group: int = 0
    find: Callable[[Text], list[Span]] | None = None
    stage: str = "text"
    case: str = "any"
    examples: tuple[str, ...] = ()
    counterexamples: tuple[str, ...] = ()

    def spans(self, t: Text) -> list[Span]:
        if self.find is not None:
            return tag(self.name, self.find(t))
        g = self.group
        return [Span(m.start(g), m.end(g), self.entity, self.name)
                for p in self.patterns for m in p.finditer(t.text)]  # fmt: skip

    def applies(self, t: Text) -> bool:
        return self.case == "any" or (self.case == "lower") == t.lower


def _phone(t: Text) -> list[Span]:
    least = THRESHOLDS["phone_digits"]
    return [Span(m.start(), m.end(), "PHONE") for m in PHONE.finditer(t.text)
            if sum(c.isdigit() for c in m.group(0)) >= least]  # fmt: skip


def _rare_name(word: str, t: Text) -> bool:
    """A word without capitals that `nameish` accepts or that is rare ("its tig here")."""
    return t.lower and t.nameish is not None and (t.nameish(word) or unknown.rare(word))


def _caller(t: Text) -> list[Span]:
    found = []
    for m in intros.CALLER.finditer(t.text):
        g = 1 if m.group(1) else 2
        word = m.group(g)
        if word[0].isupper() or _rare_name(word.split()[0].lower(), t):
            found.append(Span(m.start(g), m.end(g), "PERSON"))
    return found


def _nickname(t: Text) -> list[Span]:
    found = []
    for m in intros.NICKNAME.finditer(t.text):
        word = m.group(1)
        if word[0].isupper() and not re.fullmatch(NOT_NAMES, word) or _rare_name(word, t):
            found.append(Span(m.start(1), m.end(1), "PERSON"))
            if m.group(2) and m.group(2).lower() not in context.STOP:  # "bel or belle"
                found.append(Span(m.start(2), m.end(2), "PERSON"))
    return found


def _lower_names(t: Text) -> list[Span]:
    found = []
    for m in _LOWER_NAMED.finditer(t.text):
        start = end = m.start(1)
        for word in m.group(1).split():
            if word in ordinary() or len(word) < 3:
                break
            end = t.text.index(word, end) + len(word)
        if end > start:
            found.append(Span(start, end, "PERSON"))
    return found


def _upper_ids(t: Text) -> list[Span]:  # ids and groups as a recogniser writes them
    upper = t.text.upper()
    return [Span(m.start(), m.end(), "ID") for p in (ID, GROUPED_ID) for m in p.finditer(upper)
            if m.group(0).split()[0].lower() not in context.STOP]  # fmt: skip


def _birthday(t: Text) -> list[Span]:
    """ "pickles's birthday" names someone; "the dog's" or "my mum's" birthday does not."""
    found = []
    for m in _BIRTHDAY.finditer(t.text):
        word = m.group(1).lower()
        before = t.text[: m.start()].split()[-1:]
        after_determiner = bool(before) and before[0].lower() in _DETERMINERS
        if word not in ordinary() or (word not in RELATIONS | _DETERMINERS
                                      and not after_determiner):  # fmt: skip
            found.append(Span(m.start(1), m.end(1), "PERSON"))
    return found


def _name_is_age(t: Text) -> list[Span]:
    found = []
    for m in spoken.NAME_IS_AGE.finditer(t.text):  # "mabel is seventy one and ..."
        word = m.group(1)
        if (word[0].isupper() and not re.fullmatch(NOT_NAMES, word)) or (
            word.islower() and word not in context.STOP and t.nameish and t.nameish(word)
        ):
            found.append(Span(m.start(2), m.end(2), "AGE"))
    return found


def _age_marked(t: Text) -> list[Span]:
    found = []
    for m in spoken.AGE_MARKED.finditer(t.text):  # one of its alternatives' groups
        g = next(i for i in range(1, 7) if m.group(i))
        found.append(Span(m.start(g), m.end(g), "AGE"))
    return found


def _number_run(t: Text) -> list[Span]:  # numbers no other pattern read keep their own tag
    return [Span(m.start(), m.end(), "ID") for m in spoken.NUMBER_RUN.finditer(t.text)
            if not any(s.start < m.end() and m.start() < s.end for s in t.found)]  # fmt: skip


def _own_names(t: Text) -> list[Span]:
    return [Span(m.start(), m.end(), "PERSON") for name in t.names
            for m in re.finditer(rf"\b{re.escape(name)}(?:'s)?\b", t.text, re.I)]  # fmt: skip


def _g(find: Callable[..., list[Span]], *extra: str) -> Callable[[Text], list[Span]]:
    """A finder that reads the gazetteer (and, by name, the word frequencies or `common`)."""

    def run(t: Text) -> list[Span]:
        args = {"freq": t.freq, "common": ordinary().__contains__}
        assert t.gaz is not None
        return find(t.text, t.gaz, *(args[e] for e in extra))

    return run


def R(name: str, entity: str, *args: Any, **kwargs: Any) -> Recognizer:
    """A recognizer with its examples and counterexamples from the data file."""
    own = data()["recognizers"].get(name, {})
    return replace(Recognizer(name, entity, *args, **kwargs),
                   examples=tuple(own.get("examples", ())),
                   counterexamples=tuple(own.get("counterexamples", ())))  # fmt: skip


# The rules that read a name from its context; they run on a truecased copy too.
NAME_RULES: tuple[Recognizer, ...] = (
    R("titled", "PERSON", (_TITLED,), 1),
    R("introduced", "PERSON", (intros.INTRODUCED,), 1),
    R("related", "PERSON", (_RELATED,), 1),
    R("contact", "PERSON", (_CONTACT,), 1),
    R("spelled", "PERSON", (intros.SPELLED,)),
    R("caller", "PERSON", find=_caller),
    R("nickname", "PERSON", find=_nickname),
    R("pet", "PET", (_PET,), 1),
)
TEXT: tuple[Recognizer, ...] = (
    R("email", "EMAIL", (EMAIL,)),
    *(R(n, "DATE", (p,)) for n, p in zip(DATE_NAMES, DATES, strict=True)),
    R("id", "ID", (ID,)),
    R("grouped_id", "ID", (GROUPED_ID,)),
    R("plate", "ID", (PLATE,)),
    R("sort_code", "ID", (SORT_CODE,)),
    R("year", "DATE", (YEAR,)),
    *(R(name, label, (p,)) for name, label, p in spoken.PATTERNS),
    R("phone", "PHONE", find=_phone),
    *NAME_RULES,
    R("lower_named", "PERSON", find=_lower_names, stage="plain", case="lower"),
    R("upper_id", "ID", find=_upper_ids, case="lower"),
    R("lost_dots", "EMAIL", (LOST_DOTS,), case="lower"),
    R("birthday_name", "PERSON", find=_birthday),
    *(R(name, label, (p,), 1) for name, label, p in spoken.GROUPED),
    R("postcode", "ADDRESS", addresses.POSTCODES),
    R("said_postcode", "ADDRESS", find=lambda t: addresses.said_postcodes(t.text), case="lower"),
    R("named_street", "ADDRESS", (addresses.NAMED_STREET,)),
    R("foreign_street", "ADDRESS", find=lambda t: addresses.foreign_streets(t.text, t.nameish)),
    R("address_unit", "ADDRESS", (addresses.UNIT,)),
    R("street_widened", "ADDRESS", find=lambda t: addresses.widened(t.text, t.found)),
    R("name_is_age", "AGE", find=_name_is_age),
    R("age_marked", "AGE", find=_age_marked),
    R("number_run", "ID", find=_number_run),
    R("own_names", "PERSON", find=_own_names),
)
GAZETTEER: tuple[Recognizer, ...] = (
    R("ordinary_word_name", "PERSON", find=_g(ordinary_word_names), stage="gazetteer"),
    R("typed_name", "PERSON", find=_g(typed_names), stage="gazetteer", case="typed"),
    R(
        "typed_unknown",
        "PERSON",
        find=_g(unknown.typed_unknown, "freq"),
        stage="gazetteer",
        case="typed",
    ),
    R("truecased", "PERSON", find=lambda t: t.cased, stage="gazetteer", case="lower"),
    R("pet_name", "PET", find=_g(pet_names), stage="gazetteer", case="lower"),
    R("context_name", "PERSON", find=_g(context_names, "common"), stage="gazetteer", case="lower"),
    R("place_phrase", "PLACE", find=_g(place_phrases), stage="gazetteer", case="lower"),
    R("org_name", "ORG", find=_g(addresses.organisations), stage="gazetteer"),
    R(
        "unknown_name",
        "PERSON",
        find=_g(unknown.unknown_names, "freq", "common"),
        stage="gazetteer",
        case="lower",
    ),
)
# Run by the Redactor after the others (they read every span found): named for the manifest.
AFTER: tuple[Recognizer, ...] = (
    R("ner", "PERSON", stage="after"),
    R("joined", "PERSON", stage="after", case="lower"),
    R("landmarks", "PLACE", stage="after"),
    R("org_kind", "ORG", stage="after"),
    R("spelled_name", "PERSON", stage="after", case="lower"),
    R("propagate", "PERSON", stage="after"),
)
