"""What every chapter shares: the :class:`Section` a notebook cell shows, the :class:`Call` line
beside its tables, where a chapter's tables go, how they are written, its parameters.

The chapter contract (docs/NEW_CHAPTER.md): every function a notebook displays returns a
:class:`Section`; a notebook cell is just ``ch.some_section(params)`` (or ``x = ch.measure(params)``
for data later sections need, then a section of ``x``).
"""

from __future__ import annotations

import difflib
import inspect
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from helpers import paths, report, runner, tables
from helpers.errors import InputError
from helpers.measures.stereotypes import stereoset_sentences
from helpers.report import Text

__all__ = ["Section", "Call", "Var", "call", "gate_call", "gate_section", "start", "check_namespace",
           "findings_section", "safety_settings", "output_dir", "save", "save_figure", "parameters_table", "setup_display"]


class Var(str):
    """An argument shown by the name of what is passed (``per_sentence``), not by its value."""

    def __repr__(self) -> str:
        return str(self)


def _shown(value) -> str:
    return repr(value.item() if isinstance(value, np.generic) else value)   # np.float64(0.5) as 0.5


@dataclass
class Call:
    """The key metric call of a section, shown as one line of Python beside the table it produced:
    the function itself (so a renamed or moved function fails here, not on the page) and the
    arguments it gets, checked against its signature. Positional arguments are the names of what
    is passed (``"per_sentence"``); keywords are values (a :class:`Var` shows a name instead)."""

    function: Callable
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    def __post_init__(self):
        try:
            inspect.signature(self.function).bind(*self.args, **self.kwargs)
        except TypeError as exc:
            raise TypeError(f"{self.name}: the call shown does not fit its signature ({exc})") from None

    @property
    def name(self) -> str:
        """``metrics.safety.safety_scores``: the function's module below ``helpers`` and its name."""
        return f"{self.function.__module__.removeprefix('helpers.')}.{self.function.__qualname__}"

    def __str__(self) -> str:
        shown = [str(a) for a in self.args] + [f"{k}={_shown(v)}" for k, v in self.kwargs.items()]
        return f"{self.name}({', '.join(shown)})"


def call(function: Callable, *args, **kwargs) -> Call:
    """``Call(function, args, kwargs)`` with the positional arguments shown as written (the name of
    what is passed, or a literal such as ``"'000'"``): ``call(safety.safety_scores, "per_sentence", seed=0)``."""
    return Call(function, tuple(Var(a) for a in args), kwargs)


def _kind(item) -> str:
    if isinstance(item, Call):
        return "call"
    if isinstance(item, str):
        return "markdown"
    if isinstance(item, pd.DataFrame):
        return "table"
    if hasattr(item, "savefig"):
        return "figure"
    raise TypeError(f"a Section shows Markdown, DataFrames, figures and calls, not {type(item).__name__}")


