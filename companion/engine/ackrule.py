"""The calibrated naming rule: name the exact feeling, its family, its valence, or nothing. Pure.

A feeling is named only where the model has been measured to be right. Level by level:
per emotion, the top emotion's strength must reach that emotion's threshold (exact); otherwise
the likeliest family's (summed) strength must reach that family's threshold; otherwise the
likeliest valence group's ("That sounds really hard."); otherwise the companion reflects
without naming. A level's strength is its top probability (`prob`) or how far that is ahead of
the runner-up (`margin`), as the rule's `by` says. The thresholds are fitted by
`models/calibrate_ack.py` on out-of-fold probabilities and shipped in
companion/data/acknowledge_rule.json (never written here).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from companion.emotions import EMOTIONS, FAMILIES, VALENCE, family_of, valence_of
from companion.errors import ConfigError

RULE_FILE = "acknowledge_rule.json"
TARGET_PRECISION = 0.9
# A threshold needs this many calibration rows at or above it: fewer would be luck, not evidence.
MIN_SUPPORT = 12
# A cut must be precise with this margin (Wilson lower bound, z = 1: about 84 % one-sided), so
# that thresholds fitted on some stories stay precise on new ones.
CONFIDENCE_Z = 1.0

Level = Literal["exact", "family", "valence", "neutral"]
# The naming levels, narrowest first; the grouped ones name a group of emotions.
GROUPS: dict[str, Mapping[str, tuple[str, ...]]] = {"family": FAMILIES, "valence": VALENCE}
LEVELS: tuple[str, ...] = ("exact", *GROUPS)
STRENGTHS = ("prob", "margin")


@dataclass(frozen=True)
class Decision:
    level: Level
    label: str | None = None  # the emotion (exact), the group (family, valence), None (neutral)


def ranked(probs: Mapping[str, float], level: str) -> list[tuple[str, float]]:
    """The level's candidates (emotions, or groups by summed probability), likeliest first.
    Emotions in no group of the level (e.g. 'surprised' for valence) count for none."""
    if level == "exact":
        masses = dict(probs)
    else:
        groups = GROUPS[level]
        masses = {g: sum(probs.get(e, 0.0) for e in groups[g]) for g in groups}
    return sorted(masses.items(), key=lambda kv: -kv[1])


def strength(probs: Mapping[str, float], level: str, by: str = "prob") -> tuple[str, float]:
    """The level's likeliest candidate and the strength compared with its threshold."""
    order = ranked(probs, level)
    (top, p1), p2 = order[0], order[1][1] if len(order) > 1 else 0.0
    return top, (p1 - p2 if by == "margin" else p1)


def decide(rule: Mapping[str, Any], probs: Mapping[str, float] | None) -> Decision:
    if not probs:
        return Decision("neutral")
    by = rule.get("by", {})
    for level in LEVELS:
        table = rule.get(level, {})
        if not table:
            continue
        top, value = strength(probs, level, by.get(level, "prob"))
        if top in table and value >= table[top]:
            return Decision(level, top)  # type: ignore[arg-type]
    return Decision("neutral")


def truth_at(level: str, emotion: str) -> str | None:
    """What naming at `level` must say to be right about `emotion`."""
    if level == "exact":
        return emotion
    return family_of(emotion) if level == "family" else valence_of(emotion)


def right(decision: Decision, truth: str) -> bool:
    return decision.level != "neutral" and decision.label == truth_at(decision.level, truth)


