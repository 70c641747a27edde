"""Text channel: the participant types (or a program pipes) one line per turn.

Each companion utterance is written on its own line and flushed before waiting,
so a program on the other end of a pipe can converse turn by turn.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TextIO

from companion.clock import utc_now
from companion.engine.dialogue import EndOfInput, Expectation, Heard


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
        line = self.stdin.readline()
        if not line:
            raise EndOfInput("end of input (EOF)")
        return Heard(line.rstrip("\r\n"), started, self.clock())

    def close(self) -> None:
        pass
