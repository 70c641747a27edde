"""Real decoders on real espeak-ng audio: pocketsphinx (English) and vosk (Korean model)."""

from __future__ import annotations

import json
import logging

import pytest

from companion.errors import ModelError
from companion.settings.config import VoiceConfig
from companion.voice.listen import PocketsphinxFactory, Recognizer, build_jsgf, pick_backend
from tests.helpers.speech import ANSWER_VOCAB, HEDGES, STORY, pad, speech_pcm, with_noise


def decode(rec: Recognizer, pcm: bytes, chunk: int = 960) -> tuple[object, list[str]]:
    partials = []
    for i in range(0, len(pcm), chunk):
        p = rec.accept(pcm[i : i + chunk])
        if p is not None:
            partials.append(p.text)
    return rec.final(), partials


@pytest.mark.parametrize(
    ("text", "voice", "wpm"),
    [
        ("four", "en-us", 160),
        ("four", "en-us", 190),
        ("strongly agree", "en-us", 130),
        ("strongly agree", "en-us+f3", 190),
        ("repeat that", "en-gb+m3", 160),
        ("two", "en-us+f3", 130),
        ("three", "en-gb", 190),
    ],
)
def test_pocketsphinx_grammar_answers(
    sphinx: PocketsphinxFactory, text: str, voice: str, wpm: int
) -> None:
    tr, partials = decode(
        sphinx.create("grammar", ANSWER_VOCAB, HEDGES), pad(speech_pcm(text, voice, wpm))
    )
    assert tr.text == text  # type: ignore[attr-defined]
    assert partials and partials[-1] == text
    words = tr.words  # type: ignore[attr-defined]
    assert [w.text for w in words] == text.split()
    assert all(0.2 < w.start_s < w.end_s < 2.0 for w in words)
    assert 0.0 <= tr.confidence <= 1.0  # type: ignore[attr-defined]


def test_unknown_words_dropped_with_warning(sphinx: PocketsphinxFactory, caplog) -> None:
    caplog.set_level(logging.WARNING)
    rec = sphinx.create("grammar", ("four", "flurbozzle", "five"), HEDGES)
    tr, _ = decode(rec, pad(speech_pcm("four", "en-us", 160)))
    assert tr.text == "four"  # type: ignore[attr-defined]
    assert "flurbozzle" in caplog.text


@pytest.mark.slow  # loads a vosk model or decodes a long story
def test_pocketsphinx_free_mode_story(sphinx: PocketsphinxFactory) -> None:
    tr, _ = decode(sphinx.create("free"), pad(speech_pcm(STORY, "en-us", 160)))
    words = tr.words  # type: ignore[attr-defined]
    assert len(words) >= 5
    assert {"park", "yesterday", "went", "sister"} & set(tr.text.split())  # type: ignore[attr-defined]
    assert all(a.end_s <= b.start_s + 1e-6 for a, b in zip(words, words[1:], strict=False))


def test_jsgf_shape() -> None:
    g = build_jsgf(["strongly agree", "skip"], ["seven"], 0.5)
    assert "public <answer> = /1/ ( ( strongly agree ) | ( skip ) ) | /0.5/ <garbage>;" in g
    assert "<garbage>" not in build_jsgf(["four"], [])


def test_pick_backend(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("COMPANION_VOSK_MODEL", raising=False)
    assert pick_backend(VoiceConfig(), tmp_path).name == "pocketsphinx"
    assert pick_backend(VoiceConfig(), None).name == "pocketsphinx"
    with pytest.raises(ModelError, match="asr_backend vosk: no vosk model installed"):
        pick_backend(VoiceConfig(asr_backend="vosk"), tmp_path)
    with pytest.raises(ModelError, match="no vosk model there"):
        pick_backend(VoiceConfig(vosk_model_dir=str(tmp_path / "missing")), tmp_path)
    with pytest.raises(ModelError, match="asr_backend 'whisper'"):
        pick_backend(VoiceConfig(asr_backend="whisper"), tmp_path)


# --- vosk: Korean model, Korean espeak-ng speech ---------------------------------------

KO_VOCAB = ("하나", "둘", "셋", "넷", "다섯")


@pytest.mark.slow  # loads a vosk model or decodes a long story
@pytest.mark.vosk
def test_vosk_grammar_streaming_and_confidences(vosk_ko, caplog) -> None:
    caplog.set_level(logging.WARNING)
    # A trace of room noise, as a microphone always has (clean espeak audio has digital silence).
    pcm = with_noise(pad(speech_pcm("셋", "ko", 150), 0.5, 1.5), 30)
    rec = vosk_ko.create("grammar", (*KO_VOCAB, "건너뛰기없음"))
    assert "건너뛰기없음" in caplog.text  # not in the model's lexicon: dropped, no crash
    tr, partials = decode(rec, pcm, chunk=480)
    assert tr.text and set(tr.text.split()) <= set(KO_VOCAB)
    for w in tr.words:
        assert 0.0 <= w.confidence <= 1.0
        assert 0.0 <= w.start_s < w.end_s <= len(pcm) / 32000
    assert partials  # streaming: hypotheses arrive before the end


@pytest.mark.slow  # loads a vosk model or decodes a long story
@pytest.mark.vosk
def test_vosk_endpointing_keeps_both_segments(vosk_ko) -> None:
    # Two answers separated by 2.5 s of silence: Kaldi's endpointer closes the first
    # segment mid-stream; final() must still report both.
    one = speech_pcm("둘", "ko", 150)
    pcm = pad(one, 0.5, 2.5) + pad(one, 0.0, 1.0)
    rec = vosk_ko.create("grammar", KO_VOCAB)
    tr, _ = decode(rec, pcm)
    assert len(tr.words) == 2
    assert tr.words[1].start_s > tr.words[0].end_s + 2.0


@pytest.mark.slow  # loads a vosk model or decodes a long story
@pytest.mark.vosk
def test_vosk_free_mode(vosk_ko) -> None:
    tr, _ = decode(
        vosk_ko.create("free"), pad(speech_pcm("안녕하세요 오늘 날씨가 좋네요", "ko", 150))
    )
    assert tr.text
    assert json.dumps(tr.text, ensure_ascii=False)
