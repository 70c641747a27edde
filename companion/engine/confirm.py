"""When a spoken answer is read back before it is stored: one pure decision.

Reading every rating back ("I heard four. Is that right?") catches recognition errors but
doubles the turns of every session. So an answer is read back only when the recogniser is
unsure (its calibrated `asr_confidence` is below the fitted `read_back_below`), when it cannot
say how sure it is (no confidence), or when the heard phrase is one the answer corpus shows is
often heard in place of another (`confusable`). The protocol can force every answer
(`confirm_voice_answers = "always"`) or none (`false`). Text answers are never read back.

The read-back rule is fitted together with the answer confidence it reads (voice.confidence:
its weights and the bars below which an answer is not heard at all) by
tests/bench/bench_answers.py --calibrate on the corpus's tuning voices, and shipped in
companion/data/answer_confidence.json (`load_fit`; never written here). The read-back
threshold is chosen by leaving each tuning voice out: the confidence fitted on the other
voices, the lowest threshold from which on no left-out voice stores a wrong value without a
read-back (a month-long voice the corpus has not heard is a left-out voice); the phrases heard
wrong above it on the tuning voices are read back always.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal, TypeGuard

from companion.engine.answers import UNCLEAR, Answer
from companion.errors import ConfigError
from companion.files import json_object

Policy = Literal["always", "when_unsure", "never"]
POLICIES: tuple[Policy, ...] = ("always", "when_unsure", "never")

FIT_FILE = "answer_confidence.json"
REFIT = "rerun tests/bench/bench_answers.py --rescore RUN --states cold --calibrate --write"


@dataclass(frozen=True)
class AnswerFit:
    """The spoken-answer numbers fitted on the corpus (companion/data/answer_confidence.json)."""

    fitted_by: str  # the command that wrote the file
    features: tuple[str, ...]  # voice.confidence.Features, in order
    intercept: float
    weights: tuple[float, ...]  # one per feature
    reject_below: float  # not heard below this confidence in a noisy room...
    clean_from_db: float  # ...one at least this speech-to-noise (dB) is clean...
    reject_below_clean: float  # ...where the bar is this one
    read_back_below: float  # read back below this confidence
    # A skip or repeat heard by a grammar counts only from this confidence (below it the
    # question is asked again): a number heard as a command loses or repeats the answer.
    command_below: float
    confusable: frozenset[str]  # heard phrases read back however sure


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def needs_confirmation(policy: Policy, heard: str, confidence: float | None,
                       threshold: float | None = None) -> bool:  # fmt: skip
    """Should the answer recognised as `heard` be read back before it is stored? `threshold`:
    instead of the fitted one (the benchmark's sweep)."""
    if policy == "never":
        return False
    if policy == "always" or confidence is None:
        return True
    fit = load_fit()
    bar = fit.read_back_below if threshold is None else threshold
    return _norm(heard) in fit.confusable or confidence < bar


def command_heard(confidence: float | None) -> bool:
    """Does a skip or repeat the recogniser heard count? Not below the fitted command bar:
    the benchmark hears numbers as commands only with a low confidence. None (typed, or a
    recogniser without one) counts: a typed "skip" is what was meant."""
    return confidence is None or confidence >= load_fit().command_below


def acted_on(answer: Answer, confidence: float | None) -> Answer:
    """A parsed answer as a session acts on it: a skip or repeat the recogniser was unsure of
    (`command_heard`) is unclear, asked again (it may be a number heard as a command)."""
    if answer.kind in ("skip", "repeat") and not command_heard(confidence):
        return UNCLEAR
    return answer


def bench_policy() -> dict[str, Callable[[str, int, float | None, str], bool]]:
    """The policies the answer benchmark compares: (group, value, confidence, text) -> read back?"""

    def policy(p: Policy) -> Callable[[str, int, float | None, str], bool]:
        def decide(group: str, value: int, confidence: float | None, heard: str) -> bool:
            return needs_confirmation(p, heard, confidence)

        return decide

    return {p: policy(p) for p in POLICIES}


@lru_cache(maxsize=1)
def load_fit() -> AnswerFit:
    """The shipped fit (companion/data/answer_confidence.json), read and checked once."""
    text = resources.files("companion.data").joinpath(FIT_FILE).read_text("utf-8")
    return parse_fit(text, f"companion/data/{FIT_FILE}")


def parse_fit(text: str, source: str) -> AnswerFit:
    """A fit from its JSON text, every field checked (extra fields are notes, kept out)."""
    raw = json_object(text, source, REFIT)

    def bad(field: str, what: str) -> ConfigError:
        return ConfigError(f"{source}: {field!r} must be {what}; {REFIT}")

    def number(field: str, low: float = -math.inf, high: float = math.inf) -> float:
        value = raw.get(field)
        if _is_number(value) and low <= value <= high:
            return float(value)
        raise bad(field, "a number" if low == -math.inf else f"a number from {low} to {high}")

    def words(field: str) -> tuple[str, ...]:
        value = raw.get(field)
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise bad(field, "a list of non-empty strings")
        return tuple(value)

    fitted_by = raw.get("fitted_by")
    if not isinstance(fitted_by, str) or not fitted_by.strip():
        raise bad("fitted_by", "the command that fitted the file")
    features = words("features")
    if not features or len(set(features)) != len(features):
        raise bad("features", "the feature names in order, each once")
    weights = raw.get("weights")
    if (not isinstance(weights, list) or len(weights) != len(features)
            or not all(_is_number(w) for w in weights)):  # fmt: skip
        raise bad("weights", f"{len(features)} numbers, one per feature")
    return AnswerFit(
        fitted_by=fitted_by,
        features=features,
        intercept=number("intercept"),
        weights=tuple(float(w) for w in weights),
        reject_below=number("reject_below", 0.0, 1.0),
        clean_from_db=number("clean_from_db"),
        reject_below_clean=number("reject_below_clean", 0.0, 1.0),
        read_back_below=number("read_back_below", 0.0, 1.0),
        command_below=number("command_below", 0.0, 1.0),
        confusable=frozenset(_norm(p) for p in words("confusable")),
    )


def _is_number(value: Any) -> TypeGuard[float]:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))  # fmt: skip
