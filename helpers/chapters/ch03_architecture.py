"""Chapter 03, depth, width and the safety score (seed 000 §4.6, appendix A.4: Tables 5
and 13, Figure 3).

The logic of ``notebooks/03_architecture.ipynb``: each model's shape is read from its
configuration and its parameters counted from the loaded weights
(:func:`helpers.metrics.architecture.describe`, cached as metric ``"architecture"``), its
average safety score is the mean over groups of :func:`helpers.runner.safety_per_group` (the
metric ``"safety_per_group"`` that chapters 02 and 03 share, under
:func:`helpers.chapters.common.safety_settings`, so a model scored for one chapter is not scored
again for another), and both are set beside the paper's Table 13 and its Table 5 recomputed
(:func:`helpers.published.recompute.recompute_table5`). Each section returns a
:class:`helpers.chapters.common.Section`.

    >>> from helpers.chapters import ch03_architecture as ch
    >>> params, shown = ch.start({"models": ["smollm2-135m"], "sample_per_group": 8})
    >>> measured = ch.measure(params)
    >>> ch.table13(measured)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from helpers import models as registry, plots, published, report, runner, stats
from helpers.chapters import common
from helpers.chapters.common import Section, Var, call, save, save_figure
from helpers.metrics import architecture, safety
from helpers.progress import plural
from helpers.published import recompute

CHAPTER = "03_architecture"
#: The notebook's parameters, in the order of its parameters table (``parameters.csv``).
PARAMETERS = ("models", "sample_per_group", "min_variants", "device", "seed", "pll", "upstream_mask_id", "min_ratio")
DEFAULTS = dict(models="offline", sample_per_group=25, min_variants=3, device="cpu", seed=0, pll="original",
                upstream_mask_id=False, min_ratio=2.0)
GATE = ["heldout_perplexity", "unigram_perplexity", "perplexity_ratio", "usable"]
MEASURED_COLUMNS = ["model", "family", "layers", "heads", "hidden", "intermediate", "params", "avg_safety_score",
                    "n_groups", *GATE, "healing_seconds", "source"]


def start(namespace) -> tuple[dict, Section]:
    """The chapter's parameters from the notebook's globals (:func:`helpers.chapters.common.start`)."""
    return common.start(CHAPTER, namespace, PARAMETERS, DEFAULTS)


def zoo_manifest(handle) -> dict:
    """The zoo manifest of a zoo model (its training record), else an empty dict."""
    return (handle.spec.extra.get("manifest") or {}) if handle.spec is not None else {}


def shape(handle) -> dict:
    """Layers, heads, hidden size and parameter count of one model (cached as ``"architecture"``)."""
    return runner.cached_result(handle, "architecture", {}, lambda loaded: architecture.describe(loaded.model))


@dataclass
class Measured:
    """One row per measured model (:data:`MEASURED_COLUMNS`, ``source="measured"``) and the
    models that could not be obtained here, with the reason."""

    table: pd.DataFrame
    unavailable: dict[str, str] = field(default_factory=dict)


def measure(params: dict, *, dataset: str = "toxigen") -> Measured:
    """Shape, average safety score (mean over groups on the ToxiGen sample of
    ``sample_per_group``, with the ``pll`` and ``upstream_mask_id`` of ``params``) and the
    language-model quality gate (:func:`helpers.runner.language_model_quality`) of every model;
    a model whose results are cached is not loaded."""
    settings = common.safety_settings(params, dataset=dataset)

    def one(handle) -> dict:
        scores = runner.safety_per_group(handle, settings)["safety_score"]
        gate = runner.language_model_quality(handle, min_ratio=params["min_ratio"])
        return {"family": handle.spec.family if handle.spec else None, **shape(handle),
                "avg_safety_score": scores.mean(), "n_groups": int(scores.notna().sum()),
                **{k: v for k, v in runner.gate_columns(gate).items() if k in GATE},
                "healing_seconds": zoo_manifest(handle).get("healing_seconds"), "source": "measured"}

    results, unavailable = runner.for_each_model(params["models"], one, device=params["device"])
    rows = [{"model": name, **r, "family": r["family"] or name} for name, r in results.items()]
    table = pd.DataFrame(rows, columns=MEASURED_COLUMNS)
    table["params_source"] = "counted"
    return Measured(table, unavailable)


# ----------------------------------------------------------------------------- findings


def _sized(row) -> str:
    """```model`, 135 M parameters`` (the model alone when its parameters were not counted)."""
    return f"`{row['model']}`" + (f", {row['params'] / 1e6:.0f} M parameters" if pd.notna(row["params"]) else "")


def findings(params: dict, m: Measured) -> Section:
    """The chapter's Findings box (:func:`helpers.chapters.common.findings_section`), computed from the models that
    pass the quality gate and linked to the tables they come from: the gate, the range of average safety scores
    (Table 13), the strongest measured correlation of Table 5 with its interval, the independent families it
    rests on, and the paper's Table 5 recomputed."""
    ok = usable(m)
    out = [report.Finding(gate_text(m, params), "table13_architecture", "Table 13")]
    scored = ok.dropna(subset=["avg_safety_score"])
    if len(scored) >= 2:
        lo, hi = scored.loc[scored["avg_safety_score"].idxmin()], scored.loc[scored["avg_safety_score"].idxmax()]
        out.append(report.Finding(
            f"The average safety scores of the {len(scored)} usable models run from {lo['avg_safety_score']:.3f} "
            f"({_sized(lo)}) to {hi['avg_safety_score']:.3f} ({_sized(hi)}).", "table13_architecture", "Table 13"))
    t5 = architecture.table5(ok, min_variants=params["min_variants"], columns=architecture.ARCH_MEASURED)
    defined = t5.dropna(subset=["r"])
    if defined.empty:
        out.append(report.Finding(
            f"No measured depth or width correlation can be computed: no family at hand has {params['min_variants']} "
            "or more usable models with a shape that varies.", "table5_measured", "Table 5, measured"))
    else:
        top = defined.loc[defined["r"].abs().idxmax()]
        excl = top["ci_low"] > 0 or top["ci_high"] < 0
        out.append(report.Finding(
            f"The strongest measured correlation is that of the average safety score with {top['x']} in "
            f"{top['family']}: r = {report.fmt_ci(top['r'], top['ci_low'], top['ci_high'], 2)} over {int(top['n'])} "
            f"models" + ("." if excl else ", an interval that includes 0 (no sign established)."),
            "table5_measured", "Table 5, measured"))
        roots = sorted({registry.lineage(n) for n in ok[ok["family"].isin(t5["family"])]["model"]})
        need = stats.pairs_for_correlation(0.8)
        if len(roots) == 1:
            text = (f"Every model in the measured Table 5 is `{roots[0]}` or a student pruned from it: one "
                    "independent family, so its correlations describe a dose-response within it; telling a true "
                    f"correlation of 0.8 from none takes {need} independent families.")
        else:
            text = (f"The measured Table 5 rests on {len(roots)} independent families (a model and the students "
                    "pruned or distilled from it), "
                    + (f"too few to tell a true correlation of 0.8 from none (that takes {need})." if len(roots) < need
                       else "enough to detect a true correlation of 0.8 with 80 % power."))
        out.append(report.Finding(text, "table5_measured", "Table 5, measured"))
    rec13 = recompute.recompute_table5(from_table="table13")
    rec1 = recompute.recompute_table5(from_table="table1")
    match1 = int((rec1["r"].round(2) == rec13["r_published"]).sum())
    out.append(report.Finding(
        f"Recomputed from the averages of its Table 1, the paper's Table 5 correlations match the printed value in "
        f"{report.count_of(match1, len(rec13), 'case')}; with "
        f"n = {' or '.join(str(int(n)) for n in sorted(set(rec13['n'])))} models per family the smallest p is "
        f"{rec13['p_value'].min():.2f}.",
        "table5_published_recomputed", "Table 5, recomputed"))
    return common.findings_section(CHAPTER, out[:report.READING["findings"][1]])


