"""The valence level of the acknowledgement rule (after exact and family, before reflecting),
strength by margin, and the valence phrases."""

from __future__ import annotations

import random

import pytest

from companion.emotions import EMOTIONS, FAMILIES, VALENCE, family_of, valence_of
from companion.engine.acknowledge import (
    FAMILY,
    FEELING_WORDS,
    NEUTRAL,
    acknowledgement,
    phrases_for,
)
from companion.engine.acknowledge import VALENCE as PHRASES
from companion.engine.ackrule import Decision, candidates, decide, fit, parse_rule, score, select_by
from companion.engine.variety import PhraseMemory
from companion.errors import ConfigError

POSITIVE, NEGATIVE = VALENCE["positive"], VALENCE["negative"]


def dist(**mass: float) -> dict[str, float]:
    """A distribution: the given emotions their mass, the rest spread evenly."""
    rest = (1.0 - sum(mass.values())) / (len(EMOTIONS) - len(mass))
    return dict.fromkeys(EMOTIONS, rest) | mass


def test_valence_groups_are_disjoint_clear_and_defined_once() -> None:
    members = [e for group in VALENCE.values() for e in group]
    assert len(members) == len(set(members)) and set(members) <= set(EMOTIONS)
    # ambiguous feelings are in no group: a valence phrase never names them on purpose
    for emotion in ("surprised", "nostalgic", "sentimental"):
        assert valence_of(emotion) is None
    # a family is never split across valence groups
    for family, group in FAMILIES.items():
        assert len({valence_of(e) for e in group} - {None}) <= 1, family


def test_decide_goes_exact_then_family_then_valence_then_neutral() -> None:
    rule = {"exact": {"sad": 0.6}, "family": {"sadness": 0.6}, "valence": {"negative": 0.5}}
    assert decide(rule, dist(sad=0.7)) == Decision("exact", "sad")
    assert decide(rule, dist(sad=0.4, lonely=0.3)) == Decision("family", "sadness")
    # sad and afraid: neither the emotion nor the family is sure, but it was painful
    assert decide(rule, dist(sad=0.3, afraid=0.3)) == Decision("valence", "negative")
    # pleasant has no threshold: never named at that level
    assert decide(rule, dist(joyful=0.3, hopeful=0.5)) == Decision("neutral")
    # emotions of no valence count for neither group
    assert decide(rule, dist(surprised=0.6, sad=0.1)) == Decision("neutral")


def test_strength_by_margin_needs_the_top_to_stand_out() -> None:
    rule = {"exact": {"sad": 0.3}, "by": {"exact": "margin"}}
    assert decide(rule, dist(sad=0.5, angry=0.1)) == Decision("exact", "sad")
    assert decide(rule, dist(sad=0.5, angry=0.45)) == Decision("neutral")
    by_prob = {"exact": {"sad": 0.3}}
    assert decide(by_prob, dist(sad=0.5, angry=0.45)) == Decision("exact", "sad")


def test_score_counts_valence_at_its_level_and_no_valence_as_wrong() -> None:
    decisions = [
        Decision("valence", "negative"),
        Decision("valence", "negative"),
        Decision("valence", "positive"),
        Decision("exact", "sad"),
        Decision("neutral"),
    ]
    truths = ["furious", "surprised", "hopeful", "sad", "sad"]  # fmt: skip
    result = score(decisions, truths)
    assert result["named_valence"] == 0.6 and result["right_valence"] == pytest.approx(0.6667)
    assert result["named"] == 0.8 and result["neutral"] == 0.2
    assert result["right_named"] == 0.75  # 3 of the 4 named, each at its own level


def graded(seed: int, n: int = 4000) -> tuple[list[dict[str, float]], list[str]]:
    """Rows whose evidence is graded: confident rows name the truth, middling ones its family,
    vague ones only its valence (mass spread over two families of it), flat ones nothing."""
    rng = random.Random(seed)
    rows, truths = [], []
    for _ in range(n):
        truth = rng.choice(EMOTIONS)
        tier = rng.random()
        group = VALENCE.get(valence_of(truth) or "", ())
        kin = [e for e in FAMILIES[family_of(truth) or ""] if e != truth]
        if tier > 0.8:
            row = dist(**{truth: 0.5 + 0.4 * tier})
        elif tier > 0.55:
            row = dist(**{rng.choice(kin): 0.35, truth: 0.3})
        elif tier > 0.3 and group:
            other = [e for e in group if family_of(e) != family_of(truth)]
            a, b = rng.sample(other, 2)
            row = dist(**{a: 0.25, b: 0.2, truth: 0.2})
        else:
            row = dist(**{rng.choice(EMOTIONS): 0.15})
        rows.append(row)
        truths.append(truth)
    return rows, truths


