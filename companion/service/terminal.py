"""The service's terminal: a line typed while idle starts a session; during a session,
lines are the participant's replies (a text Channel). Blocking reads only, never polling.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from companion.clock import utc_now
from companion.engine.dialogue import EndOfInput, Expectation, Heard

Clock = Callable[[], datetime]


def open_input(path: str) -> Any:
    """The terminal's lines from a file or FIFO instead of stdin (`companion run --input`).

    A missing path becomes a FIFO (0600), so a program can talk to a service that has no
    terminal. A FIFO is opened read-write: writers may come and go without ending input.
    """
    import os
    import stat

    if not os.path.exists(path):
        os.mkfifo(path, 0o600)
    fifo = stat.S_ISFIFO(os.stat(path).st_mode)
    fd = os.open(path, os.O_RDWR if fifo else os.O_RDONLY)
    return os.fdopen(fd, "r", encoding="utf-8", buffering=1)


class LineInbox:
    """Reads the terminal on a thread (a blocking read, never polling).

    While no session is running, a line asks for a session now; during one, lines
    are the participant's replies. End of input ends the current session.
    """

    _EOF = object()

    def __init__(self, stream: Any, on_idle_line: Callable[[], None]) -> None:
        import queue
        import threading

        self.stream, self.on_idle_line = stream, on_idle_line
        self.lines: queue.Queue[object] = queue.Queue()
        self.busy = threading.Event()
        self.thread = threading.Thread(target=self._read, name="terminal", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _read(self) -> None:
        for line in iter(self.stream.readline, ""):
            if self.busy.is_set():
                self.lines.put(line.rstrip("\r\n"))
            else:
                self.on_idle_line()
        self.lines.put(self._EOF)

    def stop(self) -> None:
        self.lines.put(self._EOF)

    def channel(self, out: Any, clock: Clock = utc_now) -> InboxChannel:
        return InboxChannel(self, out, clock)


class InboxChannel:
    """A text Channel over the inbox; an answer with max_seconds times out as silence."""

    mode = "text"

    def __init__(self, inbox: LineInbox, out: Any, clock: Clock) -> None:
        import queue

        self.inbox, self.out, self.clock, self._empty = inbox, out, clock, queue.Empty
        # Drop stale lines typed while nobody was asking.
        while not inbox.lines.empty():
            if inbox.lines.get_nowait() is LineInbox._EOF:
                inbox.lines.put(LineInbox._EOF)
                break
        inbox.busy.set()

    def say(self, text: str) -> None:
        self.out.write(f"companion: {text}\n")
        self.out.flush()

    def listen(self, expect: Expectation) -> Heard:
        started = self.clock()
        timeout = expect.max_seconds if expect.kind == "answer" else None
        try:
            line = self.inbox.lines.get(timeout=timeout)
        except self._empty:
            return Heard("", started, self.clock())
        if line is LineInbox._EOF:
            self.inbox.lines.put(line)  # stays at end of input
            raise EndOfInput("end of input (EOF)")
        return Heard(str(line), started, self.clock())

    def close(self) -> None:
        self.inbox.busy.clear()
