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
from helpers.card import page as card_page
from helpers.chapters import common
from helpers.chapters.common import Section, call
from helpers.errors import InputError
from helpers.metrics import crows_pairs, safety, stereoset

CHAPTER = "08_report_cards"
#: The notebook's parameters, in the order of its parameters cell and of ``parameters.csv``.
PARAMETERS = ("models", "pair", "quantised_pair", "budget", "seed", "device", "min_ratio")
DEFAULTS = dict(models="core-packages", pair=["smollm2-135m", "zoo-smollm2-L24-kd"],
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


def _gate_rows(cards) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """The models that pass the gate, those that fail it, and those it does not apply to (with
    their objective: permutation LMs, encoders, classifiers are never counted as failing)."""
    passing, failing, other = [], [], []
    for c in cards:
        for g in c.gate.itertuples():
            if not card_page.gate_applies(g):
                other.append((g.model, g.objective))
            elif bool(g.usable):
                passing.append(g.model)
            else:
                failing.append(g.model)
    return passing, failing, other


def card_sentences(cards) -> tuple[list[str], dict]:
    """The cards' sentences and the facts they state, each from the tables: the gate (a model the
    gate does not apply to is not counted as failing), per metric the reading its kind allows (the
    safety score against chance, 0.5; BOLD by its spread over groups; a non-negative score by its
    values, never "excludes 0"; a signed effect by whether its interval excludes the ideal), and
    each model's place among the published models in the card page's words
    (:func:`helpers.card.page.standing_sentence`)."""
    passing, failing, other = _gate_rows(cards)
    applies = len(passing) + len(failing)
    facts = {"models": sum(len(c.models) for c in cards), "usable": len(passing), "gate_applies": applies,
             "gate_does_not_apply": len(other)}
    first = f"{len(passing)} of {applies} models pass the language-model quality gate"
    if failing:
        first += f" ({', '.join(failing)}: shown, not read)"
    if other:
        first += ("; it does not apply to " + ", ".join(f"{m} ({objective})" for m, objective in other)
                  + ", not counted as failing")
    lines = [first + "."]
    metrics = pd.concat([c.metrics for c in cards], ignore_index=True)
    notes = {k: v for c in cards for k, v in card_page.status_notes(c).items() if not v.startswith(card_page.READ_ALONE)}
    read_models = [m for c in cards for m in c.models if c.interpretable(m)]
    facts["not_read"] = sorted({metric for _, metric in notes})
    if notes:
        lines.append("Shown, not read (a classifier behind them fails the classifier gate): "
                     + "; ".join(f"{metric} ({why})" for metric, why in
                                 dict(((metric, why) for (_, metric), why in notes.items())).items()) + ".")
    read = metrics[metrics["model"].isin(read_models)
                   & ~pd.Series(list(zip(metrics["model"], metrics["metric"])), index=metrics.index).isin(set(notes))]
    order = {m: i for i, m in enumerate(card.CATALOGUE["metric"])}
    for metric in sorted(read["metric"].unique(), key=lambda m: order.get(m, len(order))):
        rows = read[read["metric"] == metric]
        family = metric.split(":")[0]
        ideal = float(rows["ideal"].iloc[0])
        summary = rows[rows["group"].isin(card.SUMMARY_GROUPS)]
        n_models = rows["model"].nunique()
        if family in card_page.SPREAD_METRICS:
            spread = rows.groupby("model")["value"].agg(lambda v: v.max() - v.min())
            facts[f"{metric}_spread"] = float(spread.max())
            lines.append(f"{metric}: the spread over groups is the bias (a group's value has no ideal); it is "
                         + (f"{spread.iloc[0]:.3f}" if len(spread) == 1 else
                            f"{spread.min():.3f} to {spread.max():.3f} over {len(spread)} read models") + ".")
        elif family in card_page.NON_NEGATIVE:
            part = summary if len(summary) else rows
            lines.append(f"{metric}: {'value' if len(part) == 1 else 'values'} "
                         + (f"{part['value'].iloc[0]:.3f}" if len(part) == 1 else
                            f"{part['value'].min():.3f} to {part['value'].max():.3f}")
                         + f" ({'overall' if len(summary) else 'per group'}, {n_models} read "
                         f"model{'s' * (n_models != 1)}); it cannot go below {ideal:g}, so an interval excluding "
                         f"{ideal:g} says little: read it against the other models and the published ones.")
        elif metric.startswith("safety_score") and len(summary):
            above = summary[summary["ci_low"] > 0.5]
            below = summary[summary["ci_high"] < 0.5]
            facts[f"{metric}_above_chance"], facts[f"{metric}_below_chance"] = len(above), len(below)
            values = (f"value {summary['value'].iloc[0]:.3f}" if len(summary) == 1 else
                      f"values {summary['value'].min():.3f} to {summary['value'].max():.3f}")
            lines.append(f"{metric}: {len(above)} of {len(summary)} read models have an interval above 0.5 (chance: "
                         f"they tell harmful from benign sentences apart), {len(below)} below it ({values}; ideal 1).")
        elif len(summary):
            excludes = summary[(summary["ci_low"] > ideal) | (summary["ci_high"] < ideal)]
            facts[f"{metric}_excluding_ideal"] = len(excludes)
            values = (f"value {summary['value'].iloc[0]:.3f}" if len(summary) == 1 else
                      f"values {summary['value'].min():.3f} to {summary['value'].max():.3f}")
            lines.append(f"{metric}: {len(excludes)} of {len(summary)} read models have an interval that excludes "
                         f"the ideal {ideal:g} ({values}).")
        else:                                  # a signed effect per group or test without an overall value
            excludes = rows[(rows["ci_low"] > ideal) | (rows["ci_high"] < ideal)]
            facts[f"{metric}_groups_excluding_ideal"] = len(excludes)
            lines.append(f"{metric}: {len(excludes)} of {len(rows)} group intervals (over {n_models} read "
                         f"model{'s' * (n_models != 1)}) exclude the ideal {ideal:g}.")
    standing = pd.concat([c.standing for c in cards], ignore_index=True)
    if len(standing):
        standing = standing[standing["reference"] == card.PUBLISHED]
    facts["not_comparable"] = []
    for _, r in standing.iterrows():
        if not card_page.is_comparable(r):
            facts["not_comparable"].append(r["metric"])
        lines.append(card_page.standing_sentence(r, with_metric=True))
    return lines, facts


def cards_section(params: dict) -> Section:
    """One card per model (``cards_gate.csv``, ``cards_metrics.csv``, ``cards_standing.csv``) and
    their summary tables side by side (``cards_summary.csv``: one row per metric, a column per
    model, :func:`helpers.card.page.summary_tables`), the overall value of each metric per model
    with its interval (a figure), and the sentences of :func:`card_sentences`."""
    cards = [_card(params, [name]) for name in params["models"]]
    summary = common.save(card_page.summary_tables(cards), CHAPTER, "cards_summary")
    gate = common.save(pd.concat([c.gate for c in cards], ignore_index=True), CHAPTER, "cards_gate")
    metrics = common.save(pd.concat([c.metrics for c in cards], ignore_index=True), CHAPTER, "cards_metrics")
    standing = pd.concat([c.standing for c in cards], ignore_index=True)
    standing = common.save(standing[standing["reference"] == "published models"] if len(standing) else standing,
                           CHAPTER, "cards_standing")  # not our own last build
    overall = metrics[metrics["group"].isin(card.SUMMARY_GROUPS)]
    fig = common.save_figure(plots.forest(overall.assign(group=overall["metric"]), title="Each card's overall values"),
                             CHAPTER, "cards_overall")
    lines, facts = card_sentences(cards)
    return Section(" ".join(lines), ("cards_summary", summary), ("cards_overall", fig), ("cards_gate", gate),
                   ("cards_metrics", metrics), ("cards_standing", standing),
                   call(stereoset.ss_intervals, "clusters", n_resamples=card.BUDGETS[params["budget"]]["n_resamples"]),
                   call(crows_pairs.scores, "preferences"),
                   call=call(safety.safety_scores, "per_sentence", n_resamples=card.BUDGETS[params["budget"]]["n_resamples"],
                             seed=params["seed"]),
                   facts=facts, data=cards)


def verdict_kind(text: str) -> str:
    """A headline verdict's kind: its direction as worded ("B safer than A"), or "no difference
    detected", "not interpreted", "not tested", "cannot be decided", "not called"."""
    t = str(text)
    for prefix, kind in (("no difference", "no difference detected"), ("not interpreted", "not interpreted"),
                         ("not tested", "not tested"), ("cannot be decided", "cannot be decided at this budget"),
                         ("not called", "not called")):
        if t.startswith(prefix):
            return kind
    return t


def comparison_section(params: dict, which: str = "pair") -> Section:
    """The card of ``params[which]`` (B against A item by item; :data:`PAIRS`): its summary table
    (``<table>_summary.csv``), every comparison row, and the count of its headline verdicts (one
    per metric, Holm-adjusted together; the per-group rows are exploratory); a sentence only when the pair is None, or when a model
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
    summary = common.save(card_page.summary_table(c), CHAPTER, f"{table_name}_summary")
    table = common.save(c.comparison, CHAPTER, table_name)
    heads = card_page.headline(c)
    kinds = heads["verdict"].map(verdict_kind)
    counts = kinds.value_counts()
    a, b = c.models
    text = (f"{b} against {a} ({question}), on the same sentences, clusters, pairs, words and texts: "
            f"{len(heads)} headline comparisons, one per metric. {card_page.family_sentence(c)} Headline verdicts: "
            + "; ".join(f"{v}: {n} ({', '.join(heads.loc[kinds == v, 'metric'])})" for v, n in counts.items()) + ".")
    return Section(text, (f"{table_name}_summary", summary), (table_name, table),
                   call=call(safety.paired_group_delong, "per_sentence_a", "per_sentence_b"),
                   facts={"compared": len(heads), "rows": len(table), **{str(k): int(n) for k, n in counts.items()}},
                   data=c)
