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
