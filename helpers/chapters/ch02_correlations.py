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

import numpy as np
import pandas as pd

from helpers import datasets, models as registry, plots, published, report, runner, stats
from helpers.chapters import common
from helpers.chapters.common import Section, call
from helpers.datasets import cma as cma_data, stereoset as stereoset_data
from helpers.errors import InputError, ModelUnavailableError
from helpers.lm.generation import BATCH_SIZE as GENERATION_BATCH, GENERATION_VERSION, generate
from helpers.metrics import cma, regard, safety, stereoset
from helpers.models import text_classifiers
from helpers.progress import plural

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
    found = {k: text_classifiers.classifier(k, allow_substitute=params["allow_substitute"], verbose=False)
             for k in text_classifiers.HUB}
    table = pd.DataFrame([{"metric": METRIC_NAMES[k], "classifier": c.name, "substitute_for": c.substitute_for or "—"}
                          for k, c in found.items()])
    common.save(table, CHAPTER, "classifiers")
    subst = table[table["substitute_for"] != "—"]
    note = (" (offline substitutes: " + "; ".join(f"{r.metric} = {r.classifier}" for r in subst.itertuples()) + ")"
            if len(subst) else "")
    return Classifiers(found, table, note)


def classifier_section(found: Classifiers) -> Section:
    """The classifiers' table (``classifiers.csv``), after a sentence on the stand-ins."""
    k = int((found.table["substitute_for"] != "—").sum()) if len(found.table) else 0
    stand_ins = report.count_of(k, len(found.table), "classifier", ("is an offline stand-in", "are offline stand-ins"))
    text = (f"{report.sentence_case(stand_ins)}: the hub's could not be loaded here (offline, or not in the local "
            "Hugging Face cache)."
            if k else
            "The hub's regard and toxicity classifiers are used, as in the paper.")
    return Section(text, ("classifiers", found.table),
                   call=call(text_classifiers.classifier, "which", allow_substitute=True),
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
    """The measured models (``metrics_per_model``, one row each) and those not available here
    (``models_unavailable``, with the reason), after the calls of its metrics."""
    m = measured.metrics
    kinds = report.and_list([f"{k} {o}" for o, k in m["objective"].value_counts(sort=False).items()])
    text = f"Measured **{len(m)} {plural('model', len(m))}** ({kinds}), one row each in the table below."
    shown = [("metrics_per_model", m)]
    if measured.unavailable:
        k = len(measured.unavailable)
        text += f" {k} {plural('model', k)} could not be obtained here; the second table says why."
        shown.append(("models_unavailable", common.save(runner.unavailable_table(measured.unavailable), CHAPTER,
                                                        "models_unavailable")))
    return Section(text, call(safety.safety_scores, "per_sentence", ci=False),
                   call(stereoset.score, "model", "stereoset_gender_clusters"),
                   call(cma.total_effects, "model", "examples", masking_approach=params["cma_masking_approach"]),
                   call(generate, "model", "prompts", **generation_settings(params)), *shown,
                   facts={"models": m["model"].tolist(), "unavailable": list(measured.unavailable)})


# ---------------------------------------------------------------- Tables 3 and 4

#: What a higher value of each metric means: the sign a correlation between two of them carries.
HIGHER_MEANS = {"Safety score": "less harm", "Regard": "less harm", "HateBERT": "more harm",
                "RoBERTa-ToxiGen": "more harm", "CMA-WG": "more bias", "CMA-WB": "more bias", "SS": "more bias"}
#: The correlation a family count is held to (report.families_sentence): a strong one, told from none at 80 % power.
STRONG = 0.8


def lineages(names) -> dict:
    """{model: its independent family} (:func:`helpers.models.lineage`: a model and every model
    pruned or distilled from it are one family)."""
    return {m: registry.lineage(m) for m in names}


def usable(metrics: pd.DataFrame, objectives: tuple) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the measured models of ``objectives``, those of them that pass the language-model quality gate)."""
    same = metrics[metrics["objective"].isin(objectives)]
    return same, (same[same["usable"].fillna(False).astype(bool)] if "usable" in same else same)


def correlations(metrics: pd.DataFrame, objective: str | tuple, columns: list[str],
                 published_table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Pearson correlations across the measured models of ``objective`` (one or a tuple) that pass
    the quality gate, each with n and ``families`` (the independent families among its n models),
    outer-joined on (x, y) with the paper's r (``r_published``); the models used; their lineages."""
    objectives = (objective,) if isinstance(objective, str) else tuple(objective)
    part = usable(metrics, objectives)[1]
    lin = lineages(part["model"])
    ours = (stats.correlation_matrix(part, [c for c in columns if c in part]) if len(part)
            else pd.DataFrame(columns=CORRELATION_COLUMNS))
    ours.insert(3, "families", [len({lin[m] for m in part["model"][part[x].notna() & part[y].notna()]})
                                for x, y in zip(ours["x"], ours["y"])])
    ours = ours.assign(source="measured", models=", ".join(part["model"]))
    pub = published_table.rename(columns={"r": "r_published"})[["x", "y", "r_published"]]
    return ours.merge(pub, on=["x", "y"], how="outer"), part, lin


