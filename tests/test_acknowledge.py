"""The calibrated acknowledgement rule: fitting, deciding, scoring, the shipped rule, the CLI."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from companion.emotions import EMOTIONS, FAMILIES, family_of
from companion.engine import ackrule
from companion.engine.ackfit import fit
from companion.engine.acknowledge import FAMILY, FEELING_WORDS, NAMED, NEUTRAL, acknowledgement
from companion.engine.ackrule import Decision, decide, score
from companion.engine.variety import PhraseMemory
from companion.model.encode import default_model_dir
from tests.helpers.run import REPO, one_error_line, run_cli


def probs_for(top: str, p: float, second: str | None = None) -> dict[str, float]:
    """A distribution with `top` at `p`, the rest spread (on `second` if given)."""
    rest = (1.0 - p) / (len(EMOTIONS) - 1)
    out = dict.fromkeys(EMOTIONS, rest)
    out[top] = p
    if second:
        out = dict.fromkeys(EMOTIONS, 0.0) | {top: p, second: 1.0 - p}
    return out


def synthetic(seed: int = 3, n: int = 3000) -> tuple[list[dict[str, float]], list[str]]:
    """Rows where a confident top emotion is right, a middling one only right in family, and a
    flat one anything: the structure the rule must find."""
    rng = random.Random(seed)
    rows, truths = [], []
    for _ in range(n):
        truth = rng.choice(EMOTIONS)
        kin = [e for e in FAMILIES[family_of(truth) or ""] if e != truth]
        p = rng.random()
        if p > 0.7:  # confident: right
            top = truth
        elif p > 0.4:  # middling: a sibling of the truth half the time, the truth otherwise
            top = rng.choice(kin) if rng.random() < 0.5 else truth
        else:  # flat: anything
            top = rng.choice(EMOTIONS)
        second = rng.choice(kin) if p > 0.4 else None  # middling: the rest on the family
        rows.append(probs_for(top, p, second))
        truths.append(truth)
    return rows, truths


def test_the_fitted_rule_is_precise_on_held_out_rows_and_names_what_it_can() -> None:
    rows, truths = synthetic(seed=3)
    rule = fit(rows, truths, 0.9)
    test_rows, test_truths = synthetic(seed=4)
    result = score([decide(rule, p) for p in test_rows], test_truths)
    assert result["right_exact"] >= 0.9 and result["right_family"] >= 0.9
    assert result["right_named"] >= 0.9
    # confident rows are named exactly, middling ones by family, flat ones not at all
    assert 0.2 < result["named_exact"] < 0.4
    assert result["named_family"] > 0.2
    assert 0.25 < result["neutral"] < 0.6


def test_decide_names_exactly_then_by_family_then_not_at_all() -> None:
    rule = {"exact": 0.6, "family": 0.5}
    assert decide(rule, probs_for("sad", 0.7)) == Decision("exact", "sad")
    # below the exact threshold, but the sadness family together is likely enough
    assert decide(rule, probs_for("sad", 0.45, "lonely")) == Decision("family", "sadness")
    # one threshold per level, for every emotion and family alike
    assert decide(rule, probs_for("joyful", 0.99)) == Decision("exact", "joyful")
    assert decide(rule, probs_for("joyful", 0.45, "proud")) == Decision("family", "joy")
    # nothing is likely enough at any level
    assert decide(rule, probs_for("joyful", 0.3)) == Decision("neutral")
    assert decide(rule, None) == Decision("neutral")
    assert decide({"exact": None, "family": 0.5}, probs_for("sad", 0.99)).level == "family"


def test_score_reports_precision_at_the_level_named() -> None:
    decisions = [Decision("exact", "sad"), Decision("exact", "sad"), Decision("family", "sadness"),
                 Decision("family", "joy"), Decision("neutral")]  # fmt: skip
    truths = ["sad", "lonely", "devastated", "sad", "angry"]
    assert score(decisions, truths) == {
        "n": 5, "named_exact": 0.4, "named_family": 0.4, "named_valence": 0.0, "named": 0.8,
        "neutral": 0.2, "right_exact": 0.5, "right_family": 0.5, "right_valence": None,
        "right_named": 0.5,
    }  # fmt: skip
    assert score([Decision("neutral")], ["sad"])["right_named"] is None  # nothing named


def test_family_phrases_name_no_single_feeling_and_every_family_has_them() -> None:
    assert set(FAMILY) == set(FAMILIES) == set(NAMED)
    words = set(FEELING_WORDS.values()) | set(EMOTIONS)
    for family, phrases in FAMILY.items():
        assert len(phrases) >= 5
        for phrase in phrases:
            named = {w for w in words if f" {w} " in f" {phrase.lower().strip('.')} "}
            assert not named, (family, phrase, named)
    for phrase in NEUTRAL:
        assert not any(f" {w} " in f" {phrase.lower()} " for w in words), phrase


def test_acknowledgement_follows_the_rule_level() -> None:
    rule = {"exact": 0.6, "family": 0.5}
    rng = random.Random(1)
    exact = acknowledgement(probs_for("sad", 0.8), PhraseMemory(), rng, rule)
    assert "sad" in exact
    family = acknowledgement(probs_for("sad", 0.45, "lonely"), PhraseMemory(), rng, rule)
    assert family in FAMILY["sadness"]
    flat = acknowledgement(probs_for("joyful", 0.3), PhraseMemory(), rng, rule)
    assert flat in NEUTRAL


def test_the_shipped_rule_belongs_to_the_shipped_model_and_was_cross_validated() -> None:
    """Rebuilding the model without rerunning models/calibrate_ack.py fails here."""
    rule = ackrule.load_rule()
    sidecar = json.loads((default_model_dir() / "companion-empathy-1.onnx.json").read_text())
    assert rule["model_sha256"] == sidecar["sha256"], "rerun models/calibrate_ack.py"
    overall = rule["cross_validated"]["overall"]
    assert overall["right_named"] >= 0.9  # the goal: what is named is right
    for level in ackrule.LEVELS:  # at every level named: under ~88 % is a poor experience
        assert overall[f"right_{level}"] is None or overall[f"right_{level}"] >= 0.88, level
    # a regression guard under the coverage goal (60 %, README): most stories hear a feeling
    assert overall["named"] >= 0.55
    assert overall["named_valence"] > 0 and rule["valence"]  # the broadest level is in use
    assert len(rule["cross_validated"]["folds"]) >= 3
    assert rule["exact"] is not None and rule["target"] >= rule["precision"]
    assert rule["quantization"]  # the scheme its out-of-fold models were quantized by


def test_the_shipped_rule_acknowledges_real_stories_within_their_family() -> None:
    """The real model and the shipped rule on our own sentences: never the wrong family."""
    from companion.model.empathy import CachedEncoder
    from companion.model.encode import Encoder

    encoder = CachedEncoder(Encoder.load())
    rule = ackrule.load_rule()
    stories = {
        "sadness": "My old dog died last night and the house feels so empty without him.",
        "joy": "I won first prize at the baking contest and everyone clapped for me!",
        "fear": "I heard someone trying to open my front door at 3am and I froze in terror.",
    }
    for family, text in stories.items():
        d = decide(rule, encoder.emotions(text))
        if d.level == "exact":
            assert family_of(d.label or "") == family, (text, d)
        elif d.level == "family":
            assert d.label == family, (text, d)


def test_model_eval_acknowledgements_prints_the_fractions(tmp_path: Path) -> None:
    csv_file = tmp_path / "a.csv"
    csv_file.write_text(
        "label,content\n"
        '6,"My best friend moved abroad and I miss her every day."\n'
        '17,"We won the match in the last minute and everyone cheered!"\n'
        '10,"A huge dog ran at me in the park and I was scared."\n'
    )
    proc = run_cli("model", "eval", "--acknowledgements", str(csv_file))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert set(result) == {"n", "named_exact", "named_family", "named_valence", "named",
                           "neutral", "right_exact", "right_family", "right_valence",
                           "right_named"}  # fmt: skip
    assert result["n"] == 3
    levels = result["named_exact"] + result["named_family"] + result["named_valence"]
    assert levels == pytest.approx(result["named"])
    assert result["named"] + result["neutral"] == pytest.approx(1)


def test_model_eval_refuses_a_bad_file_or_both_options(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("label,content\n99,hello\n")
    proc = run_cli("model", "eval", "--acknowledgements", str(bad))
    assert proc.returncode == 2
    one_error_line(proc, "bad.csv:2", "outside 1..32")
    both = run_cli("model", "eval", "--acknowledgements", str(bad), "--emotions", str(bad))
    assert both.returncode == 2
    one_error_line(both, "exactly one of")


def test_calibration_is_one_documented_command() -> None:
    script = (REPO / "models" / "calibrate_ack.py").read_text()
    assert "companion/data/acknowledge_rule.json" in script
    assert ackrule.load_rule()["command"].startswith("python models/calibrate_ack.py --data")


def test_calibration_reuses_fold_models_across_quantization_schemes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fold models are keyed by data, config and folds only; their int8 scores also by the
    quantization scheme, so a new scheme re-quantizes the cached fp32 exports, never retrains."""
    import importlib.util
    import sys

    monkeypatch.setattr(sys, "path", list(sys.path))  # the script puts models/ first on it
    spec = importlib.util.spec_from_file_location("calibrate_ack", REPO / "models/calibrate_ack.py")
    assert spec and spec.loader
    calibrate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(calibrate)
    data = tmp_path / "d.csv"
    data.write_text("label,content\n1,x\n")
    today = {"method": "onnxruntime dynamic", "weight_type": "QInt8", "per_channel": True}
    other = today | {"per_channel": False}
    train, quant = calibrate.cache_keys(data, '{"seed": 1}', 3, today)
    new_train, new_quant = calibrate.cache_keys(data, '{"seed": 1}', 3, other)
    assert new_train == train and new_quant != quant
    assert calibrate.cache_keys(data, '{"seed": 2}', 3, today)[0] != train
    assert calibrate.cache_keys(data, '{"seed": 1}', 3, dict(reversed(today.items()))) == (
        train, quant)  # fmt: skip
