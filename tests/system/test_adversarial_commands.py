"""The adversarial corpus (issue 11): hostile settings, ids, story files, missing and damaged
homes, restores, full and read-only disks, each through the real CLI in its own process, on
real SQLite. Every case asserts its exit code, one message line without a traceback, and the
database signature (unchanged, unless the case documents a change). Typed answers are in
tests/system/test_adversarial_answers.py.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from companion.engine.protocol import default_protocol_text
from tests.helpers.adversarial import ABSENT, SAME, Case, check, run_corpus, shared_root

BASE = default_protocol_text()
LONG_ID = "P" * 10_000


def config(text: str | bytes):
    def prepare(home: Path) -> None:
        data = text if isinstance(text, bytes) else text.encode()
        (home / "config.toml").write_bytes(data)

    return prepare


BAD_CONFIGS: dict[str, str | bytes] = {
    "id-space": 'participant_id = "bad id!"',
    "id-dotdot": 'participant_id = "../x"',
    "id-newline": 'participant_id = "P1\\n"',
    "id-empty": 'participant_id = ""',
    "id-long": f'participant_id = "{LONG_ID}"',
    "id-number": "participant_id = 5",
    "id-quote": 'participant_id = "P\'1"',
    "id-unicode": 'participant_id = "P\u00e91"',
    "name-newline": 'participant_name = "A\\nB"',
    "name-empty": 'participant_name = "  "',
    "name-long": f'participant_name = "{"n" * 1000}"',
    "name-nul": 'participant_name = "A\\u0000B"',
    "name-tab": 'participant_name = "A\\tB"',
    "tz-unknown": 'timezone = "Nowhere/Land"',
    "tz-path": 'timezone = "../../etc/passwd"',
    "tz-number": "timezone = 1",
    "protocol-missing": 'protocol = "missing.toml"',
    "protocol-number": "protocol = 3",
    "model-number": "model = 5",
    "voice-string": 'voice = "loud"',
    "voice-list": "voice = [1, 2]",
    "rate-huge": "[voice]\ntts_rate = 10000",
    "rate-negative": "[voice]\ntts_rate = -1",
    "rate-float": "[voice]\ntts_rate = 170.5",
    "rate-inf": "[voice]\ntts_rate = inf",
    "volume-nan": "[voice]\ntts_volume = nan",
    "volume-inf": "[voice]\ntts_volume = inf",
    "silence-neg-inf": "[voice]\nend_silence_s = -inf",
    "timeout-zero": "[voice]\nno_speech_timeout_s = 0",
    "frame-25": "[voice]\nframe_ms = 25",
    "vad-7": "[voice]\nvad_aggressiveness = 7",
    "asr-whisper": '[voice]\nasr_backend = "whisper"',
    "snr-bool": "[voice]\nmin_answer_snr_db = true",
    "max-story-moved": "[voice]\nmax_story_s = 10",
    "unknown-key": 'participant_idd = "P1"',
    "unknown-voice-key": "[voice]\nvolume = 1",
    "syntax": "participant_id = ",
    "duplicate-key": 'participant_id = "P1"\nparticipant_id = "P2"',
    "not-utf8": b'participant_name = "Ren\xe9e"\n',
    "binary": b"\x00\x01\x02SQLite format 3\x00",
    "nested-deep": "a = " + "[" * 200 + "]" * 200,
    "date-as-name": "participant_name = 2027-01-01",
    "empty-file": "",
    "blank-file": "   \n\n",
}
CONFIG_COMMANDS = {
    "session": ["session", "--text", "--home", "{home}"],
    "stories": ["stories", "list", "--home", "{home}"],
    "status": ["status", "--home", "{home}"],
    "init": ["init", "--home", "{home}"],
}


def config_cases() -> list[Case]:
    cases = []
    for label, text in BAD_CONFIGS.items():
        for command, argv in CONFIG_COMMANDS.items():
            needle = "missing.toml" if label == "protocol-missing" else "config.toml"
            cases.append(Case("config", f"{command}-{label}", argv, needles=(needle,),
                              prepare=config(text)))  # fmt: skip
    return cases


def protocol_text(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


BAD_PROTOCOLS: dict[str, str | bytes] = {
    "version-2^63": protocol_text("version = 1", "version = 9223372036854775808"),
    "version-0": protocol_text("version = 1", "version = 0"),
    "version-negative": protocol_text("version = 1", "version = -1"),
    "version-string": protocol_text("version = 1", 'version = "1"'),
    "version-float": protocol_text("version = 1", "version = 1.5"),
    "id-empty": protocol_text('id = "empathic-stories-daily"', 'id = ""'),
    "condition": protocol_text('condition = "matched"', 'condition = "best"'),
    "reprompts-11": protocol_text("max_reprompts = 2", "max_reprompts = 11"),
    "reprompts-negative": protocol_text("max_reprompts = 2", "max_reprompts = -1"),
    "reprompts-bool": protocol_text("max_reprompts = 2", "max_reprompts = true"),
    "follow-ups-100": protocol_text("follow_up_turns = 2", "follow_up_turns = 100"),
    "story-seconds-nan": protocol_text("story_max_seconds = 180", "story_max_seconds = nan"),
    "story-seconds-inf": protocol_text("story_max_seconds = 180", "story_max_seconds = inf"),
    "story-seconds-0": protocol_text("story_max_seconds = 180", "story_max_seconds = 0"),
    "semantic-nan": protocol_text("semantic = 0.2", "semantic = nan"),
    "semantic-inf": protocol_text("semantic = 0.2", "semantic = inf"),
    "semantic-negative": protocol_text("semantic = 0.2", "semantic = -0.5"),
    "semantic-2": protocol_text("semantic = 0.2", "semantic = 2"),
    "weights-zero": protocol_text("semantic = 0.2\nemotion = 0.8", "semantic = 0\nemotion = 0"),
    "emotion-similarity-unknown": protocol_text('# emotion_similarity = "agreement"',
                                                'emotion_similarity = "cosine"'),  # fmt: skip
    "format-spec": protocol_text("Hello {name}, it's", "Hello {name:d}, it's"),
    "format-width": protocol_text("Hello {name}, it's", "Hello {name:>2000000}, it's"),
    "lone-open-brace": protocol_text("Hello {name}, it's", "Hello { it's"),
    "lone-close-brace": protocol_text("Hello {name}, it's", "Hello } it's"),
    "attribute": protocol_text("Hello {name}, it's", "Hello {name.__class__}, it's"),
    "index": protocol_text("Hello {name}, it's", "Hello {name[0]}, it's"),
    "conversion": protocol_text("Hello {name}, it's", "Hello {name!r}, it's"),
    "positional": protocol_text("Hello {name}, it's", "Hello {0}, it's"),
    "empty-field": protocol_text("Hello {name}, it's", "Hello {}, it's"),
    "topic-in-greeting": protocol_text("Hello {name}, it's", "Hello {topic}, it's"),
    "unknown-placeholder": protocol_text("Hello {name}, it's", "Hello {participant}, it's"),
    "title-in-follow-up": protocol_text("What happened next,", "What happened in {title},"),
    "follow-up-spec": protocol_text("What happened next,", "What {name:x} happened next,"),
    "hint-in-closing": protocol_text("Thank you for spending", "{hint} Thank you for spending"),
    "prompt-missing": protocol_text('closing = "', 'closingg = "'),
    "prompt-number": protocol_text(
        'story_outro = "That\'s the end of the story."', "story_outro = 5"
    ),
    "topics-empty": BASE.replace("topics = [", "topics = []\nunused = [", 1),
    "unknown-table": BASE + "\n[extras]\nx = 1\n",
    "likert-min-above-max": protocol_text(
        "[[instruments.items]]", "[[instruments.items]]\nmin = 5\nmax = 1"
    ),
    "likert-max-11": protocol_text("[[instruments.items]]", "[[instruments.items]]\nmax = 11"),
    "item-type": BASE.replace('type = "likert"', 'type = "slider"', 1),
    "phase": BASE.replace('phase = "checkin"', 'phase = "middle"', 1),
    "start-date-9999": BASE + "\n[schedule]\nstart_date = 9999-12-31\n",
    "start-date-1900": BASE + "\n[schedule]\nstart_date = 1900-01-01\n",
    "start-date-string": BASE + '\n[schedule]\nstart_date = "2027-01-01"\n',
    "days-0": BASE + "\n[schedule]\ndays = 0\n",
    "days-huge": BASE + "\n[schedule]\ndays = 100000\n",
    "window-garbage": BASE + '\n[schedule]\nwindows = ["25:00-26:00"]\n',
    "invitation-topic": BASE + '\n[schedule]\ninvitation = "Talk about {topic}?"\n',
    "invitation-spec": BASE + '\n[schedule]\ninvitation = "Hi {name:>9}"\n',
    "not-utf8": BASE.encode() + b"\n# caf\xe9\n",
    "binary": b"\x89PNG\r\n\x1a\n\x00\x00",
    "empty": "",
    "nested-arrays": BASE + "\ndeep = " + "[" * 300 + "]" * 300 + "\n",
}


def protocol_file(text: str | bytes):
    def prepare(home: Path) -> None:
        (home.parent / "bad.toml").write_bytes(text if isinstance(text, bytes) else text.encode())

    return prepare


def protocol_cases() -> list[Case]:
    cases = []
    for label, text in BAD_PROTOCOLS.items():
        check_argv = ["protocol", "check", "bad.toml"]
        cases.append(Case("protocol", f"check-{label}", check_argv, needles=("bad.toml",),
                          prepare=protocol_file(text), home=False))  # fmt: skip
        cases.append(Case("protocol", f"init-{label}",
                          ["init", "--home", "{home}", "--protocol", "bad.toml"],
                          needles=("bad.toml",), db=ABSENT, prepare=protocol_file(text),
                          home=False))  # fmt: skip
    return cases


STORY = " ".join(["The rain kept falling on the small town while I waited for the bus."] * 12)
BAD_STORY_FILES: dict[str, tuple[str, str | bytes]] = {
    "csv-no-header": ("s.csv", "A,B\n"),
    "csv-no-text": ("s.csv", "title\nA\n"),
    "csv-short-row": ("s.csv", f'title,text\n"A","{STORY}"\n"B"\n'),
    "csv-empty-text": ("s.csv", 'title,text\n"A",""\n'),
    "csv-empty-title": ("s.csv", f'title,text\n"","{STORY}"\n'),
    "csv-bad-emotion": ("s.csv", f'title,text,emotion\n"A","{STORY}","ecstatic-ish"\n'),
    "csv-not-utf8": ("s.csv", b"title,text\nA,caf\xe9 " + STORY.encode() + b"\n"),
    "csv-empty": ("s.csv", ""),
    "csv-binary": ("s.csv", b"\x00\x01\x02\x03"),
    "csv-unclosed-quote": ("s.csv", f'title,text\n"A,"{STORY}\n'),
    "jsonl-not-json": ("s.jsonl", "{not json}\n"),
    "jsonl-list": ("s.jsonl", "[1, 2]\n"),
    "jsonl-no-text": ("s.jsonl", '{"title": "A"}\n'),
    "jsonl-text-number": ("s.jsonl", '{"title": "A", "text": 5}\n'),
    "jsonl-title-null": ("s.jsonl", f'{{"title": null, "text": "{STORY}"}}\n'),
    "jsonl-tags-string": ("s.jsonl", f'{{"title": "A", "text": "{STORY}", "tags": 7}}\n'),
    "jsonl-second-bad": ("s.jsonl", f'{{"title": "A", "text": "{STORY}"}}\n{{"title": 1}}\n'),
    "jsonl-not-utf8": ("s.jsonl", b'{"title": "A", "text": "caf\xe9"}\n'),
    "wrong-extension": ("s.txt", STORY),
    "missing-file": ("absent.csv", None),  # type: ignore[dict-item]
}


def story_file(name: str, content: str | bytes | None):
    def prepare(home: Path) -> None:
        if content is not None:
            data = content if isinstance(content, bytes) else content.encode()
            (home.parent / name).write_bytes(data)

    return prepare


def story_cases() -> list[Case]:
    return [
        Case(
            "stories",
            label,
            ["stories", "import", "--home", "{home}", name],
            needles=(name,),
            prepare=story_file(name, content),
        )  # fmt: skip
        for label, (name, content) in BAD_STORY_FILES.items()
    ]


BAD_IDS = ["../x", "bad id!", "P1\n", "", " ", LONG_ID, "'P1'", 'P"1', "P1;DROP", "-P1",
           "P\u00e91", "P/1", "P\\1", "P\x001", ".."]  # fmt: skip
BAD_NAMES = ["A\nB", "", "   ", "n" * 1000, "A\x00B", "A\tB", "\x1b[31mred"]


def identity_cases() -> list[Case]:
    cases = []
    for n, bad in enumerate(BAD_IDS):
        if "\x00" in bad:
            continue  # an argv cannot hold NUL
        cases.append(Case("identity", f"session-id-{n}",
                          ["session", "--text", "--home", "{home}", "--participant", bad],
                          needles=("--participant",)))  # fmt: skip
        cases.append(Case("identity", f"init-id-{n}",
                          ["init", "--home", "{home}", "--participant", bad],
                          needles=("--participant",), db=ABSENT, home=False))  # fmt: skip
        cases.append(Case("identity", f"replay-id-{n}",
                          ["model", "replay", "--home", "{home}", "--participant", bad],
                          needles=("--participant",)))  # fmt: skip
    for n, bad in enumerate(BAD_NAMES):
        if "\x00" in bad:
            continue
        cases.append(Case("identity", f"init-name-{n}", ["init", "--home", "{home}", "--name", bad],
                          needles=("--name",), db=ABSENT, home=False))  # fmt: skip
        cases.append(Case("identity", f"rename-{n}", ["init", "--home", "{home}", "--name", bad],
                          needles=("--name",)))  # fmt: skip
    cases.append(Case("identity", "replay-unknown", ["model", "replay", "--home", "{home}",
                                                     "--participant", "NOPE"],
                      needles=("NOPE",)))  # fmt: skip
    return cases


def _damage(kind: str):
    def prepare(home: Path) -> None:
        db = home / "companion.db"
        if kind == "no-config":
            (home / "config.toml").unlink()
        elif kind == "empty-config":
            (home / "config.toml").write_bytes(b"")
        elif kind == "no-db":
            db.unlink()
        elif kind == "empty-db":
            db.write_bytes(b"")
        elif kind == "garbage-db":
            db.write_bytes(os.urandom(65536))
        elif kind == "truncated-db":
            db.write_bytes(db.read_bytes()[:1024])
        elif kind == "page-garbage":
            data = bytearray(db.read_bytes())
            middle = (len(data) // 2) // 4096 * 4096
            data[middle : middle + 4096] = b"\xde\xad\xbe\xef" * 1024
            db.write_bytes(bytes(data))
        elif kind == "text-db":
            db.write_text("this is not a database\n")
        (home.parent / "more.csv").write_text(f'title,text\n"Bus","{STORY}"\n')

    return prepare


DAMAGE = ["no-dir", "no-config", "empty-config", "no-db", "empty-db", "garbage-db",
          "truncated-db", "page-garbage", "text-db"]  # fmt: skip
HOME_COMMANDS = {
    "session": ["session", "--text", "--home", "{home}"],
    "status": ["status", "--home", "{home}"],
    "stories-list": ["stories", "list", "--home", "{home}"],
    "stories-import": ["stories", "import", "--home", "{home}", "more.csv"],
    "export": ["export", "--home", "{home}", "--out", "{dir}/out"],
    "replay": ["model", "replay", "--home", "{home}"],
    "run": ["run", "--home", "{home}"],
    "init": ["init", "--home", "{home}"],
}


def home_cases() -> list[Case]:
    cases = []
    for damage in DAMAGE:
        for command, argv in HOME_COMMANDS.items():
            if command == "init" and damage in ("no-dir", "no-config", "empty-config"):
                continue  # init is how a home and its config are made
            cases.append(Case("home", f"{command}-{damage}", argv, home=damage != "no-dir",
                              db=ABSENT if damage == "no-dir" else SAME,
                              prepare=_damage(damage)))  # fmt: skip
    return cases


def _restore_setup(kind: str):
    def prepare(home: Path) -> None:
        backups = sorted((home / "backups").glob("companion-*.db"))
        if kind == "no-backups":
            for b in backups:
                b.unlink()
        elif kind == "damaged":
            (home.parent / "b.db").write_bytes(backups[-1].read_bytes()[:8192] + b"\0" * 4096)
        elif kind == "text":
            (home.parent / "b.db").write_text("hello")
        elif kind == "newer":
            (home.parent / "b.db").write_bytes(backups[-1].read_bytes())
            conn = sqlite3.connect(home.parent / "b.db")
            conn.execute("INSERT INTO schema_migrations VALUES (999, 'future', NULL)")
            conn.commit()
            conn.close()
        elif kind == "foreign":
            conn = sqlite3.connect(home.parent / "b.db")
            conn.execute("CREATE TABLE t (x)")
            conn.commit()
            conn.close()

    return prepare


def restore_cases() -> list[Case]:
    argv = ["restore", "--home", "{home}"]
    return [
        Case("restore", "no-backups", argv, needles=("no verified backup",),
             prepare=_restore_setup("no-backups")),
        Case("restore", "missing-from", [*argv, "--from", "nope.db"], needles=("nope.db",)),
        Case("restore", "damaged", [*argv, "--from", "b.db"], needles=("b.db",),
             prepare=_restore_setup("damaged")),
        Case("restore", "text", [*argv, "--from", "b.db"], needles=("b.db",),
             prepare=_restore_setup("text")),
        Case("restore", "newer-schema", [*argv, "--from", "b.db"], needles=("newer",),
             prepare=_restore_setup("newer")),
        Case("restore", "foreign", [*argv, "--from", "b.db"], needles=("not a companion",),
             prepare=_restore_setup("foreign")),
        Case("restore", "no-home", argv, needles=("no companion home",), home=False, db=ABSENT),
        # Documented changes: the newest verified backup comes back, the old file is kept aside.
        Case("restore", "after-delete", argv, rc=0, db="restored", prepare=_damage("no-db")),
        Case("restore", "after-garbage", argv, rc=0, db="restored", prepare=_damage("garbage-db")),
        Case("restore", "after-page-garbage", argv, rc=0, db="restored",
             prepare=_damage("page-garbage")),
    ]  # fmt: skip


def _export_setup(kind: str):
    def prepare(home: Path) -> None:
        folder = home.parent
        if kind == "out-not-empty":
            (folder / "out").mkdir()
            (folder / "out" / "x").write_text("x")
        elif kind == "names-not-utf8":
            (folder / "names.txt").write_bytes(b"Ren\xe9e\n")
        elif kind == "salt-short":
            (folder / "salt").write_text("short\n")
        elif kind == "salt-dir":
            (folder / "salt").mkdir()

    return prepare


def export_cases() -> list[Case]:
    base = ["export", "--home", "{home}", "--out", "{dir}/out"]
    specs = [
        ("out-not-empty", [], "not empty"),
        ("participant-dotdot", ["--participant", "../x"], "--participant"),
        ("participant-newline", ["--participant", "P1\n"], "--participant"),
        ("since-after-until", ["--since", "2027-02-01", "--until", "2027-01-01"], "--since"),
        ("names-not-utf8", ["--names-file", "names.txt"], "UTF-8"),
        ("salt-short", ["--deidentify", "--salt-file", "salt"], "salt"),
        ("salt-dir", ["--deidentify", "--salt-file", "salt"], "salt"),
    ]
    return [Case("export", name, [*base, *extra], needles=(needle,), prepare=_export_setup(name))
            for name, extra, needle in specs]  # fmt: skip


USAGE = {
    "unknown-command": ["sesion", "--home", "{home}"],
    "unknown-option": ["session", "--home", "{home}", "--txt"],
    "bad-kind": ["session", "--home", "{home}", "--kind", "weekly"],
    "replay-without-voice": ["session", "--home", "{home}", "--replay", "{dir}"],
    "replay-missing-dir": ["session", "--voice", "--home", "{home}", "--replay", "{dir}/none"],
    "import-no-file": ["stories", "import", "--home", "{home}"],
    "export-no-out": ["export", "--home", "{home}"],
    "export-bad-format": ["export", "--home", "{home}", "--out", "{dir}/o", "--format", "xml"],
    "export-bad-date": ["export", "--home", "{home}", "--out", "{dir}/o", "--since", "2027-13-01"],
    "merge-no-exports": ["merge", "{dir}/s.db"],
    "merge-missing-export": ["merge", "{dir}/s.db", "{dir}/none"],
    "merge-not-export": ["merge", "{dir}/s.db", "{dir}"],
    "protocol-no-file": ["protocol", "check"],
    "restore-from-dir": ["restore", "--home", "{home}", "--from", "{dir}"],
    "home-is-file": ["status", "--home", "{home}/config.toml"],
}


CASES = [*config_cases(), *protocol_cases(), *story_cases(), *identity_cases(), *home_cases(),
         *restore_cases(),
         *export_cases(), *(Case("usage", n, a) for n, a in USAGE.items())]  # fmt: skip


@pytest.fixture(scope="session")
def outcomes(tmp_path_factory, template_db):
    return run_corpus(shared_root(tmp_path_factory, "adversarial"), template_db, CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case, outcomes) -> None:
    outcome = outcomes[case.id]
    check(case, outcome)
    if case.db == "restored":
        home = Path(outcome["home"])
        backups = sorted((home / "backups").glob("companion-*.db"))
        conn = sqlite3.connect(f"file:{home / 'companion.db'}?mode=ro", uri=True)
        old = sqlite3.connect(f"file:{backups[-1]}?mode=ro", uri=True)
        query = "SELECT * FROM self_reports ORDER BY id"
        assert conn.execute(query).fetchall() == old.execute(query).fetchall() != []
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        if outcome["before"] is not None:  # the replaced file is kept, byte for byte
            kept = [n for n in outcome["files_after"] if n.startswith("companion.db.replaced-")
                    and not n.endswith(("-wal", "-shm"))]  # fmt: skip
            assert len(kept) == 1 and outcome["files_before"] is not None


def test_corpus_is_large() -> None:
    from collections import Counter

    sizes = Counter(c.family for c in CASES)
    assert sum(sizes.values()) >= 250, sizes
