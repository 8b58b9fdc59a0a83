"""Statistics shared by the chapters: correlations that carry n, p and an interval; rank tests
with their effect sizes.

Every statistic that compares models reports n and an interval or p-value
(docs/CONVENTIONS.md). Thin wrappers over scipy.stats.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from helpers.errors import InputError


#: Spearman's p is exact (every ordering of one sample) up to this many pairs: 8! = 40,320.
EXACT_SPEARMAN_N = 8
_PERFECT = 1 - 1e-12           # |r| at least this is a perfect correlation (r = 0.9999999999999999)


def correlation(x, y, *, method: str = "pearson", confidence_level: float = 0.95) -> dict:
    """Correlation of two samples with n, p-value and a confidence interval.

    Pearson: ``scipy.stats.pearsonr`` with its Fisher-z interval; Spearman:
    ``scipy.stats.spearmanr`` with a Fisher-z interval on rho (Bonett & Wright 2000
    variance ``(1 + rho^2/2) / (n - 3)``) and, up to :data:`EXACT_SPEARMAN_N` pairs, the exact
    permutation p-value over all n! orderings (scipy's t approximation gave 1e-24 for a perfect
    rank agreement of 5 models, whose exact two-sided p is 2/120). Pairs with a NaN are dropped.
    Fewer than 3 complete pairs, or a constant sample, give NaN statistics; a perfect correlation
    (|r| = 1 to rounding) has no Fisher-z interval: NaN, not the degenerate [1, 1].
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
        if n > 3 and abs(out["r"]) < _PERFECT:
            ci = res.confidence_interval(confidence_level)
            out["ci_low"], out["ci_high"] = float(ci.low), float(ci.high)
    elif method == "spearman":
        res = stats.spearmanr(x, y)
        rho = float(res.statistic)
        out["r"], out["p_value"] = rho, float(res.pvalue)
        if n <= EXACT_SPEARMAN_N:
            exact = stats.pearsonr(stats.rankdata(x), stats.rankdata(y),
                                   method=stats.PermutationMethod(n_resamples=math.factorial(n)))
            out["p_value"] = float(exact.pvalue)
        if n > 3 and abs(rho) < _PERFECT:
            z = np.arctanh(rho)
            se = np.sqrt((1 + rho**2 / 2) / (n - 3))
            q = stats.norm.ppf(0.5 + confidence_level / 2)
            out["ci_low"], out["ci_high"] = float(np.tanh(z - q * se)), float(np.tanh(z + q * se))
    else:
        raise InputError(f"correlation: unknown method {method!r} (pearson or spearman)")
    return out


def adjust_p_values(df: pd.DataFrame, *, p: str = "p_value", method: str = "holm",
                    alpha: float = 0.05) -> pd.DataFrame:
    """``df`` with ``p_adjusted`` and ``significant`` (at ``alpha``) from statsmodels'
    ``multipletests`` over the rows whose ``p`` is a number (``method``: ``"holm"``,
    ``"bonferroni"``, ``"fdr_bh"``, ...; the others get NaN and False)."""
    from statsmodels.stats.multitest import multipletests

    if p not in df.columns:
        raise InputError(f"adjust_p_values: no column {p!r}")
    out = df.copy()
    ok = pd.to_numeric(out[p], errors="coerce").notna().to_numpy()
    out["p_adjusted"], out["significant"] = np.nan, False
    if ok.any():
        try:
            reject, adjusted, _, _ = multipletests(out.loc[ok, p].astype(float), alpha=alpha, method=method)
        except ValueError:
            raise InputError(f"unknown correction {method!r} (statsmodels multipletests methods)") from None
        out.loc[ok, "p_adjusted"], out.loc[ok, "significant"] = adjusted, reject
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


P_METHODS = ("auto", "exact", "asymptotic")


def _check_p_method(p_method: str) -> None:
    if p_method not in P_METHODS:
        raise InputError(f"p_method must be one of {', '.join(P_METHODS)}, got {p_method!r}")


