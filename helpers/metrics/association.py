"""Embedding association tests: WEAT (Caliskan et al. 2017) and SEAT (May et al. 2019).

For target sets X, Y and attribute sets A, B of vectors:

- ``s(w, A, B) = mean_a cos(w, a) - mean_b cos(w, b)`` (Caliskan et al., eq. 1);
- effect size ``d = (mean_{x in X} s(x) - mean_{y in Y} s(y)) / std_{w in X u Y} s(w)``;
  ``ddof=1`` (sample standard deviation) as in Caliskan et al.'s and May et al.'s code and in
  CEAT; WEFE and some libraries use the population standard deviation (``ddof=0``);
- one-sided permutation p-value: the share of equal-size partitions (X', Y') of X u Y whose
  statistic is at least the observed one (ties count against the null, May et al.'s
  "conservative test"). ``p_method``:

  - ``"sampled"`` (default, :func:`scipy.stats.permutation_test`): exact over all
    ``C(|X|+|Y|, |X|)`` partitions when there are at most ``n_resamples`` of them; otherwise
    ``n_resamples`` random partitions with a seed and scipy's ``(k + 1) / (N + 1)`` estimate (May
    et al. likewise add one to both counts), which can never fall below ``1 / (N + 1)``: a
    sampled p at that floor means "at most about that", not the p (issue 24: WEAT 2, 25 + 25
    words, gave 1.0e-5 with N = 100,000 where the exact p was 1.0e-10);
  - ``"exact"``: every partition counted: enumerated (scipy) when there are at most
    ``n_resamples``, otherwise by meet-in-the-middle for ``|X| + |Y| <=`` :data:`MAX_EXACT`;
  - ``"auto"``: ``"exact"`` when it applies, else ``"sampled"``.

  The result says which was used (``p_method``: ``"exact"`` or ``"sampled"``) and the floor of
  a sampled p (``p_floor`` = 1 / (N + 1); 0 for an exact p, whose floor is 1 / C(|X|+|Y|, |X|)).

SEAT applies the same test to sentence encodings of bleached sentences ("This is X.").
:func:`aggregate_effect_sizes` gives May et al.'s summary: mean |d| over all tests and over the
tests with p below each level.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy import special, stats

from helpers.errors import InputError

__all__ = ["association", "weat", "effect_size_interval", "seat", "aggregate_effect_sizes", "count_subsets_at_least", "WEAT_COLUMNS"]

WEAT_COLUMNS = ["effect_size", "p_value", "p_method", "n_partitions", "n_x", "n_y", "n_a", "n_b", "p_floor"]
P_METHODS = ("sampled", "exact", "auto")
#: The largest |X| + |Y| counted exactly by meet-in-the-middle (2 x 2^25 subset sums at 50).
MAX_EXACT = 50


def _matrix(vectors, what: str) -> np.ndarray:
    m = np.asarray(vectors, dtype=np.float64)
    if m.ndim != 2 or len(m) == 0:
        raise InputError(f"{what}: needs a non-empty 2-D array of vectors, got shape {m.shape}")
    if not np.isfinite(m).all():
        raise InputError(f"{what}: has non-finite values")
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    if (norms == 0).any():
        raise InputError(f"{what}: has a zero vector (cosine undefined)")
    return m / norms


def association(W, A, B) -> np.ndarray:
    """``s(w, A, B)`` for every row ``w`` of ``W`` (Caliskan et al. 2017, eq. 1)."""
    W, A, B = _matrix(W, "targets"), _matrix(A, "attribute set A"), _matrix(B, "attribute set B")
    if not W.shape[1] == A.shape[1] == B.shape[1]:
        raise InputError(f"vector sizes differ: targets {W.shape[1]}, A {A.shape[1]}, B {B.shape[1]}")
    return (W @ A.T).mean(axis=1) - (W @ B.T).mean(axis=1)


def _sums_by_size(values: np.ndarray) -> list[np.ndarray]:
    """``out[j]``: the sums of every j-element subset of ``values`` (2^len(values) in all)."""
    out = [np.zeros(1)]
    for v in values:
        out = [np.concatenate([out[j] if j < len(out) else np.empty(0), out[j - 1] + v if j else np.empty(0)])
               for j in range(len(out) + 1)]
    return out


def _sums_of_size(halves: tuple[list[np.ndarray], list[np.ndarray]], j: int) -> np.ndarray:
    """The sums of every j-element subset of the union of two halves' values (their
    :func:`_sums_by_size`), built one size at a time so that only C(n, j) sums are in memory."""
    lo, hi = halves
    parts = [(lo[i][:, None] + hi[j - i][None, :]).ravel()
             for i in range(max(0, j - len(hi) + 1), min(j, len(lo) - 1) + 1)]
    return np.concatenate(parts) if parts else np.empty(0)


def count_subsets_at_least(values, k: int, target: float) -> int:
    """How many k-element subsets of ``values`` sum to at least ``target``, by meet-in-the-middle:
    the values split into two halves, each half's subset sums enumerated by size (each from two
    quarters), and for each size j the sums of j elements of the first half are counted against
    the sums of k - j elements of the second, both sorted, with ``np.searchsorted`` (sorted keys
    keep its binary searches in cache): O(2^(n/2) n) time, at most C(n/2, n/4) sums of one size
    per half in memory."""
    v = np.asarray(values, dtype=np.float64)
    n = len(v)
    if not 0 <= k <= n:
        raise InputError(f"subset size {k} is not between 0 and {n}")
    h, q1, q2 = n // 2, n // 4, (n + 2) // 4
    first = (_sums_by_size(v[:q1]), _sums_by_size(v[q1:h]))
    second = (_sums_by_size(v[h:h + q2]), _sums_by_size(v[h + q2:]))
    count = 0
    for j in range(max(0, k - (n - h)), min(k, h) + 1):
        b = np.sort(_sums_of_size(second, k - j))
        below = np.sort(target - _sums_of_size(first, j))      # a + b >= target  <=>  b >= target - a
        count += int(below.size * b.size - np.searchsorted(b, below, side="left").sum())
    return count


def weat(X, Y, A, B, *, ddof: int = 1, n_resamples: int = 100_000, seed: int = 0,
         p_method: str = "sampled") -> dict:
    """Effect size and one-sided permutation p-value of one test (module docstring).

    Returns :data:`WEAT_COLUMNS`: ``p_method`` is ``"exact"`` or ``"sampled"`` (what was used);
    ``n_partitions`` the number of distinct partitions; ``p_floor`` the smallest p the method
    can give (1 / (n_resamples + 1) sampled, 0 exact). The exact count beyond ``n_resamples``
    partitions uses that mean(X') - mean(Y') rises with sum(X') over partitions of fixed sizes:
    it counts the |X|-subsets of X u Y whose sum is at least the observed sum(X) less 1e-12 of
    sum |s| (a relative tolerance for float ties, which count against the null as in scipy;
    :func:`count_subsets_at_least`)."""
    if ddof not in (0, 1):
        raise InputError(f"ddof must be 0 (population) or 1 (sample), got {ddof!r}")
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise InputError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if p_method not in P_METHODS:
        raise InputError(f"p_method must be one of {', '.join(P_METHODS)}, got {p_method!r}")
    sx, sy = association(X, A, B), association(Y, A, B)
    n_a, n_b = len(np.asarray(A)), len(np.asarray(B))
    if len(sx) + len(sy) < 3:
        raise InputError("a WEAT test needs at least three target vectors in X and Y together")
    s = np.concatenate([sx, sy])
    sd = s.std(ddof=ddof)
    d = (sx.mean() - sy.mean()) / sd if sd > 0 else float("nan")
    partitions = int(special.comb(len(s), len(sx), exact=True))
    meet_in_middle = partitions > n_resamples and len(s) <= MAX_EXACT and p_method in ("exact", "auto")
    if p_method == "exact" and partitions > n_resamples and not meet_in_middle:
        raise InputError(f"an exact p needs |X| + |Y| <= {MAX_EXACT} (or at most n_resamples = {n_resamples} "
                         f"partitions); this test has {len(s)} targets: use p_method='sampled' or 'auto'")

    if meet_in_middle:
        p = count_subsets_at_least(s, len(sx), sx.sum() - 1e-12 * np.abs(s).sum()) / partitions
    else:
        p = stats.permutation_test((sx, sy), lambda x, y, axis: x.mean(axis=axis) - y.mean(axis=axis),
                                   permutation_type="independent", vectorized=True, alternative="greater",
                                   n_resamples=n_resamples, rng=np.random.default_rng(seed)).pvalue
    exact = meet_in_middle or partitions <= n_resamples
    return {"effect_size": float(d), "p_value": float(p), "p_method": "exact" if exact else "sampled",
            "n_partitions": partitions, "n_x": len(sx), "n_y": len(sy), "n_a": n_a, "n_b": n_b,
            "p_floor": 0.0 if exact else 1 / (n_resamples + 1)}


def effect_size_interval(X, Y, A, B, *, ddof: int = 1, n_resamples: int = 1000, seed: int = 0,
                         confidence_level: float = 0.95) -> tuple[float, float]:
    """A percentile-bootstrap interval of the effect size over the target words: X and Y resampled
    independently, each with replacement (:func:`scipy.stats.bootstrap` with two samples), the
    attribute sets fixed. Caliskan et al. and May et al. give no interval; this one says how much
    the effect depends on which target words the test happens to hold. A resample whose
    associations are all equal has no effect size and is left out by scipy (NaN)."""
    sx, sy = association(X, A, B), association(Y, A, B)
    if min(len(sx), len(sy)) < 2:
        return np.nan, np.nan

    def d(x, y, axis=-1):
        s = np.concatenate([x, y], axis=axis)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (x.mean(axis=axis) - y.mean(axis=axis)) / s.std(axis=axis, ddof=ddof)

    ci = stats.bootstrap((sx, sy), d, vectorized=True, method="percentile", confidence_level=confidence_level,
                         n_resamples=n_resamples, rng=np.random.default_rng(seed)).confidence_interval
    return float(ci.low), float(ci.high)


def seat(tests: pd.DataFrame, embed: Callable[[list[str]], np.ndarray], *, interval_resamples: int = 0,
         **options) -> pd.DataFrame:
    """Run every test of a SEAT table (``test, role, category, example``, roles targ1, targ2,
    attr1, attr2: :func:`helpers.datasets.words.load_seat`) with ``embed(texts) -> [n, dim]``.

    Each distinct example is encoded once. Returns one row per test: ``test`` and
    :data:`WEAT_COLUMNS` (``options`` go to :func:`weat`), and with ``interval_resamples`` > 0
    ``ci_low, ci_high`` (:func:`effect_size_interval`, same ``ddof`` and ``seed``). A test with an
    empty role is one InputError naming it."""
    need = {"test", "role", "example"}
    if missing := need - set(tests.columns):
        raise InputError(f"SEAT table: missing column(s) {', '.join(sorted(missing))}")
    examples = list(dict.fromkeys(tests["example"]))
    vectors = np.asarray(embed(examples))
    if len(vectors) != len(examples):
        raise InputError(f"embed returned {len(vectors)} vectors for {len(examples)} texts")
    index = {e: i for i, e in enumerate(examples)}
    rows = []
    for name, part in tests.groupby("test", sort=False):
        sets = {r: vectors[[index[e] for e in part.loc[part["role"] == r, "example"]]]
                for r in ("targ1", "targ2", "attr1", "attr2")}
        empty = [r for r, v in sets.items() if len(v) == 0]
        if empty:
            raise InputError(f"SEAT test {name!r}: empty {', '.join(empty)} set")
        row = {"test": name, **weat(sets["targ1"], sets["targ2"], sets["attr1"], sets["attr2"], **options)}
        if interval_resamples:
            row["ci_low"], row["ci_high"] = effect_size_interval(
                sets["targ1"], sets["targ2"], sets["attr1"], sets["attr2"], ddof=options.get("ddof", 1),
                n_resamples=interval_resamples, seed=options.get("seed", 0))
        rows.append(row)
    return pd.DataFrame(rows, columns=["test", *WEAT_COLUMNS, *(["ci_low", "ci_high"] if interval_resamples else [])])


def aggregate_effect_sizes(results: pd.DataFrame, *, levels=(0.01, 0.10)) -> pd.DataFrame:
    """The summary of a :func:`seat` table over all tests and over the tests with ``p_value <
    level`` for each level: ``subset, n_tests, mean_abs_effect_size`` (May et al.'s aggregate) and
    ``sum_abs_effect_size`` (seed 003's)."""
    rows = []
    for name, part in [("all", results)] + [(f"p < {level:g}", results[results["p_value"] < level]) for level in levels]:
        d = part["effect_size"].abs()
        rows.append({"subset": name, "n_tests": len(part), "mean_abs_effect_size": float(d.mean()) if len(d) else np.nan,
                     "sum_abs_effect_size": float(d.sum())})
    return pd.DataFrame(rows)
