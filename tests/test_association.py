"""WEAT / SEAT against a brute-force transcription of the definitions (every partition
enumerated with itertools, cosines by hand), and the SEAT driver on a fake encoder."""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pandas as pd
import pytest

from helpers.errors import InputError
from helpers.metrics import association as assoc


def _cos(u, v) -> float:
    return float(np.dot(u, v) / math.sqrt(np.dot(u, u) * np.dot(v, v)))


def _s(w, A, B) -> float:
    return statistics.fmean(_cos(w, a) for a in A) - statistics.fmean(_cos(w, b) for b in B)


def _brute(X, Y, A, B):
    """Caliskan et al.'s effect size (sample sd) and May et al.'s exact p: the share of
    partitions whose sum over X' is >= the observed one."""
    s = {i: _s(w, A, B) for i, w in enumerate(list(X) + list(Y))}
    sx, sy = [s[i] for i in range(len(X))], [s[i] for i in range(len(X), len(s))]
    d = (statistics.fmean(sx) - statistics.fmean(sy)) / statistics.stdev(list(s.values()))
    observed = sum(sx)
    hits = total = 0
    for part in itertools.combinations(range(len(s)), len(X)):
        total += 1
        hits += sum(s[i] for i in part) >= observed - 1e-12
    return d, hits / total, total


@pytest.fixture
def sets():
    rng = np.random.default_rng(3)
    shift = np.r_[1.0, np.zeros(7)]
    X, Y = rng.normal(size=(6, 8)) + 0.6 * shift, rng.normal(size=(6, 8)) - 0.6 * shift
    A, B = rng.normal(size=(5, 8)) + shift, rng.normal(size=(4, 8)) - shift
    return X, Y, A, B


def test_exact_effect_size_and_p_equal_brute_force(sets):
    X, Y, A, B = sets
    d, p, n = _brute(X, Y, A, B)
    got = assoc.weat(X, Y, A, B)
    assert got["effect_size"] == pytest.approx(d, abs=1e-12)
    assert got["p_value"] == pytest.approx(p, abs=1e-12)
    assert (got["p_method"], got["n_partitions"]) == ("exact", n) and n == math.comb(12, 6)
    assert got["effect_size"] > 0.5 and got["p_value"] < 0.05      # the planted association is found


def test_unequal_sizes_and_population_sd(sets):
    X, Y, A, B = sets
    d, p, _ = _brute(X[:4], Y, A, B)
    got = assoc.weat(X[:4], Y, A, B)
    assert got["p_value"] == pytest.approx(p, abs=1e-12) and got["effect_size"] == pytest.approx(d, abs=1e-12)
    n = 10
    pop = assoc.weat(X[:4], Y, A, B, ddof=0)["effect_size"]
    assert pop == pytest.approx(d * math.sqrt(n / (n - 1)), rel=1e-12)


def test_sampled_p_is_seeded_and_close_to_exact(sets):
    X, Y, A, B = sets
    exact = assoc.weat(X, Y, A, B)["p_value"]
    a = assoc.weat(X, Y, A, B, n_resamples=500, seed=1)
    b = assoc.weat(X, Y, A, B, n_resamples=500, seed=1)
    assert a == b and a["p_method"] == "sampled"
    assert abs(a["p_value"] - exact) < 4 * math.sqrt(exact * (1 - exact) / 500) + 2 / 500


def test_association_is_scale_free_and_checks_input(sets):
    X, Y, A, B = sets
    assert np.allclose(assoc.association(3 * X, A, 0.5 * B), assoc.association(X, A, B))
    with pytest.raises(InputError, match="zero vector"):
        assoc.association(np.zeros((2, 8)), A, B)
    with pytest.raises(InputError, match="vector sizes differ"):
        assoc.association(X, A[:, :4], B)
    with pytest.raises(InputError, match="ddof"):
        assoc.weat(X, Y, A, B, ddof=2)


def test_seat_driver_encodes_each_example_once_and_matches_weat(sets):
    X, Y, A, B = sets
    roles = {"targ1": X, "targ2": Y, "attr1": A, "attr2": B}
    vectors, rows = {}, []
    for role, m in roles.items():
        for i, v in enumerate(m):
            vectors[f"{role}-{i}"] = v
            rows.append({"test": "t1", "role": role, "category": role, "example": f"{role}-{i}"})
    table = pd.DataFrame(rows)
    table = pd.concat([table, table.assign(test="t2")], ignore_index=True)
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return np.stack([vectors[t] for t in texts])

    out = assoc.seat(table, embed)
    assert len(calls) == 1 and len(calls[0]) == len(vectors)
    assert out["test"].tolist() == ["t1", "t2"]
    assert out.loc[0, "effect_size"] == pytest.approx(assoc.weat(X, Y, A, B)["effect_size"], abs=1e-12)
    summary = assoc.aggregate_effect_sizes(out)
    assert summary["n_tests"].tolist()[0] == 2
    assert summary.loc[0, "mean_abs_effect_size"] == pytest.approx(abs(out["effect_size"]).mean())
    assert summary.loc[0, "sum_abs_effect_size"] == pytest.approx(abs(out["effect_size"]).sum())
    with pytest.raises(InputError, match="'t1': empty attr2 set"):
        assoc.seat(table[(table["role"] != "attr2") | (table["test"] != "t1")], embed)


