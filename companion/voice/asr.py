"""Provisioning the offline speech-recognition model (vosk) into a companion home.

A model arrives as a zip or a directory (copied from a USB stick), or is downloaded
from a URL with a known sha256 on a connected machine. It is verified (checksum,
vosk layout), unpacked safely, and moved into HOME/models/asr/<name>/ in one
rename, so a session never sees half a model. Only the `models install-asr`
command calls this; sessions never touch the network. Which model a session uses is
decided in `voice.backend`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath

from companion.checksum import sha256_file
from companion.errors import AsrModelError
from companion.files import open_private, private_dir
from companion.settings.config import Home, load_config, write_config
from companion.voice.backend import asr_dir
from companion.voice.vocab import VocabularyCheck, check_vocabulary

log = logging.getLogger(__name__)

_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
# Files every vosk (Kaldi nnet3) model has; listen.VoskFactory checks for am/ and conf/.
_REQUIRED = ("am/final.mdl", "conf")
_CHUNK = 1 << 20


def install_asr(
    home: Path,
    from_path: Path | None = None,
    url: str | None = None,
    sha256: str | None = None,
) -> Path:
    """Install a vosk model into HOME/models/asr/<name>/ and select it in config.toml."""
    if (from_path is None) == (url is None):
        raise AsrModelError("models install-asr: give either --from PATH or --url URL --sha256 HEX")
    if sha256 is not None and not _HEX64.match(sha256):
        raise AsrModelError(f"--sha256 {sha256!r}: need 64 hex digits (sha256sum output)")
    if url is not None and sha256 is None:
        raise AsrModelError(f"{url}: --url needs --sha256 HEX so the download can be verified")
    if from_path is not None:
        _check_source(Path(from_path), sha256)  # before anything is created in the home
    h = Home(Path(home)).ensure()
    config = load_config(h)  # a broken config.toml fails before any work is done
    root = asr_dir(h.path)
    private_dir(root)
    work = Path(tempfile.mkdtemp(prefix=".install-", dir=root))
    try:
        if url is not None:
            assert sha256 is not None
            source = _download(url, sha256, work / "download.zip")
            name = _name_from(PurePosixPath(urllib.parse.urlsplit(url).path).name)
        else:
            assert from_path is not None
            source = Path(from_path)
            name = _name_from(source.name)
        staged = work / "model"
        if source.is_dir():
            top = _copy_dir(source, staged)
        else:
            top = _extract_zip(source, staged, str(url or source))
        name = _name_from(top) if top else name
        target = root / name
        _make_private(staged)
        _replace(staged, target, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    voice = dataclasses.replace(config.voice, vosk_model_dir=str(target), asr_backend="vosk")
    write_config(h, dataclasses.replace(config, voice=voice))
    log.info("installed vosk model %s", target)
    return target


def vocabulary_of(home: Path, model_dir: Path) -> VocabularyCheck:
    """Does the installed model know the home protocol's answer words?"""
    from companion.engine.protocol import load_protocol
    from companion.voice.listen import VoskFactory

    config = load_config(Home(Path(home)))
    protocol = load_protocol(config.protocol_path(Path(home)))
    return check_vocabulary(VoskFactory(model_dir).knows, protocol)


# --- sources ----------------------------------------------------------------------------


def _download(url: str, sha256: str, dest: Path) -> Path:
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise AsrModelError(f"{url}: only http(s) URLs can be downloaded; use --from for files")
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=60) as resp, dest.open("wb") as out:
            while chunk := resp.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        is_http = isinstance(exc, urllib.error.HTTPError)
        reason = exc if is_http else (getattr(exc, "reason", None) or exc)
        raise AsrModelError(
            f"{url}: download failed ({reason}); check the URL and network, or copy the zip "
            "and use --from"
        ) from exc
    _check_digest(digest.hexdigest(), sha256, url)
    return dest


def _check_source(source: Path, sha256: str | None) -> None:
    if not source.exists():
        raise AsrModelError(f"{source}: no such file or directory; check the path")
    if sha256 is not None:
        if source.is_dir():
            raise AsrModelError(
                f"{source}: --sha256 checks a zip file, not a directory; drop it or give the zip"
            )
        _verify(source, sha256, str(source))


