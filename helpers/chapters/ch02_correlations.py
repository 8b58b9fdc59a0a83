"""Chapter 02: how the safety score relates to other harm metrics.

Seed 000 (Hosseini, Palangi & Awadallah 2023) §4.4 and appendix A.3: for the *Women* group,
Pearson correlations across models of the safety score with StereoSet SS (Nadeem et al. 2021)
and the CMA total effects CMA-WB / CMA-WG (Vig et al. 2020) for masked models (Table 3), and
with the regard score (Sheng et al. 2019) and two toxicity classifiers of generated text for
causal models (Table 4); regard and regard-based safety scores per group (Tables 11, 12,
Figure 4); and what the paper's published numbers allow without running a model.

Every metric of a model is cached on its own (:func:`helpers.runner.cached_result`, keyed by
metric, model identity and that metric's settings, never by chapter): ``safety_per_group``
(shared with chapters 03 and 04), ``stereoset``, ``cma`` and ``regard_generations``. Each
section function writes its tables under ``results/02_correlations/`` and returns what the
notebook shows, a :class:`helpers.chapters.common.Section` (tables, figures, generated Markdown,
the key metric call and the facts the prose states).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pandas as pd

from helpers import datasets, models as registry, plots, published, report, runner, stats
from helpers.chapters import common
from helpers.chapters.common import Section, call
from helpers.datasets import cma as cma_data, stereoset as stereoset_data
from helpers.errors import InputError
from helpers.lm.generation import BATCH_SIZE as GENERATION_BATCH, GENERATION_VERSION, generate
from helpers.metrics import cma, regard, safety, stereoset
from helpers.models import text_classifiers

CHAPTER = "02_correlations"
PARAMETERS = ("models", "sample_per_group", "stereoset_clusters_per_target", "cma_limit", "cma_masking_approach",
              "cma_filter_quantile", "regard_groups", "samples_per_prompt", "max_new_tokens", "temperature",
              "top_k", "top_p", "generation_seed", "allow_substitute", "device", "seed", "pll", "min_ratio",
              "regard_objectives")
DEFAULTS = dict(models='core', sample_per_group=25, stereoset_clusters_per_target=5, cma_limit=20,
                cma_masking_approach=1, cma_filter_quantile=None, regard_groups='all', samples_per_prompt=1,
                max_new_tokens=15, temperature=1.0, top_k=40, top_p=None, generation_seed=0,
                allow_substitute=True, device='cpu', seed=0, pll='original', min_ratio=2.0,
                regard_objectives=["causal"])
#: The objectives whose models can generate regard statements (seed 000: GPT-2 and XLNet).
GENERATING = ("causal", "permutation")
CMA_KINDS = ("winobias", "winogender")
SAFETY_COLUMNS = ["group", "group_label", "n_harmful", "n_benign", "n_dropped_nan", "u_statistic", "safety_score",
                  "p_value", "significant", "ci_low", "ci_high"]
METRIC_NAMES = {"regard": "Regard", "hatebert": "HateBERT", "roberta-toxigen": "RoBERTa-ToxiGen"}
CORRELATION_COLUMNS = ["x", "y", "n", "r", "p_value", "ci_low", "ci_high", "method"]
TABLE3_COLUMNS = ["CMA-WG", "CMA-WB", "SS", "Safety score"]
TABLE4_COLUMNS = ["RoBERTa-ToxiGen", "HateBERT", "Regard", "CMA-WG", "CMA-WB", "Safety score"]


def start(namespace) -> tuple[dict, Section]:
    """The chapter's parameters from the notebook's globals (:func:`helpers.chapters.common.start`)."""
    params, table = common.start(CHAPTER, namespace, PARAMETERS, DEFAULTS)
    chosen = params["regard_objectives"]
    if isinstance(chosen, str) or not set(chosen) <= set(GENERATING) or not chosen:
        raise InputError(f"parameter regard_objectives = {chosen!r}: a list of {' and '.join(GENERATING)}")
    return params, table


# ---------------------------------------------------------------- classifiers

@dataclass
class Classifiers:
    """The regard and toxicity classifiers (key -> :class:`helpers.models.text_classifiers.Classifier`),
    their table and the note naming offline substitutes (empty with the hub classifiers)."""

    by_key: dict
    table: pd.DataFrame
    note: str = ""


def classifiers(params: dict) -> Classifiers:
    """The hub classifiers, or their labelled offline stand-ins; writes ``classifiers.csv``."""
    found = {k: text_classifiers.classifier(k, allow_substitute=params["allow_substitute"])
             for k in text_classifiers.HUB}
    table = pd.DataFrame([{"metric": METRIC_NAMES[k], "classifier": c.name, "substitute_for": c.substitute_for or "—"}
                          for k, c in found.items()])
    common.save(table, CHAPTER, "classifiers")
    subst = table[table["substitute_for"] != "—"]
    note = (" (offline substitutes: " + "; ".join(f"{r.metric} = {r.classifier}" for r in subst.itertuples()) + ")"
            if len(subst) else "")
    return Classifiers(found, table, note)


def classifier_section(found: Classifiers) -> Section:
    """The classifiers' table (``classifiers.csv``)."""
    return Section(("classifiers", found.table), call=call(text_classifiers.classifier, "which", allow_substitute=True),
                   facts={"substitutes": found.table.loc[found.table["substitute_for"] != "—", "metric"].tolist()})


