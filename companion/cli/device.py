"""Commands for the device and its models: doctor, speak, model eval/replay, devices, models."""

from __future__ import annotations

import sys

import click

from companion.cli.base import cli, home_option
from companion.engine.protocol import EMOTION_METRICS


@cli.command()
@home_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
@click.option("--skip", multiple=True, help="Leave out a group of checks (audio, models, service, "
              "network, ...) or one finding (e.g. asr-vocabulary).")  # fmt: skip
def doctor(home, as_json, skip) -> None:
    """Check this device: audio (devices and the voice), models, clock, disk, database,
    service, permissions, network."""
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
@click.argument("text")
@click.option("--to", "to", required=True, type=click.Path(dir_okay=False, path_type=str),
              help="The WAV file to write.")  # fmt: skip
def speak(home, text, to) -> None:
    """Render TEXT as the companion would say it (the home's voice) into a WAV file."""
    from pathlib import Path

    from companion.app import speak_to_file

    engine, seconds = speak_to_file(home, text, Path(to))
    click.echo(f"{to}: {seconds:.1f} s spoken by {engine}")


@cli.group()
def model() -> None:
    """The on-device empathy model (embedding + emotion head)."""


@model.command("eval")
@click.argument("all_path", required=False, type=click.Path(dir_okay=False, path_type=str))
@click.option(
    "--emotions",
    "csv_path",
    type=click.Path(dir_okay=False, path_type=str),
    help="CSV with columns label (1..32, EmpatheticDialogues order),content.",
)
@click.option(
    "--matching",
    "matching_path",
    type=click.Path(dir_okay=False, path_type=str),
    help="Same CSV format: rank the other rows as a bank for each row (hit = same label).",
)
@click.option(
    "--acknowledgements",
    "ack_path",
    type=click.Path(dir_okay=False, path_type=str),
    help="Same CSV format: how often the acknowledgement rule names a feeling, and rightly.",
)
@click.option("--protocol", "protocol_path", help="Protocol whose [matching] weights to use.")
@click.option("--semantic", type=click.FloatRange(0, 1), help="Override the semantic weight.")
@click.option("--emotion", type=click.FloatRange(0, 1), help="Override the emotion weight.")
@click.option("--emotion-similarity", "metric", type=click.Choice(EMOTION_METRICS),
              help="Override the protocol's [matching] emotion_similarity.")  # fmt: skip
@click.option("--model", "model_path", default=None, help="Model .onnx (default: the shipped one).")
def model_eval(all_path, csv_path, matching_path, ack_path, protocol_path, semantic, emotion,
               metric, model_path) -> None:  # fmt: skip
    """On a labelled CSV: FILE alone prints all three, one JSON line each (with "eval" and
    "model"); --emotions {n, top1, top3, macro_f1}; --matching {n, p_at_1, p_at_5, cosine,
    emotion_only}; --acknowledgements {n, named_exact, named_family, named_valence, named,
    neutral, right_exact, right_family, right_valence, right_named, valence_agrees,
    valence_clash}."""
    import json
    from pathlib import Path

    from companion.engine.protocol import load_protocol
    from companion.errors import ConfigError
    from companion.model import evaluate as ev
    from companion.model.encode import Encoder, read_emotion_csv
    from companion.model.similarity import ScoreWeights

    given = [p for p in (all_path, csv_path, matching_path, ack_path) if p]
    if len(given) != 1:
        raise ConfigError("model eval: give one labelled CSV: FILE (everything), or exactly one "
                          "of --emotions, --matching or --acknowledgements FILE")  # fmt: skip
    path = Path(given[0])
    read_emotion_csv(path)  # fail fast on a malformed file, before loading the model
    protocol = load_protocol(Path(protocol_path) if protocol_path else None)
    weights = ScoreWeights(
        protocol.semantic_weight if semantic is None else semantic,
        protocol.emotion_weight if emotion is None else emotion,
        metric or protocol.emotion_similarity,
    )
    if weights.semantic == weights.emotion == 0:
        raise ConfigError("model eval: --semantic and --emotion must not both be 0")
    encoder = Encoder.load(Path(model_path) if model_path else None)
    if all_path:
        for line in ev.evaluate_all(encoder, path, weights):
            click.echo(json.dumps(line))
    elif csv_path:
        click.echo(json.dumps(ev.evaluate_emotions(encoder, path)))
    elif ack_path:
        click.echo(json.dumps(ev.evaluate_acknowledgements(encoder, path)))
    else:
        click.echo(json.dumps(ev.evaluate_matching(encoder, path, weights)))


@model.command("replay")
@home_option
@click.option("--participant", "participant_id", help="Participant id (default: from config.toml).")
def model_replay(home, participant_id) -> None:
    """Recompute a participant's preference model from the logged ratings; report differences.

    Exits 1 if the stored model differs from the replayed one.
    """
    from companion import app
    from companion.errors import ConfigError
    from companion.model.empathy import replay_participant
    from companion.settings.config import check_participant_id

    if participant_id is not None:
        participant_id = check_participant_id(participant_id, "--participant")
    opened = app.open_home(home)
    who = participant_id or opened.config.participant_id
    if not opened.db.execute("SELECT 1 FROM participants WHERE id = ?", [who]).fetchone():
        raise ConfigError(f"--participant: no participant {who!r} in {opened.home.db_path}")
    post_story = {i.id for i in opened.protocol.instruments if i.phase == "post_story"}
    report = replay_participant(opened.db, who, sorted(post_story))
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
    home_dir = resolve_home(home).path
    target = install_asr(home_dir, source, url, sha256)
    click.echo(f'installed vosk model in {target} (config.toml: asr_backend = "vosk")')
    from companion.voice.asr import vocabulary_of

    result = vocabulary_of(home_dir, target)
    click.echo(f"vocabulary: {result.summary()}" + ("" if result.ok else "; doctor will fail"))
