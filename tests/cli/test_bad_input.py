"""Bad input: one line naming the file and field, exit code 2, no traceback, nothing lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from companion.engine.protocol import default_protocol_text
from tests.helpers.run import run_cli

DEFAULT = default_protocol_text()


def broken_protocol(old: str, new: str) -> str:
    assert old in DEFAULT, old
    return DEFAULT.replace(old, new, 1)


PROTOCOL_CASES = [
    ("not toml", "[protocol\nid = 1", "not valid TOML"),
    ("bad condition", broken_protocol('condition = "matched"', 'condition = "matchd"'),
     "protocol.condition"),
    ("version text", broken_protocol("version = 1", 'version = "one"'), "protocol.version"),
    ("negative reprompts", broken_protocol("max_reprompts = 2", "max_reprompts = -1"),
     "protocol.max_reprompts"),
    ("unknown placeholder", broken_protocol("Hello {name}, it's", "Hello {nam}, it's"),
     "prompts.greeting"),
    ("missing prompt", broken_protocol("goodbye = ", "old_goodbye = "),
     "prompts.goodbye"),
    ("empty topics", broken_protocol("topics = [\n", "topics = []\nold_topics = [\n"),
     "prompts.topics"),
    ("scale reversed", broken_protocol("min = 1\nmax = 5\nanchors = { 1 = \"very unpleasant\"",
                                       "min = 5\nmax = 1\nanchors = { 1 = \"very unpleasant\""),
     "instruments.mood.items[0].max"),
    ("anchor outside scale", broken_protocol('{ 1 = "not at all", 5 = "completely" }',
                                             '{ 1 = "not at all", 9 = "completely" }'),
     "instruments.felt_understood.items[0].anchors"),
    ("bad item type", broken_protocol('type = "likert"\ntext = "On a scale',
                                      'type = "slider"\ntext = "On a scale'),
     "instruments.mood.items[0].type"),
    ("bad session kind", broken_protocol('sessions = ["daily", "enrolment", "exit"]',
                                         'sessions = ["weekly"]'), "instruments.mood.sessions"),
    ("duplicate instrument", DEFAULT + '\n[[instruments]]\nid = "mood"\n[[instruments.items]]\n'
     'id = "x"\ntype = "yesno"\ntext = "Ok?"\n', "id 'mood' is used twice"),
    ("unknown field", broken_protocol("follow_up_turns = 2", "follow_up_turn = 2"),
     "protocol.follow_up_turn"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("label", "text", "field"), PROTOCOL_CASES, ids=[c[0] for c in PROTOCOL_CASES]
)
def test_malformed_protocol_is_one_line_exit_2(
    tmp_path: Path, label: str, text: str, field: str
) -> None:
    protocol = tmp_path / "study.toml"
    protocol.write_text(text)
    home = tmp_path / "home"
    proc = run_cli("init", "--home", str(home), "--protocol", str(protocol))
    assert proc.returncode == 2, (label, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert str(protocol) in lines[0] and field in lines[0], lines[0]


CONFIG_CASES = [
    ("timezone", 'timezone = "Mars/Olympus"\n', "timezone"),
    ("participant id", 'participant_id = "a b c"\n', "participant_id"),
    ("type", "participant_name = 42\n", "participant_name"),
    ("unknown", 'particpant_id = "P1"\n', "particpant_id"),
    ("voice type", '[voice]\ntts_rate = "fast"\n', "voice.tts_rate"),
    ("syntax", "participant_id = \n", "not valid TOML"),
    ("protocol path", 'protocol = "missing.toml"\n', "missing.toml"),
]


@pytest.mark.parametrize(("label", "text", "field"), CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_malformed_config_is_one_line_exit_2(
    tmp_path: Path, label: str, text: str, field: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(text)
    proc = run_cli("session", "--text", "--home", str(home), input="")
    assert proc.returncode == 2, (label, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "config.toml" in lines[0] or "missing.toml" in lines[0]
    assert field in lines[0], lines[0]


def test_bad_input_loses_nothing_already_stored(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run_cli("init", "--home", str(home)).returncode == 0
    assert run_cli("session", "--text", "--home", str(home), input="four\nfive\n").returncode == 0
    before = (home / "companion.db").read_bytes()
    (home / "config.toml").write_text('timezone = "Nowhere/Land"\n')
    assert run_cli("session", "--text", "--home", str(home), input="1\n").returncode == 2
    (home / "config.toml").write_text('participant_id = "P001"\n')
    from companion.store.db import open_db

    db = open_db(home / "companion.db")
    assert sorted(v for (v,) in db.execute("SELECT value FROM self_reports")) == [4, 5]
    assert len(before) > 0


def test_unknown_command_and_help() -> None:
    assert run_cli("--version").stdout.startswith("companion, version")
    for command in (["session"], ["demo"], ["stories", "import"], ["init"]):
        proc = run_cli(*command, "--help")
        assert proc.returncode == 0 and "Usage:" in proc.stdout
    proc = run_cli("nonsense")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
