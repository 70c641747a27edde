"""What an export contains under each option, and the per-row changes that follow:
columns each option adds or removes, pseudonyms, redaction, copied audio."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from companion.files import open_private, private_dir
from companion.research.deidentify import SALT_NAME, load_or_create_salt, pseudonym, redactor_for
from companion.research.ner import load_pipeline
from companion.settings.config import Home

# What each option adds to (or, for --deidentify, removes from) the plain export. Without
# --include-transcripts nothing a participant said leaves the device: these columns are
# omitted, and each answer's `status` and `attempts` remain.
TRANSCRIPT_COLUMNS = (("turns", "text"), ("self_reports", "raw_answer"),
                      ("self_reports", "value_text"))  # fmt: skip
OPTION_COLUMNS = {
    "--include-transcripts": {"adds": TRANSCRIPT_COLUMNS},
    "--include-audio": {"adds": (("turns", "audio_path"),)},
    "--deidentify": {"removes": (("participants", "name"),)},
}
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


class Transformer:
    """Per-row changes for de-identification, transcripts and audio."""

    def __init__(self, home: Home, out: Path, options: ExportOptions, names: list[str | None]):
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

    def columns(self, table: str, columns: list[str]) -> list[str]:
        chosen = {
            "--include-transcripts": self.options.include_transcripts,
            "--include-audio": self.options.include_audio,
            "--deidentify": self.options.deidentify,
        }
        drop = set()
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

    def text(self, value: str | None, said: bool = False) -> str | None:
        """Redacted free text; the NER pipeline reads only what a participant `said` (the
        companion's own lines are protocol wording and bank stories, plus names it knows)."""
        if not self.options.deidentify or value is None:
            return value
        for real, alias in self.ids.items():
            value = value.replace(real, alias)
        return self.redactor.redact(value, use_ner=said)

    def row(self, table: str, row: dict[str, Any]) -> dict[str, Any]:
        if table == "participants":
            row["id"] = self.pid(row["id"])
        elif table == "sessions":
            row["participant_id"] = self.pid(row["participant_id"])
        for t, col in FREE_TEXT:
            if t == table and col in row:
                said = table == "self_reports" or row.get("speaker") == "participant"
                row[col] = self.text(row[col], said)
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