# ---------------------------------------------------------------- one model, one metric each

def _named(df: pd.DataFrame, name: str) -> pd.DataFrame:
    """``df`` with ``model`` first and ``source="measured"`` last (cached values carry no name:
    the same weights under another name reuse them)."""
    out = df.drop(columns=[c for c in ("model", "source") if c in df.columns])
    out.insert(0, "model", name)
    out["source"] = "measured"
    return out


def stereoset_settings(params: dict) -> dict:
    return {"domain": "gender", "clusters_per_target": params["stereoset_clusters_per_target"]}


def stereoset_scores(handle, params: dict) -> pd.DataFrame:
    """StereoSet SS / LMS / ICAT per domain (gender, intrasentence), cached as ``stereoset``."""
    s = stereoset_settings(params)

    def compute(h):
        data = stereoset.select_clusters(stereoset_data.load_intrasentence(domain=s["domain"]),
                                           s["clusters_per_target"])
        return stereoset.aggregate(common.stereoset_scored(h, data))
    # version 2: the sentences' scores cached one by one (common.stereoset_scored)
    return _named(runner.cached_result(handle, "stereoset", s, compute, version=2, load=False), handle.name)


def cma_settings(params: dict) -> dict:
    return {"kinds": list(CMA_KINDS), "limit": params["cma_limit"], "masking_approach": params["cma_masking_approach"],
            "filter_quantile": params["cma_filter_quantile"]}


def cma_total_effects(handle, params: dict) -> pd.DataFrame:
    """Mean CMA total effect per kind (CMA-WB, CMA-WG), cached as ``cma``; each kind is scored
    in its own batches (batch partners change scores by up to ~1e-6)."""
    s = cma_settings(params)

    def compute(lm):
        per = [cma.total_effects(lm, cma_data.examples(k).iloc[:s["limit"]] if s["limit"] else cma_data.examples(k),
                                 masking_approach=s["masking_approach"]) for k in s["kinds"]]
        return cma.summary_table(pd.concat(per, ignore_index=True), filter_quantile=s["filter_quantile"])
    return _named(runner.cached_result(handle, "cma", s, compute), handle.name)


def generation_settings(params: dict) -> dict:
    """What generates the regard statements; the draws depend on the batch size, so it is a setting."""
    return {"samples_per_prompt": params["samples_per_prompt"], "max_new_tokens": params["max_new_tokens"],
            "temperature": params["temperature"], "top_k": params["top_k"], "top_p": params["top_p"],
            "seed": params["generation_seed"], "batch_size": GENERATION_BATCH}


