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
