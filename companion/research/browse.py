"""`companion browse`: the database in datasette, read-only and on loopback only, with every
column described from the schema."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

from companion.errors import CompanionError
from companion.files import open_private
from companion.research.codebook import describe_column


class BrowseError(CompanionError):
    """datasette is missing or the database cannot be browsed."""


def datasette_metadata(tables: dict[str, list[str]]) -> dict[str, Any]:
    """datasette metadata: each table's columns described from the schema."""
    described = {}
    for table, columns in tables.items():
        cols = {}
        for name in columns:
            col = describe_column(table, name)
            if col:
                allowed = f" Allowed: {', '.join(col.allowed)}." if col.allowed else ""
                cols[name] = f"{col.type}. {col.meaning}.{allowed}"
        described[table] = {"columns": cols}
    return {"title": "companion study data", "databases": {"*": {"tables": described}}}


def browse_command(db_path: Path, port: int) -> tuple[list[str], Path]:
    """The datasette command line (read-only, loopback only) and its metadata file (0600,
    the caller deletes it)."""
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
    except sqlite3.DatabaseError as exc:
        raise BrowseError(f"{db_path}: not a companion or study database ({exc})") from exc
    finally:
        conn.close()
    fd, name = tempfile.mkstemp(prefix="companion-browse-", suffix=".json")
    os.close(fd)
    with open_private(Path(name)) as out:
        out.write(json.dumps(datasette_metadata(tables)))
    # -i: immutable, so datasette opens the file read-only and never writes to it.
    argv = [exe, "serve", "-i", str(db_path), "--host", "127.0.0.1", "--port", str(port),
            "--metadata", name]  # fmt: skip
    return argv, Path(name)
