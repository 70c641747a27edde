"""No Python file of the repository changes sys.path: the editable install puts the repository
root on it, so the tests, the benchmarks, the models/ tools and deploy's scripts import by
package (`from models import quant`, `from tests.helpers.run import run_cli`), run by pytest or
as scripts alike."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers.run import REPO

MUTATORS = {"insert", "append", "extend", "remove", "pop", "clear", "reverse", "sort",
            "__setitem__", "__delitem__", "__iadd__"}  # fmt: skip


def _is_sys_path(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "path"
            and isinstance(node.value, ast.Name) and node.value.id == "sys")  # fmt: skip


def _changes(target: ast.AST) -> bool:
    """`target` (of an assignment or del) is sys.path itself or a part of it."""
    return _is_sys_path(target) or (isinstance(target, ast.Subscript)
                                    and _is_sys_path(target.value))  # fmt: skip


def path_edits(source: str) -> list[int]:
    """The lines of `source` that change sys.path (or import it bare, where edits hide)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign):
            hit = any(_changes(t) for t in node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            hit = _changes(node.target)
        elif isinstance(node, ast.Delete):
            hit = any(_changes(t) for t in node.targets)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            hit = (func.attr in MUTATORS and _is_sys_path(func.value)) or (
                func.attr == "addsitedir" and isinstance(func.value, ast.Name)
                and func.value.id == "site")  # fmt: skip
        elif isinstance(node, ast.ImportFrom):
            hit = node.module == "sys" and any(a.name == "path" for a in node.names)
        else:
            hit = False
        if hit:
            lines.append(node.lineno)
    return sorted(lines)


def python_files() -> list[Path]:
    """The repository's Python files, not the virtual environment's or other hidden folders'."""
    return [p for p in sorted(REPO.rglob("*.py"))
            if not any(part.startswith(".") for part in p.relative_to(REPO).parts)]  # fmt: skip


def test_no_file_changes_sys_path() -> None:
    files = python_files()
    assert REPO / "models" / "build.py" in files and REPO / "tests" / "bench" in {
        p.parent for p in files}  # fmt: skip
    found = {str(p.relative_to(REPO)): path_edits(p.read_text()) for p in files}
    assert {name: lines for name, lines in found.items() if lines} == {}


@pytest.mark.parametrize(
    "line",
    [
        "sys.path.insert(0, str(REPO))",
        "sys.path[:0] = [str(REPO), 'models']",
        "sys.path = ['models']",
        "sys.path += ['models']",
        "sys.path.append('models')",
        "del sys.path[0]",
        "from sys import path",
        "site.addsitedir('models')",
        "def f():\n    if True:\n        sys.path.extend(['models'])",
    ],
)
def test_the_check_finds_an_edit(line: str) -> None:
    assert path_edits(f"import site\nimport sys\n{line}\n") != []


def test_reading_sys_path_is_no_edit() -> None:
    source = ("import sys\nprint(sys.path)\nfirst = list(sys.path)[0]\npath = []\n"
              "path.insert(0, 'x')\nsys.stdout.write('x')\n")  # fmt: skip
    assert path_edits(source) == []
