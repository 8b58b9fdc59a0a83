"""Chapter 01, safety scores of language models (seed 000 §3–4.5, appendix A.1–A.2).

The logic of ``notebooks/01_safety_scores.ipynb``: the notebook holds the story and calls
these functions in order, each of which writes its result tables (and figure) under
``results/01_safety_scores/`` and returns what the page shows, a
:class:`helpers.chapters.common.Section` (Markdown prose generated from the numbers, tables,
figures, the key metric call and the facts the prose states).

    >>> from helpers.chapters import ch01_safety as ch
    >>> params, shown = ch.start({"models": "smollm2-135m", "sample_per_group": 8})
    >>> toxigen_scores = ch.measure_toxigen(params)   # Table 1 (per model and group)
    >>> ch.table1(toxigen_scores)                     # the pivoted view of the page

Measured per group: :func:`helpers.runner.safety_results` (seed 000 eqs. 1–3 with a
bootstrap interval; the per-sentence scores are cached). Published: seed 000 Tables 1, 2,
9 and 10 (:func:`helpers.published.table`) and the ToxiGen–ImplicitHate correlation
recomputed from them (:func:`helpers.published.recompute.implicit_vs_toxigen_correlation`).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from helpers import datasets, models as registry, plots, published, report, runner, stats
from helpers.chapters import common
from helpers.chapters.common import Section, call, save, save_figure
from helpers.errors import ModelUnavailableError
from helpers.lm import scoring
from helpers.metrics import safety
from helpers.progress import plural
from helpers.published import recompute

CHAPTER = "01_safety_scores"
#: The notebook's parameters, in the order of its parameters table (``parameters.csv``).
PARAMETERS = ("models", "sample_per_group", "implicit_sample_per_label", "device", "pll", "upstream_mask_id",
              "n_resamples", "seed", "toxigen", "implicit_hate", "upstream_compat", "min_ratio")
DEFAULTS = dict(models="offline", sample_per_group=25, implicit_sample_per_label=50, device="cpu",
                pll="original", upstream_mask_id=False, n_resamples=1000, seed=0, toxigen="toxigen",
                implicit_hate="implicit-hate", upstream_compat=False, min_ratio=2.0)
PAPER_SENTENCES = 6541           # ToxiGen sentences after the paper's filtering (§3.2.1)
PAPER_CORRELATION = 0.68         # ToxiGen vs ImplicitHate across the 24 models (appendix A.2)


def upstream_compat_supported() -> bool:
    """Whether :func:`helpers.runner.safety_results` takes ``upstream_compat`` (the upstream
    code's U / (n × m) counting the NaN row: GPT-2 on ImplicitHate 0.259990915)."""
    return "upstream_compat" in inspect.signature(runner.safety_results).parameters


def start(namespace) -> tuple[dict, Section]:
    """The chapter's parameters from the notebook's globals (:func:`helpers.chapters.common.start`)."""
    return common.start(CHAPTER, namespace, PARAMETERS, DEFAULTS)


def parameters(namespace) -> dict:
    """The chapter's parameters from ``namespace``, as :func:`start` picks them, without its table."""
    return common.chapter_parameters(CHAPTER, namespace, PARAMETERS, DEFAULTS)


def prefill(params: dict) -> list[str]:
    """Every model's scores on ToxiGen and on ImplicitHate (the calls of :func:`measure_toxigen` and
    :func:`measure_implicit_hate`, so the same cache keys; chapters 02-04 ask for the same scores)
    into the score cache, split between the processes of a run across machines
    (:func:`helpers.book.prefill`). Returns the models measured."""
    extra = {"upstream_compat": True} if params.get("upstream_compat") else {}
    done = measure(params, params["toxigen"], params["sample_per_group"])
    measure(params, params["implicit_hate"], params["implicit_sample_per_label"], **extra)
    return done.models


# ----------------------------------------------------------------------------- findings


def _score(row, *, model: bool = True) -> str:
    """A safety score with its interval and what it is about: ``0.412 [0.371, 0.455] (`model`, Asian)``
    (``model`` False: the group alone, for a sentence that names the one model already)."""
    value = report.fmt_ci(row["safety_score"], row["ci_low"], row["ci_high"])
    return f"{value} (`{row['model']}`, {row['group_label']})" if model else f"{value} ({row['group_label']})"


def findings(toxigen: Measured, ih: Measured, gate: Section) -> Section:
    """The chapter's Findings box (:func:`helpers.chapters.common.findings_section`), each finding computed from
    the models that pass the quality gate (``gate``, the :func:`quality` section) and linked to the table it comes
    from: the gate, the range of Table 1, the groups whose interval lies below 0.5, the unscaled reading, the
    ToxiGen-ImplicitHate correlation (with n and independent families) and ImplicitHate against the paper."""
    excluded = excluded_models(toxigen, gate)
    usable = toxigen.per_group[~toxigen.per_group["model"].isin(excluded)].dropna(subset=["safety_score"])
    pub1, pub10 = published.table("000", "table1"), published.table("000", "table10")
    out = []
    if excluded:
        out.append(report.Finding(
            f"{report.count_of(len(excluded), len(toxigen.models), 'measured model', ('fails', 'fail'))} "
            "the language-model quality gate "
            f"({report.and_list([f'`{n}`' for n in excluded])}): shown, never interpreted.",
            "language_model_quality", "quality gate"))
    if usable.empty:
        out.append(report.Finding("No model that passes the quality gate has a safety score to read.",
                                  "table1_view", "Table 1"))
    else:
        lo, hi = usable.loc[usable["safety_score"].idxmin()], usable.loc[usable["safety_score"].idxmax()]
        n = usable["model"].nunique()
        out.append(report.Finding(
            f"The safety scores of {f'the {n} usable models' if n != 1 else f'`{lo.model}`'} run from "
            f"{_score(lo, model=n != 1)} to {_score(hi, model=n != 1)}; "
            f"the paper's {pub1['model'].nunique()} models run from {pub1['safety_score'].min():.3f} to "
            f"{pub1['safety_score'].max():.3f}.", "table1_view", "Table 1"))
        summary = per_model_summary(toxigen.per_group, pub1, excluded)
        ok = summary[summary["usable"]]
        out.append(report.Finding(_interval_finding(ok, usable), "figure2_per_model", "per-model counts"))
        if ok["below_half_unscaled_above_half"].notna().any() and ok["below_half"].sum() > 0:
            out.append(report.Finding(_unscaled_finding(ok), "figure2_per_model", "per-model counts"))
    out.append(_correlation_finding(toxigen, ih, gate))
    ih_ok = ih.per_group[~ih.per_group["model"].isin(excluded_models(ih, gate))].dropna(subset=["safety_score"])
    if len(ih_ok):
        lo10, hi10 = pub10["safety_score"].min(), pub10["safety_score"].max()
        inside = int(ih_ok["safety_score"].between(lo10, hi10).sum())
        low = ih_ok.loc[ih_ok["safety_score"].idxmin()]
        value = report.fmt_ci(low["safety_score"], low["ci_low"], low["ci_high"])
        out.append(report.Finding(
            (f"On ImplicitHate, `{low['model']}` scores {value}, {'within' if inside else 'outside'} the paper's range "
             f"({lo10:.3f} to {hi10:.3f})." if len(ih_ok) == 1 else
             f"On ImplicitHate, {report.count_of(inside, len(ih_ok), 'usable model', ('scores', 'score'))} within "
             "the paper's range "
             f"({lo10:.3f} to {hi10:.3f}); the lowest is `{low['model']}` at {value}."), "table10_implicit_hate",
            "Table 10"))
    return common.findings_section(CHAPTER, out[:report.READING["findings"][1]])


def _range(ok: pd.DataFrame, column: str, n: int | None, noun: str) -> str:
    """"4 (`a`) to 6 (`b`) of the ``n`` ``noun``s" over the models of ``ok`` (a :func:`per_model_summary`), or,
    when every model has the same count, :func:`helpers.report.count_of` ("all 13 groups", "4 of the 13 groups");
    ``n = None``: "4 of ``noun``" ("4 of them")."""
    whole = f"{noun}" if n is None else f"the {n} {plural(noun, n)}"
    if ok[column].nunique() == 1:
        k = int(ok[column].iloc[0])
        return f"{k} of {whole}" if n is None else report.count_of(k, n, noun)
    lo, hi = ok.loc[ok[column].idxmin()], ok.loc[ok[column].idxmax()]
    return f"{int(lo[column])} (`{lo['model']}`) to {int(hi[column])} (`{hi['model']}`) of {whole}"


def _from_to(ok: pd.DataFrame, column: str) -> str:
    """"from 10 of them (`a`) to 12 (`b`)" over the models of ``ok``, or "3 of them for every model"."""
    counts = ok[column]
    if counts.nunique() == 1:
        return f"{int(counts.iloc[0])} of them for every model"
    lo, hi = ok.loc[counts.idxmin()], ok.loc[counts.idxmax()]
    return f"from {int(lo[column])} of them (`{lo['model']}`) to {int(hi[column])} (`{hi['model']}`)"


def _interval_finding(ok: pd.DataFrame, usable: pd.DataFrame) -> str:
    """Per usable model, how many groups have a 95 % interval wholly below 0.5, and where the others lie."""
    groups = int(ok["groups"].max())
    above = int((usable["ci_low"] > 0.5).sum())
    counted = _range(ok, "interval_below_half", groups, "group")
    who = f"`{ok['model'].iloc[0]}`" if len(ok) == 1 else f"Each of the {len(ok)} usable models"
    return ((f"{who} has {counted} with" if ok["interval_below_half"].nunique() == 1
             else f"Per usable model, {counted} have") + " a 95 % interval wholly below 0.5, the side the paper reads "
            "as unsafe; "
            + ("the other groups' intervals all include 0.5 (chance)." if not above else
               f"{above} model-and-group score{'s have' if above != 1 else ' has'} an interval wholly above 0.5."))


def _unscaled_finding(ok: pd.DataFrame) -> str:
    """Per usable model, how many of its groups scoring below 0.5 have an unscaled score above 0.5 (by plain
    perplexity, the harmful statements the less likely ones), counted against those groups."""
    low = ok[ok["below_half"] > 0]
    share = (low["below_half_unscaled_above_half"] / low["below_half"]).min()
    if share > 0.5 and len(low) == 1:
        r = low.iloc[0]
        return ("Without the division by toxicity, S < 0.5 does not mean that a model finds the harmful statements "
                f"more likely: `{r['model']}` has an unscaled score above 0.5 for "
                f"{report.count_of(r['below_half_unscaled_above_half'], r['below_half'], 'group')} scoring below 0.5.")
    if share > 0.5:
        below = report.count_range(low["below_half"].min(), low["below_half"].max(), int(low["groups"].max()), "group")
        return ("Without the division by toxicity, S < 0.5 does not mean that a model finds the harmful statements "
                f"more likely: for every usable model, most of its groups scoring below 0.5 ({below}) have an "
                f"unscaled score above 0.5: {_from_to(low, 'below_half_unscaled_above_half')}.")
    flipped = int((low["below_half_unscaled_above_half"] > 0).sum())
    models = report.count_of(flipped, len(low), "usable model with a score below 0.5", ("has", "have"),
                             plural="usable models with a score below 0.5")
    return (f"Without the division by toxicity, {models} "
            "at least one such group whose unscaled score is above 0.5: there, S < 0.5 does not mean that the model "
            "finds the harmful statements more likely.")


def _correlation_finding(toxigen: Measured, ih: Measured, gate: Section) -> report.Finding:
    """The ToxiGen-ImplicitHate correlation over the usable models, its n and independent families, beside the
    paper's 0.68 over 24 models; what the families can detect (:func:`helpers.stats.pairs_for_correlation`)."""
    pairs = toxigen_vs_implicit_hate(toxigen, ih)
    pairs = pairs[pairs["model"].isin(gate.facts["usable"])]
    res = stats.correlation(pairs["toxigen_mean_safety"], pairs["implicit_hate_safety"])
    families = len({registry.lineage(n) for n in pairs["model"]})
    need = stats.pairs_for_correlation(0.8)
    over = (f"{res['n']} usable {plural('model', res['n'])} from {families} independent "
            f"{plural('family', families)}")
    if pd.isna(res["r"]):
        return report.Finding(f"No ToxiGen-ImplicitHate correlation can be computed over {over} (it needs 3 models "
                              f"and two scores that vary); the paper states r = {PAPER_CORRELATION} over 24 models.",
                              "toxigen_vs_implicit_hate_correlation", "correlation table")
    text = (f"Over {over}, the ToxiGen and ImplicitHate scores correlate at r = "
            f"{report.fmt_ci(res['r'], res['ci_low'], res['ci_high'], 2)}")
    if pd.isna(res["ci_low"]) or res["ci_low"] <= 0 <= res["ci_high"]:
        text += " (no sign established)"
    text += f"; the paper states r = {PAPER_CORRELATION} over 24 models"
    text += (f", and {families} families are too few to tell a true correlation of 0.8 from none (that takes {need})."
             if families < need else ".")
    return report.Finding(text, "toxigen_vs_implicit_hate_correlation", "correlation table")


# ----------------------------------------------------------------------------- the data


def figure1(params: dict) -> Section:
    """Seed 000 Figure 1 (harmful and benign sentences per group): the figure
    (``figure1.png``), its counts (``figure1_group_counts.csv``) and a sentence on the data."""
    data = datasets.load(params["toxigen"])
    counts = datasets.group_counts(data)
    fig = save_figure(plots.group_counts_bar(counts, title="Figure 1: harmful and benign sentences per group"),
                      CHAPTER, "figure1")
    save(counts.assign(source="measured"), CHAPTER, "figure1_group_counts")
    facts = {"sentences": len(data), "harmful": int((data["label"] == "hate").sum()),
             "benign": int((data["label"] == "neutral").sum()), "groups": counts["group"].nunique(),
             "paper_sentences": PAPER_SENTENCES, "x000d_rows": data.attrs.get("x000d_rows", 0)}
    text = (f"The data hold **{facts['sentences']:,} sentences** ({facts['harmful']:,} harmful, "
            f"{facts['benign']:,} benign) about {facts['groups']} groups; the paper reports {PAPER_SENTENCES:,} "
            f"sentences after its filtering ({facts['sentences'] - PAPER_SENTENCES:+,} here: the public copy of the "
            f"subset, see the data registry). {facts['x000d_rows']} sentences contained the spreadsheet artefact "
            "`_x000D_`, replaced by a space before scoring.")
    return Section(("figure1", fig), text, call=call(datasets.group_counts, "data"), facts=facts)


# ----------------------------------------------------------------------------- measuring


@dataclass
class Measured:
    """Every model's safety results on one data set: ``per_sentence`` and ``per_group``
    (concatenated over models), and the models that could not be obtained here."""

    per_sentence: pd.DataFrame
    per_group: pd.DataFrame
    unavailable: dict[str, str] = field(default_factory=dict)
    options: dict = field(default_factory=dict)   # what runner.safety_results was called with

    @property
    def models(self) -> list[str]:
        return list(self.per_group["model"].unique())


def measure(params: dict, dataset: str, sample, **options) -> Measured:
    """:func:`helpers.runner.safety_results` of every model of ``params`` on ``dataset``
    (at most ``sample`` harmful and ``sample`` benign sentences per group), with the 95%
    bootstrap interval; ``options`` go to ``safety_results`` too. Fails with one line when
    no model at all can be obtained."""
    options.update(dataset=dataset, sample_per_group=sample, seed=params["seed"], pll=params["pll"],
                   upstream_mask_id=params["upstream_mask_id"], n_resamples=params["n_resamples"],
                   progress=False)
    results, unavailable = runner.for_each_model(
        params["models"], lambda handle: runner.safety_results(handle, **options), device=params["device"])
    if not results:
        raise ModelUnavailableError(f"none of the models could be loaded: {unavailable}")
    return Measured(pd.concat([s for s, _ in results.values()], ignore_index=True),
                    pd.concat([g for _, g in results.values()], ignore_index=True), unavailable, options)


def _scores_call(m: Measured):
    """The per-group scores' call (:func:`helpers.metrics.safety.safety_scores`) with the
    options the measurement passed on."""
    return call(safety.safety_scores, "per_sentence",
                **{k: m.options[k] for k in ("n_resamples", "seed", "upstream_compat") if k in m.options})


def measure_toxigen(params: dict) -> Measured:
    """Every model on the ToxiGen sample (``sample_per_group``); writes Table 1
    (``table1_safety_scores.csv``) and the per-sentence scores (``toxigen_per_sentence.csv``)."""
    m = measure(params, params["toxigen"], params["sample_per_group"])
    save(m.per_group, CHAPTER, "table1_safety_scores")
    save(m.per_sentence.drop(columns=["text"]), CHAPTER, "toxigen_per_sentence")
    return m


def measure_implicit_hate(params: dict) -> Measured:
    """Every model on the ImplicitHate sample (``implicit_sample_per_label`` posts per
    label); writes Table 10 (``table10_implicit_hate.csv``). ``upstream_compat=True``
    scores as the upstream code did (:func:`upstream_compat_supported`)."""
    extra = {"upstream_compat": True} if params.get("upstream_compat") else {}
    m = measure(params, params["implicit_hate"], params["implicit_sample_per_label"], **extra)
    save(m.per_group, CHAPTER, "table10_implicit_hate")
    return m


def family(name: str) -> str:
    """The model's family in the registry (seed 000 Table 2's families for the paper's
    models); a hub id or directory outside the registry is its own family."""
    try:
        return registry.spec(name).family
    except ModelUnavailableError:
        return name


def origin(name: str) -> str:
    """Where a model comes from (the registry's ``source``: package, zoo, hub; "local" outside it)."""
    try:
        return registry.spec(name).source
    except ModelUnavailableError:
        return "local"


def models_table(models: list[str]) -> pd.DataFrame:
    """One row per model: its family in the registry, its independent family (:func:`helpers.models.lineage`:
    a model and every model pruned or distilled from it), where it comes from and whether it is one of the
    paper's 24."""
    paper = set(registry.paper_models())
    return pd.DataFrame({"model": models, "family": [family(n) for n in models],
                         "independent_family": [registry.lineage(n) for n in models],
                         "origin": [origin(n) for n in models], "in_paper": [n in paper for n in models]})


def scoring_report(m: Measured) -> Section:
    """The scoring call, a sentence counting the measured models and their independent families, the table
    of measured models (``measured_models.csv``, :func:`models_table`) and, when there are any, the table of
    unavailable models and their reasons."""
    table = save(models_table(m.models), CHAPTER, "measured_models")
    facts = {"models": m.models, "sentences": m.per_sentence["id"].nunique(), "unavailable": list(m.unavailable),
             "families": table["independent_family"].nunique()}
    text = (f"Measured {len(m.models)} {plural('model', len(m.models))} from {facts['families']} "
            f"independent {plural('family', facts['families'])} on {facts['sentences']:,} sentences; "
            "the table gives each model's family and origin."
            + ("" if not m.unavailable else f" **Not available here: {len(m.unavailable)} "
               f"{plural('model', len(m.unavailable))}**, listed with the reason in the second table."))
    shown = [text, ("measured_models", table)] + (
        [("unavailable", runner.unavailable_table(m.unavailable))] if m.unavailable else [])
    score_options = {k: m.options[k] for k in ("pll", "upstream_mask_id") if k in m.options}
    return Section(call(scoring.score, "model", "sentences", **score_options), *shown, facts=facts)


# ----------------------------------------------------------------------------- Table 1


def table1(m: Measured) -> Section:
    """Table 1 as shown (``table1_view``): safety score with its 95% interval, groups × models."""
    cells = [report.fmt_ci(s, lo, hi) for s, lo, hi in
             zip(m.per_group["safety_score"], m.per_group["ci_low"], m.per_group["ci_high"])]
    view = (m.per_group.assign(score=cells).pivot(index="group_label", columns="model", values="score")
            .rename_axis(index="group", columns=None))
    return Section(("table1_view", view), call=_scores_call(m))


def published_with_registry_names(name: str) -> pd.DataFrame:
    """Published seed 000 table ``name`` with its paper model names replaced by registry
    names (so measured and published rows of the same model share the key)."""
    pub = published.table("000", name)
    return pub.assign(model=pub["model"].map(published.registry_names("000")).fillna(pub["model"]))


def compare_table1(m: Measured) -> Section:
    """Measured Table 1 next to the published one: model by model for the paper's models
    (``table1_vs_published.csv``, only when there are any) and, for every measured score,
    the range of the paper's 24 models in the same group (``table1_vs_published_range.csv``)."""
    pub1 = published.table("000", "table1")
    paired = (report.side_by_side(m.per_group, published_with_registry_names("table1"), on=["model", "group"])
              .dropna(subset=["measured", "published"]))
    ranged = report.against_range(m.per_group[["model", "group", "group_label", "safety_score", "significant"]],
                                  pub1)
    save(ranged.assign(source="measured"), CHAPTER, "table1_vs_published_range")
    facts = {"paper_models_measured": paired["model"].nunique()}
    if len(paired):
        save(paired.assign(source="measured-vs-published"), CHAPTER, "table1_vs_published")
        off = (paired["difference_ci_low"] > 0) | (paired["difference_ci_high"] < 0)
        facts |= {"mean_abs_difference": paired["difference"].abs().mean(),
                  "max_abs_difference": paired["difference"].abs().max(), "differences_excluding_0": int(off.sum())}
        n_paired = facts["paper_models_measured"]
        first = [f"**{n_paired} measured model{'s are' if n_paired > 1 else ' is'} in the paper.** Mean absolute "
                 f"difference {facts['mean_abs_difference']:.3f}, largest {facts['max_abs_difference']:.3f}; "
                 f"for {report.count_of(int(off.sum()), len(paired), 'cell')} the 95 % interval of the difference (the "
                 "measurement's bootstrap interval minus the published value) excludes 0.",
                 ("table1_vs_published", paired)]
    else:
        first = ["None of the measured models is among the paper's 24, so there is no model-by-model "
                 "difference to show; each measured score is set against the published range of its group."]
    cells = [f"{s:.3f} ({d:+.3f})" for s, d in zip(ranged["safety_score"], ranged["difference_to_median"])]
    view = ranged.assign(cell=cells).pivot(index="group_label", columns="model", values="cell")[m.models]
    rng = datasets.with_group_labels(report.published_range(pub1))
    view.insert(0, "published: median [min, max]", rng.set_index("group_label").apply(
        lambda r: f"{r.published_median:.3f} [{r.published_min:.3f}, {r.published_max:.3f}]", axis=1))
    return Section(*first, "Measured safety score per group (difference to the published median in parentheses), "
                   "next to the median and range of the paper's 24 models:",
                   ("table1_vs_published_range_view", view.rename_axis(index="group", columns=None)),
                   call=call(published.table, "'000'", "'table1'"), facts=facts)


def excluded_models(m: Measured, gate: Section | None) -> list[str]:
    """The measured models that fail the quality gate (not among ``gate.facts["usable"]``); none without a gate."""
    return [n for n in m.models if gate is not None and n not in gate.facts["usable"]]


def per_model_summary(per_group: pd.DataFrame, published_scores: pd.DataFrame, excluded: list[str]) -> pd.DataFrame:
    """Per measured model, counted over its groups: how many safety scores it has, their median, how many lie
    within / below / above the range of the paper's models for the same group, how many are below 0.5 with a
    95 % interval below 0.5 too, at or above 0.5, not significantly different from 0.5 (Mann-Whitney
    p > 0.05), and below 0.5 with an unscaled score (no division by toxicity) above 0.5."""
    rows = []
    for model, part in per_group.dropna(subset=["safety_score"]).groupby("model", sort=False):
        ranged = report.against_range(part, published_scores)
        s = part["safety_score"]
        low = part[s < 0.5]
        rows.append({
            "model": model, "usable": model not in excluded, "groups": len(part), "median_safety_score": s.median(),
            "within_published_range": int(ranged["within_published_range"].sum()),
            "below_published_range": int((ranged["safety_score"] < ranged["published_min"]).sum()),
            "above_published_range": int((ranged["safety_score"] > ranged["published_max"]).sum()),
            "below_half": len(low), "interval_below_half": int((part["ci_high"] < 0.5).sum()),
            "at_or_above_half": int((s >= 0.5).sum()),
            "not_significant": int((~part["significant"].astype(bool)).sum()) if "significant" in part else None,
            "below_half_unscaled_above_half": int((low["unscaled_score"] > 0.5).sum())
            if "unscaled_score" in part else None})
    return pd.DataFrame(rows)


def top_groups_table(usable: pd.DataFrame, published_scores: pd.DataFrame, k: int = 4) -> pd.DataFrame:
    """The ``k`` groups with the highest median safety score across the paper's models and across the measured
    usable ones, rank by rank, with those medians."""
    def top(df):
        return df.groupby("group")["safety_score"].median().sort_values(ascending=False).head(k)

    paper, ours = top(published_scores), top(usable)
    labels = datasets.with_group_labels(pd.DataFrame({"group": [*paper.index, *ours.index]}))["group_label"].tolist()
    return pd.DataFrame({"rank": range(1, len(paper) + 1), "paper_group": labels[:len(paper)],
                         "paper_median": paper.to_numpy(),
                         "measured_group": pd.Series(labels[len(paper):], dtype=object).reindex(range(len(paper))),
                         "measured_median": pd.Series(ours.to_numpy()).reindex(range(len(paper)))})


def _spread(summary: pd.DataFrame, column: str, n: int) -> str:
    """``column`` over the models of ``summary``, out of ``n`` groups: "per model, 3 (`a`) to 9 (`b`) of the 13
    groups", or "4 of the 13 groups for each model" when it is the same for all."""
    counted = _range(summary, column, n, "group")
    return f"{counted} for each model" if summary[column].nunique() == 1 else f"per model, {counted}"


def figure2_paragraphs(summary: pd.DataFrame, usable: pd.DataFrame, published_scores: pd.DataFrame,
                       top: pd.DataFrame, toxicity_means: dict, excluded: list[str]) -> list[str]:
    """The paragraphs under Figure 2, one per finding, each counted per model over the models that pass the
    quality gate (``summary``: :func:`per_model_summary`), the models failing it named last."""
    ok = summary[summary["usable"]]
    left_out = ([f"Left out of these paragraphs: {report.and_list([f'`{n}`' for n in excluded])}, which "
                 f"{'fails' if len(excluded) == 1 else 'fail'} the language-model quality gate (in the figure and "
                 "the table, not interpreted)."] if excluded else [])
    if ok.empty:
        return [("No safety score of a model that passes the language-model quality gate could be measured."
                 if excluded else "No safety score could be measured."), *left_out]
    n, groups, n_pub = len(ok), int(ok["groups"].max()), published_scores["model"].nunique()
    who = (f"`{ok['model'].iloc[0]}`" if n == 1 else
           f"the {n} models" + (" that pass the quality gate" if excluded else ""))
    out = [f"The median safety score of {who} is {usable['safety_score'].median():.3f} (the paper's "
           f"{n_pub} models: {published_scores['safety_score'].median():.3f}). "
           + f"Group scores within the range of the paper's models for the same group: "
           f"{_spread(ok, 'within_published_range', groups)} (`figure2_per_model`)."]
    paper_below = bool((published_scores["safety_score"].dropna() < 0.5).all())
    over = ok[ok["at_or_above_half"] > 0]
    if over.empty:
        out.append(("As in the paper, every" if paper_below else "Every") + " score of these models is below 0.5: "
                   "for every group, a harmful statement more often than not has the lower toxicity-scaled "
                   "perplexity.")
    else:
        k = int(over["at_or_above_half"].iloc[0])
        scoring = (f"{who} has {k} {plural('group', k)} scoring" if n == 1 else
                   report.count_of(len(over), n, "usable model", ("has", "have")) + " a group scoring")
        out.append(("Unlike the paper, where every score is below 0.5, " + scoring if paper_below else
                    report.sentence_case(scoring)) + " at or above 0.5 (listed in `figure2_at_or_above_half`).")
    low = ok[ok["below_half"] > 0]
    flipped = low[low["below_half_unscaled_above_half"].fillna(0) > 0]
    if len(low) and ok["below_half_unscaled_above_half"].notna().any():
        if flipped.empty:
            out.append("For every group scoring below 0.5, the score without the division by toxicity "
                       "(`unscaled_score`) is not above 0.5 either: plain perplexities do not contradict the paper's "
                       "reading of S < 0.5 (the harmful statements are the more likely ones).")
        else:
            whose = (f"for `{low['model'].iloc[0]}`, the one model with a score below 0.5," if len(low) == 1 else
                     f"for {report.count_of(len(flipped), len(low), 'model')} with a score below 0.5,")
            text = (f"A score below 0.5 is not the same as preferring the harmful statements: {whose} some of those "
                    "groups have a score without the division by toxicity (`unscaled_score`) above 0.5, i.e. by plain "
                    "perplexity the harmful statements are the *less* likely ones there.")
            hate, neutral = toxicity_means.get("hate", float("nan")), toxicity_means.get("neutral", float("nan"))
            if pd.notna(hate) and pd.notna(neutral) and hate > neutral:
                text += (f" The scaled scores fall lower because the harmful statements carry larger toxicity scores "
                         f"(mean {hate:.2f} against {neutral:.2f} for the benign ones), which divide their perplexity.")
            out.append(text)
    if ok["not_significant"].notna().any() and ok["not_significant"].sum() > 0:
        out.append("Scores not significantly different from 0.5 (Mann-Whitney p > 0.05) are kept and flagged, where "
                   f"the upstream code dropped them silently: {_spread(ok, 'not_significant', groups)}.")
    shared = len(set(top["paper_group"]) & set(top["measured_group"].dropna()))
    out.append(f"Of the paper's {len(top)} highest-scoring groups, {shared} {'is' if shared == 1 else 'are'} also "
               f"among the {len(top)} highest of these models (`figure2_top_groups`).")
    return out + left_out


def figure2(m: Measured, gate: Section | None = None) -> Section:
    """Seed 000 Figure 2 with the measured models beside the published ones (``figure2.png``,
    ``figure2_scores.csv``), the per-model counts behind the paragraphs (``figure2_per_model.csv``,
    :func:`per_model_summary`), the scores at or above 0.5 (``figure2_at_or_above_half.csv``) and the
    highest-scoring groups (``figure2_top_groups.csv``), then one short paragraph per finding
    (:func:`figure2_paragraphs`). Every measured model is in the figure and the per-model table; a model failing
    the quality gate (``gate``, the :func:`quality` section: a model not among its ``usable`` ones) is left out of
    the paragraphs and their facts, and named there (as in :func:`correlation`)."""
    pub1 = published.table("000", "table1")
    cols = ["model", "group", "safety_score", "source"]
    both = pd.concat([m.per_group[cols], pub1[cols]], ignore_index=True)
    fig = save_figure(plots.safety_boxplot(both, title="Figure 2: safety score per group, measured and published"),
                      CHAPTER, "figure2")
    save(both, CHAPTER, "figure2_scores")
    excluded = excluded_models(m, gate)
    usable = m.per_group[~m.per_group["model"].isin(excluded)]
    ranged = report.against_range(usable.dropna(subset=["safety_score"]), pub1)
    facts = {"scores": len(ranged), "within_published_range": int(ranged["within_published_range"].sum()),
             "median": usable["safety_score"].median(), "published_median": pub1["safety_score"].median(),
             "excluded": excluded}
    tox = m.per_sentence.drop_duplicates("id").groupby("label")["toxicity"].mean()
    low = usable[usable["safety_score"] < 0.5]
    facts |= {"unscaled_above_half": int((usable["unscaled_score"] > 0.5).sum()),
              "below_half": len(low), "below_half_unscaled_above_half": int((low["unscaled_score"] > 0.5).sum()),
              "toxicity_mean_harmful": float(tox.get("hate", float("nan"))),
              "toxicity_mean_benign": float(tox.get("neutral", float("nan")))}
    summary = save(per_model_summary(m.per_group, pub1, excluded), CHAPTER, "figure2_per_model")
    top = save(top_groups_table(usable.dropna(subset=["safety_score"]), pub1), CHAPTER, "figure2_top_groups")
    top.attrs["why"] = {"measured_group": "fewer measured groups than ranks",
                        "measured_median": "fewer measured groups than ranks"}
    over = usable[usable["safety_score"] >= 0.5][["model", "group", "group_label", "safety_score", "ci_low", "ci_high",
                                                  "p_value", "significant"]]
    over = save(over.sort_values(["model", "safety_score"], ascending=[True, False]), CHAPTER,
                "figure2_at_or_above_half")
    facts |= {"per_model": summary, "top_groups_shared": len(set(top["paper_group"]) & set(top["measured_group"]))}
    paragraphs = figure2_paragraphs(summary, usable.dropna(subset=["safety_score"]), pub1, top, tox.to_dict(),
                                    excluded)
    summary.attrs["why"] = {"not_significant": "no p-value in these results",
                            "below_half_unscaled_above_half": "no unscaled score in these results"}
    return Section(("figure2", fig), "\n\n".join(paragraphs), ("figure2_per_model", summary),
                   *([("figure2_at_or_above_half", over)] if len(over) else []), ("figure2_top_groups", top),
                   call=call(published.table, "'000'", "'table1'"), facts=facts)


# ----------------------------------------------------------------------------- Tables 2 and 9


def _mean_sd(means, sds) -> list[str]:
    return [report.fmt_mean_sd(a, b) for a, b in zip(means, sds)]


def table9(m: Measured) -> Section:
    """Seed 000 Tables 9 and 2: mean ± sd of the log-perplexity of benign and harmful sentences
    per measured model beside the paper's per-model Table 9 (``table9_log_perplexity.csv``,
    ``table9_vs_published.csv``), then family means (Table 2): ours averaged by family, the
    paper's Table 2 and Table 2 recomputed as the mean of its Table 9 rows per family
    (``table2_by_family.csv``), and a sentence comparing them."""
    logppl = safety.log_perplexity_summary(m.per_sentence)
    logppl["family"] = logppl["model"].map(family)
    save(logppl, CHAPTER, "table9_log_perplexity")
    wide = logppl.pivot_table(index=["family", "model"], columns="label", values=["mean", "sd"])
    ours = pd.DataFrame({"benign_mean": wide[("mean", "neutral")], "benign_sd": wide[("sd", "neutral")],
                         "harmful_mean": wide[("mean", "hate")], "harmful_sd": wide[("sd", "hate")]}).reset_index()
    pub9 = published.table("000", "table9")
    names = published.registry_names("000")
    theirs = pub9.assign(family=[family(names.get(n, n)) for n in pub9["model"]])
    per_model = pd.concat([ours.assign(source="measured"), theirs.assign(source="published")], ignore_index=True)
    per_model["harmful_minus_benign"] = per_model["harmful_mean"] - per_model["benign_mean"]
    save(per_model, CHAPTER, "table9_vs_published")
    by_family = pd.concat([
        per_model[per_model["source"] == "measured"].groupby("family", as_index=False)[["benign_mean", "harmful_mean"]]
        .mean().assign(source="measured"),
        published.table("000", "table2")[["family", "benign_mean", "harmful_mean"]].assign(source="published"),
        theirs.groupby("family", as_index=False, sort=False)[["benign_mean", "harmful_mean"]].mean()
        .assign(source="published-recomputed")], ignore_index=True)
    by_family["harmful_minus_benign"] = by_family["harmful_mean"] - by_family["benign_mean"]
    save(by_family, CHAPTER, "table2_by_family")
    pub = by_family[by_family["source"] != "measured"].set_index(["source", "family"])[["benign_mean", "harmful_mean"]]
    gap = float((pub.loc["published"] - pub.loc["published-recomputed"]).abs().to_numpy().max())
    ranged = save(log_perplexity_range(logppl, pub9), CHAPTER, "table9_range")
    text = (log_perplexity_text(ranged, pub9)
            + f"\n\nThe paper's Table 2 is the mean of its Table 9 rows per family: they agree to within {gap:.4f}, "
            + ("what rounding to two decimals allows." if gap <= 0.005 else "more than rounding allows."))
    means = logppl.pivot_table(index="model", columns="label", values="mean")
    facts = {"harmful_higher": int((means["hate"] > means["neutral"]).sum()) if {"hate", "neutral"} <= set(means)
             else 0, "models": len(means), "table2_vs_table9_max": gap}
    return Section(("table9_vs_published", per_model), text, ("table9_range", ranged), ("table2_by_family", by_family),
                   call=call(safety.log_perplexity_summary, "per_sentence"), facts=facts)


def log_perplexity_range(logppl: pd.DataFrame, pub9: pd.DataFrame) -> pd.DataFrame:
    """Per measured model (``logppl``: model, label, mean): its mean log-perplexity of benign and harmful sentences,
    where both stand against the range of the paper's per-model means (Table 9: within it, above it or below it)
    and whether the harmful sentences have the higher mean."""
    wide = logppl.pivot_table(index="model", columns="label", values="mean", sort=False).reindex(
        columns=["neutral", "hate"])
    lo = float(np.nanmin(pub9[["benign_mean", "harmful_mean"]].to_numpy()))
    hi = float(np.nanmax(pub9[["benign_mean", "harmful_mean"]].to_numpy()))
    out = pd.DataFrame({"model": wide.index, "benign_mean": wide["neutral"].to_numpy(),
                        "harmful_mean": wide["hate"].to_numpy()})
    both = out[["benign_mean", "harmful_mean"]]
    out["published_min"], out["published_max"] = lo, hi
    out["position"] = np.where((both > hi).any(axis=1), "above", np.where(((both >= lo) & (both <= hi)).all(axis=1),
                                                                           "within", "below"))
    out["harmful_higher"] = out["harmful_mean"] > out["benign_mean"]
    return out


def log_perplexity_text(ranged: pd.DataFrame, pub9: pd.DataFrame) -> str:
    """The measured mean log-perplexities against the paper's range (:func:`log_perplexity_range`), counted per
    model, and how many models give the harmful sentences the higher mean."""
    if ranged[["benign_mean", "harmful_mean"]].isna().any(axis=None):
        return "Log-perplexities need both harmful and benign sentences."
    vals = ranged[["benign_mean", "harmful_mean"]].to_numpy()
    n, above = len(ranged), int((ranged["position"] == "above").sum())
    pub_higher = int((pub9["harmful_mean"] > pub9["benign_mean"]).sum())
    where = {w: int((ranged["position"] == w).sum()) for w in ("within", "above", "below")}
    if n == 1:
        placed = f"`{ranged['model'].iloc[0]}` lies {next(w for w, k in where.items() if k)} it"
    else:
        parts = [f"{k} {'within that range' if w == 'within' else w + ' it'}" for w, k in where.items() if k]
        placed = f"Of the {n} measured models, {report.and_list(parts)}"
    higher = report.count_of(int(ranged["harmful_higher"].sum()), n, "measured model")
    return (f"The measured mean log-perplexities run from {vals.min():.2f} to {vals.max():.2f}; those of the paper's "
            f"{len(pub9)} models from {ranged['published_min'].iloc[0]:.2f} to {ranged['published_max'].iloc[0]:.2f}. "
            f"{placed} (`table9_range`)."
            + (" Above it, the statements are less plausible text than for any of the paper's models, which weakens "
               "what the safety scores can say." if above else "")
            + f" Harmful sentences have the higher mean log-perplexity for {higher}, and for "
            f"{'all' if pub_higher == len(pub9) else pub_higher} of the paper's {len(pub9)}.")


# ----------------------------------------------------------------------------- Table 10


def table10(ih: Measured) -> Section:
    """Seed 000 Table 10 (ImplicitHate, one score per model) and a sentence placing the
    measured scores in the range of the paper's 24 (and model by model where shared)."""
    cols = ["model", "n_harmful", "n_benign", "safety_score", "ci_low", "ci_high", "p_value", "source"]
    t10 = ih.per_group[cols]
    pub10 = published.table("000", "table10")
    paired = (report.side_by_side(t10, published_with_registry_names("table10"), on=["model"])
              .dropna(subset=["measured", "published"]))
    lo, hi = pub10["safety_score"].min(), pub10["safety_score"].max()
    facts = {"published_min": lo, "published_max": hi, "within_published_range": int(t10["safety_score"]
             .between(lo, hi).sum()), "models": len(t10), "paper_models_measured": len(paired)}
    text = (f"Published ImplicitHate scores of the 24 models range from {lo:.3f} to {hi:.3f}; "
            f"{report.count_of(facts['within_published_range'], len(t10), 'measured model', ('falls', 'fall'))} "
            "in that range."
            + (f" For the {f'{len(paired)} models' if len(paired) > 1 else 'one model'} also in the paper, the mean "
               "absolute difference is "
               f"{paired['difference'].abs().mean():.3f}." if len(paired) else ""))
    return Section(("table10_implicit_hate", t10), text, call=_scores_call(ih), facts=facts)


# ----------------------------------------------------------------------------- ToxiGen vs ImplicitHate


def toxigen_vs_implicit_hate(toxigen: Measured, ih: Measured) -> pd.DataFrame:
    """Per measured model: the mean of its ToxiGen safety scores over groups and its
    ImplicitHate safety score (the two axes of the correlation)."""
    mean = toxigen.per_group.groupby("model", as_index=False)["safety_score"].mean().rename(
        columns={"safety_score": "toxigen_mean_safety"})
    return mean.merge(ih.per_group[["model", "safety_score"]].rename(
        columns={"safety_score": "implicit_hate_safety"}), on="model").assign(source="measured")


def _published_view() -> pd.DataFrame:
    """The same two axes for the paper's 24 models, from its Tables 1 and 10."""
    pub1, pub10 = published.table("000", "table1"), published.table("000", "table10")
    mean = pub1.groupby("model", as_index=False, sort=False)["safety_score"].mean().rename(
        columns={"safety_score": "toxigen_mean_safety"})
    return mean.merge(pub10.rename(columns={"safety_score": "implicit_hate_safety"})
                      [["model", "implicit_hate_safety"]], on="model")


def correlation(toxigen: Measured, ih: Measured, gate: Section | None = None) -> Section:
    """Pearson r between the ToxiGen (mean over groups) and ImplicitHate safety scores:
    over the measured models that pass the quality gate (``gate``, the :func:`quality` section;
    all measured models without it), recomputed from the paper's Tables 1 and 10, and as the paper
    states it (``toxigen_vs_implicit_hate_correlation.csv``); the scatter of both
    (``figure_toxigen_vs_implicit_hate.png``) and the sentences saying what they support."""
    pairs = toxigen_vs_implicit_hate(toxigen, ih)
    usable = pairs["model"].isin(gate.facts["usable"]) if gate is not None else pairs["model"].notna()
    measured = stats.correlation(pairs.loc[usable, "toxigen_mean_safety"], pairs.loc[usable, "implicit_hate_safety"])
    recomputed = recompute.implicit_vs_toxigen_correlation().iloc[0].to_dict()
    rows = save(pd.DataFrame([
        {"view": "measured models", "source": "measured", **measured},
        {"view": "paper's 24 models (Tables 1 and 10)", "source": "published-recomputed",
         **{k: recomputed[k] for k in ("n", "r", "p_value", "ci_low", "ci_high", "method")}},
        {"view": "paper's text", "source": "published", "n": 24, "r": PAPER_CORRELATION},
    ]), CHAPTER, "toxigen_vs_implicit_hate_correlation")
    rows.attrs["why"] = correlation_why(rows)
    fig = save_figure(plots.paired_scatter(pd.concat([pairs.assign(label=pairs["model"]),
                                                                      _published_view().assign(source="published", label="")]),
                                           x="toxigen_mean_safety", y="implicit_hate_safety", label="label",
                                           xlabel="ToxiGen safety score (mean over groups)",
                                           ylabel="ImplicitHate safety score",
                                           title="ToxiGen vs ImplicitHate safety score per model"),
                      CHAPTER, "figure_toxigen_vs_implicit_hate")
    lineages = {n: registry.lineage(n) for n in pairs.loc[usable, "model"]}
    fams = save(families_table(lineages), CHAPTER, "toxigen_vs_implicit_hate_families")
    paper_families = len({registry.lineage(n) for n in published.registry_names("000").values()})
    text = [report.correlation_sentence(measured, "between the measured ToxiGen and ImplicitHate scores")
            + (f" {int((~usable).sum())} measured {plural('model', int((~usable).sum()))} failing the quality gate "
               f"{'are' if (~usable).sum() > 1 else 'is'} shown, not counted."
               if (~usable).any() else ""),
            report.families_sentence(lineages) + " The families are listed in `toxigen_vs_implicit_hate_families`."]
    paper = (f"The paper states r = {PAPER_CORRELATION} over its 24 models ({paper_families} independent families). "
             + report.correlation_sentence(recomputed, "recomputed from the paper's Tables 1 and 10"))
    if pd.notna(recomputed["r"]):
        paper += (" The stated and recomputed values agree to two decimals."
                  if abs(recomputed["r"] - PAPER_CORRELATION) < 0.005 else
                  " The stated value is not what the paper's own tables give (it may have been computed on other "
                  "per-model summaries than the mean over groups).")
    text.append(paper)
    facts = {"measured": measured, "recomputed": {k: recomputed[k] for k in ("n", "r", "p_value", "ci_low", "ci_high")},
             "paper_r": PAPER_CORRELATION, "families": len(fams), "paper_families": paper_families,
             "lineages": lineages}
    return Section(("toxigen_vs_implicit_hate_correlation", rows), ("figure_toxigen_vs_implicit_hate", fig),
                   "\n\n".join(text), ("toxigen_vs_implicit_hate_families", fams),
                   call=call(stats.correlation, "toxigen_mean_safety", "implicit_hate_safety"), facts=facts)


def correlation_why(rows: pd.DataFrame) -> dict:
    """Why a cell of the correlation table is empty, per column: the paper's text states r and n only; a measured
    r, p or interval is missing for too few models or a constant score."""
    why = {}
    for column in ("r", "p_value", "ci_low", "ci_high", "method"):
        empty = rows[rows[column].isna()]["view"].tolist()
        reasons = (["the paper's text states only r and n"] if "paper's text" in empty else []) + (
            ["too few models with both scores, or one score constant"] if set(empty) - {"paper's text"} else [])
        if reasons:
            why[column] = "; ".join(reasons)
    return why


def families_table(lineages: dict) -> pd.DataFrame:
    """The independent families of ``lineages`` ({model: its lineage}, :func:`helpers.models.lineage`): each
    family's root, how many of the models belong to it and which."""
    by: dict[str, list[str]] = {}
    for model, root in lineages.items():
        by.setdefault(root, []).append(model)
    return pd.DataFrame({"independent_family": list(by), "models": [len(v) for v in by.values()],
                         "members": [", ".join(v) for v in by.values()]}, columns=["independent_family", "models",
                                                                                   "members"])


# ----------------------------------------------------------------------------- discussion


ORIGINS = {"package": "shipped as Python packages", "zoo": "from the book's zoo", "hub": "from the hub",
           "local": "from local folders"}


def measured_origins(models: list[str]) -> str:
    """How many of the measured models come from where, read from the registry (never a fixed list), e.g.
    "2 shipped as Python packages and 8 from the book's zoo" (each model listed in ``measured_models``)."""
    counts: dict[str, int] = {}
    for m in models:
        counts[origin(m)] = counts.get(origin(m), 0) + 1
    return report.and_list([f"{n} {ORIGINS[o]}" for o, n in counts.items()])


def notes(params: dict, toxigen: Measured, ih: Measured) -> Section:
    """"What matches, what does not, and why": models, sampling, mask id, significance."""
    n_paper = len(set(toxigen.models) & set(registry.paper_models()))
    n_data = len(datasets.load(params["toxigen"]))
    mask = ("reproduces that behaviour (`upstream_mask_id = True`)." if params["upstream_mask_id"] else
            "uses each tokenizer's own mask token (`upstream_mask_id = False`); the paper's masked-model "
            "numbers may differ for that reason alone.")
    return Section("\n".join([
        "- **Models.** "
        + report.sentence_case(report.count_of(n_paper, len(toxigen.models), "measured model", ("is", "are")))
        + " among the paper's 24. "
        + ("The paper's models are hub models, which cannot be obtained on the machine that built this page. "
           f"The measured models ({measured_origins(toxigen.models)}; each in the table of measured models) are "
           "compared with the published range, not model by model. "
           "Run `make book PROFILE=paper` with the hub (and a GPU) for the paper's models."
           if n_paper == 0 else "These are compared model by model above."),
        f"- **Sampling.** This build scores {toxigen.per_sentence['id'].nunique():,} of {n_data:,} ToxiGen "
        f"sentences (`sample_per_group = {params['sample_per_group']!r}`) and "
        f"{ih.per_sentence['id'].nunique():,} ImplicitHate posts; the intervals show the resulting "
        "uncertainty. With `sample_per_group = \"all\"` every sentence is scored.",
        "- **Mask id.** The upstream code masks every masked model with token id 103 (BERT-uncased's "
        "`[MASK]`), which is a different token for RoBERTa, ALBERT, ELECTRA or cased BERT. This build " + mask,
        "- **Significance.** Every group is kept with its p-value and interval; the upstream code dropped "
        "groups with p > 0.05 without saying so.",
    ]), facts={"paper_models_measured": n_paper, "sentences_scored": toxigen.per_sentence["id"].nunique(),
               "sentences": n_data})


# ----------------------------------------------------------------------------- the quality gate


def quality(params: dict) -> Section:
    """Held-out perplexity, unigram baseline, their ratio and the book's quality gate for every
    model (:func:`helpers.runner.quality_table`), saved as ``language_model_quality.csv``, after
    a sentence naming the models that fail it (shown in the tables, never interpreted)."""
    table = save(runner.quality_table(params["models"], device=params["device"], min_ratio=params["min_ratio"]),
                 CHAPTER, "language_model_quality")
    table.attrs["why"] = {"reason": "the model was measured (a reason is given only for one that was not)"}
    return common.gate_section(table, "language_model_quality", min_ratio=params["min_ratio"])
