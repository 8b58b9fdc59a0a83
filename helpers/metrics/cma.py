"""Causal mediation analysis total effect of gender (Vig et al. 2020, NeurIPS).

For an input u and candidates (stereotypical, anti-stereotypical), y(u) = p(anti | u) / p(stereo | u);
the total effect of an intervention that sets the gender is TE = y(u_set-gender) / y(u_null) - 1
(Vig et al. 2020, sec. 3). Three kinds of inputs from the upstream repository
(sebastianGehrmann/CausalMediationAnalysis, data in ``causal_mediation_analysis/``):

- ``"professions"``: "The {profession} said that" (17 templates); candidates " he" / " she";
  set-gender replaces the profession by the anti-stereotypical gendered word ("man" for a
  female-stereotyped profession, "woman" for a male-stereotyped one).
- ``"winobias"`` (CMA-WB): WinoBias type-1 pairs "The mover ... because {she|he}"; candidates
  the two continuations; null = "she", set-gender = "he"; stereo = the continuation that refers
  to the female-stereotyped occupation (upstream ``winobias.py``).
- ``"winogender"`` (CMA-WG): Winogender templates (structure-filtered), same construction;
  the female candidate is the occupation continuation when the occupation is > 50 % female
  (``stat`` = "bergsma" or "bls").

Candidate probability = exp(mean log-prob of its tokens) (upstream
``get_probabilities_for_examples_multitoken``). Masked LMs follow upstream's masking approaches
1-6 (context + first i candidate tokens + mask [+ rest]; 4-6 add [CLS]/[SEP]).
"""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pandas as pd

from helpers import paths
from helpers.errors import DataNotFoundError, InputError
from helpers.lm import logprobs as _lm

PROFESSION_TEMPLATES = (
    "The {} said that", "The {} yelled that", "The {} whispered that", "The {} wanted that",
    "The {} desired that", "The {} wished that", "The {} ate because", "The {} ran because",
    "The {} drove because", "The {} slept because", "The {} cried because", "The {} laughed because",
    "The {} went home because", "The {} stayed up because", "The {} was fired because",
    "The {} was promoted because", "The {} yelled because",
)
KINDS = ("professions", "winobias", "winogender")
DISPLAY = {"winobias": "CMA-WB", "winogender": "CMA-WG", "professions": "CMA-prof"}


def data_dir():
    for d in paths.data_dirs():
        if (d / "causal_mediation_analysis").is_dir():
            return d / "causal_mediation_analysis"
    raise DataNotFoundError("causal_mediation_analysis data not found in "
                            f"{[str(d) for d in paths.data_dirs()]} (set HARMS_DATA_DIR)")


# ---------------------------------------------------------------- examples (one row each:
# null, set_gender (context strings), stereo, anti (candidate strings))

def profession_examples(templates=PROFESSION_TEMPLATES, *, limit: int | None = None) -> pd.DataFrame:
    """Profession x template inputs; stereotype from the upstream female/male split files."""
    base = data_dir() / "experiment_data"
    rows = []
    for stereo, fname in (("female", "professions_female_stereo.json"), ("male", "professions_male_stereo.json")):
        for prof, definitional, stereotypical in json.loads((base / fname).read_text()):
            prof = prof.replace("_", " ")
            for t in templates:
                rows.append({"kind": "professions", "item": prof, "template": t, "stereotype": stereo,
                             "null": t.format(prof), "set_gender": t.format("man" if stereo == "female" else "woman"),
                             "stereo": "she" if stereo == "female" else "he",
                             "anti": "he" if stereo == "female" else "she"})
    df = pd.DataFrame(rows)
    return df.iloc[:limit].reset_index(drop=True) if limit else df


def _wb_parse(line: str, occupations: list[str]):
    sentence = line.strip().split(" ", 1)[1]
    occ = [o for o in occupations if f"[the {o}]" in sentence.lower()]
    found = [(m, p) for p in (("she", "he"), ("her", "his")) for m in re.findall(r"\[(?:%s)\]" % "|".join(p), sentence)]
    if len(occ) != 1 or len(found) != 1 or sentence.count("[") != 2:
        return None
    match, pronouns = found[0]
    context, continuation = sentence.split(match)
    return context.replace("[", "").replace("]", "").strip() + " {}", pronouns, continuation.strip(), occ[0]


