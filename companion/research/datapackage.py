"""A Frictionless Data Package (`datapackage.json`) describing an export, so standard tools
(frictionless, pandas readers of data packages, R's frictionless) can validate and load it:
one tabular resource per table file, with its fields, types, allowed values, primary key,
size and sha256. Field meanings come from the codebook's source, `companion.store.schema`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from companion import __version__
from companion.checksum import sha256_file
from companion.research.codebook import describe_column
from companion.store import schema

NAME = "datapackage.json"
_TYPES = {"INTEGER": "integer", "REAL": "number", "TEXT": "string", "BLOB": "string"}
_MEDIA = {"csv": "text/csv", "jsonl": "application/x-ndjson"}


def _field(table: str, column: str) -> dict[str, Any]:
    col = describe_column(table, column)
    if col is None:
        raise KeyError(f"datapackage has no entry for {table}.{column}")
    field: dict[str, Any] = {"name": column, "type": _TYPES[col.type], "description": col.meaning}
    if col.allowed:
        field["constraints"] = {"enum": list(col.allowed)}
    return field


def build(out: Path, tables: dict[str, list[str]], fmt: str, notes: list[str]) -> dict[str, Any]:
    """The package for the table files already written in `out` (name -> exported columns)."""
    resources = []
    for table, columns in tables.items():
        path = out / f"{table}.{fmt}"
        table_schema: dict[str, Any] = {
            "fields": [_field(table, c) for c in columns],
            "missingValues": [""],  # an empty CSV cell is NULL; an empty text is a lone '
        }
        key = list(schema.TABLES[table].key) if table in schema.TABLES else []
        if key and all(k in columns for k in key):
            table_schema["primaryKey"] = key
        resource: dict[str, Any] = {
            "name": table,
            "path": path.name,
            "profile": "tabular-data-resource",
            "format": fmt,
            "mediatype": _MEDIA[fmt],
            "encoding": "utf-8",
            "bytes": path.stat().st_size,
            "hash": f"sha256:{sha256_file(path)}",
            "schema": table_schema,
        }
        if table in schema.TABLES:
            resource["description"] = schema.TABLES[table].meaning
        if fmt == "csv":
            resource["dialect"] = {"delimiter": ",", "lineTerminator": "\r\n", "header": True}
        resources.append(resource)
    return {
        "profile": "tabular-data-package",
        "name": "companion-export",
        "description": " ".join(notes),
        "created_by": f"companion {__version__}",
        "resources": resources,
    }


def to_json(package: dict[str, Any]) -> str:
    return json.dumps(package, indent=2, ensure_ascii=False) + "\n"
