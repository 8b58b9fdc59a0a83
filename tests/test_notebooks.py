"""Every chapter notebook is the story, not the code: a papermill parameters cell, a few calls
into its tested module (helpers/chapters/chNN_*.py), prose, and exercises at the end; the
chapter template (notebooks/templates/NN_template.ipynb) is one too. No cell rebinds a
parameter, and a parameter the chapter does not declare is one clear error."""

from __future__ import annotations

import ast
import importlib
import json

import pytest

from helpers import book
from helpers.errors import InputError

CHAPTERS = {"01_safety_scores": "ch01_safety", "02_correlations": "ch02_correlations",
            "03_architecture": "ch03_architecture", "04_distillation": "ch04_distillation",
            "05_tinybert_bias_suite": "ch05_tinybert", "06_intrinsic_extrinsic": "ch06_intrinsic_extrinsic",
            "07_toxicity_probing": "ch07_probing", "08_report_cards": "ch08_report_cards"}
TEMPLATE = book.NOTEBOOKS_DIR / "templates" / "NN_template.ipynb"
#: Every notebook written to the contract: the chapters and the template, with their modules.
NOTEBOOKS = {book.NOTEBOOKS_DIR / f"{stem}.ipynb": name for stem, name in CHAPTERS.items()} | {TEMPLATE: "template"}


def _code_lines(cell) -> list[str]:
    return [ln for ln in "".join(cell["source"]).splitlines() if ln.strip() and not ln.strip().startswith("#")]


def test_every_notebook_has_a_chapter_module():
    assert sorted(p.stem for p in book.notebooks()) == sorted(CHAPTERS)


def test_the_template_is_no_chapter_of_the_book():
    assert TEMPLATE.is_file() and TEMPLATE not in book.notebooks()


@pytest.mark.parametrize("path", sorted(NOTEBOOKS), ids=lambda p: p.stem)
def test_notebook_is_the_story(path):
    """<= 10 lines of code per cell (the parameters cell: one line per parameter), <= 40 in all,
    no function or class defined in the notebook, the parameters cell declares exactly the
    module's parameters and defaults with comments within 88 columns, the chapter starts with
    the module's ``start`` and ends with two or three exercises whose expected answer is a
    collapsed note."""
    module = importlib.import_module(f"helpers.chapters.{NOTEBOOKS[path]}")
    nb = json.loads(path.read_text())
    cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    params = next(c for c in cells if "parameters" in c["metadata"].get("tags", []))
    assert len(_code_lines(params)) == len(module.PARAMETERS)              # one line per parameter
    assert all(len(_code_lines(c)) <= 10 for c in cells if c is not params)
    assert sum(len(_code_lines(c)) for c in cells) <= 40
    for c in cells:
        source = "\n".join(ln for ln in "".join(c["source"]).splitlines() if not ln.startswith("%"))
        assert not any(isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Lambda)) for n in ast.walk(ast.parse(source)))
    assert max(len(ln) for c in nb["cells"] if c["cell_type"] == "code"
               for ln in "".join(c["source"]).splitlines()) <= 88
    declared = book.declared_parameters(path)
    assert tuple(declared) == module.PARAMETERS
    assert {k: ast.literal_eval(v) for k, v in declared.items()} == module.DEFAULTS   # no drift
    assert "ch.start(globals())" in "".join(cells[1]["source"])
    # the page opens with the Findings: the parameters and the values the page ran with are folded, each
    # behind a toggle that says what it holds
    for cell in (params, cells[1]):
        assert "hide-cell" in cell["metadata"]["tags"] and cell["metadata"]["mystnb"]["code_prompt_show"].startswith(
            "Show the ")
    last = "".join(nb["cells"][-1]["source"])
    assert last.startswith("## Exercises")
    assert 2 <= last.count("```{admonition} Expected") == last.count(":class: dropdown") <= 3


def _bound(source: str) -> set[str]:
    """Every name a cell's code binds or deletes: assignments of any kind, loop and ``with``
    targets, imports, function and class names (IPython magics left out)."""
    tree = ast.parse("\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


@pytest.mark.parametrize("path", sorted(NOTEBOOKS), ids=lambda p: p.stem)
def test_no_cell_rebinds_a_parameter(path):
    """Running the parameters and start cells again must give the same chapter: no code cell after
    the parameters cell binds a name it assigns (notebook 01 bound ``toxigen``, the data set's name,
    to its scores, so ``ch.start(globals())`` then passed the scores as the data set)."""
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    at = next(i for i, c in enumerate(cells) if "parameters" in c["metadata"].get("tags", []))
    parameters = _bound("".join(cells[at]["source"]))
    assert parameters == set(book.declared_parameters(path))
    for cell in cells[at + 1:]:
        rebound = _bound("".join(cell["source"])) & parameters
        assert not rebound, f"{path.name}: a cell rebinds parameter(s) {sorted(rebound)}: {''.join(cell['source'])}"


def test_rebinding_is_found_by_the_parser():
    assert _bound("x = 1\nfor y, z in w: pass\nwith f() as v: pass\nimport a.b as c, d.e\ndel q\n%time u = 2") == \
        {"x", "y", "z", "v", "c", "d", "q"}


@pytest.mark.parametrize("name", sorted(NOTEBOOKS.values()))
def test_start_rejects_an_unknown_parameter_in_one_line(name, private_dirs):
    """A parameter injected by papermill that the chapter does not declare (a plain value in the
    notebook's globals) is one InputError naming it and the declared one it is closest to; IPython's
    names, modules, functions, classes, private names and the start cell's own ``params`` are not
    parameters."""
    import types

    module = importlib.import_module(f"helpers.chapters.{name}")
    misspelled = module.PARAMETERS[0][:-1] + "x" + module.PARAMETERS[0][-1]
    namespace = dict(module.DEFAULTS) | {misspelled: module.DEFAULTS[module.PARAMETERS[0]]}
    with pytest.raises(InputError, match=rf"unknown parameter '{misspelled}' \(did you mean "
                                         rf"'{module.PARAMETERS[0]}'\?\)") as err:
        module.start(namespace)
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="'colour_scheme'"):
        module.start(dict(module.DEFAULTS) | {"colour_scheme": "dark", "_private": 1})
    harmless = {"In": [""], "Out": {}, "exit": None, "quit": None, "get_ipython": print, "_": 3, "__name__": "__main__",
                "ch": module, "pd": types.ModuleType("pandas"), "display": print, "Markdown": str,
                "params": dict(module.DEFAULTS), "parameters": object()}
    params, _ = module.start(dict(module.DEFAULTS) | harmless)
    assert list(params) == list(module.PARAMETERS)


def test_chapter_01_states_the_upstream_compatible_value():
    nb = json.loads((book.NOTEBOOKS_DIR / "01_safety_scores.ipynb").read_text())
    md = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "0.259990915" in md and "--upstream-compat" in md and "`upstream_compat = True`" in md


@pytest.mark.parametrize("profile", ["default", "ci", "paper"])
def test_every_profile_sets_parameters_each_chapter_accepts(profile, private_dirs):
    """book/profiles.yml's overrides are declared by the notebooks and pass each chapter's own
    parameter checks (``start``; no model is loaded), so a profile cannot fail at its first cell."""
    for path, name in NOTEBOOKS.items():
        module = importlib.import_module(f"helpers.chapters.{name}")
        overrides = book.parameters_for(path, profile)
        params, _ = module.start(dict(module.DEFAULTS) | overrides)
        assert set(overrides) <= set(params), path.stem
