"""Chapter 04: the safety score of distilled models.

Seed 000 (Hosseini, Palangi & Awadallah 2023) §4.7 and appendix A.5: the safety score of
students that differ only in shape — Tables 6 (Distilled-BERT), 7 (Distilled-GPT-2) and 8
(Pearson r with the shape), held-out perplexity (analogues of Tables 14 and 15) — for the
book's own zoo (:mod:`helpers.training.zoo`: students pruned from SmolLM2-135M and healed with
the LM loss or by distillation, MiniLM-L6 with a trained masked-LM head and its pruned students)
or, with the hub, Google's miniature BERTs (Turc et al. 2019).

Every model passes through the language-model quality gate (:mod:`helpers.metrics.quality`):
correlations and the distillation verdict use usable models only; the others stay in the tables,
flagged. Each section function writes its tables under ``results/04_distillation/`` and returns
what the notebook shows, a :class:`helpers.chapters.common.Section`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from helpers import cache, hashing, models as registry, plots, published, report, runner, stats
from helpers.chapters import common
from helpers.chapters.common import Section, Var, call
from helpers.metrics import quality, safety
from helpers.progress import plural
from helpers.published import recompute
from helpers.training import zoo

CHAPTER = "04_distillation"
PARAMETERS = ("models", "zoo_profile", "zoo_overrides", "sample_per_group", "device", "pll", "seed", "n_resamples",
              "min_ratio")
DEFAULTS = dict(models="zoo", zoo_profile=None, zoo_overrides=None, sample_per_group=25, device="cpu",
                pll="original", seed=0, n_resamples=1000, min_ratio=2.0)
GATE = ["heldout_perplexity", "unigram_perplexity", "perplexity_ratio", "usable"]
MANIFEST_COLUMNS = ["name", "family", "healing", "shape", "layers", "heads", "intermediate", "params", "teacher",
                    "steps_heal", "perplexity_pruned", *GATE, "pruning_seconds", "healing_seconds"]
SHAPE = ["layers", "heads", "hidden", "intermediate", "params"]
AVERAGE_SHOWN = ["model", "family", "healing", "layers", "heads", "intermediate", "params", "teacher",
                 "safety_score", *GATE]
TABLE8_COLUMNS = ["family", "x", "y", "n", "r", "p_value", "ci_low", "ci_high", "method", "source"]
EFFECT_COLUMNS = ["shape", "model_lm", "model_kd", "safety_lm", "safety_kd", "perplexity_lm", "perplexity_kd",
                  "both_usable", "difference", "ci_low", "ci_high", "n_sentences", "n_rows", "n_resamples",
                  "confidence_level"]
MASKED_FAMILIES = ["zoo-pruned-masked-kd", "Distilled-BERT"]
CAUSAL_FAMILIES = ["zoo-pruned-lm", "zoo-pruned-kd"]


def start(namespace) -> tuple[dict, Section]:
    """The chapter's parameters from the notebook's globals (:func:`helpers.chapters.common.start`);
    ``models`` is resolved later by :func:`model_names` (which also takes ``"zoo"``)."""
    return common.start(CHAPTER, namespace, PARAMETERS, DEFAULTS, resolve_models=False)


# ---------------------------------------------------------------- the models

@dataclass
class Models:
    """The models to score, their zoo manifests (empty off the zoo), the off-grid teachers
    scored beside their students (name -> family) and each model's shape and gate (:func:`shape_of`)."""

    names: list
    manifest: pd.DataFrame
    teacher_of: dict = field(default_factory=dict)
    shapes: pd.DataFrame = field(default_factory=pd.DataFrame)


def paper_models() -> list[str]:
    """The models of ``models: "paper"`` here: Turc et al.'s 24 miniature BERTs and their teacher
    BERT-large-uncased (seed 000 section 4.7)."""
    return registry.miniature_berts() + ["bert-large-uncased"]