def _verify(path: Path, sha256: str, label: str) -> None:
    try:
        actual = sha256_file(path)
    except OSError as exc:
        raise AsrModelError(f"{label}: cannot read ({exc.strerror}); check the file") from exc
    _check_digest(actual, sha256, label)


def _check_digest(actual: str, expected: str, label: str) -> None:
    if actual != expected.lower():
        raise AsrModelError(
            f"{label}: sha256 mismatch (got {actual}, expected {expected.lower()}); "
            "the file is corrupt or not the one meant: fetch it again"
        )


def _name_from(filename: str) -> str:
    stem = filename[:-4] if filename.lower().endswith(".zip") else filename
    return _SAFE_NAME.sub("-", stem).strip(".-") or "vosk-model"


def _layout_root(names: set[str], label: str) -> str:
    """'' when am/ and conf/ are at the top, 'folder' when inside one top-level folder."""

    def has_model(prefix: str) -> bool:
        return all(any(n == prefix + r or n.startswith(prefix + r + "/") for n in names)
                   for r in _REQUIRED)  # fmt: skip

    if has_model(""):
        return ""
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) == 1:
        (top,) = tops
        if has_model(top + "/"):
            return top
    raise AsrModelError(
        f"{label}: not a vosk model (needs am/final.mdl and conf/ at the top or in one folder); "
        "use an official vosk model zip"
    )


def _copy_dir(source: Path, dest: Path) -> str:
    names = {p.relative_to(source).as_posix() for p in source.rglob("*")}
    top = _layout_root(names, str(source))
    try:
        shutil.copytree(source / top if top else source, dest)
    except (OSError, shutil.Error) as exc:
        raise AsrModelError(f"{source}: cannot copy the model ({exc}); check the medium") from exc
    return top


def _extract_zip(path: Path, dest: Path, label: str) -> str:
    try:
        with zipfile.ZipFile(path) as zf:
            infos = [i for i in zf.infolist() if not i.filename.startswith("__MACOSX/")]
            for info in infos:
                _check_member(info.filename, label)
            names = {i.filename.rstrip("/") for i in infos}
            top = _layout_root(names, label)
            needed = sum(i.file_size for i in infos)
            free = shutil.disk_usage(dest.parent).free
            if needed > free:
                raise AsrModelError(
                    f"{label}: needs {needed >> 20} MiB unpacked, {free >> 20} MiB free; "
                    "free some disk space"
                )
            dest.mkdir(mode=0o700)
            prefix = top + "/" if top else ""
            for info in infos:
                rel = info.filename[len(prefix) :] if info.filename.startswith(prefix) else ""
                if not rel.strip("/"):
                    continue
                target = dest / rel
                if info.is_dir():
                    target.mkdir(mode=0o700, parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                with zf.open(info) as src, open_private(target, "wb", exclusive=True) as out:
                    shutil.copyfileobj(src, out, _CHUNK)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
        raise AsrModelError(f"{label}: unreadable zip ({exc}); copy or download it again") from exc
    except FileExistsError as exc:
        raise AsrModelError(
            f"{label}: duplicate entry {exc.filename}; not a clean model zip"
        ) from exc
    except OSError as exc:
        raise AsrModelError(f"{label}: cannot unpack ({exc}); check the file and disk") from exc
    return top


def _check_member(name: str, label: str) -> None:
    # Zip slip: an entry must stay inside the folder it is unpacked into.
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
        raise AsrModelError(
            f"{label}: unsafe entry {name!r} (absolute path or '..'); refusing to unpack it"
        )


# --- installing -------------------------------------------------------------------------


def _make_private(tree: Path) -> None:
    # A folder copied from a USB stick keeps the stick's modes: tighten them all.
    for dirpath, _dirs, filenames in os.walk(tree):
        os.chmod(dirpath, 0o700)
        for f in filenames:
            p = os.path.join(dirpath, f)
            if not os.path.islink(p):
                os.chmod(p, 0o600)


def _replace(staged: Path, target: Path, work: Path) -> None:
    """Move the staged model into place; an earlier install of the same name is replaced."""
    old = work / "previous"
    if target.exists():
        os.rename(target, old)  # same filesystem: the old model stays whole until the swap
    try:
        os.rename(staged, target)
    except OSError as exc:
        if old.exists():
            os.rename(old, target)
        raise AsrModelError(f"{target}: cannot install ({exc.strerror}); check the disk") from exc
