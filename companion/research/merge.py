"""Merge many devices' exports into one study database.

Each per-device row (sessions, turns, exposures, answers, events, invitations) keeps
its provenance: `device_id` and its id on that device (`source_id`); session
references are renumbered to the study database's ids. Participants, stories and
protocols are shared across devices under their own keys; a duplicate must agree
on what identifies it (a story's text, a protocol's wording) or the export is refused.
Every export of a command is merged in one transaction, all or nothing, after every
manifest is checked against its schema and the target is found to be a study database.
A row already merged under the same device and id is compared by `research.progress`:
identical or older (an export taken before the device went on) is skipped, further along
(a session that ended since) replaces the merged values, anything else is a conflict that
refuses the whole command with nothing written. So re-merging is a no-op and exports of
one device may be merged in any order: each row reaches the study database once, in its
latest state.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import re
import sqlite3
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlite_utils

from companion.clock import utc_now
from companion.errors import CompanionError
from companion.research import identity, progress
from companion.research.cells import restore
from companion.research.export import read_manifest
from companion.settings.config import check_id
from companion.settings.validate import one_line
from companion.store import study
from companion.store.db import transaction
from companion.store.schema import TABLES

log = logging.getLogger(__name__)

# Tables whose rows belong to one device (renumbered, with provenance), in dependency order.
DEVICE_TABLES = ("sessions", "turns", "story_exposures", "self_reports", "events", "invitations")
# Keyed by their own primary key across devices. A duplicate must agree on the columns that
# identify it; the rest (first-seen times) may differ per device and the first merged is kept.
SHARED_TABLES = {
    "participants": ("name", "timezone"),
    "stories": ("content_hash",),
    "protocols": ("title", "definition"),
}
# Columns holding a participant id, checked by `participant_id` as they are read.
PARTICIPANT_COLUMNS = {"participants": ("id",), "sessions": ("participant_id",)}


class MergeError(CompanionError):
    """An export cannot be merged (conflicting rows, mixed de-identification, bad files)."""


@dataclass(frozen=True)
class MergeResult:
    device_id: str
    added: dict[str, int]
    skipped: dict[str, int]  # already merged as they are, or merged later than this export
    warnings: tuple[str, ...] = ()  # identity warnings (the default participant id)
    updated: dict[str, int] = field(default_factory=dict)  # progressed since merged


def participant_id(value: Any) -> Any:
    """The id as merge stores it: settings' one id rule (NFKC, then ASCII letters, digits,
    '.', '_', '-'), a ValueError otherwise, so a letter of another script (a Cyrillic Р for P)
    never passes for an existing id."""
    if not isinstance(value, str):
        return value  # a missing id is the codebook's concern (_convert)
    return check_id(value, "participant id", ValueError)


def open_study(path: Path, schema: bool = True) -> sqlite_utils.Database:
    refused = study.target_refusal(path)
    if refused:  # checked before anything is created or added there
        raise MergeError(f"{path}: {refused}")
    try:
        return study.open_study(path, SHARED_TABLES, DEVICE_TABLES, schema)
    except sqlite3.DatabaseError as exc:
        raise MergeError(f"{path}: not a usable study database ({exc})") from exc


def _convert(table: str, column: str, value: Any, text_cells: bool = True) -> Any:
    """A cell as the codebook types it; anything else (4.7 or true for an INTEGER, NaN, a
    number for TEXT) is refused rather than stored as something the device never wrote."""
    if value is None:
        return None
    col = TABLES[table].column(column)
    kind = col.type if col else "TEXT"
    if isinstance(value, str) and kind in ("INTEGER", "REAL") and not text_cells:
        raise ValueError(f"{column} must be a number in JSONL, got {value!r}")
    if kind == "INTEGER":
        if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,19}", value.strip()):
            return int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ValueError(f"{column} must be a whole number, got {value!r}")
    if kind == "REAL":
        number = float(value) if isinstance(value, str) else value
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise ValueError(f"{column} must be a number, got {value!r}")
        if not math.isfinite(number):
            raise ValueError(f"{column} must be a finite number, got {value!r}")
        return number
    if kind == "TEXT" and not isinstance(value, str):
        raise ValueError(f"{column} must be text, got {value!r}")
    return value


def _export_file(export_dir: Path, manifest: dict[str, Any], name: Any) -> Path:
    """A file the manifest names: inside the export and checksummed (read_manifest verified
    every file in manifest["files"]), else the export is refused."""
    if not isinstance(name, str) or name not in manifest.get("files", {}):
        raise MergeError(f"{export_dir}: {name!r} is not a checksummed file of this export")
    path = (export_dir / name).resolve()
    if not path.is_relative_to(export_dir.resolve()):
        raise MergeError(f"{export_dir}: {name!r} points outside the export; refused")
    return path


def _format1_cell(value: str) -> str | None:
    return value or None


def read_table(export_dir: Path, manifest: dict[str, Any], table: str) -> Iterator[dict]:
    meta = manifest["tables"].get(table)
    if meta is None:
        return
    path = _export_file(export_dir, manifest, meta.get("file"))
    csv.field_size_limit(sys.maxsize)  # a long story turn is one cell
    for column in meta["columns"]:
        if TABLES[table].column(column) is None:
            raise MergeError(f"{path}: unknown column {column!r}; update companion")
    # A CSV cell is text: format 2 exports neutralised formula-like cells (undone exactly here);
    # format 1 wrote every value as stored, with an empty cell for NULL. JSONL is exact.
    cell: Callable[[str], str | None] | None = None
    if manifest["file_format"] == "csv":
        cell = restore if manifest["format"] >= 2 else _format1_cell
    try:
        with path.open(encoding="utf-8", newline="") as f:
            if manifest["file_format"] == "csv":
                reader: Iterator[dict] = csv.DictReader(f)
            else:
                reader = (json.loads(line) for line in f if line.strip())
            for n, raw in enumerate(reader, start=2):
                if cell is not None:
                    raw = {c: cell(v) if isinstance(v, str) else v for c, v in raw.items()}
                try:
                    row = {c: _convert(table, c, raw[c], cell is not None) for c in meta["columns"]}
                    for column in PARTICIPANT_COLUMNS.get(table, ()):
                        if column in row:
                            row[column] = participant_id(row[column])
                    yield row
                except (KeyError, ValueError, TypeError) as exc:
                    raise MergeError(f"{path}: row {n}: bad value ({exc})") from exc
    except OSError as exc:
        raise MergeError(f"{path}: cannot read ({exc.strerror})") from exc
    except (csv.Error, ValueError, UnicodeDecodeError) as exc:
        raise MergeError(f"{path}: unreadable ({one_line(str(exc))[:200]})") from exc


def _check_mode(db: sqlite_utils.Database, manifest: dict[str, Any], source: Path) -> None:
    mode = "deidentified" if manifest["options"]["deidentified"] else "identified"
    held = study.meta(db, "ids")
    if held is None:
        study.set_meta(db, "ids", mode)
    elif held != mode:
        raise MergeError(
            f"{source}: export is {mode} but the study database holds {held} data; "
            "export every device the same way"
        )


def _conflict(source: Path, table: str, key: Any, device: str, column: str) -> MergeError:
    return MergeError(
        f"{source}: {table} row {key} from device {device} conflicts with the merged copy "
        f"(column {column} differs); was this device's data changed or its id reused?"
    )


def _merge_shared(db, source: Path, table: str, rows: Iterator[dict], device: str) -> int:
    added = 0
    key = TABLES[table].key
    for row in rows:
        cols = list(row)
        found = study.shared_row(db, table, cols, {k: row[k] for k in key})
        if found is None:
            study.insert_shared(db, table, row)
            added += 1
        else:
            for col in SHARED_TABLES[table]:
                if col in row and found[cols.index(col)] != row[col]:
                    label = "/".join(str(row[k]) for k in key)
                    raise _conflict(source, table, label, device, col)
        if table == "participants":
            study.link_device(db, row["id"], device)
    return added


def _merge_device(db, source: Path, table: str, rows: Iterator[dict], device: str,
                  sessions: dict[int, int]) -> tuple[int, int, int]:  # fmt: skip
    added = skipped = updated = 0
    for row in rows:
        source_id = row.pop("id")
        if "session_id" in row and row["session_id"] is not None:
            if row["session_id"] not in sessions:
                raise MergeError(f"{source}: {table} row {source_id} names a session not exported")
            row["session_id"] = sessions[row["session_id"]]
        cols = list(row)
        found = study.device_row(db, table, cols, device, source_id)
        if found is None:
            new_id = study.insert_device_row(db, table, device, source_id, row)
            added += 1
        else:
            verdict = progress.compare(table, dict(zip(cols, found[1:], strict=True)), row)
            if verdict.conflict:
                raise _conflict(source, table, source_id, device, verdict.conflict)
            if verdict.newer:  # the device went on since: its later state replaces ours
                study.update_device_row(db, table, found[0], {c: row[c] for c in verdict.newer})
                updated += 1
            else:  # the same, or an older export than one merged before: keep the newer
                skipped += 1
            new_id = found[0]
        if table == "sessions":
            sessions[source_id] = new_id
    return added, skipped, updated


def _check_scales(db: sqlite_utils.Database, source: Path, device: str) -> None:
    """Every answer of this device within its item's scale, as its protocol recorded it."""
    scales: dict[tuple[Any, ...], tuple[int, int]] = {}
    for pid, version, definition in study.protocol_definitions(db):
        try:
            for inst in json.loads(definition)["instruments"]:
                for item in inst["items"]:
                    if "scale" in item:
                        scales[(pid, version, inst["id"], item["id"])] = tuple(item["scale"])
        except (ValueError, KeyError, TypeError) as exc:
            raise MergeError(f"{source}: protocol {pid} v{version}: unreadable ({exc})") from exc
    for source_id, instrument, item, value, pid, version in study.device_answers(db, device):
        scale = scales.get((pid, version, instrument, item))
        if scale is not None and not scale[0] <= value <= scale[1]:
            raise MergeError(
                f"{source}: self_reports row {source_id}: value {value} is outside the scale "
                f"{scale[0]}..{scale[1]} of {instrument}.{item}; the export was altered"
            )


