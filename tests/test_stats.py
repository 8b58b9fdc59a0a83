"""helpers.stats against independent computations (scipy, numpy, Fisher z by hand)."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from helpers import stats
from helpers.errors import InputError


@pytest.fixture
def xy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=30)
    return x, 0.6 * x + rng.normal(size=30)


def test_pearson_matches_numpy_and_fisher_interval(xy):
    x, y = xy
    out = stats.correlation(x, y)
    assert out["n"] == 30
    assert out["r"] == pytest.approx(np.corrcoef(x, y)[0, 1], abs=1e-12)
    # two-sided t-test p-value, computed by hand
    t = out["r"] * np.sqrt(28 / (1 - out["r"] ** 2))
    assert out["p_value"] == pytest.approx(2 * sps.t.sf(abs(t), 28), rel=1e-8)
    z, se = np.arctanh(out["r"]), 1 / np.sqrt(27)
    assert out["ci_low"] == pytest.approx(np.tanh(z - 1.959963984540054 * se), abs=1e-9)
    assert out["ci_high"] == pytest.approx(np.tanh(z + 1.959963984540054 * se), abs=1e-9)


def test_spearman_is_pearson_of_ranks(xy):
    x, y = xy
    out = stats.correlation(x, y, method="spearman")
    assert out["r"] == pytest.approx(np.corrcoef(sps.rankdata(x), sps.rankdata(y))[0, 1], abs=1e-12)
    assert out["ci_low"] < out["r"] < out["ci_high"]


@pytest.mark.parametrize("n", [4, 5, 7])
def test_spearman_p_of_a_few_pairs_is_exact_and_a_perfect_one_has_no_interval(n):
    """Up to 8 pairs, Spearman's p counts every ordering of y (brute force here); a perfect rank
    agreement of 5 models has p = 2/120, not scipy's t approximation (1e-24), and no interval."""
    import itertools

    rng = np.random.default_rng(n)
    x, y = rng.normal(size=n), rng.normal(size=n)
    out = stats.correlation(x, y, method="spearman")
    rx, ry = sps.rankdata(x), sps.rankdata(y)
    rho = np.corrcoef(rx, ry)[0, 1]
    perms = [np.corrcoef(rx, ry[list(p)])[0, 1] for p in itertools.permutations(range(n))]
    assert out["p_value"] == pytest.approx(np.mean(np.abs(perms) >= abs(rho) - 1e-12), rel=1e-9)
    perfect = stats.correlation(x, x ** 3, method="spearman")
    assert perfect["r"] == pytest.approx(1.0) and perfect["p_value"] == pytest.approx(2 / math.factorial(n))
    assert np.isnan(perfect["ci_low"]) and np.isnan(perfect["ci_high"])
    line = stats.correlation(x, 2 * x + 1)                        # Pearson: r = 1, no interval either
    assert line["r"] == pytest.approx(1.0) and np.isnan(line["ci_low"]) == (n > 3)


def test_nan_pairs_dropped_and_degenerate_cases():
    out = stats.correlation([1, 2, np.nan, 4, 5], [2, 4, 6, np.nan, 11])
    assert out["n"] == 3
    assert out["r"] == pytest.approx(np.corrcoef([1, 2, 5], [2, 4, 11])[0, 1])
    assert np.isnan(stats.correlation([1, 2], [3, 4])["r"])          # n < 3
    assert np.isnan(stats.correlation([1, 1, 1, 1], [1, 2, 3, 4])["r"])  # constant sample
    with pytest.raises(InputError, match="differ in length"):
        stats.correlation([1, 2, 3], [1, 2])
    with pytest.raises(InputError, match="unknown method"):
        stats.correlation([1, 2, 3], [1, 2, 3], method="kendall")


def test_correlation_table_per_group_and_matrix(xy):
    x, y = xy
    df = pd.DataFrame({"family": ["a"] * 15 + ["b"] * 15, "layers": x, "hidden": x ** 2, "score": y})
    table = stats.correlation_table(df, ["layers", "hidden"], "score", by="family")
    assert list(table.columns[:3]) == ["family", "x", "y"]
    assert len(table) == 4
    row = table[(table.family == "b") & (table.x == "layers")].iloc[0]
    assert row["r"] == pytest.approx(sps.pearsonr(x[15:], y[15:]).statistic)
    assert row["n"] == 15
    matrix = stats.correlation_matrix(df, ["layers", "hidden", "score"])
    assert len(matrix) == 3
    with pytest.raises(InputError, match="missing column"):
        stats.correlation_table(df, ["heads"], "score")


