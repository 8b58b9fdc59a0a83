"""The classifier quality gate: is a classifier better than the majority class and than chance,
by a stated margin, before its bias is interpreted? (The classifiers' counterpart of the
language-model gate of :mod:`helpers.metrics.quality`.)

A classifier that predicts the majority class for (nearly) every text can reach a high accuracy
and weighted F1 on skewed data (seed 003's MLMA hate speech is 88 % toxic) while learning
nothing; its false-positive and false-negative gaps between identity groups then measure
nothing either. Per classifier and evaluation set, three statistics, each with a 95 % interval
from a *stratified* percentile bootstrap over the items (each resample keeps the numbers of
positive and negative items, as pROC's default bootstrap for AUC does, so every resample has
both classes):

- **macro F1** (scikit-learn ``f1_score(average="macro")``) against the majority-class
  predictor's macro F1 (``share / (1 + share)`` for a majority share ``share``: F1 of the
  majority class, 0 for the other, halved);
- **balanced accuracy** (``balanced_accuracy_score``; the mean of the per-class recalls)
  against 0.5: the value of the majority class and of any constant or random predictor;
- **AUC** (``roc_auc_score`` of the positive-class probability) against 0.5, chance.

A statistic **passes** when its interval's lower end exceeds its baseline by ``margin``
(default 0.05); the classifier is **usable** when all three pass. Accuracy and the majority
share are reported beside them, not gated (they are what the gate corrects).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from helpers.errors import InputError

__all__ = ["classifier_gate", "check_margin", "GATE_METRICS", "MARGIN"]

#: Gated statistics, in the order of the table.
GATE_METRICS = ("macro_f1", "balanced_accuracy", "auc")
#: Default margin over the baseline that an interval's lower end must clear.
MARGIN = 0.05


def check_margin(margin, name: str = "classifier_margin") -> float:
    """``margin`` as a number in [0, 0.5) (a larger margin could not be cleared by a balanced
    accuracy or an AUC), else one :class:`InputError` line naming ``name``."""
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin < 0.5:
        raise InputError(f"parameter {name} = {margin!r}: a number in [0, 0.5) (the classifier gate's margin)")
    return float(margin)


def _statistics(y: np.ndarray, p: np.ndarray, threshold: float) -> dict:
    from sklearn import metrics

    pred = (p >= threshold).astype(int)
    return {"macro_f1": metrics.f1_score(y, pred, average="macro", labels=[0, 1], zero_division=0),
            "balanced_accuracy": metrics.balanced_accuracy_score(y, pred),
            "auc": metrics.roc_auc_score(y, p),
            "accuracy": metrics.accuracy_score(y, pred)}


def _bootstrap(y: np.ndarray, p: np.ndarray, threshold: float, n_resamples: int, rng) -> dict:
    """The four statistics on ``n_resamples`` stratified resamples at once, from the confusion
    counts and the rank-sum form of the AUC (the formulas of scikit-learn's functions, vectorised
    over resamples; tests/test_classifier_quality.py checks them against scikit-learn)."""
    pos, neg = p[y == 1], p[y == 0]
    n_pos, n_neg = pos.size, neg.size
    chunk = max(1, 2_000_000 // (n_pos + n_neg))            # bounded memory on large evaluation sets
    parts = [_resampled(pos, neg, threshold, min(chunk, n_resamples - start), rng)
             for start in range(0, n_resamples, chunk)]
    return {k: np.concatenate([part[k] for part in parts]) if parts else np.empty(0) for k in
            ("macro_f1", "balanced_accuracy", "auc", "accuracy")}


def _resampled(pos: np.ndarray, neg: np.ndarray, threshold: float, size: int, rng) -> dict:
    from scipy.stats import rankdata

    n_pos, n_neg = pos.size, neg.size
    rp = pos[rng.integers(0, n_pos, (size, n_pos))]
    rn = neg[rng.integers(0, n_neg, (size, n_neg))]
    tp = (rp >= threshold).sum(axis=1).astype(float)
    tn = (rn < threshold).sum(axis=1).astype(float)
    fn, fp = n_pos - tp, n_neg - tn
    with np.errstate(invalid="ignore", divide="ignore"):
        f1_pos = np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), 0.0)
        f1_neg = np.where(2 * tn + fn + fp > 0, 2 * tn / (2 * tn + fn + fp), 0.0)
    ranks = rankdata(np.concatenate([rp, rn], axis=1), axis=1)
    auc = (ranks[:, :n_pos].sum(axis=1) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return {"macro_f1": (f1_pos + f1_neg) / 2, "balanced_accuracy": (tp / n_pos + tn / n_neg) / 2,
            "auc": auc, "accuracy": (tp + tn) / (n_pos + n_neg)}


def classifier_gate(y_true, p_positive, *, threshold: float = 0.5, margin: float = MARGIN,
                    n_resamples: int = 1000, seed: int = 0, confidence_level: float = 0.95) -> pd.DataFrame:
    """The gate of one classifier on one evaluation set.

    ``y_true``: 0/1 (1 = the positive class, e.g. toxic); ``p_positive``: the classifier's
    probability of the positive class; a text is predicted positive when ``p >= threshold``.
    Returns one row per statistic (``macro_f1``, ``balanced_accuracy``, ``auc``, then
    ``accuracy`` ungated): ``metric, value, ci_low, ci_high, baseline, margin, passes`` (``passes``
    is NaN for accuracy) and ``n, n_positive, majority_share``; ``attrs["usable"]`` is True when
    every gated statistic passes.
    """
    y = np.asarray(y_true)
    p = np.asarray(p_positive, dtype=float)
    if y.shape != p.shape or y.ndim != 1:
        raise InputError(f"classifier_gate: labels and probabilities differ in shape ({y.shape} vs {p.shape})")
    if not np.isin(y, [0, 1]).all():
        raise InputError("classifier_gate: labels must be 0 or 1 (1 = the positive class)")
    if np.isnan(p).any():
        raise InputError("classifier_gate: a probability is NaN")
    check_margin(margin, "margin")
    y = y.astype(int)
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == y.size:
        raise InputError(f"classifier_gate: the evaluation set has only one class ({y.size} items); "
                         "a gate needs both")
    observed = _statistics(y, p, threshold)
    draws = _bootstrap(y, p, threshold, n_resamples, np.random.default_rng(seed))
    alpha = (1 - confidence_level) / 2
    share = max(n_pos, y.size - n_pos) / y.size
    baselines = {"macro_f1": share / (1 + share), "balanced_accuracy": 0.5, "auc": 0.5, "accuracy": share}
    rows = []
    for k, value in observed.items():
        low, high = (np.quantile(draws[k], [alpha, 1 - alpha]) if n_resamples else (np.nan, np.nan))
        gated = k in GATE_METRICS
        judged = low if n_resamples else value          # no resampling: the value itself is gated
        rows.append({"metric": k, "value": float(value), "ci_low": float(low), "ci_high": float(high),
                     "baseline": baselines[k], "margin": margin if gated else np.nan,
                     "passes": bool(judged > baselines[k] + margin) if gated else np.nan})
    out = pd.DataFrame(rows).assign(n=y.size, n_positive=n_pos, majority_share=share)
    out.attrs.update(usable=bool(out["passes"].dropna().astype(bool).all()), threshold=threshold,
                     n_resamples=n_resamples, seed=seed, confidence_level=confidence_level)
    return out
