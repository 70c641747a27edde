"""One session at a time per home, across processes (the service and a manual start)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager

from companion.errors import SessionBusyError
from companion.settings.config import Home


@contextmanager
def session_lock(home: Home) -> Iterator[None]:
    """Held while a session (or a restore) runs; a second holder gets SessionBusyError."""
    fd = os.open(home.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SessionBusyError(
                f"{home.path}: another session is running; wait for it to finish"
            ) from None
        yield
    finally:
        os.close(fd)
