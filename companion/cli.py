"""Command line interface. Each command is a few lines calling the library.

Named errors (CompanionError) become one line on stderr and exit code 2.
"""

from __future__ import annotations

import logging
import sys

import click

from companion import __version__
from companion.errors import CompanionError

home_option = click.option(
    "--home",
    "home",
    type=click.Path(file_okay=False, path_type=str),
    default=None,
    help="Home directory with companion.db and config.toml "
    "(default: $COMPANION_HOME or ~/.local/share/companion).",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="companion")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def cli(verbose: int) -> None:
    """On-device empathy companion for home field studies."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


@cli.command()
@home_option
@click.option("--participant", "participant_id", help="Participant id (default: from config.toml).")
@click.option("--name", help="Participant's name, used in greetings.")
@click.option("--timezone", help="IANA timezone, e.g. Europe/London.")
@click.option("--protocol", "protocol_path", help="Study protocol TOML file (default: built in).")
def init(home, participant_id, name, timezone, protocol_path) -> None:
    """Create or update a home: config.toml and the study database."""
    from companion import app
    from companion.config import Config, check_timezone, load_config, resolve_home, write_config
    from companion.protocol import load_protocol

    resolved = resolve_home(home).ensure()
    current = load_config(resolved)
    if timezone:
        check_timezone(timezone, "--timezone")
    if protocol_path:
        load_protocol(protocol_path)  # validate before writing anything
    updated = Config(
        participant_id=participant_id or current.participant_id,
        participant_name=name or current.participant_name,
        timezone=timezone or current.timezone,
        protocol=str(protocol_path) if protocol_path else current.protocol,
        model=current.model,
        voice=current.voice,
    )
    write_config(resolved, updated)
    opened = app.open_home(resolved.path)
    click.echo(
        f"home {resolved.path}: participant {updated.participant_id}, "
        f"protocol {opened.protocol.id} v{opened.protocol.version}"
    )


@cli.command()
@home_option
@click.option("--text", "mode", flag_value="text", default=True, help="Type or pipe the answers.")
@click.option("--participant", "participant_id", help="Participant id (default: from config.toml).")
@click.option(
    "--kind",
    type=click.Choice(["auto", "daily", "enrolment", "exit"]),
    default="auto",
    show_default=True,
    help="Session kind; auto = enrolment for a participant's first session.",
)
def session(home, mode, participant_id, kind) -> None:
    """Run one session now. Reads one participant line per turn from stdin."""
    from companion import app
    from companion.textio import TextChannel

    opened = app.open_home(home, participant_id=participant_id)
    channel = TextChannel(sys.stdin, sys.stdout, interactive=sys.stdin.isatty())
    result = app.run_in_home(opened, channel, kind=kind)
    click.echo(
        f"session {result.session_id} {result.status}: "
        f"{result.answers_stored} answers stored in {opened.home.db_path}",
        err=True,
    )


@cli.command()
@home_option
def demo(home) -> None:
    """Run a whole session with a simulated participant (no microphone, no network)."""
    from companion import app

    click.echo("companion demo: a simulated participant talks to the companion\n")
    done = app.run_demo(home, sys.stdout)
    click.echo(
        f"\nsession {done.result.session_id}: {done.result.status} "
        f"({done.result.kind}), story read: {done.result.story_id}"
    )
    click.echo("stored answers:")
    for instrument, item, value, status in done.answers:
        click.echo(f"  {instrument}.{item} = {'NULL' if value is None else value} ({status})")
    counts = ", ".join(f"{table} {n}" for table, n in done.table_counts.items())
    click.echo(f"rows: {counts}")
    click.echo(f"database: {done.home / 'companion.db'}")


@cli.group()
def stories() -> None:
    """The story bank."""


@stories.command("import")
@home_option
@click.argument("file", type=click.Path(dir_okay=False, path_type=str))
def stories_import(home, file) -> None:
    """Import stories from a CSV or JSONL file (title, text, optional emotion, tags, id)."""
    from pathlib import Path

    from companion import app
    from companion.stories import import_file

    opened = app.open_home(home)
    result = import_file(opened.db, Path(file))
    click.echo(f"{result.added} stories added, {result.skipped_duplicates} duplicates skipped")


@stories.command("list")
@home_option
def stories_list(home) -> None:
    """List the stories in the bank (id, emotion, words, title)."""
    from companion import app
    from companion.stories import load_stories

    opened = app.open_home(home)
    for story in load_stories(opened.db):
        click.echo(f"{story.id}\t{story.emotion or '-'}\t{story.word_count}\t{story.title}")


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
    except KeyboardInterrupt:
        click.echo("companion: interrupted", err=True)
        sys.exit(130)