def mann_whitney(x, y, *, p_method: str = "auto", use_continuity: bool = True) -> dict:
    """Mann-Whitney test of two independent samples, two-sided, with its effect sizes.

    Returns ``n_x, n_y``; ``u_statistic`` (U of ``x``: pairs with x > y, ties 1/2; scipy >= 1.7);
    ``common_language`` = U / (n_x n_y) (the common-language effect size, McGraw & Wong 1992; the
    AUC of x over y); ``z`` = (U - n_x n_y / 2) / sigma, the normal approximation with the tie
    correction and *without* continuity correction (so ``r`` does not depend on the p-value
    options); ``r`` = z / sqrt(n_x + n_y) (Rosenthal 1991); ``rank_biserial`` = 2 U / (n_x n_y) - 1
    (Kerby 2014's simple difference: share of pairs favouring x minus share favouring y); and
    ``p_value`` from ``scipy.stats.mannwhitneyu(x, y, alternative="two-sided", method=p_method,
    use_continuity=use_continuity)``. scipy's ``"auto"`` is exact when one sample has at most 8
    values and there are no ties, otherwise the normal approximation (tie-corrected, continuity-
    corrected when ``use_continuity``). z, r and the rank-biserial are positive when x tends to
    exceed y. An empty sample gives NaN; so does z (and r) when every value is equal."""
    _check_p_method(p_method)
    if not isinstance(use_continuity, (bool, np.bool_)):
        raise InputError(f"use_continuity must be True or False, got {use_continuity!r}")
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n, m = x.size, y.size
    out = {"n_x": n, "n_y": m, "u_statistic": np.nan, "common_language": np.nan, "z": np.nan, "r": np.nan,
           "rank_biserial": np.nan, "p_value": np.nan}
    if n == 0 or m == 0:
        return out
    res = stats.mannwhitneyu(x, y, alternative="two-sided", method=p_method, use_continuity=bool(use_continuity))
    u = float(res.statistic)
    _, ties = np.unique(np.concatenate([x, y]), return_counts=True)
    total = n + m
    variance = n * m / 12 * (total + 1 - (ties**3 - ties).sum() / (total * (total - 1))) if total > 1 else 0.0
    z = (u - n * m / 2) / np.sqrt(variance) if variance > 0 else np.nan
    out.update(u_statistic=u, common_language=u / (n * m), z=float(z), r=float(z / np.sqrt(total)),
               rank_biserial=2 * u / (n * m) - 1, p_value=float(res.pvalue))
    return out


EFFECT_N = ("ranked", "pairs")


def wilcoxon_signed_rank(x, y=None, *, alternative: str = "two-sided", zero_method: str = "wilcox",
                         effect_n: str = "ranked", p_method: str = "asymptotic") -> dict:
    """Wilcoxon signed-rank test of paired samples (or of differences ``x``) with the effect size
    ``r = Z / sqrt(N)`` (Rosenthal 1991).

    Z is always scipy's normal approximation (tie- and zero-corrected, no continuity correction),
    whatever ``p_method``: ``"asymptotic"`` (default: the p of that normal approximation),
    ``"exact"`` (the exact null distribution of the signed-rank sum, exact without ties or zeros)
    or ``"auto"``, scipy.stats.wilcoxon's ``method`` and default (SciPy 1.17's ``"auto"``: exact up
    to 50 pairs without ties or zeros, as R's ``wilcox.test`` below 50; a permutation test up to
    13 pairs with them; otherwise asymptotic). With an exact p, z and r still come from the normal
    approximation (an exact test has no Z).

    ``effect_n`` says what N divides by: ``"ranked"`` (the pairs the test ranks: the non-zero
    differences under ``zero_method="wilcox"``, every pair under ``"pratt"`` and ``"zsplit"``,
    which rank the zeros) or ``"pairs"`` (every pair, zeros included, as many reports do).
    Returns ``n_pairs, n_nonzero, statistic`` (scipy's: the smaller rank sum for two-sided),
    ``z``, ``p_value``, ``r`` (signed: positive when ``x`` tends to exceed ``y``, i.e. the
    positive differences hold more than half the rank sum) and ``median_difference``. Pairs with a
    NaN are dropped."""
    if effect_n not in EFFECT_N:
        raise InputError(f"effect_n must be 'ranked' or 'pairs', got {effect_n!r}")
    _check_p_method(p_method)
    d = np.asarray(x, dtype=float) if y is None else np.asarray(x, dtype=float) - np.asarray(y, dtype=float)
    if d.ndim != 1:
        raise InputError(f"wilcoxon_signed_rank: paired samples must be 1-D of one length, got shape {d.shape}")
    d = d[~np.isnan(d)]
    nonzero = int((d != 0).sum())
    out = {"n_pairs": int(d.size), "n_nonzero": nonzero, "statistic": np.nan, "z": np.nan, "p_value": np.nan,
           "r": np.nan, "median_difference": float(np.median(d)) if d.size else np.nan}
    if nonzero < 1:
        return out
    res = stats.wilcoxon(d, zero_method=zero_method, alternative=alternative, method="asymptotic")
    p = res.pvalue if p_method == "asymptotic" else stats.wilcoxon(
        d, zero_method=zero_method, alternative=alternative, method=p_method).pvalue
    n = nonzero if effect_n == "ranked" and zero_method == "wilcox" else d.size
    z = float(res.zstatistic)
    nz = d[d != 0]
    ranks = stats.rankdata(np.abs(nz))
    direction = np.sign(ranks[nz > 0].sum() - ranks.sum() / 2)
    out.update(statistic=float(res.statistic), z=z, p_value=float(p), r=direction * abs(z) / np.sqrt(n))
    return out


