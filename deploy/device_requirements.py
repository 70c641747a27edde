"""What a field device installs, one requirement a line: the runtime dependencies and the
`voice` extra's (the neural voice), read from pyproject.toml, where they are declared once.

    python deploy/device_requirements.py
"""

import tomllib
from pathlib import Path

pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
project = tomllib.loads(pyproject.read_text())["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["voice"]))
