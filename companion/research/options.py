"""What an export contains under each option, and the per-row changes that follow:
columns each option adds or removes, pseudonyms, redaction, copied audio."""

from __future__ import annotations

import itertools
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from companion.files import open_private, private_dir, read_input
from companion.research.deidentify import apply_spans, redactor_for
from companion.research.identity import SALT_NAME, load_or_create_salt, pseudonym
from companion.research.ner import load_pipeline
from companion.research.review import Collector, Decisions
from companion.settings.config import Home

# What each option adds to (or, for --deidentify, removes from) the plain export. Without
# --include-transcripts nothing a participant said leaves the device: these columns are
# omitted, and each answer's `status` and `attempts` remain.
Columns = tuple[tuple[str, str], ...]
TRANSCRIPT_COLUMNS: Columns = (("turns", "text"), ("self_reports", "raw_answer"),
                               ("self_reports", "value_text"))  # fmt: skip
OPTION_COLUMNS: dict[str, dict[str, Columns]] = {
    "--include-transcripts": {"adds": TRANSCRIPT_COLUMNS},
    "--include-audio": {"adds": (("turns", "audio_path"),)},
    "--deidentify": {"removes": (("participants", "name"),)},
}
BATCH = 64  # rows redacted together
# Free text that is redacted when exported with --deidentify.
FREE_TEXT = {*TRANSCRIPT_COLUMNS, ("events", "detail")}


@dataclass(frozen=True)
class ExportOptions:
    format: str = "csv"  # csv or jsonl
    participant: str | None = None
    since: date | None = None
    until: date | None = None
    deidentify: bool = False
    include_transcripts: bool = False
    include_audio: bool = False
    salt_file: Path | None = None  # None = HOME/export_salt
    extra_names: tuple[str, ...] = ()
    patterns_only: bool = False  # de-identify transcripts without the NER pipeline
    # The review (--deidentify --include-transcripts): its folder (None = OUT.review beside
    # the export) and a filled-in review.csv whose decisions to apply (research.review).
    review: Path | None = None
    apply_review: Path | None = None

    @property
    def reviewed(self) -> bool:
        return self.deidentify and self.include_transcripts


def option_columns(options: ExportOptions) -> dict[str, Any]:
    """For the codebook: which columns each option adds or removes, and whether it was used."""
    used = {
        "--include-transcripts": options.include_transcripts,
        "--include-audio": options.include_audio,
        "--deidentify": options.deidentify,
    }
    return {
        option: {
            "used": used[option],
            **{kind: [f"{t}.{c}" for t, c in cols] for kind, cols in change.items()},
        }
        for option, change in OPTION_COLUMNS.items()
    }


def load_names_file(path: Path) -> list[str]:
    """One name per line; blank lines and # comments ignored."""
    lines = read_input(path, "names file", 16 * 1024 * 1024).splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _never(word: str) -> bool:
    return False


class Transformer:
    """Per-row changes for de-identification, transcripts and audio."""

    def __init__(self, home: Home, out: Path, options: ExportOptions, names: list[str | None],
                 decisions: Decisions | None = None):  # fmt: skip
        self.home, self.out, self.options = home, out, options
        self.salt = b""
        if options.deidentify:
            self.salt = load_or_create_salt(options.salt_file or home.path / SALT_NAME)
        ner = None
        if options.deidentify and options.include_transcripts and not options.patterns_only:
            ner = load_pipeline()  # one line naming the extra when it is not installed
        self.redactor = redactor_for([*names, *options.extra_names], ner)
        self.ids: dict[str, str] = {}
        self.audio_missing = 0
        self.recognizers: Counter[str] = Counter()  # spans per recognizer (the manifest's)
        self.review: Collector | None = None
        if options.reviewed:
            gaz = self.redactor.gazetteer
            self.review = Collector(decisions, gaz.is_ordinary if gaz else _never)

    def columns(self, table: str, columns: list[str]) -> list[str]:
        chosen = {
            "--include-transcripts": self.options.include_transcripts,
            "--include-audio": self.options.include_audio,
            "--deidentify": self.options.deidentify,
        }
        drop: set[str] = set()
        for option, change in OPTION_COLUMNS.items():
            if chosen[option]:
                drop.update(col for t, col in change.get("removes", ()) if t == table)
            else:
                drop.update(col for t, col in change.get("adds", ()) if t == table)
        return [c for c in columns if c not in drop]

    def pid(self, value: str | None) -> str | None:
        if value is None or not self.options.deidentify:
            return value
        if value not in self.ids:
            self.ids[value] = pseudonym(value, self.salt)
        return self.ids[value]

    def rows(self, table: str, rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """The rows as exported; free text is redacted a batch at a time (the NER pipeline
        is several times faster over a batch than text by text)."""
        source = iter(rows)
        while batch := list(itertools.islice(source, BATCH)):
            changed = [self.row(table, row) for row in batch]
            if self.options.deidentify:
                self.redact(table, changed)
            yield from changed

    def redact(self, table: str, rows: list[dict[str, Any]]) -> None:
        """Redact the free text of `rows` in place; the NER pipeline reads only what a
        participant said (the companion's lines are protocol wording and bank stories; the
        names it knows are still redacted there)."""
        for t, col in FREE_TEXT:
            if t != table or not rows or col not in rows[0]:
                continue
            for use_ner in (True, False):
                chosen = [r for r in rows if r[col] and self.said(table, r) == use_ner]
                texts = [self.aliases(r[col]) for r in chosen]
                spans = self.redactor.spans_many(texts, use_ner)
                for row, text, found in zip(chosen, texts, spans, strict=True):
                    if self.review is not None:
                        found = self.review.spans(table, row["id"], col, text, found, use_ner)
                    row[col] = apply_spans(text, found)
                    self.recognizers.update(s.rule for s in found)

    @staticmethod
    def said(table: str, row: dict[str, Any]) -> bool:
        return table == "self_reports" or row.get("speaker") == "participant"

    def aliases(self, text: str) -> str:
        for real, alias in self.ids.items():
            text = text.replace(real, alias)
        return text

    def row(self, table: str, row: dict[str, Any]) -> dict[str, Any]:
        if table == "participants":
            row["id"] = self.pid(row["id"])
        elif table == "sessions":
            row["participant_id"] = self.pid(row["participant_id"])
        if table == "turns" and self.options.include_audio and row.get("audio_path"):
            row["audio_path"] = self.copy_audio(row)
        return row

    def copy_audio(self, row: dict[str, Any]) -> str | None:
        source = Path(row["audio_path"])
        if not source.is_absolute():
            source = self.home.path / source
        if not source.is_file():
            self.audio_missing += 1
            return None
        target = self.out / "audio" / f"s{row['session_id']}_t{row['seq']}{source.suffix}"
        private_dir(target.parent)
        with source.open("rb") as src, open_private(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
        return str(target.relative_to(self.out))
