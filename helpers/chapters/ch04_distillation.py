"""Chapter 04: the safety score of distilled models.

Seed 000 (Hosseini, Palangi & Awadallah 2023) §4.7 and appendix A.5: the safety score of
students that differ only in shape (layers, hidden size, heads = hidden / 64) — Tables 6
(Distilled-BERT), 7 (Distilled-GPT-2) and 8 (Pearson r with the shape), held-out perplexity
(analogues of Tables 14 and 15) — for the book's own zoo (:mod:`helpers.training.zoo`) or,
with the hub, Google's miniature BERTs (Turc et al. 2019).

Each section function writes its tables under ``results/04_distillation/`` and returns what the
notebook shows. Safety scores go through :func:`helpers.runner.safety_results` (per-sentence
scores cached and shared with every chapter; the per-group bootstrap intervals are recomputed).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from helpers import models as registry, plots, published, runner, stats
from helpers.chapters import common
from helpers.published import recompute
from helpers.training import zoo

CHAPTER = "04_distillation"
PARAMETERS = ("models", "zoo_profile", "grid", "corpus", "steps", "causal_teacher", "masked_teacher", "temperature",
              "sample_per_group", "device", "pll", "seed", "n_resamples")
DEFAULTS = dict(models='zoo', zoo_profile=None, grid=None, corpus=None, steps=None, causal_teacher=None,
                masked_teacher=None, temperature=None, sample_per_group=25, device='cpu', pll='original',
                seed=0, n_resamples=200)
MANIFEST_COLUMNS = ["name", "family", "objective", "layers", "heads", "hidden", "params", "teacher", "corpus",
                    "steps_pretrain", "steps_distill", "final_loss_pretrain", "final_loss_distill",
                    "heldout_perplexity", "training_seconds"]
SHAPE = ["heads", "layers", "hidden"]
AVERAGE_SHOWN = ["model", "family", "layers", "heads", "hidden", "params", "teacher", "safety_score"]
MASKED_FAMILIES = ["zoo-distilled-bert", "Distilled-BERT"]
CAUSAL_FAMILY = "zoo-distilled-gpt2"


def start(namespace) -> tuple[dict, pd.DataFrame]:
    """The chapter's parameters from the notebook's globals (:func:`helpers.chapters.common.start`);
    ``models`` is resolved later by :func:`model_names` (which also takes ``"zoo"``)."""
    return common.start(CHAPTER, namespace, PARAMETERS, DEFAULTS, resolve_models=False)


# ---------------------------------------------------------------- the models

@dataclass
class Models:
    """The models to score, their zoo manifests (empty off the zoo), the off-grid teachers
    scored beside their students (name -> family) and each model's shape (:func:`shapes`)."""

    names: list
    manifest: pd.DataFrame
    teacher_of: dict = field(default_factory=dict)
    shapes: pd.DataFrame = field(default_factory=pd.DataFrame)


def zoo_overrides(params: dict) -> dict:
    """Keyword overrides of :func:`helpers.training.zoo.ensure_default_zoo` from the parameters."""
    out = {k: params[k] for k in ("corpus", "causal_teacher", "masked_teacher", "temperature") if params[k] is not None}
    return out | {k: tuple(v) for k, v in (params["grid"] or {}).items()} | dict(params["steps"] or {})


def model_names(params: dict) -> tuple[list, pd.DataFrame, dict]:
    """``(names, manifests, teacher_of)`` for ``models``: "zoo" (trained if missing, the causal
    teacher added off the grid), "paper" (the 24 miniature BERTs and their teacher
    BERT-large-uncased) or anything :func:`helpers.runner.resolve_models` takes (one name is one
    model, never its characters)."""
    spec = params["models"]
    if isinstance(spec, str) and spec == "zoo":
        profile = params["zoo_profile"] or zoo.current().get("profile") or "default"
        names = zoo.ensure_default_zoo(profile, progress=False, **zoo_overrides(params))
        manifest, cfg = zoo.manifests(names), zoo.current().get("config", {})
        if "causal" in cfg.get("families", []):
            return names + [cfg["causal_teacher"]], manifest, {cfg["causal_teacher"]: CAUSAL_FAMILY}
        return names, manifest, {}
    if isinstance(spec, str) and spec == "paper":
        return registry.miniature_berts() + ["bert-large-uncased"], pd.DataFrame(), {}
    names = runner.resolve_models(spec)
    return names, zoo.manifests([m for m in names if zoo.manifest(m)]), {}


