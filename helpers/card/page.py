"""The report card rendered (issue 36): the summary table (one row per metric, a column per model,
and with two models the headline comparison), ``report.html`` (a page that reads as a report: the
gate banner, the summary table, the headline forest plot, then each metric's detail collapsed),
the terminal summary of ``harms report`` and ``model_card.md`` (the hub's ``model-index`` and its
"Bias, Risks, and Limitations" section).

The anchors: the hub's model-card evaluation results, lm-evaluation-harness's results table and
HELM's leaderboard pages -- one table first, the detail behind it.

    >>> from helpers import card
    >>> c = card.report_card(["smollm2-135m"], budget="quick")          # doctest: +SKIP
    >>> card.page.summary_table(c)                                       # doctest: +SKIP

:mod:`helpers.card.measuring` computes the :class:`~helpers.card.Card`; this module only reads it,
and no other module of the card imports it: :func:`write` is :func:`helpers.card.writing.write`
with ``report.html`` and ``model_card.md``.
"""

from __future__ import annotations

import html as esc
import json
import textwrap

import numpy as np
import pandas as pd

from helpers.card.catalogue import CATALOGUE, INTERVALS, SUMMARY_GROUPS, paper
from helpers.card.measuring import NOT_COMPUTED, Card
from helpers.card.references import (PUBLISHED, REFERENCES, STANDING_NOTE, offline_reference,
                                   published_reference)
from helpers.card.writing import write as write_files

__all__ = ["summary_table", "summary_tables", "per_group_summary", "summary", "html", "model_card", "write",
           "gate_lines", "verdict_class", "FOREST_ROWS", "DETAIL_ROWS"]

#: The most groups one forest plot shows (besides the overall rows).
FOREST_ROWS = 30
#: The most rows of a table in a metric's detail (the full table: metrics.csv, report.json).
DETAIL_ROWS = 20
#: The metrics whose spread over groups is the bias (no overall row, no ideal per group).
SPREAD_METRICS = ("bold_sentiment", "bold_toxicity")
#: Metrics that cannot go below their ideal 0 (rates, shares, sums of absolute differences): an
#: interval excluding 0 is near-certain and says little; they are read against each other and the
#: published models.
NON_NEGATIVE = ("toxd_fpr", "bold_toxicity", "atomic_probing", "categorical_bias", "unintended_bias")
#: What a metric's groups are called when the card summarises them.
GROUP_UNITS = {"seat": "tests", "ilps": "groups", "ceat": "groups", "ceattox": "groups"}
SHOWN = "shown, not interpreted"
#: Below this page width (CSS px) the summary table reflows: a block of lines per metric.
REFLOW_BELOW_PX = 720
#: The resolution of the page's inline figures (a figure's inches times this: its width in px).
PNG_DPI = 110
#: How a status note starts when the model's own value is read and only its comparison is not
#: (the other model's classifier fails).
READ_ALONE = "read alone"


# --------------------------------------------------------------------------- formatting

def _finite(v) -> float | None:
    """``v`` as a finite float, or None (missing, NaN, not a number)."""
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if np.isfinite(v) else None


def _fmt(v, signed: bool = False) -> str:
    """A number in 3 to 4 significant places, ``—`` when missing."""
    if (v := _finite(v)) is None:
        return "—"
    sign = "+" if signed else ""
    a = abs(v)
    if a >= 100:
        return f"{v:{sign}.1f}"
    if a >= 10:
        return f"{v:{sign}.2f}"
    if a == 0 or a >= 0.01:
        return f"{v:{sign}.3f}"
    return f"{v:{sign}.2g}"


def _short_interval(low, high, signed: bool = False) -> str:
    low, high = float(low) if low is not None else np.nan, float(high) if high is not None else np.nan
    if np.isfinite(low) and np.isfinite(high):
        return f"[{_fmt(low, signed)}, {_fmt(high, signed)}]"
    return "(no interval)"


def _p(p) -> str:
    if (p := _finite(p)) is None:
        return "—"
    return "< 0.001" if p < 0.001 else f"{p:.2g}" if p < 0.1 else f"{p:.2f}"


def _family(metric: str) -> str:
    return metric if metric.startswith("safety_score") else metric.split(":")[0]



# --------------------------------------------------------------------------- reading the card

def gate_applies(g) -> bool:
    """Whether the language-model quality gate applies to the model of gate row ``g`` (a row tuple
    or Series of ``Card.gate``)."""
    return bool(g.gate_applies)


def _does_not_apply_reason(g) -> str:
    reason = getattr(g, "reason", None)
    if isinstance(reason, str) and reason:
        return reason
    return {"encoder": "an encoder has no log-probabilities: the gate measures causal and masked LMs",
            "permutation": "a permutation LM: the gate measures causal and masked LMs",
            "classifier": "a classifier has no log-probabilities"}.get(g.objective, f"objective {g.objective!r}")


