"""Commands for running the study on a device: init, session, demo, stories, run, status."""

from __future__ import annotations

import sys

import click

from companion.cli.base import cli, home_option


@cli.command()
@home_option
@click.option("--participant", "participant_id", help="Participant id (default: from config.toml).")
@click.option("--name", help="Participant's name, used in greetings.")
@click.option("--timezone", help="IANA timezone, e.g. Europe/London.")
@click.option("--protocol", "protocol_path", help="Study protocol TOML file (default: built in).")
@click.option("--input-device", help="Microphone: ALSA device name (see `companion devices`).")
@click.option("--output-device", help="Speaker: ALSA device name (see `companion devices`).")
@click.option("--tts", help="Speech engine: piper (the neural voice) or pyttsx3 (espeak-ng).")
def init(home, participant_id, name, timezone, protocol_path, input_device, output_device,
         tts) -> None:  # fmt: skip
    """Create or update a home: config.toml and the study database."""
    import os
    from pathlib import Path

    from companion import app
    from companion.engine.protocol import DEFAULT_PROTOCOL, load_protocol
    from companion.settings.config import load_config, resolve_home, with_options, write_config
    from companion.store.guard import require_new_database

    resolved = resolve_home(home)
    require_new_database(resolved)  # a home whose database went missing is restored, not reset
    config_file = resolved.config_path
    if config_file.is_file() and not config_file.read_bytes().strip() and not participant_id:
        from companion.errors import HomeError

        # An emptied config must not quietly become participant P001 in a study database.
        raise HomeError(f"{config_file}: empty; give --participant (and --name) to write it again")
    if protocol_path and protocol_path != DEFAULT_PROTOCOL:
        # A path given here is relative to where init runs; config.toml's is relative to the home.
        protocol_path = os.path.abspath(Path(protocol_path).expanduser())
    updated = with_options(
        load_config(resolved), participant_id=participant_id, participant_name=name,
        timezone=timezone, protocol=protocol_path, input_device=input_device,
        output_device=output_device, tts=tts,
    )  # fmt: skip
    load_protocol(updated.protocol_path(resolved.path))  # all checked before anything is written
    write_config(resolved, updated)
    opened = app.open_home(resolved.path, create=True)
    click.echo(
        f"home {resolved.path}: participant {updated.participant_id}, "
        f"protocol {opened.protocol.id} v{opened.protocol.version}"
    )
    encode_bank(opened)
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
    encode_bank(opened)  # also finishes the encodings an interrupted import left undone


def encode_bank(opened) -> None:
    """Encode the stories the model has not encoded yet, with a progress bar on stderr."""
    from companion import app

    tty = sys.stderr.isatty()
    shown = [-1]

    def progress(done: int, total: int) -> None:
        tenth = 10 * done // max(total, 1)
        if tty:
            bar = "#" * (3 * tenth) + "." * (30 - 3 * tenth)
            click.echo(f"\rencoding stories [{bar}] {done}/{total}", err=True, nl=False)
        elif tenth != shown[0]:
            click.echo(f"encoding stories: {done}/{total}", err=True)
        shown[0] = tenth

    result = app.encode_bank(opened, progress)
    if tty and shown[0] >= 0:
        click.echo("", err=True)
    if result is None:
        click.echo("story bank: the model is unavailable; sessions match stories by words")
    else:
        rate = f" ({result.rate:.0f} stories/s)" if result.encoded else ""
        click.echo(
            f"story bank: {result.total} stories encoded for {result.version}, "
            f"{result.encoded} just now{rate}"
        )


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
@click.option("--voice", is_flag=True, help="Invite and talk through microphone and speaker.")
@click.option(
    "--input", "input_path", type=click.Path(dir_okay=False, path_type=str),
    help="Read the terminal's lines from this file or FIFO (made 0600 if missing), not stdin.",
)  # fmt: skip
def run(home, voice, input_path) -> None:
    """Run the always-on companion: daily invitations, reminders, missed-session records and
    backups, as the protocol's [schedule] says. Type a line (Enter) to start a session now.
    Stops on SIGTERM or Ctrl-C. Under systemd it reports readiness and pings the watchdog."""
    import signal

    # A stop while starting up (model, bank, checks) exits 0 at once; open transactions roll
    # back. `serve` replaces this handler after its checks: from then on a stop winds down.
    from companion.cli import stop_at_once

    signal.signal(signal.SIGTERM, stop_at_once)  # also when called without the CLI
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
    stdin = sys.stdin
    if input_path:
        from companion.service.terminal import open_input

        stdin = open_input(input_path)
    service.serve(opened, stdin, sys.stdout, channel_factory=factory,
                  chooser=lambda: app.story_chooser(opened))  # fmt: skip


@cli.command()
@home_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status(home, as_json) -> None:
    """Study day, next invitation, today's sessions, last session, adherence and warnings."""
    from companion import app
    from companion.service.status import compute_status, format_status

    opened = app.open_home_readonly(home)
    current = compute_status(opened, model=app.active_model(opened))
    click.echo(current.to_json() if as_json else format_status(current))


@cli.command()
@home_option
@click.option(
    "--from",
    "source",
    type=click.Path(dir_okay=False, path_type=str),
    help="Backup file to restore (default: the newest one that passes the integrity check).",
)
@click.option("--other-participant", is_flag=True,
              help="Restore a backup of another participant than config.toml's.")  # fmt: skip
def restore(home, source, other_participant) -> None:
    """Restore the database from a verified backup; the current file is kept aside."""
    from pathlib import Path

    from companion.settings.config import resolve_home
    from companion.store.backup import restore as restore_backup

    resolved = resolve_home(home)
    if not resolved.path.is_dir():
        from companion.errors import HomeError

        raise HomeError(f"{resolved.path}: no companion home here; check --home")
    used, aside = restore_backup(resolved, Path(source) if source else None,
                                 other_participant=other_participant)  # fmt: skip
    kept = f"; the previous database is kept as {aside}" if aside else ""
    click.echo(f"restored {resolved.db_path} from {used}{kept}")


@cli.group()
def protocol() -> None:
    """Study protocol files."""


@protocol.command("check")
@click.argument("file", type=click.Path(dir_okay=False, path_type=str))
def protocol_check(file) -> None:
    """Validate a protocol file exactly as a session loads it (exit 2 with the first problem)."""
    from pathlib import Path

    from companion.engine.protocol import load_protocol

    loaded = load_protocol(Path(file))
    items = sum(len(i.items) for i in loaded.instruments)
    ack = loaded.acknowledgements
    phrases = sum(len(p) for table in (ack.named, ack.family, ack.valence) for p in table.values())
    # Which wording the file left to the shipped protocol, so a researcher knows what is not theirs.
    shipped = ", ".join(loaded.defaulted) or "none"
    click.echo(
        f"{file}: ok: protocol {loaded.id} v{loaded.version}, "
        f"{len(loaded.instruments)} instruments, {items} items, "
        f"{phrases + len(ack.neutral)} acknowledgement phrases; shipped wording used: {shipped}"
    )
