"""Spoken answers on real espeak-ng audio through the real decoders, from a cold recogniser:
the answer confidence, the read-back policy, the noise gate, early end of turn, the
per-device adaptation and the vocabulary check."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from companion.engine.confirm import needs_confirmation
from companion.engine.dialogue import Expectation
from companion.engine.protocol import default_protocol_text, load_protocol, parse_protocol
from companion.errors import ConfigError, ModelError
from companion.voice import adaptation
from companion.voice.audio import WavSink, WavSource
from companion.voice.channels import VoiceChannel, VoiceSettings
from companion.voice.listen import PocketsphinxFactory
from companion.voice.turns import is_complete_answer
from companion.voice.vocab import check_vocabulary
from tests.helpers.speech import ANSWER_VOCAB, HEDGES, pad, speech_pcm, with_noise

ANSWER = Expectation("answer", ANSWER_VOCAB, hedges=HEDGES)


@pytest.fixture()
def cold() -> PocketsphinxFactory:
    """A fresh recogniser that has heard nothing: the first question of a new process."""
    return PocketsphinxFactory()


EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def listen(factory, pcm: bytes, expect: Expectation = ANSWER, **settings: object):
    ch = VoiceChannel(VoiceSettings(**settings), WavSource.from_pcm(pcm), WavSink(),  # type: ignore[arg-type]
                      recognizers=factory, sleep=lambda s: None, clock=lambda: EPOCH)  # fmt: skip
    heard = ch.listen(expect)
    return heard, ch


def waited_after_speech(heard, ch) -> float:
    """Audio seconds the channel listened past the end of the participant's speech."""
    return ch.source.frames_read * 0.03 - (heard.ended_at - EPOCH).total_seconds()


def test_cold_clean_answers_have_a_real_confidence(cold) -> None:
    confidences = []
    for text, voice in (("four", "en-us"), ("strongly agree", "en-gb"), ("two", "en-us+f3")):
        # 40 dB: a quiet room (below 30 dB an answer must be surer to count as heard)
        pcm = with_noise(pad(speech_pcm(text, voice, 160), 0.6, 1.5), 40, seed=5)
        cold.reset_adaptation()  # each the first utterance of a fresh process
        heard, _ = listen(cold, pcm)
        assert heard.text in ANSWER_VOCAB  # cold, not always right: hence the confidence
        assert heard.confidence is not None and 0.0 < heard.confidence < 1.0
        confidences.append(heard.confidence)
    assert len({round(c, 6) for c in confidences}) == 3  # never a constant


def test_stories_have_no_confidence(cold) -> None:
    rec = cold.create("free")
    rec.accept(pad(speech_pcm("I went to the park with my sister.", "en-us", 160)))
    tr = rec.final()
    assert tr.text and tr.confidence is None  # NULL, not a made-up 1.0
    assert tr.features is None
    rec = cold.create("grammar", ANSWER_VOCAB, HEDGES)
    rec.accept(pad(speech_pcm("three", "en-us", 160)))
    f = rec.final().features
    assert f is not None and 0.0 <= f.stability <= 1.0 and 0.0 <= f.silence_share <= 1.0
    assert f.path_per_frame < 0.0  # each frame scored against its best senone


def test_confidence_is_lower_for_noise_forced_answers(cold) -> None:
    """Clean answers are surer than answers heard in 15 dB noise (the noise gate: the
    quietest room the channel scores an answer in), with the turn's SNR (the channel always
    adds it). Louder noise is not heard at all (test_speech_buried_in_noise_is_not_heard):
    the confidence is fitted on answers above the gate only."""
    from companion.voice.confidence import probability, with_snr

    clean, noisy = [], []
    for i, text in enumerate(("one", "three", "five", "agree")):
        for snr, out in ((40, clean), (15, noisy)):
            cold.reset_adaptation()
            rec = cold.create("grammar", ANSWER_VOCAB, HEDGES)
            rec.accept(with_noise(pad(speech_pcm(text, "en-gb+m3", 160), 0.6, 1.5), snr, seed=i))
            tr = rec.final()
            if tr.features is not None:
                out.append(probability(with_snr(tr.features, snr)))
    assert len(clean) == 4 and noisy
    assert sum(clean) / len(clean) > sum(noisy) / len(noisy)