def regard_groups(params: dict) -> list | None:
    return None if params["regard_groups"] == "all" else list(params["regard_groups"])


def regard_generations(handle, params: dict, found: Classifiers) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Statements generated from the regard prompts with their perplexity and regard labels, and
    the toxicity per group of each toxicity classifier; cached as ``regard_generations`` (the
    classifier names are part of the settings)."""
    from helpers.lm import scoring

    s = {"groups": regard_groups(params), "templates": list(regard.TEMPLATES), **generation_settings(params),
         "classifiers": {k: c.name for k, c in found.by_key.items()}, "sampler_version": GENERATION_VERSION}

    def compute(lm):
        gen = generate(lm, regard.prompts(s["groups"]), progress=False, cache=True, **generation_settings(params))
        gen["perplexity"] = scoring.score(lm, gen["text"].tolist(), progress=False)["perplexity"].to_numpy()
        return regard.classify(gen, found.by_key)
    gen, tox = runner.cached_result(handle, "regard_generations", s, compute)
    gen, tox = gen.copy(), tox.copy()
    gen["model"] = handle.name
    if len(tox):
        tox["model"] = handle.name
    return gen.assign(source="measured"), tox.assign(source="measured")


def regard_tables(gen: pd.DataFrame, found: Classifiers) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 11 rows (regard score per group) and Table 12 rows (regard-based safety score,
    no interval) of one model's classified generations."""
    c = next(c for c in found.by_key.values() if c.kind == "regard")
    t11 = regard.regard_scores(gen.drop(columns="source")).assign(source="measured")
    t12 = datasets.with_group_labels(regard.regard_safety_scores(gen, ci=False))
    t12.insert(0, "model", gen["model"].iloc[0])
    t12["classifier"], t12["substitute_for"], t12["source"] = c.name, c.substitute_for, "measured"
    return t11, t12


# ---------------------------------------------------------------- all models

@dataclass
class Measured:
    """Every model's results (one row per model in ``metrics``) and the models not available."""

    metrics: pd.DataFrame
    tables: dict = field(default_factory=dict)   # name -> concatenated tidy table
    unavailable: dict = field(default_factory=dict)


def measure_model(handle, params: dict, found: Classifiers) -> dict:
    """All metrics of one model: the per-model tables and its row of ``metrics_per_model``."""
    per_group = runner.safety_per_group(handle, common.safety_settings(params))[SAFETY_COLUMNS]
    out = {"safety_per_group": _named(per_group, handle.name), "stereoset_scores": stereoset_scores(handle, params),
           "cma_total_effects": cma_total_effects(handle, params)}
    ss = out["stereoset_scores"].set_index("domain")
    row = {"model": handle.name, "family": handle.spec.family if handle.spec else handle.name,
           "objective": handle.objective,
           "Safety score": out["safety_per_group"].set_index("group").loc["women", "safety_score"],
           "SS": ss.loc["gender", "ss"], "LMS": ss.loc["gender", "lms"], "ICAT": ss.loc["gender", "icat"]}
    gate = runner.language_model_quality(handle, min_ratio=params["min_ratio"])
    row |= runner.gate_columns(gate)
    row |= dict(zip(out["cma_total_effects"]["metric"], out["cma_total_effects"]["mean_total_effect"]))
    if handle.objective in params["regard_objectives"]:
        gen, tox = regard_generations(handle, params, found)
        out["generations"], out["toxicity"] = gen, tox
        out["table11"], out["table12"] = regard_tables(gen, found)
        row["Regard"] = out["table11"].set_index("group")["regard_score"].get("women")
        women = tox[tox["group"] == "women"].set_index("metric")["mean_toxicity"] if len(tox) else pd.Series()
        row["HateBERT"], row["RoBERTa-ToxiGen"] = women.get("hatebert"), women.get("roberta-toxigen")
    out["row"] = row
    return out


