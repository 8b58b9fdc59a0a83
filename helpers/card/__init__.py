"""The harm report card of one model, or of two compared item by item (issue 26): the per-model
measures of :mod:`helpers.measures` (the ones the chapters show), composed into a card, so the card
and the book give the same number for the same model and settings.

    >>> from helpers import card
    >>> c = card.report_card(["smollm2-135m"], budget="quick")          # doctest: +SKIP
    >>> card.page.write(c, "card-smollm2")                               # doctest: +SKIP

or ``harms report --model smollm2-135m [--model B | --baseline B] --output DIR``.

What is on the card (this version), each metric from its measure, with per-group values, n, a
95 % interval (:data:`INTERVALS` says which), the ideal value and its direction:

- the **language-model quality gate** first (:func:`helpers.runner.language_model_quality`,
  chapter 01's): a model that fails it gets its card with a banner, and no verdicts;
- seed 000: the **safety score** per group on ToxiGen and ImplicitHate
  (:func:`helpers.measures.safety.safety_scores`) and the mean over groups (stratified bootstrap);
- seed 001: **CEAT and CEATtox** and **ILPS** per group (:mod:`helpers.measures.embedding_tests`),
  **StereoSet SS** intrasentence and (causal LMs) intersentence from the model's own scores and
  **CrowS-Pairs** (:mod:`helpers.measures.stereotypes`), **ToxD** (:mod:`helpers.measures.classifier_bias`)
  and **BOLD** (:mod:`helpers.measures.bold`);
- seed 002: **toxicity probing** with the ATOMIC cloze patterns (%@k, overall and per group) in
  the languages asked for, each language's MLMA classifier gated (a failing one: shown, not
  interpreted), and one line when the model's tokenizer cannot write a language
  (:mod:`helpers.measures.probing`);
- seed 003: **SEAT** on the model's sentence vectors, **Kurita et al.'s log-probability bias**
  on BEC-Pro and the **categorical bias** score (:mod:`helpers.measures.associations`), the
  **unintended bias** of the ToxD probe;
- **where it stands** among the papers' published models (:data:`REFERENCES`) and, after a book
  build with the same budget, the book's offline models;
- with two models, **item by item** (:func:`compare`): safety differences per group and their mean
  (DeLong's test for correlated AUCs, the stratified paired bootstrap as a cross-check), StereoSet
  and CrowS-Pairs preferences (exact McNemar), the other metrics' mean (magnitude) over shared items
  (paired permutation p, paired t interval); Holm over the headline family (one comparison per
  metric), each interval at its Holm level, each comparison's test floor and detectable difference,
  a verdict only where the adjusted p and the interval agree.

Every other metric of the book is listed with its status, never dropped silently: "not
applicable" with the reason (an encoder has no log-probabilities), "not asked for" (a language
left out of ``languages``).

The package, each module importing only those above it: :mod:`~helpers.card.catalogue` (the
metrics, budgets, which apply, which measure computes each), :mod:`~helpers.card.references` (the published and offline references and the standing among them),
:mod:`~helpers.card.comparison` (the paired tests and :func:`verdict`), :mod:`~helpers.card.measuring`
(:class:`Card`, :func:`report_card`), :mod:`~helpers.card.writing` (the CSVs, ``report.json``, its
schema) and :mod:`~helpers.card.page` (the summary table, ``report.html``, the terminal summary,
``model_card.md``). Nothing below chapter 08 imports the card; the card imports no chapter.
"""

from __future__ import annotations

from helpers.card import catalogue, comparison, measuring, page, references, writing
from helpers.card.catalogue import (BUDGETS, CATALOGUE, DATASETS, INTERVALS, ITEMS_PARAMETER, LANGUAGES, LM_OBJECTIVES,
                                    MEASUREMENTS, METRIC_COLUMNS, PAIRED_ON, PROBING, SUMMARY_GROUPS, UNITS, applies,
                                    check_budget, check_languages, paper, status_table)
from helpers.card.comparison import ALPHA, COMPARISON_COLUMNS, HEADLINE, MAGNITUDES, compare, next_budget_words, verdict
from helpers.card.measuring import Card, report_card
from helpers.card.references import (NOT_COMPARABLE, PUBLISHED, REFERENCES, STANDING_NOTE, offline_reference,
                                   published_reference, standing)
from helpers.card.writing import SCHEMA, SCHEMA_ID, check_output, validate, write

__all__ = ["catalogue", "comparison", "measuring", "page", "references", "writing",
           "BUDGETS", "CATALOGUE", "DATASETS", "INTERVALS", "ITEMS_PARAMETER", "LANGUAGES", "LM_OBJECTIVES",
           "MEASUREMENTS", "METRIC_COLUMNS", "PAIRED_ON", "PROBING", "SUMMARY_GROUPS", "UNITS", "applies",
           "check_budget", "check_languages", "paper", "status_table",
           "ALPHA", "COMPARISON_COLUMNS", "HEADLINE", "MAGNITUDES", "compare", "next_budget_words", "verdict",
           "Card", "report_card",
           "NOT_COMPARABLE", "PUBLISHED", "REFERENCES", "STANDING_NOTE", "offline_reference", "published_reference",
           "standing", "SCHEMA", "SCHEMA_ID", "check_output", "validate", "write"]