def shape_of(name: str, teacher_of: dict) -> dict:
    """family, layers, heads, hidden, params, teacher flag and held-out perplexity of a model
    (its zoo manifest, else the model registry)."""
    m = zoo.manifest(name)
    if m:
        fam = {"zoo-teacher-bert": "zoo-distilled-bert"}.get(m["family"], m["family"])
        return dict(model=name, family=fam, layers=m["layers"], heads=m["heads"], hidden=m["hidden"],
                    params=m["params"], teacher=bool(m.get("is_teacher", False)),
                    heldout_perplexity=m["heldout_perplexity"])
    s = registry.spec(name)
    fam = teacher_of.get(name) or ("Distilled-BERT" if s.family == "Miniature-BERT" or name == "bert-large-uncased"
                                   else s.family)
    return dict(model=name, family=fam, layers=s.layers, heads=s.heads, hidden=s.hidden, params=s.params,
                teacher=name in teacher_of or name == "bert-large-uncased", heldout_perplexity=np.nan)


def the_models(params: dict) -> Models:
    names, manifest, teacher_of = model_names(params)
    return Models(names, manifest, teacher_of, pd.DataFrame([shape_of(n, teacher_of) for n in names]))


def zoo_table(found: Models) -> tuple[pd.DataFrame, str]:
    """The zoo's manifests (``zoo_manifest.csv``) and a sentence on its training time."""
    if not len(found.manifest):
        return pd.DataFrame(), ""
    table = common.save(found.manifest[MANIFEST_COLUMNS], CHAPTER, "zoo_manifest")
    total = found.manifest["training_seconds"].sum()
    return table, (f"The zoo holds **{len(found.manifest)} models**; their training loops took {total / 60:.1f} "
                   "minutes of wall time in all, as measured during training (each manifest records the machine "
                   "and its load average).")


# ---------------------------------------------------------------- safety scores

@dataclass
class Scores:
    """Safety scores per group and per model (average over groups, with the model's shape),
    the models unavailable here and a sentence naming them."""

    per_group: pd.DataFrame
    average: pd.DataFrame
    unavailable: dict
    text: str = ""

    @property
    def shown(self) -> pd.DataFrame:
        """The columns of ``average`` the chapter shows."""
        return self.average[[c for c in AVERAGE_SHOWN if c in self.average.columns]]


def safety_per_group(handle, params: dict) -> pd.DataFrame:
    """Safety score per group with bootstrap intervals (seed 000 eq. 3); ``pll`` reaches the
    masked scorer."""
    return runner.safety_results(handle, dataset="toxigen", sample_per_group=params["sample_per_group"],
                                 seed=params["seed"], pll=params["pll"], n_resamples=params["n_resamples"],
                                 progress=False)[1]


def safety_scores(params: dict, found: Models) -> Scores:
    """Every model's safety scores (``safety_per_group.csv``) and average over the groups with
    its shape (``average_safety_score.csv``, the quantity of Tables 6-8)."""
    results, missing = runner.for_each_model(found.names, lambda h: safety_per_group(h, params),
                                             device=params["device"])
    text = ""
    if missing:
        text = (f"**{len(missing)} model(s) unavailable here** (listed, not dropped silently): "
                + "; ".join(f"`{k}`" for k in list(missing)[:5]) + (" ..." if len(missing) > 5 else "")
                + f". First reason: {next(iter(missing.values()))}")
    if not results:
        return Scores(pd.DataFrame(), pd.DataFrame(columns=["model", "family", "layers", "heads", "hidden", "teacher",
                                                            "safety_score"]), missing, text)
    per_group = common.save(pd.concat(results.values(), ignore_index=True), CHAPTER, "safety_per_group")
    avg = (per_group.groupby("model", sort=False)["safety_score"].mean().rename("safety_score").reset_index()
           .merge(found.shapes, on="model"))
    avg["source"] = "measured"
    return Scores(per_group, common.save(avg, CHAPTER, "average_safety_score"), missing, text)


