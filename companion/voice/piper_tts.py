"""The piper engine: a neural voice (VITS, ONNX) rendered with piper-tts on onnxruntime.

piper-tts (GPL-3.0) and its voice package are the optional `voice` extra, so the core stays
Apache-2.0. Voices are pinned: both files of a voice must match the sha256 in
companion/data/piper_voices.json before it is loaded, like the encoder model. The voice is
loaded once per Speaker (one session), never per utterance.
"""

from __future__ import annotations

import importlib
import json
import logging
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from companion.checksum import sha256_file
from companion.errors import CompanionError
from companion.voice.audio import AudioSink
from companion.voice.speak import SpeakerSettings, Speech

log = logging.getLogger(__name__)

PINS_FILE = "piper_voices.json"
SEED = 20261202
INSTALL_HINT = "install the voice extra: .venv/bin/python -m pip install -e '.[voice]'"


class VoiceUnavailable(CompanionError):
    """piper or its voice is not installed, does not verify or does not load."""


@dataclass(frozen=True)
class VoiceFiles:
    """A piper voice: the model and its config (the .onnx.json beside it)."""

    model: Path

    @property
    def config(self) -> Path:
        return self.model.with_name(self.model.name + ".json")

    @property
    def name(self) -> str:
        return self.model.name.removesuffix(".onnx")


@lru_cache(maxsize=1)
def pins() -> dict[str, Any]:
    text = resources.files("companion.data").joinpath(PINS_FILE).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def packaged_voice() -> VoiceFiles:
    """The default voice, from its package (the `voice` extra)."""
    name = pins()["default"]
    pin = pins()["voices"][name]
    try:
        module = importlib.import_module(pin["module"])
    except ImportError:
        raise VoiceUnavailable(f"voice {pin['package']} is not installed; {INSTALL_HINT}") from None
    return VoiceFiles(Path(module.model_path()))


def verify(voice: VoiceFiles) -> None:
    """Both files present and matching the voice's pinned sha256, else VoiceUnavailable."""
    pin = pins()["voices"].get(voice.name)
    if pin is None:
        known = ", ".join(pins()["voices"])
        raise VoiceUnavailable(f"{voice.model}: not a pinned piper voice (pinned: {known}); "
                               f"add its sha256 to companion/data/{PINS_FILE}")  # fmt: skip
    for path, digest in ((voice.model, pin["onnx_sha256"]), (voice.config, pin["json_sha256"])):
        if not path.is_file():
            raise VoiceUnavailable(f"{path} is missing; {INSTALL_HINT}")
        if sha256_file(path) != digest:
            raise VoiceUnavailable(f"{path} does not match its pinned sha256; reinstall the voice "
                                   f"({pin['package']})")  # fmt: skip


def load(voice: VoiceFiles) -> Any:
    """A verified voice, loaded (piper.PiperVoice); VoiceUnavailable for any failure."""
    try:
        import onnxruntime
        from piper import PiperVoice
    except ImportError:
        raise VoiceUnavailable(f"piper-tts is not installed; {INSTALL_HINT}") from None
    verify(voice)
    try:
        # The voice's noise comes from random ops seeded when the model loads: seeded, the
        # same prompts render the same audio in every session (reproducible, testable).
        onnxruntime.set_seed(SEED)
        return PiperVoice.load(voice.model, voice.config)
    except Exception as exc:  # a model onnxruntime cannot read: the caller falls back
        raise VoiceUnavailable(f"{voice.model}: cannot load ({exc})") from exc


class PiperSpeaker(Speech):
    """A warm piper voice for a whole session."""

    name = "piper"
    # Measured (tests/bench/bench_tts.py): about 0.15 s of rendering per second of speech
    # and 15 characters a second, so a first piece of 40 characters starts within 0.3 s,
    # and each later piece of up to 120 renders while the one before it plays (a longer
    # one also raises the peak memory of a render).
    first_chars = 40
    max_chars = 120

    def __init__(self, settings: SpeakerSettings | None = None, sink: AudioSink | None = None):
        s = settings or SpeakerSettings()
        self.voice = s.piper_voice and VoiceFiles(s.piper_voice) or packaged_voice()
        self._piper = load(self.voice)
        from piper import SynthesisConfig

        self._config = SynthesisConfig(length_scale=1.0 / s.speed, volume=s.volume)
        try:  # a first run warms onnxruntime up; a voice that loads but cannot speak falls back
            if not self.render_pcm("Hello.")[0]:
                raise RuntimeError("no audio")
        except Exception as exc:
            raise VoiceUnavailable(f"{self.voice.model}: cannot speak ({exc})") from exc
        super().__init__(s, sink)

    def describe(self) -> str:
        return f"piper ({self.voice.name}, sha256 verified)"

    def render_pcm(self, text: str) -> tuple[bytes, int]:
        chunks = list(self._piper.synthesize(text, syn_config=self._config))
        rate: int = self._piper.config.sample_rate
        return b"".join(c.audio_int16_bytes for c in chunks), rate

    def _shut(self) -> None:
        self._piper = None
