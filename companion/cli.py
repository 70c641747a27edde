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


@cli.command()
@home_option
@click.option("--participant", "participant_id", help="Participant id (default: from config.toml).")
@click.option("--name", help="Participant's name, used in greetings.")
@click.option("--timezone", help="IANA timezone, e.g. Europe/London.")
@click.option("--protocol", "protocol_path", help="Study protocol TOML file (default: built in).")
def init(home, participant_id, name, timezone, protocol_path) -> None:
    """Create or update a home: config.toml and the study database."""
    import os
    from pathlib import Path

    from companion import app
    from companion.engine.protocol import DEFAULT_PROTOCOL, load_protocol
    from companion.settings.config import load_config, resolve_home, with_options, write_config

    resolved = resolve_home(home)
    if protocol_path and protocol_path != DEFAULT_PROTOCOL:
        # A path given here is relative to where init runs; config.toml's is relative to the home.
        protocol_path = os.path.abspath(Path(protocol_path).expanduser())
    updated = with_options(
        load_config(resolved), participant_id=participant_id, participant_name=name,
        timezone=timezone, protocol=protocol_path,
    )  # fmt: skip
    load_protocol(updated.protocol_path(resolved.path))  # all checked before anything is written
    write_config(resolved, updated)
    opened = app.open_home(resolved.path)
    click.echo(
        f"home {resolved.path}: participant {updated.participant_id}, "
        f"protocol {opened.protocol.id} v{opened.protocol.version}"
    )
    # The recogniser voice sessions will use (the same decision as the service and doctor).
    from companion.voice.backend import choose_backend

    choice = choose_backend(updated.voice, resolved.path)
    if choice.name is None:
        click.echo(f"speech recognition: {choice.reason} (voice sessions will not start)")
    else:
        click.echo(f"speech recognition: {choice.reason}")


@cli.command()
@home_option
@click.option("--text", "mode", flag_value="text", default=True, help="Type or pipe the answers.")
@click.option("--voice", "mode", flag_value="voice", help="Talk: microphone and speaker.")
@click.option(
    "--replay",
    type=click.Path(file_okay=False, exists=True, path_type=str),
    help="With --voice: participant turns from the WAV files in DIR, in name order.",
)
@click.option("--participant", "participant_id", help="Participant id (default: from config.toml).")
@click.option(
    "--kind",
    type=click.Choice(["auto", "daily", "enrolment", "exit"]),
    default="auto",
    show_default=True,
    help="Session kind; auto = enrolment for a participant's first session.",
)
def session(home, mode, replay, participant_id, kind) -> None:
    """Run one session now. Text mode reads one participant line per turn from stdin."""
    from pathlib import Path

    from companion import app
    from companion.engine.dialogue import Channel
    from companion.engine.simulate import PrintingChannel
    from companion.engine.textio import TextChannel

    if replay and mode != "voice":
        raise click.UsageError("--replay needs --voice")
    opened = app.open_home(home, participant_id=participant_id)
    channel: Channel
    if mode == "voice":
        channel = PrintingChannel(app.voice_channel(opened, Path(replay) if replay else None),
                                  sys.stdout)  # fmt: skip
    else:
        channel = TextChannel(sys.stdin, sys.stdout, interactive=sys.stdin.isatty())
    result = app.run_in_home(opened, channel, kind=kind)
    click.echo(
        f"session {result.session_id} {result.status}: "
        f"{result.answers_stored} answers stored in {opened.home.db_path}",
        err=True,
    )


