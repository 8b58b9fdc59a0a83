"""Network shape vs safety score (seed 000 §4.6, Tables 5 and 13, Figure 3).

:func:`describe` reads heads, layers and hidden size from a loaded model's configuration and
counts its parameters; :func:`table13` puts measured rows (models at hand) and the paper's
published rows (models not available here) together, marked by ``source``; :func:`table5`
correlates the average safety score with heads, layers and hidden size per family with at
least three variants (Pearson r with n, p and 95% CI via helpers.stats).
The recomputation of the published Table 5 is :func:`helpers.published.recompute.recompute_table5`;
the safety score per group that a chapter averages is the cached ``"safety_per_group"``
result of :func:`helpers.runner.cached_result`, shared by the chapters.
"""

from __future__ import annotations

import pandas as pd

from helpers import stats

ARCH = ["heads", "layers", "hidden"]
#: Measured models also vary in MLP width and size (the book's pruned students keep the hidden size).
ARCH_MEASURED = ARCH + ["intermediate", "params"]


def describe(model) -> dict:
    """layers, heads, hidden, intermediate (MLP channels per layer), params of a transformers
    model (text config for multimodal configs; ELECTRA/ALBERT-style embedding sizes are not the
    hidden size). Parameters are counted once even when tied."""
    cfg = model.config
    cfg = getattr(cfg, "text_config", None) or cfg

    def get(*names):
        return next((int(getattr(cfg, n)) for n in names if getattr(cfg, n, None) is not None), None)
    return {"layers": get("num_hidden_layers", "n_layer", "num_layers"),
            "heads": get("num_attention_heads", "n_head"),
            "hidden": get("hidden_size", "n_embd", "d_model"),
            "intermediate": get("intermediate_size", "n_inner", "d_ff", "ffn_dim"),
            "params": int(sum(p.numel() for p in model.parameters()))}


def table13(measured: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Measured rows (model, family, layers, heads, hidden, params, avg_safety_score,
    source="measured") plus the published rows of models not measured (matched on a ``registry``
    column in ``published`` when present, else on ``model``)."""
    key = "registry" if "registry" in published.columns else "model"
    rest = published[~published[key].isin(measured["model"])]
    cols = ["model", "family", "layers", "heads", "hidden", "params", "avg_safety_score", "source"]
    out = pd.concat([measured, rest], ignore_index=True)
    return out[cols + [c for c in out.columns if c not in cols]]


def table5(df: pd.DataFrame, *, min_variants: int = 3, y: str = "avg_safety_score",
           columns: list[str] | None = None) -> pd.DataFrame:
    """Per family with >= ``min_variants`` models: Pearson r of ``y`` with ``columns`` (default
    heads, layers, hidden; those present) as (family, x, y, n, r, p_value, ci_low, ci_high). A
    constant column (e.g. every variant has the same number of heads) gives NaN r, as it must."""
    counts = df.groupby("family")["model"].nunique()
    keep = df[df["family"].isin(counts[counts >= min_variants].index)]
    if keep.empty:
        return pd.DataFrame(columns=["family", "x", "y", "n", "r", "p_value", "ci_low", "ci_high", "method"])
    return stats.correlation_table(keep, [c for c in (columns or ARCH) if c in keep.columns], y, by="family")

