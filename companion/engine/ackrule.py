"""The calibrated naming rule: name the exact feeling, its family, or nothing. Pure.

A feeling is named only where the model has been measured to be right: per emotion, the top
emotion's probability must reach that emotion's threshold; otherwise per family, the summed
probability of the likeliest family must reach that family's threshold; otherwise the companion
reflects without naming. The thresholds are fitted by `models/calibrate_ack.py` on out-of-fold
probabilities and shipped in companion/data/acknowledge_rule.json (never written here).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from companion.emotions import EMOTIONS, FAMILIES, family_of
from companion.errors import ConfigError

RULE_FILE = "acknowledge_rule.json"
TARGET_PRECISION = 0.9
# A threshold needs this many calibration rows at or above it: fewer would be luck, not evidence.
MIN_SUPPORT = 12
# A cut must be precise with this margin (Wilson lower bound, z = 1: about 84 % one-sided), so
# that thresholds fitted on some stories stay precise on new ones.
CONFIDENCE_Z = 1.0

Level = Literal["exact", "family", "neutral"]


@dataclass(frozen=True)
class Decision:
    level: Level
    label: str | None = None  # the emotion (exact), the family (family), None (neutral)


def family_mass(probs: Mapping[str, float]) -> tuple[str, float]:
    """The likeliest family and its summed probability."""
    masses = {fam: sum(probs.get(e, 0.0) for e in members) for fam, members in FAMILIES.items()}
    fam = max(masses, key=lambda f: masses[f])
    return fam, masses[fam]


def decide(rule: Mapping[str, Any], probs: Mapping[str, float] | None) -> Decision:
    if not probs:
        return Decision("neutral")
    top = max(probs, key=lambda e: probs[e])
    exact = rule.get("exact", {})
    if top in exact and probs[top] >= exact[top]:
        return Decision("exact", top)
    fam, mass = family_mass(probs)
    family = rule.get("family", {})
    if fam in family and mass >= family[fam]:
        return Decision("family", fam)
    return Decision("neutral")


def right(decision: Decision, truth: str) -> bool:
    if decision.level == "exact":
        return decision.label == truth
    return decision.level == "family" and decision.label == family_of(truth)


def score(decisions: Sequence[Decision], truths: Sequence[str]) -> dict[str, float | int | None]:
    """The fractions `model eval --acknowledgements` prints; precision at the level named."""
    n = len(decisions)
    exact = [right(d, t) for d, t in zip(decisions, truths, strict=True) if d.level == "exact"]
    family = [right(d, t) for d, t in zip(decisions, truths, strict=True) if d.level == "family"]

    def frac(part: int, whole: int) -> float | None:  # None: nothing to divide (never named)
        return round(part / whole, 4) if whole else None

    return {
        "n": n,
        "named_exact": frac(len(exact), n) or 0.0,
        "named_family": frac(len(family), n) or 0.0,
        "neutral": frac(n - len(exact) - len(family), n) or 0.0,
        "right_exact": frac(sum(exact), len(exact)),
        "right_family": frac(sum(family), len(family)),
        "right_named": frac(sum(exact) + sum(family), len(exact) + len(family)),
    }


def lower_bound(hits: int, n: int, z: float | None = None) -> float:
    """Wilson score lower bound of a proportion: what `hits` of `n` reliably shows."""
    z = CONFIDENCE_Z if z is None else z
    p = hits / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - spread) / (1 + z * z / n)


def _threshold(scored: list[tuple[float, bool]], precision: float) -> float | None:
    """Lowest threshold at which everything named (at or above it) is reliably precise."""
    scored = sorted(scored, reverse=True)
    best = None
    hits = 0
    for n, (value, ok) in enumerate(scored, start=1):
        hits += ok
        if n < MIN_SUPPORT:
            continue
        distinct = n == len(scored) or scored[n][0] < value  # a cut between distinct values
        if distinct and lower_bound(hits, n) >= precision:
            best = value
    return best


def fit(
    rows: Sequence[Mapping[str, float]], truths: Sequence[str], precision: float
) -> dict[str, Any]:
    """Thresholds per emotion (exact) and per family, each precise to `precision` on `rows`.

    Exact thresholds come first; family thresholds are fitted on the rows left unnamed by them,
    as the rule applies them.
    """
    exact: dict[str, float] = {}
    for emotion in EMOTIONS:
        scored = [(p[emotion], t == emotion) for p, t in zip(rows, truths, strict=True)
                  if max(p, key=lambda e: p[e]) == emotion]  # fmt: skip
        cut = _threshold(scored, precision)
        if cut is not None:
            exact[emotion] = round(cut, 6)
    exact_rule = {"exact": exact}
    left = [(p, t) for p, t in zip(rows, truths, strict=True)
            if decide(exact_rule, p).level != "exact"]  # fmt: skip
    family: dict[str, float] = {}
    for fam in FAMILIES:
        scored = []
        for p, t in left:
            top_family, mass = family_mass(p)
            if top_family == fam:
                scored.append((mass, family_of(t) == fam))
        cut = _threshold(scored, precision)
        if cut is not None:
            family[fam] = round(cut, 6)
    return {"precision": precision, "min_support": MIN_SUPPORT, "confidence_z": CONFIDENCE_Z,
            "exact": exact, "family": family}  # fmt: skip


def load_rule() -> dict[str, Any]:
    """The shipped rule (companion/data/acknowledge_rule.json)."""
    text = resources.files("companion.data").joinpath(RULE_FILE).read_text("utf-8")
    try:
        rule = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"companion/data/{RULE_FILE}: not valid JSON ({exc}); reinstall") from exc
    for level, names in (("exact", EMOTIONS), ("family", tuple(FAMILIES))):
        table = rule.get(level)
        if not isinstance(table, dict) or not set(table) <= set(names):
            raise ConfigError(f"companion/data/{RULE_FILE}: {level!r} must map {level} names "
                              "to thresholds; rerun models/calibrate_ack.py")  # fmt: skip
    return rule
