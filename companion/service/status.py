"""`companion status`: where the study stands, for the researcher visiting the home."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from companion import clock, files
from companion.clock import utc_now
from companion.engine.context import Opened
from companion.service import schedule, slots
from companion.store import queries, upgrades
from companion.store.adherence import adherence as count_adherence


@dataclass(frozen=True)
class SlotView:
    window: str
    state: str  # held / missed / covered / open / upcoming
    detail: str


@dataclass(frozen=True)
class Status:
    participant: str
    now: str
    study_day: int | None  # 1-based; None before the first or after the last study day
    study_days: int
    next_invitation: str | None
    today: tuple[SlotView, ...]
    last_session: dict[str, Any] | None
    adherence: dict[str, int]
    warnings: tuple[str, ...]
    # The on-device model: the active build (None: unavailable), the builds the home's
    # encodings come from, whether a move to the active one is still due, the last move.
    model: dict[str, Any] | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def audio_problem(dev: Path = Path("/dev/snd")) -> str | None:
    if not dev.is_dir() or not any(p.name.startswith("pcm") for p in dev.iterdir()):
        return f"no sound devices ({dev}); voice sessions cannot run"
    return None


def compute_status(
    opened: Opened,
    *,
    now: datetime | None = None,
    free_bytes: Callable[[Path], int] = files.free_bytes,
    audio: Callable[[], str | None] = audio_problem,
    model: str | None = None,
) -> Status:
    """`model`: the active model build (the wiring reads it from the sidecar), or None."""
    now = now or utc_now()
    db, cfg, person = opened.db, opened.protocol.schedule, opened.participant
    tz = ZoneInfo(person.timezone)
    enrolled = queries.enrolled_at(db, person.id)
    if enrolled is None:  # the home was made, no session or service has run yet
        enrolled = now
    days = schedule.study_days(cfg, enrolled.astimezone(tz).date())
    first = cfg.start_date or enrolled.astimezone(tz).date()
    today = now.astimezone(tz).date()
    day_number = (today - first).days + 1
    planned = schedule.study_slots(cfg, enrolled, tz, person.seed)
    views, upcoming = [], None
    for slot in planned:
        state = slots.state(db, person.id, slot, cfg.max_per_day)
        history = slots.history(db, slot)
        if state == "open" and slot.end > now:
            due = schedule.next_attempt(cfg, slot, history, now, tz)
            if due is not None and upcoming is None:
                upcoming = due
        if slot.local_date == today:
            window = cfg.windows[slot.index]
            label = f"{window.start:%H:%M}-{window.end:%H:%M}"
            if state == "open":
                state = "upcoming" if slot.start > now else ("open" if slot.end > now else state)
            detail = f"{len(history)} invitation(s)"
            if state == "missed":
                detail = f"reason {queries.missed_reason(db, person.id, slot.start) or '?'}"
            views.append(SlotView(label, state, detail))
    last = db.execute(
        "SELECT id, kind, status, reason, started_at, ended_at FROM sessions "
        "WHERE participant_id = ? AND status != 'missed' ORDER BY started_at DESC LIMIT 1",
        [person.id],
    ).fetchone()
    rows = db.execute(
        "SELECT status, local_date FROM sessions WHERE participant_id = ?", [person.id]
    ).fetchall()
    counted = count_adherence(rows)  # the report counts with the same function
    reasons = db.execute(
        "SELECT reason, COUNT(*) FROM sessions WHERE participant_id = ? AND status = 'missed' "
        "GROUP BY reason",
        [person.id],
    ).fetchall()
    # Sessions no invitation led to: started by hand (Enter, `companion session`).
    unscheduled = db.execute(
        "SELECT COUNT(*) FROM sessions s WHERE participant_id = ? AND status != 'missed' AND "
        "NOT EXISTS (SELECT 1 FROM invitations i WHERE i.session_id = s.id)",
        [person.id],
    ).fetchone()[0]
    ended = sum(1 for s in planned if s.end <= now)
    adherence = {
        "scheduled_slots_ended": ended,
        "sessions_unscheduled": unscheduled,
        **counted.as_dict(),
        **{f"sessions_missed_{reason}": n for reason, n in reasons},
        # The keys of earlier versions, unchanged (they count sessions; see docs/daily.md).
        "intended_so_far": ended,
        "held": counted.sessions_completed,
        "interrupted": counted.sessions_interrupted,
        "missed": counted.sessions_missed,
        **{f"missed_{reason}": n for reason, n in reasons},
    }
    warnings = [w for w in (clock.clock_problem(now, queries.last_event_at(db)), audio()) if w]
    free = free_bytes(opened.home.path)
    if free < cfg.min_free_mb * 1024 * 1024:
        warnings.append(f"disk: {free // 2**20} MB free, sessions need {cfg.min_free_mb} MB")
    columns = ("id", "kind", "status", "reason", "started_at", "ended_at")
    model_view = {
        "active": model,
        "encoded_by": upgrades.models_in_use(db),
        "upgrade_due": model is not None and any(upgrades.pending(db, model)),
        "last_upgrade": upgrades.last_upgrade(db),
    }
    return Status(
        participant=person.id,
        now=now.astimezone(tz).isoformat(timespec="seconds"),
        study_day=day_number if days and first <= today <= days[-1] else None,
        study_days=cfg.days,
        next_invitation=upcoming.astimezone(tz).isoformat(timespec="minutes") if upcoming else None,
        today=tuple(views),
        last_session=dict(zip(columns, last, strict=True)) if last else None,
        adherence=adherence,
        warnings=tuple(warnings),
        model=model_view,
    )


def format_status(st: Status) -> str:
    day = f"day {st.study_day} of {st.study_days}" if st.study_day else "outside the study dates"
    lines = [f"participant {st.participant}, {st.now}: {day}"]
    lines.append(f"next invitation: {st.next_invitation or 'none planned'}")
    for view in st.today:
        lines.append(f"today {view.window}: {view.state} ({view.detail})")
    if st.last_session:
        s = st.last_session
        lines.append(f"last session: #{s['id']} {s['kind']} {s['status']} at {s['started_at']}")
    a = st.adherence
    missed = ", ".join(f"{k.removeprefix('sessions_missed_')} {v}" for k, v in a.items()
                       if k.startswith("sessions_missed_"))  # fmt: skip
    lines.append(
        f"sessions: completed {a['sessions_completed']}, interrupted "
        f"{a['sessions_interrupted']}, missed {a['sessions_missed']}"
        + (f" ({missed})" if missed else "")
        + f", running {a['sessions_running']}; {a['sessions_unscheduled']} held outside the "
        f"schedule; {a['scheduled_slots_ended']} scheduled windows ended so far"
    )
    lines.append(
        f"study days: {a['days_observed']} from the first session to the last: held "
        f"{a['days_held']}, interrupted {a['days_interrupted']}, missed {a['days_missed']}, "
        f"no record {a['days_no_record']}"
    )
    if st.model is not None:
        m = st.model
        active = m["active"] or "unavailable (sessions match stories by words)"
        line = f"model: {active}"
        if m["upgrade_due"]:
            line += (f"; this home was encoded by {', '.join(m['encoded_by']) or 'none'}: it is "
                     "moved to the active model at the next start, before any session")
        elif m["last_upgrade"]:
            u = m["last_upgrade"]
            line += f"; moved from {', '.join(u['from_models'])} at {u['finished_at']}"
        lines.append(line)
    lines += [f"warning: {w}" for w in st.warnings]
    return "\n".join(lines)
