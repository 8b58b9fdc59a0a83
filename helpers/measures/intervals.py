"""Per-group intervals: the seeded percentile bootstrap of a group's mean over the items it
averages (generations, test texts, words, clusters), as seed 001's group scores get them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from helpers import stats


#: Resamples of the per-group bootstrap intervals (scipy.stats.bootstrap's default number), in
#: batches of :data:`BOOTSTRAP_BATCH` (memory for a group of thousands of texts).
BOOTSTRAP_RESAMPLES, BOOTSTRAP_BATCH = 9999, 1000


def bootstrap_interval(values, seed: int) -> tuple[float, float]:
    """The 95 % percentile-bootstrap interval of the mean of ``values`` (missing values left out):
    :func:`helpers.stats.mean_interval`, :data:`BOOTSTRAP_RESAMPLES` resamples, the given seed.
    ``(nan, nan)`` for fewer than two values or a constant sample, which leave nothing to resample."""
    return stats.mean_interval(values, n_resamples=BOOTSTRAP_RESAMPLES, seed=seed, batch=BOOTSTRAP_BATCH)


def group_intervals(items: pd.DataFrame, value: str, *, by=("model", "domain", "group"), seed: int) -> pd.DataFrame:
    """``by, ci_low, ci_high``: :func:`bootstrap_interval` of ``value`` over the items (rows) of each
    ``by``, the items behind a group's mean or share (generations, test texts, words, clusters)."""
    rows = [dict(zip(by, key)) | dict(zip(("ci_low", "ci_high"), bootstrap_interval(part[value], seed)))
            for key, part in items.groupby(list(by), sort=True)]
    return pd.DataFrame(rows, columns=[*by, "ci_low", "ci_high"])


def paired_items(df: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """The items a paired comparison matches across models: ``keys`` and ``item_value`` (the
    quantity whose mean the comparison differences)."""
    return df[keys].assign(item_value=np.asarray(df[value], dtype=float)).reset_index(drop=True)
