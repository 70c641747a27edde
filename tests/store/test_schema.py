"""One schema: the migrations, `companion.store.schema`, the codebook and docs/schema.md agree."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from companion.engine.protocol import load_protocol
from companion.engine.record import protocol_definition, record_protocol
from companion.research import codebook
from companion.research.merge import DEVICE_TABLES, SHARED_TABLES, open_study
from companion.store import schema
from companion.store.db import open_db

README = Path(__file__).resolve().parents[2] / "docs" / "schema.md"


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    db = open_db(tmp_path_factory.mktemp("schema") / "companion.db")
    yield db
    db.close()


def table_info(db, table: str) -> list[tuple[str, str]]:
    return [(r[1], r[2]) for r in db.execute(f"PRAGMA table_info({table})").fetchall()]


def test_migrated_database_is_the_schema(migrated):
    tables = {
        r[0]
        for r in migrated.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    assert tables == set(schema.TABLES)
    for name, table in schema.TABLES.items():
        assert table_info(migrated, name) == [(c.name, c.type) for c in table.columns], name
        keys = [r[1] for r in sorted(migrated.execute(f"PRAGMA table_info({name})"),
                                     key=lambda r: r[5]) if r[5]]  # fmt: skip
        assert tuple(keys) == table.key, name


def test_allowed_values_are_the_check_constraints(migrated):
    """Where the migrations constrain a column to a list, the schema allows the same list."""
    checked = 0
    for (sql,) in migrated.execute("SELECT sql FROM sqlite_master WHERE type = 'table'"):
        table = re.match(r"CREATE TABLE \W?(\w+)", sql).group(1)
        for name, values in re.findall(r"(\w+) IN\s*\(([^)]*)\)", sql):
            allowed = tuple(re.findall(r"'([^']*)'", values))
            assert schema.column(table, name).allowed == allowed, (table, name)
            checked += 1
    assert checked >= 6  # kind, mode, status, speaker, condition, answer status, outcome


def test_every_column_has_a_meaning_and_valid_allowed_values():
    for table in schema.TABLES.values():
        assert table.meaning and len(set(table.names)) == len(table.names)
        for col in table.columns:
            assert col.type in ("TEXT", "INTEGER", "REAL", "BLOB"), (table.name, col.name)
            assert col.meaning.strip(), (table.name, col.name)
            assert col.allowed is None or len(set(col.allowed)) == len(col.allowed) > 1


def test_codebook_describes_every_exported_column(migrated):
    assert set(schema.EXPORTED) <= set(schema.TABLES)
    exported = {t: [name for name, _ in table_info(migrated, t)] for t in schema.EXPORTED}
    book = codebook.build_codebook(exported, [])
    for table, columns in exported.items():
        assert list(book["tables"][table]) == columns
        for name, declared in table_info(migrated, table):
            entry = book["tables"][table][name]
            assert entry["type"] == declared and entry["meaning"], (table, name)
    markdown = codebook.render_markdown(book)
    for table in schema.EXPORTED:
        assert f"## Table `{table}`" in markdown and schema.TABLES[table].meaning in markdown


def test_codebook_describes_a_merged_study_database(tmp_path):
    db = open_study(tmp_path / "study.db")
    try:
        for table in (*SHARED_TABLES, *DEVICE_TABLES):
            for name, _ in table_info(db, table):
                assert codebook.describe_column(table, name), (table, name)
    finally:
        db.close()
    assert set(SHARED_TABLES) | set(DEVICE_TABLES) == set(schema.EXPORTED)


def readme_schema() -> dict[str, list[str]]:
    """Table -> columns from docs/schema.md's "Tables" table: the backticked names in the
    columns cell, outside parentheses (those hold examples and allowed values)."""
    text = README.read_text("utf-8")
    section = text.split("\n## Tables\n", 1)[1].split("\n## ", 1)[0]
    out: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        table = cells[0].strip("`")
        described = cells[1]
        while re.search(r"\([^()]*\)", described):
            described = re.sub(r"\([^()]*\)", "", described)
        described = described.split(":", 1)[0]  # after a colon: what the table is for
        assert table not in out, f"README lists {table} twice"
        out[table] = re.findall(r"`([a-z_]+)`", described)
    return out


def test_readme_lists_exactly_the_schema():
    listed = readme_schema()
    assert set(listed) == set(schema.TABLES)
    for name, table in schema.TABLES.items():
        assert listed[name] == table.names, name


def test_readme_parser_sees_a_missing_column(monkeypatch, tmp_path):
    fake = tmp_path / "schema.md"
    fake.write_text(README.read_text().replace("`reason`, ", ""))
    monkeypatch.setattr(f"{__name__}.README", fake)
    with pytest.raises(AssertionError, match="sessions"):
        test_readme_lists_exactly_the_schema()


def test_record_protocol_once_per_version(tmp_path):
    db = open_db(tmp_path / "companion.db")
    protocol = load_protocol(None)
    first = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    record_protocol(db, protocol, first)
    record_protocol(db, protocol, datetime(2026, 12, 2, tzinfo=UTC))
    rows = db.execute(
        "SELECT id, version, title, definition, recorded_at FROM protocols"
    ).fetchall()
    assert len(rows) == 1
    pid, version, title, definition, recorded_at = rows[0]
    assert (pid, version, title) == (protocol.id, protocol.version, protocol.title)
    assert recorded_at == "2026-12-01T09:30:00.000+00:00"
    stored = json.loads(definition)
    assert stored == json.loads(json.dumps(protocol_definition(protocol)))
    assert stored["condition"] == protocol.condition
    assert [i["id"] for i in stored["instruments"]] == [i.id for i in protocol.instruments]
    db.close()
