"""The study database's schema, described once: every table and column, its declared SQL type,
what it means and which values it may hold.

The migrations create these tables; tests/store/test_schema.py checks that a freshly migrated
database has exactly these columns in this order (physical order: columns added by later
migrations come last), that the codebook describes every exported column from here, and that
docs/schema.md's table lists the same columns.
"""

from __future__ import annotations

from dataclasses import dataclass

from companion.store.migrations import INVITATION_OUTCOMES


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # declared SQL type: TEXT, INTEGER, REAL or BLOB
    meaning: str
    allowed: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Table:
    name: str
    meaning: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ("id",)  # primary key

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)


T, INT, R, B = "TEXT", "INTEGER", "REAL", "BLOB"
UTC_TS = "UTC timestamp, ISO 8601 with milliseconds"
SESSION_REF = "sessions.id"


def _c(name: str, type_: str, meaning: str, *allowed: str) -> Column:
    return Column(name, type_, meaning, allowed or None)


_TABLES = (
    Table("participants", "One row per participant seen on this device", (
        _c("id", T, "Participant id (a salted pseudonym when exported with --deidentify)"),
        _c("name", T, "Name the companion used in greetings (omitted when de-identified)"),
        _c("timezone", T, "IANA timezone of the participant's home"),
        _c("created_at", T, f"When the participant was first seen; {UTC_TS}"),
    )),
    Table("sessions", "One row per session: held, cut short or missed", (
        _c("id", INT, "Session id, unique within one device"),
        _c("participant_id", T, "participants.id of the person in this session"),
        _c("protocol_id", T, "Protocol id (protocols.id)"),
        _c("protocol_version", INT, "Protocol version number (protocols.version)"),
        _c("kind", T, "Session kind", "daily", "enrolment", "exit"),
        _c("mode", T, "How the participant answered", "text", "voice"),
        _c("status", T,
           "Outcome: completed = held to the end; interrupted = input ended or Ctrl-C; "
           "aborted = software error; missed = scheduled but not held; running = in progress "
           "at export time",
           "running", "completed", "interrupted", "aborted", "missed"),
        _c("reason", T, "Why the session was interrupted, aborted or missed (free text)"),
        _c("started_at", T, f"Session start; {UTC_TS}"),
        _c("ended_at", T, f"Session end (empty while running); {UTC_TS}"),
        _c("timezone", T, "Participant's IANA timezone at the time of the session"),
        _c("local_date", T, "Calendar date of the session in that timezone (YYYY-MM-DD)"),
    )),
    Table("turns", "Everything said in a session, in order", (
        _c("id", INT, "Turn id, unique within one device"),
        _c("session_id", INT, SESSION_REF),
        _c("seq", INT, "Order of the turn within its session, from 1"),
        _c("speaker", T, "Who spoke", "companion", "participant"),
        _c("purpose", T,
           "Step of the protocol: greeting, story_invitation, story_recall (an invitation that "
           "refers back to an earlier day's story by a short topic phrase), story, follow_up, "
           "story_reading, an instrument item as instrument.item, closing, ..."),
        _c("text", T,
           "What was said (participant turns: typed text or ASR transcript). Only exported with "
           "--include-transcripts; names, places, contacts, addresses, dates, ages and ids "
           "redacted with --deidentify"),
        _c("started_at", T, f"Turn start; {UTC_TS}"),
        _c("ended_at", T, f"Turn end; {UTC_TS}"),
        _c("asr_confidence", R,
           "Voice answers: calibrated probability 0..1 that the recogniser heard the answer "
           "right (pocketsphinx: logistic model over silence share, word duration, hypothesis "
           "stability, answer and whole-path acoustic scores and speech-to-noise ratio, fitted "
           "on the tuning voices "
           "of the spoken-answer corpus; vosk: mean word posterior). Empty for text turns, "
           "stories and answers not heard"),
        _c("audio_path", T,
           "Recording of the turn, relative to the export (only with --include-audio)"),
    )),
    Table("stories", "The story bank", (
        _c("id", T, "Story id in the bank"),
        _c("title", T, "Story title as read aloud"),
        _c("text", T, "Full story text as read aloud"),
        _c("emotion", T, "Main emotion label (EmpatheticDialogues' 32 labels) or empty"),
        _c("tags", T, "JSON list of tags"),
        _c("source", T, "Where the story came from (file it was imported from, or built-in)"),
        _c("word_count", INT, "Number of words in text"),
        _c("content_hash", T, "sha256 of the normalised text; identical stories share it"),
        _c("added_at", T, f"When the story entered the bank; {UTC_TS}"),
    )),
    Table("story_exposures", "Which story was read in which session, and why", (
        _c("id", INT, "Exposure id, unique within one device"),
        _c("session_id", INT, SESSION_REF),
        _c("story_id", T, "stories.id of the story read"),
        _c("condition", T, "How this story was chosen in this session", "matched", "random"),
        _c("match_score", R, "Empathic match score of the chosen story (higher = closer)"),
        _c("rank", INT, "Rank of the story among candidates by match score (1 = best)"),
        _c("exposed_at", T, f"When reading began; {UTC_TS}"),
        _c("components", T,
           "JSON object: parts of the match score (semantic, emotion, their weights and the "
           "emotion_similarity rule), the participant model's "
           "predicted_rating and features, the participant story's query_emotion and its "
           "probability, and model_version"),
        _c("story_condition", T, "The protocol's condition setting at the time",
           "matched", "random", "counterbalanced"),
        _c("learned_rating", R,
           "Mean post-story empathy rating the participant's preference model learned from "
           "this exposure; empty if none (no answered items, or the model was not in use)"),
    )),
    Table("self_reports", "One row per instrument item asked in a session", (
        _c("id", INT, "Answer id, unique within one device"),
        _c("session_id", INT, SESSION_REF),
        _c("instrument", T, "Instrument id (see the protocols)"),
        _c("item", T, "Item id within the instrument"),
        _c("value", INT, "Numeric answer on the item's scale (yes = 1, no = 0); empty if none"),
        _c("raw_answer", T,
           "Everything the participant said for this item, attempts joined by ' | '. Only "
           "exported with --include-transcripts (redacted with --deidentify)"),
        _c("attempts", INT, "How many times the item was asked"),
        _c("answered_at", T, f"When the answer was stored; {UTC_TS}"),
        _c("value_text", T,
           "Free-text answer for text items. Only exported with --include-transcripts "
           "(redacted with --deidentify)"),
        _c("status", T,
           "answered = a value was given; skipped = the participant said skip; missing = no "
           "usable answer after the reprompts",
           "answered", "skipped", "missing"),
    )),
    Table("events", "The device's log: sessions, errors, fallbacks", (
        _c("id", INT, "Event id, unique within one device"),
        _c("ts", T, f"When it happened; {UTC_TS}"),
        _c("level", T, "Severity", "info", "warning", "error"),
        _c("kind", T, "What happened (session_started, session_completed, ...; story_recalled: "
                      "the session's invitation referred back to an earlier story; acknowledged: "
                      "the companion acknowledged the story told so far)"),
        _c("detail", T, "Details (free text; story_recalled: the sessions.id whose story was "
                        "recalled; acknowledged: the level named and what, exact:EMOTION, "
                        "family:FAMILY, valence:positive|negative or neutral)"),
        _c("session_id", INT, "sessions.id the event belongs to, if any"),
    )),
    Table("story_embeddings", "The bank encoded by the model, per model version", (
        _c("story_id", T, "stories.id"),
        _c("model_version", T, "Version of the model that encoded the story"),
        _c("embedding", B, "Sentence embedding (float32 array)"),
        _c("emotions", B, "Emotion probabilities (float32 array, 32 labels)"),
        _c("created_at", T, f"When the story was encoded; {UTC_TS}"),
    ), key=("story_id", "model_version")),
    Table("participant_models", "Each participant's story-preference model", (
        _c("participant_id", T, "participants.id"),
        _c("state", T, "JSON: the preference model's state"),
        _c("n", INT, "Number of ratings learned"),
        _c("updated_at", T, f"Last update; {UTC_TS}"),
        _c("model_version", T, "Model whose features the state was learned from (empty: "
                               "learned before schema v5, by companion-empathy-1)"),
    ), key=("participant_id",)),
    Table("exposure_features", "Each rated exposure's preference features, per model", (
        _c("exposure_id", INT, "story_exposures.id"),
        _c("model_version", T, "Model that computed the features (re-encoded at an upgrade)"),
        _c("features", T, "JSON: the preference model's features of the exposed story"),
        _c("created_at", T, f"When they were computed; {UTC_TS}"),
    ), key=("exposure_id", "model_version")),
    Table("model_upgrades", "Each move of this device to another on-device model", (
        _c("id", INT, "Upgrade id, unique within one device"),
        _c("from_models", T, "JSON list: the models the home's encodings came from before"),
        _c("to_model", T, "The model now active"),
        _c("stories", INT, "Bank stories encoded for the new model"),
        _c("participants", INT, "Preference models re-fitted on the new model's features"),
        _c("started_at", T, f"When the upgrade began; {UTC_TS}"),
        _c("finished_at", T, f"When it finished (empty: interrupted, redone at the next start); "
                             f"{UTC_TS}"),
    )),
    Table("schema_migrations", "Migrations applied to this database", (
        _c("version", INT, "Schema version"),
        _c("description", T, "What the migration changed"),
        _c("applied_at", T, f"When it was applied; {UTC_TS}"),
    ), key=("version",)),
    Table("invitations", "One row per invitation attempt of a scheduled slot (adherence)", (
        _c("id", INT, "Invitation id, unique within one device"),
        _c("slot_key", T,
           "Scheduled slot: the participant's local study date and window index, YYYY-MM-DD#N "
           "(N from 0)"),
        _c("attempt", INT, "Attempt within the slot: 1 = the invitation, 2, ... = reminders"),
        _c("outcome", T,
           "accepted = a session followed; snoozed = 'not now'; declined = 'no'; no_answer = "
           "nothing heard in time; error = the invitation failed; busy = another session was "
           "running; disk_full = too little free disk to hold a session",
           *INVITATION_OUTCOMES),
        _c("at", T, f"When the invitation was made; {UTC_TS}"),
        _c("session_id", INT, "sessions.id of the session held after 'accepted', else empty"),
    )),
    Table("protocols", "Every protocol a session on this device ran under", (
        _c("id", T, "Protocol id"),
        _c("version", INT, "Protocol version"),
        _c("title", T, "Protocol title"),
        _c("definition", T,
           "JSON: the story condition and every instrument as asked (id, phase, sessions, "
           "intro, items with id, type, wording, scale and anchors)"),
        _c("recorded_at", T, f"First time this protocol version was used on the device; {UTC_TS}"),
    ), key=("id", "version")),
)  # fmt: skip

TABLES: dict[str, Table] = {t.name: t for t in _TABLES}

# What `companion export` writes, in order: the study record and the instruments actually used.
# Caches (story_embeddings), model state and migration bookkeeping stay on the device.
EXPORTED = (
    "participants", "sessions", "turns", "stories", "story_exposures", "self_reports", "events",
    "invitations", "protocols",
)  # fmt: skip

# Columns `companion merge` adds to every per-device table of a study database.
PROVENANCE = (
    Column("device_id", T, "Device the row came from (manifest device_id)"),
    Column("source_id", INT, "The row's id on that device"),
)


def column(table: str, name: str) -> Column | None:
    """The column's definition; None for an unknown table or column."""
    found = TABLES.get(table)
    return found.column(name) if found else None