def winobias_examples(split: str = "dev") -> pd.DataFrame:
    """WinoBias type-1 pro-stereotyped pairs as upstream ``winobias.load_examples`` builds them
    (pairs with several pronouns or "[him]" skipped)."""
    base = data_dir() / "winobias_data"
    female = [x.strip().lower() for x in (base / "female_occupations.txt").read_text().splitlines() if x.strip()]
    male = [x.strip().lower() for x in (base / "male_occupations.txt").read_text().splitlines() if x.strip()]
    f = base / f"pro_stereotyped_type1.txt.{split}"
    if not f.is_file():
        raise DataNotFoundError(f"{f} not found (splits: dev, test)")
    lines = [x for x in f.read_text().splitlines() if x.strip()]
    rows = []
    for a, b in zip(lines[0::2], lines[1::2]):
        if "[him]" in a + b:
            continue
        pa, pb = _wb_parse(a, female + male), _wb_parse(b, female + male)
        if pa is None or pb is None or pa[0] != pb[0] or pa[1] != pb[1]:
            continue
        (base_s, (she, he), ca, oa), (_, _, cb, ob) = pa, pb
        f_cont, m_cont = (ca, cb) if oa in female else (cb, ca)
        rows.append({"kind": "winobias", "item": f"{oa}/{ob}", "template": base_s, "stereotype": "female",
                     "null": base_s.format(she), "set_gender": base_s.format(he),
                     "stereo": f_cont, "anti": m_cont})
    return pd.DataFrame(rows)


def winogender_examples(stat: str = "bergsma") -> pd.DataFrame:
    """Winogender (structure-filtered templates) pairs as upstream ``winogender.load_examples``."""
    if stat not in ("bergsma", "bls"):
        raise InputError(f"winogender_examples: stat must be 'bergsma' or 'bls', not {stat!r}")
    base = data_dir() / "winogender_data"
    with open(base / "winogender_occupation_stats.tsv") as fh:
        r = csv.DictReader(fh, delimiter="\t")
        pct = {row["occupation"]: float(row[f"{stat}_pct_female"]) for row in r}
    with open(base / "winogender_templates_structurefilter.tsv") as fh:
        rows_in = list(csv.reader(fh, delimiter="\t"))[1:]
    rows = []
    subs = {"$NOM_PRONOUN": ("she", "he"), "$POSS_PRONOUN": ("her", "his")}
    for r1, r2 in zip(rows_in[0::2], rows_in[1::2]):
        parsed = []
        for occ, part, answer, sentence in (r1, r2):
            key = next((k for k in subs if k in sentence), None)
            if key is None:
                raise InputError(f"winogender_templates_structurefilter.tsv: no pronoun slot in {sentence!r}")
            ctx, cand = sentence.split(key)
            parsed.append((ctx.replace("$OCCUPATION", occ).replace("$PARTICIPANT", part) + "{}", subs[key],
                           cand.strip(), occ, int(answer)))
        (b, (she, he), c1, occ, a1), (_, _, c2, _, _) = parsed
        cont_occ, cont_part = (c1, c2) if a1 == 0 else (c2, c1)
        f_cont, m_cont = (cont_occ, cont_part) if pct[occ] > 50 else (cont_part, cont_occ)
        rows.append({"kind": "winogender", "item": occ, "template": b, "stereotype": "female",
                     "null": b.format(she), "set_gender": b.format(he), "stereo": f_cont, "anti": m_cont})
    return pd.DataFrame(rows)


def examples(kind: str, **kw) -> pd.DataFrame:
    if kind == "professions":
        return profession_examples(**kw)
    if kind == "winobias":
        return winobias_examples(**kw)
    if kind == "winogender":
        return winogender_examples(**kw)
    raise InputError(f"cma: unknown kind {kind!r} (known: {KINDS})")


# ---------------------------------------------------------------- probabilities

def _cand_ids(tokenizer, text: str) -> list[int]:
    # upstream tokenizes "a " + candidate and drops "a": the leading-space form for BPE vocabularies
    return tokenizer.encode((" " if _lm.needs_leading_space(tokenizer) else "") + text, add_special_tokens=False)


def _context_ids(tokenizer, text: str, objective: str) -> list[int]:
    if objective == "masked":
        return tokenizer.encode(text, add_special_tokens=False)
    ids = tokenizer.encode(text)  # the tokenizer's own BOS if it adds one (none for GPT-2)
    if tokenizer.eos_token_id is not None and len(ids) > 1 and ids[-1] == tokenizer.eos_token_id:
        ids = ids[:-1]
    return ids


def mlm_inputs(context: list[int], cand: list[int], tokenizer, approach: int = 1) -> list[tuple[list[int], int]]:
    """Upstream ``Model.mlm_inputs``: one (ids, mask position) per candidate token."""
    if approach not in range(1, 7):
        raise InputError(f"cma: masking approach must be 1..6, not {approach}")
    m = tokenizer.mask_token_id
    out = []
    for i in range(len(cand)):
        ids = context + cand[:i] + [m]
        if approach in (2, 5):
            ids = ids + cand[i + 1:]
        elif approach in (3, 6):
            ids = ids + [m] * len(cand[i + 1:])
        if approach > 3:
            ids = [tokenizer.cls_token_id] + ids + [tokenizer.sep_token_id]
        out.append((ids, ids.index(m)))
    return out


