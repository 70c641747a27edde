"""Export a home's study data for researchers: one file per table, codebook, manifest.

The export reads the database read-only (WAL lets a running session keep
writing). Transcripts and audio stay on the device unless asked for; with
--deidentify participant ids become salted pseudonyms and free text is redacted.
The manifest carries the device id and a sha256 of every file so `companion
merge` and the collect playbook can verify what arrived.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import logging
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlite_utils

from companion import __version__
from companion.checksum import sha256_file
from companion.clock import iso, utc_now
from companion.engine.protocol import Protocol, load_protocol
from companion.errors import CompanionError
from companion.files import open_private, private_dir, read_input, require_free, write_private
from companion.research import cells, codebook, datapackage, manifest_schema, review
from companion.research.identity import manifest_identities, salt_id
from companion.research.options import (
    FREE_TEXT,
    OPTION_COLUMNS,
    TRANSCRIPT_COLUMNS,
    ExportOptions,
    Transformer,
    option_columns,
)
from companion.settings.config import Config, Home, device_id, load_config
from companion.settings.validate import parse_json
from companion.store import exports, schema
from companion.store.db import schema_version
from companion.store.readonly import ReadOnly

log = logging.getLogger(__name__)
__all__ = ["FREE_TEXT", "OPTION_COLUMNS", "TRANSCRIPT_COLUMNS", "ExportOptions", "export_home",
           "read_manifest"]  # fmt: skip

MANIFEST = "manifest.json"
MANIFEST_FORMAT = manifest_schema.MANIFEST_FORMAT
TABLES = schema.EXPORTED
Progress = Callable[[int], None]


MAX_MANIFEST_BYTES = 16 * 1024 * 1024  # a manifest lists files and tables: far below this


class ExportError(CompanionError):
    """An export cannot be written or read (target not empty, manifest broken, ...)."""


@dataclass(frozen=True)
class ExportResult:
    out: Path
    device_id: str
    rows: dict[str, int]
    files: dict[str, str] = field(default_factory=dict)  # relative path -> sha256
    total_bytes: int = 0
    review: Path | None = None  # the review's folder, beside `out`


def count_rows(db: sqlite_utils.Database, options: ExportOptions) -> int:
    """Rough row total for the progress bar."""
    return exports.row_total(db, TABLES)


def _write_table(path: Path, fmt: str, columns: list[str], rows: Iterator[dict[str, Any]]) -> int:
    n = 0
    # newline="": the csv module writes its own line endings, also inside quoted fields.
    with open_private(path, "wb") as raw, io.TextIOWrapper(raw, "utf-8", newline="") as f:
        if fmt == "csv":
            # CRLF (RFC 4180): Python 3.11 quotes a cell holding CR only if CR ends rows.
            writer = csv.writer(f, lineterminator="\r\n")
            writer.writerow(columns)
            for row in rows:
                writer.writerow([cells.neutralise(row[c]) for c in columns])
                n += 1
        else:
            for row in rows:
                f.write(json.dumps({c: row[c] for c in columns}, ensure_ascii=False) + "\n")
                n += 1
    return n


def _protocols(protocol: Protocol | None, db: sqlite_utils.Database):
    """Codebook protocols: those recorded in the database, else the device's protocol file."""
    entries = [codebook.recorded_entry(row) for row in exports.recorded_protocols(db)]
    known = {(p["id"], p["version"]) for p in entries}
    if protocol and (protocol.id, protocol.version) not in known:
        entries.append(codebook.protocol_entry(protocol))
        known.add((protocol.id, protocol.version))
    used = exports.protocols_used(db)
    notes = []
    for pid, version in used:
        if (pid, version) not in known:
            notes.append(
                f"Sessions used protocol {pid} v{version}, whose file is not on this device; "
                "see the study's protocol archive for its wording."
            )
    return entries, notes


