"""The classifier quality gate (issue 25), against scikit-learn on the same items and resamples."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics

from helpers.errors import InputError
from helpers.metrics import classifier_quality as cq


def _data(n=600, share=0.88, signal=1.0, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < share).astype(int)
    p = 1 / (1 + np.exp(-(signal * (2 * y - 1) + rng.normal(0, 1, n))))
    return y, p


def test_values_are_scikit_learns():
    y, p = _data()
    out = cq.classifier_gate(y, p, threshold=0.6, n_resamples=50).set_index("metric")
    pred = (p >= 0.6).astype(int)
    assert out.loc["macro_f1", "value"] == pytest.approx(metrics.f1_score(y, pred, average="macro"))
    assert out.loc["balanced_accuracy", "value"] == pytest.approx(metrics.balanced_accuracy_score(y, pred))
    assert out.loc["auc", "value"] == pytest.approx(metrics.roc_auc_score(y, p))
    assert out.loc["accuracy", "value"] == pytest.approx(metrics.accuracy_score(y, pred))


def test_each_resample_equals_scikit_learn_on_the_same_stratified_items():
    y, p = _data(n=300, seed=3)
    p[:40] = 0.5                                            # ties at the threshold and in the ranks
    got = cq._bootstrap(y, p, 0.5, 7, np.random.default_rng(11))
    rng = np.random.default_rng(11)                         # the same draws, item by item
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    ip = pos[rng.integers(0, pos.size, (7, pos.size))]
    ineg = neg[rng.integers(0, neg.size, (7, neg.size))]
    for b in range(7):
        idx = np.concatenate([ip[b], ineg[b]])
        yy, pp = y[idx], p[idx]
        pred = (pp >= 0.5).astype(int)
        assert int(yy.sum()) == pos.size                    # stratified: the class counts are kept
        assert got["macro_f1"][b] == pytest.approx(metrics.f1_score(yy, pred, average="macro", zero_division=0))
        assert got["balanced_accuracy"][b] == pytest.approx(metrics.balanced_accuracy_score(yy, pred))
        assert got["auc"][b] == pytest.approx(metrics.roc_auc_score(yy, pp))
        assert got["accuracy"][b] == pytest.approx(metrics.accuracy_score(yy, pred))


def test_a_majority_class_predictor_fails_and_a_real_classifier_passes():
    """Issue 25: chapter 05's hate teacher had accuracy 0.877 below the 0.882 majority share, recall
    0.99 and macro F1 0.505, yet weighted F1 0.833: the gate must reject that shape."""
    y, _ = _data(n=800, share=0.882, seed=1)
    rng = np.random.default_rng(2)
    majority = np.where(rng.random(y.size) < 0.99, 0.9, 0.1)      # "toxic" for almost everything, no signal
    gate = cq.classifier_gate(y, majority, n_resamples=300).set_index("metric")
    share = y.mean()
    constant = metrics.f1_score(y, np.ones_like(y), average="macro")
    assert gate.loc["macro_f1", "baseline"] == pytest.approx(constant)          # share / (1 + share)
    assert gate.loc["macro_f1", "baseline"] == pytest.approx(share / (1 + share))
    assert gate.loc["accuracy", "baseline"] == pytest.approx(share)
    assert not gate.attrs["usable"] and not gate.loc["balanced_accuracy", "passes"]
    assert metrics.f1_score(y, (majority >= 0.5).astype(int), average="weighted") > 0.8   # looks fine weighted
    y, p = _data(n=800, share=0.882, signal=2.0, seed=4)
    good = cq.classifier_gate(y, p, n_resamples=300)
    assert good.attrs["usable"] and good["passes"].dropna().all()
    assert (good["ci_low"] <= good["value"]).all() and (good["value"] <= good["ci_high"]).all()


def test_margin_decides_against_the_lower_end_of_the_interval():
    y, p = _data(n=400, signal=0.6, seed=5)
    out = cq.classifier_gate(y, p, n_resamples=200, margin=0.0).set_index("metric")
    strict = cq.classifier_gate(y, p, n_resamples=200, margin=0.4).set_index("metric")
    for m in cq.GATE_METRICS:
        assert out.loc[m, "passes"] == (out.loc[m, "ci_low"] > out.loc[m, "baseline"])
        assert not strict.loc[m, "passes"]
    assert cq.classifier_gate(y, p, n_resamples=0).set_index("metric").loc["auc", "passes"] == (
        metrics.roc_auc_score(y, p) > 0.55)               # no resampling: the value itself is gated


@pytest.mark.parametrize("y, p, message", [
    ([1, 1, 1], [0.2, 0.5, 0.9], "only one class"),
    ([0, 1], [0.2, 0.5, 0.9], "differ in shape"),
    ([0, 2, 1], [0.2, 0.5, 0.9], "must be 0 or 1"),
    ([0, 1, 1], [0.2, np.nan, 0.9], "NaN"),
])
def test_bad_input_is_one_line(y, p, message):
    with pytest.raises(InputError, match=message):
        cq.classifier_gate(y, p)


def _gate(good: bool, **columns):
    y, p = _data(signal=3.0 if good else 0.0)
    g = cq.classifier_gate(y, p, n_resamples=200)
    return g.assign(usable=g.attrs["usable"], **columns)


def test_the_three_chapters_state_one_gate_rule_and_the_mlma_bound_only_where_an_mlma_classifier_fails():
    """Chapters 05-07 word the gate with report.classifier_gate_rule; the offline MLMA bound is
    added when (and only when) an MLMA English classifier fails: ch05's hate models, ch07's English
    classifier when it is MLMA's alone (issue 36: its default is a substitute mix, and ch06's ToxD
    probe trains on that mix, so a failing ToxD gets its own note instead)."""
    import pandas as pd

    from helpers import report
    from helpers.chapters import ch05_tinybert as ch05, ch06_intrinsic_extrinsic as ch06, ch07_probing as ch07

    assert _gate(True).attrs["usable"] and not _gate(False).attrs["usable"]
    rule = report.classifier_gate_rule(cq.MARGIN, where="W")
    assert rule == ("W, the 95 % interval of its macro F1 must clear the majority-class predictor's, and those of its "
                    "balanced accuracy and AUC chance (0.5), each by 0.05")

    def ch05_table(hate_ok, sentiment_ok):
        return pd.concat([_gate(ok, task=t, model=m, data=f"{t} test split") for t, ok in
                          (("hate", hate_ok), ("sentiment", sentiment_ok)) for m in ("teacher", "student")])

    def ch06_table(ok):
        return pd.concat([_gate(ok[e], extrinsic=e, model="m", classifier="c", data="d") for e in ("ToxD", "HateX")])

    def ch07_table(ok):
        return pd.concat([_gate(v, language=lang) for lang, v in ok.items()])

    cases = [(ch05.gate_sentence, ch05_table(False, True), True), (ch05.gate_sentence, ch05_table(True, False), False),
             (ch06.gate_sentence, ch06_table({"ToxD": False, "HateX": True}), False),
             (ch06.gate_sentence, ch06_table({"ToxD": True, "HateX": False}), False),
             (ch07.gate_sentence, ch07_table({"en": False, "fr": True}), True),
             (ch07.gate_sentence, ch07_table({"en": True, "fr": False}), False)]
    for sentence, table, bound in cases:
        text = sentence(table)
        assert "the 95 % interval of its macro F1 must clear the majority-class predictor's" in text
        assert (report.MLMA_OFFLINE_BOUND in text) is bound, text
    assert ch06.TOXD_OFFLINE_NOTE in ch06.gate_sentence(ch06_table({"ToxD": False, "HateX": True}))
    assert ch06.TOXD_OFFLINE_NOTE not in ch06.gate_sentence(ch06_table({"ToxD": True, "HateX": False}))
    substitute = ch07_table({"en": False, "fr": True}).assign(classifier="a mix (substitute for the paper's four)")
    assert report.MLMA_OFFLINE_BOUND not in ch07.gate_sentence(substitute)