def measure(params: dict, found: Classifiers) -> Measured:
    """Every model of ``params["models"]`` (:func:`helpers.runner.for_each_model`); writes
    metrics_per_model, safety_per_group, stereoset_scores, cma_total_effects and
    generations_labels (the generations without their text)."""
    results, unavailable = runner.for_each_model(params["models"], lambda h: measure_model(h, params, found),
                                                 device=params["device"])
    metrics = pd.DataFrame([r["row"] for r in results.values()]).assign(source="measured")
    common.save(metrics, CHAPTER, "metrics_per_model")
    tables = {k: pd.concat([r[k] for r in results.values() if k in r], ignore_index=True)
              for k in ("safety_per_group", "stereoset_scores", "cma_total_effects", "generations", "toxicity",
                        "table11", "table12") if any(k in r for r in results.values())}
    for k in ("safety_per_group", "stereoset_scores", "cma_total_effects"):
        if k in tables:
            common.save(tables[k], CHAPTER, k)
    if len(tables.get("generations", ())):
        common.save(tables["generations"].drop(columns=["text"]), CHAPTER, "generations_labels")
    return Measured(metrics, tables, unavailable)


def measured_section(measured: Measured, params: dict) -> Section:
    """The measured models (and those not available here) and ``metrics_per_model``, after the
    calls of its metrics."""
    m = measured.metrics
    text = (f"Measured **{len(m)} model(s)**: " + ", ".join(f"`{n}` ({o})" for n, o in zip(m["model"], m["objective"]))
            + (f". Not available here: {', '.join(f'`{n}`' for n in measured.unavailable)}."
               if measured.unavailable else "."))
    return Section(text, call(safety.safety_scores, "per_sentence", ci=False),
                   call(stereoset.score, "model", "stereoset_gender_clusters"),
                   call(cma.total_effects, "model", "examples", masking_approach=params["cma_masking_approach"]),
                   call(generate, "model", "prompts", **generation_settings(params)), ("metrics_per_model", m),
                   facts={"models": m["model"].tolist(), "unavailable": list(measured.unavailable)})


# ---------------------------------------------------------------- Tables 3 and 4

def correlation_block(metrics: pd.DataFrame, objective: str | tuple, columns: list[str], published_table: pd.DataFrame,
                      title: str) -> tuple[pd.DataFrame, str, object]:
    """Pearson correlations across the measured models of one objective that pass the quality gate
    (:func:`helpers.runner.language_model_quality`), next to the paper's (outer join on x, y), a
    paragraph about them (the excluded models named first), and their heat map when n >= 3
    (``tableN_heatmap.png``; else None)."""
    objectives = (objective,) if isinstance(objective, str) else tuple(objective)
    objective = " or ".join(objectives)
    same = metrics[metrics["objective"].isin(objectives)]
    part = same[same["usable"].fillna(False).astype(bool)] if "usable" in same else same
    excluded = report.gate_sentence(same) + " " if len(same) and "usable" in same else ""
    ours = (stats.correlation_matrix(part, [c for c in columns if c in part]) if len(part)
            else pd.DataFrame(columns=CORRELATION_COLUMNS))
    ours = ours.assign(source="measured", models=", ".join(part["model"]))
    pub = published_table.rename(columns={"r": "r_published"})[["x", "y", "r_published"]]
    both = ours.merge(pub, on=["x", "y"], how="outer")
    n = len(part)
    text = excluded + (f"**{n} usable {objective} model(s)** at hand" + (": " + ", ".join(f"`{m}`" for m in part["model"]) if n else "")
            + ". " + (f"A correlation needs at least 3 models; with n = {n}, none can be computed here — the "
                      "paper's values are shown alone." if n < 3 else
                      " ".join(report.correlation_sentence(r, f"between {r['x']} and {r['y']}")
                               for r in ours.to_dict("records") if "Safety score" in (r["x"], r["y"]))))
    fig = None
    if n >= 3:
        fig = common.save_figure(plots.correlation_heatmap(ours.dropna(subset=["r"]), order=columns, title=title),
                                 CHAPTER, f"{title.split(':')[0].lower().replace(' ', '')}_heatmap")
    return both, text, fig


