"""De-identification for exports: transcript redaction (the salted pseudonyms are in
`identity`). Redaction unites the recognizers of the registry (`recognizers`: written and
spoken forms, names from their context) and, an optional extra, a named-entity pipeline
(`ner`) with gazetteers. It is deliberately greedy: a redacted ordinary word costs less than
a leaked address.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from companion.research import context, intros, unknown
from companion.research.casing import truecase, widen
from companion.research.gazetteer import Gazetteer, load_gazetteer
from companion.research.landmarks import with_places
from companion.research.ner import Pipeline, Span, tag
from companion.research.propagate import propagate
from companion.research.recognizers import GAZETTEER, TEXT, Recognizer, Text, introduced
from companion.research.words import TOKEN, ordinary

# Every tag a redaction writes, the most specific first.
TAGS = ("EMAIL", "ID", "PHONE", "ADDRESS", "AGE", "DATE", "PET", "PERSON", "PLACE", "ORG")
_WIDEST = frozenset(("EMAIL", "ID", "PHONE", "ADDRESS", "ORG"))


@dataclass(frozen=True)
class Redactor:
    """Replaces identifying spans with their type: [PERSON], [PLACE], [ORG], [EMAIL],
    [PHONE], [ADDRESS], [DATE], [AGE], [ID], [PET]. Patterns (written and spoken forms, the
    names it was given) always run; `ner` adds what a named-entity pipeline finds."""

    names: tuple[str, ...] = ()
    ner: Pipeline | None = None
    gazetteer: Gazetteer | None = None  # used with `ner` (both are the deidentify extra)
    # Names the participant gave as theirs ("my surname is pennick"), redacted from then on.
    learned: set[str] = field(default_factory=set, compare=False)
    # Short forms of the first names ("zel", "zellie" for Zelda), none an ordinary word.
    short: tuple[str, ...] = ()
    # Names found once in this export, redacted wherever else they are said (`propagate`).
    propagated: dict[str, bool] = field(default_factory=dict, compare=False)
    # Recognizers switched off (by name: `bench_pii.py --by-rule` measures each).
    off: frozenset[str] = frozenset()

    @property
    def method(self) -> str:
        return f"patterns+ner ({self.ner.name})+gazetteers+wordfreq" if self.ner else "patterns"

    def own(self) -> tuple[str, ...]:
        return (*self.names, *sorted(self.learned, key=len, reverse=True), *self.short)

    def learn(self, texts: list[str]) -> None:
        """Remember the participant's own names in `texts`, to redact them in every text:
        the names they give (`recognizers.introduced`), the word after a name they were
        given ("ann lee") and, typed, a capitalised name after any of theirs ("Ann Marie
        Lee")."""
        self._learn(t[s.start : s.end] for t in texts for s in introduced(Text(t, self.nameish)))
        self._learn(m.group(1) for m in _after(self.names, texts))
        size = -1
        while size != len(self.learned):
            size = len(self.learned)
            self._learn(m.group(1) for m in _after(self.own(), texts) if not m.string.islower())

    def _learn(self, words: Iterable[str]) -> None:
        skip = intros.GLUE_WORDS | intros.PARTICLES
        lowered = (word.lower().removesuffix("'s") for word in words)
        self.learned.update(p for w in lowered for p in {w, *w.split("-")}  # and its parts
                            if len(p) > 2 and p not in skip and self.nameish(p))  # fmt: skip

    def nameish(self, word: str) -> bool:
        """A lower-case word that may be a name: no ordinary word (by the gazetteer when
        there is one, else by our own sentences), or a known name that is no common word."""
        if word in ordinary():
            return False
        gaz = self.gazetteer
        return gaz is None or not gaz.is_ordinary(word) or word in gaz.people

    def _run(self, t: Text, rules: Iterable[Recognizer]) -> list[Span]:
        for r in rules:
            if r.name not in self.off and r.applies(t):
                t.found += r.spans(t)
        return t.found

    def spans_many(self, texts: list[str], use_ner: bool = True) -> list[list[Span]]:
        """Every span to redact in each text (the NER pipeline runs over all in batches).
        With the pipeline, the gazetteer adds names and places, and text without capitals
        is read through a truecased copy (`casing`)."""
        gaz = self.gazetteer
        self.learn(texts)
        if not use_ner or self.ner is None or gaz is None:
            return [self._run(Text(text, self.nameish, names=self.own()), TEXT) for text in texts]
        found, views, freq = [], [], unknown.load_frequencies()
        common = ordinary().__contains__
        for text in texts:
            t = Text(text, self.nameish, gaz, freq, self.own())
            self._run(t, (r for r in TEXT if r.stage == "text"))
            view, t.cased = truecase(text, gaz, common) if t.lower else (text, [])
            views.append(unknown.name_candidates(view, gaz, freq) if t.lower else text)
            found.append(self._run(t, GAZETTEER))
        entities = self.ner.spans(views) if "ner" not in self.off else [[] for _ in texts]
        out = []
        for text, view, spans, ents in zip(texts, views, found, entities, strict=True):
            if view is not text:  # no capitals: a guess on words left lower case is weak
                ents = [e for e in ents if not _all_ordinary(view, e, gaz)]
            spans = with_places(text, widen(text, spans + ents, gaz, common), gaz)
            spans = [s for s in spans if s.rule not in self.off]  # "landmarks", "org_kind"
            if text.islower() and "spelled_name" not in self.off:
                spans += tag("spelled_name", unknown.spelled(text, spans))
            out.append(spans)
        return out if "propagate" in self.off else propagate(texts, out, self.propagated, gaz, freq)

    def redact(self, text: str | None, use_ner: bool = True) -> str | None:
        return apply_spans(text, self.spans_many([text], use_ner)[0]) if text else text


def _after(names: Iterable[str], texts: list[str]) -> Iterator[re.Match[str]]:
    """The word after each of `names` in `texts` (capitalised where the text has capitals)."""
    if not (names := list(names)):
        return iter(())
    after = re.compile(rf"\b(?i:{'|'.join(map(re.escape, names))})\s+({TOKEN.pattern})")
    return (m for text in texts for m in after.finditer(text)
            if text.islower() or m.group(1)[0].isupper())  # fmt: skip


def _all_ordinary(view: str, span: Span, gaz: Gazetteer) -> bool:
    """Every word of the span in lower case in the truecased copy and an ordinary word."""
    words = view[span.start : span.end].split()
    return all(w.islower() and gaz.is_ordinary(w.strip("'-")) for w in words)


def regions(spans: list[Span]) -> list[tuple[int, int, str, list[Span]]]:
    """Overlapping spans merged: (start, end, tag, spans); the tag is the most specific, or of
    things with parts a rule (not NER) found, the widest span's (a postcode in an address)."""
    groups: list[tuple[int, int, list[Span]]] = []
    for s in sorted(spans, key=lambda s: (s.start, -s.end)):
        if groups and s.start < groups[-1][1]:
            groups[-1] = (groups[-1][0], max(groups[-1][1], s.end), [*groups[-1][2], s])
        else:
            groups.append((s.start, s.end, [s]))
    return [(start, end, min(group, key=_rank).label, group) for start, end, group in groups]


def _rank(s: Span) -> tuple[int, int]:
    wide = s.label in _WIDEST and s.rule != "ner"
    return (-(s.end - s.start) if wide else 0, TAGS.index(s.label))


def apply_spans(text: str, spans: list[Span]) -> str:
    """Replace the union of `spans` with their tags (`regions`)."""
    out, pos = [], 0
    for start, end, label, _ in regions(spans):
        out += [text[pos:start], f"[{label}]"]
        pos = end
    return "".join(out) + text[pos:]


def redactor_for(
    names: Iterable[str | None], ner: Pipeline | None = None, off: Iterable[str] = ()
) -> Redactor:
    """Names to redact: each full name and its parts (so 'Ann Lee' also hides 'Ann'), and
    the short forms of its first name; `off`: recognizers switched off."""
    given = [name.strip() for name in names if name and name.strip()]
    parts = {part for name in given for part in name.split() if len(part) >= 2}
    gazetteer = load_gazetteer() if ner is not None else None  # fails before anything is written
    freq = unknown.load_frequencies() if ner is not None else {}
    # A short form that is a common word ("pat", "sue", "robe") or another known part stays;
    # an English word only when hardly ever written (Zipf < 3), or a three-letter beginning.
    short = {nick for name in given for nick in intros.nicknames(name.split()[0])}
    short -= ordinary() | context.STOP | {n.lower() for n in {*given, *parts}}
    if gazetteer is not None:
        short = {w for w in short if w not in gazetteer.ordinary or w not in freq
                 or len(w) == 3 and any(n.lower().startswith(w) for n in given)}  # fmt: skip
    own = tuple(sorted({*given, *parts}, key=len, reverse=True))
    short_forms = tuple(sorted(short, key=len, reverse=True))
    return Redactor(own, ner, gazetteer, short=short_forms, off=frozenset(off))
