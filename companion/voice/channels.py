"""Voice channels: the dialogue.Channel over microphone/speaker, WAV replays or a
synthesised participant. Turn-taking is VAD + turns.TurnDetector; recognition is
listen.* in grammar mode for answers and free mode for stories.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from companion.engine.dialogue import EndOfInput, Expectation, Heard
from companion.engine.protocol import Protocol
from companion.errors import ConfigError
from companion.files import private_dir
from companion.settings.config import Config, VoiceConfig
from companion.voice import adaptation, confidence
from companion.voice.audio import (
    AudioSink,
    AudioSource,
    DeviceError,
    MicrophoneSource,
    SpeakerSink,
    WavSource,
    resample,
    write_wav,
)
from companion.voice.levels import Levels
from companion.voice.listen import Mode, RecognizerFactory, Transcript, pick_backend
from companion.voice.speak import Speaker, SpeakerSettings, Speech
from companion.voice.tts import open_speaker
from companion.voice.turns import (
    NoSpeech,
    SpeechStarted,
    TurnConfig,
    TurnDetector,
    TurnEnded,
    is_complete_answer,
)

log = logging.getLogger(__name__)
# A story expectation without its own cap (the session always sets one) gets the
# protocol's default.
_STORY_MAX_S = Protocol.story_max_seconds


@dataclass(frozen=True)
class VoiceSettings(VoiceConfig):
    """config.toml's [voice], plus what the protocol and the home decide for voice."""

    # From the protocol's keep_audio: keep participant turns as 0600 WAVs under HOME/audio.
    keep_audio: bool = False
    # From the protocol: how fast the companion speaks and the pause between sentences.
    speaking_rate: float = Protocol.speaking_rate
    sentence_pause_s: float = Protocol.sentence_pause_seconds
    # The home: resolves a relative vosk_model_dir and finds models installed there.
    # None = no home (a vosk model only from $COMPANION_VOSK_MODEL or an absolute path).
    home: Path | None = None

    def turn_config(self, expect: Expectation) -> TurnConfig:
        if expect.kind == "story":
            # The protocol's story_max_seconds arrives on the expectation: the one knob.
            cap = expect.max_seconds if expect.max_seconds is not None else _STORY_MAX_S
        else:
            cap = self.max_answer_s
            if expect.max_seconds is not None:
                cap = min(cap, expect.max_seconds)
        return TurnConfig(
            frame_ms=self.frame_ms,
            end_silence_s=self.end_silence_s,
            no_speech_timeout_s=self.no_speech_timeout_s,
            max_turn_s=cap,
        )

    def speaker_settings(self) -> SpeakerSettings:
        voice = None
        if self.piper_voice is not None:
            voice = Path(self.piper_voice).expanduser()
            if not voice.is_absolute() and self.home is not None:
                voice = self.home / voice
        return SpeakerSettings(
            self.tts_voice, self.tts_rate, self.tts_volume, engine=self.tts, piper_voice=voice,
            speed=self.speaking_rate, sentence_pause_s=self.sentence_pause_s,
        )  # fmt: skip


def voice_settings(config: Config, protocol: Protocol, home: Path) -> VoiceSettings:
    """config.toml's [voice] with the protocol's audio retention and speech pacing, and the home
    (where the vosk model and a relative piper voice are looked for)."""
    return VoiceSettings(
        **dataclasses.asdict(config.voice),
        keep_audio=protocol.keep_audio,
        speaking_rate=protocol.speaking_rate,
        sentence_pause_s=protocol.sentence_pause_seconds,
        home=home,
    )


def judge(
    transcript: Transcript, mode: Mode, snr: float, min_answer_snr_db: float
) -> tuple[str, float | None]:
    """An answer too unlikely to be right is not heard (asked again), never stored.

    Below `min_answer_snr_db` a grammar decoder picks answers out of noise, sometimes
    with a high confidence (white noise is not in the calibration corpus): not heard.
    Above it, a pocketsphinx answer whose confidence (with the room's speech-to-noise)
    is below `reject_below(snr)` is not heard either.
    """
    text, conf = transcript.text, transcript.confidence
    if mode != "grammar" or not text:
        return text, conf
    if snr < min_answer_snr_db:
        log.info("not heard: %r at speech-to-noise %.1f dB", text, snr)
        return "", None
    if transcript.features is not None:
        conf = confidence.probability(confidence.with_snr(transcript.features, snr))
        if conf < confidence.reject_below(snr):
            log.info("not heard: %r at confidence %.2f (%.1f dB)", text, conf, snr)
            return "", None
    return text, conf


