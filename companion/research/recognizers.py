"""The recognizer registry: every rule that finds an identifier, as one small uniform object
in one ordered list (after Presidio's recognizer registry and Philter's ordered filters), its
examples and counterexamples in companion/data/deidentify.json with the word lists. Every
span names its recognizer: the export's manifest counts them, `bench_pii.py --by-rule`
measures each. Stages: "text" runs on every text; "plain" only without the gazetteer and NER
pipeline (patterns only: the pipeline finds what these do); "gazetteer" with them; "after"
names the steps the `Redactor` runs last (NER, widening, landmarks, propagation).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from companion.research import addresses, context, intros, numbers, unknown
from companion.research.casing import pet_names, place_phrases, typed_names
from companion.research.context import context_names
from companion.research.cues import ordinary_word_names
from companion.research.gazetteer import Gazetteer
from companion.research.ner import Span, tag
from companion.research.words import TOKEN, data, ordinary, pattern, sections, word_set

_RELATED, _CONTACT, _PET = (pattern(f"recognizers.{n}") for n in ("RELATED", "CONTACT", "PET"))
_NAME_IS_AGE, _NOT_NAMES = pattern("spoken.NAME_IS_AGE"), word_set("not_names")


@dataclass
class Text:
    """One text as the recognizers read it: `cased` the names its truecased copy found (text
    without capitals, read with the gazetteer), `found` the spans of the recognizers before."""

    text: str
    nameish: Callable[[str], bool]
    gaz: Gazetteer | None = None
    freq: dict[str, float] = field(default_factory=dict)
    names: tuple[str, ...] = ()  # the participant's names known so far
    cased: list[Span] = field(default_factory=list)
    found: list[Span] = field(default_factory=list)

    @property
    def lower(self) -> bool:
        return not any(c.isupper() for c in self.text)


@dataclass(frozen=True)
class Recognizer:
    """One rule: its name, the entity it tags, its patterns (the span is the capture group
    that matched, else the match) or a finder, the stage and case it runs in ("any",
    "typed", "lower"), its examples (the identifier in [brackets]) and counterexamples."""

    name: str
    entity: str
    patterns: tuple[re.Pattern[str], ...] = ()
    find: Callable[[Text], list[Span]] | None = None
    stage: str = "text"
    case: str = "any"
    examples: tuple[str, ...] = ()
    counterexamples: tuple[str, ...] = ()

    def spans(self, t: Text) -> list[Span]:
        if self.find is not None:
            return tag(self.name, self.find(t))
        return [Span(m.start(m.lastindex or 0), m.end(m.lastindex or 0), self.entity, self.name)
                for p in self.patterns for m in p.finditer(t.text)]  # fmt: skip

    def applies(self, t: Text) -> bool:
        return self.case == "any" or (self.case == "lower") == t.lower


def is_name(word: str, t: Text) -> bool:
    """Capitalised and no sentence word ("My", "Mum"), or in text without capitals a word
    `nameish` accepts or a rare one."""
    if word[:1].isupper():
        return word not in _NOT_NAMES
    return t.lower and (t.nameish(word) or unknown.rare(word))


def _words(matches: Iterable[re.Match[str]], ok: Callable[[str], bool], label: str = "PERSON"
           ) -> list[Span]:  # fmt: skip
    """The words of each match's group 1 from the first while `ok` accepts them (an "or"
    between two names, a surname's particle, taken as they come)."""
    found = []
    for m in matches:
        for w in TOKEN.finditer(m.group(1)):
            low = w.group(0).lower()
            if low == "or":
                continue
            if low not in intros.PARTICLES and not ok(w.group(0).removesuffix("'s")):
                break
            found.append(Span(m.start(1) + w.start(), m.start(1) + w.end(), label))
    return found


def introduced(t: Text) -> list[Span]:
    """The names the participant gives as theirs (`intros.OWN`)."""
    return _words((m for p in intros.OWN for m in p.finditer(t.text)), lambda w: is_name(w, t))


def _cue_names(cue: re.Pattern[str], t: Text, label: str = "PERSON") -> list[Span]:
    """The name after a cue: capitalised (case-sensitive: "my friend said" stays), or in text
    without capitals no ordinary word."""
    if t.lower:
        return _words(cue.finditer(t.text), lambda w: w not in ordinary() and len(w) > 2, label)
    return _words(cue.finditer(t.text), lambda w: is_name(w, t), label)


