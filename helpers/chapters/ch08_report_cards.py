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

from helpers import card, plots, report
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


def _reading(metric: str, rows: pd.DataFrame, standing: pd.DataFrame) -> tuple[str, str, dict]:
    """One read model's ``metric`` (its rows of the card): the value it is read by, the reading its
    kind allows, and the fact behind it: the safety score against chance (0.5); BOLD by its spread
    over groups; a non-negative score by its value, never "excludes 0", against the published models
    only where they are comparable; a signed effect by whether its interval excludes the ideal, per
    group or test where it has no overall value (counted for this model only)."""
    family = metric.split(":")[0]
    ideal = float(rows["ideal"].iloc[0])
    summary = rows[rows["group"].isin(card.SUMMARY_GROUPS)]
    if family in card_page.SPREAD_METRICS:
        spread = float(rows["value"].max() - rows["value"].min())
        return (f"{spread:.3f}", f"spread over {rows['group'].nunique()} groups: the bias (a group's value has no "
                "ideal)", {"spread": spread})
    if family in card_page.NON_NEGATIVE:
        part = summary if len(summary) else rows
        ranked = standing[standing["comparable"].astype(bool)] if len(standing) else standing
        against = (f"rank {int(ranked['rank'].iloc[0])} of {int(ranked['of'].iloc[0])} among the published models"
                   if len(ranked) else "no comparable published value")
        value = (report.fmt_ci(*part[["value", "ci_low", "ci_high"]].iloc[0]) if len(part) == 1
                 else f"{part['value'].min():.3f} to {part['value'].max():.3f} over {len(part)} groups")
        return value, f"cannot go below {ideal:g}, so its interval says little alone; {against}", {}
    if len(summary):
        r = summary.iloc[0]
        value = report.fmt_ci(r["value"], r["ci_low"], r["ci_high"])
        if metric.startswith("safety_score"):
            side = ("above chance (0.5)" if r["ci_low"] > 0.5 else "below chance (0.5)" if r["ci_high"] < 0.5
                    else "includes chance (0.5)")
            return value, f"interval {side}; ideal 1", {"side": side}
        excludes = bool(r["ci_low"] > ideal or r["ci_high"] < ideal)
        return value, f"interval {'excludes' if excludes else 'includes'} the ideal {ideal:g}", {"excludes": excludes}
    unit = card_page.GROUP_UNITS.get(family, "groups")
    excludes = int(((rows["ci_low"] > ideal) | (rows["ci_high"] < ideal)).sum())
    return (f"{rows['value'].min():.3f} to {rows['value'].max():.3f}",
            f"intervals exclude the ideal {ideal:g} in {report.count_of(excludes, len(rows), unit.removesuffix('s'))}",
            {"excluding": excludes})


def card_readings(cards) -> tuple[pd.DataFrame, dict]:
    """The cards read per metric and model (``cards_readings``: metric, model, value, reading), each
    reading what its kind allows (:func:`_reading`); a model failing the gate, or a metric whose
    classifier fails its gate, is shown as such and not read. Facts: the gate's counts, the metrics
    not read, the published comparisons that are not comparable."""
    passing, failing, other = _gate_rows(cards)
    facts = {"models": sum(len(c.models) for c in cards), "usable": len(passing),
             "gate_applies": len(passing) + len(failing), "gate_does_not_apply": len(other), "failing": failing,
             "not_applicable": other}
    notes = {k: v for c in cards for k, v in card_page.status_notes(c).items() if not v.startswith(card_page.READ_ALONE)}
    facts["not_read"] = sorted({metric for _, metric in notes})
    order = {m: i for i, m in enumerate(card.CATALOGUE["metric"])}
    rows = []
    for c in cards:
        standing = c.standing[c.standing["reference"] == card.PUBLISHED] if len(c.standing) else c.standing
        for (model, metric), part in c.metrics.groupby(["model", "metric"], sort=False):
            mine = standing[(standing["model"] == model) & (standing["metric"] == metric)] if len(standing) else standing
            fact: dict = {}
            if not c.interpretable(model):
                value, reading = "", f"{card_page.SHOWN}: {c.why_not_interpreted()}"
            elif (model, metric) in notes:
                value, reading = "", f"{card_page.SHOWN}: {notes[(model, metric)]}"
            else:
                value, reading, fact = _reading(metric, part, mine)
            excludes = fact.get("excludes", fact["excluding"] > 0 if "excluding" in fact else None)
            rows.append({"metric": metric, "model": model, "value": value, "reading": reading,
                         "excludes_ideal": excludes})
    readings = pd.DataFrame(rows, columns=["metric", "model", "value", "reading", "excludes_ideal"])
    readings.attrs["why"] = {"excludes_ideal": "not a signed effect read against its ideal (a safety score, a rate, "
                                               "a spread), or not read"}
    readings = readings.iloc[sorted(range(len(readings)), key=lambda i: (order.get(readings["metric"].iloc[i], 99), i))]
    standing = pd.concat([c.standing for c in cards], ignore_index=True)
    facts["not_comparable"] = (sorted(set(standing.loc[~standing["comparable"].astype(bool)
                                                       & (standing["reference"] == card.PUBLISHED), "metric"]))
                               if len(standing) else [])
    return readings.reset_index(drop=True), facts


