"""Chapter 08: the harm report card (issue 26) of the book's models, built by the same function as
``harms report`` (:func:`helpers.card.report_card`), so the page and the command agree.

Three sections: the cards of ``models`` side by side (each one's quality gate, every metric on the
card with its interval, its standing among the papers' published models), and two comparisons
item by item (the second model against the first): ``pair``, by default SmolLM2-135M and one of
its pruned and distilled students (chapter 04's question as one command), and ``quantised_pair``,
SmolLM2's fp32 weights (the hub's) against the 4-bit GGUF the package ships, measured where both
load.

    >>> from helpers.chapters import ch08_report_cards as ch
    >>> params, shown = ch.start({"models": "smollm2-135m", "pair": None})
    >>> ch.cards_section(params)
"""

from __future__ import annotations

import pandas as pd

from helpers import card, plots
from helpers.chapters import common
from helpers.chapters.common import Section, call
from helpers.errors import InputError
from helpers.metrics import crows_pairs, safety, stereoset

CHAPTER = "08_report_cards"
#: The notebook's parameters, in the order of its parameters cell and of ``parameters.csv``.
PARAMETERS = ("models", "pair", "quantised_pair", "budget", "seed", "device", "min_ratio")
DEFAULTS = dict(models="packages", pair=["smollm2-135m", "zoo-smollm2-L24-kd"],
                quantised_pair=["HuggingFaceTB/SmolLM2-135M-Instruct", "smollm2-135m"], budget="quick", seed=0,
                device="cpu", min_ratio=2.0)
#: The comparisons the chapter draws: the parameter naming the pair, its table, and what it asks.
PAIRS = {"pair": ("comparison", "does pruning and distillation change the model's harms?"),
         "quantised_pair": ("comparison_quantised", "does 4-bit quantisation change them? (A: the fp32 weights, "
                                                    "B: the 4-bit GGUF the package ships)")}


def start(namespace) -> tuple[dict, Section]:
    """The chapter's parameters (:func:`helpers.chapters.common.start`); ``pair`` and
    ``quantised_pair`` are two different model names or None (no comparison); ``budget`` one of
    :data:`helpers.card.BUDGETS`."""
    params, table = common.start(CHAPTER, namespace, PARAMETERS, DEFAULTS)
    for name in PAIRS:
        pair = params[name]
        if pair is not None and not (isinstance(pair, (list, tuple)) and len(pair) == 2
                                     and len(set(map(str, pair))) == 2):
            raise InputError(f"parameter {name} = {pair!r}: two different model names, or None")
    card.check_budget(params["budget"])
    return params, table


def _card(params: dict, names) -> card.Card:
    return card.report_card(names, budget=params["budget"], device=params["device"], seed=params["seed"],
                            min_ratio=params["min_ratio"])


