"""Text channel: the participant types (or a program pipes) one line per turn.

Each companion utterance is written on its own line and flushed before waiting,
so a program on the other end of a pipe can converse turn by turn.

Input is bounded: a line is read in chunks, and one turn keeps at most MAX_TURN_BYTES
(documented in docs/protocol.md, "Input limits"); the rest of a longer line is read and dropped, and
the cut is logged. Bytes that are not UTF-8 are replaced (U+FFFD) and logged, never an abort.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, TextIO

from companion.clock import utc_now
from companion.engine.dialogue import EndOfInput, Expectation, Heard

log = logging.getLogger(__name__)
MAX_TURN_BYTES = 16 * 1024 * 1024  # a typed turn stored in full up to this size
_CHUNK = 64 * 1024


class TextChannel:
    mode = "text"

    def __init__(
        self,
        stdin: TextIO,
        stdout: TextIO,
        *,
        interactive: bool = False,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.stdin, self.stdout, self.interactive, self.clock = stdin, stdout, interactive, clock

    def say(self, text: str) -> None:
        prefix = "companion: " if self.interactive else ""
        self.stdout.write(f"{prefix}{text}\n")
        self.stdout.flush()

    def listen(self, expect: Expectation) -> Heard:
        if self.interactive:
            self.stdout.write("you> ")
            self.stdout.flush()
        started = self.clock()
        raw = getattr(self.stdin, "buffer", None)
        line = self._read_bytes(raw) if raw is not None else self._read_text()
        if not line:
            raise EndOfInput("end of input (EOF)")
        return Heard(line.rstrip("\r\n"), started, self.clock())

    def _read_bytes(self, raw: Any) -> str:
        """One line from a byte stream (stdin), bounded, decoded with replacement."""
        data, kept, dropped = [], 0, 0
        while True:
            chunk = raw.readline(_CHUNK)
            if not chunk:
                break
            if kept < MAX_TURN_BYTES:
                take = chunk[: MAX_TURN_BYTES - kept]
                data.append(take)
                kept += len(take)
                dropped += len(chunk) - len(take)
            else:
                dropped += len(chunk)
            if chunk.endswith(b"\n"):
                break
        if dropped:
            log.warning("a typed turn of %d bytes: kept the first %d", kept + dropped, kept)
        blob = b"".join(data)
        try:
            return blob.decode("utf-8")
        except UnicodeDecodeError as exc:
            log.warning("typed input is not UTF-8 (byte %d); replaced with U+FFFD", exc.start)
            return blob.decode("utf-8", errors="replace")

    def _read_text(self) -> str:
        """One line from a text stream (tests, a program's pipe), bounded the same way."""
        line = self.stdin.readline(MAX_TURN_BYTES)
        if line and not line.endswith("\n"):
            while (rest := self.stdin.readline(_CHUNK)) and not rest.endswith("\n"):
                pass  # drop the rest of an over-long line
        return line

    def close(self) -> None:
        pass
