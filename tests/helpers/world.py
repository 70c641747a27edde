"""A controllable world for the service: the real APScheduler stepped job by job on a
time-machine clock, a scripted participant, and a study home with a 30-day schedule."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from apscheduler.executors.debug import DebugExecutor
from apscheduler.schedulers.base import BaseScheduler

from companion import app
from companion.clock import utc_now
from companion.engine.dialogue import EndOfInput, Expectation, Heard
from companion.engine.protocol import default_protocol_text, shipped_protocol
from companion.service.runner import Service, make_scheduler
from companion.settings.config import Config, Home, write_config

STORY = "I walked by the river with my brother and we talked about our father."


class SteppedScheduler(BaseScheduler):
    def shutdown(self, wait: bool = True) -> None:
        super().shutdown(wait)

    def wakeup(self) -> None:
        pass

    def step(self) -> float | None:
        return self._process_jobs()


class ScriptedChannel:
    """Answers the invitation from a script and the session like a cooperative participant."""

    mode = "text"

    def __init__(self, world: World) -> None:
        self.world = world
        self.story_turns = 0
        self.answers = 0

    def say(self, text: str) -> None:
        self.world.said.append((utc_now(), text))

    def listen(self, expect: Expectation) -> Heard:
        now = utc_now()
        if expect.vocabulary == shipped_protocol().answer_words.invite_vocabulary:
            self.world.invitations.append(now)
            script = self.world.invite_script
            reply = script.pop(0) if script else "yes"
            return Heard(reply, now, now)
        if self.world.leave_after is not None and self.answers >= self.world.leave_after:
            self.world.leave_after = None
            raise EndOfInput("participant walked away")
        self.answers += 1
        if expect.kind == "story":
            self.story_turns += 1
            return Heard(STORY if self.story_turns == 1 else "that's all", now, now)
        if "yes" in expect.vocabulary and "three" not in expect.vocabulary:
            return Heard("yes", now, now)
        return Heard("4" if expect.vocabulary else "fine thanks", now, now)

    def close(self) -> None:
        pass


class World:
    def __init__(self, home: Path, traveller: Any) -> None:
        self.home, self.traveller = home, traveller
        self.invite_script: list[str] = []
        self.leave_after: int | None = None
        self.free = 10**12
        self.notes: list[str] = []
        self.said: list[tuple[datetime, str]] = []
        self.invitations: list[datetime] = []
        self.service: Service | None = None
        self.scheduler: Any = None

    def boot(self) -> Service:
        opened = app.open_home(self.home, create=True)  # the first boot makes the database
        self.scheduler = make_scheduler(
            SteppedScheduler, {"default": DebugExecutor(), "plan": DebugExecutor()}
        )
        self.service = Service(
            opened,
            lambda: ScriptedChannel(self),
            scheduler=self.scheduler,
            free_bytes=lambda _path: self.free,
            sleep=lambda seconds: self.traveller.shift(seconds),
            notify=self.notes.append,
            heartbeat_seconds=6 * 3600,
            chooser=lambda: app.story_chooser(opened),
        )
        self.service.start()
        self.scheduler.start()
        return self.service

    def run_until(self, moment: datetime) -> None:
        while True:
            wait = self.scheduler.step()
            now = utc_now()
            nxt = moment if wait is None else now + timedelta(seconds=wait)
            if nxt >= moment:
                self.traveller.move_to(moment)
                self.scheduler.step()
                return
            self.traveller.move_to(nxt)

    def power_off(self) -> None:
        """The plug is pulled: no clean shutdown event, the connection just goes away."""
        self.scheduler.shutdown(wait=False)
        assert self.service is not None
        self.service.db.conn.close()
        self.service = None


# -- the 30-day study ----------------------------------------------------------------------


LONDON = ZoneInfo("Europe/London")
SCHEDULE = """
[schedule]
start_date = 2027-03-10
days = 30
windows = ["09:00-11:00", "18:00-20:00"]
reminders = 2
reminder_minutes = 20
snooze_minutes = 15
answer_seconds = 60
quiet_hours = "22:00-07:00"
backups_keep = 3
min_free_mb = 100
"""


def make_home(tmp_path: Path, schedule: str = SCHEDULE) -> Path:
    home = tmp_path / "home"
    (tmp_path / "protocol.toml").write_text(default_protocol_text() + schedule)
    write_config(Home(home), Config(participant_id="P007", participant_name="Robin",
                                     timezone="Europe/London",
                                     protocol=str(tmp_path / "protocol.toml")))  # fmt: skip
    return home


def local(day: int, hh: int, mm: int = 0) -> datetime:
    """Day `day` of the study (0 = 2027-03-10) at hh:mm London time, as an aware datetime."""
    base = datetime(2027, 3, 10) + timedelta(days=day)
    return base.replace(hour=hh, minute=mm, tzinfo=LONDON)


def slot_rows(db: Any) -> list[tuple[str, str, str | None, str, str]]:
    return db.execute(
        "SELECT local_date, status, reason, started_at, kind FROM sessions ORDER BY started_at"
    ).fetchall()