def families(scores: Scores) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(masked family with its teacher, causal family with its off-grid teacher)."""
    avg = scores.average
    return avg[avg["family"].isin(MASKED_FAMILIES)], avg[avg["family"] == CAUSAL_FAMILY]


def heatmaps(scores: Scores, params: dict) -> list:
    """Measured beside published heat maps of Tables 6 and 7 (``table6_heatmaps.png``,
    ``table7_heatmaps.png``); writes both published tables (``tables6_7_published.csv``)."""
    t6, t7 = published.table("000", "table6"), published.table("000", "table7")
    masked, causal = families(scores)
    students = causal[~causal["teacher"].astype(bool)]        # the teacher is off the grid: in the text
    fig6 = plots.architecture_heatmap_pair(masked, t6, "Measured: masked students (teacher outlined)",
                                           "Published Table 6: Distilled-BERT (teacher BERT-large, L=24 H=1024)")
    fig7 = plots.architecture_heatmap_pair(
        students, t7, f"Measured: causal students (teacher {params['causal_teacher'] or 'smollm2-135m'}, not on the grid)",
        "Published Table 7: Distilled-GPT-2 (teacher GPT-2, L=12 H=768)")
    common.save(pd.concat([t6.assign(table="table6"), t7.assign(table="table7")]), CHAPTER, "tables6_7_published")
    return [common.save_figure(fig6, CHAPTER, "table6_heatmaps"), common.save_figure(fig7, CHAPTER, "table7_heatmaps")]


def describe(fam: pd.DataFrame, label: str) -> str:
    """Sentences about one family's measured grid (range, width and depth means, relation to
    held-out perplexity, the teacher), generated from the numbers."""
    st = fam[~fam["teacher"].astype(bool)]
    if len(st) < 2:
        return f"{label}: fewer than two students were scored, nothing to compare."
    lo, hi = st.loc[st["safety_score"].idxmin()], st.loc[st["safety_score"].idxmax()]
    by_h, by_l = st.groupby("hidden")["safety_score"].mean(), st.groupby("layers")["safety_score"].mean()
    txt = (f"{label}: the average safety score of the {len(st)} students ranges from {lo.safety_score:.3f} "
           f"(L={lo.layers}, H={lo.hidden}) to {hi.safety_score:.3f} (L={hi.layers}, H={hi.hidden}), a spread "
           f"of {hi.safety_score - lo.safety_score:.3f}. Averaged over depth, the widest students score "
           f"{by_h.iloc[-1]:.3f} against {by_h.iloc[0]:.3f} for the narrowest; averaged over width, the deepest "
           f"score {by_l.iloc[-1]:.3f} against {by_l.iloc[0]:.3f} for the shallowest.")
    if hi.safety_score - lo.safety_score < 0.005:
        ppl = st["heldout_perplexity"].agg(["min", "max"]) if "heldout_perplexity" in st else None
        txt += (" The students are practically indistinguishable: at this training budget they barely improve on a "
                "unigram model" + (f" (held-out perplexity {ppl['min']:.0f}–{ppl['max']:.0f})"
                                   if ppl is not None and np.isfinite(ppl["min"]) else "")
                + ", so their scores reflect the toxicity scaling of the metric more than anything the model learned.")
    if "heldout_perplexity" in st and st["heldout_perplexity"].notna().sum() >= 3:
        r = stats.correlation(np.log(st["heldout_perplexity"]), st["safety_score"])
        txt += (f" Across these students the safety score and the log of the held-out perplexity correlate with "
                f"r = {r['r']:+.2f} (n = {r['n']}, p = {r['p_value']:.2g}): "
                + ("the better language models score higher." if r["r"] < 0 and r["p_value"] < 0.05 else
                   "the better language models score lower." if r["r"] > 0 and r["p_value"] < 0.05 else
                   "no clear relation at this sample size."))
    t = fam[fam["teacher"].astype(bool)]
    if len(t):
        better = (st["safety_score"] > t["safety_score"].iloc[0]).sum()
        txt += f" The teacher scores {t['safety_score'].iloc[0]:.3f}; {better} of {len(st)} students score higher."
    return txt


def describe_published(df: pd.DataFrame, label: str) -> str:
    """The same facts for a published table (6 or 7)."""
    st, t = df[~df["teacher"]], df[df["teacher"]]["safety_score"].iloc[0]
    by_h = st.groupby("hidden")["safety_score"].mean()
    return (f"{label} (published): students range from {st.safety_score.min():.3f} to {st.safety_score.max():.3f}; "
            f"H={by_h.index[0]} averages {by_h.iloc[0]:.3f} and H={by_h.index[-1]} {by_h.iloc[-1]:.3f}; "
            f"the teacher scores {t:.3f} and {(st.safety_score > t).sum()} of {len(st)} students score higher.")


def grid_summary(scores: Scores) -> str:
    """Measured and published grids described side by side (Markdown)."""
    masked, causal = families(scores)
    return "\n\n".join([describe(masked, "Masked students (measured)"),
                        describe_published(published.table("000", "table6"), "Distilled-BERT"),
                        describe(causal, "Causal students (measured)"),
                        describe_published(published.table("000", "table7"), "Distilled-GPT-2")])


# ---------------------------------------------------------------- held-out perplexity, Tables 14 and 15

def perplexity_section(found: Models) -> tuple[str, pd.DataFrame]:
    """Held-out perplexity of the students (``heldout_perplexity.csv``, ``perplexity_<family>.png``),
    the published Tables 14 and 15 (CSV; Table 15 as a heat map) and what they say:
    (Markdown, Table 14 wide)."""
    ppl, text = found.shapes.dropna(subset=["heldout_perplexity"]), []
    if len(ppl):
        common.save(ppl.assign(source="measured"), CHAPTER, "heldout_perplexity")
        for fam, title in ((CAUSAL_FAMILY, "Measured: causal students, held-out perplexity"),
                           ("zoo-distilled-bert", "Measured: masked students (+ teacher), masked-token perplexity")):
            part = ppl[ppl["family"] == fam]
            if len(part):
                common.save_figure(plots.architecture_heatmap(part, value="heldout_perplexity", title=title,
                                                              fmt="{:.0f}", cmap="viridis_r", label="perplexity"),
                                   CHAPTER, f"perplexity_{fam}")
        causal = zoo.current().get("teachers", {}).get("causal")
        students = ppl[ppl["family"] == CAUSAL_FAMILY]["heldout_perplexity"]
        if causal:
            text.append(f"The causal teacher {causal['name']} has held-out perplexity {causal['heldout_perplexity']:.1f} "
                        f"on the same blocks; the causal students range from {students.min():.0f} to "
                        f"{students.max():.0f}.")
    t14 = common.save(published.table("000", "table14"), CHAPTER, "table14_published")
    t15 = common.save(published.table("000", "table15"), CHAPTER, "table15_published")
    plots.architecture_heatmap(t15.assign(teacher=False), value="perplexity", fmt="{:.1f}", cmap="viridis_r",
                               title="Published Table 15: few-shot perplexity, mean of 4 benchmarks", label="perplexity")
    mean14 = t14.groupby(["layers", "hidden"])["perplexity"].mean()
    c = t15.set_index(["layers", "hidden"])["perplexity"]
    diff = (c - mean14.reindex(c.index)).abs()
    text.append(f"Published Table 15 prints only the rows H=128, 256 and 512. Its cells are not the plain means "
                f"of Table 14's four benchmarks: they differ by {diff.min():.2f} to {diff.max():.2f} "
                f"(e.g. L=2, H=128: {c.loc[(2, 128)]:.2f} vs {mean14.loc[(2, 128)]:.2f}); the paper does not say how "
                f"it averaged.")
    wide = t14.pivot_table(index=["layers", "hidden", "heads", "params_million"], columns="benchmark",
                           values="perplexity").reset_index()
    return "\n\n".join(text), wide


# ---------------------------------------------------------------- Table 8

def table8(scores: Scores) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """Pearson r of the average safety score with heads, layers and hidden size over each
    family's students (``table8_measured.csv``), the published Table 8, and what n and p allow."""
    rows = []
    for fam, part in scores.average.groupby("family"):
        t = stats.correlation_table(part[~part["teacher"].astype(bool)], SHAPE, "safety_score")
        t.insert(0, "family", fam)
        rows.append(t)
    measured = pd.concat(rows, ignore_index=True).assign(source="measured") if rows else pd.DataFrame()
    common.save(measured, CHAPTER, "table8_measured")
    notes = []
    for fam, part in measured.groupby("family") if len(measured) else []:
        n, const = int(part["n"].max()), part[part["r"].isna()]["x"].tolist()
        sig = part[part["p_value"] < 0.05]["x"].tolist()
        notes.append(f"{fam}: n = {n} students" + (f"; r is undefined for {', '.join(const)} (constant over the "
                     "grid: heads = max(2, H/64) is 2 for both H=64 and H=128)" if const else "")
                     + f"; {'no correlation is' if not sig else ', '.join(sig) + ' is'} significant at p < 0.05."
                     + (" With so few models the intervals are wide; the signs should not be over-read." if n < 10
                        else ""))
    return measured, published.table("000", "table8"), " ".join(notes) if notes else "No measured family to correlate."


