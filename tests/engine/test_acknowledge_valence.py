"""The valence level of the acknowledgement rule (after exact and family, before reflecting)
and the valence phrases."""

from __future__ import annotations

import random

import pytest

from companion.emotions import EMOTIONS, FAMILIES, VALENCE, family_of, valence_of
from companion.engine.acknowledge import acknowledgement, phrases_for
from companion.engine.ackrule import Decision, decide, parse_rule, score
from companion.engine.protocol import load_protocol
from companion.engine.variety import PhraseMemory
from companion.errors import ConfigError
from models.ackfit import fit

POSITIVE, NEGATIVE = VALENCE["positive"], VALENCE["negative"]
# The shipped protocol's acknowledgement phrases, and its valence ones.
SHIPPED = load_protocol().acknowledgements
PHRASES = SHIPPED.valence


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
    rule = {"exact": 0.6, "family": 0.6, "valence": 0.5}
    assert decide(rule, dist(sad=0.7)) == Decision("exact", "sad")
    assert decide(rule, dist(sad=0.4, lonely=0.3)) == Decision("family", "sadness")
    # sad and afraid: neither the emotion nor the family is sure, but it was painful
    assert decide(rule, dist(sad=0.3, afraid=0.3)) == Decision("valence", "negative")
    assert decide(rule, dist(joyful=0.3, hopeful=0.3)) == Decision("valence", "positive")
    # emotions of no valence count for neither group
    assert decide(rule, dist(surprised=0.45, sad=0.1)) == Decision("neutral")
    # a level without a threshold names nothing
    assert decide(rule | {"valence": None}, dist(sad=0.3, afraid=0.3)) == Decision("neutral")


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
    without = score([decide(rule | {"valence": None}, p) for p in test_rows], test_truths)
    assert result["named"] > without["named"] + 0.15
    assert result["right_named"] >= 0.9


def test_valence_phrases_fit_the_group_and_name_no_single_feeling() -> None:
    assert set(PHRASES) == set(VALENCE)
    words = set(SHIPPED.feeling_words.values()) | set(EMOTIONS)
    said = {p for group in (*SHIPPED.family.values(), SHIPPED.neutral) for p in group}
    for group, phrases in PHRASES.items():
        assert len(phrases) >= 12, group  # the commonest level: a month without a loop
        for phrase in phrases:
            assert phrase not in said  # its own wording, not a family's or a reflection
            named = {w for w in words if f" {w} " in f" {phrase.lower().strip('.')} "}
            assert not named, (group, phrase, named)
    rule = {"valence": 0.5}
    memory, rng = PhraseMemory(), random.Random(2)
    n = len(PHRASES["negative"])
    heard = [acknowledgement(dist(sad=0.3, angry=0.3), memory, rng, rule) for _ in range(n)]
    assert sorted(heard) == sorted(PHRASES["negative"])  # each once before any comes back
    assert phrases_for(Decision("valence", "positive")) == list(PHRASES["positive"])


def test_a_malformed_rule_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="rule.json: 'valence' must be a threshold from 0 to 1"):
        parse_rule('{"exact": 0.7, "valence": 1.5}', "rule.json")
    with pytest.raises(ConfigError, match="rule.json: 'exact' must be a threshold"):
        parse_rule('{"exact": {"sad": 0.5}}', "rule.json")  # per-emotion tables are gone
    with pytest.raises(ConfigError, match="rule.json: not valid JSON"):
        parse_rule("{", "rule.json")
    rule = parse_rule('{"exact": 0.7}', "rule.json")
    assert rule["family"] is None and rule["valence"] is None  # a level left out names nothing
