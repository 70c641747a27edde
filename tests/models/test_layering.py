"""models/ in layers: shared graph helpers at the bottom, then the quantization, then the tools
(the table below; models/__init__.py says the same in words). A module imports its own layer or
lower ones, never a higher one, and no import circle; a tool imports no other tool. Every import
counts, the ones inside functions too, and so does a bare `import build` (which works only when
a tool runs as a script, from models/ itself)."""

from __future__ import annotations

import ast

import pytest

from tests.helpers.run import REPO

MODELS = REPO / "models"
SHARED, QUANTIZATION, TOOLS = 0, 1, 2
LAYERS = {
    "graph": SHARED, "minilm": SHARED, "ackfit": SHARED,
    "deterministic": QUANTIZATION, "quant": QUANTIZATION,
    "build": TOOLS, "optimize": TOOLS, "quant_sweep": TOOLS, "calibrate_ack": TOOLS,
    "fit_matching": TOOLS, "confusions": TOOLS, "bank_cache": TOOLS,
}  # fmt: skip


def models_imported(source: str, known: set[str]) -> tuple[set[str], set[str]]:
    """(modules of models/ that `source` imports, those of them imported by a bare name);
    `known` are the module names in models/."""
    found, bare = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "models" and len(parts) > 1:
                    found.add(parts[1])
                elif parts[0] in known:
                    found.add(parts[0])
                    bare.add(parts[0])
        elif isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")
            if node.level or parts[0] == "models":  # relative imports are within models/
                inner = parts[1:] if parts[0] == "models" else [p for p in parts if p]
                if inner:
                    found.add(inner[0])
                else:  # `from models import quant`: the module; other names: the package's own
                    found |= {a.name for a in node.names if a.name in known}
            elif parts[0] in known:
                found.add(parts[0])
                bare.add(parts[0])
    return found, bare


def problems(sources: dict[str, str], layers: dict[str, int]) -> list[str]:
    """Every breach of the layering by `sources` (module name -> text)."""
    out = [f"{name}: add it to a layer" for name in sorted(set(sources) - set(layers))]
    edges: dict[str, set[str]] = {}
    for name, source in sorted(sources.items()):
        found, bare = models_imported(source, set(sources))
        edges[name] = found - {name}
        out += [f"{name} imports {t} by its bare name: write `from models import {t}`"
                for t in sorted(bare)]  # fmt: skip
        for target in sorted(edges[name]):
            if name not in layers or target not in layers:
                continue
            if layers[target] > layers[name]:
                out.append(f"{name} (layer {layers[name]}) imports {target} (layer "
                           f"{layers[target]}), a higher one")  # fmt: skip
            elif layers[target] == layers[name] == max(layers.values()):
                out.append(f"tool {name} imports tool {target}")
    return out + [" -> ".join(c) for c in circles(edges)]


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Each import circle once, as the path that closes it (a -> b -> a)."""
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()

    def walk(path: list[str]) -> None:
        for nxt in sorted(edges.get(path[-1], ())):
            if nxt in path:
                loop = path[path.index(nxt) :]
                if frozenset(loop) not in seen:
                    seen.add(frozenset(loop))
                    found.append([*loop, nxt])
            else:
                walk([*path, nxt])

    for start in sorted(edges):
        walk([start])
    return found


def sources() -> dict[str, str]:
    return {p.stem: p.read_text() for p in sorted(MODELS.glob("*.py")) if p.stem != "__init__"}


def test_models_keep_their_layers() -> None:
    assert problems(sources(), LAYERS) == []


def test_every_layered_module_exists_and_the_package_says_its_layer() -> None:
    assert set(LAYERS) == set(sources())
    doc = ast.get_docstring(ast.parse((MODELS / "__init__.py").read_text()))
    assert doc, "models/__init__.py: say the layers"
    for name in LAYERS:
        assert f"`{name}`" in doc, f"models/__init__.py: name `{name}` in its layer"


SYNTHETIC = {"low": SHARED, "mid": QUANTIZATION, "mid2": QUANTIZATION, "top": TOOLS,
             "top2": TOOLS}  # fmt: skip


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"low": "def f():\n    from models.mid import x\n", "mid": ""},
         "low (layer 0) imports mid (layer 1), a higher one"),
        ({"mid": "from models import mid2\n", "mid2": "from models.mid import y\n"},
         "mid -> mid2 -> mid"),
        ({"mid": "from . import mid2\n", "mid2": "import models.mid\n"}, "mid -> mid2 -> mid"),
        ({"top": "import top2\n", "top2": ""},
         "top imports top2 by its bare name: write `from models import top2`"),
        ({"top": "from models import top2\n", "top2": ""}, "tool top imports tool top2"),
        ({"new": ""}, "new: add it to a layer"),
    ],
)
def test_the_rule_catches_a_breach(files: dict[str, str], expected: str) -> None:
    assert expected in problems(files, SYNTHETIC)


def test_imports_down_the_layers_pass() -> None:
    files = {"low": "import numpy\n", "mid": "from models.low import a\n",
             "mid2": "from models import mid, LAYERS\n", "top": "from models import low, mid2\n",
             "top2": "from companion.emotions import EMOTIONS\n"}  # fmt: skip
    assert problems(files, SYNTHETIC) == []


def test_one_function_is_called_quantize() -> None:
    """`quantize` is the shipped scheme (models/quant.py); every variant is named for what it
    does, so a caller cannot take one for the other."""
    defined = [name for name, source in sources().items() for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.FunctionDef) and node.name == "quantize"]  # fmt: skip
    assert defined == ["quant"]
