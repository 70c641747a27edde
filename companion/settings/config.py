"""The companion's home directory and its config.toml.

All state lives in one home directory (0700, files 0600): companion.db,
config.toml, later audio, models and backups. Config is validated into frozen
dataclasses and passed explicitly; nothing reads it globally.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from companion.errors import ConfigError

CONFIG_NAME = "config.toml"
DB_NAME = "companion.db"
PARTICIPANT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def default_home() -> Path:
    env = os.environ.get("COMPANION_HOME")
    if env:
        return Path(env).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "companion"


@dataclass(frozen=True)
class VoiceConfig:
    """The [voice] table. None means "use the default" of the voice stack (companion.voice)."""

    asr_backend: str | None = None  # "auto" | "vosk" | "pocketsphinx"
    vosk_model_dir: str | None = None
    input_device: str | None = None  # audio devices by name (see `companion devices`)
    output_device: str | None = None
    tts_voice: str | None = None
    tts_rate: int | None = None
    tts_volume: float | None = None
    end_silence_s: float | None = None  # default 0.8
    no_speech_timeout_s: float | None = None  # default 8
    max_story_s: float | None = None  # default 180
    max_answer_s: float | None = None  # default 15
    vad_aggressiveness: int | None = None  # webrtcvad 0..3, default 2
    frame_ms: int | None = None  # 10 | 20 | 30, default 30
    # Below this speech-to-noise ratio a grammar decoder picks an answer from noise
    # (measured: at 10 dB white noise espeak answers come out as "five"), so reject.
    min_answer_snr_db: float | None = None  # default 15
    # Save participant turns as 0600 WAVs. Set from the protocol's keep_audio, not config.toml.
    keep_audio: bool = False


@dataclass(frozen=True)
class Config:
    participant_id: str = "P001"
    participant_name: str = "friend"
    timezone: str = "UTC"
    protocol: str = "default"  # "default" or a path, relative to the home
    model: str | None = None  # encoder model file; None = the packaged model
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
            self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(self.path, 0o700)
        except OSError as exc:
            raise ConfigError(
                f"{self.path}: cannot create home directory ({exc.strerror})"
            ) from exc
        return self


def resolve_home(home: str | Path | None) -> Home:
    return Home(Path(home).expanduser() if home else default_home())


def load_config(home: Home) -> Config:
    """Read HOME/config.toml; a missing file means all defaults."""
    path = home.config_path
    if not path.exists():
        return Config()
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the syntax") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from exc
    return parse_config(data, str(path))


def parse_config(data: dict[str, Any], source: str) -> Config:
    voice_table = data.get("voice", {})
    if not isinstance(voice_table, dict):
        raise ConfigError(f"{source}: voice: must be a table ([voice])")
    top = {k: v for k, v in data.items() if k != "voice"}
    values = _typed_fields(Config, top, source, "", skip={"voice"})
    voice_values = _typed_fields(VoiceConfig, voice_table, source, "voice.", skip={"keep_audio"})
    voice = VoiceConfig(**voice_values)
    config = Config(**values, voice=voice)
    if not PARTICIPANT_ID.match(config.participant_id):
        raise ConfigError(
            f"{source}: participant_id: {config.participant_id!r} must be 1-64 letters, digits, "
            "'.', '_' or '-'"
        )
    check_timezone(config.timezone, f"{source}: timezone")
    return config


def check_timezone(name: str, where: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"{where}: unknown timezone {name!r}; use an IANA name like 'Europe/London'"
        ) from None


def _typed_fields(cls: type, table: dict[str, Any], source: str, prefix: str, skip: set[str]):
    hints = {f.name: f for f in dataclasses.fields(cls) if f.name not in skip}
    for key in table:
        if key not in hints:
            raise ConfigError(f"{source}: {prefix}{key}: unknown field; check the spelling")
    out: dict[str, Any] = {}
    for name, spec in hints.items():
        if name not in table:
            continue
        value = table[name]
        wanted = str(spec.type)
        ok = (
            ("str" in wanted and isinstance(value, str) and value.strip())
            or ("bool" in wanted and isinstance(value, bool))
            or ("int" in wanted and isinstance(value, int) and not isinstance(value, bool))
            or (
                "float" in wanted and isinstance(value, int | float) and not isinstance(value, bool)
            )
        )
        if not ok:
            kind = wanted.replace(" | None", "")
            raise ConfigError(f"{source}: {prefix}{name}: must be a {kind}, got {value!r}")
        out[name] = value
    return out


def write_config(home: Home, config: Config) -> None:
    """Write config.toml (0600). Only simple scalar values are written."""
    lines = []
    for f in dataclasses.fields(Config):
        value = getattr(config, f.name)
        if f.name != "voice" and value is not None:
            lines.append(f"{f.name} = {_toml_value(value)}")
    voice = [
        f"{f.name} = {_toml_value(getattr(config.voice, f.name))}"
        for f in dataclasses.fields(VoiceConfig)
        if getattr(config.voice, f.name) is not None and f.name != "keep_audio"
    ]
    if voice:
        lines += ["", "[voice]", *voice]
    home.ensure()
    path = home.config_path
    tmp = path.with_suffix(".toml.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    escaped = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