@cli.command()
@home_option
@click.option(
    "--voice",
    is_flag=True,
    help="Speak the simulated participant's answers (espeak-ng) through the real recogniser.",
)
def demo(home, voice) -> None:
    """Run a whole session with a simulated participant (no microphone, no network)."""
    from companion import app

    how = "speaks to" if voice else "talks to"
    click.echo(f"companion demo: a simulated participant {how} the companion\n")
    done = app.run_demo(home, sys.stdout, voice=voice)
    click.echo(
        f"\nsession {done.result.session_id}: {done.result.status} "
        f"({done.result.kind}), story read: {done.result.story_id}"
    )
    click.echo("stored answers:")
    for instrument, item, value, status in done.answers:
        click.echo(f"  {instrument}.{item} = {'NULL' if value is None else value} ({status})")
    stored = sum(1 for _, _, value, _ in done.answers if value is not None)
    click.echo(
        f"check: {stored - done.wrong} of {len(done.answers)} stored values are what the "
        f"participant meant, {len(done.answers) - stored} missing, {done.wrong} wrong"
    )
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
    from companion.engine.stories import import_file

    opened = app.open_home(home)
    result = import_file(opened.db, Path(file))
    click.echo(f"{result.added} stories added, {result.skipped_duplicates} duplicates skipped")


