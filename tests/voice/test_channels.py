"""Voice channels end to end: espeak-ng speech -> VAD -> real recognizer; faults; privacy."""

from __future__ import annotations

import stat

import pytest

from companion.engine.dialogue import EndOfInput, Expectation
from companion.voice.audio import WavSink, WavSource
from companion.voice.channels import (
    ReplayChannel,
    SynthesizedParticipantChannel,
    VoiceChannel,
    VoiceSettings,
)
from tests.helpers.speech import (
    ANSWER_VOCAB,
    HEDGES,
    NUMBERS,
    pad,
    speech_pcm,
    speech_wav,
    with_noise,
)

ANSWER = Expectation("answer", ANSWER_VOCAB, hedges=HEDGES)


def channel(sphinx, pcm: bytes, **settings: object) -> VoiceChannel:
    return VoiceChannel(
        VoiceSettings(**settings),  # type: ignore[arg-type]
        WavSource.from_pcm(pcm),
        WavSink(),
        recognizers=sphinx,
        sleep=lambda s: None,
    )


@pytest.mark.parametrize("text", ["four", "strongly agree", "skip", "repeat that"])
def test_answers_through_the_channel(sphinx, text: str) -> None:
    pcm = with_noise(pad(speech_pcm(text, "en-us", 160), 0.6, 1.5), 20, seed=3)
    heard = channel(sphinx, pcm).listen(ANSWER)
    assert heard.text == text
    assert heard.started_at < heard.ended_at


@pytest.mark.parametrize("snr", [10, 5])
@pytest.mark.parametrize("text", NUMBERS)
def test_noisy_numbers_are_right_or_nothing(sphinx, text: str, snr: int) -> None:
    for voice in ("en-us", "en-gb+m3"):
        pcm = with_noise(pad(speech_pcm(text, voice, 160), 0.6, 1.5), snr, seed=3)
        heard = channel(sphinx, pcm).listen(ANSWER)
        assert heard.text in (text, "")


def test_no_speech_times_out_empty(sphinx) -> None:
    heard = channel(sphinx, b"", no_speech_timeout_s=2.0).listen(ANSWER)
    assert heard.text == "" and heard.confidence is None


def test_never_transcribes_itself(sphinx) -> None:
    """The companion's voice reaches the microphone (echo); muting must discard it."""

    class EchoSink(WavSink):
        def __init__(self, mic: WavSource) -> None:
            super().__init__()
            self.mic = mic

        def play(self, pcm: bytes, sample_rate: int) -> None:
            super().play(pcm, sample_rate)
            from companion.voice.audio import resample

            self.mic.feed(resample(pcm, sample_rate))

    mic = WavSource.from_pcm(b"")
    sink = EchoSink(mic)
    ch = VoiceChannel(VoiceSettings(no_speech_timeout_s=3.0), mic, sink, recognizers=sphinx)
    ch.say("Four. Strongly agree.")
    assert sink.seconds > 1.0
    assert ch.listen(ANSWER).text == ""
    # Control: the same echo without muting would have been heard as an answer.
    mic.feed(resample_played(sink))
    assert ch.listen(ANSWER).text in ("four", "strongly agree", "four strongly agree")


def resample_played(sink: WavSink) -> bytes:
    from companion.voice.audio import resample

    pcm, rate = sink.played[0]
    return resample(pcm, rate) + b"\0" * 32000


def test_device_vanishes_then_end_of_input(sphinx, caplog) -> None:
    src = WavSource.from_pcm(b"", vanish_after=20)
    ch = VoiceChannel(VoiceSettings(), src, WavSink(), recognizers=sphinx, sleep=lambda s: None)
    with pytest.raises(EndOfInput):
        ch.listen(ANSWER)
    assert src.start_calls == 1 + 3  # first open + three retries
    assert "audio input problem" in caplog.text


def test_open_fails_twice_then_recovers(sphinx) -> None:
    pcm = with_noise(pad(speech_pcm("four", "en-gb+m3", 160), 0.6, 1.5), 20, seed=3)
    src = WavSource.from_pcm(pcm, fail_open=2)
    slept: list[float] = []
    ch = VoiceChannel(VoiceSettings(), src, WavSink(), recognizers=sphinx, sleep=slept.append)
    assert ch.listen(ANSWER).text == "four"
    assert slept == [0.5, 1.0]  # exponential backoff


def test_stall_ends_session(sphinx) -> None:
    src = WavSource.from_pcm(b"", stall_after=5)
    ch = VoiceChannel(VoiceSettings(), src, WavSink(), recognizers=sphinx, sleep=lambda s: None)
    with pytest.raises(EndOfInput):
        ch.listen(ANSWER)


def test_keep_audio_writes_private_wav(sphinx, tmp_path) -> None:
    pcm = with_noise(pad(speech_pcm("skip", "en-gb+m3", 160), 0.6, 1.5), 20, seed=3)
    ch = VoiceChannel(
        VoiceSettings(keep_audio=True), WavSource.from_pcm(pcm), WavSink(),
        recognizers=sphinx, audio_dir=tmp_path / "audio",
    )  # fmt: skip
    heard = ch.listen(ANSWER)
    assert heard.audio_path is not None
    mode = stat.S_IMODE((tmp_path / "audio" / heard.audio_path.split("/")[-1]).stat().st_mode)
    assert mode == 0o600


def test_replay_channel(sphinx, tmp_path) -> None:
    speech_wav(tmp_path / "01.wav", "three", "en-us", 160, snr_db=25)
    speech_wav(tmp_path / "02.wav", "repeat that", "en-gb+m3", 160, snr_db=25)
    ch = ReplayChannel(tmp_path, VoiceSettings(), recognizers=sphinx)
    assert ch.mode == "voice"
    ch.say("How many hours did you sleep?")
    assert ch.listen(ANSWER).text == "three"
    assert ch.listen(ANSWER).text == "repeat that"
    with pytest.raises(EndOfInput):
        ch.listen(ANSWER)
    ch.close()
    ch.close()


@pytest.mark.slow  # a whole synthesised conversation
def test_synthesized_participant(sphinx) -> None:
    answers = iter(["four", "Yesterday I went to the park with my sister.", None])
    prompts: list[str] = []

    def answer_fn(prompt: str, expect: Expectation) -> str | None:
        prompts.append(prompt)
        return next(answers)

    sink = WavSink()
    ch = SynthesizedParticipantChannel(answer_fn, VoiceSettings(), sink, recognizers=sphinx)
    ch.say("How are you feeling, from one to five?")
    assert ch.listen(Expectation("answer", NUMBERS, hedges=HEDGES)).text == "four"
    ch.say("Tell me about your day.")
    story = ch.listen(Expectation("story"))
    assert len(story.text.split()) >= 3
    with pytest.raises(EndOfInput):
        ch.listen(ANSWER)
    assert prompts[0] == "How are you feeling, from one to five?"
    assert sink.seconds > 2.0
    ch.close()
