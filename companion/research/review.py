"""The review of a de-identified export: every redaction and every remaining token that looks
like an identifier, for a researcher to check in minutes, and the decisions read back.

`export --deidentify --include-transcripts` writes review.csv and review.html beside the
export (default OUT.review/, never inside OUT: the review holds the original words). Each row
has a stable id (table, row id, column, offsets, a hash of the original text), so a decision
survives a re-export with the same options: `keep` undoes a redaction (or leaves a flagged
token, the default), `redact` redacts a flagged token; empty keeps the default.

Risk of a flagged token (highest first; docs/research.md): a word capitalised inside a
sentence 3, plus 2 when it is no ordinary word; a lower-case rare word 2; digits 2, 6 for four
or more, 1 for one (a text that is only a one- or two-digit number, a scale answer, is not
flagged); a number word 4 in a run of three or more (a number said aloud), 1 beside a
redaction, else not flagged (a count, an answer on a scale); an ordinary word right before a
person's redaction 0 (a first name that is also a word, before a redacted surname), unless a
function word ("will" is flagged), relation or title; plus 2 for any token right beside a
redaction (a surname after a redacted first name).
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from companion.checksum import sha256_file
from companion.errors import CompanionError, printable
from companion.files import open_private, private_dir, read_input
from companion.research import cells
from companion.research.context import RELATIONS, STOP
from companion.research.deidentify import TAGS, regions
from companion.research.ner import Span
from companion.research.words import TOKEN, ordinary, word_set

CSV_NAME, HTML_NAME = "review.csv", "review.html"
COLUMNS = ("id", "decision", "kind", "risk", "table", "row", "column", "start", "end",
           "original", "replacement", "entity", "recognizers", "before", "after")  # fmt: skip
NEEDED = ("id", "decision")  # what --apply-review reads; `entity` too when present
DECISIONS = ("keep", "redact")
CONTEXT = 80  # characters shown either side
MAX_BYTES = 512 * 1024 * 1024
RULE = "review"  # the rule named by spans a researcher's `redact` added
DIGITS = re.compile(r"\d+")  # TOKEN reads words; digits are tokens of their own here
# The number words (the lists the de-identification reads numbers said aloud with).
NUMBER_WORDS = word_set("number_units", "number_teens", "number_tens", "number_words_plain")
PSEUDONYM = re.compile(r"\bS[0-9a-f]{12}\b")  # a participant id already replaced
CALENDAR = word_set("weekdays", "months")  # capitalised, yet identify nobody
# Beside a name, yet no part of it; "will" is a function word and the commonest such name.
PLAIN = STOP - {"will"} | RELATIONS | word_set("titles")
SENTENCE_END = re.compile(r"(?:^|[.!?:;\n])[\s\"'“‘(\[-]*$")


class ReviewError(CompanionError):
    """A review file or folder that cannot be used."""


@dataclass(frozen=True)
class Item:
    """One review row: a redaction (`kind` "redaction") or a flagged token ("flag")."""

    id: str
    kind: str
    risk: int
    table: str
    row: Any
    column: str
    start: int
    end: int
    original: str
    replacement: str
    entity: str
    recognizers: str
    before: str
    after: str
    decision: str = ""

    def cells(self) -> list[Any]:
        return [getattr(self, c) for c in COLUMNS]


def item_id(table: str, row: Any, column: str, start: int, end: int, original: str) -> str:
    digest = hashlib.sha256(original.encode()).hexdigest()[:12]
    return f"{table}:{row}:{column}:{start}-{end}:{digest}"


def default_dir(out: Path) -> Path:
    return out.with_name(f"{out.name}.review")


def check_dir(out: Path, review: Path) -> None:
    """Refuse a review folder inside the export (it is shared), around it, or already used."""
    export, target = out.absolute().resolve(), review.absolute().resolve()
    where = ("is inside" if target.is_relative_to(export)
             else "holds" if export.is_relative_to(target) else None)  # fmt: skip
    if where:
        raise ReviewError(f"--review: {printable(str(review))} {where} the export folder "
                          f"{printable(str(out))}, which is shared; choose a folder beside it "
                          f"(default {printable(str(default_dir(out)))})")  # fmt: skip
    if review.exists() and (not review.is_dir() or any(review.iterdir())):
        raise ReviewError(f"--review: {printable(str(review))} is not an empty folder; "
                          "choose a new one")  # fmt: skip


@dataclass(frozen=True)
class Decision:
    line: int
    word: str
    entity: str


@dataclass(frozen=True)
class Decisions:
    path: Path
    sha256: str
    by_id: dict[str, Decision]


def read_decisions(path: Path) -> Decisions:
    """A filled-in review.csv; a missing column, an unknown word or a repeated id is one
    line naming the file, the row and the field."""
    name = printable(str(path))
    text = read_input(path, "review file", MAX_BYTES, ReviewError)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    for column in NEEDED:
        if column not in header:
            raise ReviewError(f"{name}: review file has no column {column!r}; give the "
                              f"{CSV_NAME} an export wrote, its header row kept")  # fmt: skip
    by_id: dict[str, Decision] = {}
    for line, record in enumerate(reader, start=2):  # as a spreadsheet numbers rows
        row_id = (record.get("id") or "").strip()
        word = (record.get("decision") or "").strip().lower()
        entity = (record.get("entity") or "").strip().upper().strip("[]")
        if not row_id:
            raise ReviewError(f"{name}: row {line}: field id is empty; restore the row's id "
                              "from the review the export wrote or delete the row")  # fmt: skip
        if word and word not in DECISIONS:
            raise ReviewError(f"{name}: row {line}: field decision is {word!r}; write keep, "
                              "redact or leave it empty")  # fmt: skip
        if word == "redact" and entity and entity not in TAGS:
            raise ReviewError(f"{name}: row {line}: field entity is {entity!r}; write one of "
                              f"{', '.join(sorted(TAGS))}")  # fmt: skip
        if row_id in by_id:
            raise ReviewError(f"{name}: row {line}: field id {row_id!r} repeats row "
                              f"{by_id[row_id].line}; keep one of them")  # fmt: skip
        by_id[row_id] = Decision(line, word, entity)
    return Decisions(path, sha256_file(path), by_id)


def _context(text: str, tags: list[tuple[int, int, str]], lo: int, hi: int) -> str:
    """text[lo:hi] as the export reads it: every other redaction there shown as its tag."""
    out, pos = [], lo
    for start, end, tag in tags:
        if start < hi and end > lo:
            out += [text[pos : max(pos, start)], tag]
            pos = max(pos, end)
    out.append(text[pos:hi])
    return "".join(out)


def _tokens(text: str, taken: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
    """Words and digit runs outside `taken`, in order."""
    found = [(m.start(), m.end(), "word") for m in TOKEN.finditer(text)]
    found += [(m.start(), m.end(), "digits") for m in DIGITS.finditer(text)]
    return sorted(t for t in found if not any(t[0] < e and s < t[1] for s, e in taken))


def flags(text: str, taken: list[tuple[int, int]], common: Callable[[str], bool],
          people: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int, int, str]]:  # fmt: skip
    """(start, end, risk, entity) of each token that may identify someone; `taken`: the
    redacted regions, `people` those of them a person's; `common`: an ordinary English word
    beyond our own (a gazetteer's)."""
    taken = taken + [(m.start(), m.end()) for m in PSEUDONYM.finditer(text)]
    tokens = _tokens(text, taken)
    number = [k == "word" and text[s:e].lower() in NUMBER_WORDS for s, e, k in tokens]
    out = []
    for i, (start, end, kind) in enumerate(tokens):
        word = text[start:end]
        lower = word.lower().strip("'-")
        beside = any(0 <= start - e <= 2 or 0 <= s - end <= 2 for s, e in taken)
        if kind == "digits":
            if len(tokens) == 1 and len(word) <= 2:
                continue  # an answer on a scale ("4")
            risk, entity = (6 if len(word) >= 4 else 2 if len(word) > 1 else 1), "ID"
        elif number[i]:
            run = 1
            for step in (-1, 1):
                j = i + step
                while 0 <= j < len(tokens) and number[j]:
                    run, j = run + 1, j + step
            if run < 3 and not beside:
                continue  # a count or an answer on a scale ("two, I'd say")
            risk, entity = (4 if run >= 3 else 1), "ID"
        elif word[0].isupper() and lower.split("'")[0] != "i":
            rare = lower not in ordinary() and lower not in CALENDAR and not common(lower)
            if SENTENCE_END.search(text, 0, start) and not rare:
                continue  # an ordinary word opening a sentence
            risk, entity = 3 + 2 * rare, "DATE" if lower in CALENDAR else "PERSON"
        elif len(lower) > 2 and lower not in ordinary() and not common(lower):
            risk, entity = 2, "PERSON"
        elif len(lower) > 2 and lower not in PLAIN and any(0 <= s - end <= 2 for s, _ in people):
            risk, entity = 0, "PERSON"
        else:
            continue
        out.append((start, end, risk + 2 * beside, entity))
    return out


class Collector:
    """Gathers the review rows while an export redacts, applying `decisions` if given."""

    def __init__(self, decisions: Decisions | None, common: Callable[[str], bool]):
        self.decisions = decisions
        self.common = common
        self.items: list[Item] = []
        self.applied: Counter[str] = Counter()
        self.seen: set[str] = set()

    def _item(self, where: tuple[str, Any, str], text: str, tags: list[tuple[int, int, str]],
              start: int, end: int, **fields: Any) -> Item:  # fmt: skip
        table, row, column = where
        original = text[start:end]
        return Item(item_id(table, row, column, start, end, original), table=table, row=row,
                    column=column, start=start, end=end, original=original,
                    before=_context(text, tags, max(0, start - CONTEXT), start),
                    after=_context(text, tags, end, end + CONTEXT), **fields)  # fmt: skip

    def _decide(self, item: Item) -> Decision | None:
        if self.decisions is None:
            return None
        self.seen.add(item.id)
        return self.decisions.by_id.get(item.id)

    def spans(self, table: str, row: Any, column: str, text: str, spans: list[Span],
              said: bool) -> list[Span]:  # fmt: skip
        """The spans to apply to `text` once decisions are applied; flags are looked for only
        in what a participant said (the companion's lines are protocol and story wording)."""
        out: list[Span] = []
        where = (table, row, column)
        merged = regions(spans)
        tags = [(start, end, f"[{label}]") for start, end, label, _ in merged]
        for start, end, label, group in merged:
            rules = ", ".join(sorted({s.rule or "unnamed" for s in group}))
            item = self._item(where, text, tags, start, end, kind="redaction", risk=0,
                              replacement=f"[{label}]", entity=label, recognizers=rules)
            decision = self._decide(item)
            if decision and decision.word == "keep":
                self.applied["kept"] += 1
                item = replace(item, decision="keep")
            else:
                out += group
                if decision and decision.word:
                    self.applied["unchanged"] += 1
                    item = replace(item, decision=decision.word)
            self.items.append(item)
        if not said:
            return out
        people = [(s, e) for s, e, label, _ in merged if label == "PERSON"]
        taken = [(s, e) for s, e, *_ in merged]
        for start, end, risk, entity in flags(text, taken, self.common, people):
            item = self._item(where, text, tags, start, end, kind="flag", risk=risk,
                              replacement="", entity=entity, recognizers="")
            decision = self._decide(item)
            if decision and decision.word == "redact":
                label = decision.entity or entity
                out.append(Span(start, end, label, RULE))
                self.applied["redacted"] += 1
                item = replace(item, decision="redact", replacement=f"[{label}]", entity=label)
            elif decision and decision.word:
                self.applied["unchanged"] += 1
                item = replace(item, decision=decision.word)
            self.items.append(item)
        return out

    def finish(self) -> dict[str, Any] | None:
        """What --apply-review applied (for the manifest); a decision whose id matched no
        row is refused, since it would be lost silently."""
        if self.decisions is None:
            return None
        unmatched = {i: d for i, d in self.decisions.by_id.items() if i not in self.seen}
        lost = sorted((d.line, i) for i, d in unmatched.items() if d.word)
        if lost:
            line, ident = lost[0]
            raise ReviewError(
                f"{printable(str(self.decisions.path))}: row {line}: field id {ident!r} matches "
                "nothing in this export; export with the options the review was made with, "
                "or clear that row's decision"
            )
        return {"sha256": self.decisions.sha256, "kept": self.applied["kept"],
                "redacted": self.applied["redacted"], "unchanged": self.applied["unchanged"],
                "unmatched": len(unmatched)}  # fmt: skip

    def ordered(self) -> list[Item]:
        """Flags by risk, highest first, then every redaction, each in text order."""
        found = [i for i in self.items if i.kind == "flag"]
        found.sort(key=lambda i: -i.risk)  # stable: text order within a risk
        return found + [i for i in self.items if i.kind == "redaction"]

    def summary(self) -> dict[str, int]:
        kinds = Counter(i.kind for i in self.items)
        return {"redactions": kinds["redaction"], "flags": kinds["flag"]}


def write(folder: Path, items: list[Item], title: str) -> None:
    """review.csv and review.html in `folder` (private: they hold the original words)."""
    from companion.research.review_html import render

    private_dir(folder)
    with open_private(folder / CSV_NAME, "wb") as raw, \
            io.TextIOWrapper(raw, "utf-8", newline="") as f:  # fmt: skip
        writer = csv.writer(f, lineterminator="\r\n")
        writer.writerow(COLUMNS)
        for item in items:
            writer.writerow([cells.neutralise(v) if isinstance(v, str) and v and k not in NEEDED
                             else v for k, v in zip(COLUMNS, item.cells(), strict=True)])
    with open_private(folder / HTML_NAME, "wb") as f:
        f.write(render(items, COLUMNS, title).encode("utf-8"))