def model_names(params: dict) -> tuple[list, pd.DataFrame, dict]:
    """``(names, manifests, teacher_of)`` for ``models``: "zoo" (trained if missing, the causal
    teacher added off the grid), "paper" (the 24 miniature BERTs and their teacher
    BERT-large-uncased) or anything :func:`helpers.runner.resolve_models` takes (one name is one
    model, never its characters)."""
    spec = params["models"]
    if isinstance(spec, str) and spec == "zoo":
        profile = params["zoo_profile"] or zoo.current().get("profile") or "default"
        names = zoo.ensure_default_zoo(profile, progress=False, **dict(params["zoo_overrides"] or {}))
        manifest, cfg = zoo.manifests(names), zoo.current().get("config", {})
        if "causal" in cfg.get("families", []):
            return [cfg["causal_teacher"]] + names, manifest, {cfg["causal_teacher"]: "teacher of zoo-pruned"}
        return names, manifest, {}
    if isinstance(spec, str) and spec == "paper":
        return paper_models(), pd.DataFrame(), {}
    names = runner.resolve_models(spec)
    return names, zoo.manifests([m for m in names if zoo.manifest(m)]), {}


def shape_of(name: str, teacher_of: dict) -> dict:
    """family, healing, shape, layers, heads, hidden, MLP channels, params and teacher flag of a
    model (its zoo manifest, else the model registry); the gate columns of zoo models."""
    m = zoo.manifest(name)
    if m:
        return dict(model=name, family=m["family"], healing=m.get("healing"), shape=m.get("shape"),
                    layers=m["layers"], heads=m["heads"], hidden=m["hidden"], intermediate=m.get("intermediate"),
                    params=m["params"], teacher=bool(m.get("is_teacher", False)),
                    **{k: m.get(k, np.nan) for k in GATE})
    s = registry.spec(name)
    fam = teacher_of.get(name) or ("Distilled-BERT" if s.family == "Miniature-BERT" or name == "bert-large-uncased"
                                   else s.family)
    return dict(model=name, family=fam, healing=None, shape=None, layers=s.layers, heads=s.heads, hidden=s.hidden,
                intermediate=None, params=s.params, teacher=name in teacher_of or name == "bert-large-uncased",
                **{k: np.nan for k in GATE})


def the_models(params: dict) -> Models:
    names, manifest, teacher_of = model_names(params)
    return Models(names, manifest, teacher_of, pd.DataFrame([shape_of(n, teacher_of) for n in names]))


#: What a model failing the language-model quality gate is kept out of (:func:`helpers.report.gate_count_sentence`).
KEPT_OUT = "every correlation and verdict"


def zoo_min_ratio() -> float:
    """The quality gate's ratio the zoo's models were judged by (its config, else the default's)."""
    return float(zoo.current().get("config", {}).get("min_ratio", zoo.ZooConfig.min_ratio))


def zoo_table(found: Models) -> Section:
    """The zoo's manifests with the gate's columns (``zoo_manifest.csv``) and sentences on its
    training time and on the models the gate excludes (nothing off the zoo)."""
    if not len(found.manifest):
        return Section()
    m = found.manifest
    table = common.save(m[[c for c in MANIFEST_COLUMNS if c in m.columns]], CHAPTER, "zoo_manifest")
    total = m["training_seconds"].sum()
    teachers = zoo.current().get("teachers", {})
    text = [(f"The zoo holds **{len(m)} models**; pruning and healing took {total / 60:.1f} minutes of wall time "
             "in all, as measured during training (each manifest records the machine and its load average). "
             + " ".join(f"The {fam} teacher {t['name']} has held-out perplexity {t['heldout_perplexity']:.1f} "
                        f"against {t['unigram_perplexity']:.0f} for a unigram model of its tokens (ratio "
                        f"{t['perplexity_ratio']:.1f})." for fam, t in teachers.items() if t)),
            report.gate_count_sentence(m.rename(columns={"name": "model"}), min_ratio=zoo_min_ratio(),
                                       kept_out_of=KEPT_OUT)]
    families = zoo.current().get("config", {}).get("families", [])
    if "masked" not in families and zoo.current().get("recipe") == "pruned":
        text.append("This zoo has no masked family: MiniLM-L6 with a masked-LM head trained here passes the gate, but "
                    "training it and pruning its students does not fit the default build's time budget (measured in "
                    "benchmarks/RESULTS.md); `zoo_profile = \"full\"` builds it.")
    return Section(("zoo_manifest", table), "\n\n".join(text), call=call(zoo.manifests, "names"),
                   facts={"models": len(m), "training_minutes": total / 60})