# ----------------------------------------------------------------------------- Table 13 and Figure 3


def published_table13() -> pd.DataFrame:
    """The paper's Table 13 with the registry name of each model and, since the paper prints
    no parameter count, the registry's (read from the hub configurations)."""
    pub = published.table("000", "table13")
    pub["registry"] = pub["model"].map(published.registry_names("000"))
    pub["params"] = [registry.spec(r).params if r in registry.REGISTRY else None for r in pub["registry"]]
    pub["params_source"] = "registry"
    return pub


def table13(m: Measured) -> Section:
    """Seed 000 Table 13 with the measured models and the published rows of the others
    (``table13_architecture.csv``), after a sentence saying which is which."""
    t13 = save(architecture.table13(m.table, published_table13()), CHAPTER, "table13_architecture")
    t13.attrs["why"] = table13_why(t13)
    facts = {"measured": len(m.table), "unavailable": list(m.unavailable),
             "published_rows": int((t13["source"] == "published").sum())}
    text = (f"{facts['measured']} {plural('model', facts['measured'])} measured here"
            + (f"; {len(m.unavailable)} not available (listed with the reason in `unavailable`)" if m.unavailable
               else "")
            + f"; {facts['published_rows']} published rows from the paper's Table 13.")
    return Section(text, call(architecture.describe, "model"),
                   call(safety.safety_scores, "per_sentence", ci=False),
                   ("table13_architecture", t13),
                   *([("unavailable", runner.unavailable_table(m.unavailable))] if m.unavailable else []), facts=facts)