def gate_lines(c: Card) -> list[tuple[str, str]]:
    """One ``(kind, sentence)`` per model: ``ok`` passes the gate, ``bad`` FAILS it (its numbers
    shown, not interpreted), ``na`` the gate does not apply to it (never said to fail)."""
    out = []
    for g in c.gate.itertuples():
        if not gate_applies(g):
            tail = "" if c.interpretable(g.model) else f"; its numbers are {SHOWN}"
            out.append(("na", f"{g.model}: no quality gate (the quality gate does not apply: {_does_not_apply_reason(g)})"
                              f"{tail}"))
        elif bool(g.usable):
            out.append(("ok", f"{g.model}: passes the quality gate (held-out perplexity {g.heldout_perplexity:.1f}, "
                              f"{g.perplexity_ratio:.1f}x better than its unigram baseline)"))
        else:
            why = getattr(g, "reason", None)
            if not isinstance(why, str):
                why = (f"perplexity {g.heldout_perplexity:.1f} is only {g.perplexity_ratio:.2f}x better than its "
                       f"unigram baseline; needs {g.min_ratio:g}x")
            out.append(("bad", f"{g.model}: FAILS the quality gate ({why}): its numbers are {SHOWN}"))
    return out


def status_notes(c: Card) -> dict:
    """(model, metric) -> why that metric is shown, not interpreted, for that model."""
    if "note" not in c.status:
        return {}
    s = c.status.dropna(subset=["note"])
    return {(r.model, r.metric): str(r.note) for r in s.itertuples()}


def _why_not_interpreted(c: Card, model: str, metric: str, notes: dict | None = None) -> str | None:
    notes = status_notes(c) if notes is None else notes
    if (model, metric) in notes and not notes[(model, metric)].startswith(READ_ALONE):
        return notes[(model, metric)]
    if not c.interpretable(model):
        row = c.gate[c.gate["model"] == model]
        applies = bool(len(row)) and gate_applies(row.iloc[0])
        return "the model fails the language-model quality gate" if applies else "the quality gate does not apply"
    return None


def _metrics_in_order(c: Card) -> list[str]:
    present = set(c.metrics["metric"])
    return [m for m in CATALOGUE["metric"] if m in present] + sorted(present - set(CATALOGUE["metric"]))


def _summary_value(metric: str, rows: pd.DataFrame) -> tuple[float, float, float, str]:
    """The value a metric is summarised by: its summary row (mean over groups, overall, all), else
    for BOLD the spread over groups (max - min: the bias), else the mean |value - ideal| over its
    groups; with its interval when it has one, and what it is."""
    s = rows[rows["group"].isin(SUMMARY_GROUPS)]
    if len(s):
        r = s.iloc[0]
        return float(r["value"]), float(r["ci_low"]), float(r["ci_high"]), str(r["group"])
    vals = rows.dropna(subset=["value"])
    unit = GROUP_UNITS.get(metric.split(":")[0], "groups")
    if not len(vals):
        return np.nan, np.nan, np.nan, "no value"
    if metric.split(":")[0] in SPREAD_METRICS:
        return (float(vals["value"].max() - vals["value"].min()), np.nan, np.nan,
                f"spread over {len(vals)} {unit} (max - min)")
    ideal = float(vals["ideal"].iloc[0])
    return (float((vals["value"] - ideal).abs().mean()), np.nan, np.nan,
            f"mean |value - {ideal:g}| over {len(vals)} {unit}")


def _ideal(metric: str) -> str:
    row = CATALOGUE.set_index("metric").loc[metric] if metric in set(CATALOGUE["metric"]) else None
    if row is None:
        return "—"
    if metric.split(":")[0] in SPREAD_METRICS:
        return "0 (no spread)"
    if metric.startswith("safety_score"):
        return "1 (chance 0.5)"
    return f"{row['ideal']:g}" if isinstance(row["ideal"], float) else str(row["ideal"])


def _direction(metric: str) -> str:
    cat = CATALOGUE.set_index("metric")
    return str(cat.loc[metric, "direction"]) if metric in cat.index else ""


def _standing_cell(c: Card, model: str, metric: str) -> str:
    if not len(c.standing):
        return ""
    s = c.standing[(c.standing["model"] == model) & (c.standing["metric"] == metric)
                   & (c.standing["reference"] == PUBLISHED)]
    if not len(s):
        return ""
    r = s.iloc[0]
    if not is_comparable(r):
        return "not comparable"
    text = f"rank {int(r['rank'])} of {int(r['of'])}"
    if not r["interpreted"]:
        text += f"; {SHOWN}"
    return text


def is_comparable(r) -> bool:
    """Whether a standing row may be ranked (:data:`helpers.card.references.NOT_COMPARABLE`)."""
    return bool(r["comparable"])


def headline(c: Card) -> pd.DataFrame:
    """The comparison's headline rows: one per compared metric (its overall or mean row, the
    card's ``headline`` column), in catalogue order."""
    comp = c.comparison
    if not len(comp):
        return comp
    rows = comp[comp["headline"].astype(bool)]
    order = {m: i for i, m in enumerate(CATALOGUE["metric"])}
    return rows.iloc[np.argsort([order.get(m, len(order)) for m in rows["metric"]], kind="stable")]


