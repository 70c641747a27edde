"""Put a candidate model into a copy of the source tree, in place of the shipped one.

    python swap_model.py DIR/companion-empathy-N.onnx SRC

Copies the .onnx, its .onnx.json sidecar and the tokenizer the sidecar names into SRC/models/
and makes SRC/pyproject.toml ship those files in the wheel (the old model's lines go). The
caller removes the old model files and recomputes the bank encodings (models/bank_cache.py).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

SECTION = "[tool.hatch.build.targets.wheel.force-include]\n"


def swap(onnx: Path, src: Path) -> list[str]:
    sidecar = onnx.with_name(onnx.name + ".json")
    try:
        tokenizer = onnx.with_name(json.loads(sidecar.read_text())["tokenizer"]["file"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        sys.exit(f"swap_model: {sidecar}: no tokenizer file named ({exc})")
    files = [onnx, sidecar, tokenizer]
    for f in files:
        if not f.is_file():
            sys.exit(f"swap_model: {f} not found")
        shutil.copy(f, src / "models" / f.name)
    pyproject = src / "pyproject.toml"
    text = pyproject.read_text()
    if SECTION not in text:
        sys.exit(f"swap_model: {pyproject} has no {SECTION.strip()} section")
    text = re.sub(r'"models/companion-empathy-[^"]*" = "[^"]*"\n', "", text)
    lines = "".join(f'"models/{f.name}" = "companion/_models/{f.name}"\n' for f in files)
    pyproject.write_text(text.replace(SECTION, SECTION + lines))
    return [f.name for f in files]


if __name__ == "__main__":
    print("swap_model:", " ".join(swap(Path(sys.argv[1]), Path(sys.argv[2]))))