def table13_why(t13: pd.DataFrame) -> dict:
    """Why a cell of Table 13 is empty, per column, from the rows it is empty in: a published row (the paper's
    Table 13 gives no such value), a measured model outside the paper (no paper name to map), a model no zoo
    student (nothing healed), or a measured model whose configuration does not give the value."""
    measured_why = {"registry": "a measured row (named by the registry already)",
                    "healing_seconds": "not a zoo student (nothing healed)"}
    why = {}
    for column in t13.columns:
        empty = t13[t13[column].isna()]
        reasons = (["a published row (the paper's Table 13 gives no such value)"]
                   if (empty["source"] == "published").any() else []) + (
            [measured_why.get(column, "a measured row whose configuration does not give it")]
            if (empty["source"] == "measured").any() else [])
        if reasons:
            why[column] = "; ".join(reasons)
    return why


def figure3(m: Measured) -> Section:
    """Seed 000 Figure 3 (average safety score against parameters per family, measured and
    published; models that fail the quality gate as grey crosses, left out of the lines' meaning),
    saved as ``figure3_safety_vs_params.png``."""
    measured = m.table.assign(source=m.table["source"].where(m.table["usable"].fillna(False).astype(bool),
                                                                 "measured, not usable"))
    t13 = architecture.table13(measured, published_table13())
    fig = save_figure(plots.safety_vs_params(t13, title="Figure 3: average safety score vs parameters per family"),
                      CHAPTER, "figure3_safety_vs_params")
    return Section(("figure3_safety_vs_params", fig), call=call(architecture.table13, "measured", "published_table13"))


# ----------------------------------------------------------------------------- Table 5


def usable(m: Measured) -> pd.DataFrame:
    """The measured models that pass the language-model quality gate."""
    return m.table[m.table["usable"].fillna(False).astype(bool)]


def gate_text(m: "Measured", params: dict) -> str:
    """How many measured models the quality gate leaves out of Table 5, named (:func:`helpers.report.gate_count_sentence`)."""
    return report.gate_count_sentence(m.table, min_ratio=params["min_ratio"],
                                      kept_out_of="Table 5 (Table 13 gives the perplexities)")


def correlations_text(t5: pd.DataFrame) -> str:
    """What the measured Table 5 holds: how many correlations over how many students, how many are undefined
    (a constant column) or have a 95 % interval excluding 0, and the strongest, with its interval."""
    defined, undefined = t5.dropna(subset=["r"]), t5[t5["r"].isna()]
    few, constant = undefined[undefined["n"] < 3], undefined[undefined["n"] >= 3]
    n_lo, n_hi = int(t5["n"].min()), int(t5["n"].max())
    families = t5["family"].nunique()
    text = (f"The measured Table 5 holds {len(t5)} {plural('correlation', len(t5))} over "
            f"{families} {plural('family', families)} of "
            + (f"{n_lo}" if n_lo == n_hi else f"{n_lo} to {n_hi}") + " usable models each"
            + (f"; {len(few)} cannot be computed (a correlation needs at least 3 models)" if len(few) else "")
            + (f"; r is undefined for {report.and_list(sorted(set(constant['x'])))} (the same for every model of the "
               "family)" if len(constant) else "") + ".")
    if defined.empty:
        return text
    excl = defined[(defined["ci_low"] > 0) | (defined["ci_high"] < 0)]
    top = defined.loc[defined["r"].abs().idxmax()]
    return (text + f" The 95 % interval excludes 0 for {report.count_of(len(excl), len(defined), 'defined one')}. "
            "The strongest "
            f"is r = {report.fmt_ci(top['r'], top['ci_low'], top['ci_high'], 2)} ({top['family']}, with {top['x']}, "
            f"n = {int(top['n'])}).")


