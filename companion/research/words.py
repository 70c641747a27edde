"""The de-identification's word lists, thresholds and recognizer examples, as data: one
versioned file (companion/data/deidentify.json), checked against its pinned sha256 before
use, so no list lives in code twice and a changed list never redacts silently differently.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from companion.errors import ConfigError

DATA_FILE = "deidentify.json"
SHA256 = "b661235fc03600b2425b636dd3e303a61309f37c2e2aff74341964edcaf418e7"


def check(raw: bytes, where: str = f"companion/data/{DATA_FILE}") -> dict[str, Any]:
    """The file's content, if it is the pinned version."""
    if hashlib.sha256(raw).hexdigest() != SHA256:
        raise ConfigError(f"{where} does not match its pinned sha256; reinstall companion")
    return dict(json.loads(raw))


@lru_cache(maxsize=1)
def data() -> dict[str, Any]:
    return check(resources.files("companion.data").joinpath(DATA_FILE).read_bytes())


WORDS: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in data()["lists"].items()}
THRESHOLDS: dict[str, float] = {
    k: v for k, v in data()["thresholds"].items() if not k.startswith("_")
}


# The one word tokenizer of every rule: letters, apostrophes and hyphens.
TOKEN = re.compile(r"[A-Za-z][A-Za-z'-]*")


def alternation(*names: str, title: bool = False) -> str:
    """The words of the named lists as one regex alternation, longest first."""
    words = sorted({w for n in names for w in WORDS[n]}, key=lambda w: (-len(w), w))
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
    words = {part for w in TOKEN.findall(text) if w.islower() for part in w.split("-")}
    return frozenset(words - {""}) | word_set("glue")