class VoiceChannel:
    """dialogue.Channel over an AudioSource and an AudioSink.

    The microphone is muted while the companion speaks, so it never hears itself.
    Device errors are retried `retries` times with exponential backoff, then the
    participant is treated as gone (EndOfInput).
    """

    mode = "voice"

    def __init__(
        self,
        settings: VoiceSettings,
        source: AudioSource,
        sink: AudioSink,
        *,
        recognizers: RecognizerFactory | None = None,
        speaker: Speech | None = None,
        audio_dir: str | Path | None = None,
        clock: Callable[[], datetime] = datetime.now,
        retries: int = 3,
        backoff_s: float = 0.5,
        stall_s: float = 3.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import webrtcvad

        self.settings = settings
        self.source = source
        self.sink = sink
        self.recognizers = recognizers or pick_backend(settings, settings.home)
        confidence.fitted()  # a damaged fit stops the session before its first question
        self.speaker = speaker or open_speaker(settings.speaker_settings(), sink)
        if self.speaker.sink is None:
            self.speaker.sink = sink
        if settings.keep_audio and audio_dir is None:
            raise ConfigError("keep_audio is on but no audio dir was given")
        self.audio_dir = Path(audio_dir) if audio_dir is not None else None
        self._vad = webrtcvad.Vad(settings.vad_aggressiveness)
        self._clock = clock
        self._retries, self._backoff_s, self._stall_s, self._sleep = (
            retries,
            backoff_s,
            stall_s,
            sleep,
        )
        self._turns = 0
        self._failures = 0
        self._closed = False
        self._started = False
        self.last_transcript: object = None  # listen.Transcript of the last turn, for logs
        self.last_snr: float | None = None  # its speech-to-noise ratio (dB)
        adaptation.restore(settings.home, self.recognizers)

    # --- devices ------------------------------------------------------------------

    def _recover(self, exc: Exception) -> None:
        log.warning("audio input problem: %s", exc)
        self._failures += 1
        if self._failures > self._retries:  # reopened, but still no audio
            raise EndOfInput(f"audio input lost: {exc}")
        for attempt in range(self._retries):
            self._sleep(self._backoff_s * 2**attempt)
            try:
                self.source.close()
                self.source.start()
                log.info("audio input reopened after %d attempt(s)", attempt + 1)
                return
            except DeviceError as again:
                log.warning(
                    "reopening audio input failed (%d/%d): %s", attempt + 1, self._retries, again
                )
        raise EndOfInput(f"audio input lost: {exc}")

    def _ensure_started(self) -> None:
        if not self._started:
            try:
                self.source.start()
            except DeviceError as exc:
                self._recover(exc)
            self._started = True

    def _read(self, frame_s: float) -> bytes:
        waited = 0.0
        while True:
            try:
                frame = self.source.read(timeout=frame_s * 10)
            except DeviceError as exc:
                self._recover(exc)
                continue
            if frame is not None:
                self._failures = 0
                return frame
            waited += frame_s * 10
            if waited >= self._stall_s:
                self._recover(DeviceError(f"no audio for {waited:.1f} s"))
                waited = 0.0

    # --- Channel ------------------------------------------------------------------

    def say(self, text: str) -> None:
        self.source.set_muted(True)
        try:
            for attempt in range(self._retries + 1):
                try:
                    self.speaker.speak(text)
                    return
                except DeviceError as exc:
                    if attempt == self._retries:
                        raise EndOfInput(f"audio output lost: {exc}") from exc
                    log.warning("audio output problem (%d/%d): %s", attempt + 1, self._retries, exc)
                    self._sleep(self._backoff_s * 2**attempt)
        finally:
            self.source.set_muted(False)

    def pause(self, seconds: float) -> None:
        """Silence in the companion's speech (before a story), the microphone still muted."""
        self.source.set_muted(True)
        try:
            self.speaker.pause(seconds)
        except DeviceError as exc:  # the next say() retries the device
            log.warning("audio output problem in a pause: %s", exc)
        finally:
            self.source.set_muted(False)

    def listen(self, expect: Expectation) -> Heard:
        if self._closed:
            raise EndOfInput("voice channel is closed")
        self._ensure_started()
        detector = TurnDetector(self.settings.turn_config(expect))
        frame_s = detector.config.frame_ms / 1000.0
        mode: Mode = "grammar" if expect.kind == "answer" else "free"
        recognizer = self.recognizers.create(mode, expect.vocabulary, expect.hedges)
        t0 = self._clock()
        preroll: deque[bytes] = deque(maxlen=max(1, int(0.5 / frame_s)))
        turn_pcm: list[bytes] = []
        level = Levels()
        while True:
            frame = self._read(frame_s)
            voiced = self._vad.is_speech(frame, 16000)
            event = detector.feed(voiced)
            level.add(frame, voiced)
            if detector.started_at is None:
                preroll.append(frame)
            if isinstance(event, NoSpeech):
                at = t0 + timedelta(seconds=event.at_s)
                self.last_transcript = None
                return Heard("", at, at, None, None)
            if isinstance(event, SpeechStarted):
                # Feed audio from a little before the onset: VAD fires after the first phone.
                turn_pcm.extend(preroll)
                for chunk in preroll:
                    self._hypothesis(detector, recognizer.accept(chunk), mode, expect)
                continue
            if detector.started_at is not None:
                turn_pcm.append(frame)
                self._hypothesis(detector, recognizer.accept(frame), mode, expect)
            if isinstance(event, TurnEnded):
                transcript = recognizer.final()
                self.last_transcript = transcript
                self._turns += 1
                audio_path = self._keep(b"".join(turn_pcm), t0)
                snr = level.snr_db(round(event.start_s / frame_s))
                self.last_snr = snr
                text, confidence = judge(transcript, mode, snr, self.settings.min_answer_snr_db)
                return Heard(
                    text,
                    t0 + timedelta(seconds=event.start_s),
                    t0 + timedelta(seconds=event.end_s),
                    confidence,
                    audio_path,
                )

    @staticmethod
    def _hypothesis(detector: TurnDetector, partial: object, mode: Mode,
                    expect: Expectation) -> None:  # fmt: skip
        """A complete grammar answer ends the turn after a short pause (turns.TurnConfig)."""
        text = getattr(partial, "text", None)
        if mode == "grammar" and text is not None:
            detector.answer_complete = is_complete_answer(text, expect.vocabulary)

    def _keep(self, pcm: bytes, t0: datetime) -> str | None:
        if not self.settings.keep_audio or self.audio_dir is None:
            return None
        private_dir(self.audio_dir)
        path = self.audio_dir / f"turn-{t0:%Y%m%d-%H%M%S}-{self._turns:03d}.wav"
        write_wav(path, pcm)
        return str(path)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._turns:
            adaptation.save(self.settings.home, self.recognizers)
        self.source.close()
        self.sink.close()
        self.speaker.close()


def open_voice_channel(
    settings: VoiceSettings, audio_dir: str | Path | None = None
) -> VoiceChannel:
    """Microphone + speaker channel for a live session."""
    return VoiceChannel(
        settings,
        MicrophoneSource(settings.input_device, settings.frame_ms),
        SpeakerSink(settings.output_device),
        audio_dir=audio_dir,
    )


class _NullSink:
    def play(self, pcm: bytes, sample_rate: int) -> None:
        pass

    def close(self) -> None:
        pass


class ReplayChannel(VoiceChannel):
    """Participant turns from the WAV files in a directory (sorted by name), one per listen().

    Companion prompts are rendered to `sink` (default: discarded). When the files run
    out the participant is gone (EndOfInput).
    """

    def __init__(
        self,
        directory: str | Path,
        settings: VoiceSettings,
        sink: AudioSink | None = None,
        **kwargs: object,
    ) -> None:
        directory = Path(directory)
        self.files = sorted(directory.glob("*.wav"))
        if not directory.is_dir() or not self.files:
            raise ConfigError(f"{directory}: no .wav files to replay")
        super().__init__(settings, WavSource([], settings.frame_ms), sink or _NullSink(), **kwargs)  # type: ignore[arg-type]
        self._next = 0

    def listen(self, expect: Expectation) -> Heard:
        if self._next >= len(self.files):
            raise EndOfInput("replay: no more recorded turns")
        self.source.close()
        self.source = WavSource(self.files[self._next], self.settings.frame_ms)
        self._next += 1
        self._started = False
        return super().listen(expect)


AnswerFn = Callable[[str, Expectation], "str | None"]


class SynthesizedParticipantChannel(VoiceChannel):
    """A simulated participant who talks: their text answers are spoken by espeak-ng
    and go through the real VAD and recognizer. Returns what was recognised.
    """

    def __init__(
        self,
        answer_fn: AnswerFn,
        settings: VoiceSettings,
        sink: AudioSink | None = None,
        *,
        participant_voice: SpeakerSettings | None = None,
        **kwargs: object,
    ) -> None:
        super().__init__(settings, WavSource([], settings.frame_ms), sink or _NullSink(), **kwargs)  # type: ignore[arg-type]
        self._answer_fn = answer_fn
        self._voice = Speaker(participant_voice or SpeakerSettings(voice="en-us", rate=150))
        self.last_prompt = ""
        self.spoken: list[tuple[str, str]] = []  # (what they said, what was recognised)
        self._room = np.random.default_rng(1234)

    def say(self, text: str) -> None:
        self.last_prompt = text
        super().say(text)

    def listen(self, expect: Expectation) -> Heard:
        answer = self._answer_fn(self.last_prompt, expect)
        if answer is None:
            raise EndOfInput("simulated participant left")
        assert isinstance(self.source, WavSource)
        if answer.strip():
            pcm, rate = self._voice.render_pcm(answer)
            self.source.feed(self._in_room(resample(pcm, rate)))
        heard = super().listen(expect)
        self.spoken.append((answer, heard.text))
        return heard

    def _in_room(self, speech: bytes) -> bytes:
        """A breath before answering and a quiet room around it (35 dB below the speech).

        A real microphone never delivers digital silence; without a noise floor the
        speech-to-noise check has nothing to measure against.
        """
        lead, tail = np.zeros(int(0.3 * 16000)), np.zeros(int(1.0 * 16000))
        voice = np.frombuffer(speech, dtype=np.int16).astype(np.float64)
        x = np.concatenate([lead, voice, tail])
        loud = voice[np.abs(voice) > 100]
        power = float(np.mean(loud**2)) if loud.size else 1.0
        noise = self._room.normal(0.0, np.sqrt(power / 10**3.5), x.size)
        return np.clip(x + noise, -32768, 32767).astype(np.int16).tobytes()

    def close(self) -> None:
        super().close()
        self._voice.close()
