"""Spoken answers in a neural voice (piper's en_US-joe-medium, the companion's own) through
the real channel and a cold pocketsphinx, with the shipped protocol's grammars: a number is
heard as itself and never as a command, and the phrase forms the parser accepts are in what
the recogniser listens for. piper is required (deploy/setup.sh installs it): without it these
tests fail, they do not skip."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from companion.engine.answers import FORM_SLOT, NUMBER_NAMES
from companion.engine.dialogue import Expectation
from companion.engine.items import parse_item, vocabulary_for
from companion.engine.protocol import load_protocol
from companion.voice.audio import WavSink, WavSource, read_wav, write_wav
from companion.voice.channels import VoiceChannel, VoiceSettings
from companion.voice.listen import PocketsphinxFactory
from companion.voice.vocab import answer_vocabularies
from tests.helpers.speech import PIPER_DEFAULT, pad, piper_pcm

PROTOCOL = load_protocol(None)
WORDS = PROTOCOL.answer_words
AGREE = next(i for inst in PROTOCOL.instruments if inst.id == "story_empathy" for i in inst.items)
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture()
def cold() -> PocketsphinxFactory:
    return PocketsphinxFactory()


def heard_as(factory: PocketsphinxFactory, tmp_path: Path, pcm: bytes) -> tuple[str, str]:
    """The clip written as a WAV file, read back, heard by a cold recogniser at the agree
    scale's grammar: (what the channel heard, what the parser makes of it)."""
    wav = tmp_path / "answer.wav"
    write_wav(wav, pad(pcm, 0.5, 1.5))
    factory.reset_adaptation()  # each the first utterance of a fresh process
    ch = VoiceChannel(VoiceSettings(), WavSource.from_pcm(read_wav(wav)[0]), WavSink(),  # type: ignore[arg-type]
                      recognizers=factory, sleep=lambda s: None, clock=lambda: EPOCH)  # fmt: skip
    heard = ch.listen(Expectation("answer", vocabulary_for(AGREE, WORDS),
                                  hedges=WORDS.spoken_hedges))  # fmt: skip
    a = parse_item(AGREE, heard.text, WORDS)
    return heard.text, f"value:{a.value}" if a.kind == "value" else a.kind


def test_two_in_the_neural_voice_is_heard_as_two_never_as_a_command(cold, tmp_path) -> None:
    # "two" was heard as "skip" in a quiet room. Without sampling noise piper repeats itself:
    # those renditions must be heard right; piper's own (noise drawn afresh each call) may go
    # unheard, never as a command or another number.
    for ls in (0.85, 1.0, 1.2):
        text, got = heard_as(cold, tmp_path, piper_pcm("two", ls, 0.0, 0.0))
        assert got == "value:2", (ls, text)
        text, got = heard_as(cold, tmp_path, piper_pcm("two", ls, *PIPER_DEFAULT[1:]))
        assert got in ("value:2", "unclear"), (ls, text)


def test_a_phrase_form_is_heard_and_a_hedged_number_refused(cold, tmp_path) -> None:
    text, got = heard_as(cold, tmp_path, piper_pcm("i'd say four", *PIPER_DEFAULT))
    assert got == "value:4", text
    text, got = heard_as(cold, tmp_path, piper_pcm("two i think", *PIPER_DEFAULT))
    assert not got.startswith("value:") and got not in ("skip", "repeat"), text


def test_every_accepted_phrase_form_is_in_every_rating_grammar() -> None:
    assert WORDS.spoken_answer_forms and WORDS.spoken_hedge_forms  # shipped: both lists
    for purpose, vocab in answer_vocabularies(PROTOCOL).items():
        inst_id, _, item_id = purpose.partition(".")
        item = next((i for inst in PROTOCOL.instruments if inst.id == inst_id
                     for i in inst.items if i.id == item_id), None)  # fmt: skip
        if item is None or item.type != "likert":
            continue
        for n in range(item.min, item.max + 1):
            for form in WORDS.spoken_answer_forms:
                said = form.replace(FORM_SLOT, NUMBER_NAMES[n])
                assert said in vocab, (purpose, said)
                assert parse_item(item, said, WORDS).value == n
            for form in WORDS.spoken_hedge_forms:
                said = form.replace(FORM_SLOT, NUMBER_NAMES[n])
                assert said in vocab, (purpose, said)
                assert parse_item(item, said, WORDS).kind == "unclear"


@pytest.mark.slow
def test_every_number_in_the_neural_voice_is_never_a_command(cold, tmp_path) -> None:
    for n in range(AGREE.min, AGREE.max + 1):
        for ls in (0.85, 1.0, 1.2):
            for _ in range(2):  # two draws of piper's sampling noise
                text, got = heard_as(cold, tmp_path, piper_pcm(NUMBER_NAMES[n], ls))
                assert got not in ("skip", "repeat"), (n, ls, text)


def test_a_command_heard_unsure_is_not_acted_on() -> None:
    from companion.engine.confirm import command_heard, load_fit

    bar = load_fit().command_below
    assert 0.0 < bar < 1.0
    assert not command_heard(bar - 0.01)  # asked again: it may be a number
    assert command_heard(bar) and command_heard(None)  # typed: what was meant