# ---------------------------------------------------------------- exact p by meet-in-the-middle

def _vectors_with_associations(values):
    """Unit vectors w in the plane whose s(w, {e1}, {e2}) = cos(theta) - sin(theta) is each value."""
    theta = np.arccos(np.asarray(values, dtype=float) / math.sqrt(2)) - math.pi / 4
    return np.c_[np.cos(theta), np.sin(theta)], np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])


@pytest.mark.parametrize("nx, ny", [(8, 8), (7, 9)])
def test_exact_p_by_meet_in_the_middle_equals_scipy_exact_permutation_test(nx, ny):
    from scipy import stats as sps

    rng = np.random.default_rng(nx)
    X, Y = rng.normal(size=(nx, 5)) + 0.3, rng.normal(size=(ny, 5))
    A, B = rng.normal(size=(4, 5)) + np.r_[1.0, 0, 0, 0, 0], rng.normal(size=(4, 5))
    sx, sy = [[_s(w, A, B) for w in S] for S in (X, Y)]
    expected = sps.permutation_test((sx, sy), lambda x, y: statistics.fmean(x) - statistics.fmean(y),
                                    permutation_type="independent", alternative="greater",
                                    n_resamples=np.inf).pvalue
    got = assoc.weat(X, Y, A, B, p_method="exact", n_resamples=10)    # 10 < C(16, 8): not enumerated
    assert got["p_value"] == pytest.approx(expected, rel=1e-12)
    assert (got["p_method"], got["p_floor"], got["n_partitions"]) == ("exact", 0.0, math.comb(nx + ny, nx))
    assert 0.001 < expected < 0.999                                     # a p that is neither floor nor 1
    assert assoc.weat(X, Y, A, B, p_method="auto", n_resamples=10)["p_value"] == got["p_value"]


def test_exact_p_by_meet_in_the_middle_equals_itertools_count():
    rng = np.random.default_rng(11)
    X, Y = rng.normal(size=(10, 6)) + 0.2, rng.normal(size=(10, 6))
    A, B = rng.normal(size=(3, 6)) + np.r_[1.0, 0, 0, 0, 0, 0], rng.normal(size=(3, 6))
    _, p, n = _brute(X, Y, A, B)
    got = assoc.weat(X, Y, A, B, p_method="exact")                       # 184,756 > 100,000 partitions
    assert n == 184_756 and got["p_value"] == pytest.approx(p, abs=1e-15) and got["p_method"] == "exact"
    assert assoc.weat(X, Y, A, B)["p_method"] == "sampled"               # the default is unchanged


def test_ties_count_against_the_null_in_the_exact_count():
    x, y = [0.3, 0.5, 0.6, 0.7, 0.8], [0.1, 0.2, 0.3, 0.4, 0.7]       # tied values: tied partition sums
    W, A, B = _vectors_with_associations(x + y)
    got = assoc.weat(W[:5], W[5:], A, B, p_method="exact", n_resamples=1)
    sums = [round(sum(c), 9) for c in itertools.combinations(x + y, 5)]
    observed = round(sum(x), 9)
    assert sums.count(observed) > 3                                    # the observed sum is tied
    assert got["p_value"] == pytest.approx(sum(t >= observed for t in sums) / len(sums), abs=1e-15)


def _count_by_dynamic_programming(integers, k, at_least):
    """k-subsets of distinct positive integers with sum >= at_least: 0/1 knapsack counts."""
    ways = np.zeros((k + 1, sum(integers) + 1), dtype=np.int64)
    ways[0, 0] = 1
    for x in integers:
        ways[1:, x:] = ways[1:, x:] + ways[:-1, :-x]
    return int(ways[k, at_least:].sum())


def test_weat2_sized_exact_p_is_far_below_the_sampled_floor():
    integers = list(range(1, 51))
    x = list(range(31, 51)) + [20, 22, 24, 26, 28]                    # 25 high values, a few swapped down
    y = [i for i in integers if i not in x]
    W, A, B = _vectors_with_associations(np.array(x + y) / 40)
    count = _count_by_dynamic_programming(integers, 25, sum(x))
    expected = count / math.comb(50, 25)
    got = assoc.weat(W[:25], W[25:], A, B, p_method="exact", n_resamples=1000)
    assert got["p_value"] == pytest.approx(expected, rel=1e-12) and got["p_floor"] == 0.0
    sampled = assoc.weat(W[:25], W[25:], A, B, n_resamples=1000)
    assert sampled["p_method"] == "sampled" and sampled["p_floor"] == pytest.approx(1 / 1001)
    assert sampled["p_value"] == pytest.approx(sampled["p_floor"])        # no random partition reaches it
    assert expected < 1e-4 * sampled["p_floor"]


def test_exact_p_beyond_meet_in_the_middle_is_one_line(sets):
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(26, 4)), rng.normal(size=(25, 4))
    A, B = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    with pytest.raises(InputError, match=r"\|X\| \+ \|Y\| <= 50"):
        assoc.weat(X, Y, A, B, p_method="exact")
    assert assoc.weat(X, Y, A, B, p_method="auto", n_resamples=200)["p_method"] == "sampled"
    with pytest.raises(InputError, match="p_method must be"):
        assoc.weat(*sets, p_method="permutation")
