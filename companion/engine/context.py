"""An opened home: its config, protocol and database, handed to whoever runs sessions."""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlite_utils

from companion.engine.protocol import Protocol
from companion.engine.session import Participant
from companion.settings.config import Config, Home
from companion.store.recorder import Recorder


@dataclass(frozen=True)
class Opened:
    home: Home
    config: Config
    protocol: Protocol
    db: sqlite_utils.Database
    # Heavy objects built once per process (the model), keyed by name.
    cache: dict[str, object] = field(default_factory=dict)

    @property
    def participant(self) -> Participant:
        c = self.config
        return Participant(c.participant_id, c.participant_name, c.timezone)

    @property
    def recorder(self) -> Recorder:
        """What sessions write through (`store.recorder`)."""
        return Recorder(self.db)