class Section:
    """What a notebook cell shows, in order, and what it states.

    ``Section(*items, call=..., facts=..., data=...)``; an item is Markdown text (a ``str``, shown
    as :class:`helpers.report.Text`), a :class:`Call`, or ``(name, DataFrame)`` / ``(name, Figure)``
    (the name of its CSV or PNG, where it is written). ``call``, the section's key metric call, is
    shown before its first table or figure. Read back: :attr:`markdown` (the prose), :attr:`tables`
    and :attr:`figures` (by name), :attr:`call` (the first :class:`Call`), :attr:`facts` (the
    numbers the prose states, for tests and later chapters) and :attr:`data` (objects later
    sections need). In a notebook it displays itself (``_ipython_display_``)."""

    def __init__(self, *items, call: Call | None = None, facts: dict | None = None, data=None):
        self.items: list[tuple[str, str | None, object]] = []
        self.facts = dict(facts or {})
        self.data = data
        for item in items:
            if isinstance(item, tuple):
                name, value = item
                self.add(value, name)
            else:
                self.add(item)
        if call is not None:
            at = next((i for i, (kind, _, _) in enumerate(self.items) if kind in ("table", "figure")),
                      len(self.items))
            self.items.insert(at, ("call", None, call))

    def add(self, item, name: str | None = None) -> Section:
        """Append ``item`` (a table or figure needs ``name``); a figure is closed in pyplot, so it
        is shown once, where the section puts it, not again at the end of the cell."""
        kind = _kind(item)
        if kind in ("table", "figure") and not name:
            raise ValueError(f"a {kind} of a Section needs a name")
        if kind == "figure":
            import matplotlib.pyplot as plt

            plt.close(item)
        self.items.append((kind, name, Text(item) if kind == "markdown" and not isinstance(item, Text) else item))
        return self

    def _all(self, kind: str) -> list:
        return [(name, value) for k, name, value in self.items if k == kind]

    @property
    def markdown(self) -> str:
        """The section's prose, its Markdown items joined by blank lines."""
        return "\n\n".join(value for _, value in self._all("markdown"))

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        return dict(self._all("table"))

    @property
    def figures(self) -> dict:
        return dict(self._all("figure"))

    @property
    def calls(self) -> list[Call]:
        return [value for _, value in self._all("call")]

    @property
    def call(self) -> Call | None:
        """The key metric call (the first one shown), or None for a section that computes nothing."""
        return next(iter(self.calls), None)

    def _ipython_display_(self) -> None:
        """The items in order; consecutive calls as one Python code block."""
        from IPython.display import Markdown, display

        for is_call, run in itertools.groupby(self.items, key=lambda item: item[0] == "call"):
            if is_call:
                display(Markdown("```python\n" + "\n".join(str(value) for _, _, value in run) + "\n```"))
            else:
                for kind, name, value in run:
                    display(report.table_view(value, name) if kind == "table" else value)

    def __repr__(self) -> str:
        shown = ", ".join(kind if name is None else f"{kind} {name!r}" for kind, name, _ in self.items)
        return f"Section({shown})"


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
    """Save ``fig`` as ``results/<chapter>/<name>.png`` and return it (a :class:`Section` shows it)."""
    fig.savefig(output_dir(chapter) / f"{name}.png", dpi=dpi)
    return fig


def findings_section(chapter: str, findings: list[report.Finding]) -> Section:
    """The chapter's Findings box (:class:`helpers.report.Findings`), shown right after its introduction:
    its bullets, each a sentence computed from this build's numbers with a link to the table it comes
    from, also written as ``results/<chapter>/findings.csv`` (``harms book`` prints them in its log).
    Facts: ``findings`` (the sentences as plain text)."""
    low, high = report.READING["findings"]
    if not low <= len(findings) <= high:
        raise ValueError(f"chapter {chapter}: {len(findings)} findings, not {low} to {high}")
    table = pd.DataFrame({"finding": [report.plain(f.text) for f in findings],
                          "table": [f.table for f in findings]})
    save(table, chapter, report.FINDINGS_TABLE)
    return Section(report.Findings(findings), facts={"findings": list(table["finding"])})


def parameters_table(params: dict) -> pd.DataFrame:
    """The parameters a chapter ran with, one row each, indexed by name (shown at the top of
    every chapter and written as ``parameters.csv``)."""
    return pd.DataFrame({"value": [repr(v) for v in params.values()]},
                        index=pd.Index(list(params), name="parameter"))


def setup_display() -> None:
    """pandas display options of the book and no transformers progress bars in pages."""
    pd.set_option("display.precision", 3)
    pd.set_option("display.max_columns", 30)
    pd.set_option("styler.render.max_rows", 60)      # tables are shown as report.table_view's Styler
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:
        pass


#: A value papermill can inject as a parameter (what the parameters cell of a notebook holds).
PLAIN = (str, int, float, bool, type(None), list, tuple, dict)
#: Names of a notebook's namespace that are never parameters: IPython's own, and ``params``,
#: which the start cell itself binds (so the start cell can run again).
NOT_PARAMETERS = {"In", "Out", "exit", "quit", "get_ipython", "params"}