def table8_recomputed() -> tuple[pd.DataFrame, str]:
    """Table 8 recomputed from the published Tables 6 and 7, students only and all cells, beside
    the printed r (``table8_published_recomputed.csv``), and whether it is reproduced."""
    t8 = published.table("000", "table8")
    cmp = pd.concat([recompute.recompute_table8("students"), recompute.recompute_table8("all")],
                    ignore_index=True).merge(
        t8[["family", "x", "r"]].rename(columns={"r": "r_published"}), on=["family", "x"])
    cmp["difference"] = cmp["r"] - cmp["r_published"]
    common.save(cmp, CHAPTER, "table8_published_recomputed")
    students = cmp[cmp["selection"] == "students"]
    pb, pg = students[students["family"] == "Distilled-BERT"], students[students["family"] == "Distilled-GPT2"]
    ok_b, ok_g = (bool((p["r"].round(2) == p["r_published"]).all()) for p in (pb, pg))
    heads_eq = bool(np.allclose(cmp[cmp.x == "heads"]["r"].to_numpy(), cmp[cmp.x == "hidden"]["r"].to_numpy()))

    def fmt(part):
        return ", ".join(f"{x} {r:+.2f}" for x, r in zip(part.x, part.r))
    text = (f"Distilled-BERT, 24 students: recomputed {fmt(pb)} — "
            + ("**equal to the published values at two decimals**." if ok_b else "different from the published values.")
            + f" Distilled-GPT-2, 23 students: recomputed {fmt(pg)}, published "
            + ", ".join(f"{r:+.2f}" for r in t8[t8.family == "Distilled-GPT2"].r)
            + (" — equal." if ok_g else " — **not reproduced**: the paper correlates only the students 'with "
               "reasonable language modeling performance' without listing them; no selection of whole rows or "
               "columns of Table 7 gives −0.38 and 0.35, so the difference comes from that unstated selection, "
               "not from rounding.")
            + (" In every recomputation r(heads) equals r(hidden) exactly, because heads = H/64 is a linear function "
               "of the hidden size: the paper's identical #Heads and Hidden-dim columns carry one piece of "
               "information, not two." if heads_eq else ""))
    cols = ["family", "selection", "x", "n", "r", "p_value", "ci_low", "ci_high", "r_published", "difference"]
    return cmp[cols], text
