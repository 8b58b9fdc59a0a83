"""Statistics shared by the chapters: correlations that carry n, p and an interval.

Every statistic that compares models reports n and an interval or p-value
(../shared/DESIGN.md). Thin wrappers over scipy.stats.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from helpers.errors import InputError


def correlation(x, y, *, method: str = "pearson", confidence_level: float = 0.95) -> dict:
    """Correlation of two samples with n, p-value and a confidence interval.

    Pearson: ``scipy.stats.pearsonr`` with its Fisher-z interval; Spearman:
    ``scipy.stats.spearmanr`` with a Fisher-z interval on rho (Bonett & Wright 2000
    variance ``(1 + rho^2/2) / (n - 3)``). Pairs with a NaN are dropped.
    Fewer than 3 complete pairs, or a constant sample, give NaN statistics.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape:
        raise InputError(f"correlation: samples differ in length ({x.size} vs {y.size})")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = int(x.size)
    out = {"n": n, "r": np.nan, "p_value": np.nan, "ci_low": np.nan, "ci_high": np.nan, "method": method}
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return out
    if method == "pearson":
        res = stats.pearsonr(x, y)
        out["r"], out["p_value"] = float(res.statistic), float(res.pvalue)
        if n > 3:
            ci = res.confidence_interval(confidence_level)
            out["ci_low"], out["ci_high"] = float(ci.low), float(ci.high)
    elif method == "spearman":
        res = stats.spearmanr(x, y)
        rho = float(res.statistic)
        out["r"], out["p_value"] = rho, float(res.pvalue)
        if n > 3 and abs(rho) < 1:
            z = np.arctanh(rho)
            se = np.sqrt((1 + rho**2 / 2) / (n - 3))
            q = stats.norm.ppf(0.5 + confidence_level / 2)
            out["ci_low"], out["ci_high"] = float(np.tanh(z - q * se)), float(np.tanh(z + q * se))
    else:
        raise InputError(f"correlation: unknown method {method!r} (pearson or spearman)")
    return out


def correlation_table(df: pd.DataFrame, x_columns: list[str], y_column: str, *,
                      by: str | None = None, method: str = "pearson") -> pd.DataFrame:
    """Correlate ``y_column`` with each of ``x_columns`` (per ``by`` group if given).

    Returns a tidy table: [by,] x, y, n, r, p_value, ci_low, ci_high, method.
    Used for seed 000 Tables 5 and 8 (safety score vs heads, layers, hidden size).
    """
    missing = [c for c in [*x_columns, y_column, *([by] if by else [])] if c not in df.columns]
    if missing:
        raise InputError(f"correlation_table: missing column(s) {missing}")
    groups = df.groupby(by, sort=False) if by else [(None, df)]
    rows = []
    for key, part in groups:
        for x in x_columns:
            row = ({by: key} if by else {}) | {"x": x, "y": y_column}
            row |= correlation(part[x], part[y_column], method=method)
            rows.append(row)
    return pd.DataFrame(rows)


def correlation_matrix(df: pd.DataFrame, columns: list[str], *, method: str = "pearson") -> pd.DataFrame:
    """All pairwise correlations of ``columns`` as a tidy table (x, y, n, r, p, interval).

    Used for seed 000 Tables 3 and 4 (safety score vs other harm metrics).
    """
    rows = []
    for i, a in enumerate(columns):
        for b in columns[i + 1:]:
            rows.append({"x": a, "y": b} | correlation(df[a], df[b], method=method))
    return pd.DataFrame(rows)
