"""The architecture, enforced: which package may import which, and what stays off start-up.

Every import in companion/ counts, including the ones inside functions (a lazy import is still
a dependency). The rule is the table below; each package's docstring says the same in words.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.run import REPO, run_cli

PACKAGE = REPO / "companion"
FOUNDATION = {"errors", "clock", "files", "emotions", "checksum", "__init__"}
BELOW = {
    "settings": set(),
    "store": {"settings"},
    "engine": {"settings", "store"},
    "model": {"settings", "store", "engine"},
    "voice": {"settings", "engine"},
    "service": {"settings", "store", "engine"},
    "research": {"settings", "store", "engine"},
    "ops": {"settings", "store", "engine", "model", "voice", "service"},
    "app": {"settings", "store", "engine", "model", "voice", "service", "research", "ops"},
    "cli": {"settings", "store", "engine", "model", "voice", "service", "research", "ops", "app"},
    "__main__": {"cli"},
}
# numpy is not here: sqlite-utils imports it whenever it is installed.
HEAVY = ("onnxruntime", "vosk", "pocketsphinx", "sounddevice", "matplotlib", "apscheduler",
         "tokenizers", "webrtcvad", "pyttsx3", "piper")  # fmt: skip


def component(dotted: str) -> str:
    """companion.store.db -> store; companion.clock -> clock; companion -> __init__."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports_of(source: str, module: str) -> set[str]:
    """Every companion module `source` (the text of `module`, dotted) imports."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "companion"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importing package
                pkg = module.split(".")[: -node.level]
                base = ".".join([*pkg, base] if base else pkg)
            if base.split(".")[0] != "companion":
                continue
            # `from companion import app` imports the module companion.app;
            # `from companion import __version__` an attribute of the package itself
            found |= {
                base if base != "companion" or a.name.startswith("__") else f"{base}.{a.name}"
                for a in node.names
            }
    return found


def violations(module: str, source: str) -> list[str]:
    own = component(module)
    allowed = FOUNDATION | {own} | BELOW.get(own, set())
    if own in FOUNDATION:
        allowed = FOUNDATION
    return sorted(
        f"{module} imports {target}"
        for target in imports_of(source, module)
        if component(target) not in allowed
    )


def modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).with_suffix("")
        out.append((".".join(rel.parts), path))
    return out


def test_every_package_is_in_the_rule_and_says_what_it_owns() -> None:
    for pkg in (p for p in PACKAGE.iterdir() if (p / "__init__.py").exists()):
        if pkg.name == "data":
            continue
        assert pkg.name in BELOW, f"{pkg.name}: add it to the layering rule"
        doc = ast.get_docstring(ast.parse((pkg / "__init__.py").read_text()))
        assert doc and "May import" in doc, f"{pkg.name}/__init__.py: say what it may import"


def test_no_forbidden_import() -> None:
    found = [v for name, path in modules() for v in violations(name, path.read_text())]
    assert found == []


@pytest.mark.parametrize(
    ("module", "line"),
    [
        ("companion.engine.session", "from companion.voice.listen import pick_backend"),
        ("companion.engine.session", "    from companion.model import empathy"),
        ("companion.engine.match", "from companion import research"),
        ("companion.store.db", "from companion.engine.protocol import Protocol"),
        ("companion.service.status", "from companion.app import open_home"),
        ("companion.research.report", "from ..model.encode import Encoder"),
        ("companion.clock", "import companion.store.db"),
    ],
)
def test_the_rule_catches_a_forbidden_import(module: str, line: str) -> None:
    source = f"def f():\n{line}\n" if line.startswith(" ") else f"{line}\n"
    assert violations(module, source), f"{line!r} in {module} should be refused"


def test_allowed_imports_pass() -> None:
    assert violations("companion.engine.session", "from companion.store.db import iso\n") == []
    assert violations("companion.cli", "from companion import app\n") == []


def test_modules_stay_small() -> None:
    big = {n: len(p.read_text().splitlines()) for n, p in modules()}
    assert {n: lines for n, lines in big.items() if lines > 450} == {}


# -- the store owns every write ---------------------------------------------------------------

SQL_WRITE = re.compile(
    r"\s*(INSERT\s+(OR\s+\w+\s+)?INTO|REPLACE\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM"
    r"|CREATE\s+(TEMP\w*\s+|UNIQUE\s+|VIRTUAL\s+)?(TABLE|INDEX|VIEW|TRIGGER)"
    r"|DROP\s+(TABLE|INDEX|VIEW|TRIGGER)|ALTER\s+TABLE)\b",
    re.IGNORECASE,
)
WRITE_METHODS = {"insert", "insert_all", "upsert", "upsert_all", "delete_where", "executescript",
                 "executemany"}  # fmt: skip


def _text(node: ast.AST) -> str | None:
    """A string literal's text; an f-string's with each {...} read as a name."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
    return None


