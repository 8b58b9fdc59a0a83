"""CEAT against the authors' formulas transcribed by hand (ceat.py of weiguowilliam/CEAT:
Q, tau^2, weighted mean, one-sided p), WEAT on each draw, and the context finder."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from helpers.errors import InputError
from helpers.metrics import association, ceat


def _dl_by_hand(e, v):
    w = 1 / v
    q = np.sum(w * e**2) - np.sum(e * w) ** 2 / np.sum(w)
    df = len(e) - 1
    tau2 = (q - df) / (np.sum(w) - np.sum(w**2) / np.sum(w)) if q > df else 0.0
    w_star = 1 / (v + tau2)
    pes = np.sum(w_star * e) / np.sum(w_star)
    var = 1 / np.sum(w_star)
    return pes, var, stats.norm.sf(pes / np.sqrt(var)), tau2, q


@pytest.mark.parametrize("spread", [0.01, 1.0])          # homogeneous (tau^2 = 0) and heterogeneous effects
def test_random_effects_equals_the_authors_formulas(spread):
    rng = np.random.default_rng(2)
    e, v = rng.normal(0.4, spread, 50), rng.uniform(0.05, 0.2, 50)
    pes, var, p, tau2, q = _dl_by_hand(e, v)
    got = ceat.random_effects(e, v)
    assert got["effect"] == pytest.approx(pes, rel=1e-10) and got["variance"] == pytest.approx(var, rel=1e-10)
    assert got["p_value"] == pytest.approx(p, rel=1e-8) and got["tau2"] == pytest.approx(tau2, abs=1e-12)
    assert got["q"] == pytest.approx(q, rel=1e-10)
    assert (tau2 == 0) == (spread == 0.01)
    if tau2 > 0:                                        # statsmodels agrees when tau^2 needs no truncation
        from statsmodels.stats.meta_analysis import combine_effects

        sm = combine_effects(e, v, method_re="dl")
        assert got["effect"] == pytest.approx(sm.mean_effect_re, rel=1e-10)
        assert got["tau2"] == pytest.approx(sm.tau2, rel=1e-10)


def _vectors(seed=0):
    rng = np.random.default_rng(seed)
    axis = np.r_[1.0, np.zeros(7)]
    vec = {}
    for w, sign in [("x1", 1), ("x2", 1), ("x3", 1), ("y1", -1), ("y2", -1), ("y3", -1), ("a1", 1), ("a2", 1), ("b1", -1), ("b2", -1)]:
        vec[w] = rng.normal(size=(int(rng.integers(2, 6)), 8)) + 0.8 * sign * axis
    return vec


def test_ceat_draws_one_context_per_word_and_combines():
    vec = _vectors()
    X, Y, A, B = ["x1", "x2", "x3"], ["y1", "y2", "y3"], ["a1", "a2"], ["b1", "b2"]
    got = ceat.ceat(vec, X, Y, A, B, n_samples=200, seed=5)
    rng = np.random.default_rng(5)                       # the same draws, effect sizes by WEAT
    es, vs = [], []
    for _ in range(200):
        draw = {k: np.stack([vec[w][rng.integers(len(vec[w]))] for w in ws]) for k, ws in zip("XYAB", (X, Y, A, B))}
        es.append(association.weat(draw["X"], draw["Y"], draw["A"], draw["B"], n_resamples=1)["effect_size"])
        s = np.concatenate([association.association(draw[k], draw["A"], draw["B"]) for k in "XY"])
        vs.append(np.var(s, ddof=1))
    pes, var, p, _, _ = _dl_by_hand(np.array(es), np.array(vs))
    assert got["effect"] == pytest.approx(pes, rel=1e-9) and got["p_value"] == pytest.approx(p, rel=1e-6, abs=1e-300)
    assert got["mean_effect"] == pytest.approx(np.mean(es)) and got["effect"] > 1      # the planted association
    hedges = ceat.ceat(vec, X, Y, A, B, n_samples=200, seed=5, variance="hedges")
    assert hedges["effect"] != got["effect"] and hedges["mean_effect"] == pytest.approx(got["mean_effect"])


def test_ceat_bad_input_is_one_line():
    vec = _vectors()
    with pytest.raises(InputError, match="no contextual embedding for A word"):
        ceat.ceat(vec, ["x1", "x2"], ["y1"], ["zz"], ["b1"])
    with pytest.raises(InputError, match="the Y word set is empty"):
        ceat.ceat(vec, ["x1"], [], ["a1"], ["b1"])
    with pytest.raises(InputError, match="variance must be"):
        ceat.ceat(vec, ["x1"], ["y1"], ["a1"], ["b1"], variance="pooled")


def _cos(u, v):
    return u @ v / np.linalg.norm(u) / np.linalg.norm(v)


def _sc_weat(w, A, B):
    """Caliskan et al.'s single-category WEAT of one vector, by hand from cosines."""
    c = np.array([_cos(w, y) for y in list(A) + list(B)])
    return (c[:len(A)].mean() - c[len(A):].mean()) / c.std(ddof=1), c.var(ddof=1)


