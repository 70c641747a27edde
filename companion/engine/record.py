"""The protocol as recorded in the study database: the instruments exactly as asked.

`protocols.definition` holds `protocol_definition(protocol)` as JSON, so an export's codebook
and the report read the wording, scales and phases a session actually ran under, even after
the protocol file on the device has changed or gone.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import sqlite_utils

from companion.engine.protocol import Protocol
from companion.store import content
from companion.store.db import log_event


def instrument_entries(protocol: Protocol) -> list[dict[str, Any]]:
    """Each instrument as the codebook describes it: id, phase, sessions, intro, items."""
    out = []
    for inst in protocol.instruments:
        items = []
        for item in inst.items:
            entry: dict[str, Any] = {"id": item.id, "type": item.type, "wording": item.text}
            if item.type == "likert":
                entry["scale"] = [item.min, item.max]
                entry["anchors"] = {str(k): v for k, v in sorted((item.anchors or {}).items())}
            elif item.type == "yesno":
                entry["scale"] = [0, 1]
                entry["anchors"] = {"0": "no", "1": "yes"}
            items.append(entry)
        out.append(
            {
                "id": inst.id,
                "phase": inst.phase,
                "sessions": list(inst.sessions),
                "intro": inst.intro,
                "items": items,
            }
        )
    return out


def protocol_definition(protocol: Protocol) -> dict[str, Any]:
    """What `protocols.definition` stores: the story condition and the instruments."""
    return {"condition": protocol.condition, "instruments": instrument_entries(protocol)}


def record_protocol(db: sqlite_utils.Database, protocol: Protocol, at: datetime) -> bool:
    """Record `protocol` the first time a session runs under it (later calls change nothing).

    Returns False when a different definition is already recorded under the same id and
    version: the protocol file was edited without a new version, so the codebook and report
    would describe the old wording. That is logged as a warning for the researchers; the
    participant's session goes ahead.
    """
    definition = json.dumps(protocol_definition(protocol), ensure_ascii=False)
    recorded = content.record_protocol(
        db, protocol.id, protocol.version, protocol.title, definition, at
    )
    if recorded == definition:
        return True
    log_event(db, "protocol_changed", f"{protocol.id} v{protocol.version} ({protocol.source}) "
              "differs from the recorded one; give the edited protocol a new [protocol] version",
              level="warning", at=at)  # fmt: skip
    return False
