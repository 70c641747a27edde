"""The fitted spoken-answer numbers (the confidence model, the not-heard bars, the read-back
rule) ship as companion/data/answer_confidence.json: it loads, a damaged copy is refused with
the file and field named, the benchmark writes it, and a real spoken answer is scored with it."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from importlib import resources

import pytest

from companion.engine import confirm
from companion.engine.dialogue import Expectation
from companion.errors import ConfigError
from companion.voice import confidence
from companion.voice.audio import WavSink, WavSource
from companion.voice.channels import VoiceChannel, VoiceSettings
from companion.voice.listen import PocketsphinxFactory
from tests.helpers.run import REPO
from tests.helpers.speech import ANSWER_VOCAB, HEDGES, pad, speech_pcm, with_noise

SHIPPED = resources.files("companion.data").joinpath(confirm.FIT_FILE).read_text("utf-8")
BENCH = ("-m", "tests.bench.bench_answers")  # run as a module: it imports tests.bench
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_shipped_fit_loads_and_names_the_command_that_wrote_it() -> None:
    fit = confidence.fitted()
    assert fit == confirm.load_fit()
    assert fit.features == tuple(json.loads(SHIPPED)["features"]) == confidence.NAMES
    assert len(fit.weights) == len(fit.features)
    assert 0.0 <= fit.reject_below_clean <= fit.reject_below <= fit.read_back_below <= 1.0
    assert fit.fitted_by.startswith("tests/bench/bench_answers.py --rescore ")
    assert fit.fitted_by.endswith(f"--write companion/data/{confirm.FIT_FILE}")


@pytest.mark.parametrize(
    ("damage", "field", "says"),
    [
        (lambda f: "{", None, "not valid JSON"),
        (lambda f: [f], None, "must be a JSON object"),
        (lambda f: f | {"fitted_by": ""}, "fitted_by", "the command"),
        (lambda f: {k: v for k, v in f.items() if k != "weights"}, "weights", "6 numbers"),
        (lambda f: f | {"weights": f["weights"][:-1]}, "weights", "6 numbers"),
        (lambda f: f | {"weights": [*f["weights"][:-1], "0.05"]}, "weights", "6 numbers"),
        (lambda f: f | {"intercept": True}, "intercept", "a number"),
        (lambda f: f | {"clean_from_db": math.nan}, "clean_from_db", "a number"),
        (lambda f: f | {"reject_below": 1.5}, "reject_below", "from 0.0 to 1.0"),
        (lambda f: f | {"read_back_below": None}, "read_back_below", "from 0.0 to 1.0"),
        (lambda f: f | {"confusable": "five"}, "confusable", "a list of non-empty strings"),
        (lambda f: f | {"features": f["features"][:1] * 6}, "features", "each once"),
    ],
)
def test_a_damaged_fit_is_refused_naming_the_file_and_field(damage, field, says) -> None:
    broken = damage(json.loads(SHIPPED))
    text = broken if isinstance(broken, str) else json.dumps(broken)
    with pytest.raises(ConfigError) as err:
        confirm.parse_fit(text, "copy.json")
    message = str(err.value)
    assert message.startswith("copy.json: ") and says in message and "\n" not in message
    if field is not None:
        assert f"'{field}' must be" in message and "bench_answers.py" in message


def test_a_fit_for_other_features_is_refused_by_the_voice_path() -> None:
    shipped = json.loads(SHIPPED)
    swapped = [shipped["features"][1], shipped["features"][0], *shipped["features"][2:]]
    fit = confirm.parse_fit(json.dumps(shipped | {"features": swapped}), "copy.json")
    with pytest.raises(ConfigError, match=r"copy\.json: 'features' must be \['silence_share'"):
        confidence.checked(fit, "copy.json")


def test_the_benchmark_writes_the_fit_and_refuses_two_states_for_it() -> None:
    done = subprocess.run([sys.executable, *BENCH, "--help"], capture_output=True,
                          text=True, cwd=REPO, timeout=120)  # fmt: skip
    assert done.returncode == 0 and "--write" in done.stdout, done.stderr[-2000:]
    assert "--phone-loop" not in done.stdout
    both = subprocess.run([sys.executable, *BENCH, "--rescore", "nothing", "--states",
                           "cold,warm", "--write", "x.json"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)  # fmt: skip
    assert both.returncode == 2 and "--write fits one state" in both.stderr


def _saved_rows(voice: str, wrong_at: float) -> list[dict]:
    """Answers as a run saves them: 20 right at stability 1.0, 5 wrong at `wrong_at`."""
    return [{"group": "g", "phrase": f"p{i}", "expected": "value:4", "got": got, "got_raw": got,
             "raw": "four", "text": "four", "room": "clean", "snr": 35.0, "voice": voice,
             "conf": None, "features": [0.3, -0.2, 1.0 if i < 20 else wrong_at, -5.0, 35.0, -8.0]}
            for i in range(25) for got in ["value:4" if i < 20 else "value:5"]]  # fmt: skip


def test_a_fit_record_from_saved_rows_loads_as_the_shipped_one_does() -> None:
    """What --write saves, from rows shaped as a run saves them, is what the loader accepts."""
    from tests.bench.answer_corpus import TUNING_VOICES
    from tests.bench.answer_tuning import calibrate, fit_record

    voices = sorted(TUNING_VOICES)[:3]
    rows = [r for v, at in zip(voices, (0.0, 0.1, 0.2), strict=True) for r in _saved_rows(v, at)]
    intercept, weights = calibrate(rows)
    assert weights[2] > 0.0  # the feature that tells right from wrong here
    record = fit_record("tests/bench/bench_answers.py --rescore R --states cold --calibrate "
                        "--write f.json", rows, intercept, weights, 0.7, 0.0, 30.0,
                        (0.96, frozenset({"five"})))  # fmt: skip
    fit = confidence.checked(confirm.parse_fit(json.dumps(record, indent=1), "f.json"), "f.json")
    assert fit.intercept == round(intercept, 4)
    assert fit.weights == tuple(round(w, 4) for w in weights)
    assert fit.features == confidence.NAMES and fit.confusable == frozenset({"five"})
    assert record["fitted_on"].startswith("75 answers") and all(
        v in record["fitted_on"] for v in voices)  # fmt: skip
    assert set(record) == set(json.loads(SHIPPED))  # the same fields as the shipped file


def _listen(factory: PocketsphinxFactory, pcm: bytes):
    factory.reset_adaptation()
    ch = VoiceChannel(VoiceSettings(), WavSource.from_pcm(pcm), WavSink(), recognizers=factory,
                      sleep=lambda s: None, clock=lambda: EPOCH)  # fmt: skip
    return ch.listen(Expectation("answer", ANSWER_VOCAB, hedges=HEDGES)), ch


def _logistic(fit: confirm.AnswerFit, f: confidence.Features) -> float:
    pairs = zip(fit.features, fit.weights, strict=True)
    z = fit.intercept + sum(w * getattr(f, name) for name, w in pairs)
    return 1.0 / (1.0 + math.exp(-z))


def test_a_spoken_answer_is_scored_with_the_shipped_numbers(monkeypatch) -> None:
    """A real answer through the channel: its confidence is the file's logistic model over the
    turn's features (by name) and the read-back follows the file's rule; other numbers in the
    file give another confidence."""
    factory = PocketsphinxFactory()
    pcm = with_noise(pad(speech_pcm("four", "en-us", 160), 0.6, 1.5), 40, seed=5)
    heard, ch = _listen(factory, pcm)
    fit = confidence.fitted()
    assert heard.text == "four" and heard.confidence is not None
    turn = confidence.with_snr(ch.last_transcript.features, ch.last_snr)  # type: ignore[attr-defined]
    assert heard.confidence == pytest.approx(_logistic(fit, turn), rel=1e-12)
    read_back = heard.confidence < fit.read_back_below or heard.text in fit.confusable
    assert confirm.needs_confirmation("when_unsure", heard.text, heard.confidence) == read_back

    surer = replace(fit, intercept=fit.intercept + 1.0)
    monkeypatch.setattr(confirm, "load_fit", lambda: surer)
    monkeypatch.setattr(confidence, "load_fit", lambda: surer)
    confidence.fitted.cache_clear()
    try:
        again, ch = _listen(factory, pcm)
    finally:
        confidence.fitted.cache_clear()
    turn = confidence.with_snr(ch.last_transcript.features, ch.last_snr)  # type: ignore[attr-defined]
    assert again.confidence == pytest.approx(_logistic(surer, turn), rel=1e-12)
    assert again.confidence > _logistic(fit, turn)
