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
