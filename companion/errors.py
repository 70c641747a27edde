"""Named errors. The CLI turns each into one line on stderr and exit code 2."""

from __future__ import annotations


class CompanionError(Exception):
    """Base class: a problem the user can fix; the message says what and how."""


class ConfigError(CompanionError):
    """A config, protocol or data file is malformed. Message names the file and field."""


class StoryImportError(CompanionError):
    """A story file to import is malformed. Message names the file and line."""


class SessionBusyError(CompanionError):
    """Another session is already running in this home."""


class ModelError(CompanionError):
    """A model file is missing, corrupt or does not match its sidecar."""


class AsrModelError(CompanionError):
    """A speech-recognition model to install is unreadable, unverified or not a vosk model."""


class HomeError(CompanionError):
    """A home, its config or its database is missing, empty or damaged; never replaced."""


class DiskSpaceError(CompanionError):
    """Too little free disk to write safely; nothing was started."""


def printable(text: str) -> str:
    """`text` on one line: a newline or other control character (a file name may hold one)
    is shown escaped, as Python's repr shows it, so one error stays one line."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