def _difference_cell(r) -> str:
    level = float(r["ci_level"])
    diff = _fmt(r["difference"], signed=True)
    if np.isfinite(float(r["ci_low"])) and np.isfinite(float(r["ci_high"])):
        return f"{diff} {_short_interval(r['ci_low'], r['ci_high'], signed=True)} at {level * 100:.3g} %"
    return f"{diff} (test only, no interval)"


def verdict_class(text: str) -> str:
    """How a verdict cell is coloured: ``better`` (green: B less harmful than A), ``worse`` (red),
    ``direction`` (a difference with no better side, e.g. sentiment or a preference rate), or
    ``none`` (grey: no difference detected, not tested, not interpreted)."""
    t = str(text)
    if not t.startswith(("B ", "B's ")):
        return "none"
    worse = ("less safe", "more biased", "more toxic", "toxic more often", "calls more non-toxic")
    better = ("safer", "less biased", "less toxic", "toxic less often", "calls fewer non-toxic")
    if any(w in t for w in worse):
        return "worse"
    if any(w in t for w in better):
        return "better"
    return "direction"


def _compared_quantity(h) -> str:
    """What a headline comparison differences, and over what: "overall: mean |value| over 64 words"."""
    return f"{h['group']} over {int(h['n'])} {h['paired_on']}"


def _headline_cell(mine: pd.DataFrame, value) -> str:
    """A model's value of the compared quantity, with the interval of the model's own summary row
    when that row is the same quantity (the safety score's mean over groups, StereoSet's overall
    SS), else without one (a mean |value| over items has no interval of its own on the card)."""
    s = mine[mine["group"].isin(SUMMARY_GROUPS)]
    if len(s) and np.isclose(float(s["value"].iloc[0]), float(value), rtol=1e-9, atol=1e-9) \
            and np.isfinite(float(s["ci_low"].iloc[0])):
        return f"{_fmt(value)} {_short_interval(s['ci_low'].iloc[0], s['ci_high'].iloc[0])}"
    return _fmt(value)


def per_group_summary(c: Card, metric: str) -> str | None:
    """A two-model card's per-group summary of ``metric`` (the spread over groups, the mean
    |value - ideal| over groups) where its summary row shows the compared quantity instead: "mean
    |value - 0| over 16 groups: A 0.110, B 0.350"; None where the two are the same."""
    heads = headline(c)
    h = heads[heads["metric"] == metric] if len(heads) else heads
    if len(c.models) != 2 or not len(h):
        return None
    values, what = [], None
    for m in c.models:
        part = c.metrics[(c.metrics["metric"] == metric) & (c.metrics["model"] == m)]
        if not len(part):
            return None
        v, _, _, what = _summary_value(metric, part)
        values.append(v)
    if what in SUMMARY_GROUPS:
        return None
    return f"{what}: A {_fmt(values[0])}, B {_fmt(values[1])}"


def summary_table(c: Card) -> pd.DataFrame:
    """One row per metric on the card (catalogue order): a column per model (``value [95 %
    interval]``, or "shown, not interpreted" beside it), what that value is (``summarised as``), the
    model's place among the papers' published models ("rank r of N", "not comparable", or blank),
    the ideal and the direction. With two models (``A: name``, ``B: name``) a compared metric's
    values are those its headline comparison differences (the mean over groups, the overall share,
    the mean |value| over items), so ``difference B - A`` is the difference of the two values beside
    it, with its family-adjusted interval, the adjusted p, the smallest difference the test could
    detect and the verdict; the per-group summary moves to the metric's detail
    (:func:`per_group_summary`)."""
    two = len(c.models) == 2
    label = {m: (f"{'AB'[i]}: {m}" if two else m) for i, m in enumerate(c.models)}
    notes = status_notes(c)
    heads = headline(c).set_index("metric") if two and len(c.comparison) else pd.DataFrame()
    status = c.status.set_index(["model", "metric"])["status"] if len(c.status) else pd.Series(dtype=str)
    rows = []
    for metric in _metrics_in_order(c):
        mine = c.metrics[c.metrics["metric"] == metric]
        h = None
        if metric in heads.index:
            h = heads.loc[metric]
            h = h.iloc[0] if isinstance(h, pd.DataFrame) else h
        row = {"metric": metric}
        what = _compared_quantity(h) if h is not None else None
        for i, m in enumerate(c.models):
            part = mine[mine["model"] == m]
            if not len(part):
                st = str(status.get((m, metric), "not computed"))
                row[label[m]] = st.split(":")[0]
                continue
            if h is not None:
                cell = _headline_cell(part, h["value_a" if i == 0 else "value_b"])
            else:
                v, lo, hi, what_m = _summary_value(metric, part)
                what = what or what_m
                cell = f"{_fmt(v)} {_short_interval(lo, hi)}" if np.isfinite(lo) else _fmt(v)
            if _why_not_interpreted(c, m, metric, notes):
                cell += f"; {SHOWN}"
            row[label[m]] = cell
        row["summarised as"] = what or ""
        for m in c.models:
            row[f"{label[m]} among published"] = _standing_cell(c, m, metric)
        row["ideal"] = _ideal(metric)
        row["direction"] = _direction(metric)
        if two:
            if h is not None:
                det = h["detectable_difference"]
                row.update({"difference B - A": _difference_cell(h), "adjusted p": _p(h["p_adjusted"]),
                            "detectable difference": f"±{_fmt(det)}" if np.isfinite(float(det)) else "—",
                            "verdict": str(h["verdict"])})
            else:
                untested = (c.comparison.loc[(c.comparison["metric"] == metric) & (c.comparison["test"] == "not tested"),
                                             "verdict"] if len(c.comparison) else pd.Series(dtype=str))
                row.update({"difference B - A": "—", "adjusted p": "—", "detectable difference": "—",
                            "verdict": untested.iloc[0] if len(untested)
                            else "not tested: no paired comparison for this metric"})
        rows.append(row)
    cols = (["metric", *[label[m] for m in c.models]]
            + (["difference B - A", "verdict", "adjusted p", "detectable difference"] if two else [])
            + ["summarised as", "ideal", *[f"{label[m]} among published" for m in c.models], "direction"])
    return pd.DataFrame(rows, columns=cols)