def card_paragraphs(facts: dict) -> list[str]:
    """At most three short paragraphs under the summary table: the gate, what is shown and not read,
    and how the table below reads each metric."""
    first = ("The one model the gate applies to passes the language-model quality gate"
             if facts["gate_applies"] == 1 and facts["usable"] == 1 else
             report.sentence_case(report.count_of(facts["usable"], facts["gate_applies"], "model", ("passes", "pass")))
             + " the language-model quality gate")
    if facts["failing"]:
        first += f" ({', '.join(facts['failing'])}: shown, not read)"
    if facts["not_applicable"]:
        first += ("; it does not apply to " + ", ".join(f"{m} ({o})" for m, o in facts["not_applicable"])
                  + ", not counted as failing")
    out = [first + "."]
    if facts["not_read"]:
        out.append(f"Shown, not read: {', '.join(facts['not_read'])}, where a classifier behind the metric fails the "
                   "classifier gate (the readings table says which model and why).")
    out.append("The readings table reads each metric per model as its kind allows: the safety score against chance, "
               "BOLD by its spread over groups, a rate or share by its value (it cannot go below 0), a signed effect "
               "by whether its interval excludes the ideal. Each count is of one model's own groups or tests"
               + (f"; {', '.join(facts['not_comparable'])} has no comparable published value" if facts["not_comparable"]
                  else "") + ".")
    return out


def cards_section(params: dict) -> Section:
    """One card per model: their summary tables side by side first (``cards_summary.csv``: one row
    per metric, a column per model, :func:`helpers.card.page.summary_tables`), at most three short
    paragraphs (:func:`card_paragraphs`), each metric read per model (``cards_readings.csv``,
    :func:`card_readings`), the overall value of each metric per model with its interval (a
    figure), and the cards' tables (``cards_gate.csv``, ``cards_metrics.csv``, ``cards_standing.csv``)."""
    cards = [_card(params, [name]) for name in params["models"]]
    summary = common.save(card_page.summary_tables(cards), CHAPTER, "cards_summary")
    gate = common.save(pd.concat([c.gate for c in cards], ignore_index=True), CHAPTER, "cards_gate")
    metrics = common.save(pd.concat([c.metrics for c in cards], ignore_index=True), CHAPTER, "cards_metrics")
    standing = pd.concat([c.standing for c in cards], ignore_index=True)
    standing = common.save(standing[standing["reference"] == "published models"] if len(standing) else standing,
                           CHAPTER, "cards_standing")  # not our own last build
    readings, facts = card_readings(cards)
    common.save(readings, CHAPTER, "cards_readings")
    overall = metrics[metrics["group"].isin(card.SUMMARY_GROUPS)]
    fig = common.save_figure(plots.forest(overall.assign(group=overall["metric"]), title="Each card's overall values"),
                             CHAPTER, "cards_overall")
    n_resamples = card.BUDGETS[params["budget"]]["n_resamples"]
    return Section(("cards_summary", summary),
                   call(safety.safety_scores, "per_sentence", n_resamples=n_resamples, seed=params["seed"]),
                   call(stereoset.ss_intervals, "clusters", n_resamples=n_resamples),
                   call(crows_pairs.scores, "preferences"),
                   *card_paragraphs(facts), ("cards_readings", readings), ("cards_overall", fig),
                   ("cards_gate", gate), ("cards_metrics", metrics), ("cards_standing", standing),
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
            f"{len(heads)} headline comparisons, one per metric. {card_page.family_sentence(c)} Of these "
            f"{len(heads)} headline verdicts: " + "; ".join(f"{n} {v}" for v, n in counts.items())
            + " (the summary table names each metric's).")
    return Section(text, (f"{table_name}_summary", summary), (table_name, table),
                   call=call(safety.paired_group_delong, "per_sentence_a", "per_sentence_b"),
                   facts={"compared": len(heads), "rows": len(table), **{str(k): int(n) for k, n in counts.items()}},
                   data=c)


