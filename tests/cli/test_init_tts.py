"""`companion init --tts` (provisioning's `--tts`): the engine goes into config.toml, and the
home's sessions and `companion speak` use it; a wrong engine is one line, exit 2, nothing
written."""

from __future__ import annotations

import wave

from tests.helpers.run import one_error_line, run_cli

TZ = "Europe/London"


def test_init_tts_sets_the_engine_that_speaks(tmp_path):
    home = tmp_path / "home"
    done = run_cli("init", "--home", str(home), "--participant", "P020", "--timezone", TZ,
                   "--tts", "pyttsx3")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert 'tts = "pyttsx3"' in (home / "config.toml").read_text()
    wav = tmp_path / "hello.wav"
    spoken = run_cli("speak", "--home", str(home), "Hello, how was your day?", "--to", str(wav))
    assert spoken.returncode == 0, spoken.stderr
    assert "pyttsx3" in spoken.stdout and "piper" not in spoken.stdout
    with wave.open(str(wav)) as w:
        assert w.getnframes() > w.getframerate() // 2  # more than half a second of speech
    # Back to the neural voice (the default, so no longer listed); the rest stays.
    assert run_cli("init", "--home", str(home), "--tts", "piper").returncode == 0
    config = (home / "config.toml").read_text()
    assert 'participant_id = "P020"' in config and "tts" not in config


def test_init_refuses_an_unknown_engine_before_writing(tmp_path):
    home = tmp_path / "home"
    assert run_cli("init", "--home", str(home), "--participant", "P021",
                   "--timezone", TZ).returncode == 0  # fmt: skip
    before = (home / "config.toml").read_bytes()
    done = run_cli("init", "--home", str(home), "--tts", "espeak")
    assert done.returncode == 2
    line = one_error_line(done, "--tts")
    assert "piper" in line and "pyttsx3" in line
    assert (home / "config.toml").read_bytes() == before