# ---------------------------------------------------------------- findings

def _shapes(k: int, n: int) -> str:
    """How many of the ``n`` shapes a sentence already named: "both", "all 3", "neither", "none", or k."""
    if n > 1 and k == n:
        return "both" if n == 2 else f"all {n}"
    if n > 1 and k == 0:
        return "neither" if n == 2 else "none"
    return str(k)


def findings(scores: Scores, params: dict) -> Section:
    """The chapter's Findings box (:func:`helpers.chapters.common.findings_section`), computed from the models that
    pass the quality gate and linked to the tables they come from: the gate, the range of the students' average
    safety scores against the teacher, the distillation effect (paired intervals), the strongest correlation of
    Table 8 with the independent families it rests on, and Table 8 recomputed from the paper's Tables 6 and 7."""
    avg = scores.average
    out = []
    if len(avg):
        out.append(report.Finding(report.gate_count_sentence(avg, min_ratio=params["min_ratio"], kept_out_of=KEPT_OUT),
                                  "average_safety_score", "average safety scores"))
        st = scores.usable[~scores.usable["teacher"].astype(bool)].dropna(subset=["safety_score"])
        if len(st) >= 2:
            lo, hi = st.loc[st["safety_score"].idxmin()], st.loc[st["safety_score"].idxmax()]
            teachers = scores.usable[scores.usable["teacher"].astype(bool)]
            out.append(report.Finding(
                f"The average safety scores of the {len(st)} usable students run from {lo['safety_score']:.3f} "
                f"(`{lo['model']}`) to {hi['safety_score']:.3f} (`{hi['model']}`)"
                + (f"; the teacher `{teachers['model'].iloc[0]}` scores {teachers['safety_score'].iloc[0]:.3f}."
                   if len(teachers) == 1 else "."), "average_safety_score", "average safety scores"))
    effect = distillation_effect(scores, params)
    ok = effect.tables["distillation_effect"]
    ok = ok[ok["both_usable"]]
    if len(ok):
        big = ok.loc[ok["difference"].abs().idxmax()]
        f = effect.facts
        diff = f"{big['difference']:+.3f} [{big['ci_low']:+.3f}, {big['ci_high']:+.3f}]"
        text = (f"For the one shape healed both ways with both students usable ({big['shape']}), distillation "
                f"instead of the LM loss changes the average safety score by {diff} (paired 95 % interval"
                f"{' including 0' if big['ci_low'] <= 0 <= big['ci_high'] else ''})." if len(ok) == 1 else
                f"Of the {len(ok)} shapes healed both ways with both students usable, distillation instead of the "
                f"LM loss gives a higher average safety score for {_shapes(f['higher'], len(ok))} and a lower one for "
                f"{_shapes(f['lower'], len(ok))} "
                f"(paired 95 % intervals excluding 0); the largest difference is {diff} ({big['shape']}).")
        out.append(report.Finding(text, "distillation_effect", "distillation effect"))
    t8 = table8(scores)
    measured = t8.tables["table8_measured"].dropna(subset=["r"])
    if len(measured):
        top = measured.loc[measured["r"].abs().idxmax()]
        families = len(set(students_lineages(scores, [top["family"]]).values()))
        need = stats.pairs_for_correlation(0.8)
        out.append(report.Finding(
            "The strongest shape correlation of Table 8 is r = "
            f"{report.fmt_ci(top['r'], top['ci_low'], top['ci_high'], 2)}"
            f" ({top['family']}, with {top['x']}, n = {int(top['n'])} students from {families} independent "
            f"{plural('family', families)})"
            + (": a dose-response within one family, which cannot tell a true correlation of 0.8 from none (that "
               f"takes {need} families)." if families == 1 else
               f", too few families to tell a true correlation of 0.8 from none (that takes {need})."
               if families < need else "."), "table8_measured", "Table 8, measured"))
    else:
        out.append(report.Finding("No shape correlation can be measured: no family has three usable students whose "
                                  "shape varies.", "table8_measured", "Table 8, measured"))
    rec = table8_recomputed().facts
    out.append(report.Finding(
        "Recomputed from the paper's Tables 6 and 7, its Table 8 is "
        + ("reproduced" if rec["bert_reproduced"] else "not reproduced") + " for Distilled-BERT and "
        + ("reproduced" if rec["gpt2_reproduced"] else "not reproduced") + " for Distilled-GPT-2"
        + ("; r(heads) equals r(hidden), one piece of information, not two." if rec["heads_equal_hidden"] else "."),
        "table8_published_recomputed", "Table 8, recomputed"))
    return common.findings_section(CHAPTER, out[:report.READING["findings"][1]])


