"""The package's layout: imports flow one way (docs/ARCHITECTURE.md) and form no cycle.

The import graph is read from the source with ``ast`` (every ``import helpers...`` and
``from helpers... import ...``, including the ones inside functions: a lazy import is still a
dependency). Run ``pytest tests/test_layout.py -q`` to check it; a failure names the edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "helpers"

# Lower layers never import higher ones (docs/ARCHITECTURE.md). A module not listed here
# fails the test, so a new module has to be placed in the picture.
LAYERS: list[tuple[str, ...]] = [
    ("helpers", "helpers.errors", "helpers.paths"),
    ("helpers.tables", "helpers.hashing", "helpers.progress", "helpers.stats", "helpers.hub", "helpers.runs"),
    ("helpers.datasets", "helpers.published"),
    ("helpers.models",),
    ("helpers.cache", "helpers.lm"),
    ("helpers.metrics",),
    ("helpers.runner", "helpers.training"),
    ("helpers.plots", "helpers.report", "helpers.chapters"),
    ("helpers.book", "helpers.cli", "helpers.__main__"),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _layer(module: str) -> int:
    best, depth = None, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and p.count(".") > depth and (p != "helpers" or module == p):
                best, depth = i, p.count(".")
    if best is None:
        raise AssertionError(f"{module} is in no layer of tests/test_layout.py: place it (docs/ARCHITECTURE.md)")
    return best


def _imports(path: Path, module: str, known: set[str]) -> set[str]:
    """helpers modules imported by ``path`` (resolved to the longest known module name)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for n in names:
            if n == "helpers" or n.startswith("helpers."):
                while n not in known and "." in n:
                    n = n.rpartition(".")[0]
                if n in known and n != module:
                    targets.add(n)
    return targets


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(files)
    return {m: _imports(p, m, known) for m, p in files.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (found := visit(m)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_import_graph_has_no_cycle():
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_imports_flow_downwards_only():
    upward = [f"{m} (layer {_layer(m)}) imports {t} (layer {_layer(t)})"
              for m, targets in sorted(_graph().items()) for t in sorted(targets)
              if _layer(t) > _layer(m) and not t.startswith(m + ".")]
    assert not upward, "imports against the layering of docs/ARCHITECTURE.md:\n" + "\n".join(upward)


def test_the_checker_finds_a_cycle_and_an_upward_import():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    assert _layer("helpers.errors") < _layer("helpers.cli")
    assert _layer("helpers.lm.scoring") == _layer("helpers.cache")
    with pytest.raises(AssertionError, match="no layer"):
        _layer("helpers.somewhere_new")
