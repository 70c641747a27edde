"""Audio I/O: WAV sources and sinks, the bounded capture queue, injected device faults,
and real PortAudio (through ALSA's null device) for capture and `companion devices`."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import wave
from pathlib import Path

import numpy as np
import pytest

from companion.errors import ConfigError
from companion.voice.audio import (
    DeviceError,
    FrameQueue,
    WavSink,
    WavSource,
    frame_bytes,
    read_wav,
    resample,
    write_wav,
)
from tests.helpers.run import REPO
from tests.helpers.speech import speech_pcm

FB = frame_bytes(30)

# ALSA configurations for a machine without a sound card: PortAudio sees the null
# plugin's PCMs as real devices (capture delivers silence, playback discards).
ALSA_DEVICES = """\
pcm.!default { type null }
pcm.companion_mic { type null }
pcm.companion_speaker { type plug slave.pcm "null" }
pcm.null { type null }
ctl.!default { type hw card 0 }
"""
ALSA_NO_DEVICES = "pcm.!default { type hw card 0 }\n"
ALSA_BROKEN = "pcm.!default { type null\n"  # unterminated: PortAudio cannot initialise


def run_with_alsa(tmp_path: Path, alsa_conf: str, *args: str) -> subprocess.CompletedProcess[str]:
    conf = tmp_path / "asound.conf"
    conf.write_text(alsa_conf)
    env = {**os.environ, "ALSA_CONFIG_PATH": str(conf)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60,
                          env=env, cwd=REPO)  # fmt: skip


# --- WAV files ---------------------------------------------------------------------------


def test_wav_source_and_sink_round_trip(tmp_path: Path) -> None:
    speech = speech_pcm("Good morning, how are you today?")
    write_wav(tmp_path / "in.wav", speech)
    src = WavSource(tmp_path / "in.wav", frame_ms=30)
    src.start()
    frames = []
    while not src.exhausted:
        frame = src.read(0.1)
        assert frame is not None and len(frame) == FB
        frames.append(frame)
    got = b"".join(frames)
    assert got[: len(speech)] == speech and set(got[len(speech) :]) <= {0}
    assert len(got) - len(speech) < FB  # only the last frame is padded
    assert src.read(0.1) == b"\0" * FB  # then a quiet room

    sink = WavSink(tmp_path / "out")
    sink.play(got, 16000)
    sink.play(speech[:16000], 8000)  # any rate is kept as given
    assert sink.seconds == pytest.approx(len(got) / 32000 + 1.0)
    assert read_wav(tmp_path / "out" / "0001.wav") == (got, 16000)
    assert read_wav(tmp_path / "out" / "0002.wav") == (speech[:16000], 8000)


def test_read_wav_mixes_stereo_and_resamples(tmp_path: Path) -> None:
    left = (np.sin(np.arange(22050) / 10) * 8000).astype(np.int16)
    stereo = np.stack([left, left // 2], axis=1)
    with wave.open(str(tmp_path / "st.wav"), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(22050)
        w.writeframes(stereo.tobytes())
    pcm, rate = read_wav(tmp_path / "st.wav")
    mono = np.frombuffer(pcm, dtype=np.int16)
    assert rate == 22050 and mono.size == 22050
    assert np.abs(mono.astype(int) - (left.astype(int) * 3 // 4)).max() <= 1
    assert len(resample(pcm, rate)) == 16000 * 2  # one second at 16 kHz


def test_bad_wav_files_are_named_errors(tmp_path: Path) -> None:
    with wave.open(str(tmp_path / "8bit.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(8000)
        w.writeframes(b"\x80" * 800)
    with pytest.raises(ConfigError, match=r"8bit\.wav: 8-bit WAV; need 16-bit"):
        read_wav(tmp_path / "8bit.wav")
    (tmp_path / "notes.wav").write_text("not audio")
    with pytest.raises(ConfigError, match=r"notes\.wav: not a PCM WAV file"):
        WavSource(tmp_path / "notes.wav")


def test_muted_source_discards_what_it_hears() -> None:
    tone = (np.ones(FB // 2 * 4) * 1000).astype(np.int16).tobytes()
    src = WavSource.from_pcm(tone)
    src.start()
    assert src.read(0.1) == tone[:FB]
    src.set_muted(True)
    assert src.read(0.1) is None  # consumed and thrown away
    src.feed(tone)  # a sound while muted never reaches the queue
    src.set_muted(False)
    assert [src.read(0.1) for _ in range(2)] == [tone[:FB], tone[:FB]]
    assert src.exhausted


# --- the capture queue -------------------------------------------------------------------


def test_frame_queue_overflow_is_counted_not_fatal(caplog) -> None:
    caplog.set_level(logging.WARNING)
    q = FrameQueue(maxsize=3)
    for i in range(12):
        q.put(bytes([i]) * 4)
    assert q.overflows == 9
    assert [q.get(0.01) for _ in range(3)] == [bytes([i]) * 4 for i in range(3)]  # oldest kept
    assert q.get(0.01) is None
    # Logged at the 1st and 10th drop only, not once per frame.
    assert caplog.text.count("audio input overflow") == 1
    q.put(b"x")
    q.put(b"y")
    q.clear()
    assert q.get(0.01) is None


# --- injected faults (WavSource) -----------------------------------------------------------


def test_open_fails_then_succeeds() -> None:
    src = WavSource.from_pcm(b"\1\0" * 1000, fail_open=2)
    for _ in range(2):
        with pytest.raises(DeviceError, match="failed to open"):
            src.start()
    with pytest.raises(DeviceError, match="not open"):
        src.read(0.1)
    src.start()
    assert src.read(0.1) is not None and src.start_calls == 3


def test_vanishes_after_n_frames_and_stays_gone() -> None:
    src = WavSource([], vanish_after=5)
    src.start()
    assert all(src.read(0.1) is not None for _ in range(5))
    with pytest.raises(DeviceError, match="vanished"):
        src.read(0.1)
    with pytest.raises(DeviceError, match="gone"):
        src.start()  # unplugged: reopening fails too
    assert src.frames_read == 5


def test_stalls_after_n_frames() -> None:
    src = WavSource([], stall_after=3)
    src.start()
    got = [src.read(0.1) for _ in range(6)]
    assert got[:3] == [b"\0" * FB] * 3 and got[3:] == [None] * 3  # no error: just nothing
    assert src.frames_read == 3


# --- real PortAudio through ALSA's null device ----------------------------------------------


def test_devices_lists_portaudio_devices(tmp_path: Path) -> None:
    out = run_with_alsa(tmp_path, ALSA_DEVICES, "-m", "companion", "devices")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    names = [line.split()[1] for line in lines]
    assert names == ["companion_mic", "companion_speaker", "default"]
    assert [int(line.split()[0]) for line in lines] == [0, 1, 2]
    assert all("in 128, out 128" in line for line in lines)
    assert lines[2].endswith("[default input, default output]")
    assert "default" not in lines[0].split("(")[1]


def test_devices_none_found(tmp_path: Path) -> None:
    out = run_with_alsa(tmp_path, ALSA_NO_DEVICES, "-m", "companion", "devices")
    assert (out.returncode, out.stdout) == (0, "no audio devices found\n")


def test_devices_portaudio_error_is_one_line_exit_2(tmp_path: Path) -> None:
    out = run_with_alsa(tmp_path, ALSA_BROKEN, "-m", "companion", "devices")
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("companion: error: PortAudio: ")


MIC_SCRIPT = textwrap.dedent(
    """
    import time
    from companion.voice.audio import DeviceError, MicrophoneSource
    try:
        MicrophoneSource("no-such-mic").start()
    except DeviceError as exc:
        print("open failed:", exc)
    src = MicrophoneSource("companion_mic", 30, queue_frames=5)
    src.start()
    frames = [src.read(2.0) for _ in range(8)]
    print("frames", sorted({len(f) for f in frames if f is not None}), frames.count(None))
    time.sleep(0.5)  # a slow consumer: the capture thread must drop, not block or crash
    print("overflowed", src.overflows > 0)
    print("still reading", src.read(2.0) is not None)
    src.close()
    try:
        src.read(0.1)
    except DeviceError:
        print("closed raises")
    """
)


def test_microphone_capture_through_portaudio(tmp_path: Path) -> None:
    logging_off = "import logging; logging.disable(logging.WARNING)\n"
    out = run_with_alsa(tmp_path, ALSA_DEVICES, "-c", logging_off + MIC_SCRIPT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "open failed: input device no-such-mic: No input device matching 'no-such-mic'",
        f"frames [{FB}] 0",
        "overflowed True",
        "still reading True",
        "closed raises",
    ]
