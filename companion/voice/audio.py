"""Audio in and out: microphone/speaker through sounddevice, WAV files for tests and replays.

Sources yield fixed-size frames of 16 kHz mono int16 PCM. Device trouble surfaces
as `DeviceError`; the voice channel retries with backoff and then gives up with
dialogue.EndOfInput.
"""

from __future__ import annotations

import logging
import queue
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from companion.errors import ConfigError
from companion.files import open_private

log = logging.getLogger(__name__)

SAMPLE_RATE = 16000
SAMPLE_BYTES = 2


class DeviceError(Exception):
    """The audio device failed to open, vanished or stopped delivering."""


class AudioSource(Protocol):
    frame_ms: int

    def start(self) -> None:
        """Open the device (again, after an error). Raises DeviceError."""

    def read(self, timeout: float) -> bytes | None:
        """Next frame, or None if none arrived within `timeout` s. Raises DeviceError."""

    def set_muted(self, muted: bool) -> None:
        """While muted, captured audio is thrown away (the companion is speaking)."""

    def close(self) -> None: ...


class AudioSink(Protocol):
    def play(self, pcm: bytes, sample_rate: int) -> None:
        """Play mono int16 PCM; return when done."""

    def close(self) -> None: ...


def frame_bytes(frame_ms: int) -> int:
    return SAMPLE_RATE * frame_ms // 1000 * SAMPLE_BYTES


def read_wav(path: str | Path) -> tuple[bytes, int]:
    """Mono int16 PCM and its sample rate (stereo is mixed down)."""
    try:
        with wave.open(str(path), "rb") as w:
            if w.getsampwidth() != 2:
                raise ConfigError(
                    f"{path}: {8 * w.getsampwidth()}-bit WAV; need 16-bit PCM "
                    "(sox IN -b 16 OUT.wav converts it)"
                )
            pcm = w.readframes(w.getnframes())
            rate, channels = w.getframerate(), w.getnchannels()
    except (wave.Error, EOFError) as exc:
        raise ConfigError(
            f"{path}: not a PCM WAV file ({exc}); record or convert it again"
        ) from exc
    if channels > 1:
        data = np.frombuffer(pcm, dtype=np.int16).reshape(-1, channels).mean(axis=1)
        pcm = data.astype(np.int16).tobytes()
    return pcm, rate


def resample(pcm: bytes, rate: int, to: int = SAMPLE_RATE) -> bytes:
    """Linear-interpolation resampling; good enough for speech into a recognizer."""
    if rate == to or not pcm:
        return pcm
    src = np.frombuffer(pcm, dtype=np.int16).astype(np.float32)
    n = int(round(len(src) * to / rate))
    out = np.interp(np.linspace(0, len(src) - 1, n), np.arange(len(src)), src)
    return out.astype(np.int16).tobytes()


def write_wav(path: str | Path, pcm: bytes, rate: int = SAMPLE_RATE) -> None:
    """16-bit mono WAV, created 0600 (recordings of a participant must not be readable by
    others, whatever the umask)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open_private(path, "wb") as f, wave.open(f, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(SAMPLE_BYTES)
        w.setframerate(rate)
        w.writeframes(pcm)


class FrameQueue:
    """Bounded hand-over from a capture thread: when full, the frame is dropped and counted."""

    def __init__(self, maxsize: int = 200) -> None:
        self._q: queue.Queue[bytes] = queue.Queue(maxsize=maxsize)
        self.overflows = 0

    def put(self, frame: bytes) -> None:
        try:
            self._q.put_nowait(frame)
        except queue.Full:
            self.overflows += 1
            if self.overflows in (1, 10, 100) or self.overflows % 1000 == 0:
                log.warning("audio input overflow: %d frame(s) dropped so far", self.overflows)

    def get(self, timeout: float) -> bytes | None:
        try:
            return self._q.get(timeout=timeout)
        except queue.Empty:
            return None

    def clear(self) -> None:
        while True:
            try:
                self._q.get_nowait()
            except queue.Empty:
                return


class WavSource:
    """Frames from WAV files, as fast as they are read, then silence (a quiet room).

    Fault injection for tests: `fail_open` start() attempts fail; the device
    `vanish_after` N frames (DeviceError, also on every later start()); or it
    `stall_after` N frames (read() returns None from then on).
    """

    def __init__(
        self,
        paths: list[str | Path] | str | Path,
        frame_ms: int = 30,
        *,
        fail_open: int = 0,
        vanish_after: int | None = None,
        stall_after: int | None = None,
    ) -> None:
        self.frame_ms = frame_ms
        self._fb = frame_bytes(frame_ms)
        items = paths if isinstance(paths, list) else [paths]
        pcm = b"".join(resample(*read_wav(p)) for p in items)
        self._pcm = pcm + b"\0" * (-len(pcm) % self._fb)
        self._pos = 0
        self._fail_open = fail_open
        self._vanish_after = vanish_after
        self._stall_after = stall_after
        self._muted = False
        self._open = False
        self.frames_read = 0
        self.start_calls = 0

    @classmethod
    def from_pcm(cls, pcm: bytes, frame_ms: int = 30, **faults: int | None) -> WavSource:
        """A source of `pcm` (16 kHz mono int16), with the same injected faults as a file's."""
        src = cls([], frame_ms, **faults)  # type: ignore[arg-type]
        src._pcm = pcm + b"\0" * (-len(pcm) % src._fb)
        return src

    def feed(self, pcm: bytes) -> None:
        """Append audio (16 kHz mono int16) to what is still to come (a sound in the room).

        While muted the microphone discards what it hears, so nothing is queued.
        """
        if self._muted:
            return
        pcm = self._pcm[self._pos :] + pcm
        self._pcm = pcm + b"\0" * (-len(pcm) % self._fb)
        self._pos = 0

    @property
    def exhausted(self) -> bool:
        return self._pos >= len(self._pcm)

    def start(self) -> None:
        self.start_calls += 1
        if self._fail_open > 0:
            self._fail_open -= 1
            raise DeviceError("input device failed to open (injected)")
        if self._vanish_after is not None and self.frames_read >= self._vanish_after:
            raise DeviceError("input device is gone (injected)")
        self._open = True

    def read(self, timeout: float) -> bytes | None:
        if not self._open:
            raise DeviceError("input device is not open")
        if self._vanish_after is not None and self.frames_read >= self._vanish_after:
            self._open = False
            raise DeviceError("input device vanished (injected)")
        if self._stall_after is not None and self.frames_read >= self._stall_after:
            return None
        self.frames_read += 1
        if self.exhausted:
            return b"\0" * self._fb
        frame = self._pcm[self._pos : self._pos + self._fb]
        self._pos += self._fb
        # While muted a microphone hears the room; the frame is consumed and discarded.
        return None if self._muted else frame

    def set_muted(self, muted: bool) -> None:
        self._muted = muted

    def close(self) -> None:
        self._open = False


