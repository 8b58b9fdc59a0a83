"""Stereotype preferences: StereoSet's SS (Nadeem et al. 2021, bias-bench's scoring, the share of
clusters where the model prefers the stereotype: 50 is unbiased) and CrowS-Pairs (Nangia et al.
2020, the share of pairs where it prefers the more stereotypical sentence: 0.5 is unbiased)."""

from __future__ import annotations

import pandas as pd

from helpers import runner


#: Version of the cached StereoSet row scores (:func:`stereoset_sentences`).
STEREOSET_ROWS_VERSION = 1


def stereoset_sentences(handle, items: pd.DataFrame, task: str = "intrasentence") -> pd.DataFrame:
    """``items`` plus the model's ``score`` of each StereoSet sentence
    (:func:`helpers.metrics.stereoset.score`, bias-bench's scoring), each sentence cached on its own
    (:func:`helpers.runner.cached_per_row`) under the model's identity and the task: an interrupted
    run keeps what it scored, chapters 02, 05 and 06 and the report card share the scores, and the
    model is loaded only if a sentence is missing."""
    from helpers.metrics import stereoset

    columns = [c for c in ("context", "template_word", "sentence") if c in items.columns]
    scores = runner.cached_per_row(handle, "stereoset-sentence", {"task": task, "scorer": "bias-bench"}, items,
                                   columns, lambda lm, rows: stereoset.score(lm, rows, task=task, progress=False)["score"],
                                   version=STEREOSET_ROWS_VERSION)
    return items.assign(score=scores)


def stereoset_tasks(clusters_per_target) -> dict[str, pd.DataFrame]:
    """StereoSet's intrasentence and intersentence items, ``clusters_per_target`` clusters of every target term."""
    from helpers.datasets import stereoset as stereoset_data
    from helpers.metrics import stereoset

    return {"intrasentence": stereoset.select_clusters(stereoset_data.load_intrasentence(), clusters_per_target),
            "intersentence": stereoset.select_clusters(stereoset_data.load_intersentence(), clusters_per_target)}


def stereoset_scored(handle, params: dict) -> dict[str, pd.DataFrame]:
    """One model's scored StereoSet sentences per task (:func:`helpers.metrics.stereoset.score`):
    intrasentence, and intersentence for a causal LM; cached under its identity and the clusters."""
    k = params["stereoset_clusters_per_target"]
    data = stereoset_tasks(k)
    settings = {"clusters_per_target": k, "domains": "all", "tasks": list(data)}

    def compute(h):
        return {task: stereoset_sentences(h, df, task)
                for task, df in data.items() if task == "intrasentence" or h.objective == "causal"}
    # version 2: the sentences' scores cached one by one (stereoset_sentences)
    return runner.cached_result(handle, "stereoset-scored", settings, compute, version=2, load=False)


def stereoset_ss(handle, settings: dict) -> dict:
    """StereoSet SS per domain and overall, intrasentence and (a causal LM) intersentence, from the
    model's own scores (:func:`stereoset_scored`; upstream's term-mean SS, Nadeem et al. 2021 eq. 2),
    with a bootstrap interval over clusters; the clusters are the paired items."""
    from helpers.metrics import stereoset

    out = {}
    for task, scored in stereoset_scored(handle, settings).items():
        wide = stereoset.clusters(scored)
        iv = stereoset.ss_intervals(wide, n_resamples=settings["n_resamples"], seed=settings["seed"])
        out[f"stereoset_ss:{task}"] = (iv.rename(columns={"domain": "group", "ss": "value", "n_clusters": "n"}), wide)
    return out


def crows_pairs_preferences(handle, per_type, seed: int) -> pd.DataFrame:
    """CrowS-Pairs preferences of one model (:mod:`helpers.metrics.crows_pairs`, the paper's
    direction-aware reading) on ``per_type`` pairs per bias type drawn with ``seed`` (``"all"``:
    every pair); each sentence's whole-sentence log-likelihood comes from the per-sentence score
    cache (:func:`helpers.runner.score_frame`)."""
    from helpers.datasets.bias_sets import load_crows_pairs
    from helpers.metrics import crows_pairs

    pairs = load_crows_pairs()
    if per_type != "all":
        pairs = (pairs.sample(frac=1.0, random_state=seed).groupby("bias_type").head(int(per_type))
                 .sort_values("pair_id").reset_index(drop=True))
    texts = pd.DataFrame({"text": pd.concat([pairs["sent_more"], pairs["sent_less"]], ignore_index=True)})
    scored = runner.score_frame(handle, texts, progress=False)["log_likelihood"].to_numpy()
    return crows_pairs.preferences(pairs, scored[:len(pairs)], scored[len(pairs):])


def crows_pairs(handle, settings: dict) -> dict:
    """CrowS-Pairs per bias type and overall with its Wilson interval (Nangia et al. 2020, the
    metric score); the preferences are the paired items."""
    from helpers.metrics import crows_pairs as cp

    prefs = crows_pairs_preferences(handle, settings["crows_per_type"], settings["seed"])
    return {"crows_pairs": (cp.scores(prefs).rename(columns={"score": "value"}), prefs)}
