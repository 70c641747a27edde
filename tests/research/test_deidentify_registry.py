"""The recognizer registry: every recognizer finds its own examples and nothing in its
counterexamples (both from companion/data/deidentify.json), read as an export reads them
(the real spaCy pipeline and gazetteers); every span names its recognizer; the data file is
refused when it is not the pinned version, and so is the patterns file, each of whose
patterns compiles and is read; and a recognizer switched off makes no span."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest

from companion.errors import ConfigError
from companion.research import recognizers, words
from companion.research.deidentify import apply_spans, redactor_for
from companion.research.ner import load_pipeline

REGISTRY = (*recognizers.TEXT, *recognizers.GAZETTEER, *recognizers.AFTER)
WITHOUT_EXAMPLE: set[str] = set()  # every recognizer has a sentence of its own


def found(rule: recognizers.Recognizer, text: str) -> list[tuple[int, int]]:
    """The spans `rule` makes in `text`, read as an export reads it (patterns only for the
    rules that run without the gazetteer)."""
    ner = None if rule.stage == "plain" else load_pipeline()
    spans = redactor_for(["Zelda"], ner).spans_many([text])[0]
    return [(s.start, s.end) for s in spans if s.rule == rule.name]


def test_names_are_unique_and_every_span_names_its_recognizer() -> None:
    names = [r.name for r in REGISTRY]
    assert len(names) == len(set(names))
    text = "I rang Delphine on 07911 204 883 about the 4th of May; my dog Biscuit barked."
    spans = redactor_for(["Zelda"], load_pipeline()).spans_many([text])[0]
    assert spans and {s.rule for s in spans} <= set(names)


@pytest.mark.parametrize(
    ("rule", "example"),
    [(r, e) for r in REGISTRY for e in r.examples],
    ids=lambda v: v.name if isinstance(v, recognizers.Recognizer) else "",
)
def test_recognizer_finds_its_example(rule: recognizers.Recognizer, example: str) -> None:
    start = example.index("[")
    end = example.index("]") - 1
    text = example.replace("[", "", 1).replace("]", "", 1)
    spans = found(rule, text)
    assert any(a <= start and end <= b for a, b in spans), (rule.name, text, spans)


@pytest.mark.parametrize(
    ("rule", "text"),
    [(r, c) for r in REGISTRY for c in r.counterexamples],
    ids=lambda v: v.name if isinstance(v, recognizers.Recognizer) else "",
)
def test_recognizer_leaves_its_counterexample(rule: recognizers.Recognizer, text: str) -> None:
    assert found(rule, text) == []


def test_every_recognizer_has_examples() -> None:
    bare = {r.name for r in REGISTRY if not r.examples or not r.counterexamples}
    assert bare == WITHOUT_EXAMPLE


def test_a_recognizer_switched_off_makes_no_span() -> None:
    text = "Phone me on 07911 204 883 after six."
    on = redactor_for(["Zelda"], load_pipeline())
    off = redactor_for(["Zelda"], load_pipeline(), off={"phone", "ner"})
    assert any(s.rule == "phone" for s in on.spans_many([text])[0])
    assert apply_spans(text, off.spans_many([text])[0]) == text


def test_data_file_is_pinned() -> None:
    raw = resources.files("companion.data").joinpath(words.DATA_FILE).read_bytes()
    data = json.loads(words.check(raw))
    assert data["version"] >= 1 and data["source"]
    assert all(isinstance(v, list) and v for v in data["lists"].values())
    changed = json.dumps({**data, "version": data["version"] + 1}).encode()
    with pytest.raises(ConfigError, match="deidentify.json does not match its pinned sha256"):
        words.check(changed)


def test_the_patterns_file_is_pinned() -> None:
    raw = resources.files("companion.data").joinpath(words.PATTERNS_FILE).read_bytes()
    assert words.check(raw, words.PATTERNS_FILE) == raw
    with pytest.raises(ConfigError, match="patterns.toml does not match its pinned sha256"):
        words.check(raw + b"\n", words.PATTERNS_FILE)


def test_every_pattern_compiles_and_is_read() -> None:
    """By the code ("section.NAME"), the registry or another pattern; a slot names an entry
    or a list that exists."""
    code = "".join(p.read_text("utf-8") for p in Path(recognizers.__file__).parent.glob("*.py"))
    sections = words.sections()
    specs = " ".join(sections.pop("registry").values())
    slots = " ".join(m for part in (v for s in sections.values() for v in s.values())
                     for m in re.findall(r"\{([A-Z][\w.]*)", part))  # fmt: skip
    for section, entries in sections.items():
        for key in entries:
            name = f"{section}.{key}"
            assert re.compile(words.part(name)) and not re.search(r"\{[A-Za-z]", words.part(name))
            quoted = f'"{name}"' in code or f"'{name}'" in code
            read = quoted or f"{section}.{{n}}" in code and f'"{key}"' in code
            assert read or name in specs.split() or re.search(rf"\b{key}\b", slots), name


def test_every_list_and_threshold_of_the_data_file_is_read() -> None:
    """A list nothing reads is a rule removed and its words left behind."""
    code = "".join(p.read_text("utf-8") for p in Path(recognizers.__file__).parent.glob("*.py"))
    code += resources.files("companion.data").joinpath(words.PATTERNS_FILE).read_text("utf-8")
    code = re.sub(r"\{([a-z][\w|]*)(?::title)?\}", lambda m: " ".join(
        f'"{w}"' for w in m.group(1).split("|")), code)  # a list in a pattern's slot
    data = words.data()
    names = [*data["lists"], *(k for k in data["thresholds"] if not k.startswith("_"))]
    assert [n for n in names if f'"{n}"' not in code and f"'{n}'" not in code] == []
    assert set(data["recognizers"]) - {"_"} <= {r.name for r in REGISTRY}
