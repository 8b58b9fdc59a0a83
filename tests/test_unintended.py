"""Unintended-bias metrics against brute-force loops: rates by counting, AUCs by counting
ordered pairs (Mann-Whitney), Fisher's exact test by summing hypergeometric tables, the
z-test against statsmodels, and Holm's correction by hand."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from helpers.errors import InputError
from helpers.metrics import unintended as ub


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    n = 400
    identity = rng.choice(["gay", "muslim", "american", "tall"], size=n)
    y = rng.integers(0, 2, size=n)
    bump = np.where(identity == "gay", 0.25, 0.0) + np.where(identity == "muslim", 0.1, 0.0)
    s = np.clip(0.35 * y + 0.3 + bump + rng.normal(0, 0.2, size=n), 0, 1).round(2)   # rounded: ties
    membership = pd.DataFrame({g: identity == g for g in ["gay", "muslim", "american", "tall"]})
    return y, s, membership


def _auc(y, s):
    pos, neg = s[y == 1], s[y == 0]
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


def test_identity_metrics_equal_counting(data):
    y, s, m = data
    got = ub.identity_metrics(y, s, m, threshold=0.5).set_index("identity")
    for g in m.columns:
        sub = m[g].to_numpy()
        neg = [s[i] >= 0.5 for i in range(len(y)) if sub[i] and y[i] == 0]
        pos = [s[i] < 0.5 for i in range(len(y)) if sub[i] and y[i] == 1]
        assert got.loc[g, "fpr"] == pytest.approx(sum(neg) / len(neg))
        assert got.loc[g, "fnr"] == pytest.approx(sum(pos) / len(pos))
        assert got.loc[g, "subgroup_auc"] == pytest.approx(_auc(y[sub], s[sub]))
        bpsn = (sub & (y == 0)) | (~sub & (y == 1))
        bnsp = (sub & (y == 1)) | (~sub & (y == 0))
        assert got.loc[g, "bpsn_auc"] == pytest.approx(_auc(y[bpsn], s[bpsn]))
        assert got.loc[g, "bnsp_auc"] == pytest.approx(_auc(y[bnsp], s[bnsp]))
    from sklearn.metrics import roc_auc_score

    assert got.loc["overall", "subgroup_auc"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert got.loc["gay", "fpr"] > got.loc["tall", "fpr"]         # the planted bias shows
    assert got.loc["gay", "bpsn_auc"] < got.loc["tall", "bpsn_auc"]


def test_equality_differences_are_sums_of_absolute_gaps(data):
    y, s, m = data
    table = ub.identity_metrics(y, s, m)
    got = ub.equality_differences(table).set_index("metric")["value"]
    overall, groups = table.iloc[0], table.iloc[1:]
    assert got["fped"] == pytest.approx(sum(abs(overall.fpr - r) for r in groups.fpr))
    assert got["fned"] == pytest.approx(sum(abs(overall.fnr - r) for r in groups.fnr))
    for name, col in (("subgroup_auc_ed", "subgroup_auc"), ("bpsn_auc_ed", "bpsn_auc"), ("bnsp_auc_ed", "bnsp_auc")):
        assert got[name] == pytest.approx(sum(abs(overall.subgroup_auc - r) for r in groups[col]))


def test_equal_error_threshold_minimises_the_gap(data):
    y, s, _ = data
    t = ub.equal_error_threshold(y, s)

    def gap(th):
        pred = s >= th
        return abs(pred[y == 0].mean() - (~pred[y == 1]).mean())

    best = min(gap(th) for th in np.unique(s))
    assert gap(t) == pytest.approx(best)
    at = ub.identity_metrics(y, s, pd.DataFrame({"all": np.ones(len(y), bool)}), threshold="equal-error")
    assert at.attrs["threshold"] == t


def _fisher_brute(a, b, c, d):
    """Two-sided Fisher p: the sum of the probabilities of all tables with the same margins
    that are no more likely than the observed one."""
    row1, col1, n = a + b, a + c, a + b + c + d

    def pmf(x):
        return math.comb(col1, x) * math.comb(n - col1, row1 - x) / math.comb(n, row1)

    observed = pmf(a)
    lo, hi = max(0, row1 + col1 - n), min(row1, col1)
    return sum(pmf(x) for x in range(lo, hi + 1) if pmf(x) <= observed * (1 + 1e-7))


@pytest.mark.parametrize("rate", ["fpr", "fnr"])
def test_pairwise_fisher_and_holm_equal_brute_force(data, rate):
    y, s, m = data
    got = ub.pairwise_rate_tests(y, s, m, rate=rate)
    pool = y == (0 if rate == "fpr" else 1)
    err = (s >= 0.5) if rate == "fpr" else (s < 0.5)
    ps = []
    for a, b in itertools.combinations(m.columns, 2):
        ka, na = int((err & pool & m[a]).sum()), int((pool & m[a]).sum())
        kb, nb = int((err & pool & m[b]).sum()), int((pool & m[b]).sum())
        ps.append(_fisher_brute(ka, na - ka, kb, nb - kb))
    assert got["p_value"].to_numpy() == pytest.approx(ps, rel=1e-9)
    order = np.argsort(ps)                       # Holm: step-down, monotone, capped at 1
    adjusted, running = np.empty(len(ps)), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adjusted[i] = running
    assert got["p_adjusted"].to_numpy() == pytest.approx(adjusted, rel=1e-9)


def test_pairwise_ztest_equals_statsmodels(data):
    from statsmodels.stats.proportion import proportions_ztest

    y, s, m = data
    got = ub.pairwise_rate_tests(y, s, m, test="ztest", correction="bonferroni")
    row = got.iloc[0]
    pool = y == 0
    counts = [int(((s >= 0.5) & pool & m[g]).sum()) for g in (row.identity_a, row.identity_b)]
    _, p = proportions_ztest(counts, [row.n_a, row.n_b])
    assert row.p_value == pytest.approx(p, rel=1e-9)
    assert got["p_adjusted"].to_numpy() == pytest.approx(np.minimum(1, got["p_value"] * len(got)))


@pytest.mark.parametrize("kwargs, fragment", [
    ({"threshold": 1.5}, "threshold must be"), ({"threshold": "eer"}, "threshold must be"),
    ({"rate": "tpr"}, "rate must be"), ({"test": "chi2"}, "test must be"), ({"correction": "nope"}, "unknown correction")])
def test_bad_options_are_one_line(data, kwargs, fragment):
    y, s, m = data
    with pytest.raises(InputError, match=fragment):
        ub.pairwise_rate_tests(y, s, m, **kwargs)


def test_bad_arrays_are_one_line(data):
    y, s, m = data
    with pytest.raises(InputError, match="0 \\(non-toxic\\) or 1"):
        ub.identity_metrics(y * 2, s, m)
    with pytest.raises(InputError, match="same length"):
        ub.identity_metrics(y, s[:-1], m)
    with pytest.raises(InputError, match="one row per example"):
        ub.identity_metrics(y, s, m.iloc[:-1])


def test_average_equality_gaps_equal_pair_counts_and_jigsaws_mannwhitneyu(data):
    from scipy import stats as sps

    y, s, m = data
    got = ub.identity_metrics(y, s, m).set_index("identity")
    for g in m.columns:
        sub = m[g].to_numpy()
        for column, label in (("negative_aeg", 0), ("positive_aeg", 1)):
            ident, background = s[sub & (y == label)], s[~sub & (y == label)]
            higher = sum((a > b) + 0.5 * (a == b) for a in ident for b in background)   # pairs, ties 1/2
            assert got.loc[g, column] == pytest.approx(higher / (len(ident) * len(background)) - 0.5, abs=1e-12)
            # Jigsaw's compute_*_aeg: 0.5 - normalized_mwu(background, subgroup)
            u = sps.mannwhitneyu(background, ident, alternative="less").statistic
            assert got.loc[g, column] == pytest.approx(0.5 - u / (len(ident) * len(background)), abs=1e-12)
    assert got.loc["gay", "negative_aeg"] > 0.1 > 0 > got.loc["tall", "negative_aeg"]   # the planted bias
    assert got.loc["overall", ["negative_aeg", "positive_aeg"]].isna().all()
    only_toxic = pd.DataFrame({"toxic-only": y == 1})
    assert np.isnan(ub.identity_metrics(y, s, only_toxic).loc[1, "negative_aeg"])


@pytest.fixture
def at_threshold():
    """Scores on a 0.05 grid, so that many sit exactly at 0.5 (and at other grid thresholds)."""
    rng = np.random.default_rng(3)
    n = 600
    identity = rng.choice(["a", "b", "c"], size=n)
    y = rng.integers(0, 2, size=n)
    s = np.clip(np.round((0.3 * y + 0.35 + rng.normal(0, 0.15, size=n)) * 20) / 20, 0, 1)
    return y, s, pd.DataFrame({g: identity == g for g in "abc"})


@pytest.mark.parametrize("rule", [">=", ">"])
def test_threshold_rule_decides_scores_at_the_threshold(at_threshold, rule):
    y, s, m = at_threshold
    assert (s == 0.5).sum() > 20
    got = ub.identity_metrics(y, s, m, threshold=0.5, threshold_rule=rule).set_index("identity")
    flagged = [(v >= 0.5) if rule == ">=" else (v > 0.5) for v in s]
    for g in ["overall", *m.columns]:
        rows = range(len(y)) if g == "overall" else np.flatnonzero(m[g].to_numpy())
        fp = [flagged[i] for i in rows if y[i] == 0]
        fn = [not flagged[i] for i in rows if y[i] == 1]
        assert got.loc[g, "fpr"] == pytest.approx(sum(fp) / len(fp), abs=1e-15)
        assert got.loc[g, "fnr"] == pytest.approx(sum(fn) / len(fn), abs=1e-15)
    assert got.attrs["threshold_rule"] == rule
    tests = ub.pairwise_rate_tests(y, s, m, rate="fpr", threshold=0.5, threshold_rule=rule)
    assert tests["rate_a"].tolist() == pytest.approx([got.loc[a, "fpr"] for a in tests["identity_a"]])


def test_threshold_rules_differ_only_at_the_threshold_and_equal_error_keeps_its_point(at_threshold):
    y, s, m = at_threshold
    ge = ub.equality_differences(ub.identity_metrics(y, s, m, threshold_rule=">=")).set_index("metric")["value"]
    gt = ub.equality_differences(ub.identity_metrics(y, s, m, threshold_rule=">")).set_index("metric")["value"]
    assert ge["fped"] != gt["fped"] and ge["fned"] != gt["fned"]
    assert ge[["subgroup_auc_ed", "bpsn_auc_ed", "bnsp_auc_ed"]].tolist() == \
        gt[["subgroup_auc_ed", "bpsn_auc_ed", "bnsp_auc_ed"]].tolist()
    off_grid = ub.identity_metrics(y, s, m, threshold=0.52, threshold_rule=">")
    assert off_grid.equals(ub.identity_metrics(y, s, m, threshold=0.52))
    t_ge = ub.equal_error_threshold(y, s)
    t_gt = ub.equal_error_threshold(y, s, threshold_rule=">")
    assert t_gt == max(v for v in s if v < t_ge)                     # the next lower score: same flagged set
    a = ub.identity_metrics(y, s, m, threshold="equal-error")
    b = ub.identity_metrics(y, s, m, threshold="equal-error", threshold_rule=">")
    assert a[["fpr", "fnr"]].equals(b[["fpr", "fnr"]])
    with pytest.raises(InputError, match="threshold_rule must be"):
        ub.identity_metrics(y, s, m, threshold_rule="=>")
