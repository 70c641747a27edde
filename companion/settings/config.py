"""The companion's home directory and its config.toml.

All state lives in one home directory (0700, files 0600): companion.db,
config.toml, later audio, models and backups. Config is validated into frozen
dataclasses (through `settings.validate`) and passed explicitly; nothing reads it
globally. Each default is written once, on its dataclass field.
"""

from __future__ import annotations

import dataclasses
import os
import re
import secrets
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import tomli_w

from companion.errors import ConfigError
from companion.files import open_private, private_dir, write_private
from companion.settings.validate import Table, read_toml

CONFIG_NAME = "config.toml"
DB_NAME = "companion.db"
DEVICE_ID_NAME = "device_id"
# An id, whole (fullmatch), after NFKC: `check_id`. ASCII only: [A-Za-z] is no other script.
PARTICIPANT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
NAME_MAX = 100
ASR_BACKENDS = ("auto", "vosk", "pocketsphinx")
TTS_ENGINES = ("piper", "pyttsx3")
FRAME_SIZES = (10, 20, 30)  # the frame lengths webrtcvad accepts, in ms
# Ranges checked at load (and by the Speaker, which can be built without a config).
TTS_RATE = (50, 500)  # words per minute
TTS_VOLUME = (0.0, 1.0)
_HEADER = "# companion config.toml: only values that differ from the defaults are listed.\n"


def default_home() -> Path:
    env = os.environ.get("COMPANION_HOME")
    if env:
        return Path(env).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "companion"


@dataclass(frozen=True)
class VoiceConfig:
    """The [voice] table: microphone, speech recognition and speech synthesis."""

    # Speech recogniser: "auto" (vosk when a vosk model is found, else pocketsphinx),
    # "vosk" (fail without a model) or "pocketsphinx" (English, built in).
    asr_backend: str = "auto"
    # The vosk model folder, relative to the home or absolute. None = the model
    # $COMPANION_VOSK_MODEL names, else the newest one `models install-asr` put in the home.
    vosk_model_dir: str | None = None
    # Audio devices by (part of their) name, see `companion devices`. None = the system default.
    input_device: str | None = None
    output_device: str | None = None
    # Speech engine: "piper" (a neural voice, the `voice` extra; pyttsx3 when it is not
    # installed or its voice file does not verify) or "pyttsx3" (espeak-ng).
    tts: str = "piper"
    # The piper voice (.onnx, its .onnx.json beside it), relative to the home or absolute;
    # it must be one pinned in companion/data/piper_voices.json. None = the packaged voice.
    piper_voice: str | None = None
    # pyttsx3's espeak-ng voice id, name or language (`espeak-ng --voices`).
    tts_voice: str = "en-us"
    # pyttsx3's speaking rate in words per minute (50..500); the protocol's speaking_rate
    # scales it.
    tts_rate: int = 170
    # Speech volume, 0.0 (silent) .. 1.0 (full).
    tts_volume: float = 1.0
    # Trailing silence that ends a participant's turn, in seconds (0.2..5).
    end_silence_s: float = 0.8
    # Give up on a turn when nobody starts talking for this long, in seconds (1..120).
    no_speech_timeout_s: float = 8.0
    # Longest answer turn, in seconds (2..120). The longest story turn is the protocol's
    # story_max_seconds.
    max_answer_s: float = 15.0
    # webrtcvad aggressiveness: 0 (keeps most sound as speech) .. 3 (filters most noise).
    vad_aggressiveness: int = 2
    # Audio frame length for the VAD, in ms: 10, 20 or 30.
    frame_ms: int = 30
    # Below this speech-to-noise ratio (dB, 0..60) a recognised answer is rejected: a grammar
    # decoder picks an answer from noise (measured: at 10 dB white noise espeak answers
    # come out as "five").
    min_answer_snr_db: float = 15.0


@dataclass(frozen=True)
class Config:
    """config.toml: who the participant is, which protocol and model, and [voice]."""

    # Participant id stored with every session: 1-64 ASCII letters, digits, '.', '_' or '-'.
    participant_id: str = "P001"
    # The name the companion greets the participant with.
    participant_name: str = "friend"
    # IANA timezone of the participant, e.g. "Europe/London": study days and windows.
    timezone: str = "UTC"
    # "default" (the built-in protocol) or a protocol file, relative to the home or absolute.
    protocol: str = "default"
    # Encoder model file; None = the packaged model.
    model: str | None = None
    voice: VoiceConfig = field(default_factory=VoiceConfig)

    def protocol_path(self, home: Path) -> str | Path:
        if self.protocol == "default":
            return self.protocol
        path = Path(self.protocol).expanduser()
        return path if path.is_absolute() else home / path


