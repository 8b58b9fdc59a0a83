"""Causal mediation analysis total effect of gender (Vig et al. 2020, NeurIPS).

For an input u and candidates (stereotypical, anti-stereotypical), y(u) = p(anti | u) / p(stereo | u);
the total effect of an intervention that sets the gender is TE = y(u_set-gender) / y(u_null) - 1
(Vig et al. 2020, sec. 3). Three kinds of inputs, built from the upstream repository's files
(sebastianGehrmann/CausalMediationAnalysis) by :func:`helpers.datasets.cma.examples`:

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

import numpy as np
import pandas as pd

from helpers.errors import InputError
from helpers.lm import conventions
from helpers.lm import logprobs as _lm

KINDS = ("professions", "winobias", "winogender")
DISPLAY = {"winobias": "CMA-WB", "winogender": "CMA-WG", "professions": "CMA-prof"}


# ---------------------------------------------------------------- probabilities

def _cand_ids(tokenizer, text: str) -> list[int]:
    # upstream tokenizes "a " + candidate and drops "a": the leading-space form for BPE vocabularies
    return tokenizer.encode((" " if conventions.needs_leading_space(tokenizer) else "") + text, add_special_tokens=False)


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
