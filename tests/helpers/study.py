"""Study homes filled by REAL sessions: the session engine driven through a TextChannel.

Shared by the export, merge, report and Ansible tests and by tests/bench/bench_export.py.
A ticking clock lets one test run a month of daily sessions in a second or two.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from companion import app
from companion.engine.protocol import default_protocol_text
from companion.engine.record import record_protocol
from companion.engine.session import run_session
from companion.engine.textio import TextChannel
from companion.settings.config import Config, Home, write_config
from companion.store.queries import record_invitation

PLANTED = {
    "names": ["Margaret Oyelaran", "Tobias"],
    "email": "maggie.oy@example.org",
    "phone": "+44 7700 900123",
    "address": "42 Wellington Road",
    "date": "March 3rd, 2024",
}


def story_lines(rng: random.Random, planted: bool) -> list[str]:
    if planted:
        return [
            f"My neighbour Tobias came round on {PLANTED['date']} to fix the fence at "
            f"{PLANTED['address']}. He left his number, {PLANTED['phone']}, and his email "
            f"{PLANTED['email']} in case it breaks again.",
            "Margaret Oyelaran from next door brought us cake afterwards and we laughed a lot.",
            "that's all",
        ]
    first = rng.choice(
        [
            "I went for a long walk by the river and met an old friend from school.",
            "Work was stressful today because a project deadline moved forward.",
            "My grandson called to tell me he passed his driving test.",
            "I burned the dinner and had to order food, which was funny in the end.",
        ]
    )
    return [first, rng.choice(["It felt good.", "I was nervous at first.", "that's all"]), "no"]


def session_lines(rng: random.Random, planted: bool = False, happy: float = 0.0) -> list[str]:
    """Answers for one whole session: check-in, story, seven empathy items, felt understood."""

    def likert() -> str:
        return str(max(1, min(5, round(rng.gauss(3.2 + happy, 1.0)))))

    return [likert(), likert(), *story_lines(rng, planted), *(likert() for _ in range(8))]


# The default protocol with every instrument and item renamed and a 1-7 closing item: a study
# that is not the shipped one. Its session lines are the same (two check-in items, seven
# post-story items, one closing item).
CUSTOM_IDS = {
    "mood": "affect", "valence": "pleasantness", "arousal": "energy",
    "story_empathy": "resonance", "similar_emotions": "shared_feelings",
}  # fmt: skip


def custom_protocol_text() -> str:
    text = default_protocol_text().replace('id = "empathic-stories-daily"', 'id = "custom-study"')
    for old, new in CUSTOM_IDS.items():
        text = text.replace(f'id = "{old}"', f'id = "{new}"')
    text = text.replace('id = "felt_understood"', 'id = "rapport"', 1)
    text = text.replace('id = "felt_understood"', 'id = "understood_me"', 1)
    return text.replace(
        'min = 1\nmax = 5\nanchors = { 1 = "not at all", 5 = "completely" }',
        'min = 1\nmax = 7\nanchors = { 1 = "not at all", 7 = "completely" }',
    )


def make_home(path: Path, participant: str, name: str, timezone: str = "Europe/London",
              condition: str = "counterbalanced", protocol_text: str | None = None,
              record: bool = True) -> app.Opened:  # fmt: skip
    """A home with its own protocol file. Sessions record their protocol in `protocols`;
    `record=False` stands for data from before protocols were recorded (see build_study)."""
    home = Home(path).ensure()
    protocol = home.path / "protocol.toml"
    protocol.write_text(
        (protocol_text or default_protocol_text()).replace(
            'condition = "matched"', f'condition = "{condition}"'
        )
    )
    write_config(
        home,
        Config(participant_id=participant, participant_name=name, timezone=timezone,
               protocol="protocol.toml"),
    )  # fmt: skip
    opened = app.open_home(home.path, create=True)
    if record:
        record_protocol(opened.db, opened.protocol, datetime(2026, 3, 1, tzinfo=UTC))
    return opened


def forget_protocols(opened: app.Opened) -> None:
    """Data as a version without the protocols table left it (a pre-v4 device)."""
    opened.db.execute("DELETE FROM protocols")


def ticking(start: datetime, step: timedelta = timedelta(seconds=6)) -> Callable[[], datetime]:
    now = [start]

    def clock() -> datetime:
        now[0] += step
        return now[0]

    return clock


def run_scripted(opened: app.Opened, lines: list[str], at: datetime) -> str:
    """One real session through the text channel; returns its status."""
    clock = ticking(at)
    channel = TextChannel(io.StringIO("".join(f"{x}\n" for x in lines)), io.StringIO(), clock=clock)
    chooser = app.story_chooser(opened)
    result = run_session(opened.recorder, opened.protocol, channel, opened.participant, chooser,
                         clock=clock)  # fmt: skip
    return result.status


def fill_study(opened: app.Opened, days: int, seed: int, start: datetime | None = None,
               planted_day: int | None = None, skip: float = 0.1,
               interrupt: float = 0.1) -> dict[str, int]:  # fmt: skip
    """`days` daily sessions: some skipped (missed), some cut short (interrupted). Each day's
    invitations are recorded as the service records them: a skipped day's invitation and
    reminder go unanswered; a held session was sometimes snoozed first."""
    rng = random.Random(seed)
    start = start or datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
    counts = {"completed": 0, "interrupted": 0, "skipped": 0}
    for day in range(days):
        invited = start + timedelta(days=day)
        slot = f"{invited.astimezone(ZoneInfo(opened.config.timezone)).date()}#0"
        if day and rng.random() < skip and day != planted_day:
            counts["skipped"] += 1
            for reminder in range(2):
                record_invitation(
                    opened.db, slot, "no_answer", invited + timedelta(minutes=20 * reminder)
                )
            continue
        lines = session_lines(rng, planted=day == planted_day, happy=0.05 * day / max(days, 1))
        if rng.random() < interrupt and day != planted_day:
            lines = lines[: rng.randint(1, len(lines) - 2)]
        at = invited + timedelta(minutes=rng.randint(0, 90))
        if rng.random() < 0.3:
            record_invitation(opened.db, slot, "snoozed", invited)
        counts[run_scripted(opened, lines, at)] += 1
        (session_id,) = opened.db.execute("SELECT MAX(id) FROM sessions").fetchone()
        record_invitation(opened.db, slot, "accepted", at, session_id)
    return counts


def long_story_month(path: Path, days: int) -> tuple[app.Opened, int]:
    """One device's month with every story turn a long paragraph of planted details (about
    200 words, as a spoken story runs): the home and how many turns were made long."""
    from tests.helpers.planted import OWN_FIRST, planted_sentences

    opened = make_home(path, "P014", OWN_FIRST)
    fill_study(opened, days, seed=14, skip=0, interrupt=0)
    paragraphs = [" ".join(p.text for p in planted_sentences(12, seed=i)) for i in range(days)]
    rows = opened.db.execute("SELECT id FROM turns WHERE speaker = 'participant' AND purpose "
                             "IN ('story', 'follow_up')").fetchall()  # fmt: skip
    for i, (turn,) in enumerate(rows):
        opened.db.execute("UPDATE turns SET text = ? WHERE id = ?", [paragraphs[i % days], turn])
    return opened, len(rows)


def build_study(root: Path, homes: int = 3, days: int = 4, deidentify: bool = True,
                fmt: str = "csv", protocol_text: str | None = None,
                record: bool = True) -> tuple[list[app.Opened], list[Path]]:  # fmt: skip
    """`homes` devices with one participant each, every one exported to root/export-N."""
    from companion.research.export import ExportOptions, export_home

    opened, exports = [], []
    for n in range(homes):
        o = make_home(root / f"home-{n}", f"P{n + 1:03d}", ["Ada", "Bruno", "Chiara", "Dev"][n % 4],
                      protocol_text=protocol_text, record=record)  # fmt: skip
        fill_study(o, days, seed=n, interrupt=0.25)
        if not record:
            forget_protocols(o)
        out = root / f"export-{n}"
        export_home(o.home, out, ExportOptions(format=fmt, deidentify=deidentify))
        opened.append(o)
        exports.append(out)
    return opened, exports


def rewrite_export_file(export: Path, name: str, edit: Callable[[str], str]) -> None:
    """Change one file of an export with `edit` and re-sign it in the manifest, as a changed
    (or careless, or hostile) device would."""
    path = export / name
    path.write_text(edit(path.read_text("utf-8")), "utf-8", newline="")
    manifest = json.loads((export / "manifest.json").read_text())
    manifest["files"][name]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (export / "manifest.json").write_text(json.dumps(manifest))