def test_clean_speech_in_digital_silence_is_heard(cold) -> None:
    """A near-silent input (synthesised, gated) is no reason to call clean speech noise."""
    heard, _ = listen(cold, pad(speech_pcm("three", "en-us", 160), 0.6, 1.5))
    assert heard.text == "three"


def test_speech_buried_in_noise_is_not_heard(cold) -> None:
    heard, _ = listen(cold, with_noise(pad(speech_pcm("two", "en-us", 160), 0.6, 1.5), 3, seed=2))
    assert heard.text == "" and heard.confidence is None


def test_complete_answer_ends_the_turn_early(cold) -> None:
    pcm = with_noise(pad(speech_pcm("four", "en-us", 160), 0.6, 3.0), 30, seed=1)
    heard, ch = listen(cold, pcm)
    assert heard.text == "four"
    assert 0.25 <= waited_after_speech(heard, ch) <= 0.4  # not the 0.8 s pause
    # An unfinished phrase ("strongly" of "strongly agree") waits the full pause.
    vocab = Expectation("answer", ("strongly agree", "agree", "disagree"), hedges=HEDGES)
    pcm = with_noise(pad(speech_pcm("strongly", "en-us", 160), 0.6, 3.0), 30, seed=1)
    heard, ch = listen(cold, pcm, vocab)
    assert waited_after_speech(heard, ch) >= 0.8


def test_is_complete_answer() -> None:
    vocab = ("one", "agree", "strongly agree", "not at all", "repeat that")
    assert is_complete_answer("agree", vocab)
    assert is_complete_answer("strongly agree", vocab)
    assert not is_complete_answer("strongly", vocab)
    assert not is_complete_answer("not", vocab)
    assert not is_complete_answer("", vocab)
    assert not is_complete_answer("repeat", vocab)


def test_adaptation_is_saved_per_device_and_restored(cold, tmp_path: Path) -> None:
    pcm = with_noise(pad(speech_pcm("five", "en-gb", 160), 0.6, 1.5), 25, seed=4)
    prior = cold.adaptation
    heard, ch = listen(cold, pcm, home=tmp_path)
    ch.close()
    saved = tmp_path / adaptation.ADAPTATION_FILE
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    state = json.loads(saved.read_text())
    assert state["backend"] == "pocketsphinx" and state["state"] != prior
    fresh = PocketsphinxFactory()
    listen(fresh, b"", home=tmp_path, no_speech_timeout_s=1.0)
    assert fresh.adaptation == cold.adaptation  # the next session starts where this one ended
    saved.write_text('{"backend": "pocketsphinx", "state": "garbage"}')
    again = PocketsphinxFactory()
    assert not adaptation.restore(tmp_path, again)
    assert again.adaptation == prior


def test_policy() -> None:
    assert not needs_confirmation("when_unsure", "four", 0.99)
    assert needs_confirmation("when_unsure", "four", 0.05)
    assert needs_confirmation("when_unsure", "four", None)  # cannot tell: ask
    assert needs_confirmation("always", "four", 0.99)
    assert not needs_confirmation("never", "four", 0.01)


def test_protocol_confirm_setting() -> None:
    shipped = default_protocol_text()
    assert "confirm_voice_answers = true\n" in shipped
    assert load_protocol(None).confirm_voice_answers == "when_unsure"

    def policy(value: str) -> str:
        text = shipped.replace(
            "confirm_voice_answers = true\n", f"confirm_voice_answers = {value}\n"
        )
        return parse_protocol(text, "p.toml").confirm_voice_answers

    assert policy("false") == "never" and policy('"always"') == "always"
    assert policy('"when_unsure"') == "when_unsure"
    with pytest.raises(ConfigError, match="p.toml: .*confirm_voice_answers: must be one of"):
        policy('"sometimes"')


def test_vocabulary_check_with_the_real_lexicon(cold) -> None:
    protocol = load_protocol(None)
    result = check_vocabulary(cold.knows, protocol)
    assert result.ok and result.missing == ()
    korean_only = check_vocabulary(lambda w: not w.isascii(), protocol)
    assert not korean_only.ok
    assert "mood.valence" in korean_only.unusable and "four" in korean_only.missing
    assert "wrong language" in korean_only.summary()


