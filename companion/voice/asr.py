"""Provisioning the offline speech-recognition model (vosk) into a companion home.

A model arrives as a zip or a directory (copied from a USB stick), or is downloaded
from a URL with a known sha256 on a connected machine. It is verified (checksum,
vosk layout), unpacked or copied safely (regular files only: a link is never followed out
of the source), loaded by vosk in a child process on the staged copy, and only then moved
into HOME/models/asr/<name>/ in one rename and selected in config.toml (absolute path), so
neither a session nor config.toml ever sees half a model or one that does not load. Only
the `models install-asr` command calls this; sessions never touch the network. Which model
a session uses is decided in `voice.backend`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath

from companion.checksum import sha256_file
from companion.errors import AsrModelError
from companion.files import free_bytes, open_private, private_dir
from companion.settings.config import Home, load_config, resolve_home, write_config
from companion.voice.backend import asr_dir
from companion.voice.vocab import VocabularyCheck, check_vocabulary

log = logging.getLogger(__name__)

_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
# Files every vosk (Kaldi nnet3) model has; listen.VoskFactory checks for am/ and conf/.
_REQUIRED = ("am/final.mdl", "conf")
_CHUNK = 1 << 20
# A large official model (1.8 GB) loads in about a minute on a Raspberry Pi class device.
PROBE_TIMEOUT_S = 600
_PROBE = "import sys; from companion.voice.asr import probe_main; sys.exit(probe_main(sys.argv[1]))"
_NOT_WORKING = "nothing was installed; use a complete official vosk model (zip or folder)"


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
    h = resolve_home(home)  # absolute: config.toml stores absolute model paths
    config = load_config(h)  # a broken config.toml fails before any work is done
    existed = h.path.exists()
    h.ensure()
    # Staged in the home (one filesystem: the final move is a rename), beside models/, which
    # is only created once the staged model has loaded.
    work = Path(tempfile.mkdtemp(prefix=".install-asr-", dir=h.path))
    try:
        if url is not None:
            assert sha256 is not None
            source = _download(url, sha256, work / "download.zip")
            name = _name_from(PurePosixPath(urllib.parse.urlsplit(url).path).name)
        else:
            assert from_path is not None
            source = Path(from_path)
            name = _name_from(source.name)
        label = str(url or source)
        staged = work / "model"
        is_dir = source.is_dir()
        top = _copy_dir(source, staged) if is_dir else _extract_zip(source, staged, label)
        name = _name_from(top) if top else name
        _make_private(staged)
        probe_model(staged, label)
        root = private_dir(asr_dir(h.path))
        target = root / name
        _replace(staged, target, work)
        voice = dataclasses.replace(config.voice, vosk_model_dir=str(target), asr_backend="vosk")
        try:
            write_config(h, dataclasses.replace(config, voice=voice))
        except BaseException:
            _undo_replace(target, work)
            raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if not existed:
            _remove_if_empty(h.path)
    log.info("installed vosk model %s", target)
    return target


def probe_model(model_dir: Path, label: str) -> None:
    """Load the staged model as a session does (VoskFactory and one recogniser), in a child
    process: a model that fails to load, or kills its loader, cannot take this one down."""
    try:
        proc = subprocess.run(  # noqa: S603 (our own interpreter and code)
            [sys.executable, "-c", _PROBE, str(model_dir)],
            capture_output=True, text=True, errors="replace", timeout=PROBE_TIMEOUT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise AsrModelError(
            f"{label}: the model did not load within {PROBE_TIMEOUT_S} s; {_NOT_WORKING}"
        ) from None
    if proc.returncode != 0:
        # Paths in vosk's messages name the staged copy, which is removed: show them relative.
        why = _load_failure(proc.stderr.replace(f"{model_dir}/", ""), proc.returncode)
        raise AsrModelError(f"{label}: not a working vosk model ({why}); {_NOT_WORKING}")


def probe_main(model_dir: str) -> int:
    """The child's side of `probe_model`: 0 when the model loads, else 1 and why on stderr."""
    from companion.voice.listen import VoskFactory

    try:
        VoskFactory(model_dir).create("free")
    except Exception as exc:  # vosk raises a bare Exception("Failed to create a model")
        sys.stderr.write(f"probe: {exc}\n")
        return 1
    return 0