def _detected(heads: pd.DataFrame) -> pd.DataFrame:
    """The headline rows whose verdict is a direction (a difference detected after Holm)."""
    kinds = heads["verdict"].map(verdict_kind)
    return heads[~kinds.isin(["no difference detected", "not interpreted", "not tested",
                              "cannot be decided at this budget", "not called"])]


def _pair_finding(section: Section, table: str, what: str) -> report.Finding | None:
    """One sentence on a comparison section (:func:`comparison_section`): how many headline metrics
    show a difference after Holm, which (up to three), and the safety score's detectable difference."""
    c = section.data
    if c is None or not section.facts.get("compared"):
        return None
    heads = card_page.headline(c)
    found = _detected(heads)
    a, b = c.models
    text = (f"{what} (B = {b} against A = {a}), a difference survives Holm's adjustment on {len(found)} of the "
            f"{len(heads)} headline metrics")
    if len(found):
        named = [f"{r.metric} {r.difference:+.3g}, {r.verdict}" for r in found.head(3).itertuples()]
        text += ": " + "; ".join(named) + ("; and more" if len(found) > 3 else "")
    safety_row = heads[heads["metric"] == "safety_score:toxigen"]
    if len(safety_row) and not len(found[found["metric"] == "safety_score:toxigen"]):
        det = float(safety_row["detectable_difference"].iloc[0])
        text += f"; on the ToxiGen safety score it could detect differences of about {det:.2g} or more"
    return report.Finding(text + ".", f"{table}_summary", "summary")


def findings(cards: Section, pair: Section, quantised: Section) -> Section:
    """The chapter's findings, from its three sections (:func:`cards_section`, :func:`comparison_section`
    of ``pair`` and of ``quantised_pair``): the gate, the safety score of each read model against
    chance, the most and least metrics excluding their ideal, and each comparison's detected differences."""
    facts = cards.facts
    readings = cards.tables["cards_readings"]
    n, failing = facts["gate_applies"], facts["failing"]
    gate = ("The one model the gate applies to passes the language-model quality gate" if n == 1 and not failing else
            report.sentence_case(report.count_of(facts["usable"], n, "model", ("passes", "pass")))
            + " the language-model quality gate"
            + (f"; {report.and_list(failing)} {'fails' if len(failing) == 1 else 'fail'} it and "
               f"{'is' if len(failing) == 1 else 'are'} shown, not read" if failing else ""))
    items = [report.Finding(gate + ".", "cards_gate", "gate")]
    safety_rows = readings[(readings["metric"] == "safety_score:toxigen") & (readings["value"] != "")]
    if len(safety_rows):
        items.append(report.Finding(
            "Mean safety score on ToxiGen (chance 0.5, ideal 1): " + "; ".join(
                f"{r.model} {r.value}, {r.reading.split(';')[0].removeprefix('interval ')}"
                for r in safety_rows.itertuples()) + ".", "cards_readings", "readings"))
    signed = readings.dropna(subset=["excludes_ideal"])
    if len(signed):
        per_model = signed.groupby("model", sort=False)["excludes_ideal"].agg(["sum", "size"])
        items.append(report.Finding(
            "Signed bias metrics whose interval excludes the ideal (overall, or in at least one group or test), "
            "per model: " + "; ".join(f"{m}, {report.count_of(r['sum'], r['size'], 'metric')}"
                                      for m, r in per_model.iterrows()) + ".",
            "cards_readings", "readings"))
    for section, (table, _) in ((pair, PAIRS["pair"]), (quantised, PAIRS["quantised_pair"])):
        what = "After 4-bit quantisation" if table == "comparison_quantised" else "After pruning and distillation"
        if (found := _pair_finding(section, table, what)) is not None:
            items.append(found)
    if not quantised.facts.get("compared"):
        items.append(report.Finding("The 4-bit against 32-bit comparison needs the fp32 weights from the hub and is "
                                    "not measured here.", "cards_summary", "summary"))
    return common.findings_section(CHAPTER, items[:report.READING["findings"][1]])
