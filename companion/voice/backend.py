"""Which speech recogniser a home uses, and where its vosk model is: one pure decision.

The service (`listen.pick_backend`) and `companion doctor` both call `choose_backend`, so
doctor reports exactly what a session will load. Nothing here imports vosk or pocketsphinx.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from companion.settings.config import ASR_BACKENDS, VoiceConfig

VOSK_MODEL_ENV = "COMPANION_VOSK_MODEL"


def asr_dir(home: Path) -> Path:
    """Where `companion models install-asr` puts vosk models."""
    return home / "models" / "asr"


def is_vosk_model(path: Path) -> bool:
    return (path / "am").is_dir()


@dataclass(frozen=True)
class BackendChoice:
    """The recogniser a session will use, or why it cannot start (`name` None)."""

    name: Literal["vosk", "pocketsphinx"] | None
    vosk_model_dir: Path | None
    reason: str  # for doctor and the log; with `name` None, what to do about it


def configured_model_dir(voice: VoiceConfig, home: Path | None) -> Path | None:
    """config.toml's vosk_model_dir, resolved against the home like every home path."""
    if not voice.vosk_model_dir:
        return None
    path = Path(voice.vosk_model_dir).expanduser()
    return path if path.is_absolute() or home is None else home / path


def find_vosk_model(voice: VoiceConfig, home: Path | None) -> tuple[Path | None, str]:
    """The one place that finds the vosk model: config.toml's vosk_model_dir, else
    $COMPANION_VOSK_MODEL, else the newest model under HOME/models/asr.

    Returns (model dir or None, where it came from or why there is none).
    """
    configured = configured_model_dir(voice, home)
    if configured is not None:
        if is_vosk_model(configured):
            return configured, f"vosk model at {configured} (config.toml vosk_model_dir)"
        return None, (
            f"vosk_model_dir {configured}: no vosk model there (no am/); "
            "reinstall it with companion models install-asr"
        )
    env = os.environ.get(VOSK_MODEL_ENV)
    if env and is_vosk_model(Path(env)):
        return Path(env), f"vosk model at {env} (${VOSK_MODEL_ENV})"
    root = asr_dir(home) if home is not None else None
    found = sorted(p for p in root.iterdir() if is_vosk_model(p)) if root and root.is_dir() else []
    if found:
        return found[-1], f"vosk model at {found[-1]} (installed in the home)"
    why = f"${VOSK_MODEL_ENV}={env} is not a vosk model" if env else "no vosk model installed"
    return None, why


def choose_backend(voice: VoiceConfig, home: Path | None) -> BackendChoice:
    """vosk when a model is configured or installed, else pocketsphinx (English);
    `asr_backend` overrides. Pure: looks at files, loads nothing."""
    backend = voice.asr_backend
    if backend not in ASR_BACKENDS:  # config.toml is checked at load; this guards code callers
        return BackendChoice(None, None, f"asr_backend {backend!r}: use {', '.join(ASR_BACKENDS)}")
    if backend == "pocketsphinx":
        return BackendChoice("pocketsphinx", None, "pocketsphinx (config.toml asr_backend)")
    model, why = find_vosk_model(voice, home)
    if model is not None:
        return BackendChoice("vosk", model, why)
    if voice.vosk_model_dir:  # a configured model that is not there is never skipped
        return BackendChoice(None, None, why)
    if backend == "vosk":
        return BackendChoice(None, None, f"asr_backend vosk: {why}; "
                             "run companion models install-asr")  # fmt: skip
    return BackendChoice("pocketsphinx", None, f"{why}: pocketsphinx (English) will be used")


def lexicon_file(choice: BackendChoice) -> Path | None:
    """The recogniser's word list as a plain file, so doctor can check words without loading
    a decoder: pocketsphinx's bundled dictionary, or a vosk model's graph/words.txt (None when
    the model has none: then the model itself must be asked)."""
    if choice.name == "vosk" and choice.vosk_model_dir is not None:
        words = choice.vosk_model_dir / "graph" / "words.txt"
        return words if words.is_file() else None
    if choice.name == "pocketsphinx":
        spec = importlib.util.find_spec("pocketsphinx")
        for root in (spec.submodule_search_locations or []) if spec else []:
            path = Path(root) / "model" / "en-us" / "cmudict-en-us.dict"
            if path.is_file():
                return path
    return None


def read_lexicon(path: Path) -> frozenset[str]:
    """Words of a lexicon file (first column; pronunciation variants "word(2)" folded)."""
    words = set()
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.strip():
                words.add(line.split(maxsplit=1)[0].split("(")[0])
    return frozenset(words)