def _load_failure(stderr: str, returncode: int) -> str:
    """The most telling line of the loader's output: Kaldi's first ERROR, else our own."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    kaldi = [ln for ln in lines if ln.startswith("ERROR")]
    if kaldi:
        text = re.sub(r"^ERROR(?: \(.*?:\d+\))?:?\s*", "", kaldi[0])  # "(VoskAPI:F():x.cc:1)"
    elif lines and lines[-1].startswith("probe: "):
        text = lines[-1].removeprefix("probe: ")
    elif returncode < 0:
        text = f"the loader was killed by signal {-returncode}"
    else:
        text = f"the loader exited with status {returncode}"
    text = " ".join("".join(ch if ch.isprintable() else "?" for ch in text).split())
    return text if len(text) <= 200 else text[:197] + "..."


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
    entries = _scan(source, "", str(source))
    top = _layout_root(set(entries), str(source))
    prefix = top + "/" if top else ""
    needed = sum(size for size in entries.values() if size >= 0)
    _check_free(needed, dest.parent, str(source))
    try:
        dest.mkdir(mode=0o700)
        for rel, size in sorted(entries.items()):
            if not rel.startswith(prefix) or rel == top:
                continue
            target = dest / rel[len(prefix) :]
            if size < 0:
                target.mkdir(mode=0o700)
            else:
                _copy_file(source / rel, target)
    except OSError as exc:
        raise AsrModelError(f"{source}: cannot copy the model ({exc}); check the medium") from exc
    return top


def _scan(folder: Path, prefix: str, label: str) -> dict[str, int]:
    """Every entry under `folder` by relative path: a file's size, -1 for a folder. Anything
    else (a symbolic link, device, FIFO or socket) is refused by name: a model is regular
    files, and a link could pull a file from anywhere on the system into the home."""
    found: dict[str, int] = {}
    try:
        with os.scandir(folder) as it:
            entries = list(it)
    except OSError as exc:
        raise AsrModelError(f"{label}: cannot read {folder} ({exc.strerror}); check the medium"
                            ) from exc  # fmt: skip
    for entry in entries:
        rel = prefix + entry.name
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            found[rel] = -1
            found.update(_scan(Path(entry.path), rel + "/", label))
        elif stat.S_ISREG(st.st_mode):
            found[rel] = st.st_size
        else:
            raise AsrModelError(
                f"{label}: {rel} is {_kind(entry)}, not a regular file; nothing was installed: "
                "a model folder holds only files and folders, so replace it with the real file "
                "or remove it"
            )
    return found


def _kind(entry: os.DirEntry[str]) -> str:
    mode = entry.stat(follow_symlinks=False).st_mode
    if stat.S_ISLNK(mode):
        return f"a symbolic link (to {os.readlink(entry.path)})"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a special file"


def _copy_file(src: Path, dest: Path) -> None:
    # O_NOFOLLOW: a file swapped for a link after the scan is refused, not followed.
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as inp:
        if not stat.S_ISREG(os.fstat(inp.fileno()).st_mode):
            raise OSError(f"{src} is no longer a regular file")
        with open_private(dest, "wb", exclusive=True) as out:
            shutil.copyfileobj(inp, out, _CHUNK)


def _check_free(needed: int, where: Path, label: str) -> None:
    free = free_bytes(where)
    if needed > free:
        raise AsrModelError(
            f"{label}: needs {needed >> 20} MiB unpacked, {free >> 20} MiB free; "
            "free some disk space"
        )


def _extract_zip(path: Path, dest: Path, label: str) -> str:
    try:
        with zipfile.ZipFile(path) as zf:
            infos = [i for i in zf.infolist() if not i.filename.startswith("__MACOSX/")]
            for info in infos:
                _check_member(info, label)
            names = {i.filename.rstrip("/") for i in infos}
            top = _layout_root(names, label)
            _check_free(sum(i.file_size for i in infos), dest.parent, label)
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


def _check_member(info: zipfile.ZipInfo, label: str) -> None:
    # Zip slip: an entry must stay inside the folder it is unpacked into.
    name = info.filename
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
        raise AsrModelError(
            f"{label}: unsafe entry {name!r} (absolute path or '..'); refusing to unpack it"
        )
    kind = stat.S_IFMT(info.external_attr >> 16)  # the Unix file type, when the zip says one
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise AsrModelError(
            f"{label}: entry {name!r} is a link or special file, not a regular file; "
            "refusing to unpack it: use an official vosk model zip"
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


def _undo_replace(target: Path, work: Path) -> None:
    """Put back what `_replace` replaced (config.toml could not be written)."""
    os.rename(target, work / "not-selected")
    if (work / "previous").exists():
        os.rename(work / "previous", target)


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not empty: it holds more than this install made
        folder.rmdir()
