"""Seed 001's group variance and its correlation across models (helpers.metrics.disparity),
against numpy / scipy computed directly; VADER with BOLD's thresholds against the library."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers.errors import InputError
from helpers.metrics import disparity
from helpers.models import text_classifiers


def _scores(seed=0, models=6):
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(models):
        for dom, groups in {"gender": ["female", "male"], "race": ["asian", "black", "white"]}.items():
            for g in groups:
                for metric in ("ceat", "ilps", "b_sent"):
                    rows.append({"model": f"m{m}", "domain": dom, "group": g, "metric": metric,
                                 "score": rng.normal()})
    return pd.DataFrame(rows)


def test_group_scores_are_means_with_counts_and_missing_values_counted():
    items = pd.DataFrame({"model": ["a"] * 5, "domain": ["race"] * 5, "group": ["x", "x", "y", "y", "y"],
                          "value": [1.0, 3.0, 2.0, np.nan, 5.0]})
    got = disparity.group_scores(items, "value")
    assert got[["group", "score", "n", "n_missing"]].values.tolist() == [["x", 2.0, 2, 0], ["y", 3.5, 2, 1]]


@pytest.mark.parametrize("ddof", [0, 1])
def test_group_variance_equals_numpy_per_model_and_domain(ddof):
    s = _scores()
    got = disparity.group_variance(s, by=("model", "domain", "metric"), ddof=ddof)
    for _, row in got.iterrows():
        part = s[(s.model == row.model) & (s.domain == row.domain) & (s.metric == row.metric)]
        assert row.variance == pytest.approx(np.var(part.score.to_numpy(), ddof=ddof), rel=1e-12)
        assert row.n_groups == len(part)
    assert len(got) == 6 * 2 * 3


def test_variance_correlations_equal_scipy_and_do_not_depend_on_the_divisor():
    s = _scores(models=8)
    v0 = disparity.group_variance(s, by=("model", "domain", "metric"), ddof=0)
    v1 = disparity.group_variance(s, by=("model", "domain", "metric"), ddof=1)
    r0 = disparity.variance_correlations(v0, ["ceat", "ilps"], ["b_sent"])
    r1 = disparity.variance_correlations(v1, ["ceat", "ilps"], ["b_sent"])
    assert np.allclose(r0["r"], r1["r"]) and len(r0) == 2 * 2 * 2
    row = r0[(r0.domain == "race") & (r0.intrinsic == "ilps") & (r0.method == "pearson")].iloc[0]
    wide = v0[v0.domain == "race"].pivot(index="model", columns="metric", values="variance")
    ref = stats.pearsonr(wide["ilps"], wide["b_sent"])
    ci = ref.confidence_interval(0.95)
    assert (row.n, row.r, row.p_value) == (8, pytest.approx(ref.statistic), pytest.approx(ref.pvalue))
    assert (row.ci_low, row.ci_high) == (pytest.approx(ci.low), pytest.approx(ci.high))
    rho = r0[(r0.domain == "race") & (r0.intrinsic == "ilps") & (r0.method == "spearman")].iloc[0]
    assert rho.r == pytest.approx(stats.spearmanr(wide["ilps"], wide["b_sent"]).statistic)


def test_bad_input_is_one_line():
    s = _scores()
    with pytest.raises(InputError, match="one scored group|1 scored group"):
        disparity.group_variance(s[s.group != "male"], by=("model", "domain", "metric"))
    one_gender = s[s.group != "male"]
    kept = disparity.group_variance(one_gender, by=("model", "domain", "metric"), too_few="skip")
    full = disparity.group_variance(s, by=("model", "domain", "metric"))
    assert "gender" not in set(kept["domain"]) and len(kept) == (full["domain"] != "gender").sum()
    assert {k["domain"] for k in kept.attrs["skipped"]} == {"gender"}
    assert len(kept.attrs["skipped"]) == len(full) - len(kept)
    with pytest.raises(InputError, match="too_few"):
        disparity.group_variance(s, too_few="ignore")
    with pytest.raises(InputError, match="missing column"):
        disparity.group_variance(s.drop(columns="group"))
    with pytest.raises(InputError, match="ddof"):
        disparity.group_variance(s, by=("model", "domain", "metric"), ddof=2)
    v = disparity.group_variance(s, by=("model", "domain", "metric"))
    with pytest.raises(InputError, match="b_tox"):
        disparity.variance_correlations(v, ["ceat"], ["b_tox"])
    with pytest.raises(InputError, match="holds no number"):
        disparity.group_scores(s.assign(score="x"), "score")


@pytest.mark.parametrize("threshold", [0.5, 0.05])
def test_vader_sentiment_uses_the_threshold_on_vaders_compound(threshold):
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    texts = ["The woman was a wonderful, kind and brilliant writer.", "He was a terrible, cruel man.",
             "The engineer worked as a clerk.", "It was okay.", "She was not bad at all."]
    got = text_classifiers.vader_sentiment(threshold)(pd.DataFrame({"text": texts}))
    sia = SentimentIntensityAnalyzer()
    compound = [sia.polarity_scores(t)["compound"] for t in texts]
    want = ["positive" if c >= threshold else "negative" if c <= -threshold else "neutral" for c in compound]
    assert got["sentiment_label"].tolist() == want and np.allclose(got["sentiment_score"], compound)
    with pytest.raises(InputError, match="threshold"):
        text_classifiers.vader_sentiment(1.5)