def database_writes(source: str) -> list[str]:
    """Every database write in `source`, as "line N: what"; only companion/store may write.

    The rule, kept simple on purpose:
    - a string literal (or f-string) that begins as an SQL write statement does: INSERT [OR x]
      INTO, REPLACE INTO, UPDATE t SET, DELETE FROM, CREATE/DROP TABLE|INDEX|VIEW|TRIGGER,
      ALTER TABLE, in any case. The second word is required, so prose that starts with
      "Update the ..." or "Delete ..." (docstrings, messages) is not an SQL statement;
    - a call of a sqlite-utils write method (WRITE_METHODS), whatever the receiver;
      `.execute(` of a write statement is caught by the first point, as its string.
      `.update(` and `.delete(` are left out: dicts and sets have them too.
      `x.insert(0, item)`, with an int literal first, is a list's insert, not a table's.
    """
    found = []
    nodes = list(ast.walk(ast.parse(source)))
    # an f-string is judged whole: its literal parts are not looked at again on their own
    parts = {id(v) for n in nodes if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in nodes:
        text = None if id(node) in parts else _text(node)
        if text is not None and SQL_WRITE.match(text):
            found.append(f"line {node.lineno}: SQL {text.split()[0].upper()} {text[:40]!r}")
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name, first = node.func.attr, node.args[0] if node.args else None
        if name == "insert" and isinstance(first, ast.Constant) and type(first.value) is int:
            continue  # list.insert(index, item)
        if name in WRITE_METHODS:
            found.append(f"line {node.lineno}: .{name}(...)")
    return found


def test_only_the_store_writes_to_a_database() -> None:
    store = PACKAGE / "store"
    found = [
        f"{path.relative_to(REPO)} {write}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not path.is_relative_to(store)
        for write in database_writes(path.read_text())
    ]
    assert found == [], "move these writes into a companion/store function"


@pytest.mark.parametrize(
    "line",
    [
        'db.execute("INSERT INTO events (kind) VALUES (?)", [kind])',
        'db.execute("insert or replace into stories values (?)", [s])',
        'db.execute(f"UPDATE {table} SET status = ? WHERE id = ?", args)',
        'SQL = "DELETE FROM turns WHERE session_id = ?"',
        'db.execute("CREATE TABLE IF NOT EXISTS notes (x TEXT)")',
        'db.execute("  drop table notes")',
        'db.execute("ALTER TABLE sessions ADD COLUMN x")',
        'db["stories"].insert({"id": "a"})',
        'db["stories"].insert(row, pk="id")',
        'db["stories"].upsert_all(rows, pk="id")',
        'db["events"].delete_where("kind = ?", ["x"])',
        "db.executescript(script)",
        "db.conn.executemany(sql, rows)",
    ],
)
def test_the_write_rule_catches_a_write(line: str) -> None:
    assert database_writes(f"def record(db, rows):\n    {line}\n"), line


def test_the_write_rule_passes_reads_lists_and_prose() -> None:
    source = (
        '"""Update the participant\'s model from the ratings; delete nothing."""\n'
        'rows = db.execute("SELECT id FROM sessions WHERE status = ?", ["running"])\n'
        'names.insert(0, "first")\n'
        "seen.update(rows)\n"
        'raise ValueError("drop the file; update companion")\n'
    )
    assert database_writes(source) == []


def heavy_imports(*args: str, home: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "companion", *args],
        capture_output=True, text=True, cwd=REPO, timeout=120,
        env={"COMPANION_HOME": str(home), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    return {m.split(".")[0] for m in loaded if m.split(".")[0] in HEAVY}


def test_light_commands_import_no_heavy_native_module(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert run_cli("init", home=home).returncode == 0
    commands = (
        ["status"], ["status", "--json"], ["stories", "list"], ["--version"], ["init"],
        ["export", "--out", str(tmp_path / "export")], ["doctor", "--skip", "audio"],
    )  # fmt: skip
    for command in commands:
        assert heavy_imports(*command, home=home) == set(), command


def test_the_runtime_never_imports_the_build_tools() -> None:
    """companion/ never imports models/ (the build-time tools: torch, onnx; a wheel ships none of
    them), not even lazily inside a function."""

    def models_imports(source: str) -> list[str]:
        found = []
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                found += [a.name for a in node.names if a.name.split(".")[0] == "models"]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                found += [node.module] if (node.module or "").split(".")[0] == "models" else []
        return found

    for line in ("import models.quant", "from models import ackfit", "def f():\n    import models"):
        assert models_imports(line + "\n"), f"{line!r} should be found"
    assert models_imports("from companion.model import encode\nimport modelsx\n") == []
    found = {str(path.relative_to(REPO)): models_imports(path.read_text())
             for path in sorted(PACKAGE.rglob("*.py"))}  # fmt: skip
    assert {name: hits for name, hits in found.items() if hits} == {}
