"""How sensitive are classifier-based bias metrics to noisy text? Seed 001, appendix H (Table 7).

Cao et al. (2022) took 500 BOLD generations, made 10 noisy copies of each by randomly swapping or
deleting words (5, 10, 15 and 20 % of the words), classified originals and copies with BOLD's
sentiment and regard classifiers, and reported the share classified negative: mean and standard
deviation over 10 repeats of the whole experiment.

Readings of the appendix (its code is not public):

- *Words* are the whitespace-separated tokens of the text (the appendix's example deletes
  "well-known" and "as" whole, punctuation attached to a word moves with it).
- A noise level ``rate`` touches ``k = floor(rate * n + 1/2)`` of the ``n`` words (at least 0):
  deletion removes ``k`` distinct words chosen uniformly; swap picks ``k`` distinct positions and
  swaps each, in turn, with a uniformly chosen other position (a text of one word is unchanged).
- A repeat draws fresh copies; the share negative of a repeat is over all ``texts x copies``
  noisy texts. The standard deviation over repeats is the sample one (``ddof=1``) by default.

Randomness: one ``numpy`` Generator per (seed, kind, rate, repeat), so a cell of the table does
not depend on which other cells are computed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from helpers.errors import InputError

__all__ = ["KINDS", "perturb", "noisy_copies", "noise_table", "summarise"]

KINDS = ("swap", "deletion")


def _count(rate: float, n: int) -> int:
    return int(np.floor(rate * n + 0.5))


def perturb(text: str, rate: float, kind: str, rng: np.random.Generator) -> str:
    """``text`` with ``rate`` of its words swapped or deleted (module docstring)."""
    if kind not in KINDS:
        raise InputError(f"noise: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
        raise InputError(f"noise: rate must be a share in [0, 1], got {rate!r}")
    words = text.split()
    k = _count(rate, len(words))
    if k == 0:
        return " ".join(words)
    if kind == "deletion":
        drop = set(rng.choice(len(words), size=k, replace=False).tolist())
        return " ".join(w for i, w in enumerate(words) if i not in drop)
    if len(words) < 2:
        return " ".join(words)
    for i in rng.choice(len(words), size=k, replace=False).tolist():
        j = int(rng.integers(len(words) - 1))
        j += j >= i                                             # another position, uniformly
        words[i], words[j] = words[j], words[i]
    return " ".join(words)


def _generator(seed: int, kind: str, rate: float, repeat: int) -> np.random.Generator:
    return np.random.default_rng([seed, KINDS.index(kind), int(round(rate * 1e6)), repeat])


def noisy_copies(texts: Sequence[str], rate: float, kind: str, *, copies: int = 10, repeat: int = 0,
                 seed: int = 0) -> list[str]:
    """``copies`` noisy versions of every text, text by text (``len(texts) * copies`` strings)."""
    rng = _generator(seed, kind, rate, repeat)
    return [perturb(t, rate, kind, rng) for t in texts for _ in range(copies)]


def _check(texts, copies, repeats) -> list[str]:
    texts = [t for t in texts]
    if not texts or any(not isinstance(t, str) or not t.split() for t in texts):
        raise InputError("noise: needs one or more texts, none of them empty")
    for name, v in (("copies", copies), ("repeats", repeats)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise InputError(f"noise: {name} must be a whole number >= 1, got {v!r}")
    return texts


def noise_table(texts: Sequence[str], negative: Callable[[list[str]], np.ndarray], *,
                rates: Sequence[float] = (0.05, 0.10, 0.15, 0.20), kinds: Sequence[str] = KINDS,
                copies: int = 10, repeats: int = 10, seed: int = 0) -> pd.DataFrame:
    """Seed 001's Table 7 experiment: the share of texts ``negative`` calls negative, for the
    clean texts (``kind`` "clean", rate 0, one row) and for every (kind, rate, repeat) of noisy
    copies. ``negative(list of texts) -> boolean array`` (e.g. a classifier's label ==
    "negative"); each distinct text is classified once. Tidy: kind, rate, repeat, n, negative_share."""
    texts = _check(texts, copies, repeats)
    cells = [("clean", 0.0, 0, list(texts))]
    for kind in kinds:
        for rate in rates:
            for r in range(repeats):
                cells.append((kind, float(rate), r, noisy_copies(texts, rate, kind, copies=copies, repeat=r,
                                                                  seed=seed)))
    distinct = list(dict.fromkeys(t for *_, batch in cells for t in batch))
    flags = np.asarray(negative(distinct), dtype=bool)
    if flags.shape != (len(distinct),):
        raise InputError(f"noise: the classifier returned {flags.shape} flags for {len(distinct)} texts")
    is_negative = dict(zip(distinct, flags.tolist()))
    return pd.DataFrame([{"kind": kind, "rate": rate, "repeat": r, "n": len(batch),
                          "negative_share": float(np.mean([is_negative[t] for t in batch]))}
                         for kind, rate, r, batch in cells])


def summarise(table: pd.DataFrame, *, ddof: int = 1) -> pd.DataFrame:
    """Mean and standard deviation (``ddof``) over repeats of the share negative, in percent, per
    (kind, rate), as Table 7 prints them."""
    g = table.groupby(["kind", "rate"], sort=False)["negative_share"]
    out = g.agg(repeats="size", mean=lambda s: 100 * s.mean(), sd=lambda s: 100 * s.std(ddof=ddof) if len(s) > ddof
                else np.nan).reset_index()
    return out.rename(columns={"mean": "negative_percent", "sd": "negative_percent_sd"})
