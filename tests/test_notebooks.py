"""Every chapter notebook is the story, not the code: a papermill parameters cell, a few calls
into its tested module (helpers/chapters/chNN_*.py), prose, and exercises at the end."""

from __future__ import annotations

import ast
import importlib
import json

import pytest

from helpers import book

CHAPTERS = {"01_safety_scores": "ch01_safety", "02_correlations": "ch02_correlations",
            "03_architecture": "ch03_architecture", "04_distillation": "ch04_distillation",
            "05_tinybert_bias_suite": "ch05_tinybert", "06_intrinsic_extrinsic": "ch06_intrinsic_extrinsic",
            "07_toxicity_probing": "ch07_probing"}


def _code_lines(cell) -> list[str]:
    return [ln for ln in "".join(cell["source"]).splitlines() if ln.strip() and not ln.strip().startswith("#")]


def test_every_notebook_has_a_chapter_module():
    assert sorted(p.stem for p in book.notebooks()) == sorted(CHAPTERS)


@pytest.mark.parametrize("stem", sorted(CHAPTERS))
def test_notebook_is_the_story(stem):
    """<= 10 lines of code per cell (the parameters cell: one line per parameter), <= 40 in all,
    no function or class defined in the notebook, the parameters cell declares exactly the
    module's parameters and defaults with comments within 88 columns, the chapter starts with
    the module's ``start`` and ends with two or three exercises whose expected answer is a
    collapsed note."""
    path = book.NOTEBOOKS_DIR / f"{stem}.ipynb"
    module = importlib.import_module(f"helpers.chapters.{CHAPTERS[stem]}")
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
    last = "".join(nb["cells"][-1]["source"])
    assert last.startswith("## Exercises")
    assert 2 <= last.count("```{admonition} Expected") == last.count(":class: dropdown") <= 3


def test_chapter_01_states_the_upstream_compatible_value():
    nb = json.loads((book.NOTEBOOKS_DIR / "01_safety_scores.ipynb").read_text())
    md = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "0.259990915" in md and "--upstream-compat" in md and "`upstream_compat = True`" in md


@pytest.mark.parametrize("profile", ["default", "ci", "paper"])
def test_every_profile_sets_parameters_each_chapter_accepts(profile, private_dirs):
    """book/profiles.yml's overrides are declared by the notebooks and pass each chapter's own
    parameter checks (``start``; no model is loaded), so a profile cannot fail at its first cell."""
    for stem, name in CHAPTERS.items():
        module = importlib.import_module(f"helpers.chapters.{name}")
        overrides = book.parameters_for(book.NOTEBOOKS_DIR / f"{stem}.ipynb", profile)
        params, _ = module.start(dict(module.DEFAULTS) | overrides)
        assert set(overrides) <= set(params), stem
