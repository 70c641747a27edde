"""Commands for researchers: export, report, browse, merge."""

from __future__ import annotations

import sys

import click

from companion.cli.base import cli, db_file_option, home_option


@cli.command()
@home_option
@click.option(
    "--out", "out", required=True, type=click.Path(file_okay=False), help="New directory."
)
@click.option(
    "--format", "fmt", type=click.Choice(["csv", "jsonl"]), default="csv", show_default=True
)
@click.option("--participant", help="Only this participant's sessions.")
@click.option("--since", type=click.DateTime(["%Y-%m-%d"]), help="First local date (YYYY-MM-DD).")
@click.option("--until", type=click.DateTime(["%Y-%m-%d"]), help="Last local date (YYYY-MM-DD).")
@click.option("--deidentify", is_flag=True, help="Pseudonymise ids and redact free text.")
@click.option(
    "--salt-file",
    type=click.Path(dir_okay=False),
    help="Pseudonym salt (default: HOME/export_salt).",
)
@click.option(
    "--names-file",
    type=click.Path(dir_okay=False, exists=True),
    help="Extra names to redact, one a line (default: HOME/redact_names.txt if present).",
)
@click.option(
    "--include-transcripts",
    is_flag=True,
    help="Export what participants said (turns.text, raw and free-text answers).",
)
@click.option(
    "--patterns-only",
    is_flag=True,
    help="De-identify transcripts by patterns alone, without the NER pipeline.",
)
@click.option("--include-audio", is_flag=True, help="Copy recorded audio into the export.")
@click.option("--review", "review", type=click.Path(file_okay=False),
              help="Folder for the review of the redactions, never inside --out "
                   "(default: OUT.review beside it; with --deidentify --include-transcripts).")
@click.option("--apply-review", "apply_review", type=click.Path(dir_okay=False),
              help="A filled-in review.csv: re-export applying its keep/redact decisions.")
def export(home, out, fmt, participant, since, until, deidentify, salt_file, names_file,
           include_transcripts, patterns_only, include_audio, review,
           apply_review) -> None:  # fmt: skip
    """Export the study data: one file per table, codebook and manifest with checksums."""
    from pathlib import Path

    from companion.errors import ConfigError
    from companion.files import require_free
    from companion.research.export import ExportOptions, count_rows, export_home
    from companion.research.options import load_names_file
    from companion.settings.config import check_participant_id, resolve_home
    from companion.store import exports
    from companion.store.guard import check_integrity, require_database, require_home
    from companion.store.readonly import ReadOnly

    if participant is not None:
        participant = check_participant_id(participant, "--participant")
    if since and until and since > until:
        raise ConfigError(f"--since {since.date()} is after --until {until.date()}; swap them")
    resolved = resolve_home(home)
    require_home(resolved)
    require_database(resolved)
    target = Path(out).absolute()
    existing = next(p for p in (target, *target.parents) if p.exists())
    require_free(existing, 10, "an export")
    with ReadOnly(resolved.db_path) as reader:
        check_integrity(reader.db, resolved)  # damage is refused, not exported
        known = exports.participant_ids(reader.db)
        if participant is not None and participant not in known:
            # An empty export would look like a participant who never answered.
            shown = ", ".join(known[:5]) + (", ..." if len(known) > 5 else "") or "none"
            raise ConfigError(f"--participant: no participant {participant!r} in "
                              f"{resolved.db_path} (its participants: {shown}); check the id")
    default_names = resolved.path / "redact_names.txt"
    names_path = Path(names_file) if names_file else default_names
    options = ExportOptions(
        format=fmt, participant=participant,
        since=since.date() if since else None, until=until.date() if until else None,
        deidentify=deidentify, include_transcripts=include_transcripts,
        include_audio=include_audio, salt_file=Path(salt_file) if salt_file else None,
        extra_names=tuple(load_names_file(names_path)) if names_path.exists() else (),
        patterns_only=patterns_only, review=Path(review) if review else None,
        apply_review=Path(apply_review) if apply_review else None,
    )  # fmt: skip
    if sys.stderr.isatty():
        with ReadOnly(resolved.db_path) as reader:
            total = count_rows(reader.db, options)
        with click.progressbar(length=total, label="exporting", file=sys.stderr) as bar:
            result = export_home(resolved, Path(out), options, progress=bar.update)
    else:
        result = export_home(resolved, Path(out), options)
    rows = ", ".join(f"{t} {n}" for t, n in result.rows.items())
    click.echo(f"exported device {result.device_id} to {result.out}: {rows}")
    if result.review:
        click.echo(f"review (holds the original words; do not share it): {result.review}")


@cli.command()
@home_option
@db_file_option
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), help="Directory.")
def report(home, db_file, out) -> None:
    """Write a self-contained HTML report with plots (report.html in --out)."""
    from pathlib import Path

    from companion.research.report import write_report
    from companion.settings.config import resolve_home

    path = Path(db_file) if db_file else resolve_home(home).db_path
    page = write_report(path, Path(out))
    click.echo(f"report: {page}")


@cli.command()
@home_option
@db_file_option
@click.option("--port", default=8001, show_default=True, help="Port on 127.0.0.1.")
def browse(home, db_file, port) -> None:
    """Browse the database read-only in datasette on 127.0.0.1 (needs the browse extra)."""
    from pathlib import Path

    from companion.research.browse import browse_command
    from companion.settings.config import resolve_home

    path = Path(db_file) if db_file else resolve_home(home).db_path
    argv, metadata = browse_command(path, port)
    try:
        import subprocess

        subprocess.run(argv, check=False)
    finally:
        metadata.unlink(missing_ok=True)


@cli.command()
@click.argument("out_db", type=click.Path(dir_okay=False))
@click.argument("exports", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True))
@click.option("--same-person", multiple=True, metavar="ID",
              help="This participant id (as exported) is one person on every device, even "
                   "where devices disagree on name or timezone. Repeatable.")  # fmt: skip
def merge(out_db, exports, same_person) -> None:
    """Merge devices' exports into one study database (idempotent)."""
    from pathlib import Path

    from companion.research.merge import merge_exports

    paths = [Path(e) for e in exports]
    for result in merge_exports(Path(out_db), paths, frozenset(same_person)):
        for warning in result.warnings:
            click.echo(f"companion: warning: {warning}", err=True)
        added = sum(result.added.values())
        click.echo(f"device {result.device_id}: {added} rows added, "
                   f"{sum(result.updated.values())} updated (progressed since merged), "
                   f"{sum(result.skipped.values())} already present")  # fmt: skip
