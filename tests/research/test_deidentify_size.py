"""The de-identification stays small and its words stay data: the modules that find
identifiers keep under a line budget, and none of them holds a word list of more than ten
words (a list literal or a regex alternation); lists live in companion/data/deidentify.json."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

RESEARCH = Path(__file__).resolve().parents[2] / "companion" / "research"
# The modules that find identifiers (the export, review and report modules only use them).
FINDERS = ("recognizers", "deidentify", "numbers", "addresses", "landmarks", "casing",
           "context", "cues", "unknown", "gazetteer", "ner", "propagate", "intros",
           "ids", "words")  # fmt: skip
# Issue 28 asks for 1,600; it was 2,557 before, 2,115 with the address, organisation,
# number and URL recognizers added, 1,765 with the patterns in patterns.toml, 1,679 after a
# pass that merged duplicated helpers (outputs unchanged), 1,623 after two more, 1,598 after
# a fifth and sixth that made room for stop 35's class changes. The budget holds what is
# reached: lower it as code goes.
BUDGET = 1600
MOST_WORDS = 10
# A run of more than MOST_WORDS plain words joined by "|" in a pattern.
ALTERNATION = re.compile(rf"(?:[a-z][a-z' ]*\|){{{MOST_WORDS},}}[a-z][a-z' ]*", re.IGNORECASE)


def modules() -> list[Path]:
    return [p for p in (RESEARCH / f"{m}.py" for m in FINDERS) if p.exists()]


def test_the_finders_keep_within_their_line_budget() -> None:
    lines = {p.name: len(p.read_text("utf-8").splitlines()) for p in modules()}
    assert sum(lines.values()) <= BUDGET, sorted(lines.items(), key=lambda kv: -kv[1])


def test_every_module_of_the_research_package_is_a_finder_or_known() -> None:
    # A new module that finds identifiers must join FINDERS (and so the budget).
    users = {"__init__", "browse", "cells", "codebook", "datapackage", "export", "identity",
             "instruments", "manifest_schema", "merge", "options", "progress", "report",
             "review", "review_html"}  # fmt: skip
    names = {p.stem for p in RESEARCH.glob("*.py")}
    assert names - users <= set(FINDERS), sorted(names - users - set(FINDERS))


@pytest.mark.parametrize("path", modules(), ids=lambda p: p.stem)
def test_no_word_list_of_more_than_ten_words_in_code(path: Path) -> None:
    tree = ast.parse(path.read_text("utf-8"))
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            words = [e for e in node.elts if isinstance(getattr(e, "value", None), str)]
            assert len(words) <= MOST_WORDS, f"{where}: a list of {len(words)} words"
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            assert not ALTERNATION.search(node.value), f"{where}: {node.value[:60]}"


def test_the_check_finds_a_long_list_and_a_long_alternation(tmp_path: Path) -> None:
    tree = ast.parse('X = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]')
    lst = next(n for n in ast.walk(tree) if isinstance(n, ast.List))
    assert len(lst.elts) > MOST_WORDS
    assert ALTERNATION.search(r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven)\b")
    assert not ALTERNATION.search(r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten)\b")
