"""De-identification for exports: salted pseudonyms and transcript redaction.

Pseudonyms are an HMAC of the participant id with a secret salt kept on the
device (or given by the researcher), so the same participant gets the same
pseudonym in every export made with that salt, and nobody without the salt can
reverse it by trying ids. Redaction unites three finders, each span tagged with
its type: patterns for written forms, patterns for spoken forms (`spoken`), and
a named-entity pipeline (`ner`, an optional extra) for names and places nobody
listed. It is deliberately greedy: a redacted ordinary word costs less than a
leaked address.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from companion.errors import ConfigError
from companion.files import open_private, private_dir, read_input
from companion.research import context, intros, spoken, unknown
from companion.research.casing import pet_names, place_phrases, truecase, typed_names, widen
from companion.research.context import RELATIONS, RELATIVE_AGE, apposed_names, context_names
from companion.research.cues import ordinary_word_names
from companion.research.gazetteer import Gazetteer, load_gazetteer
from companion.research.ids import GROUPED_ID, ID, PLATE, REFERENCE, SORT_CODE
from companion.research.landmarks import with_places
from companion.research.ner import Pipeline, Span
from companion.research.propagate import propagate

SALT_NAME = "export_salt"

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_ORD = r"\d{1,2}(?:st|nd|rd|th)?"
_STREET_WORDS = (
    "street|st|road|rd|avenue|ave|lane|ln|drive|dr|court|ct|close|crescent|place|pl|way|"
    "boulevard|blvd|terrace|square|sq|gardens|grove|hill|park|row|mews|highway|hwy|brae|wynd|"
    "vennel|heights|meadows|cottages"
)

EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
# The same with its dots lost ("ann lee@mail co uk"): the word before is its first part.
_TLD = r"com|co|uk|org|net|ac|gov|nhs|edu|ie|de|fr|info|me|io"
LOST_DOTS = re.compile(rf"\b(?:[a-z][\w-]*\s)?[\w+-]+@[\w-]+(?:\s(?:{_TLD})\b)+", re.IGNORECASE)
# Phone numbers: 7+ digits with optional country code and separators.
PHONE = re.compile(
    r"(?<![\w])(?:\+\d{1,3}(?:[\s.-]?\d{1,5}){2,5}"  # "+56 9 6123 4587"
    r"|(?:\+\d{1,3}[\s.-]?)?(?:\(?\d{2,5}\)?[\s.-]{0,3}){2,4}\d{2,4})(?![\w])"
)
NAMED_STREET = re.compile(
    rf"\b[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+){{0,2}}\s+(?:{_STREET_WORDS.title()})\b"
)
ADDRESS = re.compile(
    rf"\b\d{{1,5}}[a-z]?,?\s+(?:[A-Za-z][\w'-]*\s+){{1,4}}(?:{_STREET_WORDS})\b",
    re.IGNORECASE,
)
# "Flat 2/1" (a Glasgow tenement's floor and door), "Flat 3B", "Apartment 12".
# A tenement's "3/2" written before the house number ("3/2, 58 Auldhouse Terrace").
FLAT = re.compile(
    r"\b(?i:flat|apartment|apt|unit)\.?\s+\d{1,3}(?:\s?/\s?\d{1,2})?[A-Za-z]?\b"
    rf"|\b\d{{1,2}}/\d{{1,2}},?(?=\s+\d{{1,5}}[a-z]?,?\s+(?:[A-Z][\w'-]+\s+){{1,3}}"
    rf"(?:{_STREET_WORDS.title()})\b)"
)
POSTCODE = re.compile(r"\b[A-Z]{1,2}\d[A-Z\d]?\s*\d[A-Z]{2}\b", re.IGNORECASE)  # UK style
DATES = [
    re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b"),
    re.compile(r"\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b"),
    re.compile(rf"\b{_ORD}\s+(?:of\s+)?(?:{_MONTHS})\b\.?(?:,?\s+\d{{4}})?", re.IGNORECASE),
    re.compile(rf"\b(?:{_MONTHS})\.?\s+(?:the\s+)?{_ORD}\b(?:,?\s+\d{{4}})?", re.IGNORECASE),
]


# "Mr. Morgan", "my name is Zelda Quixote": a title or an introduction before a name.
_TITLED = re.compile(
    r"\b(?i:mr|mister|mrs|missus|ms|miss|mx|dr|doctor|nurse|uncle|aunt|auntie|grandma|grandpa|"
    r"grandad|granddad|granny|nan|sister|"
    r"brother|father|sir|dame|lady|lord)\.?\s+([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)"
)
# A capitalised word after a verb of naming or contact ("named Ann", "I rang Delphine") or
# before one at a sentence start ("Cormac phoned"); case-sensitive, common words excepted.
_NOT_NAMES = (
    r"I|The|A|An|My|Our|His|Her|Their|We|He|She|They|It|This|That|Then|When|Everyone|"
    r"Nobody|Somebody|Someone|Everybody|Mum|Mom|Dad|God|Christmas|Easter|Sunday|Monday|"
    r"Tuesday|Wednesday|Thursday|Friday|Saturday|Today|Yesterday|Tomorrow|There|Who"
)
_CONTACT = re.compile(
    rf"\b(?i:named|called|rang|phoned|texted|visited|met|told|asked|emailed|wrote to)\s+"
    rf"(?!(?:{_NOT_NAMES})\b)([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)"
)
_SUBJECT = re.compile(
    rf"(?:^|[.!?]\s+)(?!(?:{_NOT_NAMES})\b)([A-Z][\w'-]+)\s+"
    r"(?:phoned|rang|called|texted|visited|came|said|told|asked|sent|brought|wrote)\b"
)
# "my sister Maeve", "my friend Hannah Price", "our dog Biscuit": a capitalised word after
# a relation is a name (case-sensitive: "my friend said" stays).
_RELATIONS = (
    r"wife|husband|partner|son|daughter|sister|brother|mum|mom|mother|dad|father|grandson|"
    r"granddaughter|grandchild|niece|nephew|cousin|friend|neighbour|neighbor|carer|colleague|"
    r"boss|doctor|nurse|vicar|teacher"
)
_RELATED = re.compile(
    rf"\b(?i:{_RELATIONS})(?:,|\s+(?:called|named))?\s+([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)"
)
_PET = re.compile(
    r"\b(?i:dog|cat|puppy|kitten|pony|horse|rabbit|budgie|parrot|hamster|tortoise)"
    r"(?:,|\s+(?:called|named))?\s+([A-Z][\w'-]+)"
)
# The same contexts in text a recogniser wrote (no capitals at all): the word after a
# relation or contact verb is a name when it is not an ordinary word (`_ordinary`).
_LOWER_NAMED = re.compile(
    rf"\b(?:(?:my|our|her|his|their)\s+(?:{_RELATIONS}|dog|cat|puppy|kitten|rabbit)"
    r"(?:\s+(?:called|named))?|rang|phoned|texted|visited|named|called)\s+"
    r"([a-z][\w'-]+(?:\s+[a-z][\w'-]+)?)"
)
# "Pickles's birthday": someone's birthday names someone (or a pet).
_BIRTHDAY = re.compile(r"\b([A-Za-z][\w-]+)'s?\s+birthday\b")
# A year, with the day it names if any ("Boxing Day 1987"): dates pin people down.
YEAR = re.compile(
    r"\b(?:(?i:christmas|boxing|new year's|valentine's|easter|bonfire)\s+"
    r"(?i:day|eve|night|sunday|monday)\s+)?(?:19|20)\d\d\b"
)

WRITTEN: list[tuple[str, re.Pattern[str]]] = [
    ("EMAIL", EMAIL),
    ("ADDRESS", ADDRESS),
    ("ADDRESS", POSTCODE),
    ("ADDRESS", FLAT),
    ("ADDRESS", NAMED_STREET),
    *(("DATE", p) for p in DATES),
    ("ID", ID),
    ("ID", GROUPED_ID),
    ("ID", REFERENCE),
    ("ID", PLATE),
    ("ID", SORT_CODE),
    ("DATE", YEAR),
    *spoken.PATTERNS,
]
# When spans overlap, the merged span keeps the most specific tag.
_PRIORITY = ["EMAIL", "ID", "PHONE", "ADDRESS", "AGE", "DATE", "PERSON", "PET", "PLACE", "ORG"]


@dataclass(frozen=True)
class Redactor:
    """Replaces identifying spans with their type: [PERSON], [PLACE], [ORG], [EMAIL],
    [PHONE], [ADDRESS], [DATE], [AGE], [ID], [PET]. Patterns (written and spoken forms, the
    names it was given) always run; `ner` adds what a named-entity pipeline finds."""

    names: tuple[str, ...] = ()
    ner: Pipeline | None = None
    gazetteer: Gazetteer | None = None  # used with `ner` (both are the deidentify extra)
    # Names the participant gave ("my surname is haverford"), redacted from then on everywhere.
    learned: set[str] = field(default_factory=set, compare=False)
    # Short forms of the first names ("zel", "zellie" for Zelda), none an ordinary word.
    short: tuple[str, ...] = ()
    # Names found once in this export, redacted wherever else they are said (`propagate`).
    propagated: set[str] = field(default_factory=set, compare=False)

    @property
    def method(self) -> str:
        return f"patterns+ner ({self.ner.name})+gazetteers+wordfreq" if self.ner else "patterns"

    def spans(self, text: str, lower_rules: bool = True) -> list[Span]:
        found = [Span(m.start(), m.end(), label) for label, p in WRITTEN for m in p.finditer(text)]
        found += [Span(m.start(), m.end(), "PHONE") for m in PHONE.finditer(text) if _phone(m)]
        found += _name_rules(text, self.nameish)
        if not any(c.isupper() for c in text):
            if lower_rules:  # without the gazetteer; with it, `casing` reads the context
                found += _lower_names(text)
            upper = text.upper()  # ids and groups as a recogniser writes them: "qq123456c"
            found += [Span(m.start(), m.end(), "ID") for p in (ID, GROUPED_ID)
                      for m in p.finditer(upper)
                      if m.group(0).split()[0].lower() not in context.STOP]  # "in 1948"
            found += [Span(m.start(), m.end(), "EMAIL") for m in LOST_DOTS.finditer(text)]
        found += [Span(m.start(1), m.end(1), "PERSON") for m in _BIRTHDAY.finditer(text)
                  if _birthday_name(text, m)]  # fmt: skip
        for label, pattern in (*spoken.GROUPED, ("AGE", RELATIVE_AGE)):
            found += [Span(m.start(1), m.end(1), label) for m in pattern.finditer(text)]
        for m in spoken.NAME_IS_AGE.finditer(text):  # "pearl is sixty three and ..."
            word = m.group(1)
            if (word[0].isupper() and not re.fullmatch(_NOT_NAMES, word)) or (
                word.islower() and word not in context.STOP and self.nameish(word)
            ):
                found.append(Span(m.start(2), m.end(2), "AGE"))
        for m in spoken.AGE_MARKED.finditer(text):  # one of its alternatives' groups
            g = next(i for i in range(1, 7) if m.group(i))
            found.append(Span(m.start(g), m.end(g), "AGE"))
        # a run of numbers no other pattern read (a phone or a date keeps its own tag)
        found += [Span(m.start(), m.end(), "ID") for m in spoken.NUMBER_RUN.finditer(text)
                  if not any(s.start < m.end() and m.start() < s.end for s in found)]  # fmt: skip
        for name in (*self.names, *sorted(self.learned), *self.short):
            rx = rf"\b{re.escape(name)}(?:'s)?\b"
            found += [Span(m.start(), m.end(), "PERSON") for m in re.finditer(rx, text, re.I)]
        return found

    def learn(self, texts: list[str]) -> None:
        """Remember the participant's own names in `texts`: the names they give ("my surname
        is haverford") and the word after a name they are known by ("zelda haverford"), so
        a surname said once is redacted in every later text too."""
        own = "|".join(re.escape(n) for n in self.names if " " not in n)
        after = re.compile(rf"\b(?i:{own})\s+([A-Za-z][\w'-]+)") if own else None
        for text in texts:
            lower = not any(c.isupper() for c in text)
            words = [w for m in intros.OWN_NAME.finditer(text)
                     for w in (m.group(1) or m.group(2)).split()]  # fmt: skip
            words += [m.group(1) for m in intros.NICKNAME.finditer(text)]
            if after:
                words += [m.group(1) for m in after.finditer(text)
                          if lower or m.group(1)[0].isupper()]  # fmt: skip
            for word in words:
                base = word.lower().removesuffix("'s")
                if len(base) > 2 and base not in intros.GLUE_WORDS and self.nameish(base):
                    self.learned.add(base)
            self.learned.update(_or_names(text, self.nameish))

    def nameish(self, word: str) -> bool:
        """A lower-case word that may be a name: no ordinary word (by the gazetteer when
        there is one, else by our own sentences), or a known name that is no common word."""
        if word in _ordinary():
            return False
        gaz = self.gazetteer
        return gaz is None or not gaz.is_ordinary(word) or word in gaz.people

    def spans_many(self, texts: list[str], use_ner: bool = True) -> list[list[Span]]:
        """Every span to redact in each text (the NER pipeline runs over all in batches).
        With the pipeline, the gazetteer adds names and places, and text without capitals
        is read through a truecased copy (`casing`)."""
        gaz = self.gazetteer
        self.learn(texts)
        if not use_ner or self.ner is None or gaz is None:
            return [self.spans(text) for text in texts]
        found = [self.spans(text, lower_rules=False) for text in texts]
        views, freq = [], unknown.load_frequencies()
        for text, spans in zip(texts, found, strict=True):
            spans += ordinary_word_names(text, gaz)  # "will says", "hunter the lurcher"
            if any(c.isupper() for c in text):
                spans += typed_names(text, gaz) + unknown.typed_unknown(text, gaz, freq)
                spans += apposed_names(text, gaz, _common, freq)
                views.append(text)
                continue
            view, names = truecase(text, gaz, _common)
            spans += names + _name_rules(view) + pet_names(text, gaz)
            spans += context_names(text, gaz, _common) + place_phrases(text, gaz)
            spans += apposed_names(text, gaz, _common, freq)
            spans += unknown.unknown_names(text, gaz, freq, _common)
            views.append(unknown.name_candidates(view, gaz, freq))
        for text, view, spans, entities in zip(
            texts, views, found, self.ner.spans(views), strict=True
        ):
            if view is not text:  # no capitals: a guess on words left lower case is weak
                entities = [e for e in entities if not _all_ordinary(view, e, gaz)]
            spans += entities
        out = [with_places(text, widen(text, spans, gaz, _common), gaz)
               for text, spans in zip(texts, found, strict=True)]  # fmt: skip
        out = [s + unknown.spelled(t, s) if t.islower() else s
               for t, s in zip(texts, out, strict=True)]  # fmt: skip
        return propagate(texts, out, self.propagated, gaz, freq)

    def redact(self, text: str | None, use_ner: bool = True) -> str | None:
        if not text:
            return text
        return apply_spans(text, self.spans_many([text], use_ner)[0])


@lru_cache(maxsize=1)
def _ordinary() -> frozenset[str]:
    """Ordinary English words: those of our story bank and protocol wording (the companion's
    own sentences), plus function words. A name is rarely among them."""
    data = resources.files("companion.data")
    text = data.joinpath("stories.jsonl").read_text("utf-8")
    text += data.joinpath("default_protocol.toml").read_text("utf-8")
    # Only words written in lower case there: the names in our stories are not ordinary.
    words = set(re.findall(r"\b[a-z][a-z']*", text)) | intros.GLUE_WORDS
    return frozenset(words)


def _all_ordinary(view: str, span: Span, gaz: Gazetteer) -> bool:
    """Every word of the span in lower case in the truecased copy and an ordinary word."""
    words = view[span.start : span.end].split()
    return all(w.islower() and gaz.is_ordinary(w.strip("'-")) for w in words)


def _birthday_name(text: str, m: re.Match[str]) -> bool:
    """ "pickles's birthday" names someone; "the dog's" or "my mum's" birthday does not."""
    word = m.group(1).lower()
    if word not in _ordinary():
        return True
    before = text[: m.start()].split()[-1:]
    after_determiner = bool(before) and before[0].lower() in _DETERMINERS
    return word not in RELATIONS | _DETERMINERS and not after_determiner


_DETERMINERS = frozenset(
    re.findall(
        r"\w+",
        "a an the my our his her their your this that its whose everyone everybody someone "
        "somebody anyone anybody nobody today tomorrow yesterday",
    )
)


def _common(word: str) -> bool:
    return word in _ordinary()


def _name_rules(text: str, nameish: Callable[[str], bool] | None = None) -> list[Span]:
    """Names by their context in text with capitals (case-sensitive rules); in text without
    any, a caller's name ("it's X here") that `nameish` accepts."""
    found = []
    for pattern in (_TITLED, intros.INTRODUCED, _RELATED, _CONTACT, _SUBJECT, intros.NAME_GIVEN):
        found += [Span(m.start(1), m.end(1), "PERSON") for m in pattern.finditer(text)]
    for m in intros.OWN_NAME.finditer(text):
        group = 1 if m.group(1) else 2
        found.append(Span(m.start(group), m.end(group), "PERSON"))
    found += [Span(m.start(), m.end(), "PERSON") for m in intros.SPELLED.finditer(text)]
    found += [Span(m.start(2), m.end(2), "AGE") for m in spoken.NAMED_AGE.finditer(text)
              if not re.fullmatch(_NOT_NAMES, m.group(1))]  # fmt: skip
    lower = not any(c.isupper() for c in text)
    for m in intros.CALLER.finditer(text):
        group = 1 if m.group(1) else 2
        word = m.group(group)
        first = word.split()[0].lower()  # "its tig here": a word this rare is a name here
        if word[0].isupper() or lower and nameish and (nameish(first) or unknown.rare(first)):
            found.append(Span(m.start(group), m.end(group), "PERSON"))
    for m in intros.NICKNAME.finditer(text):
        word = m.group(1)
        if (word[0].isupper() and not re.fullmatch(_NOT_NAMES, word)
                or lower and nameish is not None and (nameish(word) or unknown.rare(word))):
            found.append(Span(m.start(1), m.end(1), "PERSON"))
            if m.group(2) and m.group(2).lower() not in context.STOP:  # "cal or cally"
                found.append(Span(m.start(2), m.end(2), "PERSON"))
    return found + [Span(m.start(1), m.end(1), "PET") for m in _PET.finditer(text)]


