"""The command group and its shared options; the commands live beside it by role."""

from __future__ import annotations

import logging

import click

from companion import __version__

home_option = click.option(
    "--home",
    "home",
    type=click.Path(file_okay=False, path_type=str),
    default=None,
    help="Home directory with companion.db and config.toml "
    "(default: $COMPANION_HOME or ~/.local/share/companion).",
)

db_file_option = click.option(
    "--db",
    "db_file",
    type=click.Path(dir_okay=False, exists=True),
    help="A database file instead of a home (e.g. a merged study database).",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="companion")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def cli(verbose: int) -> None:
    """On-device empathy companion for home field studies."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
