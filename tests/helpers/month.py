"""A simulated participant's month of daily sessions, and how repetitive the companion sounded.

Shared by tests/system/test_month.py and tests/bench/bench_variety.py. Sessions are real:
the session engine, the text channel, the on-device model and a SQLite file; only the
participant is scripted (our own sentences) and the clock is set to each day's evening.
"""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from companion import app
from companion.engine.protocol import default_protocol_text
from companion.engine.variety import pattern
from tests.helpers.study import make_home, run_scripted

# Our own first story turns; most have a "my ..." phrase the companion may recall later.
STORIES = [
    "My sister moved to Leeds last month and the house feels very quiet without her.",
    "I finally finished painting my garden shed and it looks wonderful.",
    "My grandson passed his driving test on the first try, and we all cheered.",
    "I lost my keys this morning and was late for the doctor.",
    "Our old cat was poorly all week and I was so worried about her.",
    "I baked bread for the first time and it actually came out well.",
    "My neighbour shouted at me about the bins and it really annoyed me.",
    "I forgot my friend's birthday and I felt terrible about it.",
    "The choir asked me to sing a solo next month and I am nervous.",
    "My daughter sent me photos from her holiday and it made me smile.",
    "I found my father's old watch in a drawer and kept looking at it.",
    "The bus never came and I waited in the cold for an hour.",
]
SECOND = ["It was quite a day.", "I keep thinking about it.", "that's all"]
START = datetime(2027, 3, 1, 18, 0, tzinfo=UTC)
SKIP = "skip"


def month_lines(rng: random.Random, day: int) -> list[str]:
    """One session's replies: check-in, a story (or a skip), post-story items, felt-understood."""
    story = [SKIP] if day % 9 == 4 else [rng.choice(STORIES), rng.choice(SECOND), "that's all"]
    likert = [str(rng.randint(1, 5)) for _ in range(10)]
    return [*likert[:2], *story, *likert[2:]]


def run_month(path: Path, days: int = 30, seed: int = 1, recall: bool = True) -> app.Opened:
    text = default_protocol_text()
    if not recall:
        text = text.replace("recall_earlier_stories = true", "recall_earlier_stories = false")
    opened = make_home(path, "P015", "Robin", condition="matched", protocol_text=text)
    rng = random.Random(seed)
    for day in range(days):
        at = START + timedelta(days=day, minutes=rng.randint(0, 60))
        status = run_scripted(opened, month_lines(rng, day), at)
        assert status == "completed", (day, status)
    return opened


def wording_of(text: str, wordings: tuple[str, ...]) -> str | None:
    """Which wording a turn used (the longest match: wordings may contain each other)."""
    found = [w for w in wordings if pattern(w).search(text)]
    return max(found, key=len) if found else None


def kinds(opened: app.Opened) -> dict[str, tuple[str, ...]]:
    """Each prompt kind and its wordings: prompts, follow-ups, topics, acknowledgements."""
    protocol = opened.protocol
    out = {k: v for k, v in protocol.alternatives.items() if len(v) > 1}
    out["follow_up"] = protocol.follow_ups
    out["topic"] = protocol.topics
    ack = protocol.acknowledgements
    out["acknowledgement"] = (
        *ack.neutral, *(p for ps in ack.family.values() for p in ps),
        *(p for ps in ack.valence.values() for p in ps),
        *(t for ts in ack.named.values() for t in ts),
    )  # fmt: skip
    return out


def said_by_day(opened: app.Opened) -> list[tuple[date, int, str]]:
    rows = opened.db.execute(
        "SELECT s.local_date, s.id, t.text FROM turns t JOIN sessions s ON s.id = t.session_id "
        "WHERE t.speaker = 'companion' AND t.purpose != 'story_reading' ORDER BY t.id"
    )
    return [(date.fromisoformat(d), sid, text) for d, sid, text in rows]


def repetitions(opened: app.Opened, window: int) -> dict[str, dict[str, int]]:
    """Per kind: uses, repeats within `window` days (same wording said within the window before),
    repeats within one session, and how many distinct wordings were used."""
    stats: dict[str, dict[str, int]] = {}
    said = said_by_day(opened)
    for kind, wordings in kinds(opened).items():
        last: dict[str, date] = {}
        in_session: dict[int, set[str]] = defaultdict(set)
        uses = repeats = session_repeats = 0
        for day, sid, text in said:
            for wording in _uses(text, wordings, kind):
                uses += 1
                if wording in last and (day - last[wording]).days < window:
                    repeats += 1
                if wording in in_session[sid]:
                    session_repeats += 1
                in_session[sid].add(wording)
                last[wording] = day
        stats[kind] = {"uses": uses, "repeats": repeats, "session_repeats": session_repeats,
                       "distinct": len(last), "wordings": len(wordings)}  # fmt: skip
    return stats


def _uses(text: str, wordings: tuple[str, ...], kind: str) -> list[str]:
    if kind == "topic":  # a topic is said inside an invitation
        return [t for t in wordings if t in text]
    found = wording_of(text, wordings)
    return [found] if found else []
