"""Command line interface. Each command is a few lines calling the library; the commands are
grouped by role (`study`, `research`, `device`) on one click group (`base.cli`).

Named errors (CompanionError) become one line on stderr and exit code 2.

May import: everything (it is the wiring), but only inside each command, so that a command
loads just what it needs. Nothing imports the CLI.
"""

from __future__ import annotations

import sqlite3
import sys

import click

from companion.cli import device, research, study  # noqa: F401  (they register the commands)
from companion.cli.base import cli
from companion.errors import CompanionError

__all__ = ["cli", "main"]


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("companion: aborted", err=True)
        sys.exit(130)
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
    except OSError as exc:  # a full or read-only disk, a missing file: one line
        where = f"{exc.filename}: " if exc.filename else ""
        click.echo(f"companion: error: {where}{exc.strerror or exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("companion: interrupted", err=True)
        sys.exit(130)