def _write_tables(
    db: sqlite_utils.Database,
    out: Path,
    options: ExportOptions,
    transform: Transformer,
    participant: str,
    progress: Progress | None,
) -> tuple[dict[str, int], dict[str, list[str]]]:
    rows: dict[str, int] = {}
    exported: dict[str, list[str]] = {}
    present = exports.tables(db)
    selection = exports.Selection(options.participant, options.since, options.until, participant)
    for table, (sql, args) in exports.queries(selection).items():
        if table not in present:  # a database older than the table: say so in the codebook
            continue
        columns = transform.columns(table, exports.columns(db, table))
        exported[table] = columns

        def produce(table=table, sql=sql, args=args) -> Iterator[dict[str, Any]]:
            for i, row in enumerate(transform.rows(table, exports.rows(db, sql, args)), start=1):
                if progress and i % 500 == 0:
                    progress(500)
                yield row

        name = f"{table}.{options.format}"
        rows[table] = _write_table(out / name, options.format, columns, produce())
        if progress:
            progress(rows[table] % 500)
    return rows, exported


def export_home(
    home: Home, out: Path, options: ExportOptions, progress: Progress | None = None
) -> ExportResult:
    """Write the export to the new directory `out`; the home is only read (the device id and,
    with --deidentify, the salt are created there the first time they are needed)."""
    if options.format not in ("csv", "jsonl"):
        raise ExportError(f"--format: {options.format!r} is not csv or jsonl")
    if out.exists() and any(out.iterdir()):
        raise ExportError(f"{out}: output directory is not empty; choose a new one")
    folder = _review_folder(out, options)
    # A bad review file is refused before anything is written.
    decisions = review.read_decisions(options.apply_review) if options.apply_review else None
    config = load_config(home)
    parent = next(p for p in (out.absolute(), *out.absolute().parents) if p.exists())
    require_free(parent, 10, "an export")
    # Written beside `out` and renamed into place: a failure (a full disk) leaves no half export.
    staging = out.with_name(f".{out.name}.partial")
    # The review (beside, not in, the export) is staged alike; both are renamed at the end.
    review_staging = folder.with_name(f".{folder.name}.partial") if folder else None
    pairs = [(staging, out), *([(review_staging, folder)] if review_staging and folder else [])]
    for temp, _ in pairs:
        shutil.rmtree(temp, ignore_errors=True)
    try:
        # One read transaction: every table as of one moment, even while a session writes
        # (else a turn or an answer could name a session row read before it existed).
        with ReadOnly(home.db_path) as reader, exports.snapshot(reader.db):
            result = _export(home, reader, staging, options, config, progress, review_staging,
                             decisions)  # fmt: skip
        for temp, target in reversed(pairs):
            if target.exists():
                target.rmdir()  # empty, checked above
            temp.rename(target)
    except BaseException:
        for temp, _ in pairs:
            shutil.rmtree(temp, ignore_errors=True)
        raise
    return dataclasses.replace(result, out=out, review=folder)


def _review_folder(out: Path, options: ExportOptions) -> Path | None:
    """Where the review goes (None: no review), refused inside the shared export."""
    if not options.reviewed:
        for flag, given in (("--review", options.review),
                            ("--apply-review", options.apply_review)):  # fmt: skip
            if given:
                raise ExportError(f"{flag}: a review comes only with --deidentify "
                                  f"--include-transcripts; add them or drop {flag}")
        return None
    folder = (options.review or review.default_dir(out)).absolute()
    review.check_dir(out, folder)
    return folder


