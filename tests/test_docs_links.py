"""The README and docs/ stay navigable: every relative link names a file (and, for a page, a
heading) that exists, and the README stays short enough to read top to bottom."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 300
LINK = re.compile(r"!?\[[^\]]*\]\(([^()\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def anchors(page: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces as hyphens, repeats
    numbered."""
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", page.read_text("utf-8")).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def broken_links(page: Path) -> list[str]:
    text = CODE.sub("", FENCE.sub("", page.read_text("utf-8")))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    return broken


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    assert broken_links(page) == []


def test_the_link_check_finds_a_broken_link(tmp_path):
    (tmp_path / "there.md").write_text("# A heading\n", "utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md) [ok](there.md#a-heading) [web](https://example.org/x)\n"
        "[gone](missing.md) ![gone](img/none.png) [bad](there.md#no-such)\n"
        "`[code](not-a-link.md)`\n",
        "utf-8",
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "img/none.png: no such file",
        "there.md#no-such: no heading #no-such in there.md",
    ]


def test_docs_exist_for_every_topic():
    assert len(pages()) > 10  # README plus the topic pages: a renamed docs/ would pass vacuously


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text("utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move reference to docs/"
