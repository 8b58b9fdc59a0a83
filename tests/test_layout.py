"""The package's layout: imports flow one way (docs/ARCHITECTURE.md) and form no cycle.

The import graph is read from the source with ``ast`` (every ``import helpers...`` and
``from helpers... import ...``, including the ones inside functions: a lazy import is still a
dependency). Run ``pytest tests/test_layout.py -q`` to check it; a failure names the edge.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "helpers"

# Lower layers never import higher ones (docs/ARCHITECTURE.md). A module not listed here
# fails the test, so a new module has to be placed in the picture.
LAYERS: list[tuple[str, ...]] = [
    ("helpers", "helpers.errors", "helpers.paths"),
    ("helpers.tables", "helpers.hashing", "helpers.progress", "helpers.stats", "helpers.hub", "helpers.runs",
     "helpers.classifiers", "helpers.distributed"),
    ("helpers.datasets", "helpers.published"),
    ("helpers.models",),
    ("helpers.cache", "helpers.lm"),
    ("helpers.metrics",),
    ("helpers.runner", "helpers.training"),
    ("helpers.plots", "helpers.report", "helpers.chapters", "helpers.card", "helpers.card_page"),
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


# ----------------------------------------------------------------------------- the "never" rules of docs/ARCHITECTURE.md

ARCHITECTURE = PACKAGE.parent / "docs" / "ARCHITECTURE.md"
_RULE = re.compile(r"^\|\s*`(helpers[\w.]*)`\s*\|\s*(.+?)\s*\|")
_FILE_CALLS = {"open", "read_csv", "read_json", "read_parquet", "read_table", "read_text", "read_bytes",
               "write_text", "write_bytes", "to_csv", "to_parquet", "savefig", "load", "save"}


def _section(title: str) -> list[str]:
    lines = ARCHITECTURE.read_text().splitlines()
    start = lines.index(title)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start + 1:end]


def never_import_rules() -> dict[str, list[str]]:
    """``{module: [modules it never imports]}`` from the table under "## Never imports" of
    docs/ARCHITECTURE.md (each rule covers the module and its submodules)."""
    rules = {}
    for line in _section("## Never imports"):
        m = _RULE.match(line)
        if m:
            rules[m[1]] = re.findall(r"`(helpers[\w.]*)`", m[2])
    return rules


def never_touch_files() -> list[str]:
    """The modules listed under "## Never read or write files" of docs/ARCHITECTURE.md."""
    return [m[1] for line in _section("## Never read or write files") if (m := _RULE.match(line))]


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def broken_rules(graph: dict[str, set[str]], rules: dict[str, list[str]]) -> list[str]:
    return [f"{m} imports {t} (docs/ARCHITECTURE.md: {owner} never imports {banned})"
            for owner, banned_list in rules.items() for banned in banned_list
            for m, targets in sorted(graph.items()) if _within(m, owner)
            for t in sorted(targets) if _within(t, banned) and not _within(t, owner)]


def _file_calls(path: Path) -> list[str]:
    """Calls in ``path`` that open, read or write a file (``open(...)``, ``pd.read_csv(...)``,
    ``p.write_text(...)``, ``fig.savefig(...)``, ``torch.load(...)`` ...), as ``line: name``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in _FILE_CALLS:
                where = path.relative_to(PACKAGE.parent) if path.is_relative_to(PACKAGE.parent) else path.name
                found.append(f"{where}:{node.lineno}: {name}(...)")
    return found


def test_the_never_import_rules_of_the_architecture_hold():
    rules = never_import_rules()
    assert len(rules) >= 8, "docs/ARCHITECTURE.md lost its '## Never imports' table"
    graph = _graph()
    for owner in rules:
        assert any(_within(m, owner) for m in graph), f"docs/ARCHITECTURE.md names {owner}, which does not exist"
    broken = broken_rules(graph, rules)
    assert not broken, "\n".join(broken)


def test_modules_that_never_touch_files_do_not():
    owners = never_touch_files()
    assert owners, "docs/ARCHITECTURE.md lost its '## Never read or write files' table"
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    calls = [c for m, p in sorted(files.items()) if any(_within(m, o) for o in owners) for c in _file_calls(p)]
    assert not calls, "file I/O where docs/ARCHITECTURE.md says never:\n" + "\n".join(calls)


def test_the_rule_checkers_find_what_they_look_for(tmp_path):
    graph = {"helpers.metrics.x": {"helpers.models.loading"}, "helpers.models.loading": set()}
    assert broken_rules(graph, {"helpers.metrics": ["helpers.models"]}) == [
        "helpers.metrics.x imports helpers.models.loading (docs/ARCHITECTURE.md: helpers.metrics never imports "
        "helpers.models)"]
    assert broken_rules(graph, {"helpers.metrics": ["helpers.runner"]}) == []
    f = PACKAGE / "metrics" / "safety.py"                         # a real module of the package: no file I/O
    assert _file_calls(f) == []
    bad = tmp_path / "bad.py"
    bad.write_text("import pandas as pd\ndef f(p):\n    return pd.read_csv(p), open(p).read()\n")
    assert [c.split(": ", 1)[1] for c in _file_calls(bad)] == ["read_csv(...)", "open(...)"]