def _wilcoxon_by_hand(d):
    """Normal approximation of the signed-rank statistic written out: T+ with mid-ranks, mean
    n(n+1)/4, variance n(n+1)(2n+1)/24 - sum(t^3 - t)/48 over tied groups."""
    d = np.asarray([v for v in d if v != 0], dtype=float)
    n = len(d)
    a = np.abs(d)
    ranks = np.array([np.sum(a < v) + (np.sum(a == v) + 1) / 2 for v in a])
    t_plus = ranks[d > 0].sum()
    _, ties = np.unique(a, return_counts=True)
    var = n * (n + 1) * (2 * n + 1) / 24 - np.sum(ties**3 - ties) / 48
    z = (t_plus - n * (n + 1) / 4) / np.sqrt(var)
    return z, 2 * sps.norm.sf(abs(z)), n


def test_wilcoxon_z_p_and_effect_size_by_hand():
    rng = np.random.default_rng(0)
    x = rng.normal(0.3, 1, 60).round(1)
    y = np.r_[x[:5], rng.normal(0, 1, 55).round(1)]              # five zero differences, ties
    z, p, n = _wilcoxon_by_hand(x - y)
    got = stats.wilcoxon_signed_rank(x, y)
    assert got["n_nonzero"] == n and n <= 55 and got["n_pairs"] == 60
    assert abs(got["z"]) == pytest.approx(abs(z), rel=1e-12) and got["p_value"] == pytest.approx(p, rel=1e-9)
    assert got["r"] == pytest.approx(z / np.sqrt(n), rel=1e-12)
    assert stats.wilcoxon_signed_rank(x, y, effect_n="pairs")["r"] == pytest.approx(got["r"] * np.sqrt(n / 60))
    assert stats.wilcoxon_signed_rank(y, x)["r"] == pytest.approx(-got["r"])
    for wrong in ("all", "nonzero"):                      # "nonzero" was the old name of "ranked"
        with pytest.raises(InputError, match="effect_n must be 'ranked' or 'pairs'"):
            stats.wilcoxon_signed_rank(x, y, effect_n=wrong)
    assert np.isnan(stats.wilcoxon_signed_rank(x, x)["p_value"])


def test_wilcoxon_effect_n_ranked_counts_the_zeros_that_pratt_ranks():
    rng = np.random.default_rng(2)
    d = np.r_[np.zeros(6), rng.normal(0.4, 1, 34).round(2)]
    z_pratt = sps.wilcoxon(d, zero_method="pratt", method="asymptotic").zstatistic
    for zero_method, n_ranked in (("wilcox", 34), ("pratt", 40), ("zsplit", 40)):
        got = stats.wilcoxon_signed_rank(d, zero_method=zero_method)
        assert abs(got["r"]) == pytest.approx(abs(got["z"]) / np.sqrt(n_ranked), rel=1e-12)
        pairs = stats.wilcoxon_signed_rank(d, zero_method=zero_method, effect_n="pairs")
        assert abs(pairs["r"]) == pytest.approx(abs(got["z"]) / np.sqrt(40), rel=1e-12)
    assert abs(stats.wilcoxon_signed_rank(d, zero_method="pratt")["z"]) == pytest.approx(abs(z_pratt), rel=1e-12)


def _exact_signed_rank_p(d):
    """Two-sided exact p of the signed-rank sum by enumerating all 2^n sign patterns (no ties, no zeros)."""
    import itertools

    ranks = sps.rankdata(np.abs(d))
    observed = ranks[d > 0].sum()
    sums = [sum(r for r, s in zip(ranks, signs) if s) for signs in itertools.product([0, 1], repeat=len(d))]
    low, high = np.mean([t <= observed for t in sums]), np.mean([t >= observed for t in sums])
    return min(1.0, 2 * min(low, high))