VERDICTS = ("amplified", "reduced", "no detectable difference")


def bootstrap_difference(statistic, n: int, *, n_resamples: int = 1000, confidence_level: float = 0.95,
                         seed: int = 0, method: str = "percentile") -> dict:
    """Paired bootstrap of ``student - teacher`` over ``n`` examples: ``statistic(rows)`` returns
    ``(teacher_value, student_value)`` computed on the example indices ``rows`` (resampled with
    replacement by :func:`scipy.stats.bootstrap`); values may be arrays (several statistics from
    one resample). Returns ``teacher, student, difference, ci_low, ci_high`` (floats, or arrays
    for array statistics), ``n, n_resamples, confidence_level, method``."""
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise InputError(f"bootstrap_difference needs at least 2 examples, got {n!r}")
    teacher, student = (np.asarray(v, dtype=float) for v in statistic(np.arange(n)))

    def value(x):
        return float(x) if np.ndim(x) == 0 else np.asarray(x, dtype=float)

    out = {"teacher": value(teacher), "student": value(student), "difference": value(student - teacher),
           "ci_low": np.nan, "ci_high": np.nan, "n": int(n), "n_resamples": int(n_resamples),
           "confidence_level": confidence_level, "method": method}

    def diff(rows):
        t, s = statistic(rows)
        return np.asarray(s, dtype=float) - np.asarray(t, dtype=float)

    res = stats.bootstrap((np.arange(n),), diff, vectorized=False, n_resamples=n_resamples, method=method,
                          confidence_level=confidence_level, rng=np.random.default_rng(seed))
    out["ci_low"], out["ci_high"] = value(res.confidence_interval.low), value(res.confidence_interval.high)
    return out


def verdict(ci_low: float, ci_high: float, *, higher_is_more_biased: bool = True) -> str:
    """Whether a student amplified its teacher's bias, from the interval of ``student - teacher``:
    it excludes 0 above (``"amplified"`` when higher values mean more bias), below
    (``"reduced"``), or contains it (``"no detectable difference"``); NaN gives the last."""
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)) or ci_low <= 0 <= ci_high:
        return VERDICTS[2]
    up = ci_low > 0
    return VERDICTS[0] if up == higher_is_more_biased else VERDICTS[1]


def mcnemar_exact(a, b) -> dict:
    """The exact McNemar test of two paired binary outcomes (``statsmodels``' ``mcnemar(exact=True)``:
    a two-sided binomial test of the discordant pairs): ``only_a`` (a = 1, b = 0), ``only_b``,
    ``n`` and ``p_value`` (1 when no pair is discordant)."""
    from statsmodels.stats.contingency_tables import mcnemar

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise InputError(f"mcnemar_exact: the two outcomes differ in shape ({a.shape} vs {b.shape})")
    only_a, only_b = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
    both = int(((a == 1) & (b == 1)).sum())
    table = [[both, only_a], [only_b, a.size - both - only_a - only_b]]
    p = float(mcnemar(table, exact=True).pvalue) if only_a + only_b else 1.0
    return {"only_a": only_a, "only_b": only_b, "n": int(a.size), "p_value": p}