def test_never_falls_back_to_free_recognition(cold) -> None:
    with pytest.raises(ModelError, match="knows none of the answer words"):
        cold.create("grammar", ("flurbozzle", "quixplat"), HEDGES)


@pytest.mark.slow  # loads a vosk model
@pytest.mark.vosk
def test_wrong_language_vosk_model_fails_the_check(vosk_ko) -> None:
    result = check_vocabulary(vosk_ko.knows, load_protocol(None))
    assert not result.ok and "four" in result.missing
    with pytest.raises(ModelError, match="knows none of the answer words"):
        vosk_ko.create("grammar", ANSWER_VOCAB)


def test_an_unlikely_answer_is_not_heard_and_the_snr_is_in_the_confidence(cold) -> None:
    """The channel judges a pocketsphinx answer by its confidence with the turn's SNR."""
    from companion.voice import confidence
    from companion.voice.channels import judge
    from companion.voice.listen import Mode, Transcript, Word

    ch = listen(cold, b"", no_speech_timeout_s=1.0)[1]

    def heard_as(tr: Transcript, mode: Mode, snr: float) -> tuple[str, float | None]:
        return judge(tr, mode, snr, ch.settings.min_answer_snr_db)

    sure = confidence.Features(0.2, -0.1, 1.0, -3.0, path_per_frame=-12.0)
    unsure = confidence.Features(0.6, -1.5, 0.0, -20.0, path_per_frame=-30.0)
    for f in (sure, unsure):
        for snr in (20.0, 35.0):
            tr = Transcript("four", (Word("four", 0.0, 0.4, None),), 0.5, f)
            p = confidence.probability(confidence.with_snr(f, snr))
            if p < confidence.reject_below(snr):  # not heard: asked again, never stored
                assert heard_as(tr, "grammar", snr) == ("", None)
            else:
                assert heard_as(tr, "grammar", snr) == ("four", p)
    # told apart either side of the threshold in noise; in a clean room the bar is lower
    assert heard_as(Transcript("four", (), 0.5, sure), "grammar", 20.0)[0] == "four"
    assert heard_as(Transcript("four", (), 0.5, unsure), "grammar", 20.0)[0] == ""
    clean = confidence.probability(confidence.with_snr(unsure, 35.0))
    heard = heard_as(Transcript("four", (), 0.5, unsure), "grammar", 35.0)[0]
    assert heard == ("four" if clean >= confidence.fitted().reject_below_clean else "")
    loud = confidence.probability(confidence.with_snr(sure, 3.0))
    quiet = confidence.probability(confidence.with_snr(sure, 35.0))
    assert loud != quiet  # the room's noise is part of the confidence
    # Without features (vosk) the speech-to-noise gate decides, as configured.
    assert heard_as(Transcript("four", (), 0.8), "grammar", 5.0) == ("", None)
    assert heard_as(Transcript("four", (), 0.8), "grammar", 30.0) == ("four", 0.8)
    assert heard_as(Transcript("a story", (), None), "free", 1.0) == ("a story", None)


def test_the_benchmark_tunes_on_half_the_voices_and_reports_the_other() -> None:
    from tests.bench.answer_corpus import EXTRA_VOICES, TUNING_VOICES, VOICES, half, recipe

    rows = recipe()
    tuning = [r for r in rows if half(str(r["voice"])) == "tuning"]
    held = [r for r in rows if half(str(r["voice"])) == "held-out"]
    assert len(TUNING_VOICES & set(VOICES)) == len(VOICES) // 2 and tuning and held
    # The extra tuning clips: other voices (none held out), every grammar and room, more hedges.
    extra = recipe(extra=True)
    assert {r["voice"] for r in extra} == set(EXTRA_VOICES) <= TUNING_VOICES
    assert not set(EXTRA_VOICES) & set(VOICES)
    assert {(r["group"], r["room"]) for r in extra} == {(r["group"], r["room"]) for r in rows}
    assert {r["expected"] for r in extra if r["phrase"] == "hmm"} == {"unclear"}
    assert not {r["voice"] for r in tuning} & {r["voice"] for r in held}
    for part in (tuning, held):  # every grammar and room in both halves
        assert {(r["group"], r["room"]) for r in part} == {(r["group"], r["room"]) for r in rows}
