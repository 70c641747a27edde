"""`companion doctor` finds each planted fault, and passes a healthy device."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from companion.model.encode import resolve_model
from companion.ops.doctor import Probes, run_checks
from companion.settings.config import Config, Home, VoiceConfig, load_config, write_config
from tests.helpers.run import run_cli
from tests.helpers.study import make_home, run_scripted, session_lines

SPEAKERS = [
    {"name": "USB mic", "max_input_channels": 1, "max_output_channels": 0},
    {"name": "USB speaker", "max_input_channels": 0, "max_output_channels": 2},
]
HEALTHY = Probes(
    free_bytes=lambda _: 20 * 1024**3,
    audio_devices=lambda: SPEAKERS,
    listening=None,  # the real /proc scan
    service_state=lambda unit: "active",
)


@pytest.fixture
def device(tmp_path) -> Home:
    """A home with a session, a verified encoder model and a vosk model folder, all private."""
    import random

    opened = make_home(tmp_path / "home", "P7", "Ada")
    run_scripted(opened, session_lines(random.Random(1)), datetime.now(UTC) - timedelta(hours=2))
    models = opened.home.path / "models"
    models.mkdir(mode=0o700)
    # The shipped encoder, copied where config.toml points (doctor verifies what loads).
    shipped = resolve_model()
    tokenizer = json.loads(Path(f"{shipped}.json").read_text())["tokenizer"]["file"]
    for name in (shipped.name, f"{shipped.name}.json", tokenizer):
        shutil.copy(shipped.with_name(name), models / name)
    vosk = models / "vosk-model-small"
    (vosk / "am").mkdir(parents=True)
    (vosk / "am" / "final.mdl").write_bytes(os.urandom(512))
    config = Config(participant_id="P7", participant_name="Ada", protocol="protocol.toml",
                    model=f"models/{shipped.name}",
                    voice=VoiceConfig(vosk_model_dir="models/vosk-model-small"))  # fmt: skip
    write_config(opened.home, config)
    for path in opened.home.path.rglob("*"):
        os.chmod(path, 0o700 if path.is_dir() else 0o600)
    opened.db.close()
    return opened.home


def by_check(findings) -> dict[str, str]:
    return {f.check: f.status for f in findings}


def test_healthy_device_passes(device):
    # The fixture's vosk folder is only a layout; a healthy device uses a real recogniser.
    config = load_config(device)
    voice = dataclasses.replace(config.voice, asr_backend="pocketsphinx")
    write_config(device, dataclasses.replace(config, voice=voice))
    findings = run_checks(device, probes=HEALTHY)
    assert all(f.status == "ok" for f in findings), [f for f in findings if f.status != "ok"]
    assert {"audio-in", "audio-out", "encoder-model", "asr-model", "asr-vocabulary", "clock",
            "disk", "database", "service", "permissions",
            "network"} <= set(by_check(findings))  # fmt: skip


def test_a_model_that_does_not_load_fails_the_vocabulary_check(device):
    (finding,) = [f for f in run_checks(device, probes=HEALTHY) if f.check == "asr-vocabulary"]
    assert finding.status == "fail" and "vosk-model-small" in finding.detail


def test_missing_and_corrupt_models(device):
    model = device.path / "models" / resolve_model().name
    with model.open("ab") as f:
        f.write(b"x")
    assert by_check(run_checks(device, probes=HEALTHY))["encoder-model"] == "fail"
    model.unlink()
    (finding,) = [f for f in run_checks(device, probes=HEALTHY) if f.check == "encoder-model"]
    assert finding.status == "fail" and "missing" in finding.detail
    shutil.rmtree(device.path / "models" / "vosk-model-small" / "am")
    (finding,) = [f for f in run_checks(device, probes=HEALTHY) if f.check == "asr-model"]
    assert finding.status == "fail" and "no am/" in finding.detail


def test_bad_permissions(device):
    os.chmod(device.config_path, 0o644)
    (finding,) = [f for f in run_checks(device, probes=HEALTHY) if f.check == "permissions"]
    assert finding.status == "fail" and "config.toml 644" in finding.detail
    os.chmod(device.config_path, 0o600)
    os.chmod(device.path, 0o755)
    assert by_check(run_checks(device, probes=HEALTHY))["permissions"] == "fail"


def test_corrupt_database(device):
    db = device.db_path
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    data = bytearray(db.read_bytes())
    data[4096 : 4096 * 3] = os.urandom(8192)  # clobber pages after the header
    db.write_bytes(bytes(data))
    assert by_check(run_checks(device, probes=HEALTHY))["database"] == "fail"
    db.write_bytes(b"this is not a database at all" * 100)
    assert by_check(run_checks(device, probes=HEALTHY))["database"] == "fail"


def test_a_missing_or_empty_database_fails_as_every_command_refuses_it(device):
    """Never "integrity ok" on a 0-byte file (SQLite reads it as an empty database)."""
    db = device.db_path
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"")
    (finding,) = [f for f in run_checks(device, probes=HEALTHY) if f.check == "database"]
    assert finding.status == "fail" and "empty (0 bytes)" in finding.detail
    assert db.stat().st_size == 0  # doctor only reads
    db.unlink()
    (finding,) = [f for f in run_checks(device, probes=HEALTHY) if f.check == "database"]
    assert finding.status == "fail" and "database missing" in finding.detail
    assert not db.exists()


def test_tiny_disk_clock_audio_and_service(device):
    tiny = Probes(free_bytes=lambda _: 50 * 1024**2, audio_devices=lambda: SPEAKERS[1:],
                  service_state=lambda unit: "failed",
                  now=lambda: datetime(2020, 1, 1, tzinfo=UTC))  # fmt: skip
    got = by_check(run_checks(device, probes=tiny))
    assert got["disk"] == "fail" and got["clock"] == "fail"
    assert got["audio-in"] == "fail" and got["audio-out"] == "ok"
    assert got["service"] == "warn"
    behind = Probes(**{**HEALTHY.__dict__, "now": lambda: datetime(2025, 6, 1, tzinfo=UTC)})
    assert by_check(run_checks(device, probes=behind))["clock"] == "fail"  # before the last event


def test_listening_socket_found(device):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        (finding,) = [f for f in run_checks(device, probes=HEALTHY) if f.check == "network"]
    assert finding.status == "fail" and f":{port}" in finding.detail
    assert by_check(run_checks(device, probes=HEALTHY))["network"] == "ok"


def test_cli_exit_codes_and_json(device):
    done = run_cli("doctor", "--home", str(device.path), "--json", "--skip", "audio")
    assert done.stdout, done.stderr
    report = json.loads(done.stdout)
    failing = [f for f in report["findings"] if f["status"] == "fail"]
    assert done.returncode == (1 if failing else 0)
    os.chmod(device.config_path, 0o666)
    done = run_cli("doctor", "--home", str(device.path), "--skip", "audio", "--skip", "service")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert any(line.startswith("fail permissions:") for line in lines)
    assert all(re.match(r"^(ok|warn|fail) +[a-z-]+: ", line) for line in lines)


def test_a_database_not_yet_migrated_is_a_warning(tmp_path):
    """Right after a package update, before the service restarts: not broken, not current."""
    import sqlite_utils

    from companion.settings.config import Home
    from companion.store.db import migrate
    from companion.store.migrations import SCHEMA_VERSION

    home = Home(tmp_path / "h").ensure()
    old = sqlite_utils.Database(home.db_path)
    migrate(old, target=SCHEMA_VERSION - 1)
    old.close()
    (finding,) = [f for f in run_checks(home, probes=HEALTHY) if f.check == "database"]
    assert finding.status == "warn" and f"schema v{SCHEMA_VERSION - 1}" in finding.detail