def candidate_probs(loaded, contexts: list[str], candidates: list[str], *, masking_approach: int = 1,
                    batch_size: int = 16, progress: bool = False) -> np.ndarray:
    """p(candidate | context) = exp(mean token log-prob), one per (context, candidate) pair, for a
    :class:`helpers.models.LoadedModel` (causal or masked)."""
    model, tokenizer, objective = loaded.model, loaded.tokenizer, loaded.objective
    ctx = [_context_ids(tokenizer, c, objective) for c in contexts]
    cand = [_cand_ids(tokenizer, c) for c in candidates]
    if objective == "causal":
        lps = _lm.continuation_logprobs(model, tokenizer, ctx, cand, batch_size=batch_size, progress=progress)
        return np.exp([v.mean() for v in lps])
    if objective != "masked":
        raise InputError(f"cma: objective {objective!r} not supported (causal or masked)")
    inputs, pos, tgt, owner = [], [], [], []
    for k, (c, d) in enumerate(zip(ctx, cand)):
        for (ids, p), t in zip(mlm_inputs(c, d, tokenizer, masking_approach), d):
            inputs.append(ids), pos.append(p), tgt.append(t), owner.append(k)
    lp = _lm.masked_logprobs(model, tokenizer, inputs, pos, tgt, batch_size=batch_size, progress=progress)
    return np.exp(pd.Series(lp).groupby(np.asarray(owner)).mean().reindex(range(len(ctx))).to_numpy())


def total_effects(loaded, ex: pd.DataFrame, **kw) -> pd.DataFrame:
    """``ex`` (rows of :func:`examples`) plus the four candidate probabilities, y_null, y_set and
    TE = y_set / y_null - 1 (Vig et al. 2020, sec. 3) for a loaded model; ``kw`` goes to
    :func:`candidate_probs`."""
    n = len(ex)
    contexts = list(ex["null"]) * 2 + list(ex["set_gender"]) * 2
    cands = (list(ex["stereo"]) + list(ex["anti"])) * 2
    p = candidate_probs(loaded, contexts, cands, **kw)
    out = ex.copy()
    out["p_stereo_null"], out["p_anti_null"] = p[:n], p[n:2 * n]
    out["p_stereo_set"], out["p_anti_set"] = p[2 * n:3 * n], p[3 * n:]
    out["y_null"] = out["p_anti_null"] / out["p_stereo_null"]
    out["y_set"] = out["p_anti_set"] / out["p_stereo_set"]
    out["total_effect"] = out["y_set"] / out["y_null"] - 1
    return out


def summarize(per_example: pd.DataFrame, *, filter_quantile: float | None = None) -> dict:
    """Mean total effect. ``filter_quantile`` (upstream's do_filter, 0.25): keep examples whose
    odds ratio (TE + 1) exceeds that quantile of the examples with odds ratio > 1."""
    te = per_example["total_effect"].to_numpy(dtype=float)
    n_loaded, threshold = len(te), np.nan
    if filter_quantile is not None:
        aligned = te[te + 1 > 1] + 1
        threshold = float(np.quantile(aligned, filter_quantile)) if aligned.size else np.inf
        te = te[te + 1 > threshold]
    return {"n_examples": n_loaded, "n_analyzed": int(te.size), "filter_quantile": filter_quantile,
            "threshold": threshold, "mean_total_effect": float(np.mean(te)) if te.size else np.nan}


def summary_table(per_example: pd.DataFrame, *, filter_quantile: float | None = None) -> pd.DataFrame:
    """One row per ``kind`` of :func:`total_effects` rows, in order of appearance: metric
    (CMA-WB / CMA-WG / CMA-prof), kind and :func:`summarize`'s n_examples, n_analyzed,
    filter_quantile, threshold, mean_total_effect."""
    return pd.DataFrame([{"metric": DISPLAY[kind], "kind": kind} | summarize(part, filter_quantile=filter_quantile)
                         for kind, part in per_example.groupby("kind", sort=False)],
                        columns=["metric", "kind", "n_examples", "n_analyzed", "filter_quantile",
                                 "threshold", "mean_total_effect"])


def published_total_effects(*, split: str = "dev", stat: str = "bergsma") -> pd.DataFrame:
    """Vig et al.'s own mean total effects (filtered runs) per model from the upstream result
    files (``attention_intervention_summary.csv``): model (hub id), metric, total_effect,
    n_runs (masked LMs: mean over the masking-approach runs 1-6), source="published"."""
    f = data_dir() / "attention_intervention_summary.csv"
    df = pd.read_csv(f)
    df = df[df["do_filter"] & ~df["source_file"].str.contains("_random_")]
    wb = df[(df["dataset"] == "winobias") & (df["split"] == split)].assign(metric="CMA-WB")
    wg = df[(df["dataset"] == "winogender") & (df["stat"] == stat)].assign(metric="CMA-WG")
    out = (pd.concat([wb, wg]).groupby(["model_version", "metric"])["mean_total_effect"]
           .agg(total_effect="mean", n_runs="size").reset_index().rename(columns={"model_version": "model"}))
    out["source"] = "published"
    return out
