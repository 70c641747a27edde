"""Private files: everything the companion writes in a home or an export is 0600 (dirs 0700),
created that way rather than chmod-ed afterwards, and replaced atomically where a reader could
see it half-written.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from companion.errors import CompanionError, ConfigError, printable

# Free disk (MB) opening the study database asks for; less is a full disk.
OPEN_DB_MB = 1

FILE_MODE, DIR_MODE = 0o600, 0o700


def private_dir(path: Path) -> Path:
    """Create `path` and any missing parents 0700 (mkdir's `parents` would use the umask for
    them); tighten `path` itself if it already exists. Existing parents are left alone."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=DIR_MODE, exist_ok=True)
        os.chmod(folder, DIR_MODE)
    os.chmod(path, DIR_MODE)
    return path


@contextmanager
def open_private(path: Path, mode: str = "w", *, exclusive: bool = False) -> Iterator[IO[Any]]:
    """Open `path` for writing, created 0600 whatever the umask (truncated unless exclusive)."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, FILE_MODE)
    os.fchmod(fd, FILE_MODE)  # an existing file keeps its old mode otherwise
    f: IO[Any] = os.fdopen(fd, "wb") if "b" in mode else os.fdopen(fd, "w", encoding="utf-8")
    with f:
        yield f


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in `path` survive a power cut."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_private(path: Path, data: str | bytes) -> None:
    """Replace `path` atomically with `data` (0600): readers see the old or the new file."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open_private(tmp, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk leaves the old file and no temp file
        raise
    fsync_dir(path.parent)


def free_bytes(path: Path) -> int:
    """Free space on the filesystem holding `path`."""
    return shutil.disk_usage(path).free


def require_free(path: Path, need_mb: float, what: str) -> None:
    """Refuse to start `what` with less than `need_mb` MB free where `path` lives."""
    free = free_bytes(path)
    if free < need_mb * 1024 * 1024:
        from companion.errors import DiskSpaceError

        raise DiskSpaceError(
            f"{path}: only {free // (1024 * 1024)} MB free, {what} needs {need_mb:g} MB; "
            "free some disk space (nothing was written)"
        )


def json_object(text: str, source: str, remedy: str) -> dict[str, Any]:
    """A shipped JSON sidecar's object; anything else is one line naming `source` and `remedy`."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{source}: not valid JSON ({exc}); reinstall") from exc
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: must be a JSON object; {remedy}")
    return value


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a pipe"), (stat.S_ISCHR, "a device"),
          (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))  # fmt: skip
_CHUNK = 1024 * 1024


def read_input(path: Path, what: str, max_bytes: int,
               error: type[CompanionError] = ConfigError) -> str:  # fmt: skip
    """The UTF-8 text of `path`, a regular file of at most `max_bytes`: the one way a file a
    user names is read. A device, pipe or folder, a larger file or bytes that are not UTF-8
    are one-line `error`s naming the file and what to do; nothing waits on a pipe's writer."""
    name = printable(str(path))
    try:
        # O_NONBLOCK: opening a pipe returns at once instead of waiting for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        raise error(f"{name}: cannot read {what} ({exc.strerror}); check the path") from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((k for test, k in _KINDS if test(mode)), "not a file")
            raise error(f"{name}: {what} is {kind}, not a regular file; give a file's path")
        chunks, size = [], 0
        while chunk := f.read(_CHUNK):
            size += len(chunk)
            if size > max_bytes:
                raise error(f"{name}: {what} is larger than {max_bytes // (1024 * 1024)} MB; "
                            "split it or check that this is the right file")  # fmt: skip
            chunks.append(chunk)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{name}: {what} is not UTF-8 text (byte {exc.start}); save it as UTF-8"
                    ) from None  # fmt: skip


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
        return (
            f"the filesystem holding {where} has no free inodes (it holds as many files as "
            "it can); delete files you do not need there: freeing space alone will not help"
        )
    if fs.f_bavail * fs.f_frsize < OPEN_DB_MB * 1024 * 1024:
        return f"the disk holding {where} is full; free some space there"
    return None