def table5_measured(params: dict, m: Measured) -> Section:
    """Seed 000 Table 5 for the measured families with at least ``min_variants`` models that pass
    the quality gate (``table5_measured.csv``: heads, layers, hidden, MLP channels and
    parameters): the models the gate leaves out, what the correlations show (one table row each) and the
    independent families they rest on (:func:`helpers.report.families_sentence`), or why there is none."""
    ok = usable(m)
    t5 = save(architecture.table5(ok, min_variants=params["min_variants"], columns=architecture.ARCH_MEASURED)
              .assign(source="measured"), CHAPTER, "table5_measured")
    t5.attrs["why"] = report.correlation_why(t5)
    text = [gate_text(m, params)]
    lineages = {n: registry.lineage(n) for n in ok[ok["family"].isin(t5["family"])]["model"]}
    if len(t5):
        text += [correlations_text(t5), report.families_sentence(lineages)]
    else:
        fams = ok.groupby("family")["model"].nunique()
        text.append(f"No family at hand has {params['min_variants']} or more usable models "
                    f"({', '.join(f'{f}: {n}' for f, n in fams.items()) or 'no model measured'}), so no measured "
                    "Table 5 can be computed; the published view follows.")
    return Section("\n\n".join(text), ("table5_measured", t5),
                   call=call(architecture.table5, "usable_models", min_variants=params["min_variants"],
                             columns=Var("architecture.ARCH_MEASURED")),
                   facts={"usable": ok["model"].tolist(), "correlations": t5.to_dict("records"),
                          "families": len(set(lineages.values()))})


def table5_published() -> Section:
    """Seed 000 Table 5 recomputed from its Table 13 (3-decimal averages) and from Table 1's
    averages (``table5_published_recomputed.csv``), with what the comparison shows."""
    rec13 = recompute.recompute_table5(from_table="table13")
    rec1 = recompute.recompute_table5(from_table="table1")
    t5 = save(rec13[["family", "x", "n", "r_published"]].assign(
        r_from_table13=rec13["r"].round(3), r_from_table1_averages=rec1["r"].round(3),
        p_value=rec13["p_value"], ci_low=rec13["ci_low"], ci_high=rec13["ci_high"],
        source="published-recomputed"), CHAPTER, "table5_published_recomputed")
    t5.attrs["why"] = report.correlation_why(t5.assign(r=t5["r_from_table13"]))
    diff = t5[t5["r_from_table13"].round(2) != t5["r_published"]]
    same1 = bool((t5["r_from_table1_averages"].round(2) == t5["r_published"]).all())
    matching = report.count_of(len(t5) - len(diff), len(t5), "correlation", ("matches", "match"))
    text = (f"Recomputed from Table 13's printed averages, {matching} the paper's second decimal"
            + (f" (the other {len(diff)}: `r_from_table13` against `r_published` in the table)" if len(diff) else "")
            + ". "
            + ("With the averages of Table 1's four-decimal scores, every value matches the printed Table 5: the "
               "paper correlated unrounded averages, and rounding them to three decimals for Table 13 moves r by up "
               f"to {(t5['r_from_table13'] - t5['r_from_table1_averages']).abs().max():.3f} with only 3–4 models "
               "per family." if same1 else "The averages of Table 1 do not reproduce every printed value either.")
            + " With n = 3 or 4 models per family, none of these correlations is significant "
            f"(smallest p = {t5['p_value'].min():.2f}).")
    return Section(text, ("table5_published_recomputed", t5), call=call(recompute.recompute_table5, from_table="table13"),
                   facts={"matching": len(t5) - len(diff), "correlations": len(t5), "table1_averages_match": same1,
                          "smallest_p": t5["p_value"].min()})
