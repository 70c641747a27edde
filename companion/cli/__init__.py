"""Command line interface. Each command is a few lines calling the library; the commands are
grouped by role (`study`, `research`, `device`) on one click group (`base.cli`).

Named errors (CompanionError) become one line on stderr and exit code 2.

May import: everything (it is the wiring), but only inside each command, so that a command
loads just what it needs. Nothing imports the CLI.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sqlite3
import sys


def stop_at_once(*_: object) -> None:
    """SIGTERM while `companion run` starts: end the process now, exit 0.

    Nothing needs winding down yet (an open transaction rolls back by itself). Raising
    SystemExit instead lands wherever the main thread is: inside onnxruntime's C-extension
    import it became "ImportError: initialization failed" (a traceback, exit 1), and a
    SystemExit swallowed on the way left the service running past systemd's stop timeout.
    """
    os._exit(0)


# `companion run` under systemd: a SIGTERM while it is still starting (importing, loading the
# model) exits 0 with no traceback; set before the imports below, which take most of that time.
if next((a for a in sys.argv[1:] if not a.startswith("-")), None) == "run":
    signal.signal(signal.SIGTERM, stop_at_once)

import click  # noqa: E402

from companion.cli import device, research, study  # noqa: E402, F401  (register the commands)
from companion.cli.base import cli  # noqa: E402
from companion.errors import CompanionError, printable  # noqa: E402
from companion.files import space_problem  # noqa: E402

__all__ = ["cli", "main"]


class ClosedStream:
    """Stands in for a standard stream the process was started without (`<&-`): the first
    command that uses it ends with one line saying so, before it starts anything."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> object:
        raise CompanionError(
            f"standard {self._name} is closed; give the command an open one "
            "(a terminal, a pipe or a file, e.g. < answers.txt)"
        )


def fail(message: str, code: int = 2) -> None:
    """One line on stderr (escaped: a file name may hold a newline), then exit `code`."""
    click.echo(f"companion: error: {printable(message)}", err=True)
    sys.exit(code)


def main() -> None:
    if sys.stdout is None:  # started with stdout closed: no command could say what it did
        fail("standard output is closed; run companion with it open (>/dev/null discards it)")
    if sys.stdin is None:
        sys.stdin = ClosedStream("input")
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("companion: aborted", err=True)
        sys.exit(130)
    except click.UsageError as exc:  # one line, like every other error
        names: list[str] = []
        ctx = exc.ctx
        while ctx is not None and ctx.parent is not None:  # the root's name is the program's
            names.insert(0, ctx.info_name or "")
            ctx = ctx.parent
        usage = " ".join(["companion", *names, "--help"])
        message = " ".join(exc.format_message().split())
        fail(f"{message} (see {usage})")
    except click.ClickException as exc:
        click.echo(f"Error: {printable(exc.format_message())}", err=True)
        sys.exit(2 if exc.exit_code == 2 else exc.exit_code)
    except CompanionError as exc:
        fail(str(exc))
    except sqlite3.DatabaseError as exc:  # found after opening: never a traceback
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "full" in str(exc):
            hint = ("the disk holding the database is full; free some space there (old exports, "
                    "other files); everything stored before is kept")  # fmt: skip
        else:
            hint = "run companion doctor, then companion restore"
        fail(f"database: {exc}; {hint}")
    except UnicodeDecodeError as exc:  # a file that should be text is not UTF-8
        fail(f"a file given is not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8")
    except BrokenPipeError:  # whoever read the output stopped reading (`| head -1`)
        # Point stdout at /dev/null, or flushing it at exit prints a second error.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        fail("standard output was closed by the program reading it")
    except OSError as exc:  # a full or read-only disk, a missing file: one line
        where = f"{exc.filename}: " if exc.filename else ""
        problem = exc.strerror or str(exc)
        if exc.errno == errno.ENOSPC:
            problem += "; " + (space_problem(exc.filename) or "the disk is full; free some space")
        fail(f"{where}{problem}")
    except KeyboardInterrupt:
        click.echo("companion: interrupted", err=True)
        sys.exit(130)
