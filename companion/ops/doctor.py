"""`companion doctor`: is this device ready for a study day? One finding per check.

Everything the machine decides (free space, audio devices, sockets, clock,
systemd) comes through `Probes`, so tests plant faults without root or hardware.
It reads the home and never writes to it; heavy modules load only in the check needing them.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import sqlite3
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from companion.clock import clock_problem, iso, utc_now
from companion.engine.protocol import Protocol, load_protocol, shipped_protocol
from companion.errors import CompanionError
from companion.files import free_bytes
from companion.settings.config import Config, Home, load_config
from companion.store.db import schema_version
from companion.store.guard import require_database
from companion.store.migrations import SCHEMA_VERSION
from companion.store.queries import last_event_at
from companion.store.readonly import ReadOnly

log = logging.getLogger(__name__)

SERVICE = "companion.service"
FAIL_FREE_BYTES = 200 * 1024 * 1024
WARN_FREE_BYTES = 1024 * 1024 * 1024


@dataclass(frozen=True)
class Finding:
    check: str
    status: str  # ok, warn or fail
    detail: str

    @property
    def ok(self) -> bool:
        return self.status != "fail"

    def as_dict(self) -> dict[str, str]:
        return {"check": self.check, "status": self.status, "detail": self.detail}


def _audio_devices() -> list[dict[str, Any]]:
    import sounddevice

    return [dict(d) for d in sounddevice.query_devices()]


def _systemctl(unit: str) -> str | None:
    exe = shutil.which("systemctl")
    if exe is None:
        return None
    done = subprocess.run([exe, "is-active", unit], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


@dataclass(frozen=True)
class Probes:
    """The machine as doctor sees it; None means the real thing."""

    free_bytes: Callable[[Path], int] | None = None
    audio_devices: Callable[[], list[dict[str, Any]]] | None = None
    listening: Callable[[], list[tuple[int, str]]] | None = None  # (pid, "addr:port")
    now: Callable[[], datetime] | None = None
    service_state: Callable[[str], str | None] | None = None


def check_audio(config: Config, probes: Probes) -> list[Finding]:
    try:
        devices = (probes.audio_devices or _audio_devices)()
    except Exception as exc:  # PortAudio missing or broken: report, never crash doctor
        return [Finding("audio", "fail", f"cannot list audio devices ({exc})")]
    out = []
    for kind, key, wanted in (
        ("audio-in", "max_input_channels", config.voice.input_device),
        ("audio-out", "max_output_channels", config.voice.output_device),
    ):
        names = [str(d.get("name")) for d in devices if int(d.get(key, 0)) > 0]
        if wanted and not any(wanted in n for n in names):
            out.append(Finding(kind, "fail", f"configured device {wanted!r} not found"))
        elif not names:
            out.append(Finding(kind, "fail", "no device found; plug in or check ALSA"))
        else:
            out.append(Finding(kind, "ok", f"{len(names)} device(s), e.g. {names[0]}"))
    return out


def check_voice(home: Home, config: Config, protocol: Protocol | None) -> Finding:
    """The voice a session would speak with (`tts`), loaded and made to speak a word (at the
    shipped protocol's pace when the home's protocol does not load, which `config` reports)."""
    from companion.voice.channels import voice_settings
    from companion.voice.tts import check

    settings = voice_settings(config, protocol or shipped_protocol(), home.path)
    return Finding("tts", *check(settings.speaker_settings()))


def _sidecar_ok(model: Path) -> tuple[Finding, str | None]:
    """The encoder-model finding and, when it verifies, the active build id (the sidecar, the
    model's and the tokenizer's sha256 are checked once, as a session's load checks them)."""
    from companion.model.encode import model_build

    if not model.is_file():
        return Finding("encoder-model", "fail", f"{model} missing; reinstall the model"), None
    try:
        active = model_build(model)
    except CompanionError as exc:
        return Finding("encoder-model", "fail", str(exc)), None
    detail = f"active {active} ({model.name}), sha256 verified"
    return Finding("encoder-model", "ok", detail), active


def check_model_upgrade(home: Home, active: str) -> Finding | None:
    """Whether the home's stored encodings come from the active model (None: no database yet,
    or one not migrated yet, which the database check reports)."""
    from companion.store import upgrades

    try:
        with ReadOnly(home.db_path) as reader:
            if schema_version(reader.db) < SCHEMA_VERSION:
                return None
            earlier, stale = upgrades.pending(reader.db, active)
            last = upgrades.last_upgrade(reader.db)
    except (sqlite3.DatabaseError, CompanionError):
        return None
    if earlier or stale:
        return Finding("model-upgrade", "warn", f"this home was encoded by {', '.join(earlier)}; "
                       f"the next start moves it to {active} before any session")  # fmt: skip
    if last is not None:
        return Finding("model-upgrade", "ok", f"moved from {', '.join(last['from_models'])} to "
                       f"{last['to_model']} at {last['finished_at']}")  # fmt: skip
    return Finding("model-upgrade", "ok", f"every stored encoding is by {active}")


def _active_path(home: Home, config: Config) -> Path:
    """The model file sessions load: config.toml's `model`, else the newest shipped one."""
    from companion.model import encode

    if config.model:
        path = Path(config.model).expanduser()
        return path if path.is_absolute() else home.path / path
    return encode.resolve_model(None)


def check_models(home: Home, config: Config, protocol: Protocol | None = None) -> list[Finding]:
    out = []
    active = None
    try:
        finding, active = _sidecar_ok(_active_path(home, config))
        out.append(finding)
    except CompanionError as exc:
        out.append(Finding("encoder-model", "fail", str(exc)))
    if active is not None and home.db_path.is_file():
        upgrade = check_model_upgrade(home, active)
        if upgrade is not None:
            out.append(upgrade)
    out.append(_asr_finding(home, config))
    if out[-1].ok and protocol is not None:
        out.append(check_vocabulary(home, config, protocol))
    return out


def check_vocabulary(home: Home, config: Config, protocol: Protocol) -> Finding:
    """Does the recogniser a session would use know the answer words? Reads its word list,
    or loads the model when it has none as a file (a vosk model without graph/words.txt)."""
    from companion.voice.backend import choose_backend, lexicon_file, read_lexicon
    from companion.voice.vocab import check_vocabulary as check

    choice = choose_backend(config.voice, home.path)
    lexicon = lexicon_file(choice)
    knows: Callable[[str], bool]
    try:
        if lexicon is not None:
            knows = read_lexicon(lexicon).__contains__
        else:
            from companion.voice.listen import pick_backend

            knows = pick_backend(config.voice, home.path).knows
    except CompanionError as exc:
        return Finding("asr-vocabulary", "fail", str(exc))
    except Exception as exc:  # a model that does not load is a failed check, not a crash
        return Finding("asr-vocabulary", "fail", f"{choice.name}: cannot load: {exc}")
    result = check(knows, protocol)
    status = "fail" if not result.ok else "warn" if result.missing else "ok"
    return Finding("asr-vocabulary", status, f"{choice.name}: {result.summary()}")


def _asr_finding(home: Home, config: Config) -> Finding:
    # The same decision a session makes (listen.pick_backend), without loading a model.
    from companion.voice.backend import choose_backend

    choice = choose_backend(config.voice, home.path)
    if choice.name is None:
        return Finding("asr-model", "fail", choice.reason)
    if importlib.util.find_spec(choice.name) is None:
        return Finding("asr-model", "fail", f"{choice.reason}, but {choice.name} is not "
                       "installed; reinstall companion")  # fmt: skip
    fallback = choice.name == "pocketsphinx" and config.voice.asr_backend == "auto"
    return Finding("asr-model", "warn" if fallback else "ok", choice.reason)


def _last_event(home: Home) -> str | None:
    """The newest event's timestamp (read-only)."""
    if not home.db_path.exists():
        return None
    try:
        with ReadOnly(home.db_path) as reader:
            latest: str | None = last_event_at(reader.db)
    except sqlite3.DatabaseError:
        return None  # the database check reports this
    return latest


def check_clock(home: Home, probes: Probes) -> Finding:
    now = (probes.now or utc_now)()
    problem = clock_problem(now, _last_event(home))
    if problem is not None:
        return Finding("clock", "fail", f"{problem}; check NTP (timedatectl)")
    return Finding("clock", "ok", iso(now))


def check_disk(home: Home, probes: Probes) -> Finding:
    # A home not made yet: the disk it will be made on.
    where = next(p for p in (home.path, *home.path.parents) if p.exists())
    free = (probes.free_bytes or free_bytes)(where)
    text = f"{free / 1024**2:.0f} MB free at {where}"
    if free < FAIL_FREE_BYTES:
        return Finding("disk", "fail", text + "; free space before the next session")
    return Finding("disk", "warn" if free < WARN_FREE_BYTES else "ok", text)


def check_database(home: Home) -> Finding:
    # The same refusal every command makes (only init creates a database), never "integrity ok"
    # on a missing or 0-byte file.
    try:
        require_database(home)
    except CompanionError as exc:
        return Finding("database", "fail", str(exc))
    try:
        with ReadOnly(home.db_path) as reader:
            rows = [r[0] for r in reader.conn.execute("PRAGMA integrity_check").fetchall()]
            version = schema_version(reader.db)
    except sqlite3.DatabaseError as exc:
        return Finding("database", "fail", f"{home.db_path}: {exc}; restore a backup")
    if rows != ["ok"]:
        return Finding("database", "fail", f"integrity check: {'; '.join(rows[:3])}")
    if version < SCHEMA_VERSION:  # just updated: not migrated yet
        detail = f"integrity ok, schema v{version}; the service migrates it to v{SCHEMA_VERSION}"
        return Finding("database", "warn", detail + " when it starts (or companion init)")
    return Finding("database", "ok", f"integrity ok, schema v{version}")


def check_service(probes: Probes) -> Finding:
    state = (probes.service_state or _systemctl)(SERVICE)
    if state is None:
        return Finding("service", "ok", "not checked (no systemctl)")
    if state == "active":
        return Finding("service", "ok", f"{SERVICE} active")
    return Finding("service", "warn", f"{SERVICE} is {state}")


def check_permissions(home: Home) -> Finding:
    if not home.path.is_dir():
        return Finding("permissions", "fail", f"{home.path} does not exist; run companion init")
    bad = []
    for path in [home.path, *home.path.rglob("*")]:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue
        if mode & 0o077:
            bad.append(f"{path} {stat.S_IMODE(mode):o}")
    if bad:
        more = f" (+{len(bad) - 3} more)" if len(bad) > 3 else ""
        return Finding("permissions", "fail",
                       f"open to others: {', '.join(bad[:3])}{more}; chmod go-rwx")  # fmt: skip
    return Finding("permissions", "ok", "home 0700, files private")


def _tree(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        out.add(pid)
        todo.extend(children.get(pid, []))
    return out


def listening_sockets(owner_uid: int | None = None) -> list[tuple[int, str]]:
    """LISTEN TCP sockets of this process tree and (if not root) of owner_uid's processes."""
    inodes: dict[str, str] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) > 9 and parts[3] == "0A":
                addr, port = parts[1].rsplit(":", 1)
                inodes[parts[9]] = f"{addr}:{int(port, 16)}"
    pids = _tree(os.getpid())
    if owner_uid:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if entry.stat().st_uid == owner_uid:
                        pids.add(int(entry.name))
                except OSError:
                    continue
    found = []
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                found.append((pid, inodes[target[8:-1]]))
    return found


def check_network(home: Home, probes: Probes) -> Finding:
    owner = home.path.stat().st_uid if home.path.exists() else None
    found = (probes.listening or (lambda: listening_sockets(owner)))()
    if found:
        shown = ", ".join(f"pid {pid} on {addr}" for pid, addr in found[:3])
        return Finding("network", "fail", f"listening sockets: {shown}; nothing may listen")
    return Finding("network", "ok", "no listening sockets")


def run_checks(home: Home, skip: set[str] | None = None,
               probes: Probes | None = None) -> list[Finding]:  # fmt: skip
    skip, probes = skip or set(), probes or Probes()
    # The same validation as the service: config.toml, then the protocol it names.
    try:
        config = load_config(home)
    except CompanionError as exc:
        return [Finding("config", "fail", str(exc))]
    protocol: Protocol | None = None
    try:
        protocol = load_protocol(config.protocol_path(home.path))
        configured = Finding("config", "ok", f"participant {config.participant_id}, "
                             f"protocol {protocol.id} v{protocol.version}")  # fmt: skip
    except CompanionError as exc:
        configured = Finding("config", "fail", str(exc))
    checks: dict[str, Callable[[], list[Finding]]] = {
        # The voice loads onnxruntime and espeak-ng: with the devices, the one heavy group.
        "audio": lambda: [*check_audio(config, probes), check_voice(home, config, protocol)],
        "models": lambda: check_models(home, config, protocol),
        "clock": lambda: [check_clock(home, probes)],
        "disk": lambda: [check_disk(home, probes)],
        "database": lambda: [check_database(home)],
        "service": lambda: [check_service(probes)],
        "permissions": lambda: [check_permissions(home)],
        "network": lambda: [check_network(home, probes)],
    }
    findings = [configured]
    for name, check in checks.items():
        if name not in skip:  # `skip` names a group of checks or one finding
            findings.extend(f for f in check() if f.check not in skip)
    return findings
