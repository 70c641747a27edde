"""The adversarial corpus, typed answers (issue 11): every reply form below is typed into a
real `companion session --text` in its own process, on real SQLite. Forms are packed ten to a
session (one per rating item); each case then checks its own stored row: the value the
participant meant, or NULL with `missing` after the re-asks, the raw reply kept.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from companion.engine.protocol import load_protocol
from tests.helpers.adversarial import Case, check, run_corpus, shared_root

PROTOCOL = load_protocol(None)
ATTEMPTS = PROTOCOL.max_reprompts + 1
CHECKIN = [("mood", "valence"), ("mood", "arousal")]
POST = [("story_empathy", i.id) for i in PROTOCOL.instruments[1].items]
CLOSING = [("felt_understood", "felt_understood")]
STORY = "Last week my sister visited and we cooked dinner together, which made me happy."

# (typed bytes, the value it must store or None). Generic forms fit any 1-5 item.
GENERIC: list[tuple[bytes, int | None]] = [
    (b"4", 4), (b"four", 4), (b"FOUR", 4), (b"4!", 4), (b"a 4", 4), (b"I'd say four", 4),
    (b"4/5", 4), (b"4 / 5", 4), (b"four out of five", 4), (b"  2  ", 2), (b"one", 1),
    (b"definitely 5", 5), (b"three please", 3), (b"okay so two", 2), (b"4.", 4),
    (b"-1", None), (b"\xe2\x88\x921", None), (b"-4", None), (b"- 4", None), (b"minus two", None),
    (b"+4", None), (b"~4", None), (b"4+", None), (b"4\xc2\xbd", None), (b"3\xc2\xbd", None),
    (b"4.5", None), (b".5", None), (b"4,5", None), (b"three and a half", None),
    (b"4/10", None), (b"3/4", None), (b">3", None), (b"<5", None), (b"\xe2\x89\xa54", None),
    (b"=4", None), (b"3-4", None), (b"3 to 4", None), (b"3 or 4", None),
    (b"between 3 and 4", None), (b"more than three", None), (b"at least 4", None),
    (b"4?", None), (b"four?", None), (b"probably 4", None), (b"I guess 2", None),
    (b"I think four", None), (b"around 4", None), (b"about four", None), (b"roughly 3", None),
    (b"maybe 4", None), (b"perhaps five", None), (b"4 or so", None), (b"like a 4", None),
    (b"kind of a 3", None), (b"4ish", None), (b"almost 5", None), (b"nearly 2", None),
    (b"6", None), (b"0", None), (b"10", None), (b"100", None), (b"four 5", None),
    (b"\xef\xbc\x94", None), (b"\xe2\x81\xb4", None), (b"IV", None), (b"40%", None),
    (b"4*", None), (b"#4", None), (b"{4}", None), (b"<b>4</b>", None), (b"not five", None),
    (b"fivefold", None), (b"4th", None), (b"4\xff", None), (b"\xff\xfe4", None),
    (b"4 " * 200_000, None),  # a 400 KB reply: refused, kept, in bounded memory
]  # fmt: skip
# Forms that use the agree-disagree anchors: only for the post-story items.
AGREE_FORMS: list[tuple[bytes, int | None]] = [
    (b"strongly agree", 5), (b"agree", 4), (b"4 - agree", 4), (b"five, strongly agree", 5),
    (b"neither agree nor disagree", 3), (b"I agree", 4), (b"4 (agree)", 4),
    (b"four, strongly disagree", None), (b"5 disagree", None), (b"somewhat agree", None),
    (b"I don't agree", None), (b"agree?", None), (b"probably agree", None),
    (b"agree and disagree", None),
]  # fmt: skip


def pack() -> list[list[tuple[tuple[str, str], bytes, int | None]]]:
    """Sessions, each a list of (item, form, expected) in the order the items are asked."""
    generic, agree = list(GENERIC), list(AGREE_FORMS)
    sessions = []
    while generic or agree:
        slots = []
        for item in [*CHECKIN, *POST, *CLOSING]:
            pool = agree if item in POST and agree else generic
            if pool:
                form, expected = pool.pop(0)
                slots.append((item, form, expected))
        sessions.append(slots)
    return sessions


def script(slots: list[tuple[tuple[str, str], bytes, int | None]]) -> bytes:
    lines: list[bytes] = []
    for n, (_, form, expected) in enumerate(slots):
        lines += [form] * (1 if expected is not None else ATTEMPTS)
        if n == len(CHECKIN) - 1:
            lines += [STORY.encode(), b"that's all"]
    return b"".join(line + b"\n" for line in lines)


SESSIONS = pack()
RUNS = [
    Case("answers", f"session-{n}", ["session", "--text", "--home", "{home}"], rc=0,
         stdin=script(slots), db="one more session")
    for n, slots in enumerate(SESSIONS)
]  # fmt: skip
FORMS = [(n, item, form, expected) for n, slots in enumerate(SESSIONS)
         for item, form, expected in slots]  # fmt: skip


@pytest.fixture(scope="session")
def answer_outcomes(tmp_path_factory, template_db):
    return run_corpus(shared_root(tmp_path_factory, "adversarial-answers"), template_db, RUNS)


def _stored(home: Path, item: tuple[str, str]) -> tuple:
    conn = sqlite3.connect(f"file:{home / 'companion.db'}?mode=ro", uri=True)
    try:
        last = conn.execute("SELECT MAX(id), COUNT(*) FROM sessions").fetchone()
        row = conn.execute(
            "SELECT value, status, raw_answer, attempts FROM self_reports "
            "WHERE session_id = ? AND instrument = ? AND item = ?", [last[0], *item],
        ).fetchone()  # fmt: skip
        status = conn.execute("SELECT status FROM sessions WHERE id = ?", [last[0]]).fetchone()
        return last[1], status[0], row
    finally:
        conn.close()


@pytest.mark.parametrize("run", RUNS, ids=[r.id for r in RUNS])
def test_session_completes(run: Case, answer_outcomes) -> None:
    outcome = answer_outcomes[run.id]
    check(run, outcome)
    sessions, status, _ = _stored(Path(outcome["home"]), CHECKIN[0])
    assert (sessions, status) == (2, "completed")  # the template's session and this one


@pytest.mark.parametrize(
    ("n", "item", "form", "expected"), FORMS,
    ids=[f"{f[:24]!r}->{e}" for _, _, f, e in FORMS],
)  # fmt: skip
def test_typed_form(n: int, item, form: bytes, expected, answer_outcomes) -> None:
    outcome = answer_outcomes[RUNS[n].id]
    _, _, row = _stored(Path(outcome["home"]), item)
    assert row is not None, (form[:40], outcome["stderr"][-500:])
    value, status, raw, attempts = row
    assert value == expected, (form[:40], row[:2])
    if expected is None:
        assert (status, attempts) == ("missing", ATTEMPTS), row
    typed = form.decode("utf-8", errors="replace").strip()
    assert raw.split(" | ")[0].strip()[:1000] == typed[:1000], raw[:80]  # the reply is kept


def test_answer_corpus_size() -> None:
    assert len(FORMS) >= 80 and sum(e is None for *_, e in FORMS) >= 55