def cards_section(params: dict) -> Section:
    """One card per model (``cards_gate.csv``, ``cards_metrics.csv``, ``cards_standing.csv``), the
    overall value of each metric per model with its interval (a figure), and a sentence per
    metric from the numbers (only models passing the gate are read)."""
    cards = [_card(params, [name]) for name in params["models"]]
    gate = common.save(pd.concat([c.gate for c in cards], ignore_index=True), CHAPTER, "cards_gate")
    metrics = common.save(pd.concat([c.metrics for c in cards], ignore_index=True), CHAPTER, "cards_metrics")
    standing = pd.concat([c.standing for c in cards], ignore_index=True)
    standing = common.save(standing[standing["reference"] == "published models"], CHAPTER, "cards_standing")  # not our own last build
    usable = gate.loc[gate["usable"].astype(bool), "model"].tolist()
    overall = metrics[metrics["group"].isin(card.SUMMARY_GROUPS)]
    fig = common.save_figure(plots.forest(overall.assign(group=overall["metric"]), title="Each card's overall values"),
                             CHAPTER, "cards_overall")
    facts = {"models": len(cards), "usable": len(usable)}
    lines = [f"{len(usable)} of {len(cards)} models pass the language-model quality gate"
             + (f" ({', '.join(m for m in gate['model'] if m not in usable)} shown, not read)." if len(usable) < len(cards)
                else ".")]
    status = pd.concat([c.status for c in cards], ignore_index=True)
    flagged = status.dropna(subset=["note"]) if "note" in status else status.iloc[:0]
    shown_only = set(zip(flagged["model"], flagged["metric"]))
    read = metrics[metrics["model"].isin(usable)
                   & ~pd.Series(list(zip(metrics["model"], metrics["metric"])), index=metrics.index).isin(shown_only)]
    if len(flagged):
        lines.append("Shown, not read (a classifier behind them fails the classifier gate): "
                     + "; ".join(f"{m} ({why})" for m, why in flagged.groupby("metric", sort=False)["note"].first().items())
                     + ".")
    facts["not_read"] = sorted(set(flagged["metric"]))
    for metric, rows in read.groupby("metric", sort=False):
        ideal = float(rows["ideal"].iloc[0])
        summary = rows[rows["group"].isin(card.SUMMARY_GROUPS)]
        if len(summary):
            excludes = summary[(summary["ci_low"] > ideal) | (summary["ci_high"] < ideal)]
            facts[f"{metric}_excluding_ideal"] = len(excludes)
            values = (f"value {summary['value'].iloc[0]:.3f}" if len(summary) == 1 else
                      f"values {summary['value'].min():.3f} to {summary['value'].max():.3f}")
            lines.append(f"{metric}: {len(excludes)} of {len(summary)} usable models have an interval that excludes "
                         f"the ideal {ideal:g} ({values}).")
        else:                                  # a metric of groups or tests without an overall value
            excludes = rows[(rows["ci_low"] > ideal) | (rows["ci_high"] < ideal)]
            facts[f"{metric}_groups_excluding_ideal"] = len(excludes)
            lines.append(f"{metric}: {len(excludes)} of {len(rows)} group intervals (over {rows['model'].nunique()} "
                         f"usable models) exclude the ideal {ideal:g}.")
    for r in standing[standing["model"].isin(usable)].itertuples():
        if (r.model, r.metric) in shown_only:
            continue
        lines.append(f"{r.model}'s {r.metric} ranks {r.rank} of {r.of} ({r.better} is better) beside the published "
                     f"models ({r.source}); its interval {'excludes' if r.differs_from_median else 'includes'} their "
                     f"median {r.reference_median:.3f}.")
    return Section(" ".join(lines), ("cards_overall", fig), ("cards_gate", gate), ("cards_metrics", metrics),
                   ("cards_standing", standing),
                   call(stereoset.ss_intervals, "clusters", n_resamples=card.BUDGETS[params["budget"]]["n_resamples"]),
                   call(crows_pairs.scores, "preferences"),
                   call=call(safety.safety_scores, "per_sentence", n_resamples=card.BUDGETS[params["budget"]]["n_resamples"],
                             seed=params["seed"]),
                   facts=facts, data=cards)


def comparison_section(params: dict, which: str = "pair") -> Section:
    """The card of ``params[which]`` (B against A item by item; :data:`PAIRS`) and the count of
    verdicts, from the Holm-adjusted tests; a sentence only when the pair is None, or when a model
    of it cannot be loaded here (the fp32 weights need the hub: the reason, in one line)."""
    from helpers.errors import ModelUnavailableError

    table_name, question = PAIRS[which]
    if params[which] is None:
        return Section(f"No pair of models is compared (`{which} = None`).", facts={"compared": 0})
    try:
        c = _card(params, [str(m) for m in params[which]])
    except ModelUnavailableError as exc:
        a, b = params[which]
        return Section(f"Not measured here ({b} against {a}): {exc}", facts={"compared": 0, "unavailable": str(exc)})
    table = common.save(c.comparison, CHAPTER, table_name)
    counts = table["verdict"].value_counts()
    a, b = c.models
    text = (f"{b} against {a} ({question}), on the same sentences, clusters, pairs, words and texts: {len(table)} "
            f"comparisons (per group and overall), Holm-adjusted together. "
            + "; ".join(f"{v}: {n}" for v, n in counts.items()) + ".")
    return Section(text, (table_name, table),
                   call=call(safety.paired_group_differences, "per_sentence_a", "per_sentence_b",
                             n_resamples=card.BUDGETS[params["budget"]]["n_resamples"], seed=params["seed"]),
                   facts={"compared": len(table), **{str(k): int(n) for k, n in counts.items()}}, data=c)