@dataclass(frozen=True)
class Home:
    """Paths inside one companion home."""

    path: Path

    @property
    def db_path(self) -> Path:
        return self.path / DB_NAME

    @property
    def config_path(self) -> Path:
        return self.path / CONFIG_NAME

    @property
    def lock_path(self) -> Path:
        return self.path / "session.lock"

    def ensure(self) -> Home:
        """Create the home with private permissions if it does not exist yet."""
        try:
            private_dir(self.path)
        except OSError as exc:
            raise ConfigError(
                f"{self.path}: cannot create home directory ({exc.strerror})"
            ) from exc
        return self


def resolve_home(home: str | Path | None) -> Home:
    # Absolute: paths built from it are stored (config.toml) and read from other directories.
    return Home((Path(home).expanduser() if home else default_home()).resolve())


def load_config(home: Home) -> Config:
    """Read HOME/config.toml; a missing file means all defaults. Reads only."""
    path = home.config_path
    if not path.exists():
        return Config()
    return parse_config(read_toml(path, "config"), str(path))


def parse_config(data: dict[str, Any], source: str) -> Config:
    t = Table(data, source)
    values = t.read({
        "participant_id": lambda k: _participant_id(t, k, t.text(k)),
        "participant_name": lambda k: _participant_name(t, k, t.text(k)),
        "timezone": lambda k: _timezone(t, k, t.text(k)),
        "protocol": t.text,
        "model": t.text,
        "voice": lambda k: parse_voice(t.sub(k)),
    })  # fmt: skip
    return Config(**values)


def parse_voice(v: Table) -> VoiceConfig:
    if "max_story_s" in v:
        raise v.fail(
            "max_story_s",
            "moved to the protocol: set story_max_seconds in its [protocol] table and "
            "remove this line",
        )
    values = v.read({
        "asr_backend": lambda k: v.choice(k, ASR_BACKENDS),
        "vosk_model_dir": v.text,
        "input_device": v.text,
        "output_device": v.text,
        "tts": lambda k: v.choice(k, TTS_ENGINES),
        "piper_voice": v.text,
        "tts_voice": v.text,
        "tts_rate": lambda k: v.integer(k, *TTS_RATE),
        "tts_volume": lambda k: v.number(k, *TTS_VOLUME),
        "end_silence_s": lambda k: v.number(k, 0.2, 5.0),
        "no_speech_timeout_s": lambda k: v.number(k, 1.0, 120.0),
        "max_answer_s": lambda k: v.number(k, 2.0, 120.0),
        "vad_aggressiveness": lambda k: v.integer(k, 0, 3),
        "frame_ms": lambda k: v.choice(k, FRAME_SIZES),
        "min_answer_snr_db": lambda k: v.number(k, 0.0, 60.0),
    })  # fmt: skip
    return VoiceConfig(**values)


def with_options(
    config: Config,
    *,
    participant_id: str | None = None,
    participant_name: str | None = None,
    timezone: str | None = None,
    protocol: str | None = None,
    input_device: str | None = None,
    output_device: str | None = None,
    tts: str | None = None,
) -> Config:
    """`config` with command-line options applied; each is checked like config.toml's
    value, and an error names the option (e.g. "--participant: ...")."""
    options = {
        "participant_id": ("--participant", participant_id),
        "participant_name": ("--name", participant_name),
        "timezone": ("--timezone", timezone),
        "protocol": ("--protocol", protocol),
    }
    changes: dict[str, Any] = {}
    for key, (option, value) in options.items():
        if value is None:
            continue
        t = Table({option: value}, "command line")
        text = t.text(option)
        if key == "participant_id":
            text = _participant_id(t, option, text)
        elif key == "participant_name":
            _participant_name(t, option, text)
        elif key == "timezone":
            _timezone(t, option, text)
        changes[key] = text
    devices = {"input_device": ("--input-device", input_device),
               "output_device": ("--output-device", output_device)}  # fmt: skip
    voice: dict[str, Any] = {}
    for key, (option, value) in devices.items():
        if value is not None:
            voice[key] = Table({option: value}, "command line").text(option)
    if tts is not None:
        voice["tts"] = Table({"--tts": tts}, "command line").choice("--tts", TTS_ENGINES)
    if voice:
        changes["voice"] = dataclasses.replace(config.voice, **voice)
    return dataclasses.replace(config, **changes)


