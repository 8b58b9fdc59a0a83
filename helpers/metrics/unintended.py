"""Unintended bias of a classifier towards identity terms (Dixon et al. 2018; Borkan et al. 2019).

Inputs are plain arrays: ``labels`` (1 = toxic), ``scores`` (the classifier's probability of
toxic) and ``membership``, a boolean DataFrame (rows = examples, columns = identity terms; an
example may mention several).

- Per identity (:func:`identity_metrics`): false-positive and false-negative rates at a
  threshold, and Borkan et al.'s three AUCs (Mann-Whitney form of ``roc_auc_score``): *subgroup*
  (examples mentioning the identity), *BPSN* (background positive, subgroup negative: the
  identity's non-toxic examples with the other examples' toxic ones) and *BNSP* (background
  negative, subgroup positive); and their two *average equality gaps* (AEG), which compare the
  identity with its background within one class: ``negative_aeg`` = 1/2 - MWU(background
  non-toxic, identity non-toxic) and ``positive_aeg`` = 1/2 - MWU(background toxic, identity
  toxic), MWU(a, b) = U / (n_a n_b) = P(a > b) with ties 1/2, as Jigsaw's
  ``model_bias_analysis.compute_negative_aeg`` / ``compute_positive_aeg``. So an AEG is
  P(identity scores higher than background) - 1/2 within the class: 0 = no gap, a positive
  ``negative_aeg`` = the identity's non-toxic examples score higher (more false positives), a
  negative ``positive_aeg`` = its toxic examples score lower (more false negatives).
- :func:`equality_differences`: Dixon et al.'s FPED = sum_i |FPR - FPR_i| and FNED, and seed 003's
  AUC equality differences sum_i |AUC - AUC_i| for the three AUCs (its Table 4).
- :func:`pairwise_rate_tests`: is identity a's FPR (or FNR) different from identity b's? Fisher's
  exact test (or a two-proportion z-test) on every pair, with a multiple-comparison correction
  from statsmodels (Holm by default).

The threshold: Dixon et al. and Borkan et al. use 0.5; seed 003's notebooks use the equal-error
threshold (FPR = FNR on the whole set, :func:`equal_error_threshold`). ``threshold`` takes a
number or ``"equal-error"``; the chapter reports which. ``threshold_rule`` says which side a
score equal to the threshold falls on: ``">="`` (default: toxic when score >= threshold, as
Jigsaw's ``confusion_matrix_counts`` and scikit-learn's ``roc_curve``) or ``">"`` (toxic only
above it). The rates (FPR, FNR, FPED, FNED, the pairwise tests) differ only when scores sit
exactly at the threshold; the AUCs and AEGs use no threshold.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.metrics import roc_curve

from helpers.errors import InputError

__all__ = ["equal_error_threshold", "identity_metrics", "equality_differences", "pairwise_rate_tests",
           "IDENTITY_COLUMNS"]

IDENTITY_COLUMNS = ["identity", "n", "n_toxic", "fpr", "fnr", "subgroup_auc", "bpsn_auc", "bnsp_auc",
                    "negative_aeg", "positive_aeg"]
THRESHOLD_RULES = (">=", ">")


def _inputs(labels, scores, membership=None):
    y = np.asarray(labels)
    s = np.asarray(scores, dtype=np.float64)
    if y.ndim != 1 or s.shape != y.shape or len(y) == 0:
        raise InputError(f"labels and scores must be 1-D and the same length, got {y.shape} and {s.shape}")
    if not np.isin(y, [0, 1]).all():
        raise InputError("labels must be 0 (non-toxic) or 1 (toxic)")
    if not np.isfinite(s).all():
        raise InputError("scores must be finite numbers")
    if membership is None:
        return y.astype(int), s, None
    if not isinstance(membership, pd.DataFrame) or len(membership) != len(y):
        raise InputError(f"membership must be a boolean DataFrame with one row per example ({len(y)})")
    return y.astype(int), s, membership.astype(bool).to_numpy()


def _check_rule(threshold_rule: str) -> None:
    if threshold_rule not in THRESHOLD_RULES:
        raise InputError(f"threshold_rule must be '>=' or '>', got {threshold_rule!r}")


def _predicted(s, t: float, threshold_rule: str) -> np.ndarray:
    return s >= t if threshold_rule == ">=" else s > t


def equal_error_threshold(labels, scores, *, threshold_rule: str = ">=") -> float:
    """The score threshold at which the false-positive and false-negative rates are closest
    (the ROC point nearest FPR = 1 - TPR, from scikit-learn's ``roc_curve``, whose points flag
    score >= threshold). Under ``threshold_rule=">"`` the same point (the same flagged examples)
    is returned as the next lower score, so both rules give the same rates there."""
    _check_rule(threshold_rule)
    y, s, _ = _inputs(labels, scores)
    if len(set(y)) < 2:
        raise InputError("the equal-error threshold needs toxic and non-toxic examples")
    fpr, tpr, thresholds = roc_curve(y, s)
    t = float(thresholds[int(np.argmin(np.abs(fpr - (1 - tpr))))])
    if threshold_rule == ">":
        below = s[s < t]
        t = float(below.max()) if below.size else float(np.nextafter(t, -np.inf))
    return t


def _threshold(threshold, y, s, threshold_rule: str) -> float:
    _check_rule(threshold_rule)
    if threshold == "equal-error":
        return equal_error_threshold(y, s, threshold_rule=threshold_rule)
    if isinstance(threshold, (int, float)) and not isinstance(threshold, bool) and 0 <= threshold <= 1:
        return float(threshold)
    raise InputError(f"threshold must be a number in [0, 1] or 'equal-error', got {threshold!r}")


def _rates(y, predicted) -> tuple[float, float]:
    neg, pos = y == 0, y == 1
    fpr = predicted[neg].mean() if neg.any() else np.nan
    fnr = (~predicted[pos]).mean() if pos.any() else np.nan
    return float(fpr), float(fnr)


def _auc(y, s) -> float:
    """ROC AUC as the Mann-Whitney U of the positives over n_pos * n_neg, mid-ranks for ties:
    equal to scikit-learn's ``roc_auc_score`` (tested) and ~20x faster, which the bootstrap of
    Table 4 needs. NaN when one class is missing."""
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        return np.nan
    ranks = stats.rankdata(s)
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _aeg(class_ranks, sub) -> float:
    """P(identity > background) - 1/2 within one class: ``class_ranks`` are the mid-ranks of that
    class's scores, ``sub`` marks the identity's examples among them. NaN when either side is empty."""
    n_sub = int(sub.sum())
    n_background = len(sub) - n_sub
    if n_sub == 0 or n_background == 0:
        return np.nan
    u = class_ranks[sub].sum() - n_sub * (n_sub + 1) / 2
    return float(u / (n_sub * n_background) - 0.5)


def identity_metrics(labels, scores, membership: pd.DataFrame, *, threshold=0.5,
                     threshold_rule: str = ">=") -> pd.DataFrame:
    """One row for the whole set (``identity`` = ``"overall"``) and one per identity column:
    :data:`IDENTITY_COLUMNS` (an AUC is NaN when its examples hold one class only; an AEG when
    the identity or its background has no example of that class; the overall row has none).
    FPR and FNR flag score ``threshold_rule`` threshold (``">="``, Jigsaw's, or ``">"``; module
    docstring). ``attrs["threshold"]`` records the threshold used, ``attrs["threshold_rule"]``
    the rule."""
    y, s, m = _inputs(labels, scores, membership)
    t = _threshold(threshold, y, s, threshold_rule)
    predicted = _predicted(s, t, threshold_rule)
    fpr, fnr = _rates(y, predicted)
    neg, pos = y == 0, y == 1
    neg_ranks, pos_ranks = stats.rankdata(s[neg]), stats.rankdata(s[pos])
    rows = [{"identity": "overall", "n": len(y), "n_toxic": int(y.sum()), "fpr": fpr, "fnr": fnr,
             "subgroup_auc": _auc(y, s), "bpsn_auc": np.nan, "bnsp_auc": np.nan, "negative_aeg": np.nan,
             "positive_aeg": np.nan}]
    for j, name in enumerate(membership.columns):
        sub = m[:, j]
        fpr_i, fnr_i = _rates(y[sub], predicted[sub])
        bpsn = (sub & (y == 0)) | (~sub & (y == 1))
        bnsp = (sub & (y == 1)) | (~sub & (y == 0))
        rows.append({"identity": name, "n": int(sub.sum()), "n_toxic": int(y[sub].sum()), "fpr": fpr_i,
                     "fnr": fnr_i, "subgroup_auc": _auc(y[sub], s[sub]), "bpsn_auc": _auc(y[bpsn], s[bpsn]),
                     "bnsp_auc": _auc(y[bnsp], s[bnsp]), "negative_aeg": _aeg(neg_ranks, sub[neg]),
                     "positive_aeg": _aeg(pos_ranks, sub[pos])})
    out = pd.DataFrame(rows, columns=IDENTITY_COLUMNS)
    out.attrs.update(threshold=t, threshold_rule=threshold_rule)
    return out


def equality_differences(metrics: pd.DataFrame) -> pd.DataFrame:
    """Dixon et al.'s FPED and FNED and the AUC equality differences, from an
    :func:`identity_metrics` table: ``metric, value, n_identities`` (identities with a NaN
    rate or AUC are left out of that sum and not counted)."""
    overall = metrics.loc[metrics["identity"] == "overall"]
    if len(overall) != 1:
        raise InputError("equality_differences needs an identity_metrics table with one 'overall' row")
    overall, groups = overall.iloc[0], metrics.loc[metrics["identity"] != "overall"]
    rows = []
    for metric, column, reference in (("fped", "fpr", "fpr"), ("fned", "fnr", "fnr"),
                                      ("subgroup_auc_ed", "subgroup_auc", "subgroup_auc"),
                                      ("bpsn_auc_ed", "bpsn_auc", "subgroup_auc"),
                                      ("bnsp_auc_ed", "bnsp_auc", "subgroup_auc")):
        values = groups[column].dropna()
        rows.append({"metric": metric, "value": float(np.abs(overall[reference] - values).sum()),
                     "n_identities": len(values)})
    return pd.DataFrame(rows)


def pairwise_rate_tests(labels, scores, membership: pd.DataFrame, *, rate: str = "fpr", threshold=0.5,
                        test: str = "fisher", correction: str = "holm", alpha: float = 0.05,
                        threshold_rule: str = ">=") -> pd.DataFrame:
    """Is the false-positive (``rate="fpr"``: among non-toxic examples) or false-negative rate
    (``"fnr"``: among toxic ones) of identity a different from identity b's? An example is
    flagged toxic when its score ``threshold_rule`` (``">="``, Jigsaw's, or ``">"``) the
    threshold. Two-sided
    ``test="fisher"`` (scipy's exact test on the 2 x 2 table) or ``"ztest"`` (pooled
    two-proportion z-test), on every pair; ``correction`` is any method of statsmodels'
    ``multipletests`` (``"holm"``, ``"bonferroni"``, ``"fdr_bh"``, ...). Returns ``identity_a,
    identity_b, rate_a, rate_b, n_a, n_b, p_value, p_adjusted, significant``."""
    from helpers.stats import adjust_p_values

    if rate not in ("fpr", "fnr"):
        raise InputError(f"rate must be 'fpr' or 'fnr', got {rate!r}")
    if test not in ("fisher", "ztest"):
        raise InputError(f"test must be 'fisher' or 'ztest', got {test!r}")
    y, s, m = _inputs(labels, scores, membership)
    predicted = _predicted(s, _threshold(threshold, y, s, threshold_rule), threshold_rule)
    pool = y == (0 if rate == "fpr" else 1)
    errors = predicted if rate == "fpr" else ~predicted
    counts = [(int((errors & pool & m[:, j]).sum()), int((pool & m[:, j]).sum())) for j in range(m.shape[1])]
    rows = []
    for a, b in itertools.combinations(range(m.shape[1]), 2):
        (ka, na), (kb, nb) = counts[a], counts[b]
        if na == 0 or nb == 0:
            p = np.nan
        elif test == "fisher":
            p = stats.fisher_exact([[ka, na - ka], [kb, nb - kb]]).pvalue
        else:
            pooled = (ka + kb) / (na + nb)
            se = np.sqrt(pooled * (1 - pooled) * (1 / na + 1 / nb))
            p = 1.0 if se == 0 else 2 * stats.norm.sf(abs(ka / na - kb / nb) / se)
        rows.append({"identity_a": membership.columns[a], "identity_b": membership.columns[b],
                     "rate_a": ka / na if na else np.nan, "rate_b": kb / nb if nb else np.nan,
                     "n_a": na, "n_b": nb, "p_value": float(p)})
    out = pd.DataFrame(rows, columns=["identity_a", "identity_b", "rate_a", "rate_b", "n_a", "n_b", "p_value"])
    out = adjust_p_values(out, method=correction, alpha=alpha)
    out.attrs.update(rate=rate, test=test, correction=correction, threshold_rule=threshold_rule)
    return out