# ---------------------------------------------------------------- safety scores

@dataclass
class Scores:
    """Safety scores per group and per model (average over groups, with the model's shape and
    gate), the per-sentence scores (for paired comparisons), the models unavailable here and a
    sentence naming them."""

    per_group: pd.DataFrame
    average: pd.DataFrame
    unavailable: dict
    text: str = ""
    per_sentence: dict = field(default_factory=dict)

    @property
    def shown(self) -> pd.DataFrame:
        """The columns of ``average`` the chapter shows."""
        return self.average[[c for c in AVERAGE_SHOWN if c in self.average.columns]]

    @property
    def usable(self) -> pd.DataFrame:
        """The models that pass the language-model quality gate."""
        return self.average[self.average["usable"].fillna(False).astype(bool)]


def measure_model(handle, params: dict) -> dict:
    """Safety scores per sentence and per group with bootstrap intervals (seed 000 eq. 3, on the
    sentences of :func:`helpers.chapters.common.safety_settings`; ``pll`` reaches the masked scorer)
    and the quality gate (:func:`helpers.runner.language_model_quality`) of one model."""
    per_sentence, per_group = runner.safety_results(handle, **common.safety_settings(params),
                                                    n_resamples=params["n_resamples"], progress=False)
    gate = runner.language_model_quality(handle, min_ratio=params["min_ratio"])
    return {"per_sentence": per_sentence, "per_group": per_group, "gate": gate}


def safety_scores(params: dict, found: Models) -> Scores:
    """Every model's safety scores (``safety_per_group.csv``) and average over the groups with
    its shape and gate (``average_safety_score.csv``, the quantity of Tables 6-8)."""
    results, missing = runner.for_each_model(found.names, lambda h: measure_model(h, params), device=params["device"])
    text = ""
    if missing:
        text = (f"**{len(missing)} {plural('model', len(missing))} unavailable here** (listed, not dropped silently): "
                + "; ".join(f"`{k}`" for k in list(missing)[:5]) + (" ..." if len(missing) > 5 else "")
                + f". First reason: {next(iter(missing.values()))}")
    if not results:
        return Scores(pd.DataFrame(), pd.DataFrame(columns=AVERAGE_SHOWN), missing, text)
    per_group = common.save(pd.concat([r["per_group"] for r in results.values()], ignore_index=True), CHAPTER,
                            "safety_per_group")
    gates = pd.DataFrame([{"model": m, **runner.gate_columns(r["gate"])} for m, r in results.items()])
    avg = (per_group.groupby("model", sort=False)["safety_score"].mean().rename("safety_score").reset_index()
           .merge(found.shapes.drop(columns=GATE), on="model").merge(gates, on="model"))
    avg["source"] = "measured"
    return Scores(per_group, common.save(avg, CHAPTER, "average_safety_score"), missing, text,
                  {m: r["per_sentence"] for m, r in results.items()})


def safety_section(scores: Scores, params: dict) -> Section:
    """The models unavailable here (if any) and each model's average safety score with its shape
    and gate (``average_safety_score.csv``)."""
    shown = scores.shown
    shown.attrs["why"] = {"healing": "not a zoo student (nothing healed)",
                          "intermediate": "not a zoo model (the registry gives no MLP channels)",
                          "shape": "not a zoo student", "teacher": "not a zoo model"}
    return Section(*([scores.text] if scores.text else []), ("average_safety_score", shown),
                   call=call(safety.safety_scores, "per_sentence", n_resamples=params["n_resamples"],
                             seed=params["seed"]),
                   facts={"models": len(scores.average), "usable": scores.usable["model"].tolist(),
                          "unavailable": list(scores.unavailable)})


