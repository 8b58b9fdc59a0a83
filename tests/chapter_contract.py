"""The chapter contract (docs/NEW_CHAPTER.md), checked on what a chapter function returns and on an
executed notebook; imported by the chapter tests and the book tests."""

from __future__ import annotations

import ast
import importlib
import inspect
import re

import pandas as pd

from helpers.chapters.common import Call, Section

#: Where a section's key call may live: the layers that compute or hold data, never a chapter's
#: own helper, the runner or the display modules.
CALL_PACKAGES = ("metrics", "lm", "stats", "training", "datasets", "published", "models", "measures")
#: A cell tagged so may write to standard error (documented in docs/NEW_CHAPTER.md).
STDERR_TAG = "stderr-expected"
CODE_BLOCK = re.compile(r"```python\n(.*?)\n```", re.S)


def resolve(line: str):
    """The function a shown call line names (``metrics.safety.safety_scores(...)``), imported from
    ``helpers``, after checking the line is one call whose arguments fit the function's signature."""
    node = ast.parse(line, mode="eval").body
    assert isinstance(node, ast.Call), f"not a call: {line}"
    dotted = ast.unparse(node.func)
    module, _, name = dotted.rpartition(".")
    assert module.split(".")[0] in CALL_PACKAGES, f"{dotted}: not a function of helpers.{'/'.join(CALL_PACKAGES)}"
    function = getattr(importlib.import_module(f"helpers.{module}"), name)
    inspect.signature(function).bind(*node.args, **{k.arg: k.value for k in node.keywords})
    return function


def check_section(section, *, computes: bool = True) -> Section:
    """``section`` follows the contract: a :class:`Section` of Markdown, named tables and figures and
    calls; one that shows a table or a figure (and ``computes``) names its key call, a real function
    whose printed line resolves back to it; its facts are a dict. Returns it."""
    assert isinstance(section, Section), f"{type(section).__name__} is not a Section"
    assert all(kind in ("markdown", "table", "figure", "call") for kind, _, _ in section.items)
    assert all(isinstance(t, pd.DataFrame) for t in section.tables.values())
    assert isinstance(section.facts, dict) and isinstance(section.markdown, str)
    if computes and (section.tables or section.figures):
        assert section.call is not None, f"{section!r} shows results without its key call"
    for c in section.calls:
        assert isinstance(c, Call) and resolve(str(c)) is c.function, str(c)
    return section


def stderr_outputs(nb) -> list[str]:
    """Standard-error text of every code cell not tagged :data:`STDERR_TAG` (an nbformat notebook)."""
    return [out["text"] for cell in nb.cells if cell.cell_type == "code"
            and STDERR_TAG not in cell.metadata.get("tags", [])
            for out in cell.get("outputs", []) if out["output_type"] == "stream" and out["name"] == "stderr"]


def shown_calls(nb) -> list[str]:
    """The call lines a notebook's outputs show (Markdown ```python blocks)."""
    return [line for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
            for block in CODE_BLOCK.findall(out.get("data", {}).get("text/markdown", ""))
            for line in block.splitlines()]


def check_executed(nb) -> None:
    """An executed chapter: no standard-error output outside cells tagged :data:`STDERR_TAG`; every
    call line it shows names a real function; every cell after the start cell that shows a table
    shows its call."""
    noise = stderr_outputs(nb)
    assert not noise, "standard error in an executed chapter (tag the cell stderr-expected if intended):\n" + \
        "\n".join(t[:300] for t in noise)
    for line in shown_calls(nb):
        resolve(line)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    start = next(i for i, c in enumerate(cells) if "ch.start(globals())" in c.source)
    for cell in cells[start + 1:]:
        outputs = [out.get("data", {}) for out in cell.get("outputs", [])]
        if any("<table" in d.get("text/html", "") for d in outputs):
            assert any(CODE_BLOCK.search(d.get("text/markdown", "")) for d in outputs), \
                f"a cell shows a table without its call: {cell.source}"
