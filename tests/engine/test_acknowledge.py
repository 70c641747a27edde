"""The calibrated acknowledgement rule: fitting, deciding, scoring, the shipped rule, the CLI."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from companion.emotions import EMOTIONS, FAMILIES, family_of
from companion.engine import ackrule
from companion.engine.acknowledge import acknowledgement
from companion.engine.ackrule import Decision, decide, score
from companion.engine.phrases import VALENCED
from companion.engine.protocol import load_protocol
from companion.engine.variety import PhraseMemory
from companion.model.encode import resolve_model
from models.ackfit import fit
from tests.helpers.run import REPO, one_error_line, run_cli

# The shipped protocol's acknowledgement phrases (companion/data/default_protocol.toml).
SHIPPED = load_protocol().acknowledgements


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
        "right_named": 0.5, "valence_agrees": 0.75, "valence_clash": 0.2,
    }  # fmt: skip
    assert score([Decision("neutral")], ["sad"])["right_named"] is None  # nothing named


def test_family_phrases_name_no_single_feeling_and_every_family_has_them() -> None:
    assert set(SHIPPED.family) == set(FAMILIES) == set(SHIPPED.named)
    words = set(SHIPPED.feeling_words.values()) | set(EMOTIONS)
    for family, phrases in SHIPPED.family.items():
        assert len(phrases) >= 5
        for phrase in phrases:
            named = {w for w in words if f" {w} " in f" {phrase.lower().strip('.')} "}
            assert not named, (family, phrase, named)
    for phrase in SHIPPED.neutral:
        assert not any(f" {w} " in f" {phrase.lower()} " for w in words), phrase


def test_reflecting_without_naming_fits_any_feeling() -> None:
    """A phrase said when nothing is named must fit a loss as well as a joy: the shipped ones
    carry no glad or sorry word, and a protocol whose neutral phrase does is refused."""
    for phrase in SHIPPED.neutral:
        words = set(phrase.lower().replace(".", " ").replace(",", " ").split())
        assert not words & set(VALENCED), phrase
    assert len(set(SHIPPED.neutral)) == len(SHIPPED.neutral) >= 12  # variety over a month
    from companion.engine.protocol import default_protocol_text, parse_protocol
    from companion.errors import ConfigError

    for word in VALENCED:
        text = default_protocol_text().replace('"Mm, I hear you."', f'"Mm, {word.upper()}."')
        with pytest.raises(ConfigError, match=rf"^s\.toml: acknowledgements\.neutral: .*'{word}'"):
            parse_protocol(text, "s.toml")


def test_the_valence_spoken_is_scored_against_the_story() -> None:
    said = [Decision("valence", "positive"), Decision("family", "sadness"),
            Decision("exact", "joyful"), Decision("neutral"), Decision("family", "tender")]
    felt = ["devastated", "lonely", "content", "sad", "angry"]
    result = score(said, felt)
    # three carry a valence for a story with one; the glad words after "devastated" clash
    assert result["valence_agrees"] == round(2 / 3, 4)
    assert result["valence_clash"] == 0.2
    assert ackrule.spoken_valence(Decision("exact", "terrified")) == "negative"
    assert ackrule.spoken_valence(Decision("exact", "surprised")) is None


def test_acknowledgement_follows_the_rule_level() -> None:
    rule = {"exact": 0.6, "family": 0.5}
    rng = random.Random(1)
    exact = acknowledgement(probs_for("sad", 0.8), PhraseMemory(), rng, rule)
    assert "sad" in exact
    family = acknowledgement(probs_for("sad", 0.45, "lonely"), PhraseMemory(), rng, rule)
    assert family in SHIPPED.family["sadness"]
    flat = acknowledgement(probs_for("joyful", 0.3), PhraseMemory(), rng, rule)
    assert flat in SHIPPED.neutral


def test_the_shipped_rule_belongs_to_the_shipped_model_and_was_cross_validated() -> None:
    """Rebuilding the model without rerunning models/calibrate_ack.py fails here."""
    rule = ackrule.load_rule()
    sidecar = json.loads(Path(f"{resolve_model()}.json").read_text())
    assert rule["model_sha256"] == sidecar["sha256"], "rerun models/calibrate_ack.py"
    overall = rule["cross_validated"]["overall"]
    assert overall["right_named"] >= 0.9  # the goal: what is named is right
    for level in ackrule.LEVELS:  # at every level named: under ~88 % is a poor experience
        right = overall[f"right_{level}"]
        if overall[f"named_{level}"]:
            assert right is not None and right >= 0.88, level
        else:  # a level that names nothing has no precision to report
            assert right is None, level
    # a regression guard under the coverage goal (60 %, docs/experiments/model-1.md): most
    # stories hear a feeling
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
                           "right_named", "valence_agrees", "valence_clash"}  # fmt: skip
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
    """The calibration writes, by default, the very file the runtime reads, and says so."""
    from importlib import resources

    from models import calibrate_ack

    shipped = resources.files("companion.data").joinpath(ackrule.RULE_FILE)
    assert calibrate_ack.RULE_PATH.resolve() == Path(str(shipped)).resolve()
    help_text = subprocess.run([sys.executable, str(REPO / "models" / "calibrate_ack.py"),
                                "--help"], capture_output=True, text=True, check=True).stdout
    assert "--data" in help_text and "--out" in help_text
    assert ackrule.load_rule()["command"].startswith("python models/calibrate_ack.py --data")


def test_calibration_scores_dev_with_the_runtime_encoder_and_caches_by_model_and_data(
    tmp_path: Path,
) -> None:
    """The shipped model never saw dev: the rule is fitted on its own int8 probabilities there,
    computed as a session computes them, and recomputed when the model or the data change."""
    import importlib.util

    import numpy as np

    spec = importlib.util.spec_from_file_location("calibrate_ack", REPO / "models/calibrate_ack.py")
    assert spec and spec.loader
    calibrate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(calibrate)
    data = tmp_path / "ed"
    data.mkdir()
    (data / "situations_dev.csv").write_text(
        "label,content\n6,My sister's cat died while she was away.\n"
        "17,We finally got the allotment we had waited four years for.\n")
    (data / "speaker_dev.csv").write_text(
        "label,content\n10,I heard the ice crack under me halfway across the pond.\n")
    scratch = tmp_path / "scratch"
    probs, labels, kinds = calibrate.dev_probabilities(resolve_model(), data, scratch)
    assert probs.shape == (3, len(EMOTIONS)) and np.allclose(probs.sum(1), 1, atol=1e-5)
    assert labels == ["sad", "joyful", "afraid"]
    assert kinds == ["situations_dev.csv"] * 2 + ["speaker_dev.csv"]
    assert len(list(scratch.glob("ack-dev-*.npy"))) == 1
    again, _, _ = calibrate.dev_probabilities(resolve_model(), data, scratch)
    assert np.array_equal(again, probs) and len(list(scratch.glob("ack-dev-*.npy"))) == 1
    (data / "speaker_dev.csv").write_text("label,content\n10,The ice cracked under me.\n")
    calibrate.dev_probabilities(resolve_model(), data, scratch)
    assert len(list(scratch.glob("ack-dev-*.npy"))) == 2
