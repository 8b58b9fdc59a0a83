"""helpers.stats against independent computations (scipy, numpy, Fisher z by hand)."""

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
    with pytest.raises(InputError, match="effect_n"):
        stats.wilcoxon_signed_rank(x, y, effect_n="all")
    assert np.isnan(stats.wilcoxon_signed_rank(x, x)["p_value"])


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