def correlation_why(both: pd.DataFrame) -> dict:
    """Why each column of a correlation table (:func:`correlations`) has an empty cell
    (:func:`helpers.report.correlation_why`: not measured here, too few models, a constant metric,
    no interval)."""
    return report.correlation_why(
        both, unit="usable models with both values", constant="one of the two metrics is the same for every model",
        unmeasured="no usable model of this kind was measured here: the paper's row alone",
        columns=[c for c in both.columns if c != "r_published"])


def correlation_block(metrics: pd.DataFrame, objective: str | tuple, columns: list[str], published_table: pd.DataFrame,
                      title: str, note: str = "") -> tuple[pd.DataFrame, str, object]:
    """Pearson correlations across the measured models of one objective that pass the quality gate
    (:func:`helpers.runner.language_model_quality`), each with n and its independent families, next
    to the paper's (:func:`correlations`); two paragraphs (the gate and the models; how many families
    they rest on, :func:`helpers.report.families_sentence`); the heat map when n >= 3
    (``tableN_heatmap.png``, its title ``title``, n, the families and ``note``; else None)."""
    objectives = (objective,) if isinstance(objective, str) else tuple(objective)
    both, part, lin = correlations(metrics, objectives, columns, published_table)
    both.attrs["why"] = correlation_why(both)
    same = usable(metrics, objectives)[0]
    n, families = len(part), len(set(lin.values()))
    text = (report.gate_sentence(same) + " " if len(same) and "usable" in same else "") + \
        f"**{n} usable {' or '.join(objectives)} {plural('model', n)}** at hand"
    if n < 3:
        return both, text + (f". A correlation needs at least 3 models; with n = {n}, none can be computed here — "
                             "the paper's values are shown alone."), None
    text += " (the table's `models` column).\n\n" + report.families_sentence(lin, strong=STRONG)
    if families < n:
        text += (f" The intervals treat the {n} models as independent, which models of one family are not: "
                 "they are narrower than these models warrant.")
    fig = common.save_figure(plots.correlation_heatmap(both.dropna(subset=["r"]), order=columns,
                                                       title=f"{title}\nn = {n} models from {families} independent "
                                                             f"{plural('family', families)}"
                                                             + (f"; {note}" if note else "")),
                             CHAPTER, f"{title.split(':')[0].lower().replace(' ', '')}_heatmap")
    return both, text, fig


