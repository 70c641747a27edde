"""The one CPU description every benchmark prints with its numbers: model, architecture, cores
and the features int8 speed depends on (x86 AVX2 / VNNI, ARM dot product)."""

from __future__ import annotations

import os
import platform
from pathlib import Path

INT8_FEATURES = {"AVX2": "avx2", "AVX512-VNNI": "avx512_vnni", "AVX-VNNI": "avx_vnni",
                 "ARM dotprod": "asimddp"}  # fmt: skip


def cpu_line() -> str:
    model, flags = "", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model") and not model:
                model = value.strip()
            if key.strip() in ("flags", "Features") and not flags:
                flags = set(value.split())
    except OSError:
        pass
    have = ", ".join(f"{k} {'yes' if v in flags else 'no'}" for k, v in INT8_FEATURES.items())
    return (f"CPU: {model or platform.processor() or 'unknown'} ({platform.machine()}), "
            f"{os.cpu_count()} cores; int8 features: {have}")  # fmt: skip
