"""Command line interface. Each command is a few lines calling the library; the commands are
grouped by role (`study`, `research`, `device`) on one click group (`base.cli`).

Named errors (CompanionError) become one line on stderr and exit code 2.

May import: everything (it is the wiring), but only inside each command, so that a command
loads just what it needs. Nothing imports the CLI.
"""

from __future__ import annotations

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
from companion.errors import CompanionError  # noqa: E402

__all__ = ["cli", "main"]


def main() -> None:
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
        click.echo(f"companion: error: {message} (see {usage})", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if exc.exit_code == 2 else exc.exit_code)
    except CompanionError as exc:
        click.echo(f"companion: error: {exc}", err=True)
        sys.exit(2)
    except sqlite3.DatabaseError as exc:  # found after opening: never a traceback
        if "full" in str(exc):
            hint = "the disk is full; free some space (everything stored before is kept)"
        else:
            hint = "run companion doctor, then companion restore"
        click.echo(f"companion: error: database: {exc}; {hint}", err=True)
        sys.exit(2)
    except UnicodeDecodeError as exc:  # a file that should be text is not UTF-8
        click.echo(f"companion: error: a file given is not UTF-8 text (byte {exc.start}: "
                   f"{exc.reason}); save it as UTF-8", err=True)  # fmt: skip
        sys.exit(2)
    except OSError as exc:  # a full or read-only disk, a missing file: one line
        where = f"{exc.filename}: " if exc.filename else ""
        click.echo(f"companion: error: {where}{exc.strerror or exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("companion: interrupted", err=True)
        sys.exit(130)
