"""Runtime text encoder: one ONNX call gives a story embedding and emotion probabilities.

Uses only onnxruntime, tokenizers and numpy (torch is build-time only). The model file is checked
against the sha256 in its JSON sidecar before it is loaded.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from companion.checksum import sha256_file
from companion.emotions import EMOTIONS
from companion.errors import ModelError

log = logging.getLogger(__name__)

EMBEDDING_DIM = 384
MODEL_GLOB = "companion-empathy-*.onnx"


@dataclass(frozen=True)
class TextEncoding:
    """embedding: float32 (384,), L2-normalised; emotions: float32 (32,) probs in EMOTIONS order."""

    embedding: np.ndarray
    emotions: np.ndarray

    def top_emotion(self) -> tuple[str, float]:
        i = int(np.argmax(self.emotions))
        return EMOTIONS[i], float(self.emotions[i])


@dataclass(frozen=True)
class EncoderConfig:
    threads: int | None = None  # intra-op threads; None = 1 (Pi-class, leaves a core for audio)
    window_tokens: int | None = None  # None = the sidecar's window (128), also the maximum
    # Bounds the cost of a long turn: at most this many windows, evenly spread over the text
    # (a 2,000-word story takes 17 windows, ~2 s on one loaded x86 core; 6 take ~0.6 s).
    max_windows: int | None = None  # None = MAX_WINDOWS


MAX_WINDOWS = 6


def default_model_dir() -> Path:
    """`companion/_models/` in an installed wheel, else `<repo>/models/` for editable installs."""
    pkg = Path(__file__).resolve().parent.parent  # the companion package
    for candidate in (pkg / "_models", pkg.parent / "models"):
        if any(candidate.glob(MODEL_GLOB)):
            return candidate
    raise ModelError(
        f"no {MODEL_GLOB} found in {pkg / '_models'} or {pkg.parent / 'models'}; "
        "reinstall companion or pass --model PATH"
    )


def _version_key(path: Path) -> tuple[int, str]:
    m = re.search(r"-(\d+)\.onnx$", path.name)
    return (int(m.group(1)) if m else -1, path.name)


def _read_sidecar(model_path: Path) -> dict:
    sidecar = model_path.with_name(model_path.name + ".json")
    if not model_path.is_file():
        raise ModelError(f"model file {model_path} not found; pass --model PATH to a .onnx file")
    if not sidecar.is_file():
        raise ModelError(f"sidecar {sidecar} missing; the model cannot be verified, rebuild it")
    try:
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
        expected = str(meta["sha256"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"sidecar {sidecar} is unreadable or has no sha256 ({exc})") from exc
    if sha256_file(model_path) != expected:
        raise ModelError(f"{model_path} does not match the sha256 in {sidecar.name}; reinstall it")
    tok = meta.get("tokenizer", {})
    tok_path = model_path.with_name(str(tok.get("file") or "missing"))
    if not tok.get("file") or not tok_path.is_file():
        raise ModelError(f"tokenizer named in {sidecar} not found next to the model")
    if sha256_file(tok_path) != tok.get("sha256"):
        raise ModelError(f"{tok_path} does not match the sha256 in {sidecar.name}; reinstall it")
    if list(meta.get("labels", [])) != list(EMOTIONS):
        raise ModelError(f"{sidecar} labels differ from companion.emotions.EMOTIONS")
    return meta


def disabled_optimizers(meta: dict) -> list[str]:
    """The onnxruntime graph optimizations a model's sidecar says it must run without (the
    shipped model: a fusion whose kernels give different results on x86 and ARM)."""
    return list(meta.get("quantization", {}).get("session", {}).get("disabled_optimizers", []))


def resolve_model(model_path: Path | None = None) -> Path:
    """The given model file, else the newest shipped one."""
    if model_path is None:
        return max(default_model_dir().glob(MODEL_GLOB), key=_version_key)
    return Path(model_path)


def model_build(model_path: Path | None = None) -> str:
    """The build id encodings are stored under (name-version+sha256 prefix), read from the
    verified sidecar without loading onnxruntime (so light commands stay light)."""
    meta = _read_sidecar(resolve_model(model_path))
    return build_id(f"{meta['name']}-{meta['version']}", meta)


def build_id(version: str, meta: dict) -> str:
    # Name, version and checksum: a rebuilt model never reuses another build's encodings.
    return f"{version}+{str(meta.get('sha256', ''))[:12]}"


class Encoder:
    """Loaded model + tokenizer. Create with `Encoder.load()`; `encode` may be called from several
    threads at once (onnxruntime's Run and the tokenizer are thread-safe)."""

    def __init__(
        self, session, tokenizer, meta: dict, window: int, max_windows: int = MAX_WINDOWS
    ) -> None:
        self._session = session
        self._tok = tokenizer
        self.meta = meta
        self.version = f"{meta['name']}-{meta['version']}"
        self.window = window
        self.max_windows = max(1, max_windows)
        self._cls = tokenizer.token_to_id("[CLS]")
        self._sep = tokenizer.token_to_id("[SEP]")

    @classmethod
    def load(cls, model_path: Path | None = None, config: EncoderConfig | None = None) -> Encoder:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        config = config or EncoderConfig()
        model_path = resolve_model(model_path)
        meta = _read_sidecar(model_path)
        limit = int(meta.get("window_tokens", 128))  # the graph takes no longer window
        window = config.window_tokens or limit
        if not 3 <= window <= limit:
            raise ModelError(f"window_tokens {window} is outside 3..{limit}, the windows "
                             f"{model_path.name} takes: use a value in that range")  # fmt: skip
        tok = Tokenizer.from_file(str(model_path.with_name(meta["tokenizer"]["file"])))
        # The upstream tokenizer pads and truncates to 128; we window long texts ourselves.
        tok.no_padding()
        tok.no_truncation()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = config.threads or 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.log_severity_level = 3
        try:
            session = ort.InferenceSession(
                str(model_path), opts, providers=["CPUExecutionProvider"],
                disabled_optimizers=disabled_optimizers(meta),
            )  # fmt: skip
        except Exception as exc:  # onnxruntime raises its own unnamed error types
            raise ModelError(f"onnxruntime cannot load {model_path}: {exc}") from exc
        log.info(
            "loaded %s from %s (%d thread(s))", meta["name"], model_path, opts.intra_op_num_threads
        )
        return cls(session, tok, meta, window, config.max_windows or MAX_WINDOWS)

    @property
    def threads(self) -> int:
        """Intra-op threads of one call (1 by default: a call runs in its caller's thread)."""
        return int(self._session.get_session_options().intra_op_num_threads)

    def token_windows(self, text: str) -> np.ndarray:
        """Token ids as (n_windows, length): equal-length windows, no padding needed.

        Long texts get ceil(n / (window - 2)) windows with evenly spread starts (the last one ends
        exactly at the last token), capped at `max_windows`: beyond that the windows are evenly
        spread samples of the text (beginning, end and between), so encoding time is bounded.
        """
        body = self._tok.encode(text, add_special_tokens=False).ids
        width = self.window - 2
        if len(body) <= width:
            starts, width = [0], len(body)
        else:
            n = min(-(-len(body) // width), self.max_windows)
            starts = np.linspace(0, len(body) - width, n).round().astype(int).tolist()
        rows = [[self._cls, *body[s : s + width], self._sep] for s in starts]
        return np.asarray(rows, dtype=np.int64)

    def encode(self, text: str) -> TextEncoding:
        ids = self.token_windows(text)
        emb, logits = self._session.run(
            ["embedding", "emotion_logits"], {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        )
        # Windows are pooled by averaging: mean embedding (re-normalised) and mean logits.
        v = emb.mean(0, dtype=np.float64)
        v /= max(float(np.linalg.norm(v)), 1e-12)
        z = logits.mean(0, dtype=np.float64)
        p = np.exp(z - z.max())
        p /= p.sum()
        return TextEncoding(embedding=v.astype(np.float32), emotions=p.astype(np.float32))

    def encode_many(self, texts: Sequence[str]) -> list[TextEncoding]:
        # One call per text on purpose: int8 dynamic quantisation scales activations per batch,
        # so batching different texts together would make results depend on their neighbours.
        return [self.encode(t) for t in texts]


def read_emotion_csv(path: Path) -> tuple[list[int], list[str]]:
    from companion.errors import ConfigError
    from companion.files import read_input

    # bounded, a regular file only (a device or pipe is refused, not read forever)
    f = io.StringIO(read_input(path, "CSV file", 512 * 1024 * 1024), newline="")
    labels: list[int] = []
    texts: list[str] = []
    with f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None or [h.strip() for h in header[:2]] != ["label", "content"]:
            raise ConfigError(f"{path}:1: header must be 'label,content'")
        for row in reader:
            line = reader.line_num
            if not row:
                continue
            if len(row) != 2:
                raise ConfigError(
                    f"{path}:{line}: expected 2 fields (label,content), got {len(row)}"
                )
            try:
                label = int(row[0])
            except ValueError:
                raise ConfigError(f"{path}:{line}: label {row[0]!r} is not an integer") from None
            if not 1 <= label <= len(EMOTIONS):
                raise ConfigError(f"{path}:{line}: label {label} outside 1..{len(EMOTIONS)}")
            labels.append(label - 1)
            texts.append(row[1])
    if not labels:
        raise ConfigError(f"{path}: no data rows")
    return labels, texts
