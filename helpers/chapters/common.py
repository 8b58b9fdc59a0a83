"""What every chapter shares: where its tables go, how they are written, its parameters table."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from helpers import paths, runner, tables
from helpers.errors import InputError

__all__ = ["start", "output_dir", "save", "save_figure", "parameters_table", "setup_display", "Section", "markdown"]


@dataclass
class Section:
    """What a notebook cell displays (tables, Markdown, figures, in order), the section's verdict
    rows and the objects later sections need."""

    shown: list
    verdicts: pd.DataFrame | None = None
    data: object = None


def markdown(text: str):
    """``text`` as a Markdown object a notebook displays."""
    from IPython.display import Markdown

    return Markdown(text)


def output_dir(chapter: str) -> Path:
    """``results/<chapter>/`` (``HARMS_RESULTS_DIR`` overrides ``results/``), created."""
    d = paths.results_dir(chapter)
    d.mkdir(parents=True, exist_ok=True)
    return d


def save(df: pd.DataFrame, chapter: str, name: str, *, index: bool = False) -> pd.DataFrame:
    """Write ``df`` as ``results/<chapter>/<name>.csv`` (atomically) and return it unchanged,
    so a notebook can write and show a table in one line. ``index=True`` keeps the index as
    the first column(s) (for tables indexed by parameter name)."""
    out = df.reset_index() if index else df
    tables.write_table(out, output_dir(chapter) / f"{name}.csv")
    return df


def save_figure(fig, chapter: str, name: str, *, dpi: int = 120):
    """Save ``fig`` as ``results/<chapter>/<name>.png`` and return it (it is shown by the notebook)."""
    fig.savefig(output_dir(chapter) / f"{name}.png", dpi=dpi)
    return fig


def parameters_table(params: dict) -> pd.DataFrame:
    """The parameters a chapter ran with, one row each, indexed by name (shown at the top of
    every chapter and written as ``parameters.csv``)."""
    return pd.DataFrame({"value": [repr(v) for v in params.values()]},
                        index=pd.Index(list(params), name="parameter"))


def setup_display() -> None:
    """pandas display options of the book and no transformers progress bars in pages."""
    pd.set_option("display.precision", 3)
    pd.set_option("display.max_columns", 30)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:
        pass


def start(chapter: str, namespace, parameters: tuple[str, ...], defaults: dict, *,
          resolve_models: bool = True) -> tuple[dict, pd.DataFrame]:
    """A chapter's first call: its parameters picked from ``namespace`` (the notebook's globals,
    with papermill's injected values; a parameter it lacks takes ``defaults``), in the order of
    ``parameters``; ``models`` resolved to registry names (:func:`helpers.runner.resolve_models`:
    one name stays one model) unless ``resolve_models=False``; display options set; the
    parameters table written as ``results/<chapter>/parameters.csv``. Returns
    ``(params, parameters table)``."""
    setup_display()
    missing = [k for k in parameters if k not in namespace and k not in defaults]
    if missing:
        raise InputError(f"chapter {chapter}: no value for parameter(s) {', '.join(missing)}")
    params = {k: namespace[k] if k in namespace else defaults[k] for k in parameters}
    if resolve_models:
        params["models"] = runner.resolve_models(params["models"])
    return params, save(parameters_table(params), chapter, "parameters", index=True)