def _or_names(text: str, nameish: Callable[[str], bool]) -> set[str]:
    """The second of two names one is called by ("calls me cal or cally"): a name because
    the first is, though it may be an English word too."""
    return {m.group(2).lower() for m in intros.NICKNAME.finditer(text)
            if m.group(2) and nameish(m.group(1).lower()) and len(m.group(2)) > 2
            and m.group(2).lower() not in context.STOP | intros.GLUE_WORDS}  # fmt: skip


def _lower_names(text: str) -> list[Span]:
    found = []
    for m in _LOWER_NAMED.finditer(text):
        start = end = m.start(1)
        for word in m.group(1).split():
            if word in _ordinary() or len(word) < 3:
                break
            end = text.index(word, end) + len(word)
        if end > start:
            found.append(Span(start, end, "PERSON"))
    return found


def apply_spans(text: str, spans: list[Span]) -> str:
    """Replace the union of `spans` with their tags, overlapping spans merged into one."""
    merged: list[list[Any]] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if merged and span.start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], span.end)
            last[2] = min(last[2], _PRIORITY.index(span.label))
        else:
            merged.append([span.start, span.end, _PRIORITY.index(span.label)])
    out, pos = [], 0
    for start, end, rank in merged:
        out += [text[pos:start], f"[{_PRIORITY[rank]}]"]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _phone(match: re.Match[str]) -> bool:
    return sum(c.isdigit() for c in match.group(0)) >= 7


