"""Who a participant is across devices: study-wide pseudonyms and merge's identity checks.

One study salt on every device (HOME/export_salt) makes a participant id the same pseudonym
everywhere. The manifest carries a salt id (an HMAC of a fixed label, never the salt) and a
salted fingerprint of each name, so merge refuses two devices that claim one participant with
different names or timezones (unless told they are the same person) and warns about the
default id and a device without the study salt. A pseudonym is an HMAC of the participant
id with that secret salt (kept on the device, or given by the researcher): nobody without
the salt can reverse it by trying ids.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import sqlite_utils

from companion.errors import CompanionError, ConfigError
from companion.files import open_private, private_dir, read_input
from companion.settings.config import Config
from companion.store import queries, study

log = logging.getLogger(__name__)

DEFAULT_ID = Config().participant_id  # what a device left unconfigured calls its participant
_SALT_LABEL = b"companion study salt id"
SALT_NAME = "export_salt"


class IdentityError(CompanionError):
    """Devices disagree about who a participant is."""


def salt_id(salt: bytes) -> str:
    return hmac.new(salt, _SALT_LABEL, hashlib.sha256).hexdigest()[:16]


def _folded(name: str | None) -> str | None:
    return " ".join(name.casefold().split()) if name and name.strip() else None


def name_check(name: str | None, salt: bytes) -> str | None:
    """A salted fingerprint of a name (case and spacing ignored), for comparing only."""
    if (folded := _folded(name)) is None:
        return None
    return hmac.new(salt, b"name:" + folded.encode(), hashlib.sha256).hexdigest()[:16]


def manifest_identities(
    people: Iterable[tuple[str, str | None]], alias: Any, salt: bytes
) -> dict[str, dict[str, Any]]:
    """Manifest entry of a de-identified export: per pseudonym, the name's fingerprint and
    whether the raw id is the default one. `alias` maps a raw id to its pseudonym."""
    return {alias(pid): {"name_check": name_check(name, salt), "default_id": pid == DEFAULT_ID}
            for pid, name in people}  # fmt: skip


def check(
    db: sqlite_utils.Database,
    manifest: dict[str, Any],
    source: Any,
    rows: list[dict[str, Any]],
    same_person: frozenset[str] = frozenset(),
) -> tuple[list[dict[str, Any]], list[str]]:
    """Check the export's participants against the study database. Returns the rows to
    merge (for a participant named in `same_person`, the first-merged name and timezone,
    so the devices join as one person) and warnings."""
    study.ensure_identities(db)
    device, deidentified = manifest["device_id"], manifest["options"]["deidentified"]
    warnings = _check_salt(db, manifest, source) if deidentified else []
    out = []
    for row in rows:
        pid = row["id"]
        known = manifest.get("identities", {}).get(pid, {})
        name = known.get("name_check") if deidentified else _folded(row.get("name"))
        if known.get("default_id") if deidentified else pid == DEFAULT_ID:
            warnings.append(
                f"{source}: participant {pid} is the default id {DEFAULT_ID}; was this device "
                "provisioned with --participant? Devices left on it merge into one person"
            )
        found = study.identity(db, pid)
        if found is None:
            study.add_identity(db, pid, name, row.get("timezone"), device)
            found = (None, None, device)
        pairs = {"name": (found[0], name), "timezone": (found[1], row.get("timezone"))}
        differs = [what for what, (old, new) in pairs.items() if old and new and old != new]
        if differs and pid not in same_person:
            raise IdentityError(
                f"{source}: participant {pid} on device {device} has a different "
                f"{' and '.join(differs)} than on device {found[2]}; if they are the same "
                f"person, merge with --same-person {pid}, else give one a new participant id"
            )
        if differs:
            log.info("participant %s: device %s joined as the same person", pid, device)
            merged = queries.participant(db, pid) or {}
            row = {**row, **{k: v for k, v in merged.items() if k in row}}
        out.append(row)
    return out, warnings


def _check_salt(db: sqlite_utils.Database, manifest: dict[str, Any], source: Any) -> list[str]:
    """A warning when the export's salt is not the study's: its pseudonyms link to nothing
    already merged (a device that was not given the study salt at provisioning)."""
    sid, held = manifest.get("salt_id"), study.meta(db, "salt_id")
    if held is None and sid:
        study.set_meta(db, "salt_id", sid)
    if held is None or not sid or held == sid:
        return []
    return [
        f"{source}: exported with a different salt than the first export merged, so its "
        "pseudonyms cannot link to other devices' participants; install one study salt on "
        "every device (deploy/provision.sh --study-salt FILE) before the study starts"
    ]


def load_or_create_salt(path: Path) -> bytes:
    """The secret salt; created (0600, 32 random bytes as hex) if the file does not exist."""
    if not path.exists():
        if not path.parent.exists():  # a folder that exists keeps its permissions
            private_dir(path.parent)
        try:
            with open_private(path, exclusive=True) as out:
                out.write(secrets.token_hex(32) + "\n")
        except FileExistsError:
            pass  # another export created it a moment ago
    salt = read_input(path, "salt file", 64 * 1024).strip()
    if len(salt) < 16:
        raise ConfigError(f"{path}: salt is shorter than 16 characters; use a longer secret")
    return salt.encode()


def pseudonym(participant_id: str, salt: bytes) -> str:
    digest = hmac.new(salt, participant_id.encode(), hashlib.sha256).hexdigest()
    return f"S{digest[:12]}"
