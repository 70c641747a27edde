"""De-identification for exports: salted pseudonyms and transcript redaction.

Pseudonyms are an HMAC of the participant id with a secret salt kept on the
device (or given by the researcher), so the same participant gets the same
pseudonym in every export made with that salt, and nobody without the salt can
reverse it by trying ids. Redaction is pattern based and deliberately greedy:
a redacted ordinary word costs less than a leaked address.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from companion.errors import ConfigError
from companion.files import open_private, private_dir

SALT_NAME = "export_salt"

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_ORD = r"\d{1,2}(?:st|nd|rd|th)?"
_STREET_WORDS = (
    "street|st|road|rd|avenue|ave|lane|ln|drive|dr|court|ct|close|crescent|place|pl|way|"
    "boulevard|blvd|terrace|square|sq|gardens|grove|hill|park|row|mews|highway|hwy"
)

EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
# Phone numbers: 7+ digits with optional country code and separators.
PHONE = re.compile(r"(?<![\w])(?:\+\d{1,3}[\s.-]?)?(?:\(?\d{2,5}\)?[\s.-]?){2,4}\d{2,4}(?![\w])")
ADDRESS = re.compile(
    rf"\b\d{{1,5}}[a-z]?,?\s+(?:[A-Za-z][\w'-]*\s+){{1,4}}(?:{_STREET_WORDS})\b",
    re.IGNORECASE,
)
POSTCODE = re.compile(r"\b[A-Z]{1,2}\d[A-Z\d]?\s*\d[A-Z]{2}\b")  # UK style
DATES = [
    re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b"),
    re.compile(r"\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b"),
    re.compile(rf"\b{_ORD}\s+(?:of\s+)?(?:{_MONTHS})\b\.?(?:,?\s+\d{{4}})?", re.IGNORECASE),
    re.compile(rf"\b(?:{_MONTHS})\.?\s+(?:the\s+)?{_ORD}\b(?:,?\s+\d{{4}})?", re.IGNORECASE),
]


@dataclass(frozen=True)
class Redactor:
    """Replaces identifying spans with [NAME], [EMAIL], [PHONE], [ADDRESS], [DATE]."""

    names: tuple[str, ...] = ()

    def redact(self, text: str | None) -> str | None:
        if not text:
            return text
        text = EMAIL.sub("[EMAIL]", text)
        text = ADDRESS.sub("[ADDRESS]", text)
        text = POSTCODE.sub("[ADDRESS]", text)
        for pattern in DATES:
            text = pattern.sub("[DATE]", text)
        text = PHONE.sub(_phone, text)
        for name in sorted(self.names, key=len, reverse=True):
            text = re.sub(rf"\b{re.escape(name)}(?:'s)?\b", "[NAME]", text, flags=re.IGNORECASE)
        return text


def _phone(match: re.Match[str]) -> str:
    digits = sum(c.isdigit() for c in match.group(0))
    return "[PHONE]" if digits >= 7 else match.group(0)


def redactor_for(names: Iterable[str | None]) -> Redactor:
    """Names to redact: each full name and its parts (so 'Ann Lee' also hides 'Ann')."""
    out: set[str] = set()
    for name in names:
        if not name or not name.strip():
            continue
        out.add(name.strip())
        out.update(part for part in re.split(r"\s+", name.strip()) if len(part) >= 2)
    return Redactor(tuple(sorted(out)))


def load_names_file(path: Path) -> list[str]:
    """One name per line; blank lines and # comments ignored."""
    try:
        lines = path.read_text("utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read names file ({exc.strerror})") from exc
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


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
    try:
        salt = path.read_text("utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read salt file ({exc.strerror})") from exc
    if len(salt) < 16:
        raise ConfigError(f"{path}: salt is shorter than 16 characters; use a longer secret")
    return salt.encode()


def pseudonym(participant_id: str, salt: bytes) -> str:
    digest = hmac.new(salt, participant_id.encode(), hashlib.sha256).hexdigest()
    return f"S{digest[:12]}"