def test_ceat_group_of_one_word_with_one_context_each_is_sc_weat_by_hand():
    rng = np.random.default_rng(3)
    vec = {w: rng.normal(size=(1, 6)) for w in ["g1", "g2", "g3", "a1", "a2", "b1", "b2", "b3"]}
    A, B = [vec[w][0] for w in ("a1", "a2")], [vec[w][0] for w in ("b1", "b2", "b3")]
    got = ceat.ceat_group(vec, ["g1"], ["a1", "a2"], ["b1", "b2", "b3"], n_samples=5, seed=0)
    es, _ = _sc_weat(vec["g1"][0], A, B)
    assert got["effect"] == pytest.approx(es, rel=1e-9) and got["tau2"] == 0
    assert got["mean_effect"] == pytest.approx(es, rel=1e-9)
    # a group of three words: SC-WEAT of the mean of their unit vectors (mean cosines)
    three = ceat.ceat_group(vec, ["g1", "g2", "g3"], ["a1", "a2"], ["b1", "b2", "b3"], n_samples=5, seed=0)
    c = np.array([np.mean([_cos(vec[g][0], y) for g in ("g1", "g2", "g3")]) for y in A + B])
    assert three["effect"] == pytest.approx((c[:2].mean() - c[2:].mean()) / c.std(ddof=1), rel=1e-9)


def test_ceat_group_equals_a_loop_over_draws_of_sc_weat():
    rng = np.random.default_rng(1)
    vec = {w: rng.normal(size=(int(rng.integers(2, 6)), 5)) for w in ["g", "a1", "a2", "a3", "b1", "b2"]}
    A, B = ["a1", "a2", "a3"], ["b1", "b2"]
    for variance in ("upstream", "hedges"):
        got = ceat.ceat_group(vec, ["g"], A, B, n_samples=300, seed=9, variance=variance)
        draw = np.random.default_rng(9)                  # the function's protocol: per word, all draws at once
        idx = {w: draw.integers(len(vec[w]), size=300) for w in ["g"] + A + B}
        es, vs = [], []
        for i in range(300):
            e, v = _sc_weat(vec["g"][idx["g"][i]], [vec[w][idx[w][i]] for w in A], [vec[w][idx[w][i]] for w in B])
            es.append(e)
            vs.append(v if variance == "upstream" else 5 / 6 + e**2 / 10)
        pes, var, p, _, _ = _dl_by_hand(np.array(es), np.array(vs))
        assert got["effect"] == pytest.approx(pes, rel=1e-9) and got["variance"] == pytest.approx(var, rel=1e-9)
        assert got["mean_effect"] == pytest.approx(np.mean(es), rel=1e-9)


