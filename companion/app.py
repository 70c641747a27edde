"""Wiring: open a home, pick the components its config asks for, run a session.

The CLI and the scheduler service both call these functions; nothing here
parses arguments or prints.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import sqlite_utils

from companion import files
from companion.clock import utc_now
from companion.engine.context import Opened
from companion.engine.dialogue import Channel
from companion.engine.match import LexicalMatcher
from companion.engine.protocol import load_protocol
from companion.engine.session import SessionResult, StoryChooser, run_session
from companion.engine.simulate import PrintingChannel, SimulatedChannel, SimulatedParticipant
from companion.engine.stories import ensure_bank
from companion.errors import CompanionError, HomeError, SessionBusyError
from companion.settings.config import (
    Config,
    Home,
    device_id,
    load_config,
    resolve_home,
    with_options,
    write_config,
)
from companion.store import guard
from companion.store.backup import backup_hint, copy_database
from companion.store.db import DatabaseError, log_event, open_db, schema_version
from companion.store.lock import session_lock
from companion.store.migrations import SCHEMA_VERSION
from companion.store.queries import ensure_participant, recover_interrupted
from companion.store.readonly import ReadOnly

if TYPE_CHECKING:
    from companion.model.bank import EncodeResult, Progress
    from companion.model.upgrade import UpgradeResult
    from companion.voice.channels import VoiceSettings

log = logging.getLogger(__name__)


def open_home(
    home: str | Path | None, *, participant_id: str | None = None, create: bool = False
) -> Opened:
    """Open a home: config, protocol and a migrated, checked database with the story bank.

    Only `create` (companion init, the demo) makes a new home or database; otherwise a
    missing, empty or damaged home is refused (`store.guard`) and nothing is written.
    Sessions left `running` by a crash are closed as `interrupted` when no session holds
    the lock, so `running` always means running.
    """
    resolved = resolve_home(home)
    if create:
        guard.require_new_database(resolved)
    else:
        guard.require_home(resolved)
    # Everything is validated before the home is created or written to.
    config = with_options(load_config(resolved), participant_id=participant_id)
    protocol = load_protocol(config.protocol_path(resolved.path))
    if not create:
        guard.require_database(resolved)
        # Opening writes (WAL files, recovery): on a full disk, say so before SQLite does.
        files.require_free(resolved.path, files.OPEN_DB_MB, "opening the study database")
    resolved.ensure()
    if not resolved.config_path.exists():
        write_config(resolved, config)
    try:
        db = open_db(resolved.db_path)
    except DatabaseError as exc:
        raise HomeError(f"{exc}; {backup_hint(resolved)}") from exc
    guard.check_integrity(db, resolved)
    recover_stale(db, resolved)
    ensure_bank(db)
    ensure_participant(db, config.participant_id, config.participant_name, config.timezone)
    device_id(resolved)  # made once, here, so exports never write into the home
    return Opened(resolved, config, protocol, db)


def recover_stale(db: sqlite_utils.Database, home: Home) -> list[int]:
    """Close sessions left `running` when no session holds the lock (crash recovery)."""
    try:
        with session_lock(home):
            return recover_interrupted(db)
    except SessionBusyError:
        return []  # a live session: its `running` row is true


def open_home_readonly(home: str | Path | None) -> Opened:
    """Open an existing home to look, not touch: no config written, no migration, no bank
    loaded, the database opened read-only (`status`). Refuses a home that is not set up."""
    resolved = resolve_home(home)
    guard.require_home(resolved)
    config = load_config(resolved)
    protocol = load_protocol(config.protocol_path(resolved.path))
    guard.require_database(resolved)
    # Read without writing anything beside the database (no -wal/-shm of our own).
    db = ReadOnly(resolved.db_path).db
    guard.check_integrity(db, resolved)
    version = schema_version(db)
    if version != SCHEMA_VERSION:
        db.conn.close()
        raise DatabaseError(
            f"{resolved.db_path}: schema v{version}, this companion reads v{SCHEMA_VERSION}; "
            "run companion init (or start the service) to migrate it"
        )
    return Opened(resolved, config, protocol, db)


def active_model(opened: Opened) -> str | None:
    """The build id of the model sessions use (read from its verified sidecar, without loading
    onnxruntime); None when it cannot load (sessions then match by words)."""
    from companion.model.encode import model_build

    try:
        return model_build(Path(opened.config.model).expanduser() if opened.config.model else None)
    except CompanionError:
        return None


def story_chooser(opened: Opened) -> StoryChooser:
    """The on-device model's empathic chooser; the lexical one if the model cannot load.

    A participant is never left without a session because of a model problem: the
    fallback is logged as a warning event for the researchers and `companion doctor`.
    """
    if "chooser" in opened.cache:
        return opened.cache["chooser"]  # type: ignore[return-value]
    chooser: StoryChooser
    try:
        from companion.model.empathy import EmpathicChooser
        from companion.model.encode import Encoder
        from companion.model.similarity import ScoreWeights

        model = Path(opened.config.model).expanduser() if opened.config.model else None
        encoder = Encoder.load(model)
        protocol = opened.protocol
        weights = ScoreWeights(protocol.semantic_weight, protocol.emotion_weight,
                               protocol.emotion_similarity)  # fmt: skip
        chooser = EmpathicChooser(encoder, weights)
        # The shipped bank's encodings come with the package: copied, never encoded, here.
        from companion.engine.stories import load_stories
        from companion.model.bank import copy_shipped

        copy_shipped(opened.db, chooser.encoder.version, load_stories(opened.db))
    except CompanionError as exc:
        log_event(opened.db, "model_unavailable", str(exc), level="warning")
        chooser = StoryChooser(LexicalMatcher())
    opened.cache["chooser"] = chooser
    return chooser


def encode_bank(opened: Opened, progress: Progress | None = None) -> EncodeResult | None:
    """Encode every story the model has not encoded yet (at init, import, service start, model
    upgrade), never during a participant's session. None with the lexical fallback.

    The shipped bank's encodings are copied from the package; the model is loaded only when
    some story still needs encoding (so `init` on a new device stays quick and light).
    """
    from companion.engine.stories import load_stories
    from companion.model.bank import EncodeResult, copy_shipped, encode_bank, encoded_ids
    from companion.model.empathy import EmpathicChooser

    stories = load_stories(opened.db)
    version = active_model(opened)  # None: story_chooser logs why and falls back
    if version is not None:
        from companion.store.upgrades import pending

        if any(pending(opened.db, version)):
            upgraded = upgrade_model(opened, progress)
            if upgraded is not None:
                return upgraded.bank
        copied = copy_shipped(opened.db, version, stories)
        if len(encoded_ids(opened.db, version) & {s.id for s in stories}) == len(stories):
            return EncodeResult(version, len(stories), 0, copied, 0.0)
    chooser = story_chooser(opened)
    if not isinstance(chooser, EmpathicChooser):
        return None
    return encode_bank(opened.db, chooser.encoder, stories, progress)


def upgrade_model(opened: Opened, progress: Progress | None = None) -> UpgradeResult | None:
    """Move a home made by another model to the active one: the bank encoded and every
    preference model re-fitted, before any session runs (`model.upgrade`). None if there was
    nothing to move, or with the lexical fallback."""
    from companion.engine.stories import load_stories
    from companion.model.empathy import EmpathicChooser
    from companion.model.upgrade import upgrade_home

    chooser = story_chooser(opened)
    if not isinstance(chooser, EmpathicChooser):
        return None
    return upgrade_home(opened.db, chooser.encoder, chooser.weights, load_stories(opened.db),
                        opened.protocol.answer_words, progress)  # fmt: skip


def prepare_bank(opened: Opened, progress: Progress | None = None) -> int:
    """Load the model and encode the bank now (service start: the first session then waits for
    neither); returns how many stories are encoded (0 with the lexical fallback)."""
    story_chooser(opened)
    result = encode_bank(opened, progress)
    return result.total if result else 0


def run_in_home(opened: Opened, channel: Channel, kind: str | None = None) -> SessionResult:
    # The service's own threshold: a session that cannot be saved is not started.
    files.require_free(opened.home.path, opened.protocol.schedule.min_free_mb, "a session")
    chooser = story_chooser(opened)
    before = _inode(opened.home.db_path)
    with session_lock(opened.home):
        # A home made by another model is moved to this one before the session, never in it.
        upgrade_model(opened)
        result = run_session(
            opened.recorder, opened.protocol, channel, opened.participant, chooser, kind=kind
        )
    if _inode(opened.home.db_path) != before:
        raise HomeError(f"{opened.home.db_path}: {_rescue(opened)}")
    return result


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def _rescue(opened: Opened) -> str:
    """The database file was deleted or replaced while a session wrote to it: the session went
    to the old file, which only this process still holds. Copy it out before it is gone."""
    stamp = utc_now().strftime("%Y%m%dT%H%M%SZ")
    target = opened.home.path / f"companion.db.rescued-{stamp}"
    copy_database(opened.db.conn, target)
    return (
        f"removed or replaced during the session; everything this session stored was saved "
        f"to {target.name}: check the home, then companion restore --from {target}"
    )


def voice_settings(opened: Opened) -> VoiceSettings:
    """The [voice] config, with the protocol's audio-retention choice and speech pacing, and
    the home (where the vosk model and a relative piper voice are looked for)."""
    from companion.voice.channels import voice_settings as settings

    return settings(opened.config, opened.protocol, opened.home.path)


def speak_to_file(home: str | Path | None, text: str, path: Path) -> tuple[str, float]:
    """What the companion would say, rendered to a WAV file as a session speaks it (the home's
    engine, voice and the protocol's pacing); no database needed. Returns the engine used and
    the seconds of audio."""
    from companion.voice.audio import WavSink, resample, write_wav
    from companion.voice.channels import voice_settings as settings
    from companion.voice.tts import open_speaker

    resolved = resolve_home(home)
    config = load_config(resolved)
    protocol = load_protocol(config.protocol_path(resolved.path))
    sink = WavSink()
    speaker = open_speaker(settings(config, protocol, resolved.path).speaker_settings(), sink)
    try:
        seconds = speaker.speak(text)
        engine = speaker.describe()
    finally:
        speaker.close()
    rate = sink.played[0][1] if sink.played else 16000
    write_wav(path, b"".join(resample(pcm, r, rate) for pcm, r in sink.played), rate)
    return engine, seconds


def audio_dir(opened: Opened) -> Path:
    return opened.home.path / "audio"


def voice_channel(opened: Opened, replay: Path | None = None) -> Channel:
    """Microphone and speaker, or participant turns replayed from WAV files."""
    from companion.voice.channels import ReplayChannel, open_voice_channel

    settings = voice_settings(opened)
    if replay is not None:
        return ReplayChannel(replay, settings, audio_dir=audio_dir(opened))
    return open_voice_channel(settings, audio_dir=audio_dir(opened))


@dataclass(frozen=True)
class DemoResult:
    home: Path
    result: SessionResult
    table_counts: dict[str, int]
    answers: list[tuple[str, str, int | None, str]]  # instrument, item, value, status
    meant: list[int | None]  # what the simulated participant meant, per answer

    @property
    def wrong(self) -> int:
        """Stored values that differ from what was meant (must always be 0)."""
        return sum(
            1 for (_, _, value, _), m in zip(self.answers, self.meant, strict=True)
            if value is not None and value != m
        )  # fmt: skip


def run_demo(home: str | Path | None, out: TextIO, voice: bool = False) -> DemoResult:
    """A complete session with a simulated participant, in a fresh temporary home by default.

    With `voice`, the participant's answers are spoken by espeak-ng and recognised by the
    real speech recogniser, and the companion's prompts are synthesised too.
    """
    path = Path(home) if home else Path(tempfile.mkdtemp(prefix="companion-demo-"))
    if not home:
        write_config(Home(path), Config(participant_id="DEMO01", participant_name="Sam"))
    opened = open_home(path, create=True)
    channel: Channel
    if voice:
        from companion.voice.channels import SynthesizedParticipantChannel

        participant = SimulatedParticipant(spoken=True)
        spoken = SynthesizedParticipantChannel(participant.reply, voice_settings(opened))
        channel = PrintingChannel(spoken, out)
    else:
        participant = SimulatedParticipant()
        channel = SimulatedChannel(participant, out)
    result = run_in_home(opened, channel)
    tables = ("participants", "sessions", "turns", "story_exposures", "self_reports", "events")
    counts = {t: opened.db[t].count for t in tables}
    rows = opened.db.execute(
        "SELECT instrument, item, value, status FROM self_reports WHERE session_id = ? ORDER BY id",
        [result.session_id],
    ).fetchall()
    texts = {(i.id, it.id): it.text for i in opened.protocol.instruments for it in i.items}
    meant = [participant.meant.get(texts[(r[0], r[1])]) for r in rows]
    return DemoResult(path, result, counts, [tuple(r) for r in rows], meant)