def _correlation_section(name: str, both: pd.DataFrame, text: str, fig, columns: list[str]) -> Section:
    measured = both[both["source"] == "measured"]
    shown = [text, (name, both)] + ([(f"{name.split('_')[0]}_heatmap", fig)] if fig is not None else [])
    return Section(*shown, call=call(stats.correlation_matrix, "usable_models", columns),
                   facts={"n": int(measured["n"].max()) if measured["n"].notna().any() else 0,
                          "correlations": measured.dropna(subset=["r"])[["x", "y", "n", "r", "p_value"]]
                          .to_dict("records")})


def table3(measured: Measured) -> Section:
    """Table 3 (masked models, Women): ``table3_correlations.csv``, its paragraph and heat map."""
    both, text, fig = correlation_block(measured.metrics, "masked", TABLE3_COLUMNS, published.table("000", "table3"),
                                        "Table 3: Pearson r, masked models, Women")
    return _correlation_section("table3_correlations", common.save(both, CHAPTER, "table3_correlations"), text, fig,
                                TABLE3_COLUMNS)


def table4(measured: Measured, found: Classifiers) -> Section:
    """Table 4 (causal models, Women) with a ``note`` naming the classifiers used."""
    both, text, fig = correlation_block(measured.metrics, GENERATING, TABLE4_COLUMNS, published.table("000", "table4"),
                                        "Table 4: Pearson r, auto-regressive models, Women" + found.note)
    both = both.assign(note=found.note.strip(" ()") or "hub classifiers")
    return _correlation_section("table4_correlations", common.save(both, CHAPTER, "table4_correlations"), text, fig,
                                TABLE4_COLUMNS)


# ---------------------------------------------------------------- Tables 11, 12 and Figure 4

def regard_section(measured: Measured, found: Classifiers, params: dict) -> Section:
    """Tables 11 and 12 (``table11_regard_scores.csv``, ``table12_regard_safety_scores.csv``) and
    Figure 4 (``figure4_regard.png``, measured beside published), after a paragraph."""
    if "table11" not in measured.tables:
        return Section("No auto-regressive model was available: no generations, no Tables 11–12.")
    t11 = common.save(measured.tables["table11"], CHAPTER, "table11_regard_scores")
    t12 = common.save(measured.tables["table12"], CHAPTER, "table12_regard_safety_scores")
    fig4 = plots.safety_boxplot(pd.concat([t11[["model", "group", "regard_score", "source"]],
                                           published.table("000", "table11")]),
                                value="regard_score", title="Figure 4: regard score per group" + found.note)
    fig4.axes[0].set_ylabel("regard score (share positive + neutral)")
    common.save_figure(fig4, CHAPTER, "figure4_regard")
    text = (f"Regard scores{found.note}; {int(t11['n'].median())} statements per group and model "
            f"(generation settings: {generation_settings(params)}).")
    return Section(text, call(regard.regard_scores, "classified_generations"),
                   ("table11_view", t11.pivot_table(index="model", columns="group", values="regard_score")),
                   call(regard.regard_safety_scores, "classified_generations", ci=False),
                   ("table12_view", t12.pivot_table(index="model", columns="group", values="safety_score")),
                   ("figure4_regard", fig4), facts={"statements_per_group": int(t11["n"].median())})


# ---------------------------------------------------------------- published numbers