def score(decisions: Sequence[Decision], truths: Sequence[str]) -> dict[str, float | int | None]:
    """The fractions `model eval --acknowledgements` prints; precision at the level named."""
    n = len(decisions)
    hits = {level: [right(d, t) for d, t in zip(decisions, truths, strict=True) if d.level == level]
            for level in LEVELS}  # fmt: skip
    named = sum(len(h) for h in hits.values())

    def frac(part: int, whole: int) -> float | None:  # None: nothing to divide (never named)
        return round(part / whole, 4) if whole else None

    out: dict[str, float | int | None] = {"n": n}
    for level in LEVELS:
        out[f"named_{level}"] = frac(len(hits[level]), n) or 0.0
    out["named"] = frac(named, n) or 0.0
    out["neutral"] = frac(n - named, n) or 0.0
    for level in LEVELS:
        out[f"right_{level}"] = frac(sum(hits[level]), len(hits[level]))
    out["right_named"] = frac(sum(sum(h) for h in hits.values()), named)
    return out


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
    rows: Sequence[Mapping[str, float]],
    truths: Sequence[str],
    precision: float,
    by: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Thresholds per emotion (exact), per family and per valence group, each precise to
    `precision` on `rows`. Each level is fitted on the rows the levels before it left unnamed,
    as the rule applies them."""
    by = {level: (by or {}).get(level, "prob") for level in LEVELS}
    rule: dict[str, Any] = {"precision": precision, "min_support": MIN_SUPPORT,
                            "confidence_z": CONFIDENCE_Z, "by": by}  # fmt: skip
    left = list(zip(rows, truths, strict=True))
    for level in LEVELS:
        scored: dict[str, list[tuple[float, bool]]] = {}
        for p, t in left:
            top, value = strength(p, level, by[level])
            scored.setdefault(top, []).append((value, truth_at(level, t) == top))
        table: dict[str, float] = {}
        for name in EMOTIONS if level == "exact" else GROUPS[level]:
            cut = _threshold(scored.get(name, []), precision)
            if cut is not None:  # rounded down: rounding up would drop the rows at the cut
                table[name] = math.floor(cut * 1e6) / 1e6
        rule[level] = table
        left = [(p, t) for p, t in left if decide(rule, p).level == "neutral"]
    return rule


def folds_of(truths: Sequence[str], folds: int) -> list[int]:
    """A fold for each row, stratified by its emotion (deterministic: the rows' own order)."""
    seen: dict[str, int] = {}
    out = []
    for t in truths:
        out.append(seen.get(t, 0) % folds)
        seen[t] = seen.get(t, 0) + 1
    return out


def cross_validate(
    rows: Sequence[Mapping[str, float]],
    truths: Sequence[str],
    precision: float,
    fold_of: Sequence[int],
    by: Mapping[str, str] | None = None,
) -> tuple[list[Decision], list[dict[str, float | int | None]]]:
    """Each row's decision by a rule fitted without its fold, and the score of each fold."""
    held: list[Decision] = [Decision("neutral")] * len(rows)
    per_fold = []
    for k in sorted(set(fold_of)):
        train = [i for i, f in enumerate(fold_of) if f != k]
        test = [i for i, f in enumerate(fold_of) if f == k]
        rule = fit([rows[i] for i in train], [truths[i] for i in train], precision, by)
        for i in test:
            held[i] = decide(rule, rows[i])
        per_fold.append(score([held[i] for i in test], [truths[i] for i in test]))
    return held, per_fold


def candidates() -> list[dict[str, str]]:
    """Every way of measuring strength: probability or margin, per level."""
    combos: list[dict[str, str]] = [{}]
    for level in LEVELS:
        combos = [c | {level: s} for c in combos for s in STRENGTHS]
    return combos


def select_by(
    rows: Sequence[Mapping[str, float]], truths: Sequence[str], precision: float, folds: int = 4
) -> dict[str, str]:
    """The strength measures (`by`) that name the most held-out rows in an inner
    cross-validation on `rows` while staying precise at every level: part of the fitting, so an
    outer cross-validation of fit(select_by(...)) measures the choice too."""
    fold_of = folds_of(truths, folds)
    best: dict[str, str] = {level: "prob" for level in LEVELS}
    best_key: tuple[float, ...] = (-1.0,)
    for by in candidates():
        held, _ = cross_validate(rows, truths, precision, fold_of, by)
        result = score(held, truths)
        # the most named; at equal coverage, the more specific naming
        key = tuple(float(result[k] or 0) for k in ("named", "named_exact", "named_family"))
        if precise(result, precision) and key > best_key:
            best, best_key = by, key
    return best


def precise(result: Mapping[str, float | int | None], precision: float) -> bool:
    """Whether every level that named something was right at least `precision` of the time."""
    rights = [result[f"right_{level}"] for level in LEVELS]
    return all(r is None or r >= precision for r in rights)


def load_rule() -> dict[str, Any]:
    """The shipped rule (companion/data/acknowledge_rule.json)."""
    text = resources.files("companion.data").joinpath(RULE_FILE).read_text("utf-8")
    return parse_rule(text, f"companion/data/{RULE_FILE}")


def parse_rule(text: str, source: str) -> dict[str, Any]:
    """A rule from its JSON text, checked; a level left out names nothing."""
    try:
        rule = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{source}: not valid JSON ({exc}); reinstall") from exc
    if not isinstance(rule, dict):
        raise ConfigError(f"{source}: must be a JSON object; rerun models/calibrate_ack.py")
    for level in LEVELS:
        names = EMOTIONS if level == "exact" else tuple(GROUPS[level])
        table = rule.setdefault(level, {})
        if not isinstance(table, dict) or not set(table) <= set(names):
            raise ConfigError(f"{source}: {level!r} must map {level} names to thresholds; "
                              "rerun models/calibrate_ack.py")  # fmt: skip
    by = rule.setdefault("by", {})
    if (
        not isinstance(by, dict)
        or not set(by) <= set(LEVELS)
        or not set(by.values()) <= set(STRENGTHS)
    ):
        raise ConfigError(f"{source}: 'by' must map levels to one of {', '.join(STRENGTHS)}; "
                          "rerun models/calibrate_ack.py")  # fmt: skip
    return rule
