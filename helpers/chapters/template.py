"""Chapter template: copy it to ``chNN_<name>.py`` to start a new chapter (docs/NEW_CHAPTER.md).

Its notebook is ``notebooks/templates/NN_template.ipynb``. The example is a small, complete
chapter: the language-model quality gate of every model, then seed 000's safety score per group
(Hosseini, Palangi & Awadallah 2023, eqs. 1-3) of the models that pass it, with a figure and a
sentence generated from the numbers. Replace the measurement and the sections with your own; keep
the contract:

- the module's ``CHAPTER``, ``PARAMETERS`` and ``DEFAULTS`` match the notebook's parameters cell
  (``tests/test_notebooks.py`` checks it);
- :func:`start` is the notebook's first call (unknown parameters fail in one line);
- a function that measures returns its data (here :class:`Measured`); a function the notebook
  displays returns a :class:`helpers.chapters.common.Section`: its Markdown, its tables and
  figures by name (each written under ``results/<CHAPTER>/`` with :func:`common.save` /
  :func:`common.save_figure`), the key metric call (:func:`common.call`: a function of
  ``helpers.metrics``, ``helpers.lm``, ``helpers.stats`` ...) and the ``facts`` its prose states;
- the chapter opens with its Findings box (:func:`findings`, :func:`common.findings_section`): 3 to 6
  sentences computed from the numbers, each linked to the table it comes from; generated prose
  reads as :data:`helpers.report.READING` says (short paragraphs, tables for lists);
- every result is cached by metric, model and settings (:func:`helpers.runner.cached_result`),
  never by chapter.

    >>> from helpers.chapters import template as ch
    >>> params, shown = ch.start({"models": "smollm2-135m", "sample_per_group": 4})
    >>> gate = ch.gate_section(params)
    >>> measured = ch.measure(params)
    >>> ch.findings(measured, gate)
    >>> ch.scores_section(measured, gate)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from helpers import plots, report, runner
from helpers.chapters import common
from helpers.chapters.common import Section, call
from helpers.errors import ModelUnavailableError
from helpers.metrics import safety

CHAPTER = "NN_template"
#: The notebook's parameters, in the order of its parameters cell and of ``parameters.csv``.
PARAMETERS = ("models", "sample_per_group", "seed", "pll", "device", "min_ratio")
DEFAULTS = dict(models="packages", sample_per_group=8, seed=0, pll="original", device="cpu", min_ratio=2.0)


def start(namespace) -> tuple[dict, Section]:
    """The chapter's parameters from the notebook's globals (:func:`helpers.chapters.common.start`);
    add the chapter's own checks of its parameters here (one :class:`InputError` line each)."""
    return common.start(CHAPTER, namespace, PARAMETERS, DEFAULTS)


def gate_section(params: dict) -> Section:
    """The language-model quality gate of every model (``quality_gate.csv``); ``data``: the table,
    whose usable models are the ones a later section may interpret."""
    table = common.save(runner.quality_table(params["models"], device=params["device"], min_ratio=params["min_ratio"]),
                        CHAPTER, "quality_gate")
    section = common.gate_section(table, "quality_gate", min_ratio=params["min_ratio"])
    section.data = table
    return section


@dataclass
class Measured:
    """Every model's safety score per group and the models that could not be obtained here."""

    per_group: pd.DataFrame
    unavailable: dict = field(default_factory=dict)


def measure(params: dict) -> Measured:
    """The shared ``safety_per_group`` result of every model (:func:`helpers.runner.safety_per_group`
    under :func:`helpers.chapters.common.safety_settings`: another chapter asking for the same model
    and settings reuses it); ``safety_per_group.csv``."""
    settings = common.safety_settings(params)
    results, unavailable = runner.for_each_model(params["models"],
                                                 lambda handle: runner.safety_per_group(handle, settings),
                                                 device=params["device"])
    if not results:
        raise ModelUnavailableError(f"none of the models could be loaded: {unavailable}")
    per_group = pd.concat([g for g in results.values()], ignore_index=True)[
        ["model", "group", "group_label", "n_harmful", "n_benign", "safety_score", "p_value", "unscaled_score"]
    ].assign(source="measured")
    return Measured(common.save(per_group, CHAPTER, "safety_per_group"), unavailable)


def scores_section(measured: Measured, gate: Section) -> Section:
    """The safety score per group and model (a figure and its table) and a sentence on the usable
    models, generated from the numbers (facts: how many of their scores lie below 0.5)."""
    usable = measured.per_group[measured.per_group["model"].isin(runner.usable_models(gate.data))]
    facts = {"models": measured.per_group["model"].nunique(), "usable_models": usable["model"].nunique(),
             "scores": len(usable), "below_half": int((usable["safety_score"] < 0.5).sum()),
             "unscaled_below_half": int((usable["unscaled_score"] < 0.5).sum())}
    whose = "the one usable model" if facts["usable_models"] == 1 else f"the {facts['usable_models']} usable models"
    text = (f"Of the {facts['scores']} safety scores of {whose}, "
            f"{facts['below_half']} lie below 0.5 (a harmful statement more often has the lower "
            f"toxicity-scaled perplexity); without the scaling, {facts['unscaled_below_half']} do (a harmful "
            "statement is more often the more likely one for the model)." if facts["usable_models"] else
            "No model passes the quality gate: the scores are shown, not interpreted.")
    fig = common.save_figure(plots.safety_boxplot(measured.per_group, title="Safety score per group"), CHAPTER,
                             "safety_per_group")
    return Section(("safety_per_group", fig), ("safety_per_group", measured.per_group), text,
                   call=call(safety.safety_scores, "per_sentence", ci=False), facts=facts)


def findings(measured: Measured, gate: Section) -> Section:
    """The chapter's Findings box: how many models pass the gate, and for the usable models the share
    of safety scores below 0.5 and the lowest group score, each linked to its table."""
    passing = runner.usable_models(gate.data)
    usable = measured.per_group[measured.per_group["model"].isin(passing)]
    passes = report.count_of(len(passing), len(gate.data), "model", ("passes", "pass"))
    items = [report.Finding(f"{report.sentence_case(passes)} the language-model quality gate", "quality_gate",
                            "the gate")]
    if len(usable):
        low = usable.loc[usable["safety_score"].idxmin()]
        below = report.count_of(int((usable["safety_score"] < 0.5).sum()), len(usable), "score", ("lies", "lie"))
        items += [report.Finding(f"Of the usable models' safety scores, {below} below 0.5", "safety_per_group",
                                 "the scores"),
                  report.Finding(f"The lowest is {low['model']}'s for {low['group_label']}: {low['safety_score']:.3f} "
                                 f"(n = {int(low['n_harmful'])} harmful and {int(low['n_benign'])} benign sentences)",
                                 "safety_per_group", "the scores")]
    else:
        items += [report.Finding("No model passes the gate, so no score is interpreted", "safety_per_group",
                                 "the scores"),
                  report.Finding(f"{measured.per_group['model'].nunique()} models' scores are shown, not read",
                                 "safety_per_group", "the scores")]
    return common.findings_section(CHAPTER, items)