def check_namespace(chapter: str, namespace, parameters: tuple[str, ...]) -> None:
    """One :class:`InputError` naming every plain value of ``namespace`` (a notebook's globals)
    that is not one of ``parameters``: a misspelled or unknown parameter injected by papermill
    (``-p sample_per_gruop 8``) would otherwise be ignored and the default used. Names starting
    with ``_``, IPython's, modules, functions and classes are not values a parameter can be."""
    unknown = sorted(k for k, v in namespace.items() if isinstance(v, PLAIN) and k not in parameters
                     and not k.startswith("_") and k not in NOT_PARAMETERS)
    if unknown:
        hints = [f"{k!r}" + (f" (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(k, parameters, 1)) else "")
                 for k in unknown]
        raise InputError(f"chapter {chapter}: unknown parameter {', '.join(hints)}; "
                         f"its parameters are {', '.join(parameters)}")


def chapter_parameters(chapter: str, namespace, parameters: tuple[str, ...], defaults: dict, *,
                       resolve_models: bool = True) -> dict:
    """A chapter's parameters picked from ``namespace`` (the notebook's globals, with papermill's
    injected values; a parameter it lacks takes ``defaults``; a plain value that is no parameter
    is an error, :func:`check_namespace`), in the order of ``parameters``; ``models`` resolved to
    registry names (:func:`helpers.runner.resolve_models`: one name stays one model) unless
    ``resolve_models=False``. No side effect: the book's prefill calls it too."""
    check_namespace(chapter, namespace, parameters)
    missing = [k for k in parameters if k not in namespace and k not in defaults]
    if missing:
        raise InputError(f"chapter {chapter}: no value for parameter(s) {', '.join(missing)}")
    params = {k: namespace[k] if k in namespace else defaults[k] for k in parameters}
    if resolve_models:
        params["models"] = runner.resolve_models(params["models"])
    return params


def parameters_section(chapter: str, params: dict) -> Section:
    """Display options set and the parameters table written as ``results/<chapter>/parameters.csv``."""
    setup_display()
    return Section(("parameters", save(parameters_table(params), chapter, "parameters", index=True)))


def start(chapter: str, namespace, parameters: tuple[str, ...], defaults: dict, *,
          resolve_models: bool = True) -> tuple[dict, Section]:
    """A chapter's first call: its parameters (:func:`chapter_parameters`), display options set,
    the parameters table written as ``results/<chapter>/parameters.csv``. Returns ``(params,
    Section of the parameters table)``."""
    params = chapter_parameters(chapter, namespace, parameters, defaults, resolve_models=resolve_models)
    return params, parameters_section(chapter, params)


def gate_call(*, min_ratio: float, corpus: str = "gensim") -> Call:
    """The language-model quality gate's call, with the settings :func:`helpers.runner.language_model_quality`
    measures and caches under (:func:`helpers.runner.quality_settings`)."""
    from helpers.metrics import quality

    settings = {k: v for k, v in runner.quality_settings(corpus=corpus).items() if k != "corpus"}
    return call(quality.language_model_quality, "model", "tokenizer", f"{corpus}_train", f"{corpus}_heldout",
                objective=Var("objective"), **settings, min_ratio=min_ratio)


def gate_section(table: pd.DataFrame, name: str, *, min_ratio: float, corpus: str = "gensim") -> Section:
    """A :func:`helpers.runner.quality_table` as a section: the sentence naming the models the gate
    excludes (:func:`helpers.report.gate_sentence`), then the table (``name``); facts: the usable
    models and the excluded ones."""
    from helpers import report

    facts = {"usable": runner.usable_models(table),
             "excluded": [m for m, u in zip(table["model"], table["usable"]) if u == False]}  # noqa: E712 (NaN: unmeasured)
    return Section(report.gate_sentence(table, min_ratio=min_ratio), (name, table),
                   call=gate_call(min_ratio=min_ratio, corpus=corpus), facts=facts)


def safety_settings(params: dict, *, dataset: str = "toxigen") -> dict:
    """The settings of the shared ``"safety_per_group"`` result (:func:`helpers.runner.safety_per_group`)
    from a chapter's parameters: its cache key with the model, so every chapter asking for the same
    model, sample, seed and scorer gets the same cached result (chapters without ``upstream_mask_id``
    use each tokenizer's own mask token)."""
    return {"dataset": dataset, "sample_per_group": params["sample_per_group"], "seed": params["seed"],
            "pll": params["pll"], "upstream_mask_id": bool(params.get("upstream_mask_id", False))}


#: A StereoSet sentence's score, cached one by one (:func:`helpers.measures.stereotypes.stereoset_sentences`:
#: chapters 02, 05 and 06 and the report card share the scores).
stereoset_scored = stereoset_sentences