def _export(
    home: Home,
    reader: ReadOnly,
    out: Path,
    options: ExportOptions,
    config: Config,
    progress: Progress | None,
    review_dir: Path | None = None,
    decisions: review.Decisions | None = None,
) -> ExportResult:
    try:
        protocol = load_protocol(config.protocol_path(home.path))
    except CompanionError as exc:
        log.warning("protocol not loadable for the codebook: %s", exc)
        protocol = None
    db = reader.db
    private_dir(out)
    dev = device_id(home)
    people = exports.participants(db)
    transform = Transformer(home, out, options, [*(n for _, n in people), config.participant_name],
                            decisions)  # fmt: skip
    if options.deidentify:
        for pid, _ in people:
            transform.pid(pid)  # learn every id first so free text can be rewritten
    rows, exported = _write_tables(db, out, options, transform, config.participant_id, progress)
    reviewed = None
    if transform.review is not None and review_dir is not None:
        applied = transform.review.finish()  # a decision that matches nothing is refused
        name = out.name.removeprefix(".").removesuffix(".partial")  # staged as .NAME.partial
        review.write(review_dir, transform.review.ordered(), f"Review of export {name}")
        reviewed = {**transform.review.summary(), **({"applied": applied} if applied else {})}
    protocols, notes = _protocols(protocol, db)
    notes.insert(0, cells.FORMAT_NOTES[options.format])
    for table in TABLES:
        if table not in rows:
            notes.append(
                f"Table {table} is not in this database (schema version {schema_version(db)}); "
                "update the companion on the device."
            )
    if options.deidentify:
        notes.append(
            "De-identified: participant ids are salted pseudonyms; in free text, names, places, "
            "organisations, e-mail addresses, phone numbers, street addresses, postcodes, "
            "dates, ages and id numbers, written or spoken, are replaced by their type "
            f"([PERSON], [PLACE], ...). Method: {transform.redactor.method}. The manifest's "
            "recognizers counts the spans each rule redacted (docs/research.md)."
        )
    if transform.audio_missing:
        notes.append(f"{transform.audio_missing} audio files named in turns were not found.")
    book = codebook.build_codebook(exported, protocols, notes, option_columns(options), reviewed)
    write_private(out / "codebook.json", codebook.to_json(book))
    write_private(out / "codebook.md", codebook.render_markdown(book))
    package = datapackage.build(out, exported, options.format, notes)
    write_private(out / datapackage.NAME, datapackage.to_json(package))
    reader.check()  # before the manifest: an export without one is never merged
    files = {
        str(p.relative_to(out)): sha256_file(p)
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }
    manifest = {
        "format": MANIFEST_FORMAT,
        "device_id": dev,
        "exported_at": iso(utc_now()),
        "companion_version": __version__,
        "schema_version": schema_version(db),
        "file_format": options.format,
        "options": {
            "participant": transform.pid(options.participant),
            "since": options.since.isoformat() if options.since else None,
            "until": options.until.isoformat() if options.until else None,
            "deidentified": options.deidentify,
            "transcripts": options.include_transcripts,
            "audio": options.include_audio,
            "redaction": transform.redactor.method if options.deidentify else None,
        },
        "tables": {
            t: {"file": f"{t}.{options.format}", "rows": rows[t], "columns": exported[t]}
            for t in rows
        },
        "files": {name: {"sha256": digest} for name, digest in files.items()},
    }
    if options.deidentify:  # lets merge link devices and tell people apart (identity.py)
        wanted = [(p, n) for p, n in people if options.participant in (None, p)]
        manifest["salt_id"] = salt_id(transform.salt)
        manifest["identities"] = manifest_identities(wanted, transform.pid, transform.salt)
        manifest["recognizers"] = dict(sorted(transform.recognizers.items()))
    if reviewed:  # counts only: the review itself holds the original words
        manifest["review"] = reviewed
    write_private(out / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    log.info("exported %s rows from %s to %s", sum(rows.values()), home.db_path, out)
    return ExportResult(out, dev, rows, files, total)


def read_manifest(export_dir: Path, verify: bool = True) -> dict[str, Any]:
    """Load an export's manifest and (by default) check every file's sha256."""
    path = export_dir / MANIFEST
    if not path.exists():
        raise ExportError(f"{path}: no manifest; is this a companion export?")
    # bounded, a regular file only, nesting limited: a manifest comes from another device
    manifest = parse_json(read_input(path, "export manifest", MAX_MANIFEST_BYTES, ExportError),
                          str(path), ExportError)  # fmt: skip
    refused = manifest_schema.refusal(path, manifest)
    if refused:
        raise ExportError(refused)
    if verify:
        for name, meta in manifest["files"].items():
            file = export_dir / name
            try:
                inside = file.resolve().is_relative_to(export_dir.resolve())
                digest = sha256_file(file) if inside and file.is_file() else None
            except (OSError, ValueError) as exc:  # a NUL in the name, a file unreadable
                raise ExportError(f"{path}: file {name!r} cannot be read ({exc})") from exc
            if not inside:
                raise ExportError(f"{path}: file {name!r} is outside the export; refused")
            if digest is None:
                raise ExportError(f"{file}: listed in the manifest but missing; copy it again")
            if digest != meta["sha256"]:
                raise ExportError(f"{file}: sha256 does not match the manifest; copy it again")
    return manifest
