"""One settings layer: config.toml, the protocol and its [schedule] through one validator.

Bad values fail at load with one line naming the file and the field, in every command that
reads them (init, doctor, run); config.toml round-trips through the TOML writer; doctor
reports the speech recogniser a session will really use.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from datetime import date, datetime, time
from pathlib import Path

import pytest

from companion.engine.protocol import default_protocol_text, parse_protocol
from companion.errors import ConfigError
from companion.ops.doctor import Probes, run_checks
from companion.settings.config import (
    Config,
    Home,
    VoiceConfig,
    config_toml,
    load_config,
    write_config,
)
from companion.settings.schedule import ScheduleConfig, Window, parse_schedule
from companion.settings.validate import Table
from tests.helpers.run import (
    REPO,
    home_with_config,
    one_error_line,
    run_cli,
    run_text_session,
    snapshot,
)

DEFAULT = default_protocol_text()

BAD_VOICE = [
    ("vad_aggressiveness", "7"),
    ("frame_ms", "25"),
    ("asr_backend", '"whisper"'),
    ("tts_rate", "20"),
    ("tts_rate", '"fast"'),
    ("tts_volume", "1.5"),
    ("end_silence_s", "0"),
    ("no_speech_timeout_s", "0.5"),
    ("max_answer_s", "600"),
    ("min_answer_snr_db", "-5"),
    ("tts_voice", '""'),
    ("input_device", "3"),
    ("keep_audio", "true"),  # a protocol setting, not config.toml's
]


# --- bad [voice] values: init, doctor and run all refuse them -----------------------------


@pytest.mark.parametrize(("key", "value"), BAD_VOICE, ids=[f"{k}={v}" for k, v in BAD_VOICE])
def test_bad_voice_value_is_refused_at_load_and_by_doctor(
    tmp_path: Path, key: str, value: str
) -> None:
    """Every bad value, through the one loader that init, doctor, session and run call."""
    home = home_with_config(tmp_path, f'participant_id = "P1"\n\n[voice]\n{key} = {value}\n')
    with pytest.raises(ConfigError) as caught:
        load_config(Home(home))
    message = str(caught.value)
    assert "\n" not in message and str(home / "config.toml") in message
    assert f"voice.{key}" in message
    (finding,) = run_checks(Home(home), probes=Probes())
    assert (finding.check, finding.status, finding.detail) == ("config", "fail", message)


# The reported bug's own values, through the real commands (the CLI path is the same for all).
CLI_BAD_VOICE = BAD_VOICE[:3]


@pytest.mark.parametrize(
    ("key", "value"), CLI_BAD_VOICE, ids=[f"{k}={v}" for k, v in CLI_BAD_VOICE]
)
def test_bad_voice_value_is_refused_by_init_doctor_and_run(
    tmp_path: Path, key: str, value: str
) -> None:
    home = home_with_config(tmp_path, f'participant_id = "P1"\n\n[voice]\n{key} = {value}\n')
    before = snapshot(home)
    where = f"voice.{key}"

    init = run_cli("init", "--home", str(home), "--name", "Ada")
    assert init.returncode == 2
    one_error_line(init, str(home / "config.toml"), where)
    assert snapshot(home) == before  # nothing written, no database made

    doctor = run_cli("doctor", "--home", str(home), "--json")
    assert doctor.returncode == 1
    (finding,) = json.loads(doctor.stdout)["findings"]
    assert finding["check"] == "config" and finding["status"] == "fail"
    assert "config.toml" in finding["detail"] and where in finding["detail"]
    assert "\n" not in finding["detail"]

    run = run_cli("run", "--voice", "--home", str(home), input="", timeout=60)
    assert run.returncode == 2
    one_error_line(run, "config.toml", where)
    assert snapshot(home) == before


def test_max_story_s_points_to_the_protocol(tmp_path: Path) -> None:
    home = home_with_config(tmp_path, "[voice]\nmax_story_s = 240\n")
    proc = run_cli("session", "--text", "--home", str(home), input="")
    assert proc.returncode == 2
    line = one_error_line(proc, "config.toml", "voice.max_story_s")
    assert "story_max_seconds" in line and "protocol" in line


# --- init validates everything before writing anything ------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--participant", "a b c"], "--participant"),
        (["--participant", ""], "--participant"),
        (["--name", "  "], "--name"),
        (["--timezone", "Mars/Olympus"], "--timezone"),
        (["--protocol", "no-such-protocol.toml"], "no-such-protocol.toml"),
    ],
)
def test_failed_init_writes_nothing(tmp_path: Path, args: list[str], needle: str) -> None:
    fresh = tmp_path / "fresh"
    proc = run_cli("init", "--home", str(fresh), *args)
    assert proc.returncode == 2
    one_error_line(proc, needle)
    assert not fresh.exists()

    existing = home_with_config(tmp_path, 'participant_id = "P9"\n')
    before = snapshot(existing)
    assert run_cli("init", "--home", str(existing), *args).returncode == 2
    assert snapshot(existing) == before


def test_init_with_a_bad_protocol_writes_nothing(tmp_path: Path) -> None:
    protocol = tmp_path / "study.toml"
    protocol.write_text(DEFAULT.replace("Hello {name}, it's", "Hello {name:>9}, it's"))
    proc = run_cli("init", "--home", str(tmp_path / "home"), "--protocol", str(protocol))
    assert proc.returncode == 2
    one_error_line(proc, str(protocol), "prompts.greeting", "{name:>9}")
    assert not (tmp_path / "home").exists()


def test_init_writes_config_with_the_toml_writer(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "study.toml").write_text(DEFAULT)
    relative = os.path.relpath(tmp_path / "study.toml", REPO)  # run_cli runs in REPO
    proc = run_cli("init", "--home", str(home), "--participant", "P-7", "--name", 'Zoë "Z"',
                   "--timezone", "Europe/Berlin", "--protocol", relative)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE((home / "config.toml").stat().st_mode) == 0o600
    data = tomllib.loads((home / "config.toml").read_text())
    # A relative --protocol is where init ran, stored absolute (config.toml's is home-relative).
    assert data == {"participant_id": "P-7", "participant_name": 'Zoë "Z"',
                    "timezone": "Europe/Berlin",
                    "protocol": str(tmp_path / "study.toml")}  # fmt: skip
    assert load_config(Home(home)).participant_name == 'Zoë "Z"'
    assert "speech recognition: " in proc.stdout  # the recogniser voice sessions will use


# --- config.toml round trip -----------------------------------------------------------------


def test_written_config_loads_back_equal(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    voice = VoiceConfig(asr_backend="vosk", vosk_model_dir="models/asr/x", input_device="USB",
                        tts_voice="en-gb", tts_rate=150, tts_volume=0.5, end_silence_s=1.0,
                        no_speech_timeout_s=12, max_answer_s=20.0, vad_aggressiveness=0,
                        frame_ms=10, min_answer_snr_db=12.5)  # fmt: skip
    config = Config(participant_id="P.1_x", participant_name='Ann "\\" O\'Neil',
                    timezone="America/New_York", protocol="my study.toml", model="m.onnx",
                    voice=voice)  # fmt: skip
    write_config(home, config)
    assert load_config(home) == config
    assert stat.S_IMODE(home.config_path.stat().st_mode) == 0o600
    assert not list(home.path.glob(".*tmp"))  # written atomically, nothing left over

    write_config(home, Config())
    assert load_config(home) == Config()
    assert tomllib.loads(home.config_path.read_text()) == {}  # defaults are not written
    only = Config(voice=VoiceConfig(frame_ms=20))
    assert tomllib.loads(config_toml(only)) == {"voice": {"frame_ms": 20}}


def test_integers_for_seconds_load_as_numbers(tmp_path: Path) -> None:
    home = home_with_config(tmp_path, "[voice]\nend_silence_s = 1\ntts_volume = 1\n")
    voice = load_config(Home(home)).voice
    assert voice.end_silence_s == 1.0 and isinstance(voice.end_silence_s, float)
    assert voice == VoiceConfig(end_silence_s=1.0)


# --- the protocol: placeholders -------------------------------------------------------------

BAD_PLACEHOLDERS = [
    ('greeting = "Hello {name}, it', 'greeting = "Hello {name:d}, it', "prompts.greeting"),
    ('greeting = "Hello {name}, it', 'greeting = "Hello {name!r}, it', "prompts.greeting"),
    ('greeting = "Hello {name}, it', 'greeting = "Hello {name.__class__}, it', "prompts.greeting"),
    ('greeting = "Hello {name}, it', 'greeting = "Hello {name[0]}, it', "prompts.greeting"),
    ('greeting = "Hello {name}, it', 'greeting = "Hello { name, it', "prompts.greeting"),
    ('greeting = "Hello {name}, it', 'greeting = "Hello name}, it', "prompts.greeting"),
    ('greeting = "Hello {name}, it', 'greeting = "Hello {}, it', "prompts.greeting"),
    ('greeting = "Hello {name}, it', 'greeting = "Hello {topic}, it', "prompts.greeting"),
    ("It's called {title}.", "It's called {topic}.", "prompts.story_intro"),
    ("Could you tell me about {topic}?", "Could you tell me about {title}?",
     "prompts.story_invitation"),
    ("catch that. {hint}", "catch that. {answer}", "prompts.reprompt"),
    ("I heard {answer}.", "I heard {hint}.", "prompts.confirm"),
    ('"How do you feel about it now, looking back?"', '"How do you feel about {topic} now?"',
     "prompts.follow_ups"),
    ('"How do you feel about it now, looking back?"', '"Go on{"', "prompts.follow_ups"),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "where"), BAD_PLACEHOLDERS)
def test_bad_placeholders_are_refused_at_load(old: str, new: str, where: str) -> None:
    assert old in DEFAULT
    with pytest.raises(ConfigError) as err:
        parse_protocol(DEFAULT.replace(old, new, 1), "study.toml")
    message = str(err.value)
    assert message.startswith(f"study.toml: {where}: ") and "\n" not in message


def test_schedule_invitation_placeholders() -> None:
    for text in ("Hi {name!s}", "Hi {nme}", "Hi {", "Hi {name:>5}"):
        with pytest.raises(ConfigError, match=r"^p\.toml: schedule\.invitation: "):
            parse_schedule({"invitation": text}, "p.toml")
    assert parse_schedule({"invitation": "Hi {name} {{now}}"}, "p.toml").invitation


def test_literal_braces_and_name_everywhere_are_fine() -> None:
    text = DEFAULT.replace("That's the end of the story.", "The end, {name} {{really}}.")
    assert parse_protocol(text, "s.toml").prompts["story_outro"] == "The end, {name} {{really}}."


def test_follow_ups_are_filled_with_the_name(home: Path, tmp_path: Path) -> None:
    protocol = tmp_path / "study.toml"
    protocol.write_text(
        DEFAULT.replace("follow_up_turns = 2", "follow_up_turns = 1").replace(
            '"What happened next, or how did it feel at the time?"',
            '"What happened next, {name}? {{smile}}"',
        )
    )
    write_config(Home(home), Config(participant_id="P042", participant_name="Robin",
                                    protocol=str(protocol)))  # fmt: skip
    replies = ["4", "2", "I walked by the river with my sister.", "It was lovely.",
               *["4"] * 8]  # fmt: skip
    result, _, db = run_text_session(home, replies)
    (text,) = [t for (t,) in db.execute("SELECT text FROM turns WHERE purpose = 'follow_up'")]
    assert text.endswith("What happened next, Robin? {smile}"), text


# --- the protocol: ranges ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("version = 1", f"version = {2**63}", "protocol.version"),
        ("version = 1", "version = 0", "protocol.version"),
        ("story_max_seconds = 180", "story_max_seconds = 2", "protocol.story_max_seconds"),
        ("semantic = 0.2", "semantic = 1.5", "matching.semantic"),
        ("semantic = 0.2\nemotion = 0.8", "semantic = 0\nemotion = 0", "matching.semantic"),
        ("emotion = 0.8", "emotion = -0.1", "matching.emotion"),
        ('sessions = ["daily", "enrolment", "exit"]', "sessions = []", "instruments.mood.sessions"),
        ("keep_audio = false", 'keep_audio = "no"', "protocol.keep_audio"),
    ],
)
def test_protocol_ranges(old: str, new: str, where: str) -> None:
    assert old in DEFAULT
    with pytest.raises(ConfigError, match=rf"^s\.toml: {where}: "):
        parse_protocol(DEFAULT.replace(old, new, 1), "s.toml")


def test_largest_sqlite_version_is_fine() -> None:
    text = DEFAULT.replace("version = 1", f"version = {2**63 - 1}")
    assert parse_protocol(text, "s.toml").version == 2**63 - 1


# --- the schedule ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"start_date": date(2019, 12, 31)}, "start_date"),
        ({"start_date": date(2207, 3, 1)}, "start_date"),
        ({"start_date": datetime(2027, 3, 1, 9, 0)}, "start_date"),
        ({"days": 367}, "days"),
        ({"reminders": 11}, "reminders"),
        ({"reminder_minutes": 0}, "reminder_minutes"),
        ({"snooze_minutes": 241}, "snooze_minutes"),
        ({"answer_seconds": 4}, "answer_seconds"),
        ({"sessions_per_day": 2}, "sessions_per_day"),  # one window
        ({"backup_time": "25:00"}, "backup_time"),
        ({"backup_time": "3am"}, "backup_time"),
        ({"backups_keep": 0}, "backups_keep"),
        ({"min_free_mb": -1}, "min_free_mb"),
        ({"quiet_hours": "22:00"}, "quiet_hours"),
        ({"windows": []}, "windows"),
        ({"weekdays": []}, "weekdays"),
        ({"invite": 1}, "invite"),
    ],
)
def test_schedule_ranges(table: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError, match=rf"^p\.toml: schedule\.{key}: ") as err:
        parse_schedule(table, "p.toml")
    assert "\n" not in str(err.value)


def test_schedule_values_and_defaults() -> None:
    text = DEFAULT + (
        "\n[schedule]\nstart_date = 2027-03-01\nwindows = ['18:00-20:00', '09:00-11:00']\n"
        "sessions_per_day = 2\nbackup_time = 04:15:00\nquiet_hours = '22:00-07:00'\n"
        "weekdays = ['fri', 'mon', 'mon']\n"
    )
    schedule = parse_protocol(text, "s.toml").schedule
    assert schedule.start_date == date(2027, 3, 1)
    assert schedule.windows == (Window(time(9), time(11)), Window(time(18), time(20)))
    assert schedule.weekdays == (0, 4) and schedule.max_per_day == 2
    assert schedule.backup_time == time(4, 15)
    assert schedule.quiet_hours == Window(time(22), time(7))
    assert parse_schedule({"backup_time": "3:30"}, "p") == ScheduleConfig()
    assert parse_schedule({}, "p") == ScheduleConfig() == parse_schedule(None, "p")


def test_table_reports_one_line_per_problem() -> None:
    t = Table({"a": "x\ny", "n": True}, "f.toml", "t.")
    with pytest.raises(ConfigError, match=r"^f\.toml: t\.n: must be a whole number"):
        t.integer("n", 0, 3)
    with pytest.raises(ConfigError, match=r"^f\.toml: t\.b: missing; add it$"):
        t.text("b")
    with pytest.raises(ConfigError, match=r"^f\.toml: t\.a: unknown field"):
        t.unknown({"n"})