def _merge_one(
    db: sqlite_utils.Database, export_dir: Path, manifest: dict[str, Any],
    same_person: frozenset[str],
) -> MergeResult:  # fmt: skip
    """One export whose manifest `read_manifest` checked, in the caller's transaction."""
    device = manifest["device_id"]
    key = "|".join(f"{n}:{m['sha256']}" for n, m in sorted(manifest["files"].items()))
    added: dict[str, int] = {}
    skipped: dict[str, int] = {}
    updated: dict[str, int] = {}
    _check_mode(db, manifest, export_dir)
    warnings: list[str] = []
    for table in SHARED_TABLES:
        rows = read_table(export_dir, manifest, table)
        if table == "participants":  # who they are: identity checks (identity.py)
            checked, warnings = identity.check(db, manifest, export_dir, list(rows), same_person)
            rows = iter(checked)
        added[table] = _merge_shared(db, export_dir, table, rows, device)
        skipped[table] = manifest["tables"].get(table, {}).get("rows", 0) - added[table]
    sessions: dict[int, int] = {}
    for table in DEVICE_TABLES:
        rows = read_table(export_dir, manifest, table)
        added[table], skipped[table], updated[table] = _merge_device(
            db, export_dir, table, rows, device, sessions
        )
    _check_scales(db, export_dir, device)
    study.record_merge(db, key, device, manifest["exported_at"], utc_now(), str(export_dir),
                       json.dumps(added))  # fmt: skip
    log.info("merged %s from device %s: %s added, %s updated", export_dir, device, added, updated)
    for warning in warnings:
        log.warning("%s", warning)
    return MergeResult(device, added, skipped, tuple(warnings), updated)


def merge_exports(
    out: Path, export_dirs: list[Path], same_person: frozenset[str] = frozenset()
) -> list[MergeResult]:
    """Merge every export in one transaction: any refused export leaves the study database
    exactly as it was. Every manifest (its schema and checksums) and the target are checked
    before anything is written. `same_person`: participant ids whose devices disagree on
    name or timezone but are one person."""
    manifests = [(Path(d), read_manifest(Path(d))) for d in export_dirs]
    try:
        people = frozenset(participant_id(p) for p in same_person)
    except ValueError as exc:
        raise MergeError(f"--same-person: {exc}") from exc
    new = not out.exists()
    db = open_study(out, schema=False)
    try:
        with transaction(db):  # the tables too: a refused merge adds none to an empty file
            study.create_schema(db, SHARED_TABLES, DEVICE_TABLES)
            results = [_merge_one(db, d, manifest, people) for d, manifest in manifests]
        study.use_wal(db)
        return results
    except BaseException:
        if new:  # refused on the first merge: leave no empty study database behind
            db.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{out}{suffix}").unlink(missing_ok=True)
        raise
    finally:
        db.close()
