"""The codebook: what every exported column and every instrument item means.

Column meanings come from the schema (`companion.store.schema`), the one place they are
written; instrument wording, scales and anchors come from the protocols the sessions ran under
(recorded in the database's `protocols` table, or the device's protocol file for older data),
so a researcher reads exactly what the participant heard.
"""

from __future__ import annotations

import json
from typing import Any

from companion.engine.protocol import Protocol
from companion.engine.record import protocol_definition
from companion.store import schema
from companion.store.schema import Column


def describe_column(table: str, column: str) -> Column | None:
    """A column of a home's table, or a provenance column a merged study database adds."""
    return schema.column(table, column) or next(
        (c for c in schema.PROVENANCE if c.name == column), None
    )


def protocol_entry(protocol: Protocol) -> dict[str, Any]:
    """A codebook protocol from a protocol file."""
    return {"id": protocol.id, "version": protocol.version, "title": protocol.title,
            "source": protocol.source, **protocol_definition(protocol)}  # fmt: skip


def recorded_entry(row: dict[str, Any]) -> dict[str, Any]:
    """A codebook protocol from a row of the `protocols` table."""
    loaded = json.loads(row["definition"])
    return {
        "id": row["id"],
        "version": row["version"],
        "title": row["title"],
        "source": f"recorded in the database on {row['recorded_at']}",
        "condition": loaded.get("condition"),
        "instruments": loaded.get("instruments", []),
    }


def build_codebook(
    tables: dict[str, list[str]],
    protocols: list[dict[str, Any]],
    notes: list[str] | None = None,
    options: dict[str, Any] | None = None,
    review: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Codebook for the exported `tables` (name -> columns) and the protocols in use
    (`protocol_entry` / `recorded_entry`); `review`: the manifest's review counts."""
    out_tables: dict[str, Any] = {}
    for table, columns in tables.items():
        cols = {}
        for name in columns:
            col = describe_column(table, name)
            if col is None:
                raise KeyError(f"codebook has no entry for {table}.{name}")
            cols[name] = {
                "type": col.type,
                "meaning": col.meaning,
                "allowed": list(col.allowed) if col.allowed else None,
            }
        out_tables[table] = cols
    book: dict[str, Any] = {
        "tables": out_tables,
        "protocols": protocols,
        "notes": notes or [],
        "options": options or {},
    }
    if review:
        book["review"] = {**review, "meaning": review_meaning(review)}
    return book


def review_meaning(review: dict[str, Any]) -> str:
    """What a researcher's review of the redactions changed, in words (counts only)."""
    text = (f"A review listing the {review['redactions']} redactions and {review['flags']} "
            "remaining tokens that might identify someone was written beside the export, "
            "not in it (docs/research.md, Reviewing a de-identified export).")  # fmt: skip
    applied = review.get("applied")
    if applied:
        text += (f" A researcher's decisions were applied: {applied['kept']} redactions "
                 f"undone (the original words kept), {applied['redacted']} further tokens "
                 "redacted (their spans name the rule `review` in the manifest's "
                 "recognizers).")  # fmt: skip
    return text


def render_markdown(codebook: dict[str, Any]) -> str:
    lines = ["# Codebook", ""]
    for note in codebook.get("notes", []):
        lines.append(f"- {note}")
    if codebook.get("notes"):
        lines.append("")
    if codebook.get("options"):
        lines += ["## Export options", "", "| option | used | adds columns | removes columns |",
                  "|---|---|---|---|"]  # fmt: skip
        for option, entry in codebook["options"].items():
            adds = ", ".join(f"`{c}`" for c in entry.get("adds", []))
            removes = ", ".join(f"`{c}`" for c in entry.get("removes", []))
            used = "yes" if entry["used"] else "no"
            lines.append(f"| `{option}` | {used} | {adds} | {removes} |")
        lines.append("")
    if codebook.get("review"):
        lines += ["## Review of the redactions", "", codebook["review"]["meaning"], ""]
    for table, cols in codebook["tables"].items():
        lines += [f"## Table `{table}`", ""]
        if table in schema.TABLES:
            lines += [f"{schema.TABLES[table].meaning}.", ""]
        lines += ["| column | type | meaning | allowed values |", "|---|---|---|---|"]
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
