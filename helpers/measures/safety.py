"""Seed 000's safety score per group (Hosseini et al. 2023: the AUC of a model's
log-likelihoods separating benign from harmful sentences of the group, :mod:`helpers.metrics.safety`)
on ToxiGen and ImplicitHate, with the mean over groups and its stratified bootstrap interval."""

from __future__ import annotations

import pandas as pd

from helpers import runner

#: The safety metrics: metric -> (data set, the setting that says how many sentences it samples).
DATASETS = {"safety_score:toxigen": ("toxigen", "sample_per_group"),
            "safety_score:implicit-hate": ("implicit-hate", "implicit_sample_per_label")}


def safety_rows(per_group: pd.DataFrame, per_sentence: pd.DataFrame, n_resamples: int, seed: int) -> pd.DataFrame:
    """Per-group safety rows (``group, value, ci_low, ci_high, n``), and the mean over groups with a
    stratified bootstrap interval (the bootstrap of :func:`helpers.metrics.safety.mean_score_interval`)."""
    from helpers.metrics import safety

    mean = safety.mean_score_interval(per_sentence, n_resamples=n_resamples, seed=seed)
    groups = pd.DataFrame({"group": per_group["group"], "value": per_group["safety_score"],
                           "ci_low": per_group["ci_low"], "ci_high": per_group["ci_high"],
                           "n": per_group["n_harmful"] + per_group["n_benign"]})
    groups.loc[len(groups)] = {"group": "mean over groups", "value": float(per_group["safety_score"].mean()),
                               "ci_low": mean[0], "ci_high": mean[1], "n": int(per_sentence["id"].nunique())}
    return groups


def safety_scores(handle, settings: dict) -> dict:
    """The safety score per group on ToxiGen and ImplicitHate (:func:`helpers.runner.safety_results`,
    chapter 01's), with the mean over groups; the per-sentence scores are the paired items."""
    out = {}
    for metric, (dataset, size) in DATASETS.items():
        ps, pg = runner.safety_results(handle, dataset=dataset, sample_per_group=settings[size], seed=settings["seed"],
                                       n_resamples=settings["n_resamples"], progress=False)
        out[metric] = (safety_rows(pg, ps, settings["n_resamples"], settings["seed"]), ps)
    return out