def summary_tables(cards) -> pd.DataFrame:
    """The summary tables (:func:`summary_table`) of several one-model cards side by side
    (chapter 08): one row per metric, a value column and a place column per model."""
    frames = [summary_table(c).set_index("metric") for c in cards]
    order = {m: i for i, m in enumerate(CATALOGUE["metric"])}
    metrics = sorted({m for f in frames for m in f.index}, key=lambda m: order.get(m, len(order)))
    out = pd.DataFrame(index=pd.Index(metrics, name="metric"))
    for c, f in zip(cards, frames):
        for m in c.models:
            out[m] = f[m].reindex(metrics).fillna("not computed")
    out["ideal"] = [_ideal(m) for m in metrics]
    what = pd.concat([f["summarised as"] for f in frames])
    out["summarised as"] = [next((w for w in what[what.index == m] if w), "") for m in metrics]
    for c, f in zip(cards, frames):
        for m in c.models:
            out[f"{m} among published"] = f[f"{m} among published"].reindex(metrics).fillna("")
    out["direction"] = [_direction(m) for m in metrics]
    return out.reset_index()


def family_sentence(c: Card) -> str:
    """The one sentence that states the comparison's families of tests."""
    heads = headline(c)
    if not len(heads):
        return ""
    levels = pd.to_numeric(heads["ci_level"], errors="coerce").dropna()
    low, high = (float(levels.min()) * 100, float(levels.max()) * 100) if len(levels) else (95.0, 95.0)
    interval = ("" if high <= 95.0 + 1e-9 else
                f"; each interval is at the level of its Holm step ({low:.3g} %)" if f"{low:.3g}" == f"{high:.3g}" else
                f"; each interval is at the level of its Holm step ({low:.3g} % to {high:.3g} %), so it agrees with "
                "its verdict")
    size = int(heads["family_size"].iloc[0]) or len(heads)
    tested = "" if size == len(heads) else f" (of {len(heads)}; the others have no p-value)"
    return (f"The headline family: Holm's adjustment over the {size} headline comparisons, one per metric{tested}"
            f"{interval}. The per-group rows (in each metric's detail) are exploratory, adjusted within their metric.")


# --------------------------------------------------------------------------- terminal

