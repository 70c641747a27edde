"""The recogniser's adaptation to a device's room and microphone, kept between sessions.

pocketsphinx normalises each feature by a running cepstral mean. A fresh process starts
from a generic prior and mishears its first answers until the mean has adapted, which is
every morning's first question. The mean a session ends with is saved in the home (0600)
and the next session starts from it. Backends without such state (vosk) are left alone.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from companion.files import write_private

log = logging.getLogger(__name__)

ADAPTATION_FILE = "asr_adaptation.json"


def restore(home: Path | None, recognizers: Any) -> bool:
    """Start `recognizers` from the adaptation saved in `home`; True if it was used."""
    if home is None or not hasattr(recognizers, "adapt"):
        return False
    path = home / ADAPTATION_FILE
    if not path.exists():
        return False
    try:
        saved = json.loads(path.read_text())
        if saved.get("backend") == recognizers.name and recognizers.adapt(str(saved["state"])):
            log.info("recogniser starts from this device's saved adaptation")
            return True
        log.warning("%s: not usable for %s; starting from the prior", path, recognizers.name)
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        log.warning("%s: unreadable (%s); starting from the prior", path, exc)
    return False


def save(home: Path | None, recognizers: Any) -> None:
    if home is None or not hasattr(recognizers, "adaptation"):
        return
    path = home / ADAPTATION_FILE
    try:
        write_private(path, json.dumps({"backend": recognizers.name,
                                        "state": recognizers.adaptation}))  # fmt: skip
    except OSError as exc:  # never lose a session's end over it
        log.warning("could not save the recogniser adaptation to %s: %s", path, exc)
