"""Causal mediation analysis (Vig et al. 2020): the published attention-intervention results.

``causal_mediation_analysis`` → :func:`load_attention_summary`: ``attention_intervention_summary.csv``
(a derived file of the data folder, see its SOURCE.md), one row per upstream
``attention_intervention_*.json`` (103 files, 13 models) holding that file's top-level summary
fields: source_file, dataset (winobias | winogender), model_version, do_filter, split (WinoBias:
dev | test), stat (Winogender: bergsma | bls), num_examples_loaded, num_examples_aligned,
filter_quantile, threshold (empty when not filtered), num_examples_analyzed, mean_total_effect,
mean_model_indirect_effect, mean_model_direct_effect. The other files of the set (professions,
templates, WinoBias/Winogender sentences) are read by ``helpers.metrics.cma`` from :func:`path`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from helpers.datasets.registry import path as _path
from helpers.errors import InputError

SUMMARY_FILE = "attention_intervention_summary.csv"
SUMMARY_COLUMNS = ["source_file", "dataset", "model_version", "do_filter", "split", "stat",
                   "num_examples_loaded", "num_examples_aligned", "filter_quantile", "threshold",
                   "num_examples_analyzed", "mean_total_effect", "mean_model_indirect_effect",
                   "mean_model_direct_effect"]
EFFECTS = ["mean_total_effect", "mean_model_indirect_effect", "mean_model_direct_effect"]


def load_attention_summary(name: str = "causal_mediation_analysis", *,
                           path: str | Path | None = None) -> pd.DataFrame:
    """The attention-intervention summary, one row per upstream result file (columns above)."""
    p = Path(path or _path(name, SUMMARY_FILE))
    try:
        df = pd.read_csv(p)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{p}: cannot read CSV ({type(exc).__name__})") from None
    missing = [c for c in SUMMARY_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"{p}: missing column(s) {', '.join(missing)}")
    if df.empty:
        raise InputError(f"{p}: no rows")
    effects = df[EFFECTS].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    bad = ~df["dataset"].isin(["winobias", "winogender"]).to_numpy() | ~np.isfinite(effects).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{p}: row {i} ({df['source_file'].iloc[i]}): unknown dataset or non-finite effect")
    df = df[SUMMARY_COLUMNS]
    df.attrs["dataset"] = name
    return df