def _name_is_age(t: Text) -> list[Span]:  # "mabel is seventy one and ..."
    return [Span(m.start(2), m.end(2), "AGE") for m in _NAME_IS_AGE.finditer(t.text)
            if m.group(1) not in context.STOP and is_name(m.group(1), t)]  # fmt: skip


def _own_names(t: Text) -> list[Span]:
    """The participant's names, with their initials before them ("a m lee") or alone when
    three or more ("A.M.L.")."""
    if not t.names:
        return []
    names = "|".join(map(re.escape, t.names))
    initial = rf"\b[{re.escape(''.join(sorted({n[0] for n in t.names})))}]\b\.?"
    own = rf"(?:{initial}\s*){{0,3}}\b(?:{names})(?:'s)?\b|{initial}(?:\s*{initial}){{2,}}"
    return [Span(m.start(), m.end(), "PERSON") for m in re.finditer(own, t.text, re.I)]


def _g(name: str, entity: str, find: Callable[..., list[Span]], *extra: str, case: str = "any"
       ) -> Recognizer:  # fmt: skip
    """A recognizer of the gazetteer stage: its finder reads the gazetteer (and, by name, the
    word frequencies or `common`)."""

    def run(t: Text) -> list[Span]:
        args = {"freq": t.freq, "common": ordinary().__contains__}
        return find(t.text, t.gaz, *(args[e] for e in extra))

    return R(name, entity, find=run, stage="gazetteer", case=case)


def R(name: str, entity: str, *args: Any, **kwargs: Any) -> Recognizer:
    """A recognizer with its examples and counterexamples from the data file."""
    own = {k: tuple(v) for k, v in data()["recognizers"].get(name, {}).items()}
    return Recognizer(name, entity, *args, **{**kwargs, **own})


def _patterned(name: str, entity: str, *spec: str) -> Recognizer:
    """A recognizer that is patterns alone ([registry] of patterns.toml: the names of its
    patterns, its stage if not "text", "lower" if it reads only text without capitals)."""
    stage = [w for w in spec if "." not in w and w != "lower"] or ["text"]
    return R(name, entity, tuple(pattern(w) for w in spec if "." in w), stage=stage[0],
             case="lower" if "lower" in spec else "any")


TEXT: tuple[Recognizer, ...] = (
    *(_patterned(name, *spec.split()) for name, spec in sections()["registry"].items()),
    *(R(n, e, find=lambda t, f=f: [Span(*s) for s in f(t.text)], case=c)
      for n, e, f, c in numbers.FINDERS),  # fmt: skip
    R("introduced", "PERSON", find=introduced),
    R("related", "PERSON", find=lambda t: _cue_names(_RELATED, t), stage="plain"),
    R("contact", "PERSON", find=lambda t: _cue_names(_CONTACT, t), stage="plain"),
    # typed, or without the gazetteer; with it, `pet_name` reads pets in lower-case text
    R("pet", "PET", find=lambda t: [] if t.lower and t.gaz else _cue_names(_PET, t, "PET")),
    R("foreign_street", "ADDRESS", find=lambda t: addresses.foreign_streets(t.text, t.nameish)),
    R("name_is_age", "AGE", find=_name_is_age),
    R("own_names", "PERSON", find=_own_names),
    R("street_widened", "ADDRESS", find=lambda t: addresses.widened(t.text, t.found, t.gaz)),
)
GAZETTEER: tuple[Recognizer, ...] = (
    _g("ordinary_word_name", "PERSON", ordinary_word_names),
    _g("typed_name", "PERSON", typed_names, case="typed"),
    R("truecased", "PERSON", find=lambda t: t.cased, stage="gazetteer", case="lower"),
    _g("pet_name", "PET", pet_names, case="lower"),
    _g("context_name", "PERSON", context_names, "common", case="lower"),
    _g("place_phrase", "PLACE", place_phrases, case="lower"),
    _g("org_name", "ORG", addresses.organisations),
    _g("unknown_name", "PERSON", unknown.unknown_names, "freq", "common", case="lower"),
    _g("unknown_opener", "PERSON", unknown.openers, "freq", "common", case="typed"),
)
# Run by the Redactor after the others (they read every span found): named for the manifest.
AFTER: tuple[Recognizer, ...] = (
    R("ner", "PERSON", stage="after"),
    R("landmarks", "PLACE", stage="after"),
    R("org_kind", "ORG", stage="after"),
    R("spelled_name", "PERSON", stage="after", case="lower"),
    R("propagate", "PERSON", stage="after"),
)