def test_the_fitted_valence_level_names_more_and_stays_precise_held_out() -> None:
    rows, truths = graded(seed=5)
    rule = fit(rows, truths, 0.9)
    assert rule["valence"], rule  # the vague tier is reliably right about valence
    test_rows, test_truths = graded(seed=6)
    result = score([decide(rule, p) for p in test_rows], test_truths)
    for level in ("exact", "family", "valence"):
        assert result[f"right_{level}"] >= 0.9, (level, result)
    assert result["named_valence"] > 0.15
    without = score([decide(rule | {"valence": {}}, p) for p in test_rows], test_truths)
    assert result["named"] > without["named"] + 0.15
    assert result["right_named"] >= 0.9


def test_valence_phrases_fit_the_group_and_name_no_single_feeling() -> None:
    assert set(PHRASES) == set(VALENCE)
    words = set(FEELING_WORDS.values()) | set(EMOTIONS)
    said = {p for group in (*FAMILY.values(), NEUTRAL) for p in group}
    for group, phrases in PHRASES.items():
        assert len(phrases) >= 8, group  # a month of daily sessions without a loop
        for phrase in phrases:
            assert phrase not in said  # its own wording, not a family's or a reflection
            named = {w for w in words if f" {w} " in f" {phrase.lower().strip('.')} "}
            assert not named, (group, phrase, named)
    rule = {"valence": {"negative": 0.5}}
    memory, rng = PhraseMemory(), random.Random(2)
    heard = [acknowledgement(dist(sad=0.3, angry=0.3), memory, rng, rule) for _ in range(8)]
    assert sorted(heard) == sorted(PHRASES["negative"])  # each once before any comes back
    assert phrases_for(Decision("valence", "positive")) == list(PHRASES["positive"])


def test_a_malformed_rule_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="rule.json: 'valence' must map valence names"):
        parse_rule('{"exact": {}, "valence": {"happy": 0.5}}', "rule.json")
    with pytest.raises(ConfigError, match="rule.json: 'by' must map levels"):
        parse_rule('{"by": {"exact": "median"}}', "rule.json")
    old = parse_rule('{"exact": {"sad": 0.5}, "family": {}}', "rule.json")
    assert old["valence"] == {} and old["by"] == {}  # a rule from before valence names none


def close_calls(seed: int, n: int = 1500) -> tuple[list[dict[str, float]], list[str]]:
    """Rows where only the top emotion's lead over the runner-up tells whether it is right:
    a clear lead is right; a close call (the truth second as often as first) has the higher
    top probability. The two are of opposite valence, so no level can name a close call (the
    rest of the mass is on emotions of no valence)."""
    rng = random.Random(seed)
    rows, truths = [], []
    neither = [e for e in EMOTIONS if valence_of(e) is None]

    def dist(**mass: float) -> dict[str, float]:
        rest = (1.0 - sum(mass.values())) / len(neither)
        return dict.fromkeys(EMOTIONS, 0.0) | dict.fromkeys(neither, rest) | mass

    for _ in range(n):
        truth = rng.choice(POSITIVE + NEGATIVE)
        other = rng.choice(NEGATIVE if truth in POSITIVE else POSITIVE)
        if rng.random() < 0.5:  # a clear lead: right
            rows.append(dist(**{truth: rng.uniform(0.45, 0.5), other: 0.05}))
        else:
            p = rng.uniform(0.55, 0.6)
            top, second = (truth, other) if rng.random() < 0.5 else (other, truth)
            rows.append(dist(**{top: p, second: p - 0.03}))
        truths.append(truth)
    return rows, truths


def test_margin_is_chosen_where_the_lead_tells_more_than_the_probability() -> None:
    rows, truths = close_calls(seed=7)
    by = select_by(rows, truths, 0.9)
    assert "margin" in by.values(), by
    test_rows, test_truths = close_calls(seed=8)
    rule, plain_rule = fit(rows, truths, 0.9, by), fit(rows, truths, 0.9)
    chosen = score([decide(rule, p) for p in test_rows], test_truths)
    plain = score([decide(plain_rule, p) for p in test_rows], test_truths)
    assert chosen["right_named"] >= 0.9 and chosen["named"] > 0.4, chosen
    assert plain["named"] < chosen["named"] - 0.3, plain
    assert candidates()[0] == {"exact": "prob", "family": "prob", "valence": "prob"}
    assert len(candidates()) == 8