@stories.command("list")
@home_option
def stories_list(home) -> None:
    """List the stories in the bank (id, emotion, words, title)."""
    from companion import app
    from companion.engine.stories import load_stories

    opened = app.open_home(home)
    for story in load_stories(opened.db):
        click.echo(f"{story.id}\t{story.emotion or '-'}\t{story.word_count}\t{story.title}")


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
@click.option("--include-transcripts", is_flag=True, help="Export what was said (turns.text).")
@click.option("--include-audio", is_flag=True, help="Copy recorded audio into the export.")
def export(home, out, fmt, participant, since, until, deidentify, salt_file, names_file,
           include_transcripts, include_audio) -> None:  # fmt: skip
    """Export the study data: one file per table, codebook and manifest with checksums."""
    from pathlib import Path

    from companion.research.deidentify import load_names_file
    from companion.research.export import ExportOptions, count_rows, export_home
    from companion.research.readonly import ReadOnly
    from companion.settings.config import resolve_home

    resolved = resolve_home(home)
    default_names = resolved.path / "redact_names.txt"
    names_path = Path(names_file) if names_file else default_names
    options = ExportOptions(
        format=fmt, participant=participant,
        since=since.date() if since else None, until=until.date() if until else None,
        deidentify=deidentify, include_transcripts=include_transcripts,
        include_audio=include_audio, salt_file=Path(salt_file) if salt_file else None,
        extra_names=tuple(load_names_file(names_path)) if names_path.exists() else (),
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
def merge(out_db, exports) -> None:
    """Merge devices' exports into one study database (idempotent)."""
    from pathlib import Path

    from companion.research.merge import merge_exports

    for result in merge_exports(Path(out_db), [Path(e) for e in exports]):
        added = sum(result.added.values())
        click.echo(f"device {result.device_id}: {added} rows added, "
                   f"{sum(result.skipped.values())} already present")  # fmt: skip


@cli.command()
@home_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
@click.option("--skip", multiple=True, help="Leave out a check (audio, service, network, ...).")
def doctor(home, as_json, skip) -> None:
    """Check this device: audio, models, clock, disk, database, service, permissions, network."""
    import json

    from companion.ops.doctor import run_checks
    from companion.settings.config import resolve_home

    findings = run_checks(resolve_home(home), skip=set(skip))
    if as_json:
        click.echo(json.dumps({"ok": all(f.ok for f in findings),
                               "findings": [f.as_dict() for f in findings]}))  # fmt: skip
    else:
        for f in findings:
            click.echo(f"{f.status:4} {f.check}: {f.detail}")
    if not all(f.ok for f in findings):
        sys.exit(1)


@cli.command()
@home_option
@click.option("--voice", is_flag=True, help="Invite and talk through microphone and speaker.")
def run(home, voice) -> None:
    """Run the always-on companion: daily invitations, reminders, missed-session records and
    backups, as the protocol's [schedule] says. Type a line (Enter) to start a session now.
    Stops on SIGTERM or Ctrl-C. Under systemd it reports readiness and pings the watchdog."""
    from companion import app
    from companion.service import runner as service

    opened = app.open_home(home)
    if voice:
        # Decide the recogniser now: a missing vosk model is one error, not a missed window a day.
        from companion.errors import ModelError
        from companion.voice.backend import choose_backend

        choice = choose_backend(opened.config.voice, opened.home.path)
        if choice.name is None:
            raise ModelError(choice.reason)
    app.prepare_bank(opened)
    # A new voice channel (and recogniser) per invitation/session: vosk grows over long runs.
    factory = (lambda: app.voice_channel(opened)) if voice else None
    service.serve(opened, sys.stdin, sys.stdout, channel_factory=factory,
                  chooser=lambda: app.story_chooser(opened))  # fmt: skip


@cli.command()
@home_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status(home, as_json) -> None:
    """Study day, next invitation, today's sessions, last session, adherence and warnings."""
    from companion import app
    from companion.service.status import compute_status, format_status

    current = compute_status(app.open_home_readonly(home))
    click.echo(current.to_json() if as_json else format_status(current))


@cli.group()
def model() -> None:
    """The on-device empathy model (embedding + emotion head)."""


@model.command("eval")
@click.option(
    "--emotions",
    "csv_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=str),
    help="CSV with columns label (1..32, EmpatheticDialogues order),content.",
)
@click.option("--model", "model_path", default=None, help="Model .onnx (default: the shipped one).")
def model_eval(csv_path: str, model_path: str | None) -> None:
    """Emotion accuracy on a labelled CSV: prints one JSON line {n, top1, top3, macro_f1}."""
    import json
    from pathlib import Path

    from companion.model.encode import Encoder, evaluate_emotions, read_emotion_csv

    read_emotion_csv(Path(csv_path))  # fail fast on a malformed file, before loading the model
    encoder = Encoder.load(Path(model_path) if model_path else None)
    click.echo(json.dumps(evaluate_emotions(encoder, Path(csv_path))))


@model.command("replay")
@home_option
@click.option("--participant", "participant_id", help="Participant id (default: from config.toml).")
def model_replay(home, participant_id) -> None:
    """Recompute a participant's preference model from the logged ratings; report differences.

    Exits 1 if the stored model differs from the replayed one.
    """
    from companion import app
    from companion.model.empathy import replay_participant

    opened = app.open_home(home, participant_id=participant_id)
    post_story = {i.id for i in opened.protocol.instruments if i.phase == "post_story"}
    report = replay_participant(opened.db, opened.config.participant_id, sorted(post_story))
    click.echo(
        f"participant {report.participant_id}: {report.ratings} ratings replayed, "
        f"max difference {report.max_difference:g}, "
        f"{report.rating_mismatches} ratings changed since learned: "
        + ("identical" if report.identical else "DIFFERENT")
    )
    if not report.identical:
        sys.exit(1)


@cli.command()
def devices() -> None:
    """List audio input/output devices (index, name, channels, default marks)."""
    from companion.voice.audio import DeviceError, format_device, query_devices

    try:
        found = query_devices()
    except DeviceError as exc:
        click.echo(f"companion: error: {exc}; check the sound setup (ALSA config)", err=True)
        sys.exit(2)
    for device in found:
        click.echo(format_device(device))
    if not found:
        click.echo("no audio devices found")


@cli.group()
def models() -> None:
    """Offline models: the speech-recognition (vosk) model."""


@models.command("install-asr")
@home_option
@click.option("--from", "from_path", type=click.Path(path_type=str), help="Model zip or folder.")
@click.option("--url", help="Download the model zip from this URL (needs --sha256).")
@click.option("--sha256", help="Expected sha256 of the zip (required with --url).")
def models_install_asr(home, from_path, url, sha256) -> None:
    """Install a vosk model into HOME/models/asr/ and use it for speech recognition."""
    from pathlib import Path

    from companion.settings.config import resolve_home
    from companion.voice.asr import install_asr

    source = Path(from_path) if from_path else None
    target = install_asr(resolve_home(home).path, source, url, sha256)
    click.echo(f'installed vosk model in {target} (config.toml: asr_backend = "vosk")')


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