def test_ceat_group_stays_within_the_sc_weat_bound_when_a_groups_few_contexts_nearly_coincide():
    """The wrong number of chapter 06 (Amish, three contexts, -3,420 on one model): vectors sharing a
    large common direction (as a small model's are) and a group whose contexts nearly coincide.
    Standardised over the attribute words, every draw's effect and so the combined one lie within
    sqrt((n - 1) n / (n_A n_B)); the old statistic, standardised over the group's 8 drawn vectors
    (3 distinct), was unbounded."""
    rng = np.random.default_rng(4)
    common = 30 * rng.normal(size=64)
    base = common + rng.normal(size=64)
    vec = {"amish": base + 1e-4 * rng.normal(size=(3, 64)),
           **{f"a{i}": common + rng.normal(size=(4, 64)) + 0.3 * base for i in range(25)},
           **{f"b{i}": common + rng.normal(size=(4, 64)) for i in range(25)}}
    A, B = [f"a{i}" for i in range(25)], [f"b{i}" for i in range(25)]
    got = ceat.ceat_group(vec, ["amish"], A, B, n_samples=400)
    assert abs(got["effect"]) <= np.sqrt(49 * 50 / 625) and got["effect"] > 0.5       # near A, bounded
    assert np.isfinite(got["variance"]) and got["variance"] > 0
    # the old statistic on the same draws: mean / sd of s(x, A, B) over 8 vectors drawn from 3 contexts
    unit = {w: v / np.linalg.norm(v, axis=1, keepdims=True) for w, v in vec.items()}
    diff = np.mean([u.mean(0) for w, u in unit.items() if w[0] == "a"], 0) - np.mean(
        [u.mean(0) for w, u in unit.items() if w[0] == "b"], 0)
    s = unit["amish"][[0, 1, 2, 0, 1, 2, 0, 1]] @ diff
    assert abs(s.mean() / s.std(ddof=1)) > 50 * np.sqrt(49 * 50 / 625)


def test_ceat_group_sign_follows_the_planted_association_and_bad_input():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=16), rng.normal(size=16)
    vec = {"pos": a + 0.5 * rng.normal(size=(20, 16)), "neg": b + 0.5 * rng.normal(size=(20, 16)),
           **{f"a{i}": a + 0.5 * rng.normal(size=(5, 16)) for i in range(4)},
           **{f"b{i}": b + 0.5 * rng.normal(size=(5, 16)) for i in range(4)}}
    A, B = [f"a{i}" for i in range(4)], [f"b{i}" for i in range(4)]
    near_a = ceat.ceat_group(vec, ["pos"], A, B, n_samples=50)
    near_b = ceat.ceat_group(vec, ["neg"], A, B, n_samples=50, variance="hedges")
    assert near_a["effect"] > 1 and near_a["p_value"] < 0.01 and near_b["effect"] < -1 and near_b["p_value"] > 0.99
    with pytest.raises(InputError, match="no contextual embedding for X word"):
        ceat.ceat_group(vec, ["nobody"], A, B)
    same = {w: a[None, :] for w in ("s1", "s2", "s3")}
    with pytest.raises(InputError, match="identical associations"):
        ceat.ceat_group(vec | same, ["pos"], ["s1", "s2"], ["s3"])
    with pytest.raises(InputError, match="n_samples"):
        ceat.ceat_group(vec, ["pos"], A, B, n_samples=1)


def test_find_contexts_whole_words_seeded_and_capped():
    texts = ["The nurse came.", "nurses are here", "A NURSE, a doctor", "the doctor nurse", "no match", "nurse"] * 3
    got = ceat.find_contexts(texts, ["nurse", "doctor"], per_word=4, seed=1)
    nurse = got.loc[got.word == "nurse", "text"].tolist()
    assert len(nurse) == 4 and all("nurses are here" != t for t in nurse)
    assert nurse == ceat.find_contexts(texts, ["nurse"], per_word=4, seed=1)["text"].tolist()
    assert len(got[got.word == "doctor"]) == 4 and ceat.find_contexts(texts, ["pilot"]).empty


def test_find_contexts_substring_prefilter_never_drops_a_regex_match():
    """The prefilter's claim, over every code point: a character ``re`` matches case-insensitively
    to an ASCII letter lower-cases (dotless i, dotted capital I and long s folded first) to that letter."""
    import re
    import string

    for a in string.ascii_letters:
        p = re.compile(a, re.IGNORECASE)
        assert all(c.translate(ceat._ASCII_FOLD).lower() == a.lower()
                   for c in map(chr, range(0x110000)) if p.fullmatch(c)), a
    texts = ["The NURSE came.", "a nurſe", "Chrıstian values", "CHRİSTIAN", "nurses only", "nurse"]
    got = ceat.find_contexts(texts, ["nurse", "christian"], per_word=10)
    assert got.groupby("word")["text"].apply(list).to_dict() == {
        "christian": ["Chrıstian values", "CHRİSTIAN"], "nurse": ["The NURSE came.", "a nurſe", "nurse"]}