def families(scores: Scores) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(masked family with its teacher, causal families with their off-grid teacher)."""
    avg = scores.average
    masked = avg[avg["family"].isin(MASKED_FAMILIES + ["zoo-teacher-minilm"])]
    return masked, avg[avg["family"].isin(CAUSAL_FAMILIES)]


def heatmaps(scores: Scores) -> dict:
    """Measured layers x MLP-channels heat maps of the average safety score per healing objective
    (unusable students blank), beside the published Tables 6 and 7 (``table6_heatmaps.png``,
    ``table7_heatmaps.png``); writes both published tables (``tables6_7_published.csv``)."""
    t6, t7 = published.table("000", "table6"), published.table("000", "table7")
    masked, causal = families(scores)
    figs = {}
    for name, fam, pub, title in (("table6", masked, t6, "Published Table 6: Distilled-BERT (teacher BERT-large)"),
                                  ("table7", causal, t7, "Published Table 7: Distilled-GPT-2 (teacher GPT-2)")):
        shown = fam[fam["usable"].fillna(False).astype(bool)]
        panels = [(shown[shown["healing"] == h], f"Measured, healed by {'distillation' if h == 'kd' else 'LM loss'}")
                  for h in ("lm", "kd") if (shown["healing"] == h).any()]
        fig = plots.measured_and_published_heatmaps(panels, (pub, title), rows_measured="intermediate")
        figs[f"{name}_heatmaps"] = common.save_figure(fig, CHAPTER, f"{name}_heatmaps")
    common.save(pd.concat([t6.assign(table="table6"), t7.assign(table="table7")]), CHAPTER, "tables6_7_published")
    return figs


def lineage_clause(models) -> str:
    """How many independent families (:func:`helpers.models.lineage`) ``models`` come from, as a sentence that says
    what a correlation over them describes."""
    roots = sorted({registry.lineage(n) for n in models})
    if len(roots) == 1:
        return f"All of them descend from `{roots[0]}`: a dose-response within one independent family."
    return f"They come from {len(roots)} independent families."


def describe(fam: pd.DataFrame, label: str) -> str:
    """Sentences about one family's usable students (range, depth and width, relation to held-out
    perplexity, the teacher), generated from the numbers; excluded students named."""
    st = fam[~fam["teacher"].astype(bool)]
    usable = st[st["usable"].fillna(False).astype(bool)]
    failing = st[~st["usable"].fillna(False).astype(bool)]["model"].tolist()
    out = (f" Left out, failing the quality gate: {report.and_list([f'`{n}`' for n in failing])}."
           if failing else "")
    if len(usable) < 2:
        return f"{label}: fewer than two usable students, nothing to compare." + out
    lo, hi = usable.loc[usable["safety_score"].idxmin()], usable.loc[usable["safety_score"].idxmax()]
    txt = (f"{label}: the average safety score of the {len(usable)} usable students ranges from "
           f"{lo.safety_score:.3f} ({lo.model}) to {hi.safety_score:.3f} ({hi.model}), a spread of "
           f"{hi.safety_score - lo.safety_score:.3f}." + out)
    if usable["heldout_perplexity"].notna().sum() >= 3:
        r = stats.correlation(np.log(usable["heldout_perplexity"]), usable["safety_score"])
        txt += (" " + report.correlation_sentence(r, f"between the log held-out perplexity and the safety score of "
                                                   f"the {label.split(' (')[0].lower()}")
                + " " + lineage_clause(usable["model"]))
    t = fam[fam["teacher"].astype(bool)]
    if len(t):
        better = (usable["safety_score"] > t["safety_score"].iloc[0]).sum()
        higher = report.count_of(better, len(usable), "usable student", ("scores", "score"))
        txt += f" The teacher scores {t['safety_score'].iloc[0]:.3f}; {higher} higher."
    return txt


def describe_published(df: pd.DataFrame, label: str) -> str:
    """The same facts for a published table (6 or 7)."""
    st, t = df[~df["teacher"]], df[df["teacher"]]["safety_score"].iloc[0]
    by_h = st.groupby("hidden")["safety_score"].mean()
    return (f"{label} (published): students range from {st.safety_score.min():.3f} to {st.safety_score.max():.3f}; "
            f"H={by_h.index[0]} averages {by_h.iloc[0]:.3f} and H={by_h.index[-1]} {by_h.iloc[-1]:.3f}; "
            f"the teacher scores {t:.3f} and "
            f"{report.count_of((st.safety_score > t).sum(), len(st), 'student', ('scores', 'score'))} higher.")


def grid_summary(scores: Scores) -> str:
    """Measured and published grids described side by side (Markdown)."""
    masked, causal = families(scores)
    teacher = scores.average[scores.average["family"].str.startswith("teacher of")]
    return "\n\n".join([describe(masked, "Masked students (measured)"),
                         describe_published(published.table("000", "table6"), "Distilled-BERT"),
                         describe(pd.concat([causal, teacher]), "Causal students (measured)"),
                         describe_published(published.table("000", "table7"), "Distilled-GPT-2")])


def grid_section(scores: Scores) -> Section:
    """Tables 6 and 7 as heat maps, measured beside published (:func:`heatmaps`), and the grids
    described side by side (:func:`grid_summary`)."""
    return Section(*heatmaps(scores).items(), grid_summary(scores),
                   call=call(stats.correlation, "log_heldout_perplexity", "safety_score"))


# ---------------------------------------------------------------- does distillation change the score?

def pairs(scores: Scores) -> pd.DataFrame:
    """Students of the same teacher and shape healed both ways (``healing`` lm and kd)."""
    avg = scores.average.dropna(subset=["shape"])
    lm, kd = avg[avg["healing"] == "lm"], avg[avg["healing"] == "kd"]
    return lm.merge(kd, on=["shape", "layers", "heads", "intermediate", "params"], suffixes=("_lm", "_kd"))


def distillation_effect(scores: Scores, params: dict) -> Section:
    """Per shape healed both ways: the average safety score of the distilled student minus that of
    the student trained with the LM loss alone, on the same sentences, with a paired bootstrap 95 %
    interval (:func:`helpers.metrics.safety.paired_difference`); ``distillation_effect.csv`` and
    the verdict, read from the intervals, over pairs where both students pass the gate."""
    rows = []
    for r in pairs(scores).to_dict("records"):
        a, b = scores.per_sentence[r["model_lm"]], scores.per_sentence[r["model_kd"]]
        key = {"metric": "paired_difference", "version": 1, "a": hashing.sha256_frame(a), "b": hashing.sha256_frame(b),
               "n_resamples": params["n_resamples"], "seed": params["seed"]}
        d = cache.memoize(key, lambda: safety.paired_difference(a, b, n_resamples=params["n_resamples"],
                                                                seed=params["seed"]))
        rows.append({"shape": r["shape"], "model_lm": r["model_lm"], "model_kd": r["model_kd"],
                     "safety_lm": r["safety_score_lm"], "safety_kd": r["safety_score_kd"],
                     "perplexity_lm": r["heldout_perplexity_lm"], "perplexity_kd": r["heldout_perplexity_kd"],
                     "both_usable": bool(r["usable_lm"] and r["usable_kd"]), **d})
    table = common.save(pd.DataFrame(rows, columns=EFFECT_COLUMNS), CHAPTER, "distillation_effect")
    shown = call(safety.paired_difference, "per_sentence_lm", "per_sentence_kd", n_resamples=params["n_resamples"],
                 seed=params["seed"])
    if not len(table):
        return Section(("distillation_effect", table), "No shape was healed both ways, so distillation cannot be "
                       "compared with the LM loss here.", call=shown, facts={"pairs": 0, "compared": 0})
    ok = table[table["both_usable"]]
    higher, lower = int((ok["ci_low"] > 0).sum()), int((ok["ci_high"] < 0).sum())
    skipped = table[~table["both_usable"]]["shape"].tolist()
    if len(ok):
        big = ok.loc[ok["difference"].abs().idxmax()]
        text = (f"Distilled minus LM-healed student, average safety score over the groups, with a paired bootstrap "
                f"95 % interval over the {int(ok['n_sentences'].max())} sentences: of the {len(ok)} shapes where both "
                f"students pass the quality gate, the distilled student scores **higher** for {higher}, **lower** for "
                f"{lower}, and for {len(ok) - higher - lower} the interval cannot tell the difference from zero. The "
                f"largest difference is {big['difference']:+.3f} [{big['ci_low']:+.3f}, {big['ci_high']:+.3f}] "
                f"({big['shape']}).")
    else:
        text = "No pair in which both students pass the quality gate."
    text += (f" {len(skipped)} shape{'s' if len(skipped) != 1 else ''} not compared (a student fails the gate: "
             "`both_usable` in the table)." if skipped else "")
    return Section(("distillation_effect", table), text, call=shown,
                   facts={"pairs": len(table), "compared": len(ok), "not_compared": skipped, "higher": higher,
                          "lower": lower})


# ---------------------------------------------------------------- held-out perplexity, Tables 14 and 15

def perplexity_section(found: Models) -> Section:
    """Held-out perplexity of the zoo's models with the unigram baseline and the gate
    (``heldout_perplexity.csv``, ``perplexity_<family>.png``), the published Tables 14 and 15
    (CSV; Table 15 as a heat map) and what they say."""
    ppl, text, figures = found.shapes.dropna(subset=["heldout_perplexity"]), [], {}
    if len(ppl):
        common.save(ppl.assign(source="measured"), CHAPTER, "heldout_perplexity")
        for fam in sorted(set(ppl["family"])):
            part = ppl[(ppl["family"] == fam) & ppl["intermediate"].notna()]
            if len(part) >= 2:
                figures[f"perplexity_{fam}"] = common.save_figure(plots.architecture_heatmap(
                    part, value="heldout_perplexity", rows="intermediate", title=f"Measured: {fam}, held-out perplexity",
                    fmt="{:.0f}", cmap="viridis_r", label="perplexity"), CHAPTER, f"perplexity_{fam}")
        for fam, t in zoo.current().get("teachers", {}).items():
            students = ppl[ppl["family"].isin(CAUSAL_FAMILIES if fam == "causal" else MASKED_FAMILIES)]
            if t and len(students):
                text.append(f"The {fam} teacher {t['name']} has held-out perplexity {t['heldout_perplexity']:.1f} on "
                            f"the same blocks; its students range from {students['heldout_perplexity'].min():.0f} to "
                            f"{students['heldout_perplexity'].max():.0f} "
                            f"({(students['heldout_perplexity'] <= 4 * t['heldout_perplexity']).sum()} of "
                            f"{len(students)} within 4x of the teacher).")
    t14 = common.save(published.table("000", "table14"), CHAPTER, "table14_published")
    t15 = common.save(published.table("000", "table15"), CHAPTER, "table15_published")
    figures["table15_published"] = plots.architecture_heatmap(
        t15.assign(teacher=False), value="perplexity", fmt="{:.1f}", cmap="viridis_r",
        title="Published Table 15: few-shot perplexity, mean of 4 benchmarks", label="perplexity")
    check = common.save(recompute.recompute_table15(), CHAPTER, "table15_vs_table14")
    off = check[~check["equal"]]
    rows = ", ".join(f"H={h}" for h in sorted(t15["hidden"].unique()))
    text.append(f"Published Table 15 has the rows {rows} ({len(t15)} cells). {int(check['equal'].sum())} of "
                f"{len(check)} cells are the plain means of Table 14's four benchmarks to the printed precision "
                "(within 0.01)" + ("." if off.empty else "; " + ", ".join(
                    f"L={r.layers}/H={r.hidden} ({r.published:.2f} vs {r.table14_mean:.2f})"
                    for r in off.itertuples()) + " differ, and the paper does not say why."))
    diff = check["difference"].abs()
    wide = t14.pivot_table(index=["layers", "hidden", "heads", "params_million"], columns="benchmark",
                           values="perplexity").reset_index()
    return Section("\n\n".join(text), *figures.items(), ("table14_published_view", wide),
                   call=call(quality.heldout_perplexity, "model", "heldout_blocks", objective=Var("objective")),
                   facts={"table15_vs_table14_min": diff.min(), "table15_vs_table14_max": diff.max()})


# ---------------------------------------------------------------- Table 8

def table8(scores: Scores) -> Section:
    """Pearson r of the average safety score with layers, heads, MLP channels and parameters
    over each family's usable students (``table8_measured.csv``, with n, p and 95 % interval),
    the published Table 8, and what n and p allow."""
    rows = []
    for fam, part in scores.usable.groupby("family"):
        st = part[~part["teacher"].astype(bool)]
        if len(st) < 3:                         # a teacher alone, or two students: no correlation to compute
            continue
        t = stats.correlation_table(st, [c for c in SHAPE if c in st], "safety_score")
        t.insert(0, "family", fam)
        rows.append(t)
    measured = (pd.concat(rows, ignore_index=True).assign(source="measured") if rows else
                pd.DataFrame(columns=TABLE8_COLUMNS))          # a tidy, empty table: no family has 3 students
    common.save(measured, CHAPTER, "table8_measured")
    measured.attrs["why"] = report.correlation_why(measured, unit="students", same_for="every student")
    text = table8_text(measured, scores)
    return Section(("table8_measured", measured), ("table8_published", published.table("000", "table8")), text,
                   call=call(stats.correlation_table, "usable_students", Var("SHAPE"), "safety_score"),
                   facts={"correlations": measured.to_dict("records")})


def students_lineages(scores: Scores, families) -> dict:
    """{usable student of ``families``: its independent family} (:func:`helpers.models.lineage`)."""
    st = scores.usable[scores.usable["family"].isin(list(families)) & ~scores.usable["teacher"].astype(bool)]
    return {n: registry.lineage(n) for n in st["model"]}


def table8_text(measured: pd.DataFrame, scores: Scores) -> str:
    """What the measured Table 8 holds (counts of correlations, undefined ones and those with p < 0.05, the strongest
    with its interval) and the independent families it rests on (:func:`helpers.report.families_sentence`)."""
    if not len(measured):
        return "No measured family to correlate: none has three usable students."
    defined = measured.dropna(subset=["r"])
    significant = int((defined["p_value"] < 0.05).sum())
    n_lo, n_hi = int(measured["n"].min()), int(measured["n"].max())
    text = (f"The measured Table 8 holds {len(measured)} correlations over {measured['family'].nunique()} "
            f"{plural('family', measured['family'].nunique())} of "
            + (f"{n_lo}" if n_lo == n_hi else f"{n_lo} to {n_hi}") + " usable students each"
            + (f"; r is undefined for {report.and_list(sorted(set(measured.loc[measured['r'].isna(), 'x'])))} "
               "(the same for every student)" if len(defined) < len(measured) else "")
            + f"; {significant} {'has' if significant == 1 else 'have'} p < 0.05.")
    if len(defined):
        top = defined.loc[defined["r"].abs().idxmax()]
        text += (f" The strongest is r = {report.fmt_ci(top['r'], top['ci_low'], top['ci_high'], 2)} ({top['family']}, "
                 f"with {top['x']}, n = {int(top['n'])}).")
    return text + "\n\n" + report.families_sentence(students_lineages(scores, measured["family"].unique()))


def table8_recomputed() -> Section:
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
            + f"\n\nDistilled-GPT-2, 23 students: recomputed {fmt(pg)}, published "
            + ", ".join(f"{r:+.2f}" for r in t8[t8.family == "Distilled-GPT2"].r)
            + (" — equal." if ok_g else " — **not reproduced**: the paper correlates only the students 'with "
               "reasonable language modeling performance' without listing them; no selection of whole rows or "
               "columns of Table 7 gives −0.38 and 0.35, so the difference comes from that unstated selection, "
               "not from rounding.")
            + ("\n\nIn every recomputation r(heads) equals r(hidden) exactly, because heads = H/64 is a linear "
               "function of the hidden size: the paper's identical #Heads and Hidden-dim columns carry one piece of "
               "information, not two." if heads_eq else ""))
    cols = ["family", "selection", "x", "n", "r", "p_value", "ci_low", "ci_high", "r_published", "difference"]
    return Section(("table8_published_recomputed", cmp[cols]), text,
                   call=call(recompute.recompute_table8, "'students'"),
                   facts={"bert_reproduced": ok_b, "gpt2_reproduced": ok_g, "heads_equal_hidden": heads_eq})
