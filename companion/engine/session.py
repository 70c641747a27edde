"""The session engine: one daily storytelling session, for text and voice alike.

It talks to the participant only through a `Channel`, and writes every turn and
every answer to the database the moment it happens, so an interruption at any
point keeps everything said before it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import random
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

import sqlite_utils

from companion.clock import iso, utc_now
from companion.engine import answers, confirm
from companion.engine.acknowledge import acknowledged, logged
from companion.engine.dialogue import Channel, EndOfInput, Expectation, Heard, pause
from companion.engine.items import hint_for, parse_item, vocabulary_for
from companion.engine.match import Exposure, Matcher, choose_story, effective_condition
from companion.engine.memory import note_recall, phrase_memory, recall_for
from companion.engine.protocol import Instrument, Item, Protocol, fill
from companion.engine.recall import when_band
from companion.engine.record import record_protocol
from companion.engine.stories import unheard_stories
from companion.engine.variety import PhraseMemory
from companion.store.queries import completed_sessions, ensure_participant, heard_story_ids
from companion.store.recorder import Recorder

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]


@dataclass(frozen=True)
class Participant:
    id: str
    name: str
    timezone: str

    @property
    def seed(self) -> int:
        """Stable per-participant seed for counterbalancing, topics and phrasing."""
        return int.from_bytes(hashlib.sha256(self.id.encode()).digest()[:4], "big")


@dataclass(frozen=True)
class SessionResult:
    session_id: int
    status: str
    kind: str
    answers_stored: int
    story_id: str | None


class StoryChooser:
    """Chooses the story under the session's condition; the model's chooser subclasses it
    to understand emotions and to learn from ratings."""

    def __init__(self, matcher: Matcher) -> None:
        self.matcher = matcher

    def understand(self, text: str) -> Mapping[str, float] | None:
        """Emotion probabilities of what the participant said; None if unknown."""
        return None

    def related(self, phrase: str, text: str) -> float | None:
        """How well a short phrase stands for a text (similarity); None if unknown."""
        return None

    def learn(
        self, db: sqlite_utils.Database, participant_id: str, session_id: int,
        instruments: Sequence[str],
    ) -> object:  # fmt: skip
        """Called once the post-story ratings (of `instruments`) of a session are stored."""
        return None

    def choose(
        self, db: sqlite_utils.Database, participant: Participant, condition: str,
        query: str, rng: random.Random,
    ) -> Exposure | None:  # fmt: skip
        candidates = unheard_stories(db, participant.id)
        return choose_story(condition, query, candidates, self.matcher, rng)


class SessionRun:
    """State of one running session; methods are the protocol's steps. Everything said and
    answered is written through `recorder` (`store.recorder`); `db` is only read."""

    def __init__(
        self, recorder: Recorder, protocol: Protocol, channel: Channel,
        participant: Participant, chooser: StoryChooser, clock: Clock, kind: str,
    ) -> None:  # fmt: skip
        self.recorder, self.db = recorder, recorder.db
        self.protocol, self.channel = protocol, channel
        self.words = protocol.answer_words  # what replies are understood with ([answers])
        self.participant, self.chooser = participant, chooser
        self.clock, self.kind = clock, kind
        self.seq = 0
        self.memory = PhraseMemory()  # what was said lately: wordings vary across days
        self.today = datetime.min.date()  # the participant's local date, set by start()
        self.answers_stored = 0
        self.story_id: str | None = None
        self.session_id = 0
        self.index = 0  # how many stories this participant has heard before
        self.rng = random.Random()

    # -- recording -------------------------------------------------------------------
    def start(self) -> int:
        now = self.clock()
        local = now.astimezone(ZoneInfo(self.participant.timezone))
        self.index = len(heard_story_ids(self.db, self.participant.id))
        self.rng = random.Random(f"{self.participant.seed}:{self.index}:{iso(now)}")
        self.today = local.date()
        self.memory = phrase_memory(self.db, self.participant.id, self.today,
                                    self.protocol.avoid_repeat_days)  # fmt: skip
        self.session_id = self.recorder.session_started(
            self.participant.id, self.protocol.id, self.protocol.version, self.kind,
            self.channel.mode, now, self.participant.timezone, local.date(),
        )  # fmt: skip
        return self.session_id

    def finish(self, status: str, reason: str | None = None) -> None:
        self.recorder.session_ended(self.session_id, status, reason, self.clock())

    def _turn(self, speaker: str, purpose: str, text: str, start: datetime, end: datetime,
              confidence: float | None = None, audio_path: str | None = None) -> None:  # fmt: skip
        self.seq += 1
        self.recorder.turn(self.session_id, self.seq, speaker, purpose, text, start, end,
                           confidence, audio_path)  # fmt: skip

    def say(self, text: str, purpose: str) -> None:
        start = self.clock()
        self.channel.say(text)
        self.memory.note(text)
        self._turn("companion", purpose, text, start, self.clock())

    def hear(self, expect: Expectation, purpose: str) -> Heard:
        heard = self.channel.listen(expect)
        self._turn("participant", purpose, heard.text, heard.started_at, heard.ended_at,
                   heard.confidence, heard.audio_path)  # fmt: skip
        return heard

    def prompt(self, key: str, **values: str) -> str:
        wordings = self.protocol.alternatives.get(key) or (self.protocol.prompts[key],)
        return self.fill(self.memory.choose(wordings), **values)

    def fill(self, template: str, **values: str) -> str:
        """A protocol template (prompt or follow-up) with {name} and `values` filled in."""
        return fill(template, name=self.participant.name, **values)

    # -- steps -------------------------------------------------------------------------
    def ask(self, instrument: Instrument, item: Item) -> None:
        purpose = f"{instrument.id}.{item.id}"
        expect = Expectation("answer", vocabulary_for(item, self.words),
                             hedges=self.words.spoken_hedges)  # fmt: skip
        raws: list[str] = []
        unclear = repeats = 0
        text = item.text
        while True:
            self.say(text, purpose)
            heard = self.hear(expect, purpose)
            raws.append(heard.text)
            answer = confirm.acted_on(parse_item(item, heard.text, self.words), heard.confidence)
            if answer.kind == "repeat" and repeats <= self.protocol.max_reprompts:
                repeats += 1
                text = item.text
                continue
            if answer.kind == "value" and self.confirmed(item, answer.value, purpose, heard):
                self.store(instrument, item, answer.value, raws, "answered")
                return
            if answer.kind == "value":  # the participant did not confirm what was heard
                unclear += 1
                if unclear > self.protocol.max_reprompts:
                    self.say(self.prompt("gave_up"), purpose)
                    self.store(instrument, item, None, raws, "missing")
                    return
                text = f"{self.prompt('confirm_retry')} {item.text}"
                continue
            if answer.kind == "skip":
                self.store(instrument, item, None, raws, "skipped")
                return
            unclear += 1
            if unclear > self.protocol.max_reprompts:
                self.say(self.prompt("gave_up"), purpose)
                self.store(instrument, item, None, raws, "missing")
                return
            hint, values = hint_for(item)
            text = self.prompt("reprompt", hint=self.prompt(hint, **values))

    def confirmed(self, item: Item, value: int | str | None, purpose: str, heard: Heard) -> bool:
        """In voice mode, read a recognised rating or yes/no back when confirm.py says so.

        Speech recognisers can hear "five" for "one"; a confirmation turns a wrong value
        into a retry, and anything but a clear yes is not a confirmation.
        """
        needs = self.channel.mode == "voice" and item.type in ("likert", "yesno")
        policy = self.protocol.confirm_voice_answers
        if not needs or not isinstance(value, int):
            return True
        if not confirm.needs_confirmation(policy, heard.text, heard.confidence):
            return True
        spoken = answers.NUMBER_NAMES[value] if item.type == "likert" else ("no", "yes")[value]
        self.say(self.prompt("confirm", answer=spoken), f"{purpose}.confirm")
        spoken_yes_no = Expectation("answer", self.words.spoken_yes_no,
                                    hedges=self.words.spoken_hedges)  # fmt: skip
        reply = self.hear(spoken_yes_no, f"{purpose}.confirm")
        return answers.parse_yes_no(reply.text, words=self.words) == answers.Answer("value", 1)

    def store(self, instrument: Instrument, item: Item, value: int | str | None,
              raws: list[str], status: str) -> None:  # fmt: skip
        number = value if isinstance(value, int) else None
        free_text = value if isinstance(value, str) else None
        self.recorder.answer(self.session_id, instrument.id, item.id, number, free_text,
                             " | ".join(raws), len(raws), self.clock(), status)  # fmt: skip
        self.answers_stored += 1

    def instruments(self, phase: str) -> None:
        for instrument in self.protocol.instruments_for(phase, self.kind):
            if instrument.intro:
                self.say(instrument.intro, f"{instrument.id}.intro")
            for item in instrument.items:
                self.ask(instrument, item)

    def acknowledge(self, text: str) -> str:
        emotions = self.chooser.understand(text)
        phrase, decision = acknowledged(emotions, self.memory, self.rng,
                                        phrases=self.protocol.acknowledgements)  # fmt: skip
        self.recorder.event("acknowledged", logged(decision), session_id=self.session_id)
        return phrase

    def story_sharing(self) -> str:
        topics = self.protocol.topics  # rotated: each participant starts at a different topic
        start = self.participant.seed % len(topics)
        topic = self.memory.choose(topics[start:] + topics[:start])
        expect = Expectation("story", max_seconds=self.protocol.story_max_seconds)
        recall = None
        if self.protocol.recall_earlier_stories:
            recall = recall_for(self.db, self.participant.id, self.today, self.rng,
                                self.chooser.related)  # fmt: skip
        if recall:  # refer back to an earlier day's story, by a short topic phrase only
            when = self.protocol.recall_when[when_band(recall.days)]
            self.say(self.prompt("story_recall", when=when, memory=recall.memory),
                     "story_recall")  # fmt: skip
            note_recall(self.db, self.session_id, recall, self.clock())
        else:
            self.say(self.prompt("story_invitation", topic=topic), "story_invitation")
        heard = self.hear(expect, "story")
        if not heard.text.strip():
            self.say(self.prompt("story_nothing_heard", topic=topic), "story_invitation")
            heard = self.hear(expect, "story")
        first = heard.text.strip()
        if (
            not first
            or answers.is_done(first, words=self.words)
            or answers.parse_command(answers.normalize(first), words=self.words) == answers.SKIP
        ):
            self.say(self.prompt("story_none"), "story_none")
            return ""
        parts = [first]
        follow_ups = self.protocol.follow_ups
        # A story that ends the way people end one ("... and that's all") is whole: no more
        # follow-up questions, only the acknowledgement.
        closed = answers.ends_story(first, words=self.words)
        for _ in range(0 if closed else self.protocol.follow_up_turns):
            ack = self.acknowledge(" ".join(parts))
            question = self.fill(self.memory.choose(follow_ups)) if follow_ups else ""
            self.say(f"{ack} {question}".strip(), "follow_up")
            if not follow_ups:
                break
            reply = self.hear(expect, "story").text.strip()
            if not reply or answers.is_done(reply, words=self.words):
                return " ".join(parts)
            parts.append(reply)
            if answers.ends_story(reply, words=self.words):
                closed = True
                break
        if self.protocol.follow_up_turns and (closed or follow_ups):
            self.say(self.acknowledge(" ".join(parts)), "acknowledgement")
        return " ".join(parts)

    def story_reading(self, participant_story: str) -> bool:
        condition = effective_condition(self.protocol.condition, self.index, self.participant.seed)
        exposure = self.chooser.choose(
            self.db, self.participant, condition, participant_story, self.rng
        )
        if exposure is None:
            self.recorder.event("bank_exhausted", self.participant.id, level="warning",
                                session_id=self.session_id)  # fmt: skip
            self.say(self.prompt("no_stories_left"), "no_stories_left")
            return False
        self.record_exposure(exposure, story_condition=self.protocol.condition)
        self.say(self.prompt("story_intro", title=exposure.story.title), "story_intro")
        pause(self.channel, self.protocol.story_pause_seconds)
        self.say(exposure.story.text, "story_reading")
        self.say(self.prompt("story_outro"), "story_outro")
        return True

    def record_exposure(self, exposure: Exposure, story_condition: str) -> None:
        # Recorded before reading: a story begun is a story heard, never repeated.
        self.recorder.exposure(
            self.session_id, exposure.story.id, exposure.condition, story_condition,
            exposure.score, exposure.rank, json.dumps(dict(exposure.components)), self.clock(),
        )  # fmt: skip
        self.story_id = exposure.story.id

    def run(self) -> None:
        greeting = "first_greeting" if self.kind == "enrolment" else "greeting"
        self.say(self.prompt(greeting), "greeting")
        if self.protocol.instruments_for("checkin", self.kind):
            self.say(self.prompt("checkin_intro"), "checkin_intro")
        self.instruments("checkin")
        story = self.story_sharing()
        if self.story_reading(story) and self.protocol.instruments_for("post_story", self.kind):
            self.say(self.prompt("instruments_intro"), "instruments_intro")
            self.instruments("post_story")
            post_story = self.protocol.instruments_for("post_story", self.kind)
            self.chooser.learn(
                self.db, self.participant.id, self.session_id, [i.id for i in post_story]
            )
        self.instruments("closing")
        self.say(self.prompt("closing"), "closing")
        self.say(self.prompt("goodbye"), "goodbye")


def session_kind(db: sqlite_utils.Database, participant_id: str, requested: str | None) -> str:
    """Enrolment for a participant's first completed session, else daily (unless requested)."""
    if requested and requested != "auto":
        return requested
    return "enrolment" if completed_sessions(db, participant_id) == 0 else "daily"


