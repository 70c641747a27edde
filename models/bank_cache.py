"""Write the shipped story bank's encodings for the shipped model (runtime code only, no torch).

Run after changing companion/data/stories.jsonl or the model:
    .venv/bin/python models/bank_cache.py
tests/model/test_empathy.py checks the file matches the stories and the model.
"""

import sys
from pathlib import Path

# This checkout's package and model, not whichever one the venv's editable install points at.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from companion.engine.stories import bundled_stories  # noqa: E402
from companion.model.empathy import bank_cache_path, write_bank_cache  # noqa: E402
from companion.model.encode import Encoder  # noqa: E402

if __name__ == "__main__":
    encoder = Encoder.load()
    path = bank_cache_path(encoder.version)
    write_bank_cache(encoder, bundled_stories(), path)
    print(f"wrote {path} ({path.stat().st_size} bytes)")