def redactor_for(names: Iterable[str | None], ner: Pipeline | None = None) -> Redactor:
    """Names to redact: each full name and its parts (so 'Ann Lee' also hides 'Ann'), and
    the short forms of its first name."""
    names = list(names)
    out: set[str] = set()
    for name in names:
        if not name or not name.strip():
            continue
        out.add(name.strip())
        out.update(part for part in re.split(r"\s+", name.strip()) if len(part) >= 2)
    gazetteer = load_gazetteer() if ner is not None else None  # fails before anything is written
    if ner is not None:
        unknown.load_frequencies()
    short = {nick for name in names if name and name.strip()
             for nick in intros.nicknames(name.split()[0])}  # fmt: skip
    # A short form that is a common word ("pat", "sue", "robe") or another known part stays;
    # a bare three-letter stem only when it is rare ("zel").
    short -= _ordinary() | context.STOP | {n.lower() for n in out}
    if gazetteer is not None:
        short = {w for w in short if len(w) == 3 or w not in gazetteer.ordinary}
    ordered = tuple(sorted(out, key=len, reverse=True))
    return Redactor(ordered, ner, gazetteer, short=tuple(sorted(short, key=len, reverse=True)))


def load_names_file(path: Path) -> list[str]:
    """One name per line; blank lines and # comments ignored."""
    lines = read_input(path, "names file", 16 * 1024 * 1024).splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def load_or_create_salt(path: Path) -> bytes:
    """The secret salt; created (0600, 32 random bytes as hex) if the file does not exist."""
    if not path.exists():
        if not path.parent.exists():  # a folder that exists keeps its permissions
            private_dir(path.parent)
        try:
            with open_private(path, exclusive=True) as out:
                out.write(secrets.token_hex(32) + "\n")
        except FileExistsError:
            pass  # another export created it a moment ago
    salt = read_input(path, "salt file", 64 * 1024).strip()
    if len(salt) < 16:
        raise ConfigError(f"{path}: salt is shorter than 16 characters; use a longer secret")
    return salt.encode()


def pseudonym(participant_id: str, salt: bytes) -> str:
    digest = hmac.new(salt, participant_id.encode(), hashlib.sha256).hexdigest()
    return f"S{digest[:12]}"