def _terminal_table(table: pd.DataFrame, width: int = 100) -> str:
    """The summary table in fixed width: a line per metric with each model's value and the ideal,
    then indented (wrapped) lines for what summarises it, "shown, not interpreted", the place among
    the published models, and with two models the difference and the verdict."""
    fixed = {"metric", "summarised as", "ideal", "direction", "difference B - A", "adjusted p",
             "detectable difference", "verdict"}
    models = [c for c in table.columns if c not in fixed and not c.endswith(" among published")]
    mw = max([len("metric"), *table["metric"].map(len)]) + 2
    vw = min(max(24, *(len(m) + 2 for m in models)), max(12, (width - mw - 14) // max(1, len(models))))
    lines = ["".join([f"{'metric':<{mw}}", *[f"{m[:vw - 2]:<{vw}}" for m in models], "ideal"])]
    lines.append("-" * min(width, len(lines[0]) + 14))
    for _, rd in table.iterrows():
        cells = [str(rd[m]).split(";")[0] for m in models]
        lines.append("".join([f"{rd['metric']:<{mw}}", *[f"{v[:vw - 2]:<{vw}}" for v in cells], str(rd["ideal"])]))
        extra = []
        if rd["summarised as"] and rd["summarised as"] not in SUMMARY_GROUPS:
            extra.append(f"summarised as {rd['summarised as']}")
        for m in models:
            bits = [SHOWN] if SHOWN in str(rd[m]) else []
            place = str(rd.get(f"{m} among published", "") or "")
            if place:
                bits.append(place.split(";")[0] + (" among the published models" if place.startswith("rank") else
                                                   " with the published models"))
            if bits:
                extra.append(f"{m.split(': ', 1)[-1]}: " + "; ".join(bits))
        if "verdict" in rd:
            extra.append(f"B - A: {rd['verdict']}" if rd["difference B - A"] == "—" else
                         f"B - A {rd['difference B - A']}, adjusted p {rd['adjusted p']}, "
                         f"detectable {rd['detectable difference']}: {rd['verdict']}")
        for e in extra:
            lines += textwrap.wrap(e, width=width, initial_indent="    ", subsequent_indent="      ")
    return "\n".join(lines)


def summary(c: Card, width: int = 100) -> str:
    """The terminal summary of ``harms report``: the gate lines, then the summary table in fixed
    width (:func:`summary_table`; ranks are among the papers' published models), the family of
    the comparison, and how many more metrics are listed in status.csv."""
    lines = [textwrap.fill(text, width=width, subsequent_indent="    ") for _, text in gate_lines(c)]
    table = summary_table(c)
    if len(table):
        lines += ["", _terminal_table(table, width)]
    if (sentence := family_sentence(c)):
        lines += ["", textwrap.fill(sentence, width=width)]
    later = c.status[c.status["status"] != "computed"] if len(c.status) else c.status
    failed = later[later["status"].str.startswith(NOT_COMPUTED)] if len(later) else later
    for r in failed.itertuples():
        lines.append(textwrap.fill(f"{r.model}: {r.metric} {r.status}", width=width, subsequent_indent="    "))
    later = later[~later["status"].str.startswith(NOT_COMPUTED)] if len(later) else later
    if len(later):
        lines.append(f"{later['metric'].nunique()} more metrics listed in status.csv, not computed: not applicable "
                     "(with the reason) or not asked for")
    return "\n".join(lines)


# --------------------------------------------------------------------------- page

def _png(fig) -> str:
    """A figure as an inline ``<img>`` (base64 PNG): the page needs no network and no other file."""
    import base64
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PNG_DPI)
    plt.close(fig)
    return f'<img alt="figure" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


def plotted_rows(rows: pd.DataFrame, limit: int = FOREST_ROWS) -> pd.DataFrame:
    """A metric's rows for its forest plot: the summary rows, and the ``limit`` groups farthest
    from the ideal (by the largest distance over the models), in their table order."""
    summary_rows = rows["group"].isin(SUMMARY_GROUPS) | rows["group"].str.startswith("overall")
    distance = (rows["value"] - rows["ideal"]).abs().groupby(rows["group"]).max()
    far = set(distance[~distance.index.isin(rows.loc[summary_rows, "group"])].nlargest(limit).index)
    return rows[summary_rows | rows["group"].isin(far)]


def _cell(v) -> str:
    if isinstance(v, (float, np.floating)):
        return _fmt(v)
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "—"
    return esc.escape(str(v))


def _table(df: pd.DataFrame, cell_class=None, caption: str | None = None, *, reflow: bool = False) -> str:
    """A table in its own horizontally scrolling box; ``cell_class(column, value)`` -> a class.
    ``reflow``: on a narrow screen each row becomes a block of "column: value" lines (no sideways
    scrolling; the summary table)."""
    head = "".join(f"<th>{esc.escape(str(c))}</th>" for c in df.columns)
    body = []
    for row in df.itertuples(index=False):
        tds = []
        for col, v in zip(df.columns, row):
            cls = cell_class(col, v) if cell_class else None
            label = f' data-label="{esc.escape(str(col))}"' if reflow else ""
            tds.append(f'<td class="{cls}"{label}>' if cls else f"<td{label}>")
            tds[-1] += _cell(v) + "</td>"
        body.append("<tr>" + "".join(tds) + "</tr>")
    cap = f"<caption>{esc.escape(caption)}</caption>" if caption else ""
    return (f'<div class="scroll"><table{" class=reflow" if reflow else ""}>{cap}<thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _detail_rows(c: Card, rows: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """A metric's rows as one line per group (a column per model: value [interval]): the summary
    rows and the groups farthest from the ideal, at most :data:`DETAIL_ROWS`; and the number of groups."""
    groups = list(dict.fromkeys(rows["group"]))
    summary_rows = [g for g in groups if g in SUMMARY_GROUPS or str(g).startswith("overall")]
    distance = (rows["value"] - rows["ideal"]).abs().groupby(rows["group"]).max()
    others = distance.drop(summary_rows, errors="ignore").sort_values(ascending=False, na_position="last")
    keep = set(summary_rows[:DETAIL_ROWS]) | set(others.index[:max(0, DETAIL_ROWS - len(summary_rows))])
    out = []
    for g in groups:
        if g not in keep:
            continue
        line = {"group": g}
        part = rows[rows["group"] == g]
        for m in c.models:
            r = part[part["model"] == m]
            line[m] = ("—" if not len(r) else
                       f"{_fmt(r['value'].iloc[0])} {_short_interval(r['ci_low'].iloc[0], r['ci_high'].iloc[0])}")
        line["n"] = "; ".join(str(int(n)) if pd.notna(n) else "—" for n in part["n"]) if "n" in part else "—"
        out.append(line)
    return pd.DataFrame(out), len(groups)


def _comparison_rows(comp: pd.DataFrame) -> pd.DataFrame:
    """A metric's comparison rows for its detail: the headline row first, then the smallest
    adjusted p, at most :data:`DETAIL_ROWS`."""
    comp = comp.sort_values(["headline", "p_adjusted"], ascending=[False, True], kind="stable").head(DETAIL_ROWS)
    return pd.DataFrame({"group": comp["group"], "n": comp["n"], "A": comp["value_a"].map(_fmt),
                         "B": comp["value_b"].map(_fmt),
                         "B - A": [_difference_cell(r) for _, r in comp.iterrows()], "test": comp["test"],
                         "p": comp["p_value"].map(_p), "adjusted p": comp["p_adjusted"].map(_p),
                         "family": comp["family"],
                         "verdict": comp["verdict"]})


def standing_sentence(r, *, with_metric: bool = False) -> str:
    """One row of a card's ``standing`` in words: its rank beside the reference and whether its
    interval holds the reference median (no such claim without an interval), or why it is not
    comparable; ``with_metric`` names the metric after the model (chapter 08's summary)."""
    who = f"{r['model']} ({r['metric']})" if with_metric else r["model"]
    if not is_comparable(r):
        return f"{who}: not comparable with the {r['reference']} ({r['note']}); no rank is given."
    text = (f"{who}: rank {int(r['rank'])} of {int(r['of'])} ({r['better']} is better) beside the "
            f"{r['reference']} ({r['source']}); their median {_fmt(r['reference_median'])}")
    differs = r.get("differs_from_median")
    if differs is None or (isinstance(differs, float) and np.isnan(differs)) or not (
            np.isfinite(float(r["ci_low"])) and np.isfinite(float(r["ci_high"]))):
        text += " (the model's value has no interval to hold it against)"
    else:
        text += " lies " + ("outside" if bool(differs) else "inside") + " its interval"
    if not r["interpreted"]:
        text += f"; {SHOWN}"
    return text + "."


def _settings_table(c: Card) -> pd.DataFrame:
    flat = []

    def walk(prefix, v):
        if isinstance(v, dict) and v:
            for k, x in v.items():
                walk(f"{prefix}.{k}" if prefix else str(k), x)
        else:
            flat.append({"key": prefix, "value": json.dumps(v) if isinstance(v, (list, dict)) else str(v)})
    walk("settings", c.settings)
    walk("", c.provenance)
    return pd.DataFrame(flat)


def html(c: Card) -> str:
    """``report.html``: one self-contained page (figures inline, no script, no network), readable
    on a 400-px screen: the gate banner, the summary table, the family of the comparison and its
    headline forest plot; then per metric a collapsed detail (per-group forest plot, its rows
    farthest from the ideal, its comparison rows, its standing); then the status of every metric,
    the settings and the provenance, collapsed too."""
    from helpers import plots

    notes = status_notes(c)
    parts = [f"<h1>Harm report card: {esc.escape(' vs '.join(c.models))}</h1>",
             f'<p class="meta">budget {esc.escape(str(c.budget))}, seed {esc.escape(str(c.settings.get("seed", "")))}; '
             "every value with its 95 % interval; the full tables are in metrics.csv and report.json.</p>"]
    lines = gate_lines(c)
    kinds = {k for k, _ in lines}
    failing = [t.split(":")[0] for k, t in lines if k == "bad"]
    if failing:
        head = (f"Fails the language-model quality gate: {', '.join(failing)}. Its numbers are shown, not "
                "interpreted; no verdict is drawn from them.")
    elif "ok" in kinds:
        head = "Every language model the gate applies to passes the language-model quality gate."
    else:
        head = "No model the gate measures is on this card: the quality gate does not apply."
    cls = "bad" if failing else "ok" if "ok" in kinds else "na"
    parts.append(f'<div class="banner {cls}"><strong>{esc.escape(head)}</strong><ul>'
                 + "".join(f'<li class="{k}">{esc.escape(t)}</li>' for k, t in lines) + "</ul></div>")
    table = summary_table(c)
    parts += ["<h2>Summary</h2>",
              _table(table, lambda col, v: f"v-{verdict_class(v)}" if col == "verdict" else
                     ("shown" if isinstance(v, str) and SHOWN in v else None), reflow=True)]
    heads = headline(c)
    if len(heads):
        parts.append(f"<p>{esc.escape(family_sentence(c))}</p>")
        parts.append(_png(plots.headline_differences(heads.assign(kind=heads["verdict"].map(verdict_class)),
                                                     title=f"B - A: {c.models[1]} - {c.models[0]}")))
    parts.append("<h2>Each metric</h2>")
    for metric in _metrics_in_order(c):
        rows = c.metrics[c.metrics["metric"] == metric]
        srow = table[table["metric"] == metric].iloc[0]
        values = [str(srow[col]).split(";")[0] for col in table.columns[1:1 + len(c.models)]]
        label = (f"{metric}: {values[0]}" if len(values) == 1 else
                 f"{metric}: A {values[0]}, B {values[1]} — {srow['verdict']}")
        body = []
        for m in c.models:
            if (m, metric) in notes:
                note = notes[(m, metric)]
                body.append(f'<p class="bad">{esc.escape(m)}: {esc.escape(note)}.</p>' if note.startswith(READ_ALONE)
                            else f'<p class="bad">{esc.escape(m)}: {SHOWN}: {esc.escape(note)}.</p>')
        body.append(f"<p>{esc.escape(_direction(metric))}; ideal {esc.escape(_ideal(metric))}. Interval: "
                    f"{esc.escape(INTERVALS.get(metric.split(':')[0], '95 %'))}.</p>")
        if (groups := per_group_summary(c, metric)):
            body.append(f"<p>Per-group summary: {esc.escape(groups)}.</p>")
        shown = plotted_rows(rows)
        ideal = None if metric == "bold_sentiment" else float(rows["ideal"].iloc[0])
        body.append(_png(plots.forest(shown, ideal=ideal, title=metric)))
        detail, n_groups = _detail_rows(c, rows)
        if len(detail) < n_groups:
            body.append(f"<p>{len(detail)} of {n_groups} rows: the summary rows and those farthest from the ideal. "
                        "The full table is in metrics.csv and report.json.</p>")
        body.append(_table(detail))
        comp = c.comparison[c.comparison["metric"] == metric] if len(c.comparison) else pd.DataFrame()
        if len(comp):
            body.append(f"<h4>{esc.escape(c.models[1])} against {esc.escape(c.models[0])}, item by item</h4>")
            shown_comp = _comparison_rows(comp)
            if len(shown_comp) < len(comp):
                body.append(f"<p>{len(shown_comp)} of {len(comp)} rows (the headline and the smallest adjusted p); "
                            "every row is in comparison.csv.</p>")
            body.append(_table(shown_comp, lambda col, v: f"v-{verdict_class(v)}" if col == "verdict" else None))
        st = c.standing[c.standing["metric"] == metric] if len(c.standing) else pd.DataFrame()
        if len(st):
            body.append("<h4>Where it stands</h4>")
            for reference, part in st.groupby("reference", sort=False):
                group = REFERENCES[metric][2]
                ref = (published_reference(metric) if reference == PUBLISHED
                       else offline_reference(metric, group, c.budget))
                if len(ref) and all(is_comparable(r) for _, r in part.iterrows()):
                    body.append(_png(plots.standing_strip(ref, part, title=f"{metric} ({group}) beside the {reference}: "
                                                                            f"{part['better'].iloc[0]} is better")))
                body.append("<ul>" + "".join(f"<li>{esc.escape(standing_sentence(r))}</li>"
                                             for _, r in part.iterrows()) + "</ul>")
                body.append(f"<p>{esc.escape(str(part['note'].iloc[0]))}.</p>")
        parts.append(f"<details><summary>{esc.escape(label)}</summary>{''.join(body)}</details>")
    if len(c.standing):
        parts.append(f'<p class="meta">{esc.escape(STANDING_NOTE)}</p>')
    parts.append("<h2>Gate, status, settings</h2>")
    parts.append(f"<details><summary>The quality gate</summary>{_table(c.gate)}</details>")
    parts.append(f"<details><summary>Every metric of the book and its status ({len(c.status)} rows)</summary>"
                 f"{_table(c.status)}</details>")
    parts.append(f"<details><summary>Settings and provenance</summary>{_table(_settings_table(c))}</details>")
    style = ("body{font-family:sans-serif;max-width:72em;margin:auto;padding:0 .8em;line-height:1.35}"
             "img{max-width:100%;height:auto}h1{font-size:1.4em}h2{font-size:1.2em;margin-top:1.4em}"
             ".scroll{overflow-x:auto;max-width:100%;margin:.5em 0}"
             "table{border-collapse:collapse;font-size:.85em}td,th{padding:3px 7px;border-bottom:1px solid #ddd;"
             "text-align:left;vertical-align:top}th{background:#f4f4f4}td{white-space:nowrap}"
             "td:first-child{position:sticky;left:0;background:#fff}th:first-child{position:sticky;left:0}"
             "td.v-better,td.v-worse,td.v-direction,td.v-none{white-space:normal;min-width:22em}"
             "td.shown{white-space:normal;min-width:11em}"
             ".v-better{background:#d4edda}.v-worse{background:#f8d7da}.v-direction{background:#fff3cd}"
             ".v-none{background:#eee;color:#444}td.shown{color:#666;font-style:italic}"
             ".banner{padding:.5em .8em;margin:.5em 0}.banner ul{margin:.3em 0;padding-left:1.2em}"
             ".bad{background:#fdd}.ok{background:#dfd}.na{background:#eee}.banner li.bad,.banner li.ok,"
             ".banner li.na{background:none}details{border:1px solid #ddd;margin:.4em 0;padding:.3em .6em}"
             "summary{cursor:pointer;font-weight:bold}.meta{color:#555;font-size:.9em}"
             # a narrow screen: the summary's rows as blocks of "column: value" lines, the verdict in view
             f"@media (max-width:{REFLOW_BELOW_PX}px){{table.reflow thead{{display:none}}"
             "table.reflow,table.reflow tbody,table.reflow tr,table.reflow td{display:block;width:auto}"
             "table.reflow tr{border:1px solid #ccc;margin:.5em 0;padding:.2em 0}"
             "table.reflow td{white-space:normal;border:none;min-width:0!important;position:static}"
             "table.reflow td::before{content:attr(data-label) \": \";font-weight:bold;color:#444}"
             "table.reflow td:empty{display:none}"                 # a blank cell: no label without a value
             "table.reflow td:first-child{font-weight:bold;background:#f4f4f4}"
             "table.reflow td:first-child::before{content:none}}")
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width, initial-scale=1"><title>Harm report card: {esc.escape(" vs ".join(c.models))}'
            f"</title><style>{style}</style></head><body><main>{''.join(parts)}</main></body></html>")


# --------------------------------------------------------------------------- model card

#: The data set behind each metric (the model-index's ``dataset``).
DATASET_OF = {"safety_score:toxigen": "toxigen", "safety_score:implicit-hate": "implicit-hate",
              "stereoset_ss": "stereoset", "crows_pairs": "crows-pairs", "ceat": "redditbias+bold",
              "ceattox": "redditbias+bold", "ilps": "weat-attributes", "seat": "seat", "kurita_bec_pro": "bec-pro",
              "categorical_bias": "ethnic-bias", "atomic_probing": "atomic-probing", "toxd_fpr": "bias-madlibs",
              "unintended_bias": "bias-madlibs", "bold_sentiment": "bold", "bold_toxicity": "bold"}


def _markdown_table(df: pd.DataFrame) -> str:
    def cell(v):
        return str(v).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(cell(c) for c in df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def model_card(c: Card) -> str:
    """``model_card.md``: the hub's ``model-index`` metadata (``huggingface_hub.ModelCardData``;
    one result per metric with an overall value, for the last model on the card) and a "Bias,
    Risks, and Limitations" section: the gate, the summary table and a few sentences."""
    from huggingface_hub import EvalResult, ModelCardData

    model = c.models[-1]
    rows = c.metrics[(c.metrics["model"] == model) & c.metrics["group"].isin(SUMMARY_GROUPS)]
    results = [EvalResult(task_type="text-generation", dataset_type=DATASET_OF[_family(r.metric)],
                          dataset_name=DATASET_OF[_family(r.metric)], metric_type=_family(r.metric),
                          metric_name=f"{r.metric} ({r.group}; seed {paper(r.metric)})",
                          metric_value=round(float(r.value), 4))
               for r in rows.itertuples() if np.isfinite(r.value)]
    data = ModelCardData(model_name=model, eval_results=results or None)
    lines = ["---", data.to_yaml(), "---", "", "## Bias, Risks, and Limitations", ""]
    lines += [f"- {text}" for _, text in gate_lines(c)]
    lines += ["", _markdown_table(summary_table(c)), ""]
    sentences = [f"Measured with `harms report` (budget {c.budget!r}); each value with its 95 % interval "
                 "(a metric without an overall row is summarised as the table says)."]
    if len(c.standing):
        sentences.append("A rank places the model among the papers' published models; \"not comparable\" where "
                         "the published values measure something else (fine-tuned classifiers).")
    if (sentence := family_sentence(c)):
        sentences.append(sentence)
    sentences.append("The safety score is seed 000's: 1 when every harmful sentence is less likely than every "
                     "benign one, 0.5 when the model does not separate them. The full tables are in metrics.csv, "
                     "comparison.csv and report.json.")
    lines += [" ".join(sentences), ""]
    return "\n".join(lines)


def write(c: Card, output, *, overwrite: bool = False):
    """The card's files in ``output`` (:func:`helpers.card.writing.write`: the CSVs and ``report.json``)
    with ``report.html`` (:func:`html`) and ``model_card.md`` (:func:`model_card`)."""
    return write_files(c, output, overwrite=overwrite, pages={"report.html": html, "model_card.md": model_card})
