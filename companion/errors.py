"""Named errors. The CLI turns each into one line on stderr and exit code 2."""

from __future__ import annotations

import os
from pathlib import Path


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


def space_problem(path: object) -> str | None:
    """What ran out on the filesystem holding `path`, said with what to free, or None when
    neither space nor inodes (the count of files a filesystem can hold) are used up."""
    folder = Path(os.fsdecode(path)) if isinstance(path, str | bytes | os.PathLike) else None
    while folder is not None and not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    if folder is None:
        return None
    try:
        fs = os.statvfs(folder)
    except OSError:
        return None
    where = printable(str(folder))
    if fs.f_files and fs.f_favail == 0:
        return (f"the filesystem holding {where} has no free inodes (it holds as many files as "
                "it can); delete files you do not need there: freeing space alone will not help")
    if fs.f_bavail * fs.f_frsize < 1024 * 1024:  # the margin opening a database asks
        return f"the disk holding {where} is full; free some space there"
    return None
