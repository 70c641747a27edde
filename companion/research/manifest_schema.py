"""What an export's manifest.json must hold, as data, and the check `read_manifest` runs
before anything reads the export's files: every required key, its type, the known format
versions. A damaged or foreign manifest is refused in one line naming the file and the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from companion.store.schema import EXPORTED

# 2: CSV text cells are neutralised (companion.research.cells); merge reads 1 and 2.
MANIFEST_FORMAT = 2
READABLE_FORMATS = (1, 2)
NULL = type(None)
_KIND = {str: "text", int: "a whole number", bool: "true or false", dict: "an object",
         list: "a list", NULL: "null"}  # fmt: skip


@dataclass(frozen=True)
class Key:
    """One manifest value: its types, whether it must be there, and what it may be.
    `fields`: an object's own keys; `each`: every value of an object keyed freely (`keys`:
    the names allowed) or every item of a list."""

    types: tuple[type, ...]
    required: bool = True
    choices: tuple[Any, ...] | None = None
    pattern: str | None = None
    fields: dict[str, Key] = field(default_factory=dict)
    each: Key | None = None
    keys: tuple[str, ...] | None = None


TEXT_OR_NULL = Key((str, NULL), required=False)
FLAG = Key((bool,), required=False)
SCHEMA = Key((dict,), fields={
    "format": Key((int,), choices=READABLE_FORMATS),
    "device_id": Key((str,), pattern=r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"),
    "exported_at": Key((str,)),
    "companion_version": Key((str,), required=False),
    "schema_version": Key((int,), required=False),
    "file_format": Key((str,), choices=("csv", "jsonl")),
    "options": Key((dict,), fields={
        "deidentified": Key((bool,)),
        "participant": TEXT_OR_NULL, "since": TEXT_OR_NULL, "until": TEXT_OR_NULL,
        "transcripts": FLAG, "audio": FLAG, "redaction": TEXT_OR_NULL,
    }),
    "tables": Key((dict,), keys=EXPORTED, each=Key((dict,), fields={
        "file": Key((str,)),
        "rows": Key((int,)),
        "columns": Key((list,), each=Key((str,))),
    })),
    "files": Key((dict,), each=Key((dict,), fields={
        "sha256": Key((str,), pattern=r"[0-9a-f]{64}"),
    })),
    "salt_id": Key((str,), required=False),
    "identities": Key((dict,), required=False, each=Key((dict,), fields={
        "name_check": TEXT_OR_NULL, "default_id": FLAG,
    })),
    # --deidentify: how many spans each recognizer (research.recognizers) redacted
    "recognizers": Key((dict,), required=False, each=Key((int,))),
    # --deidentify --include-transcripts: the review written beside the export (counts only)
    # and, with --apply-review, the review file's sha256 and the decisions applied
    "review": Key((dict,), required=False, fields={
        "redactions": Key((int,)), "flags": Key((int,)),
        "applied": Key((dict,), required=False, fields={
            "sha256": Key((str,), pattern=r"[0-9a-f]{64}"),
            "kept": Key((int,)), "redacted": Key((int,)), "unchanged": Key((int,)),
            "unmatched": Key((int,)),
        }),
    }),
})  # fmt: skip


def _problem(key: Key, value: Any) -> str | None:
    """What is wrong with `value` itself (not its contents), if anything."""
    if not any(type(value) is t for t in key.types):  # exact: True is no whole number
        kinds = " or ".join(_KIND[t] for t in key.types)
        return f"must be {kinds}, got {value!r}"[:160]
    if key.choices is not None and value not in key.choices:
        known = ", ".join(map(str, key.choices))
        return f"is {value!r}, this companion reads {known}; update companion"[:160]
    if key.pattern is not None and not re.fullmatch(key.pattern, value):
        return f"{value!r} is not a valid value"[:160]
    if type(value) is int and value < 0:
        return f"must not be negative, got {value}"
    return None


def problems(value: Any, key: Key = SCHEMA, at: str = "") -> tuple[str, str] | None:
    """The first (dotted key, what is wrong) of a manifest against `key`, or None."""
    wrong = _problem(key, value)
    if wrong:
        return at or "(the manifest)", wrong
    if isinstance(value, dict):
        for name, sub in key.fields.items():
            where = f"{at}.{name}" if at else name
            if name not in value:
                if sub.required:
                    return where, "is missing"
                continue
            found = problems(value[name], sub, where)
            if found:
                return found
        if key.each is not None:
            for name, item in value.items():
                where = f"{at}.{name}" if at else name
                if key.keys is not None and name not in key.keys:
                    return where, "is not a table this companion knows; update companion"
                found = problems(item, key.each, where)
                if found:
                    return found
    elif isinstance(value, list) and key.each is not None:
        for n, item in enumerate(value):
            found = problems(item, key.each, f"{at}[{n}]")
            if found:
                return found
    return None


def refusal(path: Path, manifest: Any) -> str | None:
    """One line naming `path` and the key, if the manifest does not match SCHEMA."""
    found = problems(manifest)
    if found is None:
        return None
    key, wrong = found
    advice = "" if ";" in wrong else "; is this a companion export? export the device again"
    return f"{path}: key {key} {wrong}{advice}"
