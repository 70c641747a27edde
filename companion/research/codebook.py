"""The codebook: what every exported column and every instrument item means.

Column meanings are written here once, next to the export; instrument wording,
scales and anchors come from the protocol actually used, so a researcher reads
exactly what the participant heard.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from companion.engine.protocol import Protocol
from companion.errors import CompanionError


@dataclass(frozen=True)
class Column:
    type: str  # SQL affinity: TEXT, INTEGER or REAL
    meaning: str
    allowed: tuple[str, ...] | None = None


T, INT, R = "TEXT", "INTEGER", "REAL"
UTC_TS = "UTC timestamp, ISO 8601 with milliseconds"

# Every column the export can write. Tests check that nothing is exported without an entry here.
COLUMNS: dict[str, dict[str, Column]] = {
    "participants": {
        "id": Column(T, "Participant id (a salted pseudonym when exported with --deidentify)"),
        "name": Column(T, "Name the companion used in greetings (omitted when de-identified)"),
        "timezone": Column(T, "IANA timezone of the participant's home"),
        "created_at": Column(T, f"When the participant was first seen; {UTC_TS}"),
    },
    "sessions": {
        "id": Column(INT, "Session id, unique within one device"),
        "participant_id": Column(T, "participants.id of the person in this session"),
        "protocol_id": Column(T, "Protocol id (see protocols below)"),
        "protocol_version": Column(INT, "Protocol version number"),
        "kind": Column(T, "Session kind", ("daily", "enrolment", "exit")),
        "mode": Column(T, "How the participant answered", ("text", "voice")),
        "status": Column(
            T,
            "Outcome: completed = held to the end; interrupted = input ended or Ctrl-C; "
            "aborted = software error; missed = scheduled but not held; running = in progress "
            "at export time",
            ("running", "completed", "interrupted", "aborted", "missed"),
        ),
        "reason": Column(T, "Why the session was interrupted, aborted or missed (free text)"),
        "started_at": Column(T, f"Session start; {UTC_TS}"),
        "ended_at": Column(T, f"Session end (empty while running); {UTC_TS}"),
        "timezone": Column(T, "Participant's IANA timezone at the time of the session"),
        "local_date": Column(T, "Calendar date of the session in that timezone (YYYY-MM-DD)"),
    },
    "turns": {
        "id": Column(INT, "Turn id, unique within one device"),
        "session_id": Column(INT, "sessions.id"),
        "seq": Column(INT, "Order of the turn within its session, from 1"),
        "speaker": Column(T, "Who spoke", ("companion", "participant")),
        "purpose": Column(
            T,
            "Step of the protocol: greeting, story_invitation, story, follow_up, story_reading, "
            "an instrument item as instrument.item, closing, ...",
        ),
        "text": Column(
            T,
            "What was said (participant turns: typed text or ASR transcript). Only exported with "
            "--include-transcripts; names, contacts, addresses and dates redacted with "
            "--deidentify",
        ),
        "started_at": Column(T, f"Turn start; {UTC_TS}"),
        "ended_at": Column(T, f"Turn end; {UTC_TS}"),
        "asr_confidence": Column(R, "Recognizer confidence 0..1 for voice turns, else empty"),
        "audio_path": Column(
            T, "Recording of the turn, relative to the export (only with --include-audio)"
        ),
    },
    "stories": {
        "id": Column(T, "Story id in the bank"),
        "title": Column(T, "Story title as read aloud"),
        "text": Column(T, "Full story text as read aloud"),
        "emotion": Column(T, "Main emotion label (EmpatheticDialogues' 32 labels) or empty"),
        "tags": Column(T, "JSON list of tags"),
        "source": Column(T, "Where the story came from (file it was imported from, or built-in)"),
        "word_count": Column(INT, "Number of words in text"),
        "content_hash": Column(T, "sha256 of the normalised text; identical stories share it"),
        "added_at": Column(T, f"When the story entered the bank; {UTC_TS}"),
    },
    "story_exposures": {
        "id": Column(INT, "Exposure id, unique within one device"),
        "session_id": Column(INT, "sessions.id"),
        "story_id": Column(T, "stories.id of the story read"),
        "condition": Column(T, "How this story was chosen in this session", ("matched", "random")),
        "match_score": Column(R, "Empathic match score of the chosen story (higher = closer)"),
        "rank": Column(INT, "Rank of the story among candidates by match score (1 = best)"),
        "exposed_at": Column(T, f"When reading began; {UTC_TS}"),
        "components": Column(
            T,
            "JSON object: parts of the match score (semantic, emotion), the participant model's "
            "predicted_rating and features, the participant story's query_emotion and its "
            "probability, and model_version",
        ),
        "learned_rating": Column(
            R,
            "Mean post-story empathy rating the participant's preference model learned from "
            "this exposure; empty if none (no answered items, or the model was not in use)",
        ),
        "story_condition": Column(
            T,
            "The protocol's condition setting at the time",
            ("matched", "random", "counterbalanced"),
        ),
    },
    "self_reports": {
        "id": Column(INT, "Answer id, unique within one device"),
        "session_id": Column(INT, "sessions.id"),
        "instrument": Column(T, "Instrument id (see instruments below)"),
        "item": Column(T, "Item id within the instrument"),
        "value": Column(INT, "Numeric answer on the item's scale (yes = 1, no = 0); empty if none"),
        "raw_answer": Column(
            T, "Everything the participant said for this item, attempts joined by ' | '"
        ),
        "attempts": Column(INT, "How many times the item was asked"),
        "answered_at": Column(T, f"When the answer was stored; {UTC_TS}"),
        "value_text": Column(T, "Free-text answer for text items"),
        "status": Column(
            T,
            "answered = a value was given; skipped = the participant said skip; missing = no "
            "usable answer after the reprompts",
            ("answered", "skipped", "missing"),
        ),
    },
    "events": {
        "id": Column(INT, "Event id, unique within one device"),
        "ts": Column(T, f"When it happened; {UTC_TS}"),
        "level": Column(T, "Severity", ("info", "warning", "error")),
        "kind": Column(T, "What happened (session_started, session_completed, ...)"),
        "detail": Column(T, "Details (free text)"),
        "session_id": Column(INT, "sessions.id the event belongs to, if any"),
    },
}

# Columns added by `companion merge` to every table of a study database.
PROVENANCE = {
    "device_id": Column(T, "Device the row came from (manifest device_id)"),
    "source_id": Column(INT, "The row's id on that device"),
}


def describe_column(table: str, column: str) -> Column | None:
    return COLUMNS.get(table, {}).get(column)


def instrument_entries(protocol: Protocol) -> list[dict[str, Any]]:
    out = []
    for inst in protocol.instruments:
        items = []
        for item in inst.items:
            entry: dict[str, Any] = {"id": item.id, "type": item.type, "wording": item.text}
            if item.type == "likert":
                entry["scale"] = [item.min, item.max]
                entry["anchors"] = {str(k): v for k, v in sorted((item.anchors or {}).items())}
            elif item.type == "yesno":
                entry["scale"] = [0, 1]
                entry["anchors"] = {"0": "no", "1": "yes"}
            items.append(entry)
        out.append(
            {
                "id": inst.id,
                "phase": inst.phase,
                "sessions": list(inst.sessions),
                "intro": inst.intro,
                "items": items,
            }
        )
    return out


def build_codebook(
    tables: dict[str, list[str]], protocols: list[Protocol], notes: list[str] | None = None
) -> dict[str, Any]:
    """Codebook for the exported `tables` (name -> columns) and the protocols in use."""
    out_tables: dict[str, Any] = {}
    for table, columns in tables.items():
        cols = {}
        for name in columns:
            col = describe_column(table, name) or PROVENANCE.get(name)
            if col is None:
                raise KeyError(f"codebook has no entry for {table}.{name}")
            cols[name] = {
                "type": col.type,
                "meaning": col.meaning,
                "allowed": list(col.allowed) if col.allowed else None,
            }
        out_tables[table] = cols
    return {
        "tables": out_tables,
        "protocols": [
            {
                "id": p.id,
                "version": p.version,
                "title": p.title,
                "condition": p.condition,
                "source": p.source,
                "instruments": instrument_entries(p),
            }
            for p in protocols
        ],
        "notes": notes or [],
    }


def render_markdown(codebook: dict[str, Any]) -> str:
    lines = ["# Codebook", ""]
    for note in codebook.get("notes", []):
        lines.append(f"- {note}")
    if codebook.get("notes"):
        lines.append("")
    for table, cols in codebook["tables"].items():
        lines += [f"## Table `{table}`", "", "| column | type | meaning | allowed values |"]
        lines.append("|---|---|---|---|")
        for name, col in cols.items():
            allowed = ", ".join(col["allowed"]) if col["allowed"] else ""
            meaning = col["meaning"].replace("|", "\\|")
            lines.append(f"| `{name}` | {col['type']} | {meaning} | {allowed} |")
        lines.append("")
    for proto in codebook["protocols"]:
        lines += [
            f"## Protocol `{proto['id']}` version {proto['version']}: {proto['title']}",
            "",
            f"Story condition: {proto['condition']}.",
            "",
        ]
        for inst in proto["instruments"]:
            sessions = ", ".join(inst["sessions"])
            lines.append(f"### Instrument `{inst['id']}` ({inst['phase']}; sessions: {sessions})")
            lines.append("")
            if inst["intro"]:
                lines += [f"Introduction: “{inst['intro']}”", ""]
            for item in inst["items"]:
                scale = ""
                if "scale" in item:
                    anchors = "; ".join(f"{k} = {v}" for k, v in item["anchors"].items())
                    scale = f" Scale {item['scale'][0]}–{item['scale'][1]}" + (
                        f" ({anchors})." if anchors else "."
                    )
                lines.append(f"- `{item['id']}` ({item['type']}): “{item['wording']}”{scale}")
            lines.append("")
    return "\n".join(lines)


def to_json(codebook: dict[str, Any]) -> str:
    return json.dumps(codebook, indent=2, ensure_ascii=False) + "\n"


class BrowseError(CompanionError):
    """datasette is missing or the database cannot be browsed."""


def datasette_metadata(tables: dict[str, list[str]]) -> dict[str, Any]:
    """datasette metadata: each table's columns described from the codebook."""
    described = {}
    for table, columns in tables.items():
        cols = {}
        for name in columns:
            col = describe_column(table, name) or PROVENANCE.get(name)
            if col:
                allowed = f" Allowed: {', '.join(col.allowed)}." if col.allowed else ""
                cols[name] = f"{col.type}. {col.meaning}.{allowed}"
        described[table] = {"columns": cols}
    return {"title": "companion study data", "databases": {"*": {"tables": described}}}


def browse_command(db_path: Path, port: int) -> tuple[list[str], Path]:
    """The datasette command line (read-only, loopback only) and its metadata file."""
    exe = shutil.which("datasette") or str(Path(sys.executable).with_name("datasette"))
    if importlib.util.find_spec("datasette") is None or not Path(exe).exists():
        raise BrowseError(
            "datasette is not installed; install it with: pip install 'companion[browse]'"
        )
    if not db_path.is_file():
        raise BrowseError(f"{db_path}: no database here; check --home or --db")
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        tables = {
            t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")]
            for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    finally:
        conn.close()
    meta = json.dumps(datasette_metadata(tables))
    fd, name = tempfile.mkstemp(prefix="companion-browse-", suffix=".json")
    with os.fdopen(fd, "w") as out:
        out.write(meta)
    # -i: immutable, so datasette opens the file read-only and never writes to it.
    argv = [exe, "serve", "-i", str(db_path), "--host", "127.0.0.1", "--port", str(port),
            "--metadata", name]  # fmt: skip
    return argv, Path(name)
