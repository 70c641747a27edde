"""The calibrated naming rule: name the exact feeling, its family, its valence, or nothing. Pure.

A feeling is named only where the model has been measured to be right. Level by level, with one
threshold each: the top emotion's probability must reach the exact level's threshold; otherwise
the likeliest family's summed probability the family level's; otherwise the likeliest valence
group's ("That sounds really hard."); otherwise, for a family no valence phrase covers (tender,
anticipation), that family by a threshold of its own ("family_late"); otherwise the companion
reflects without naming. The thresholds are fitted by `models/calibrate_ack.py` (`ackfit`) on
out-of-fold probabilities and shipped in companion/data/acknowledge_rule.json (never written
here).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from companion.emotions import FAMILIES, VALENCE, family_of, valence_of
from companion.errors import ConfigError
from companion.files import json_object

RULE_FILE = "acknowledge_rule.json"

Level = Literal["exact", "family", "valence", "neutral"]
# The naming levels, narrowest first; the grouped ones name a group of emotions.
GROUPS: dict[str, Mapping[str, tuple[str, ...]]] = {"family": FAMILIES, "valence": VALENCE}
LEVELS: tuple[str, ...] = ("exact", *GROUPS)
# The families a valence phrase cannot cover (a member has no valence): the rule may name them
# after the valence level too ("family_late"), among the stories still unnamed.
LATE_FAMILIES: tuple[str, ...] = tuple(
    f for f, members in FAMILIES.items() if any(valence_of(e) is None for e in members)
)


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


def strength(probs: Mapping[str, float], level: str) -> tuple[str, float]:
    """The level's likeliest candidate and its (summed) probability."""
    return ranked(probs, level)[0]


def decide(rule: Mapping[str, Any], probs: Mapping[str, float] | None) -> Decision:
    if not probs:
        return Decision("neutral")
    for level in LEVELS:
        cut = rule.get(level)
        if cut is None:  # a level without a threshold names nothing
            continue
        top, mass = strength(probs, level)
        if mass >= cut:
            return Decision(level, top)  # type: ignore[arg-type]
    late = rule.get("family_late")
    if late is not None:
        top, mass = strength(probs, "family")
        if top in LATE_FAMILIES and mass >= late:
            return Decision("family", top)
    return Decision("neutral")


def truth_at(level: str, emotion: str) -> str | None:
    """What naming at `level` must say to be right about `emotion`."""
    if level == "exact":
        return emotion
    return family_of(emotion) if level == "family" else valence_of(emotion)


def right(decision: Decision, truth: str) -> bool:
    return decision.level != "neutral" and decision.label == truth_at(decision.level, truth)


# The valence an acknowledgement's words carry, by the family whose phrases it says: the
# valence every member shares (joy glad; sadness, fear, anger, shame sorry), none where the
# members differ (tender, anticipation: their phrases, like the neutral ones, fit either).
PHRASE_VALENCE: dict[str, str | None] = {
    family: next(iter(v)) if len(v := {valence_of(e) for e in members}) == 1 else None
    for family, members in FAMILIES.items()
}


def spoken_valence(decision: Decision) -> str | None:
    """Whether what is said for `decision` sounds glad (positive), sorry (negative) or neither."""
    if decision.level == "neutral" or decision.label is None:
        return None
    if decision.level == "valence":
        return decision.label
    family = family_of(decision.label) if decision.level == "exact" else decision.label
    return PHRASE_VALENCE.get(family or "")


def score(decisions: Sequence[Decision], truths: Sequence[str]) -> dict[str, float | int | None]:
    """The fractions `model eval --acknowledgements` prints; precision at the level named;
    `valence_agrees`: of the acknowledgements that sound glad or sorry, for stories whose
    feeling is pleasant or painful, the share that fits the story's valence; `valence_clash`:
    the share of all stories acknowledged with the opposite valence."""
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
    pairs = [(spoken_valence(d), valence_of(t)) for d, t in zip(decisions, truths, strict=True)]
    pairs = [(said, felt) for said, felt in pairs if said and felt]
    clash = sum(said != felt for said, felt in pairs)
    out["valence_agrees"] = frac(len(pairs) - clash, len(pairs))
    out["valence_clash"] = frac(clash, n) or 0.0
    return out


def load_rule() -> dict[str, Any]:
    """The shipped rule (companion/data/acknowledge_rule.json)."""
    text = resources.files("companion.data").joinpath(RULE_FILE).read_text("utf-8")
    return parse_rule(text, f"companion/data/{RULE_FILE}")


def parse_rule(text: str, source: str) -> dict[str, Any]:
    """A rule from its JSON text, checked; a level left out names nothing."""
    rule = json_object(text, source, "rerun models/calibrate_ack.py")
    for level in (*LEVELS, "family_late"):
        cut = rule.setdefault(level, None)
        if cut is not None and (
            isinstance(cut, bool) or not isinstance(cut, int | float) or not 0 <= cut <= 1
        ):
            raise ConfigError(f"{source}: {level!r} must be a threshold from 0 to 1 or null; "
                              "rerun models/calibrate_ack.py")  # fmt: skip
    return rule