def test_wilcoxon_exact_p_equals_enumeration_and_z_stays_the_normal_approximation():
    rng = np.random.default_rng(5)
    x, y = rng.normal(0.5, 1, 12), rng.normal(0, 1, 12)
    asymptotic = stats.wilcoxon_signed_rank(x, y)
    exact = stats.wilcoxon_signed_rank(x, y, p_method="exact")
    assert exact["p_value"] == pytest.approx(_exact_signed_rank_p(x - y), rel=1e-12)
    assert exact["p_value"] != pytest.approx(asymptotic["p_value"], rel=1e-3)
    assert (exact["z"], exact["r"], exact["statistic"]) == (asymptotic["z"], asymptotic["r"], asymptotic["statistic"])
    assert stats.wilcoxon_signed_rank(x, y, p_method="auto")["p_value"] == pytest.approx(sps.wilcoxon(x, y).pvalue)
    with pytest.raises(InputError, match="p_method must be"):
        stats.wilcoxon_signed_rank(x, y, p_method="approx")


def _pairs(x, y):
    """Pairs (x_i, y_j) with x_i > y_j, with x_i < y_j, and tied, by a double loop."""
    above = sum(a > b for a in x for b in y)
    below = sum(a < b for a in x for b in y)
    return above, below, len(x) * len(y) - above - below


def test_mann_whitney_effect_sizes_by_pair_counts_and_z_against_scipy():
    rng = np.random.default_rng(8)
    x, y = rng.integers(0, 12, 40).astype(float), rng.integers(2, 14, 55).astype(float)   # many ties
    got = stats.mann_whitney(x, y)
    above, below, tied = _pairs(x, y)
    nm = 40 * 55
    assert got["u_statistic"] == above + tied / 2 and got["common_language"] == pytest.approx((above + tied / 2) / nm)
    assert got["rank_biserial"] == pytest.approx((above - below) / nm, abs=1e-12)          # Kerby 2014: f - u
    # z without continuity correction: its two-sided normal p is scipy's asymptotic p without correction
    plain = sps.mannwhitneyu(x, y, method="asymptotic", use_continuity=False).pvalue
    assert 2 * sps.norm.sf(abs(got["z"])) == pytest.approx(plain, rel=1e-10)
    assert got["z"] < 0 and got["r"] == pytest.approx(got["z"] / np.sqrt(95), rel=1e-12)
    # the p-value options are scipy's; the default is scipy's default call (upstream SafeNLP's)
    assert got["p_value"] == pytest.approx(sps.mannwhitneyu(x, y).pvalue, rel=1e-12)
    for method, continuity in (("asymptotic", False), ("asymptotic", True), ("exact", True)):
        want = sps.mannwhitneyu(x, y, method=method, use_continuity=continuity).pvalue
        res = stats.mann_whitney(x, y, p_method=method, use_continuity=continuity)
        assert res["p_value"] == pytest.approx(want, rel=1e-10)
        assert (res["z"], res["r"], res["rank_biserial"]) == (got["z"], got["r"], got["rank_biserial"])
    with pytest.raises(InputError, match="p_method must be"):
        stats.mann_whitney(x, y, p_method="permutation")


def test_mann_whitney_small_samples_auto_is_exact_and_empty_is_nan():
    x, y = [1.5, 3.2, 4.1, 7.7, 9.0], [0.2, 0.9, 1.1, 2.5, 3.0, 5.5]
    above, below, _ = _pairs(x, y)
    total = above + below
    # exact two-sided p by enumerating every split of the 11 values into 5 + 6 (no ties)
    import itertools

    pooled = x + y
    us = [sum(a > b for a in c for b in set(pooled) - set(c)) for c in itertools.combinations(pooled, 5)]
    exact = min(1.0, 2 * min(np.mean([u >= above for u in us]), np.mean([u <= above for u in us])))
    got = stats.mann_whitney(x, y)
    assert got["p_value"] == pytest.approx(exact, rel=1e-12) and total == 30
    assert got["p_value"] != pytest.approx(stats.mann_whitney(x, y, p_method="asymptotic")["p_value"], rel=1e-3)
    assert np.isnan(stats.mann_whitney([], y)["p_value"]) and np.isnan(stats.mann_whitney([2.0, 2.0], [2.0])["z"])