class MicrophoneSource:
    """sounddevice input stream; PortAudio's callback thread fills a bounded FrameQueue."""

    def __init__(self, device: str | None = None, frame_ms: int = 30, queue_frames: int = 200):
        self.frame_ms = frame_ms
        self._device = device
        self._frames = FrameQueue(queue_frames)
        self._stream: Any = None
        self._muted = False

    @property
    def overflows(self) -> int:
        return self._frames.overflows

    def _callback(self, indata: Any, frames: int, time_info: Any, status: Any) -> None:
        if status and status.input_overflow:
            self._frames.overflows += 1
        if not self._muted:
            self._frames.put(bytes(indata))

    def start(self) -> None:
        import sounddevice as sd

        self.close()
        try:
            self._stream = sd.RawInputStream(
                samplerate=SAMPLE_RATE,
                blocksize=SAMPLE_RATE * self.frame_ms // 1000,
                device=self._device,
                channels=1,
                dtype="int16",
                callback=self._callback,
            )
            self._stream.start()
        except Exception as exc:  # PortAudioError, ValueError for unknown names
            self._stream = None
            raise DeviceError(f"input device {self._device or 'default'}: {exc}") from exc

    def read(self, timeout: float) -> bytes | None:
        if self._stream is None or not self._stream.active:
            raise DeviceError(f"input device {self._device or 'default'} stopped")
        return self._frames.get(timeout)

    def set_muted(self, muted: bool) -> None:
        self._muted = muted
        if not muted:
            self._frames.clear()  # drop anything captured around the switch

    def close(self) -> None:
        if self._stream is not None:
            try:
                self._stream.close()
            except Exception as exc:  # closing a vanished device may fail; nothing to do
                log.debug("closing input stream: %s", exc)
            self._stream = None


class SpeakerSink:
    """Plays through sounddevice's output device (by name or index; None = default)."""

    def __init__(self, device: str | None = None) -> None:
        self._device = device

    def play(self, pcm: bytes, sample_rate: int) -> None:
        import sounddevice as sd

        data = np.frombuffer(pcm, dtype=np.int16)
        try:
            sd.play(data, samplerate=sample_rate, device=self._device, blocking=True)
        except Exception as exc:
            raise DeviceError(f"output device {self._device or 'default'}: {exc}") from exc

    def close(self) -> None:
        pass


class WavSink:
    """Collects played audio; optionally writes each utterance as NNNN.wav into a directory."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.played: list[tuple[bytes, int]] = []

    def play(self, pcm: bytes, sample_rate: int) -> None:
        self.played.append((pcm, sample_rate))
        if self.directory is not None:
            write_wav(self.directory / f"{len(self.played):04d}.wav", pcm, sample_rate)

    @property
    def seconds(self) -> float:
        return sum(len(p) / SAMPLE_BYTES / r for p, r in self.played)

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str
    inputs: int
    outputs: int
    default_rate: float
    default_input: bool = False
    default_output: bool = False


def query_devices() -> list[DeviceInfo]:
    """Audio devices PortAudio can see (possibly none). Raises DeviceError when PortAudio
    itself fails (no library, broken sound configuration)."""
    try:
        import sounddevice as sd  # initialises PortAudio on import

        raw = sd.query_devices()
        default_in, default_out = (int(i) for i in sd.default.device)
    except Exception as exc:  # OSError: no PortAudio library; PortAudioError: init failed
        raise DeviceError(f"PortAudio: {exc}") from exc
    return [
        DeviceInfo(
            i,
            str(d["name"]),
            int(d["max_input_channels"]),
            int(d["max_output_channels"]),
            float(d["default_samplerate"]),
            default_input=i == default_in,
            default_output=i == default_out,
        )
        for i, d in enumerate(raw)
    ]


def list_devices() -> list[DeviceInfo]:
    """Audio devices PortAudio can see; empty (with a log line) when there are none."""
    try:
        return query_devices()
    except DeviceError as exc:
        log.warning("cannot list audio devices: %s", exc)
        return []


def format_device(d: DeviceInfo) -> str:
    """One line for `companion devices`: index, name, channels in/out, default marks."""
    marks = [m for m, on in (("default input", d.default_input),
                             ("default output", d.default_output)) if on]  # fmt: skip
    tail = f"  [{', '.join(marks)}]" if marks else ""
    return f"{d.index:3d}  {d.name}  (in {d.inputs}, out {d.outputs}, {d.default_rate:g} Hz){tail}"