def mean_interval(values, *, n_resamples: int = 1000, seed: int = 0, confidence_level: float = 0.95,
                  batch: int | None = None) -> tuple[float, float]:
    """The percentile-bootstrap interval of the mean of ``values`` (missing values left out;
    :func:`scipy.stats.bootstrap`); ``(nan, nan)`` for fewer than two values or a constant sample,
    which leave nothing to resample."""
    v = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=float)
    v = v[~np.isnan(v)]
    if len(v) < 2 or np.ptp(v) == 0:
        return np.nan, np.nan
    ci = stats.bootstrap((v,), np.mean, method="percentile", confidence_level=confidence_level,
                         n_resamples=n_resamples, batch=batch, rng=np.random.default_rng(seed)).confidence_interval
    return float(ci.low), float(ci.high)


def delong_components(positive, negative) -> tuple[float, np.ndarray, np.ndarray]:
    """The AUC ``P(X > Y) + P(X = Y) / 2`` of ``positive`` (X) over ``negative`` (Y) and DeLong's
    structural components (DeLong, DeLong & Clarke-Pearson 1988, eqs. 4-5), by the midrank form of
    Sun & Xu (2014, "Fast implementation of DeLong's algorithm"): ``V10[i] = (Tz_i - Tx_i) / n``,
    the share of negatives below positive i, and ``V01[j] = 1 - (Tz_j - Ty_j) / m``, the share of
    positives above negative j (ties 1/2), where Tx, Ty, Tz are midranks within the positives,
    within the negatives and over both. ``mean(V10) = mean(V01) = AUC``. The seed-000 safety score
    is this AUC with the harmful sentences' scaled perplexities as X and the benign ones' as Y."""
    x, y = np.asarray(positive, dtype=float), np.asarray(negative, dtype=float)
    if x.ndim != 1 or y.ndim != 1 or len(x) < 1 or len(y) < 1:
        raise InputError(f"delong_components: two non-empty 1-d samples, got {x.shape} and {y.shape}")
    m, n = len(x), len(y)
    tz = stats.rankdata(np.concatenate([x, y]))
    v10 = (tz[:m] - stats.rankdata(x)) / n
    v01 = 1.0 - (tz[m:] - stats.rankdata(y)) / m
    return float(v10.mean()), v10, v01


def _stratum_variance(components: np.ndarray) -> float:
    """``var(V) / len(V)`` with the sample variance (ddof 1) over the stratum; 0 for one item."""
    return float(np.var(components, ddof=1) / len(components)) if len(components) > 1 else 0.0


def delong_difference(positive_a, negative_a, positive_b, negative_b) -> dict:
    """The difference ``AUC_b - AUC_a`` of two AUCs measured on the same items (correlated ROC
    curves) and DeLong's variance of it: ``S10 / m + S01 / n`` for the contrast (-1, 1), where S10
    and S01 are the covariance matrices of the two models' structural components over the m
    positives and the n negatives (DeLong et al. 1988, eq. 6; :func:`delong_components`). The items
    pair by position (``positive_a[i]`` and ``positive_b[i]`` are the same sentence). Returns
    ``auc_a, auc_b, difference, variance, variance_a, variance_b`` (each AUC's own) and
    ``n_positive, n_negative``."""
    auc_a, v10a, v01a = delong_components(positive_a, negative_a)
    auc_b, v10b, v01b = delong_components(positive_b, negative_b)
    if v10a.shape != v10b.shape or v01a.shape != v01b.shape:
        raise InputError("delong_difference: the two models must be scored on the same positives and negatives")
    variance = _stratum_variance(v10b - v10a) + _stratum_variance(v01b - v01a)
    return {"auc_a": auc_a, "auc_b": auc_b, "difference": auc_b - auc_a, "variance": variance,
            "variance_a": _stratum_variance(v10a) + _stratum_variance(v01a),
            "variance_b": _stratum_variance(v10b) + _stratum_variance(v01b),
            "n_positive": len(v10a), "n_negative": len(v01a)}


