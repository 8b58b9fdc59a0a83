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
    ("helpers.measures", "helpers.plots", "helpers.report"),
    ("helpers.card",),
    ("helpers.chapters",),
    ("helpers.book", "helpers.cli", "helpers.docs", "helpers.__main__", "helpers.rehearsal"),
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
        if isinstance(node, ast.Call) and _dotted(node.func) in ("importlib.import_module", "import_module") and node.args:
            names = [_constant_prefix(node.args[0]).rstrip(".")]       # importlib.import_module(f"helpers.x.{name}")
        for n in names:
            if n == "helpers" or n.startswith("helpers."):
                while n not in known and "." in n:
                    n = n.rpartition(".")[0]
                if n in known and n != module:
                    targets.add(n)
    return targets


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` of a name or attribute chain, else ""."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _constant_prefix(node: ast.AST) -> str:
    """The text a string argument starts with: a constant, or an f-string's leading constant part."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    return ""


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


def test_an_importlib_import_is_an_edge_of_the_graph(tmp_path):
    mod = tmp_path / "m.py"
    mod.write_text("import importlib\ndef f(name):\n    return importlib.import_module(f'helpers.chapters.{name}')\n")
    assert _imports(mod, "helpers.book", {"helpers.book", "helpers.chapters"}) == {"helpers.chapters"}
    assert "helpers.chapters" in _graph()["helpers.book"]        # book reaches the chapters this way


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



# ----------------------------------------------------------------------------- rules read from the source
# Each test below holds one sentence of docs/ARCHITECTURE.md ("Rules checked on the source").

def _source_calls(path: Path):
    """``(line, callee, call node)`` of every call in ``path`` (callee: ``os.replace``, ``x.assign``
    as written, the last attribute for a method of an expression)."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call):
            f = node.func
            yield node.lineno, _dotted(f) or (f.attr if isinstance(f, ast.Attribute) else ""), node


def _package_files():
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def atomic_replacements(path: Path) -> list[str]:
    """``os.replace`` / ``os.rename`` / ``shutil.move`` and ``path.replace(target)`` calls: a file
    or folder put into place, which only ``tables.atomic_path`` does."""
    found = []
    for line, name, node in _source_calls(path):
        last = name.rpartition(".")[2]
        if name in ("os.replace", "os.rename", "os.renames", "shutil.move") or (
                last == "replace" and isinstance(node.func, ast.Attribute) and len(node.args) == 1
                and not node.keywords and not isinstance(node.args[0], (ast.Constant, ast.Dict))):
            found.append(f"{path.name}:{line}: {name}(...)")
    return found


def test_the_one_atomic_write_is_tables_atomic_path():
    found = [c for m, p in sorted(_package_files().items()) if m != "helpers.tables" for c in atomic_replacements(p)]
    assert not found, "a file or folder put into place outside helpers.tables.atomic_path:\n" + "\n".join(found)


CACHE_CALLS = ("cached_result", "memoize", "cached_rows", "cached_per_row", "cached_scores", "cached_steps",
               "_cached_vectors", "cached_vectors")
_CHAPTER_WORD = re.compile(r"(^|[-_ /.])(ch\d\d|chapter|card)([-_ /.]|$)", re.IGNORECASE)


def cache_keys_naming_a_caller(path: Path) -> list[str]:
    """String constants passed to a cache call that name a chapter or the card."""
    return [f"{path.name}:{line}: {name}(... {c.value!r} ...)" for line, name, node in _source_calls(path)
            if name.rpartition(".")[2] in CACHE_CALLS
            for a in [*node.args, *(k.value for k in node.keywords)] for c in ast.walk(a)
            if isinstance(c, ast.Constant) and isinstance(c.value, str) and _CHAPTER_WORD.search(c.value)]


def test_cache_keys_never_name_a_chapter_or_the_card():
    found = [c for p in _package_files().values() for c in cache_keys_naming_a_caller(p)]
    assert not found, "cache keys must name what changes the result, not who asks:\n" + "\n".join(found)


def display_labels_added(path: Path) -> list[str]:
    """Places that add a ``group_label`` column: ``df["group_label"] = ...``, ``.assign(group_label=...)``,
    ``.insert(i, "group_label", ...)``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant)
                                                and t.slice.value == "group_label" for t in node.targets):
            found.append(f"{path.name}:{node.lineno}: [\"group_label\"] = ...")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "assign" and any(k.arg == "group_label" for k in node.keywords):
                found.append(f"{path.name}:{node.lineno}: assign(group_label=...)")
            if node.func.attr == "insert" and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                    and node.args[1].value == "group_label":
                found.append(f"{path.name}:{node.lineno}: insert(..., \"group_label\", ...)")
    return found


def test_display_labels_come_only_from_datasets_with_group_labels():
    found = [c for m, p in sorted(_package_files().items()) if m != "helpers.datasets.groups"
             for c in display_labels_added(p)]
    assert not found, "group labels added outside helpers.datasets.with_group_labels:\n" + "\n".join(found)


LOADING_CALLS = ("from_pretrained", "pipeline", "Sonar", "SentenceTransformer", "load_model")


def test_metrics_load_no_model():
    files = _package_files()
    found = [f"{p.name}:{line}: {name}(...)" for m, p in sorted(files.items()) if _within(m, "helpers.metrics")
             for line, name, _ in _source_calls(p) if name.rpartition(".")[2] in LOADING_CALLS]
    assert not found, "helpers.metrics loads a model (loading belongs to helpers.models):\n" + "\n".join(found)


def test_the_source_checkers_find_what_they_look_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os, shutil\n"
                   "def f(tmp, path, df, c):\n"
                   "    os.replace(tmp, path); tmp.replace(path); shutil.move(tmp, path)\n"
                   "    'a'.replace('a', 'b'); df.replace({1: 2}); df.replace(1, 2)\n"
                   "    c.cached_result(None, 'ch05-seat', {}); c.memoize('safety', {'v': 'card-x'})\n"
                   "    c.cached_result(None, 'seat', {'model': 'm'})\n"
                   "    df['group_label'] = 1; df.assign(group_label=2); df.insert(1, 'group_label', 3)\n")
    assert [x.split(": ", 1)[1] for x in atomic_replacements(bad)] == ["os.replace(...)", "tmp.replace(...)",
                                                                       "shutil.move(...)"]
    assert [x.split("'")[1] for x in cache_keys_naming_a_caller(bad)] == ["ch05-seat", "card-x"]
    assert len(display_labels_added(bad)) == 3


def test_only_the_book_imports_a_chapter():
    graph = _graph()
    found = [f"{m} imports {t}" for m, targets in sorted(graph.items()) for t in sorted(targets)
             if _within(t, "helpers.chapters") and not (_within(m, "helpers.chapters") or m == "helpers.book")]
    assert not found, "a chapter imported outside the chapters and helpers.book:\n" + "\n".join(found)


#: The CLI's functions that are not a subcommand's handler: the parser and its parts, argument types,
#: what a handler needs from the arguments, and the signal handling around a run.
CLI_HELPER_LINES = 15


def test_the_cli_parses_and_dispatches_only():
    tree = ast.parse((PACKAGE / "cli.py").read_text())
    imported = {a.name.split(".")[0] for n in tree.body if isinstance(n, ast.Import) for a in n.names} | {
        (n.module or "").split(".")[0] for n in tree.body if isinstance(n, ast.ImportFrom)}
    assert not imported & {"pandas", "numpy", "torch", "transformers"}, "helpers/cli.py holds table or model logic"
    long = [f"{n.name}: {n.end_lineno - n.lineno + 1} lines" for n in tree.body
            if isinstance(n, ast.FunctionDef) and not n.name.startswith("_cmd_") and n.name not in ("build_parser", "main")
            and n.end_lineno - n.lineno + 1 > CLI_HELPER_LINES]
    assert not long, f"helpers/cli.py helpers longer than {CLI_HELPER_LINES} lines (move the logic to its module):\n" + \
        "\n".join(long)
