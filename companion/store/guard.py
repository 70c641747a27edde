"""The home is never silently replaced: only `companion init` creates one.

Every other command opens a home through `require_home` and `require_database`, which
refuse (HomeError, one line, exit 2) a home whose folder, config.toml or companion.db is
missing, empty or damaged, and name the newest verified backup to restore.
"""

from __future__ import annotations

import sqlite3

import sqlite_utils

from companion.errors import HomeError
from companion.settings.config import DEVICE_ID_NAME, Home
from companion.store.backup import backup_hint, list_backups


def require_home(home: Home) -> None:
    """Refuse a home folder that `init` did not make, or whose config has gone or is empty."""
    if not home.path.is_dir():
        raise HomeError(
            f"{home.path}: no companion home here; check --home (or $COMPANION_HOME), "
            f"or create one with companion init --home {home.path}"
        )
    config = home.config_path
    if not config.is_file():
        raise HomeError(
            f"{config}: missing; this folder is not a companion home (or its config was "
            f"deleted): run companion init --home {home.path} with the participant's details"
        )
    if not config.read_bytes().strip():
        raise HomeError(
            f"{config}: empty; write it again with companion init --home {home.path} "
            "--participant ID (nothing was changed)"
        )


def require_database(home: Home) -> None:
    """Refuse a missing or empty companion.db (checked after the config, which names errors
    in the participant's settings first)."""
    db = home.db_path
    if not db.is_file() or db.stat().st_size == 0:
        state = "missing" if not db.exists() else "empty (0 bytes)"
        raise HomeError(f"{db}: database {state}; {backup_hint(home)}; nothing was created")


def was_used(home: Home) -> bool:
    """Has this home held a study database before (device id or backups)?"""
    return (home.path / DEVICE_ID_NAME).exists() or bool(list_backups(home))


def require_new_database(home: Home) -> None:
    """`init` may create a database only in a home that never had one."""
    db = home.db_path
    if (not db.exists() or db.stat().st_size == 0) and was_used(home):
        raise HomeError(
            f"{db}: database missing in a home that had one (device id or backups present); "
            f"{backup_hint(home)}; init does not start a new database here"
        )


def check_integrity(db: sqlite_utils.Database, home: Home) -> None:
    """A quick check of the opened database; damage is refused with the backup to restore."""
    try:
        rows = [r[0] for r in db.execute("PRAGMA quick_check").fetchall()]
    except sqlite3.OperationalError:
        raise  # locked, I/O error, full disk: not damage
    except sqlite3.DatabaseError as exc:
        rows = [str(exc)]
    if rows != ["ok"]:
        detail = "; ".join(rows[:2])
        raise HomeError(
            f"{home.db_path}: database damaged ({detail}); {backup_hint(home)}; nothing was changed"
        )