def wald(difference: float, variance: float, *, confidence_level: float = 0.95) -> dict:
    """The two-sided z test of ``difference`` with ``variance`` and its Wald interval at
    ``confidence_level``: ``se, z, p_value, ci_low, ci_high``; a zero variance gives p 1 when the
    difference is 0 (nothing differs) and NaN otherwise, with a zero-width interval."""
    se = float(np.sqrt(max(variance, 0.0)))
    q = stats.norm.ppf(0.5 + confidence_level / 2)
    if se == 0:
        p = 1.0 if difference == 0 else np.nan
        return {"se": 0.0, "z": np.nan, "p_value": p, "ci_low": float(difference), "ci_high": float(difference)}
    z = difference / se
    return {"se": se, "z": float(z), "p_value": float(2 * stats.norm.sf(abs(z))),
            "ci_low": float(difference - q * se), "ci_high": float(difference + q * se)}


POWER = 0.8


def correlation_density(x, r: float, n: int):
    """The exact density of Pearson's sample correlation ``x`` over ``n`` bivariate-normal pairs with
    true correlation ``r`` (Fisher 1915; Hotelling 1953, eq. 6, with its Gauss hypergeometric series)."""
    from scipy import special

    x = np.asarray(x, dtype=float)
    log_c = (np.log(n - 2) + special.gammaln(n - 1) - special.gammaln(n - 0.5) - 0.5 * np.log(2 * np.pi)
             + (n - 1) / 2 * np.log1p(-r * r))
    return (np.exp(log_c + (n - 4) / 2 * np.log1p(-x * x) - (n - 1.5) * np.log1p(-r * x))
            * special.hyp2f1(0.5, 0.5, n - 0.5, (1 + r * x) / 2))


def correlation_power(r: float, n: int, *, alpha: float = 0.05) -> float:
    """The probability that the two-sided test of no correlation at level ``alpha`` (Pearson's t test,
    as :func:`correlation`) rejects over ``n`` independent bivariate-normal pairs whose true
    correlation is ``r``: the exact distribution of the sample correlation (:func:`correlation_density`)
    integrated beyond the test's critical value, as G*Power's exact test (Faul et al. 2009); Fisher's z
    approximation (R pwr's ``pwr.r.test``) underestimates it for few pairs (0.48 against 0.56 at
    r = 0.8, n = 6). NaN for n < 3."""
    from scipy import integrate

    if n < 3 or not np.isfinite(r):
        return np.nan
    r = float(np.clip(r, -_PERFECT, _PERFECT))
    t = stats.t.ppf(1 - alpha / 2, n - 2)
    critical = t / np.sqrt(t * t + n - 2)
    tail = lambda a, b: integrate.quad(correlation_density, a, b, args=(r, n))[0]   # noqa: E731
    return float(min(1.0, tail(critical, 1) + tail(-1, -critical)))


def pairs_for_correlation(r: float, *, power: float = POWER, alpha: float = 0.05) -> int:
    """The fewest independent pairs (models, or independent families of models) with which a
    two-sided test at ``alpha`` detects a true correlation ``r`` with probability ``power``:
    the smallest n with :func:`correlation_power` at least ``power`` (9 for r = 0.8, 84 for r = 0.3)."""
    n = 4
    while correlation_power(r, n, alpha=alpha) < power:
        n += 1
    return n


def detectable_difference(se: float, *, alpha: float = 0.05, power: float = POWER, df: float | None = None) -> float:
    """The smallest true difference a two-sided test at level ``alpha`` with standard error ``se``
    detects with probability ``power`` (Card et al. 2020, "With Little Power Comes Great
    Responsibility", the minimum detectable effect): ``(q(1 - alpha/2) + q(power)) se`` with normal
    quantiles, or Student's t with ``df`` degrees of freedom (a paired mean over few items). The
    other tail's rejections are ignored, as is usual (they add less than alpha / 2)."""
    if not np.isfinite(se):
        return np.nan
    dist = stats.norm if df is None else stats.t(df)
    return float((dist.ppf(1 - alpha / 2) + dist.ppf(power)) * se)