def _disk_full(exc: BaseException) -> bool:
    return getattr(exc, "errno", None) == errno.ENOSPC or "disk is full" in str(exc)


def run_session(
    recorder: Recorder,
    protocol: Protocol,
    channel: Channel,
    participant: Participant,
    chooser: StoryChooser,
    *,
    clock: Clock = utc_now,
    kind: str | None = None,
    on_start: Callable[[int], None] | None = None,
) -> SessionResult:
    """Run one session to its end. EOF or Ctrl-C end it as interrupted, answers kept.
    `on_start(session_id)` runs once the session's row is stored, before anything is said.
    Everything is written through `recorder`, whose database the session also reads."""
    db = recorder.db
    ensure_participant(db, participant.id, participant.name, participant.timezone)
    record_protocol(db, protocol, clock())  # what was asked, for codebooks and reports
    run = SessionRun(recorder, protocol, channel, participant, chooser, clock,
                     session_kind(db, participant.id, kind))  # fmt: skip
    run.start()
    status, reason = "completed", None
    try:
        if on_start:
            on_start(run.session_id)
        run.run()
    except EndOfInput as exc:
        status, reason = "interrupted", str(exc) or "participant input ended"
    except KeyboardInterrupt:
        status, reason = "interrupted", "stopped with Ctrl-C"
    except (sqlite3.OperationalError, OSError) as exc:
        if not _disk_full(exc):
            run.finish("aborted", f"{type(exc).__name__}: {exc}")
            raise
        # Every earlier answer is committed; closing the row needs only a little space (if
        # even that fails, the next command recovers it as interrupted).
        run.finish("interrupted", f"disk full: {exc}")
        raise
    except BaseException as exc:
        run.finish("aborted", f"{type(exc).__name__}: {exc}")
        raise
    finally:
        channel.close()
    run.finish(status, reason)
    return SessionResult(run.session_id, status, run.kind, run.answers_stored, run.story_id)
