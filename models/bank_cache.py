"""Write the shipped story bank's encodings for the shipped model (runtime code only, no torch).

Run after changing companion/data/stories.jsonl or the model:
    .venv/bin/python models/bank_cache.py
tests/model/test_empathy.py checks the file matches the stories and the model.
"""

import argparse

from companion.engine.stories import bundled_stories
from companion.model.empathy import bank_cache_path, write_bank_cache
from companion.model.encode import Encoder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.parse_args()  # no options: --help says what it writes
    encoder = Encoder.load()
    path = bank_cache_path(encoder.version)
    write_bank_cache(encoder, bundled_stories(), path)
    print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
