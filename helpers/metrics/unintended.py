"""Unintended bias of a classifier towards identity terms (Dixon et al. 2018; Borkan et al. 2019).

Inputs are plain arrays: ``labels`` (1 = toxic), ``scores`` (the classifier's probability of
toxic) and ``membership``, a boolean DataFrame (rows = examples, columns = identity terms; an
example may mention several).

- Per identity (:func:`identity_metrics`): false-positive and false-negative rates at a
  threshold, and Borkan et al.'s three AUCs (Mann-Whitney form of ``roc_auc_score``): *subgroup*
  (examples mentioning the identity), *BPSN* (background positive, subgroup negative: the
  identity's non-toxic examples with the other examples' toxic ones) and *BNSP* (background
  negative, subgroup positive).
- :func:`equality_differences`: Dixon et al.'s FPED = sum_i |FPR - FPR_i| and FNED, and seed 003's
  AUC equality differences sum_i |AUC - AUC_i| for the three AUCs (its Table 4).
- :func:`pairwise_rate_tests`: is identity a's FPR (or FNR) different from identity b's? Fisher's
  exact test (or a two-proportion z-test) on every pair, with a multiple-comparison correction
  from statsmodels (Holm by default).

The threshold: Dixon et al. and Borkan et al. use 0.5; seed 003's notebooks use the equal-error
threshold (FPR = FNR on the whole set, :func:`equal_error_threshold`). ``threshold`` takes a
number or ``"equal-error"``; the chapter reports which.
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

IDENTITY_COLUMNS = ["identity", "n", "n_toxic", "fpr", "fnr", "subgroup_auc", "bpsn_auc", "bnsp_auc"]


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


def equal_error_threshold(labels, scores) -> float:
    """The score threshold at which the false-positive and false-negative rates are closest
    (the ROC point nearest FPR = 1 - TPR)."""
    y, s, _ = _inputs(labels, scores)
    if len(set(y)) < 2:
        raise InputError("the equal-error threshold needs toxic and non-toxic examples")
    fpr, tpr, thresholds = roc_curve(y, s)
    return float(thresholds[int(np.argmin(np.abs(fpr - (1 - tpr))))])


def _threshold(threshold, y, s) -> float:
    if threshold == "equal-error":
        return equal_error_threshold(y, s)
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


def identity_metrics(labels, scores, membership: pd.DataFrame, *, threshold=0.5) -> pd.DataFrame:
    """One row for the whole set (``identity`` = ``"overall"``) and one per identity column:
    :data:`IDENTITY_COLUMNS` (an AUC is NaN when its examples hold one class only).
    ``attrs["threshold"]`` records the threshold used."""
    y, s, m = _inputs(labels, scores, membership)
    t = _threshold(threshold, y, s)
    predicted = s >= t
    fpr, fnr = _rates(y, predicted)
    rows = [{"identity": "overall", "n": len(y), "n_toxic": int(y.sum()), "fpr": fpr, "fnr": fnr,
             "subgroup_auc": _auc(y, s), "bpsn_auc": np.nan, "bnsp_auc": np.nan}]
    for j, name in enumerate(membership.columns):
        sub = m[:, j]
        fpr_i, fnr_i = _rates(y[sub], predicted[sub])
        bpsn = (sub & (y == 0)) | (~sub & (y == 1))
        bnsp = (sub & (y == 1)) | (~sub & (y == 0))
        rows.append({"identity": name, "n": int(sub.sum()), "n_toxic": int(y[sub].sum()), "fpr": fpr_i,
                     "fnr": fnr_i, "subgroup_auc": _auc(y[sub], s[sub]), "bpsn_auc": _auc(y[bpsn], s[bpsn]),
                     "bnsp_auc": _auc(y[bnsp], s[bnsp])})
    out = pd.DataFrame(rows, columns=IDENTITY_COLUMNS)
    out.attrs["threshold"] = t
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
                        test: str = "fisher", correction: str = "holm", alpha: float = 0.05) -> pd.DataFrame:
    """Is the false-positive (``rate="fpr"``: among non-toxic examples) or false-negative rate
    (``"fnr"``: among toxic ones) of identity a different from identity b's? Two-sided
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
    predicted = s >= _threshold(threshold, y, s)
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
    out.attrs.update(rate=rate, test=test, correction=correction)
    return out
