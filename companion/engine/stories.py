"""The story bank: stories the companion reads aloud, stored in the study database.

The shipped bank (companion/data/stories.jsonl, written by the companion team) is
loaded on first use; researchers add their own with `companion stories import`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import sqlite_utils

from companion.clock import utc_now
from companion.emotions import EMOTIONS
from companion.errors import StoryImportError, printable
from companion.files import read_input
from companion.settings.config import check_id
from companion.settings.validate import parse_json
from companion.store import content
from companion.store.queries import heard_story_ids

log = logging.getLogger(__name__)

MIN_WORDS, MAX_WORDS = 20, 1500
# A story file is read whole: 64 MB holds over 10,000 of the longest stories.
MAX_FILE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Story:
    id: str
    title: str
    text: str
    emotion: str | None = None
    tags: tuple[str, ...] = ()

    @property
    def word_count(self) -> int:
        return len(self.text.split())


@dataclass(frozen=True)
class ImportResult:
    added: int
    skipped_duplicates: int


def content_hash(text: str) -> str:
    """Same story text, whatever the spacing or case, gives the same hash."""
    canonical = re.sub(r"\s+", " ", text).strip().lower()
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def bundled_stories() -> list[Story]:
    text = resources.files("companion.data").joinpath("stories.jsonl").read_text("utf-8")
    return parse_stories(text, "companion/data/stories.jsonl", id_prefix="bank-")


def ensure_bank(db: sqlite_utils.Database) -> int:
    """Add the shipped stories that the database does not have yet. Returns how many."""
    return add_stories(db, bundled_stories(), source="bank").added


def add_stories(db: sqlite_utils.Database, stories: list[Story], source: str) -> ImportResult:
    known_hashes, known_ids = content.story_keys(db)
    new: list[tuple[Story, str]] = []
    for story in stories:
        digest = content_hash(story.text)
        if digest not in known_hashes and story.id not in known_ids:
            new.append((story, digest))
            known_hashes.add(digest)
            known_ids.add(story.id)
    # Every session start checks the bank: no write transaction when nothing is new.
    content.add_stories(db, [
        (story.id, story.title, story.text, story.emotion, json.dumps(list(story.tags)), source,
         story.word_count, digest)
        for story, digest in new
    ], utc_now())  # fmt: skip
    return ImportResult(len(new), len(stories) - len(new))


def import_file(db: sqlite_utils.Database, path: Path) -> ImportResult:
    """Import stories from CSV or JSONL (title, text, optional emotion/tags/id)."""
    source = printable(str(path))
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson", ".json"):
        raise StoryImportError(f"{source}: unknown format {suffix!r}; use .csv or .jsonl")
    text = read_input(path, "story file", MAX_FILE_BYTES, StoryImportError)
    if suffix == ".csv":
        stories = parse_csv(text, source)
    else:
        stories = parse_stories(text, source, id_prefix="import-")
    if not stories:
        raise StoryImportError(f"{source}: no stories found; the file is empty")
    return add_stories(db, stories, source=f"import:{path.name}")


def parse_stories(text: str, source: str, id_prefix: str) -> list[Story]:
    stories = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        record = parse_json(line, f"{source}:{lineno}", StoryImportError)
        if not isinstance(record, dict):
            raise StoryImportError(f"{source}:{lineno}: each line must be a JSON object")
        stories.append(_story(record, source, lineno, id_prefix))
    return stories


def parse_csv(text: str, source: str) -> list[Story]:
    reader = csv.DictReader(io.StringIO(text))
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise StoryImportError(f"{source}:1: bad CSV header ({exc})") from None
    twice = sorted({name for name in header if header.count(name) > 1})
    if twice:  # DictReader would keep the last column of a name and drop the others unseen
        raise StoryImportError(
            f"{source}:1: column {twice[0]!r} appears twice in the header; keep one"
        )
    missing = {"title", "text"} - set(header)
    if missing:
        raise StoryImportError(
            f"{source}:1: header lacks column(s) {', '.join(sorted(missing))}; "
            "the header needs title,text and optionally emotion,tags,id"
        )
    stories = []
    try:
        for row in reader:
            lineno = reader.line_num
            if None in row:
                raise StoryImportError(f"{source}:{lineno}: more fields than the header has")
            record: dict[str, Any] = {k: v for k, v in row.items() if v not in (None, "")}
            if "tags" in record:
                record["tags"] = [t.strip() for t in re.split(r"[;,]", record["tags"]) if t.strip()]
            stories.append(_story(record, source, lineno, "import-"))
    except csv.Error as exc:
        raise StoryImportError(f"{source}:{reader.line_num}: bad CSV ({exc})") from None
    return stories


def _story(record: dict[str, Any], source: str, lineno: int, id_prefix: str) -> Story:
    where = f"{source}:{lineno}"
    title, text = record.get("title"), record.get("text")
    if not isinstance(title, str) or not title.strip():
        raise StoryImportError(f"{where}: title: missing or empty; every story needs a title")
    if not isinstance(text, str) or not text.strip():
        raise StoryImportError(f"{where}: text: missing or empty; every story needs its text")
    words = len(text.split())
    if not MIN_WORDS <= words <= MAX_WORDS:
        raise StoryImportError(
            f"{where}: text: {words} words; a story needs {MIN_WORDS} to {MAX_WORDS} words"
        )
    emotion = record.get("emotion")
    if emotion is not None and emotion not in EMOTIONS:
        raise StoryImportError(
            f"{where}: emotion: {emotion!r} is not one of the 32 EmpatheticDialogues emotions"
        )
    tags = record.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise StoryImportError(f"{where}: tags: must be a list of strings")
    story_id = record.get("id")
    if story_id in (None, ""):
        story_id = content_hash(text)[:12]
    elif isinstance(story_id, int) and not isinstance(story_id, bool):  # JSON true is no id
        story_id = str(story_id)
    if not isinstance(story_id, str):
        shown = json.dumps(story_id)
        raise StoryImportError(f"{where}: id: must be a string or a whole number, got "
                               f"{shown if len(shown) <= 40 else shown[:37] + '...'}")
    return Story(
        id=f"{id_prefix}{check_id(story_id, f'{where}: id', StoryImportError)}",
        title=title.strip(),
        text=" ".join(text.split()),
        emotion=emotion,
        tags=tuple(tags),
    )


def load_stories(db: sqlite_utils.Database) -> list[Story]:
    # Plain tuples and no JSON parse for the usual empty tags: a session loads 10,000 quickly.
    rows = content.story_rows(db)
    return [
        Story(i, title, text, emotion, tuple(json.loads(tags)) if tags != "[]" else ())
        for i, title, text, emotion, tags in rows
    ]


def unheard_stories(db: sqlite_utils.Database, participant_id: str) -> list[Story]:
    """The bank minus every story this participant has heard (or begun to hear)."""
    heard = heard_story_ids(db, participant_id)
    return [s for s in load_stories(db) if s.id not in heard]
