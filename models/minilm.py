"""Build-time only: a small BERT encoder in plain torch for the all-MiniLM-L6-v2 weights.

Written here instead of depending on transformers so the build needs only torch + onnx, and so the
exported graph is exactly what we train (mean pooling + L2 norm + emotion head, one call).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import torch
from torch import nn

_DTYPES = {"F32": np.float32, "I64": np.int64}


def read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    """Parse a .safetensors file (8-byte header length, JSON header, raw little-endian data)."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    header.pop("__metadata__", None)
    base = 8 + n
    out = {}
    for name, info in header.items():
        start, end = info["data_offsets"]
        arr = np.frombuffer(raw[base + start : base + end], dtype=_DTYPES[info["dtype"]])
        out[name] = torch.from_numpy(arr.reshape(info["shape"]).copy())
    return out


class Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, inter: int, eps: float, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=eps)
        self.inter = nn.Linear(hidden, inter)
        self.out = nn.Linear(inter, hidden)
        self.out_norm = nn.LayerNorm(hidden, eps=eps)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape
        d = h // self.heads

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, t, self.heads, d).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        att = torch.matmul(q, k.transpose(-1, -2)) / (d**0.5) + bias
        ctx = torch.matmul(self.drop(att.softmax(-1)), v).transpose(1, 2).reshape(b, t, h)
        x = self.attn_norm(x + self.drop(self.attn_out(ctx)))
        ff = self.out(nn.functional.gelu(self.inter(x)))
        return self.out_norm(x + self.drop(ff))


class EmpathyModel(nn.Module):
    """MiniLM encoder -> (L2-normalised mean-pooled embedding, emotion logits)."""

    def __init__(self, config: dict, n_labels: int, dropout: float = 0.1) -> None:
        super().__init__()
        h = config["hidden_size"]
        eps = config["layer_norm_eps"]
        self.word = nn.Embedding(config["vocab_size"], h)
        self.position = nn.Embedding(config["max_position_embeddings"], h)
        self.token_type = nn.Embedding(config["type_vocab_size"], h)
        self.emb_norm = nn.LayerNorm(h, eps=eps)
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            Layer(h, config["num_attention_heads"], config["intermediate_size"], eps, dropout)
            for _ in range(config["num_hidden_layers"])
        )
        self.head_drop = nn.Dropout(dropout)
        self.head = nn.Linear(h, n_labels)

    def pooled(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Mean of the last hidden states over real tokens (not normalised)."""
        t = input_ids.shape[1]
        pos = torch.arange(t, device=input_ids.device).unsqueeze(0)
        x = self.word(input_ids) + self.position(pos) + self.token_type(torch.zeros_like(input_ids))
        x = self.drop(self.emb_norm(x))
        mask = attention_mask.to(x.dtype)
        # Unsqueeze -> Cast -> Sub -> Mul: the order onnxruntime's BERT attention fusion matches
        # (the same values as masking first and unsqueezing after, which it does not match).
        bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -1e4
        for layer in self.layers:
            x = layer(x, bias)
        m = mask.unsqueeze(-1)
        return (x * m).sum(1) / m.sum(1).clamp(min=1.0)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        pooled = self.pooled(input_ids, attention_mask)
        embedding = nn.functional.normalize(pooled, dim=-1)
        # The head reads the normalised embedding so the emotion logits and the semantic vector
        # come from the same representation (and the same scale at every text length).
        logits = self.head(self.head_drop(embedding) * 10.0)
        return embedding, logits


def load_pretrained(model_dir: Path, n_labels: int, dropout: float = 0.1) -> EmpathyModel:
    config = json.loads((model_dir / "config.json").read_text())
    model = EmpathyModel(config, n_labels, dropout)
    src = read_safetensors(model_dir / "model.safetensors")
    mapping = {
        "word.weight": "embeddings.word_embeddings.weight",
        "position.weight": "embeddings.position_embeddings.weight",
        "token_type.weight": "embeddings.token_type_embeddings.weight",
        "emb_norm.weight": "embeddings.LayerNorm.weight",
        "emb_norm.bias": "embeddings.LayerNorm.bias",
    }
    parts = {
        "query": "attention.self.query",
        "key": "attention.self.key",
        "value": "attention.self.value",
        "attn_out": "attention.output.dense",
        "attn_norm": "attention.output.LayerNorm",
        "inter": "intermediate.dense",
        "out": "output.dense",
        "out_norm": "output.LayerNorm",
    }
    for i in range(config["num_hidden_layers"]):
        for ours, theirs in parts.items():
            for p in ("weight", "bias"):
                mapping[f"layers.{i}.{ours}.{p}"] = f"encoder.layer.{i}.{theirs}.{p}"
    state = {ours: src[theirs] for ours, theirs in mapping.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) == {"head.weight", "head.bias"}, (missing, unexpected)
    return model