def test_bootstrap_difference_percentile_interval_by_hand():
    rng = np.random.default_rng(4)
    t, s = rng.normal(0, 1, 80), rng.normal(0.5, 1, 80)

    def stat(rows):
        return t[rows].mean(), s[rows].mean()

    got = stats.bootstrap_difference(stat, 80, n_resamples=2000, seed=3)
    assert got["difference"] == pytest.approx(s.mean() - t.mean())
    draws = np.random.default_rng(3).integers(0, 80, size=(2000, 80))   # scipy's resampling, written out
    diffs = np.array([s[r].mean() - t[r].mean() for r in draws])
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    assert abs(got["ci_low"] - lo) < 0.05 and abs(got["ci_high"] - hi) < 0.05   # same law, maybe other draws
    assert got["ci_low"] > 0 and stats.verdict(got["ci_low"], got["ci_high"]) == "amplified"
    both = stats.bootstrap_difference(lambda r: (np.array([t[r].mean(), t[r].std()]), np.array([s[r].mean(), s[r].std()])),
                                      80, n_resamples=2000, seed=3)
    assert both["ci_low"][0] == pytest.approx(got["ci_low"]) and both["difference"].shape == (2,)


@pytest.mark.parametrize("low, high, higher, expected", [
    (0.1, 0.3, True, "amplified"), (0.1, 0.3, False, "reduced"), (-0.3, -0.1, True, "reduced"),
    (-0.1, 0.2, True, "no detectable difference"), (np.nan, 0.2, True, "no detectable difference")])
def test_verdict(low, high, higher, expected):
    assert stats.verdict(low, high, higher_is_more_biased=higher) == expected


def test_holm_adjustment_equals_its_definition_and_keeps_rows_without_p():
    from helpers.stats import adjust_p_values

    p = [0.01, 0.04, np.nan, 0.03, 0.2]
    got = adjust_p_values(pd.DataFrame({"p_value": p}), method="holm", alpha=0.05)
    finite = [x for x in p if not np.isnan(x)]
    m, order = len(finite), np.argsort(finite)
    holm = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):                      # step-down: max over the smaller p-values
        running = max(running, min(1.0, (m - rank) * finite[i]))
        holm[i] = running
    np.testing.assert_allclose(got["p_adjusted"].dropna().to_numpy(), holm)
    assert np.isnan(got["p_adjusted"][2]) and not got["significant"][2]
    assert got["significant"].tolist() == [True, False, False, False, False]      # 0.04 (x4 = 0.16) is not
    with pytest.raises(InputError, match="unknown correction"):
        adjust_p_values(pd.DataFrame({"p_value": p}), method="nonsense")


def test_correlation_power_equals_a_simulation_of_the_test():
    """The exact power of the test of no correlation against the share of simulated bivariate-normal
    samples whose Pearson t test rejects (20,000 draws: Monte Carlo standard error about 0.004)."""
    rng = np.random.default_rng(3)
    for r, n in ((0.8, 6), (0.5, 20)):
        cov = [[1, r], [r, 1]]
        draws = rng.multivariate_normal([0, 0], cov, size=(20_000, n))
        x, y = draws[..., 0], draws[..., 1]
        xc, yc = x - x.mean(1, keepdims=True), y - y.mean(1, keepdims=True)
        rho = (xc * yc).sum(1) / np.sqrt((xc**2).sum(1) * (yc**2).sum(1))
        t = rho * np.sqrt((n - 2) / (1 - rho**2))
        rejected = (2 * sps.t.sf(np.abs(t), n - 2) < 0.05).mean()
        assert stats.correlation_power(r, n) == pytest.approx(rejected, abs=0.012)


def test_pairs_for_correlation_is_the_first_n_with_the_power():
    n = stats.pairs_for_correlation(0.8)
    assert stats.correlation_power(0.8, n) >= 0.8 > stats.correlation_power(0.8, n - 1)
    assert n == 9                                   # G*Power's exact test: r = .8, power .8, two-sided .05
    assert stats.pairs_for_correlation(0.3) == 84   # G*Power: 84 (Fisher z: 85)
    assert np.isnan(stats.correlation_power(0.5, 2))
    # the density is a density: it integrates to 1
    from scipy import integrate
    assert integrate.quad(stats.correlation_density, -1, 1, args=(0.6, 7))[0] == pytest.approx(1, abs=1e-6)