def check_timezone(name: str, where: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"{where}: unknown timezone {name!r}; use an IANA name like 'Europe/London'"
        ) from None


def _timezone(t: Table, key: str, name: str) -> str:
    check_timezone(name, f"{t.source}: {t.where}{key}")
    return name


def check_id(value: object, where: str, error: type[Exception] = ConfigError) -> str:
    """The one id rule, for participant and story ids wherever they enter (config.toml,
    --participant options, replay, merge, imported stories): NFKC-normalised (a full-width
    "Ｐ042" is P042), then 1-64 ASCII letters, digits, '.', '_' or '-', starting with a letter
    or digit; a lookalike from another script (a Cyrillic "Р042") is refused, never stored."""
    normal = unicodedata.normalize("NFKC", value) if isinstance(value, str) else value
    if not isinstance(normal, str) or not PARTICIPANT_ID.fullmatch(normal):
        shown = ascii(value) if len(ascii(value)) <= 40 else ascii(value)[:37] + "..."
        foreign = [c for c in normal if not c.isascii()] if isinstance(normal, str) else []
        which = ""
        if foreign:  # name the lookalike: a Cyrillic "Р" looks like the letter P
            named = unicodedata.name(foreign[0], f"U+{ord(foreign[0]):04X}")
            which = f" ({named} is not ASCII)"
        raise error(f"{where}: {shown}{which} must be 1-64 ASCII letters, digits, '.', '_' or "
                    "'-', starting with a letter or digit; retype it")  # fmt: skip
    return normal


check_participant_id = check_id


def check_participant_name(value: object, where: str) -> str:
    """A name to greet with: one line of printable text, at most NAME_MAX characters."""
    if (
        not isinstance(value, str)
        or not value.strip()
        or len(value) > NAME_MAX
        or any(not ch.isprintable() for ch in value)
    ):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise ConfigError(f"{where}: {shown} must be 1-{NAME_MAX} printable characters on one line")
    return value


def _participant_id(t: Table, key: str, value: str) -> str:
    return check_participant_id(value, f"{t.source}: {t.where}{key}")


def _participant_name(t: Table, key: str, value: str) -> str:
    return check_participant_name(value, f"{t.source}: {t.where}{key}")


def device_id(home: Home) -> str:
    """This device's id, for exports and merges: generated once, kept in HOME/device_id (0600).
    `open_home` makes it, so reading commands (export) never have to write it."""
    path = home.path / DEVICE_ID_NAME
    if not path.exists():
        # Written whole to a temp file, then linked into place: a full disk leaves no empty
        # device_id, and of two processes racing the first one wins.
        tmp = path.with_name(f".{DEVICE_ID_NAME}.{os.getpid()}.tmp")
        try:
            with open_private(tmp) as out:
                out.write(f"dev-{secrets.token_hex(6)}\n")
                out.flush()
                os.fsync(out.fileno())
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process created it a moment ago
        finally:
            tmp.unlink(missing_ok=True)
    value = path.read_text("utf-8").strip()
    if not value:
        raise ConfigError(f"{path}: empty device id; delete the file to generate a new one")
    return value


def config_toml(config: Config) -> str:
    """config.toml text for `config`: the values that differ from the defaults."""
    data = _changed(config, Config())
    voice = _changed(config.voice, VoiceConfig())
    if voice:
        data["voice"] = voice
    return _HEADER + tomli_w.dumps(data)


def write_config(home: Home, config: Config) -> None:
    """Write config.toml atomically (0600); it loads back as an equal Config."""
    home.ensure()
    write_private(home.config_path, config_toml(config))


def _changed(value: Any, default: Any) -> dict[str, Any]:
    return {
        f.name: getattr(value, f.name)
        for f in dataclasses.fields(value)
        if getattr(value, f.name) != getattr(default, f.name)
        and not dataclasses.is_dataclass(getattr(value, f.name))
        and getattr(value, f.name) is not None
    }