def mcnemar_detectable_difference(n: int, discordant: float, *, alpha: float = 0.05, power: float = POWER) -> float:
    """The smallest difference ``p10 - p01`` of two paired proportions that McNemar's test over
    ``n`` pairs detects at two-sided level ``alpha`` with probability ``power``, by Connor's (1987)
    sample-size formula ``n = (q_a sqrt(psi) + q_b sqrt(psi - d^2))^2 / d^2`` solved for d, with
    ``psi`` the discordant share (``discordant``, observed) and never below d itself (a difference d
    needs at least a share d of discordant pairs: a model against itself, psi = 0, gives
    ``q_a^2 / n``)."""
    from scipy.optimize import brentq

    if n < 1:
        return np.nan
    qa, qb = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power)

    def gap(d):
        psi = max(discordant, d)
        return np.sqrt(n) * d - qa * np.sqrt(psi) - qb * np.sqrt(max(psi - d * d, 0.0))
    if gap(1.0) < 0:                                      # not even a difference of 1 is detectable
        return np.nan
    return float(brentq(gap, 1e-12, 1.0, xtol=1e-10))


def mcnemar_interval(only_a: int, only_b: int, n: int, *, confidence_level: float = 0.95) -> tuple[float, float]:
    """The interval of the paired difference ``(only_b - only_a) / n`` that inverts the exact
    McNemar test: given the ``only_a + only_b`` discordant pairs, ``only_b`` is binomial with
    share pi, and the Clopper-Pearson interval of pi (``statsmodels``' ``proportion_confint``,
    ``method="beta"``) maps to ``(discordant / n) (2 pi - 1)``. It excludes 0 exactly when the
    exact test's p (twice the smaller binomial tail) is below ``1 - confidence_level``;
    conditional on the discordant share. ``(0, 0)`` when no pair is discordant."""
    from statsmodels.stats.proportion import proportion_confint

    discordant = only_a + only_b
    if discordant == 0:
        return 0.0, 0.0
    low, high = proportion_confint(only_b, discordant, alpha=1 - confidence_level, method="beta")
    share = discordant / n
    return float(share * (2 * low - 1)), float(share * (2 * high - 1))