def _correlation_section(name: str, both: pd.DataFrame, text: str, fig, columns: list[str]) -> Section:
    measured = both[both["source"] == "measured"]
    shown = [text, (name, both)] + ([(f"{name.split('_')[0]}_heatmap", fig)] if fig is not None else [])
    return Section(*shown, call=call(stats.correlation_matrix, "usable_models", columns),
                   facts={"n": int(measured["n"].max()) if measured["n"].notna().any() else 0,
                          "families": int(measured["families"].max()) if measured["families"].notna().any() else 0,
                          "correlations": measured.dropna(subset=["r"])[["x", "y", "n", "families", "r", "p_value"]]
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
                                        "Table 4: Pearson r, auto-regressive models, Women",
                                        "offline stand-in classifiers" if found.note else "")
    both = both.assign(note=found.note.strip(" ()") or "hub classifiers")
    both.attrs["why"] = correlation_why(both)
    return _correlation_section("table4_correlations", common.save(both, CHAPTER, "table4_correlations"), text, fig,
                                TABLE4_COLUMNS)


# ---------------------------------------------------------------- within one family

def _parameters(name: str) -> float:
    """The number of parameters of registry or zoo model ``name`` (NaN when unknown, e.g. a local path)."""
    try:
        return float(registry.spec(name).params or np.nan)
    except ModelUnavailableError:
        return np.nan


def _pair(both: pd.DataFrame, a: str, b: str) -> pd.Series | None:
    row = both[((both["x"] == a) & (both["y"] == b)) | ((both["x"] == b) & (both["y"] == a))]
    return row.iloc[0] if len(row) else None


def women_counts(measured: Measured) -> pd.DataFrame:
    """Per model, the Women safety score's ToxiGen sentences (``n_harmful``, ``n_benign``), its 95 %
    interval where the result has one (``ci_low``, ``ci_high``), and the regard statements about
    women (``n_statements``, Table 11's ``n``)."""
    per_group = measured.tables.get("safety_per_group")
    columns = ["n_harmful", "n_benign", "ci_low", "ci_high"]
    out = (per_group[per_group["group"] == "women"].set_index("model")[[c for c in columns if c in per_group]]
           if per_group is not None and len(per_group) else pd.DataFrame(columns=columns))
    t11 = measured.tables.get("table11")
    if t11 is not None and len(t11):
        out = out.join(t11[t11["group"] == "women"].set_index("model")["n"].rename("n_statements"), how="outer")
    return out


def _same_sign_means(metric: str) -> str:
    """How a change of ``metric`` with the safety score's sign reads as harm (:data:`HIGHER_MEANS`)."""
    mine = HIGHER_MEANS.get(metric, "")
    if not mine:
        return ""
    return ("both say more harm, or both less" if mine.split()[0] == HIGHER_MEANS["Safety score"].split()[0] else
            "one says more harm (or bias), the other less")


def within_family(part: pd.DataFrame, columns: list[str], lin: dict, counts: pd.DataFrame,
                  both: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each family of ``part`` whose root (the teacher) was measured with at least one model pruned
    or distilled from it: its models by size, teacher first, with each metric, the Women safety
    score's sentences and interval and the regard statements about women (``counts``, by model,
    :func:`women_counts`); and, per family and metric, how many students changed that metric from
    the teacher with the sign of their safety-score change, beside the correlation across all
    models and the paper's (``both``, :func:`correlations`)."""
    others = [c for c in columns if c in part and c != "Safety score"]
    rows = part.set_index("model")
    get = lambda column, m: counts[column].get(m, np.nan) if column in counts else np.nan   # noqa: E731
    levels, agree = [], []
    for root in dict.fromkeys(lin.values()):
        members = [m for m in rows.index if lin[m] == root]
        if root not in members or len(members) < 2:
            continue
        size = {m: _parameters(m) for m in members}
        students = sorted((m for m in members if m != root),
                          key=lambda m: (-size[m] if np.isfinite(size[m]) else np.inf, m))
        for m in (root, *students):
            levels.append({"family": root, "model": m, "role": "teacher" if m == root else "student",
                           "parameters_millions": size[m] / 1e6, "Safety score": rows.loc[m, "Safety score"],
                           "safety_ci_low": get("ci_low", m), "safety_ci_high": get("ci_high", m),
                           "n_harmful": get("n_harmful", m), "n_benign": get("n_benign", m),
                           **{c: rows.loc[m, c] for c in others}, "n_statements": get("n_statements", m)})
        change = rows.loc[students, "Safety score"] - rows.loc[root, "Safety score"]
        for c in others:
            d = rows.loc[students, c] - rows.loc[root, c]
            both_ok = d.notna() & change.notna()
            sign = np.sign(d[both_ok].astype(float)) * np.sign(change[both_ok].astype(float))
            pair = _pair(both, c, "Safety score")
            agree.append({"family": root, "metric": c, "higher_means": HIGHER_MEANS.get(c, ""),
                          "same_sign_means": _same_sign_means(c),
                          "students": int(both_ok.sum()), "students_same_sign": int((sign > 0).sum()),
                          "students_opposite_sign": int((sign < 0).sum()), "students_unchanged": int((sign == 0).sum()),
                          "r_measured": np.nan if pair is None else pair["r"],
                          "r_published": np.nan if pair is None else pair["r_published"]})
    return pd.DataFrame(levels), pd.DataFrame(agree)


def _inside_teacher_interval(levels: pd.DataFrame) -> tuple[int, int]:
    """(students whose Women safety score lies inside their teacher's 95 % interval, students whose
    teacher has an interval)."""
    if "safety_ci_low" not in levels:
        return 0, 0
    teacher = levels[levels["role"] == "teacher"].set_index("family")
    inside = total = 0
    for s in levels[levels["role"] == "student"].to_dict("records"):
        low, high = teacher.loc[s["family"], "safety_ci_low"], teacher.loc[s["family"], "safety_ci_high"]
        if np.isfinite(low) and np.isfinite(high):
            total += 1
            inside += bool(low <= s["Safety score"] <= high)
    return inside, total


def _sentences(levels: pd.DataFrame) -> str:
    """"26 harmful and 26 benign": the ToxiGen sentences behind the family's Women safety scores."""
    h, b = levels["n_harmful"].dropna(), levels["n_benign"].dropna()
    if h.empty or b.empty:
        return "a sample of"
    return f"{_span(h)} harmful and {_span(b)} benign"


def _safety_changes(levels: pd.DataFrame) -> str:
    """"by -0.037 to -0.004": how far the students' Women safety scores lie from their teacher's."""
    teachers = levels[levels["role"] == "teacher"].set_index("family")["Safety score"]
    students = levels[levels["role"] == "student"]
    change = (students["Safety score"] - students["family"].map(teachers)).dropna()
    return f"by {change.min():+.3f} to {change.max():+.3f}" if len(change) > 1 else f"by {change.iloc[0]:+.3f}"


def within_family_text(levels: pd.DataFrame) -> str:
    """Two paragraphs on the within-family tables: what they ask; what the safety score's changes
    can be told from (the teacher's interval, or none) and the statements behind the regard score."""
    teachers = levels[levels["role"] == "teacher"]
    students = levels[levels["role"] == "student"]
    who = (f"`{teachers['model'].iloc[0]}` and the {len(students)} {plural('model', len(students))} pruned or "
           "distilled from it" if len(teachers) == 1 else
           f"{len(teachers)} teachers and the {len(students)} models pruned or distilled from them")
    text = (f"Models of one family are no independent evidence of a correlation, but they are a dose-response: "
            f"the first table gives {who}, by size. Does pruning move the Women safety score and each other metric "
            "together? A positive correlation across models predicts changes from the teacher of the same sign; the "
            "second table counts, per metric, the students whose change has the sign of their safety-score change, "
            "beside r across all models and the paper's r. Its columns `higher_means` and `same_sign_means` read each "
            "count as harm.\n\n")
    inside, total = _inside_teacher_interval(levels)
    moved = _safety_changes(levels)
    if total:
        text += (f"The students' Women safety scores differ from their teacher's {moved}; "
                 f"{report.count_of(inside, total, 'score', ('lies', 'lie'))} "
                 "inside the teacher's 95 % interval, where a change may be the ToxiGen sample's noise.")
    else:
        text += (f"The students' Women safety scores differ from their teacher's {moved}. These scores carry no "
                 f"interval here (the cached per-group result is computed without one), so over {_sentences(levels)} "
                 "sentences no change can be told from sampling noise: the signs describe these models only.")
    n = levels["n_statements"].dropna() if "n_statements" in levels else pd.Series(dtype=float)
    if len(n):
        text += (f" Regard and the toxicities are read from {_span(n)} generated statements about women per model, "
                 f"so a regard score moves in steps of {1 / n.min():.2g}.")
    return text


def within_family_section(measured: Measured, found: Classifiers) -> Section:
    """Table 4's models of one family (a teacher and the students pruned or distilled from it) as a
    dose-response: ``table4_within_family.csv`` (the models by size, each metric with its n) and
    ``table4_sign_agreement.csv`` (per metric, the students whose change from the teacher has the
    safety score's sign)."""
    both, part, lin = correlations(measured.metrics, GENERATING, TABLE4_COLUMNS, published.table("000", "table4"))
    levels, agree = within_family(part, TABLE4_COLUMNS, lin, women_counts(measured), both)
    if levels.empty:
        return Section("No two usable auto-regressive models here are of one family (a model and those pruned or "
                       "distilled from it): there is no within-family comparison.", facts={"families": []})
    if levels[["safety_ci_low", "safety_ci_high"]].isna().all(axis=None):          # the shared result has none
        levels = levels.drop(columns=["safety_ci_low", "safety_ci_high"])
    levels = common.save(levels, CHAPTER, "table4_within_family")
    agree = common.save(agree, CHAPTER, "table4_sign_agreement")
    levels.attrs["why"] = {"parameters_millions": "the size of a model outside the registry and the zoo is unknown",
                           "safety_ci_low": "no interval: a constant sample", "safety_ci_high":
                           "no interval: a constant sample", "n_statements": "no regard statements were generated"} | {
        c: "not measured for this model" for c in TABLE4_COLUMNS}
    agree.attrs["why"] = {"r_measured": WHY_CORRELATION, "r_published": "the paper prints no r for this pair"}
    return Section(within_family_text(levels), ("table4_within_family", levels),
                   ("table4_sign_agreement", agree), call=call(registry.lineage, "model"),
                   facts={"families": list(levels.loc[levels["role"] == "teacher", "model"]),
                          "agreement": agree.to_dict("records")})


WHY_CORRELATION = "not computable: fewer than 3 usable models with both values, or one of them constant"


# ---------------------------------------------------------------- Tables 11, 12 and Figure 4

#: Why a regard-based safety score (Table 12) is missing, by cause (:func:`table12_causes`).
TABLE12_CAUSES = {"none": "no statement about the group was scored",
                  "no negative": "the model wrote no statement about the group that was classified negative (the "
                                 "score compares negative statements with the others)",
                  "all negative": "every statement about the group was classified negative: none to compare them with",
                  "no perplexity": "the statements' perplexities are undefined"}


def table12_causes(t12: pd.DataFrame) -> pd.Series:
    """Per row of Table 12 whose score is missing, its cause (a key of :data:`TABLE12_CAUSES`): the
    score compares the perplexity of a group's negative statements (``n_harmful``) with that of its
    others (``n_benign``), so it needs both."""
    empty = t12[t12["safety_score"].isna()]
    return pd.Series(["none" if h == 0 and b == 0 else "no negative" if h == 0 else "all negative" if b == 0
                      else "no perplexity" for h, b in zip(empty["n_harmful"], empty["n_benign"])],
                     index=empty.index, dtype=object)


def table12_why(t12: pd.DataFrame, by: str = "group_label") -> dict:
    """Per group (column ``by`` of the Table 12 view), why a model's regard-based safety score is
    missing (:func:`table12_causes`)."""
    causes = table12_causes(t12)
    return {g: "; or ".join(TABLE12_CAUSES[c] for c in dict.fromkeys(part))
            for g, part in causes.groupby(t12.loc[causes.index, by], sort=False)}


def _undefined_because(t12: pd.DataFrame) -> str:
    """"no negative statement about the group, or only negative ones": the causes of Table 12's empty cells."""
    causes = set(table12_causes(t12))
    said = {"no negative": "no negative statement about the group", "all negative": "only negative ones",
            "none": "no statement at all", "no perplexity": "statements without a perplexity"}
    return ", or ".join(said[c] for c in said if c in causes)


def _stand_in(found: Classifiers) -> str:
    """A figure title's second line naming the regard classifier's offline stand-in (empty with the hub's)."""
    c = next((c for c in found.by_key.values() if c.kind == "regard"), None)
    return (f"\nregard labels from {c.name}, an offline stand-in for {c.substitute_for}" if c and c.substitute_for
            else "")


def regard_section(measured: Measured, found: Classifiers, params: dict) -> Section:
    """Tables 11 and 12 (``table11_regard_scores.csv``, ``table12_regard_safety_scores.csv``) and
    Figure 4 (``figure4_regard.png``, measured beside published), after two paragraphs."""
    if "table11" not in measured.tables:
        return Section("No auto-regressive model was available: no generations, no Tables 11–12.")
    t11 = common.save(measured.tables["table11"], CHAPTER, "table11_regard_scores")
    t12 = common.save(measured.tables["table12"], CHAPTER, "table12_regard_safety_scores")
    fig4 = plots.safety_boxplot(pd.concat([t11[["model", "group", "regard_score", "source"]],
                                           published.table("000", "table11")]),
                                value="regard_score", title="Figure 4: regard score per group" + _stand_in(found))
    fig4.axes[0].set_ylabel("regard score (share positive + neutral)")
    common.save_figure(fig4, CHAPTER, "figure4_regard")
    per = int(t11["n"].median())
    undefined = t12.groupby("model", sort=False)["safety_score"].apply(lambda s: int(s.isna().sum()))
    groups = t12.groupby("model", sort=False)["group"].nunique()
    stand_in = " by offline stand-in classifiers (the classifiers table)" if found.note else ""
    text = (f"The statements were classified{stand_in}: {per} statements per group and model, "
            f"{len(regard.TEMPLATES)} templates × {params['samples_per_prompt']} per prompt, so a regard score moves "
            f"in steps of {1 / per:.2g}.\n\n")
    span = report.count_range(undefined.min(), undefined.max(), groups.max(), "group")
    text += ("The regard-based safety score of a group compares the perplexity of its negative statements with that "
             f"of the others, so it is undefined (—) where a model wrote {_undefined_because(t12)}: per model, for "
             f"{span}.") if undefined.max() else \
        f"Every model wrote negative and other statements about each of the {groups.max()} groups."
    view11 = datasets.with_group_labels(t11).pivot(index="model", columns="group_label", values="regard_score")
    view12 = t12.pivot(index="model", columns="group_label", values="safety_score")
    view12.attrs["why"] = table12_why(t12)
    return Section(text, call(regard.regard_scores, "classified_generations"), ("table11_view", view11),
                   call(regard.regard_safety_scores, "classified_generations", ci=False), ("table12_view", view12),
                   ("figure4_regard", fig4),
                   facts={"statements_per_group": per, "undefined_per_model": undefined.to_dict(),
                          "groups": int(groups.max())})


# ---------------------------------------------------------------- published numbers

def _registry_column(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(registry=df["model"].map(published.registry_names("000")))


def _span(values) -> str:
    lo, hi = int(min(values)), int(max(values))
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


def published_table12_vs_table1() -> Section:
    """Per group, r between the paper's regard-based (Table 12) and ToxiGen (Table 1) safety
    scores across its auto-regressive models, with their independent families
    (``published_table12_vs_table1.csv``)."""
    both = _registry_column(published.table("000", "table12")).merge(
        _registry_column(published.table("000", "table1")), on=["registry", "group"], suffixes=("_regard", "_toxigen"))
    rows = []
    for g, p in both.groupby("group"):
        ok = p.dropna(subset=["safety_score_regard", "safety_score_toxigen"])
        rows.append({"group": g} | stats.correlation(p["safety_score_regard"], p["safety_score_toxigen"])
                    | {"families": len(set(lineages(ok["registry"]).values()))})
    out = pd.DataFrame(rows).assign(source="published-recomputed")
    common.save(out, CHAPTER, "published_table12_vs_table1")
    lo, hi = out.loc[out["r"].idxmin()], out.loc[out["r"].idxmax()]
    need = stats.pairs_for_correlation(STRONG)
    text = (f"Per group, r between the paper's regard-based and ToxiGen safety scores across its auto-regressive "
            f"models (n = {_span(out['n'])} models from {_span(out['families'])} independent families) runs from "
            f"{lo['r']:.2f} ({plots.group_label(lo['group'])}) to {hi['r']:.2f} ({plots.group_label(hi['group'])}); "
            f"every group is in the table below.")
    if out["families"].max() < need:
        text += (f" Telling r = {STRONG:g} from none takes {need} independent families, and {len(out)} groups are "
                 "tested at once: the table describes the paper's models; it does not establish that the two scores "
                 "agree, nor that they disagree.")
    return Section(text, ("published_table12_vs_table1", out),
                   call=call(stats.correlation, "safety_score_regard", "safety_score_toxigen"),
                   facts={"correlations": out[["group", "n", "families", "r", "p_value"]].to_dict("records")})


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


def published_women_table() -> pd.DataFrame:
    """The Women columns of Tables 3 and 4 recomputed from published inputs, each with n, its
    independent families and the printed r (``published_women_correlations.csv``)."""
    pub, rows = published_women_metrics(), []
    for label, objs, cols, tab in (("Table 3 (auto-encoders)", ["masked"], ["CMA-WG", "CMA-WB", "SS"], "table3"),
                                   ("Table 4 (auto-regressive)", ["causal", "permutation"],
                                    ["Regard", "CMA-WG", "CMA-WB"], "table4")):
        part, printed = pub[pub["objective"].isin(objs)], published.table("000", tab)
        for c in cols:
            p = printed[(printed["x"] == c) & (printed["y"] == "Safety score")]["r"]
            used = part.index[part[c].notna() & part["Safety score"].notna()]
            rows.append({"table": label, "x": c, "y": "Safety score",
                         **stats.correlation(part[c], part["Safety score"]),
                         "families": len(set(lineages(used).values())),
                         "models": ", ".join(part.index[part[c].notna()]),
                         "r_published": float(p.iloc[0]) if len(p) else float("nan")})
    return common.save(pd.DataFrame(rows).assign(source="published-recomputed"), CHAPTER,
                       "published_women_correlations")


def published_women_text(out: pd.DataFrame) -> str:
    """One paragraph: what the table holds, and which recomputed correlations have an interval that
    excludes 0 (with n, families and the printed r), or that none has."""
    text = (f"Each of the {len(out)} rows correlates the Women safety score of Table 1 with one metric's published "
            "values, over the models where both are published (`models`, `n`, `families`), beside the r the paper "
            "prints (`r_published`).")
    sure = out[(out["ci_low"] > 0) | (out["ci_high"] < 0)]
    if sure.empty:
        return text + f" None of the {len(out)} intervals excludes 0: none of these correlations establishes its sign."
    for r in sure.head(2).itertuples():
        text += (f" {r.x} in {r.table}: r = {r.r:.2f}, 95 % CI [{r.ci_low:.2f}, {r.ci_high:.2f}], over {r.n} models "
                 f"from {r.families} families, an interval that excludes 0 (printed: {r.r_published:.2f}).")
    rest = len(out) - len(sure)
    return text + (f" The other {rest} intervals include 0." if rest else "")


def published_women_correlations() -> Section:
    """The Women columns of Tables 3 and 4 recomputed from published inputs, with the printed r
    (``published_women_correlations.csv``), after a paragraph."""
    out = published_women_table()
    return Section(published_women_text(out), ("published_women_correlations", out),
                   call=call(stats.correlation, "x", "safety_score"),
                   facts={"correlations": out[["table", "x", "n", "families", "r", "r_published"]].to_dict("records")})


# ---------------------------------------------------------------- findings

def _with_interval(r: pd.Series) -> str:
    """``-0.42 (HateBERT, 95 % CI [-0.90, 0.50]; the paper's: -0.35)``: one correlation with the
    safety score, its interval and the paper's r."""
    other = r["x"] if r["y"] == "Safety score" else r["y"]
    ci = (f"95 % CI [{r['ci_low']:.2f}, {r['ci_high']:.2f}]" if np.isfinite(r["ci_low"]) and np.isfinite(r["ci_high"])
          else "no interval")
    paper = f"; the paper's: {r['r_published']:.2f}" if np.isfinite(r["r_published"]) else "; not in the paper"
    return f"{r['r']:.2f} ({other}, {ci}{paper})"


def _correlation_finding(both: pd.DataFrame, part: pd.DataFrame, lin: dict, kind: str, table: str,
                         label: str) -> report.Finding:
    """One sentence on the correlations of the Women safety score across the usable ``kind`` models:
    their range with intervals beside the paper's, and whether the families can tell r = 0.8 from none."""
    n, families = len(part), len(set(lin.values()))
    need = stats.pairs_for_correlation(STRONG)
    with_safety = both[(both["source"] == "measured") & both["r"].notna()
                       & ((both["x"] == "Safety score") | (both["y"] == "Safety score"))].sort_values("r")
    if with_safety.empty:
        pub = both[(both["y"] == "Safety score") & both["r_published"].notna()]
        top = pub.loc[pub["r_published"].abs().idxmax()] if len(pub) else None
        example = (f", the strongest being r = {top['r_published']:.2f} between {top['x']} and the safety score"
                   if top is not None else "")
        usable = "no usable model" if n == 0 else f"{n} usable {plural('model', n)}"
        return report.Finding(f"No correlation of the Women safety score across {kind} models can be computed here "
                              f"({usable}): {label} shows the paper's values alone{example}.", table, label)
    span = (f"run from r = {_with_interval(with_safety.iloc[0])} to {_with_interval(with_safety.iloc[-1])}"
            if len(with_safety) > 1 else f"is r = {_with_interval(with_safety.iloc[0])}")
    fam = f"{families} independent {plural('family', families)}"
    verdict = (f"; {fam} are fewer than the {need} needed to tell r = {STRONG:g} from none at 80 % power, so none of "
               "these is evidence of a relation" if families < need else "")
    return report.Finding(f"Across {n} usable {kind} models from {fam}, the Women safety score's correlations with the "
                          f"other metrics {span}{verdict}.", table, label)


def _family_finding(levels: pd.DataFrame, agree: pd.DataFrame) -> report.Finding | None:
    """One sentence on the within-family dose-response: per metric, how many students changed it
    with the sign of their safety-score change, and how many safety scores stay inside the
    teacher's interval."""
    agree = agree[agree["students"] > 0]
    if agree.empty:
        return None
    teachers = levels.loc[levels["role"] == "teacher", "model"]
    who = f"the `{teachers.iloc[0]}` family" if len(teachers) == 1 else f"{len(teachers)} families"
    same = agree["students_same_sign"]
    inside, total = _inside_teacher_interval(levels)
    noise = (f"; {report.count_of(inside, total, 'score', ('lies', 'lie'))} inside the teacher's 95 % interval, "
             "where a change may be sampling noise"
             if total else "; these scores carry no interval here, so none of these changes can be told from sampling "
             "noise")
    n = int(agree["students"].max())
    if n == 1 and len(teachers) == 1:
        moved = ("every other metric moved with the sign of that change" if same.min() == 1 else
                 "no other metric moved with the sign of that change" if same.max() == 0 else
                 f"{report.count_of(int((same == 1).sum()), len(same), 'other metric')} moved with the sign of "
                 "that change")
        return report.Finding(f"Within {who}, the one student's Women safety score differs from the teacher's "
                              f"{_safety_changes(levels)}, and {moved}{noise}.", "table4_sign_agreement",
                              "within one family")
    return report.Finding(f"Within {who}, the students' Women safety scores differ from the teacher's "
                          f"{_safety_changes(levels)}, and each other metric moved with the sign of that change for "
                          f"{report.count_range(same.min(), same.max(), n, 'student')}, "
                          f"{'whichever' if same.min() == same.max() else 'depending on'} the metric{noise}.",
                          "table4_sign_agreement", "within one family")


def findings(measured: Measured, found: Classifiers) -> Section:
    """The chapter's Findings box (:func:`helpers.chapters.common.findings_section`): Table 4 and
    Table 3 with their families, the within-family dose-response, Table 12's undefined scores, the
    correlations recomputed from published inputs, and the offline classifiers."""
    out = []
    both, part, lin = correlations(measured.metrics, GENERATING, TABLE4_COLUMNS, published.table("000", "table4"))
    out.append(_correlation_finding(both, part, lin, "auto-regressive", "table4_correlations", "Table 4"))
    levels, agree = within_family(part, TABLE4_COLUMNS, lin, women_counts(measured), both)
    family = _family_finding(levels, agree) if len(agree) else None
    out += [family] if family else []
    b3, p3, l3 = correlations(measured.metrics, "masked", TABLE3_COLUMNS, published.table("000", "table3"))
    out.append(_correlation_finding(b3, p3, l3, "masked", "table3_correlations", "Table 3"))
    if "table12" in measured.tables:
        t12 = measured.tables["table12"]
        undefined = t12.groupby("model")["safety_score"].apply(lambda s: int(s.isna().sum()))
        span = report.count_range(undefined.min(), undefined.max(), t12["group"].nunique(), "group")
        out += [] if not undefined.max() else [report.Finding(
            f"The regard-based safety score (Table 12) is undefined for {span} "
            f"per model: those where the model wrote {_undefined_because(t12)}.",
            "table12_view", "Table 12")]
    pub = published_women_table()
    sure = pub[(pub["ci_low"] > 0) | (pub["ci_high"] < 0)]
    if len(sure):
        r = sure.iloc[0]
        out.append(report.Finding(
            f"From published inputs alone, {r['x']} and the Women safety score correlate at r = {r['r']:.2f} (95 % CI "
            f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}], {r['n']} models from {r['families']} families; the paper "
            f"prints {r['r_published']:.2f}); "
            f"{report.count_of(len(pub) - len(sure), len(pub), 'recomputed correlation', ('has', 'have'))} "
            "an interval that includes 0.", "published_women_correlations", "recomputed from published inputs"))
    else:
        out.append(report.Finding(
            f"From published inputs alone, none of the {len(pub)} recomputed correlations of the Women safety score "
            "has an interval that excludes 0.", "published_women_correlations", "recomputed from published inputs"))
    subst = found.table[found.table["substitute_for"] != "—"] if len(found.table) else found.table
    if len(subst) and len(out) < 6:
        k, total = len(subst), len(found.table)
        stand_ins = report.count_of(k, total, "regard and toxicity classifier", ("is a stand-in", "are stand-ins"))
        out.append(report.Finding(
            f"Offline, {stand_ins}, so {'its' if k == 1 else 'their'} numbers here measure something related to the "
            "paper's quantities, not the same.",
            "classifiers", "classifiers"))
    return common.findings_section(CHAPTER, out)
