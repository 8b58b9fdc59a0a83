"""CEAT: the Contextualized Embedding Association Test (Guo & Caliskan 2021, AIES), seed 001's
first intrinsic metric.

Every target and attribute word has several contextual embeddings (one per sentence of a corpus
that contains it: :func:`find_contexts` picks the sentences, :func:`helpers.lm.embeddings.word_embeddings`
embeds the word in each). CEAT draws ``n_samples`` times one embedding per word, computes a WEAT
effect size ``es_i`` on each draw (:mod:`helpers.metrics.association`, sample standard deviation)
with its variance ``v_i``, and combines them by a random-effects meta-analysis (DerSimonian &
Laird 1986): ``Q = sum w_i (es_i - es_fixed)^2`` with ``w_i = 1 / v_i``; ``tau^2 = max(0, (Q -
(n - 1)) / (sum w - sum w^2 / sum w))``; the combined effect size ``CES = sum w*_i es_i / sum
w*_i`` with ``w*_i = 1 / (v_i + tau^2)``; ``z = CES * sqrt(sum w*)``; one-sided ``p = P(Z > z)``.

``variance``: ``"upstream"`` (default, the authors' ``ceat.py``: ``v_i`` = the sample variance of
``s(w, A, B)`` over X u Y) or ``"hedges"`` (the textbook sampling variance of a standardised mean
difference, ``(n_x + n_y) / (n_x n_y) + es_i^2 / (2 (n_x + n_y))``).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from scipy import stats

from helpers.errors import InputError
from helpers.metrics.association import association

__all__ = ["random_effects", "ceat", "ceat_group", "find_contexts"]


def random_effects(effects, variances) -> dict:
    """DerSimonian-Laird random-effects combination: ``effect, variance, z, p_value`` (one-sided,
    P(Z > z), as CEAT), ``tau2``, ``q``, ``n``. Written out rather than taken from statsmodels:
    its ``combine_effects(method_re="dl")`` (0.15) does not truncate a negative ``tau^2`` at 0
    when ``Q < n - 1``, which DerSimonian & Laird and the CEAT code do (they agree otherwise)."""
    e, v = np.asarray(effects, dtype=float), np.asarray(variances, dtype=float)
    if e.shape != v.shape or e.ndim != 1 or e.size < 2:
        raise InputError("random_effects needs two or more effect sizes with one variance each")
    if not (np.isfinite(e).all() and np.isfinite(v).all() and (v > 0).all()):
        raise InputError("random_effects: effect sizes must be finite and variances positive")
    w = 1 / v
    q = float(np.sum(w * e**2) - np.sum(w * e) ** 2 / np.sum(w))
    tau2 = max(0.0, (q - (e.size - 1)) / (np.sum(w) - np.sum(w**2) / np.sum(w)))
    w_star = 1 / (v + tau2)
    effect, var = float(np.sum(w_star * e) / np.sum(w_star)), float(1 / np.sum(w_star))
    z = effect / np.sqrt(var)
    return {"effect": effect, "variance": var, "z": float(z), "p_value": float(stats.norm.sf(z)),
            "tau2": float(tau2), "q": q, "n": int(e.size)}


def _checked(vectors: dict, sets: dict, variance: str, n_samples) -> None:
    if variance not in ("upstream", "hedges"):
        raise InputError(f"variance must be 'upstream' or 'hedges', got {variance!r}")
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 2:
        raise InputError(f"n_samples must be an integer >= 2, got {n_samples!r}")
    for name, words in sets.items():
        if not words:
            raise InputError(f"CEAT: the {name} word set is empty")
        missing = [w for w in words if w not in vectors or len(vectors[w]) == 0]
        if missing:
            raise InputError(f"CEAT: no contextual embedding for {name} word(s) {', '.join(map(repr, missing[:5]))} "
                             f"(no context sentence holds it)")


def _draw(vectors: dict, words: list, rng: np.random.Generator) -> np.ndarray:
    """One random contextual embedding of each word (rows in the order of ``words``)."""
    return np.stack([vectors[w][rng.integers(len(vectors[w]))] for w in words])


def ceat(vectors: dict, X, Y, A, B, *, n_samples: int = 1000, seed: int = 0, variance: str = "upstream") -> dict:
    """CEAT of target words ``X``, ``Y`` and attribute words ``A``, ``B`` (module docstring).

    ``vectors``: word -> array ``[n_contexts, dim]`` of its contextual embeddings. Returns
    :func:`random_effects`'s fields (``effect`` is the CES) plus ``mean_effect`` (plain mean of
    the per-draw effect sizes) and ``n_samples``."""
    sets = {"X": list(X), "Y": list(Y), "A": list(A), "B": list(B)}
    _checked(vectors, sets, variance, n_samples)
    rng = np.random.default_rng(seed)
    nx, ny = len(sets["X"]), len(sets["Y"])
    effects, variances = np.empty(n_samples), np.empty(n_samples)
    for i in range(n_samples):
        draw = {k: _draw(vectors, words, rng) for k, words in sets.items()}
        s = np.concatenate([association(draw["X"], draw["A"], draw["B"]), association(draw["Y"], draw["A"], draw["B"])])
        sd = s.std(ddof=1)
        effects[i] = (s[:nx].mean() - s[nx:].mean()) / sd
        variances[i] = sd**2 if variance == "upstream" else (nx + ny) / (nx * ny) + effects[i] ** 2 / (2 * (nx + ny))
    return {**random_effects(effects, variances), "mean_effect": float(effects.mean()), "n_samples": int(n_samples)}


def ceat_group(vectors: dict, X, A, B, *, n_samples: int = 1000, seed: int = 0, variance: str = "upstream") -> dict:
    """CEAT of one protected group (seed 001, section 2: "the effect size of distance difference
    between the protected group and the two attribute sets"; a lower effect means the group sits
    closer to ``B``, e.g. unpleasant words). Cao et al.'s code is not public; this is CEAT with one
    target set by the single-category WEAT (SC-WEAT: Caliskan et al. 2017, supplement; Toney &
    Caliskan 2021), whose effect size for a word ``w`` is ``(mean_a cos(w, a) - mean_b cos(w, b)) /
    sd_{x in A u B} cos(w, x)``.

    Each draw takes one random context of every group word in ``X`` and of every attribute word;
    ``g`` = the mean of the group's drawn unit vectors, ``c(y) = g . y / |y|`` for every drawn
    attribute vector (the mean cosine of the group's vectors with ``y``; with one group word, SC-WEAT
    of its drawn context, the scale of ``g`` cancelling); ``es_i = (mean_A c - mean_B c) / sd_{A u B}
    c`` (sample sd, as CEAT); ``v_i = sd^2`` (``"upstream"``, the analogue of the CEAT code's
    variance of the associations) or ``(n_A + n_B) / (n_A n_B) + es_i^2 / (2 (n_A + n_B))``
    (``"hedges"``); the draws are combined by :func:`random_effects` as in :func:`ceat`.

    Standardised over the attribute words, ``|es_i| <= sqrt((n - 1) n / (n_A n_B))`` with ``n = n_A +
    n_B`` (about 2 for equal sets; the between-set sum of squares is part of the total), and so is
    the combined effect, a weighted mean of the ``es_i``. Standardising by the spread of the group's
    own drawn vectors instead has no such bound: a group with three contexts (Amish) whose
    associations nearly coincide gave -3,420 on one model."""
    sets = {"X": list(X), "A": list(A), "B": list(B)}
    _checked(vectors, sets, variance, n_samples)
    unit = {}
    for w in dict.fromkeys(sets["X"] + sets["A"] + sets["B"]):
        m = np.asarray(vectors[w], dtype=np.float64)
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        if (norms == 0).any() or not np.isfinite(m).all():
            raise InputError(f"CEAT: a contextual embedding of {w!r} is zero or not finite")
        unit[w] = m / norms
    rng = np.random.default_rng(seed)
    picks = {k: [(w, rng.integers(len(unit[w]), size=n_samples)) for w in ws] for k, ws in sets.items()}
    n_a, n_b = len(sets["A"]), len(sets["B"])
    c = np.empty((n_samples, n_a + n_b))
    for lo in range(0, n_samples, 64):                  # every draw at once, in chunks to bound memory
        hi = min(n_samples, lo + 64)
        group = sum(unit[w][i[lo:hi]] for w, i in picks["X"]) / len(picks["X"])           # [draws, dim]
        attributes = np.stack([unit[w][i[lo:hi]] for w, i in picks["A"] + picks["B"]], axis=1)
        c[lo:hi] = np.einsum("sd,snd->sn", group, attributes)
    sd = c.std(axis=1, ddof=1)
    if (sd == 0).any():
        raise InputError(f"CEAT: the attribute words are equally associated with the group {sets['X'][:3]} "
                         f"(identical associations: no spread to standardise by)")
    effects = (c[:, :n_a].mean(axis=1) - c[:, n_a:].mean(axis=1)) / sd
    n = n_a + n_b
    variances = sd**2 if variance == "upstream" else n / (n_a * n_b) + effects**2 / (2 * n)
    return {**random_effects(effects, variances), "mean_effect": float(effects.mean()), "n_samples": int(n_samples)}


#: The characters ``re.IGNORECASE`` equates with an ASCII letter that ``str.lower`` does not map to it.
_ASCII_FOLD = str.maketrans({"ı": "i", "İ": "i", "ſ": "s"})


def find_contexts(texts, words, *, per_word: int = 1000, seed: int = 0, max_chars: int | None = 500) -> pd.DataFrame:
    """Up to ``per_word`` sentences that contain each word (whole word, case-insensitive), drawn
    without replacement with a seed: ``word, text`` (texts longer than ``max_chars`` skipped).
    A word found in no text keeps no row; the caller reports it."""
    texts = [t for t in texts if isinstance(t, str) and (max_chars is None or len(t) <= max_chars)]
    # A cheap substring test before the regex: for an ASCII word, every case-insensitive match of
    # ``re`` is a substring of the lower-cased text once dotless i, dotted capital I and long s are
    # folded first (the only characters ``re`` equates with an ASCII letter that str.lower does not
    # turn into it; checked over every code point by tests/test_ceat.py).
    folded = [t.translate(_ASCII_FOLD).lower() for t in texts]
    rng = np.random.default_rng(seed)
    rows = []
    for w in dict.fromkeys(words):
        pattern = re.compile(rf"(?<!\w){re.escape(w)}(?!\w)", re.IGNORECASE)
        key = w.lower() if w.isascii() else ""           # "" is in every text: the regex alone decides
        hits = [t for t, f in zip(texts, folded) if key in f and pattern.search(t)]
        if len(hits) > per_word:
            hits = [hits[i] for i in sorted(rng.choice(len(hits), per_word, replace=False))]
        rows += [(w, t) for t in hits]
    return pd.DataFrame(rows, columns=["word", "text"])
