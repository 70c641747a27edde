"""The de-identification's data: word lists, thresholds and examples (companion/data/
deidentify.json) and regular expressions (patterns.toml), each checked against its pinned
sha256 before use, so no list lives in code and a changed one never redacts differently.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from companion.errors import ConfigError

DATA_FILE, PATTERNS_FILE = "deidentify.json", "patterns.toml"
PINS = {
    DATA_FILE: "9e9e0cfa0eaf8770d2b6cfed44d4bb490463e43fd5ee92caa6b263b51ea8c6a7",
    PATTERNS_FILE: "a70bdb3922b2145e00f45b17b10edbdbf78c558b68959c60dc09c1b7e6cdeb53",
}


def check(raw: bytes, name: str = DATA_FILE) -> bytes:
    """The file's bytes, if it is the pinned version."""
    if hashlib.sha256(raw).hexdigest() != PINS[name]:
        where = f"companion/data/{name}"
        raise ConfigError(f"{where} does not match its pinned sha256; reinstall companion")
    return raw


def _read(name: str) -> bytes:
    return check(resources.files("companion.data").joinpath(name).read_bytes(), name)


@lru_cache(maxsize=1)
def data() -> dict[str, Any]:
    return dict(json.loads(_read(DATA_FILE)))


WORDS: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in data()["lists"].items()}
THRESHOLDS: dict[str, float] = {k: v for k, v in data()["thresholds"].items() if k[0] != "_"}


# The one word tokenizer of every rule: letters of any alphabet, apostrophes and hyphens.
TOKEN = re.compile(r"[^\W\d_](?:[^\W\d_]|['-])*")


@lru_cache(maxsize=1)
def sections() -> dict[str, dict[str, str]]:
    return {s: {k: "".join(v) if isinstance(v, list) else v for k, v in d.items()}
            for s, d in tomllib.loads(_read(PATTERNS_FILE).decode("utf-8")).items()}  # fmt: skip


_SLOT = re.compile(r"\{([A-Z]\w*|[a-z]\w*\.[A-Z]\w*|[a-z][\w|]*)(:title)?\}")


@cache
def part(name: str) -> str:
    """The pattern `name` ("section.NAME") of patterns.toml, its slots filled: another
    pattern (an ignore-case one as a group of its own) or the words of lists."""
    section, key = name.split(".")

    def fill(m: re.Match[str]) -> str:
        ref, title = m.group(1), bool(m.group(2))
        if ref[0].islower() and "." not in ref:
            return alternation(*ref.split("|"), title=title)
        if "." not in ref:
            ref = f"{section if ref in sections()[section] else 'common'}.{ref}"
        inner = part(ref)
        return f"(?i:{inner[4:]})" if inner.startswith("(?i)") else inner

    return _SLOT.sub(fill, sections()[section][key])


def pattern(name: str) -> re.Pattern[str]:
    return re.compile(part(name))


def alternation(*names: str, title: bool = False) -> str:
    """The words of the named lists as one regex alternation, longest first."""
    words = sorted(word_set(*names), key=lambda w: (-len(w), w))
    return "|".join(re.escape(w.title() if title else w).replace(r"\ ", " ") for w in words)


def word_set(*names: str) -> frozenset[str]:
    return frozenset(w for n in names for w in WORDS[n])


@lru_cache(maxsize=1)
def ordinary() -> frozenset[str]:
    """Ordinary English words: those of our story bank and protocol wording (the companion's
    own sentences), plus function words. A name is rarely among them."""
    files = resources.files("companion.data")
    text = files.joinpath("stories.jsonl").read_text("utf-8")
    text += files.joinpath("default_protocol.toml").read_text("utf-8")
    # Only words written in lower case there: the names in our stories are not ordinary.
    words = {p for w in TOKEN.findall(text) if w.islower() for p in w.split("-")}
    return frozenset(words - {""}) | word_set("glue")
