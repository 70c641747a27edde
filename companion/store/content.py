"""The study's content: the protocols sessions ran under and the story bank's rows.

`engine.record` decides what a protocol's definition is and `engine.stories` which stories
are new; they store them here, as plain values.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

import sqlite_utils

from companion.clock import iso
from companion.store.db import transaction


def record_protocol(
    db: sqlite_utils.Database, protocol_id: str, version: int, title: str, definition: str,
    at: datetime,
) -> str:  # fmt: skip
    """Store a protocol's definition unless one is recorded under its id and version already;
    returns the definition recorded (the earlier one if there was one)."""
    with transaction(db):
        db.execute(
            "INSERT OR IGNORE INTO protocols (id, version, title, definition, recorded_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [protocol_id, version, title, definition, iso(at)],
        )
        row = db.execute(
            "SELECT definition FROM protocols WHERE id = ? AND version = ?",
            [protocol_id, version],
        ).fetchone()
    return str(row[0])


def story_keys(db: sqlite_utils.Database) -> tuple[set[str], set[str]]:
    """(content hashes, ids) of every story in the bank."""
    rows = db.execute("SELECT content_hash, id FROM stories").fetchall()
    return {h for h, _ in rows}, {i for _, i in rows}


def story_rows(db: sqlite_utils.Database) -> Iterable[tuple[str, str, str, str | None, str]]:
    """(id, title, text, emotion, tags JSON) of every story, by id."""
    return db.execute("SELECT id, title, text, emotion, tags FROM stories ORDER BY id")


# id, title, text, emotion, tags (JSON), source, word count, content hash
StoryRow = tuple[str, str, str, str | None, str, str, int, str]


def add_stories(db: sqlite_utils.Database, rows: Sequence[StoryRow], added_at: datetime) -> None:
    """Store new stories, all in one transaction (none when there is nothing new)."""
    if not rows:
        return
    now = iso(added_at)
    with transaction(db):
        for row in rows:
            db.execute(
                "INSERT INTO stories (id, title, text, emotion, tags, source, word_count, "
                "content_hash, added_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [*row, now],
            )