def _registry_column(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(registry=df["model"].map(published.registry_names("000")))


def published_table12_vs_table1() -> Section:
    """Per group, r between the paper's regard-based (Table 12) and ToxiGen (Table 1) safety
    scores across its auto-regressive models (``published_table12_vs_table1.csv``)."""
    both = _registry_column(published.table("000", "table12")).merge(
        _registry_column(published.table("000", "table1")), on=["registry", "group"], suffixes=("_regard", "_toxigen"))
    out = pd.DataFrame([{"group": g} | stats.correlation(p["safety_score_regard"], p["safety_score_toxigen"])
                        for g, p in both.groupby("group")]).assign(source="published-recomputed")
    common.save(out, CHAPTER, "published_table12_vs_table1")
    text = ("Across the paper's auto-regressive models, per group: " + " ".join(
        report.correlation_sentence(r, f"for {plots.group_label(r['group'])}") for r in out.to_dict("records")[:3])
        + " (all groups in the table below).")
    return Section(text, ("published_table12_vs_table1", out),
                   call=call(stats.correlation, "safety_score_regard", "safety_score_toxigen"),
                   facts={"correlations": out[["group", "n", "r", "p_value"]].to_dict("records")})


def published_women_metrics() -> pd.DataFrame:
    """The Women safety score of Table 1 beside Vig et al.'s published total effects, the
    StereoSet authors' gender SS and Table 11's regard score, per registry model
    (``published_women_metrics.csv``)."""
    t1 = _registry_column(published.table("000", "table1"))
    women = t1[t1["group"] == "women"].set_index("registry")["safety_score"]
    vig = cma_data.published_total_effects().pivot(index="model", columns="metric", values="total_effect")
    ref = json.loads(datasets.path("stereoset", "reference_scores_predictions.json").read_text())
    ss_pub = pd.Series({m: v["intrasentence"]["gender"]["SS Score"] for m, v in ref.items()
                        if isinstance(v, dict) and "intrasentence" in v}, name="SS")
    regard_w = _registry_column(published.table("000", "table11")).query("group == 'women'")
    pub = (pd.DataFrame({"Safety score": women}).join(vig, how="left").join(ss_pub, how="left")
           .join(regard_w.set_index("registry")["regard_score"].rename("Regard"), how="left"))
    pub["objective"] = [registry.spec(m).objective for m in pub.index]
    pub.index.name = "model"
    common.save(pub.reset_index().assign(source="published"), CHAPTER, "published_women_metrics")
    return pub


def published_women_correlations() -> Section:
    """The Women columns of Tables 3 and 4 recomputed from published inputs, with the printed r
    (``published_women_correlations.csv``)."""
    pub, rows = published_women_metrics(), []
    for label, objs, cols, tab in (("Table 3 (auto-encoders)", ["masked"], ["CMA-WG", "CMA-WB", "SS"], "table3"),
                                   ("Table 4 (auto-regressive)", ["causal", "permutation"],
                                    ["Regard", "CMA-WG", "CMA-WB"], "table4")):
        part, printed = pub[pub["objective"].isin(objs)], published.table("000", tab)
        for c in cols:
            p = printed[(printed["x"] == c) & (printed["y"] == "Safety score")]["r"]
            rows.append({"table": label, "x": c, "y": "Safety score", **stats.correlation(part[c], part["Safety score"]),
                         "models": ", ".join(part.index[part[c].notna()]),
                         "r_published": float(p.iloc[0]) if len(p) else float("nan")})
    out = common.save(pd.DataFrame(rows).assign(source="published-recomputed"), CHAPTER, "published_women_correlations")
    text = " ".join(report.correlation_sentence(r, f"between {r['x']} and the Women safety score ({r['table']}, "
                                                   "published inputs)") + f" The paper prints r = {r['r_published']:.2f}."
                    for r in out.to_dict("records"))
    return Section(text, ("published_women_correlations", out), call=call(stats.correlation, "x", "safety_score"),
                   facts={"correlations": out[["table", "x", "n", "r", "r_published"]].to_dict("records")})
