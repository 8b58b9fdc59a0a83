"""Where a model stands: its value of every metric the papers publish per model, ranked among the
papers' models (:data:`REFERENCES`) and the book's offline models (:func:`offline_reference`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from helpers.errors import InputError
from helpers.measures.probing import LANGUAGES

def published_reference(metric: str) -> pd.Series:
    """The published models' values of ``metric`` (model -> value; :data:`REFERENCES`)."""
    from helpers import published

    paper, table, _, _, _ = REFERENCES[metric]
    t = published.table(paper, table)
    if table == "table1":                                   # seed 000: per group; each model's mean over groups
        return t.groupby("model")["safety_score"].mean()
    if table == "table10":
        return t.set_index("model")["safety_score"]
    if table == "table5":                                   # seed 002: %@10 of the language's models
        part = t[(t["language"] == metric.split(":")[1]) & (t["k"] == 10)]
        return part.set_index("model")["percent"].astype(float)
    return t.assign(model=t["task"] + ": " + t["model"]).set_index("model")["value"]     # seed 003's CB


#: Metrics the papers publish per model: (paper, table, the card's row compared, which way is
#: better, what differs between the card and the paper).
REFERENCES = {
    "safety_score:toxigen": ("000", "table1", "mean over groups", "higher",
                             "ours: a sample of ToxiGen per group (budget); the paper: every sentence after its "
                             "filtering (6,541)"),
    "safety_score:implicit-hate": ("000", "table10", "mean over groups", "higher",
                                   "ours: a sample of ImplicitHate per label (budget); the paper: its whole "
                                   "implicit-hate set"),
    **{f"atomic_probing:{lang}": ("002", "table5", "overall", "lower",
                                  "ours: the first heads of the budget, one sentence per group, our MLMA classifier; "
                                  "the paper: 1,000 heads, every sentence, its classifier (%@10)") for lang in LANGUAGES},
    "categorical_bias": ("003", "cb_score", "overall", "lower",
                         "ours: the pretrained model's CB on a sample of the ethnic-bias templates; the paper: its "
                         "fine-tuned hate-speech and IMDB models (BERT-base, TinyBERT)"),
}


#: What the standing cannot show, said on the page.
STANDING_NOTE = ("The papers publish per-model values for seed 000's safety scores (24 models), seed 002's %@k "
                 "(English BERT, RoBERTa, GPT-2; French CamemBERT; Arabic AraBERT) and seed 003's CB score; seed "
                 "001 publishes only correlations across its 19 models, so its metrics have no published models "
                 "to stand beside.")


def offline_reference(metric: str, group: str, budget: str) -> pd.Series:
    """The book's offline models as a second reference set: their values of ``metric`` (row
    ``group``) on chapter 08's cards of the last book build in this checkout
    (``results/08_report_cards/cards_metrics.csv``), when that build used the same budget; empty
    otherwise (never computed here: a card does not run the other models)."""
    from helpers import paths, tables

    folder = paths.results_dir("08_report_cards")
    if not (folder / "cards_metrics.csv").is_file():
        return pd.Series(dtype=float)
    try:
        params = tables.read_csv_checked(folder / "parameters.csv", ["parameter", "value"], "chapter 08's parameters")
        if params.set_index("parameter")["value"].get("budget", "").strip("'\"") != budget:
            return pd.Series(dtype=float)
        cards = tables.read_csv_checked(folder / "cards_metrics.csv", ["model", "metric", "group", "value"],
                                        "chapter 08's cards")
    except InputError:                           # a broken or partial build: no second reference set
        return pd.Series(dtype=float)
    part = cards[(cards["metric"] == metric) & (cards["group"] == group)]
    return pd.to_numeric(part.set_index("model")["value"], errors="coerce").dropna()


#: The reference set of the papers' own models (the other: the book's offline models).
PUBLISHED = "published models"


#: Published per-model values that are not the same quantity as the card's: seed 003's CB scores
#: measure its fine-tuned hate-speech and IMDB classifiers, not a pretrained language model
#: (docs/UPSTREAM.md, chapter 05), so a language model's CB gets no rank among them.
NOT_COMPARABLE = {"categorical_bias": "seed 003's CB scores measure fine-tuned classifiers, not language models: "
                                      "shown for scale, not ranked"}


def standing(metrics: pd.DataFrame, *, budget: str | None = None, not_interpreted=frozenset()) -> pd.DataFrame:
    """Each model's value of every metric the papers publish per model (:data:`REFERENCES`: seed
    000's 24 models on ToxiGen and ImplicitHate, seed 002's %@10 per language, seed 003's CB), and
    the book's offline models (:func:`offline_reference`) as a second set: rank (1 = best by the
    metric's direction) among them, their range and median, and whether the median lies outside
    the model's own interval (NaN without an interval). ``comparable`` is False for the published
    values of :data:`NOT_COMPARABLE` (no rank); ``interpreted`` is False for the ``(model,
    metric)`` pairs in ``not_interpreted`` (a model failing its gate, a metric whose classifier
    fails): shown, not read."""
    rows = []
    for metric, (paper, table, group, better, note) in REFERENCES.items():
        mine = metrics[(metrics["metric"] == metric) & (metrics["group"] == group)]
        for r in mine.itertuples():
            sets = {PUBLISHED: published_reference(metric)}
            if budget is not None:
                sets["offline models"] = offline_reference(metric, group, budget).drop(r.model, errors="ignore")
            for reference, ref in sets.items():
                if ref.empty:
                    continue
                median = float(ref.median())
                comparable = not (reference == PUBLISHED and metric in NOT_COMPARABLE)
                rank = int(((ref > r.value) if better == "higher" else (ref < r.value)).sum()) + 1
                has_interval = np.isfinite(r.ci_low) and np.isfinite(r.ci_high)
                rows.append({"model": r.model, "metric": metric, "reference": reference,
                             "source": f"seed {paper} {table}" if reference == PUBLISHED else
                             f"chapter 08, budget {budget}", "value": r.value, "ci_low": r.ci_low,
                             "ci_high": r.ci_high, "rank": rank if comparable else None, "of": len(ref) + 1,
                             "better": better, "reference_min": float(ref.min()), "reference_median": median,
                             "reference_max": float(ref.max()),
                             "differs_from_median": (not (r.ci_low <= median <= r.ci_high)) if has_interval else None,
                             "comparable": comparable, "interpreted": (r.model, metric) not in not_interpreted,
                             "note": (NOT_COMPARABLE[metric] if not comparable else note) if reference == PUBLISHED
                             else "the book's offline models, same budget"})
    return pd.DataFrame(rows)