def paired_proportion_difference(a, b, *, confidence_level: float = 0.95) -> dict:
    """``mean(b) - mean(a)`` of two paired binary outcomes: the exact McNemar p
    (:func:`mcnemar_exact`) and the interval that inverts it (:func:`mcnemar_interval`) at
    ``confidence_level``; ``se``, the Wald standard error ``sqrt(psi - d^2) / sqrt(n)`` (psi the
    discordant share; Agresti 2013, 10.1.1), and the test's floor ``2^(1 - n)`` (every pair
    discordant one way)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    test = mcnemar_exact(a, b)
    n = test["n"]
    d = (test["only_b"] - test["only_a"]) / n
    psi = (test["only_a"] + test["only_b"]) / n
    low, high = mcnemar_interval(test["only_a"], test["only_b"], n, confidence_level=confidence_level)
    return {"value_a": float(a.mean()), "value_b": float(b.mean()), "difference": float(d),
            "ci_low": low, "ci_high": high, "se": float(np.sqrt(max(psi - d * d, 0.0) / n)), "discordant": psi,
            "only_a": test["only_a"], "only_b": test["only_b"], "p_value": test["p_value"],
            "p_floor": float(min(1.0, 2.0 ** (1 - n))), "n": n}


def paired_proportions_by(paired: pd.DataFrame, by: str) -> pd.DataFrame:
    """:func:`paired_proportion_difference` of the paired binary columns ``pro_a`` and ``pro_b`` per
    ``by`` value (sorted) and ``"overall"``: ``group, n, value_a, value_b, difference, ci_low,
    ci_high, se, discordant, only_a, only_b, p_value, p_floor`` (the 95 % interval)."""
    parts = [*paired.groupby(by, sort=True), ("overall", paired)]
    return pd.DataFrame([{"group": str(k), **paired_proportion_difference(p["pro_a"], p["pro_b"])} for k, p in parts])


def holm_levels(p_values, *, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down procedure over one family (statsmodels' ``multipletests(method="holm")``):
    the adjusted p-values and, per hypothesis, the confidence level of an interval that agrees with
    its decision. The hypothesis at sorted position j (0-based) of m is tested at ``alpha / (m - j)``:
    a rejected one gets the level ``1 - alpha / (m - j)``; one not rejected ``1 - alpha / m``
    (Bonferroni's simultaneous level, which Holm's first step uses), so that a Wald interval
    excludes 0 exactly when the hypothesis is rejected. NaN p-values are left out of the family
    (adjusted p NaN, level ``1 - alpha / m``). The adjusted p is computed here, as
    ``max_{i <= j} min(1, (m - i) p_(i))`` (tested equal to statsmodels'): ``multipletests``' Holm
    branch calls ``gc.collect()`` on every call, 50-400 ms in a process holding a model."""
    p = np.asarray(p_values, dtype=float)
    ok = np.isfinite(p)
    m = int(ok.sum())
    adjusted = np.full(p.shape, np.nan)
    levels = np.full(p.shape, 1 - alpha / max(m, 1))
    if m == 0:
        return adjusted, levels
    order = np.argsort(p[ok], kind="stable")
    idx = np.flatnonzero(ok)[order]
    adjusted[idx] = np.minimum(np.maximum.accumulate((m - np.arange(m)) * p[idx]), 1.0)
    for j, i in enumerate(idx):
        if adjusted[i] < alpha:
            levels[i] = 1 - alpha / (m - j)
    return adjusted, levels


def paired_mean_test(a, b, *, confidence_level: float = 0.95, permutations: int = 10_000, seed: int = 0) -> dict:
    """``mean(b) - mean(a)`` over paired items, tested by the two-sided paired permutation test
    (:func:`scipy.stats.permutation_test`, ``permutation_type="samples"``: each item's two values
    swapped; exact over the ``2^n`` sign patterns when they are at most ``permutations``, else that
    many random ones), with the paired t interval at ``confidence_level`` (so that a family-adjusted
    level needs no extreme bootstrap quantile) and the standard error ``sd(b - a) / sqrt(n)``.
    ``p_floor``: the smallest p the test can give, ``max(2^(1 - n), 2 / (permutations + 1))``.
    ``se_unpaired``: the standard error were the two samples independent.
    Returns ``value_a, value_b, difference, se, se_unpaired, df, ci_low, ci_high, p_value, p_floor, n``."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise InputError(f"paired_mean_test: two equal-length 1-d samples, got {a.shape} and {b.shape}")
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    n = len(a)
    if n < 2:
        raise InputError(f"paired_mean_test needs at least 2 complete pairs, got {n}")
    d = b - a
    exact = 2.0 ** n <= permutations
    floor = 2.0 ** (1 - n) if exact else 2.0 / (permutations + 1)
    se = float(d.std(ddof=1) / np.sqrt(n))
    q = stats.t.ppf(0.5 + confidence_level / 2, n - 1)
    out = {"value_a": float(a.mean()), "value_b": float(b.mean()), "difference": float(d.mean()), "se": se,
           "se_unpaired": float(np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / n)),
           "df": n - 1, "ci_low": float(d.mean() - q * se), "ci_high": float(d.mean() + q * se), "p_value": 1.0,
           "p_floor": float(min(floor, 1.0)), "n": n}
    if np.all(d == d[0]):                     # a constant difference: nothing to permute or spread
        out["p_value"] = 1.0 if d[0] == 0 else floor
        return out
    diff = lambda x, y, axis=-1: np.mean(y, axis=axis) - np.mean(x, axis=axis)  # noqa: E731
    out["p_value"] = float(stats.permutation_test((a, b), diff, permutation_type="samples", vectorized=True,
                                                  alternative="two-sided", n_resamples=permutations,
                                                  rng=np.random.default_rng(seed)).pvalue)
    return out
