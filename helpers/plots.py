"""Figures of the book: each function takes tidy DataFrames and returns a matplotlib Figure.

Functions never call ``plt.show()`` nor save files; the notebook displays the figure and
may save it (``fig.savefig``). Group keys are shown with their display names
(:data:`helpers.datasets.GROUP_LABELS` when available). Chapters APPEND their own
functions at the end of this file (one self-contained function each).
"""

from __future__ import annotations

import textwrap

import matplotlib

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

SOURCE_COLORS = {"measured": "#1f77b4", "published": "#ff7f0e", "published-recomputed": "#2ca02c"}


def group_label(key: str) -> str:
    """Display name of a group key ("mental dis" -> "Mentally disabled")."""
    try:
        from helpers.datasets import GROUP_LABELS
    except ImportError:  # pragma: no cover - datasets module absent
        GROUP_LABELS = {}
    return GROUP_LABELS.get(key, str(key))


def _figure(width: float = 8.0, height: float = 4.5):
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    return fig, ax


def group_counts_bar(counts: pd.DataFrame, *, title: str | None = None) -> matplotlib.figure.Figure:
    """Harmful vs benign sentences per group, side-by-side bars (seed 000 Figure 1).

    ``counts``: one row per group with columns ``group`` and ``hate``, ``neutral``
    (as :func:`helpers.datasets.group_counts` returns).
    """
    df = counts.copy()
    df["name"] = df["group"].map(group_label)
    df = df.sort_values("name")
    x = np.arange(len(df))
    fig, ax = _figure()
    ax.bar(x - 0.2, df["hate"], width=0.4, label="harmful", color="#d62728")
    ax.bar(x + 0.2, df["neutral"], width=0.4, label="benign", color="#2ca02c")
    ax.set_xticks(x, df["name"], rotation=45, ha="right")
    ax.set_ylabel("sentences")
    ax.legend(frameon=False)
    ax.set_title(title or "Harmful and benign sentences per target group")
    return fig


def safety_boxplot(scores: pd.DataFrame, *, by: str = "source", value: str = "safety_score",
                   title: str | None = None) -> matplotlib.figure.Figure:
    """Safety scores per group across models, one box per (group, ``by``) with the
    individual models as points (seed 000 Figure 2).

    ``scores``: long table with columns ``group``, ``value`` and ``by`` (e.g. ``source``:
    measured vs published, so our models and the paper's 24 sit side by side).
    The dashed line at 0.5 marks a model that cannot tell harmful from benign.
    """
    df = scores.dropna(subset=[value]).copy()
    df["name"] = df["group"].map(group_label)
    names = sorted(df["name"].unique())
    levels = list(dict.fromkeys(df[by])) if by in df else [None]
    width = 0.8 / len(levels)
    fig, ax = _figure(max(8.0, 0.7 * len(names) * max(1, len(levels)) / 1.5), 4.8)
    rng = np.random.default_rng(0)
    handles = []
    for k, level in enumerate(levels):
        part = df if level is None else df[df[by] == level]
        color = SOURCE_COLORS.get(str(level), f"C{k}")
        pos = np.arange(len(names)) + (k - (len(levels) - 1) / 2) * width
        data = [part.loc[part["name"] == n, value].to_numpy() for n in names]
        keep = [i for i, d in enumerate(data) if len(d)]
        if keep:
            bp = ax.boxplot([data[i] for i in keep], positions=pos[keep], widths=width * 0.85,
                            patch_artist=True, showfliers=False, manage_ticks=False)
            for box in bp["boxes"]:
                box.set(facecolor=color, alpha=0.35, edgecolor=color)
            for med in bp["medians"]:
                med.set(color=color)
        for i in keep:
            ax.scatter(pos[i] + rng.uniform(-width / 4, width / 4, len(data[i])), data[i],
                       s=10, color=color, zorder=3)
        n_models = part["model"].nunique() if "model" in part else None
        lab = str(level) if level is not None else value
        handles.append(plt.Line2D([], [], marker="s", ls="", color=color,
                                  label=f"{lab} ({n_models} model{'s' * (n_models != 1)})" if n_models else lab))
    ax.axhline(0.5, ls="--", lw=1, color="grey")
    ax.set_xticks(np.arange(len(names)), names, rotation=45, ha="right")
    ax.set_ylabel("safety score")
    ax.set_ylim(0, 1)
    ax.legend(handles=handles, frameon=False, loc="upper right")
    ax.set_title(title or "Safety score per group across models")
    return fig


def safety_heatmap(scores: pd.DataFrame, *, value: str = "safety_score",
                   title: str | None = None) -> matplotlib.figure.Figure:
    """Models x groups heat map of safety scores (a compact view of seed 000 Table 1)."""
    wide = scores.assign(name=scores["group"].map(group_label)).pivot_table(
        index="model", columns="name", values=value, aggfunc="mean")
    fig, ax = _figure(max(7.0, 0.6 * wide.shape[1] + 2), max(2.5, 0.4 * wide.shape[0] + 1.5))
    im = ax.imshow(wide.to_numpy(), vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
    ax.set_xticks(range(wide.shape[1]), wide.columns, rotation=45, ha="right")
    ax.set_yticks(range(wide.shape[0]), wide.index)
    for (i, j), v in np.ndenumerate(wide.to_numpy()):
        if np.isfinite(v):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7)
    fig.colorbar(im, ax=ax, label="safety score")
    ax.set_title(title or "Safety score per model and group")
    return fig


def measured_vs_published(df: pd.DataFrame, *, x: str = "published", y: str = "measured",
                          label: str | None = "model", title: str | None = None,
                          xlabel: str | None = None, ylabel: str | None = None) -> matplotlib.figure.Figure:
    """Scatter of two paired columns with the identity line (e.g. measured vs published
    safety scores, or ToxiGen vs ImplicitHate scores per model); points labelled by ``label``."""
    d = df.dropna(subset=[x, y])
    fig, ax = _figure(5.5, 5.0)
    ax.scatter(d[x], d[y], s=25, zorder=3)
    if label and label in d:
        for _, row in d.iterrows():
            ax.annotate(str(row[label]), (row[x], row[y]), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
    if len(d):
        lo = float(min(d[x].min(), d[y].min()))
        hi = float(max(d[x].max(), d[y].max()))
        pad = 0.05 * (hi - lo or 1)
        ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], ls="--", lw=1, color="grey", label="y = x")
        ax.legend(frameon=False)
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    ax.set_title(title or f"{y} vs {x}")
    return fig


def paired_scatter(df: pd.DataFrame, *, x: str, y: str, hue: str | None = "source",
                   label: str | None = "model", title: str | None = None,
                   xlabel: str | None = None, ylabel: str | None = None) -> matplotlib.figure.Figure:
    """Scatter of ``y`` against ``x`` coloured by ``hue`` (e.g. measured vs published models),
    without an identity line: for correlations between two metrics across models."""
    fig, ax = _figure(6.0, 5.0)
    groups = df.groupby(hue, sort=False) if hue and hue in df else [(None, df)]
    for k, (key, part) in enumerate(groups):
        part = part.dropna(subset=[x, y])
        ax.scatter(part[x], part[y], s=25, zorder=3, color=SOURCE_COLORS.get(str(key), f"C{k}"),
                   label=None if key is None else f"{key} (n={len(part)})")
        if label and label in part:
            for _, row in part.iterrows():
                ax.annotate(str(row[label]), (row[x], row[y]), fontsize=6, xytext=(3, 3),
                            textcoords="offset points")
    if hue and hue in df:
        ax.legend(frameon=False)
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    ax.set_title(title or f"{y} vs {x}")
    return fig


# --------------------------------------------------------------------------------------
# Chapters append their figure functions below (one self-contained function each).


def correlation_heatmap(pairs: pd.DataFrame, *, order: list[str] | None = None,
                        title: str | None = None) -> matplotlib.figure.Figure:
    """Lower-triangle heat map of pairwise Pearson r from a tidy table (x, y, r[, n]), as
    seed 000 Tables 3 and 4; each cell shows r and n (when given)."""
    names = order or list(dict.fromkeys(list(pairs["x"]) + list(pairs["y"])))
    idx = {n: i for i, n in enumerate(names)}
    m = np.full((len(names), len(names)), np.nan)
    nn = np.full_like(m, np.nan)
    for _, row in pairs.iterrows():
        i, j = sorted((idx[row["x"]], idx[row["y"]]), reverse=True)
        m[i, j] = row["r"]
        nn[i, j] = row.get("n", np.nan)
    fig, ax = _figure(1.2 * len(names) + 2.5, 1.0 * len(names) + 1.5)
    im = ax.imshow(m[1:, :-1], vmin=-1, vmax=1, cmap="RdBu_r")
    for (i, j), v in np.ndenumerate(m[1:, :-1]):
        if np.isfinite(v):
            n = nn[i + 1, j]
            ax.text(j, i, f"{v:.2f}" + (f"\nn={int(n)}" if np.isfinite(n) else ""), ha="center",
                    va="center", fontsize=8)
    ax.set_xticks(range(len(names) - 1), names[:-1], rotation=30, ha="right")
    ax.set_yticks(range(len(names) - 1), names[1:])
    fig.colorbar(im, ax=ax, label="Pearson r")
    ax.set_title(title or "Pearson correlation between metrics")
    return fig


def safety_vs_params(df: pd.DataFrame, *, y: str = "avg_safety_score",
                     title: str | None = None) -> matplotlib.figure.Figure:
    """Average safety score against parameter count per family, log x (seed 000 Figure 3).
    ``df``: model, family, params, ``y``, source; published rows hollow, measured filled, rows
    whose source is ``"measured, not usable"`` (failed the quality gate) grey crosses."""
    d = df.dropna(subset=["params", y]).sort_values("params")
    fig, ax = _figure(7.5, 4.8)
    for k, (fam, part) in enumerate(d.groupby("family", sort=False)):
        color = f"C{k % 10}"
        ax.plot(part["params"], part[y], color=color, lw=1, alpha=0.6)
        for src, pp in part.groupby("source"):
            if src == "measured, not usable":
                ax.scatter(pp["params"], pp[y], s=30, zorder=3, color="0.6", marker="x", label=f"{fam} ({src})")
                continue
            ax.scatter(pp["params"], pp[y], s=30, zorder=3, edgecolor=color,
                       facecolor=color if src == "measured" else "none",
                       label=f"{fam} ({src})")
    ax.set_xscale("log")
    ax.set_xlabel("parameters (log scale)")
    ax.set_ylabel("average safety score")
    ax.legend(frameon=False, fontsize=7, ncol=2, loc="best")
    ax.set_title(title or "Average safety score vs number of parameters")
    return fig


def architecture_heatmap(df: pd.DataFrame, *, value: str = "safety_score", rows: str = "hidden",
                         cols: str = "layers", teacher: str | None = "teacher", fmt: str = "{:.3f}",
                         cmap: str = "RdYlGn", title: str | None = None, label: str | None = None,
                         ax=None) -> matplotlib.figure.Figure:
    """Hidden size x layers heat map of ``value`` (seed 000 Tables 6, 7, 14, 15); cells whose
    ``teacher`` column is true are outlined and marked "T". Empty cells are left blank."""
    wide = df.pivot_table(index=rows, columns=cols, values=value, aggfunc="mean")
    if ax is None:
        fig, ax = _figure(max(4.0, 0.9 * wide.shape[1] + 2.0), max(2.5, 0.6 * wide.shape[0] + 1.5))
    else:
        fig = ax.figure
    vals = wide.to_numpy(dtype=float)
    im = ax.imshow(vals, cmap=cmap, aspect="auto")
    ax.set_xticks(range(wide.shape[1]), [f"L={c}" for c in wide.columns])
    ax.set_yticks(range(wide.shape[0]), [f"H={r}" for r in wide.index])
    marked = set()
    if teacher and teacher in df.columns:
        marked = {(r[rows], r[cols]) for _, r in df[df[teacher].astype(bool)].iterrows()}
    for (i, j), v in np.ndenumerate(vals):
        if np.isfinite(v):
            is_t = (wide.index[i], wide.columns[j]) in marked
            ax.text(j, i, fmt.format(v) + (" T" if is_t else ""), ha="center", va="center", fontsize=8,
                    fontweight="bold" if is_t else "normal")
            if is_t:
                ax.add_patch(matplotlib.patches.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=2.5,
                                                          edgecolor="black"))
    fig.colorbar(im, ax=ax, label=label or value.replace("_", " "))
    ax.set_xlabel("layers")
    ax.set_ylabel("hidden size")
    ax.set_title(title or value)
    return fig


def measured_and_published_heatmaps(measured_panels: list, published_panel: tuple, *, rows_measured: str = "hidden",
                                    value: str = "safety_score") -> matplotlib.figure.Figure:
    """Measured heat maps (``[(frame, title), ...]``, layers x ``rows_measured``) next to one
    published table ``(frame, title)`` (layers x hidden, seed 000 Tables 6 and 7); empty panels
    are left out, the teacher outlined (:func:`architecture_heatmap`)."""
    panels = [(d, t, rows_measured) for d, t in measured_panels if len(d)]
    if len(published_panel[0]):
        panels.append((*published_panel, "hidden"))
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(5.6 * max(1, len(panels)), 3.6), layout="constrained",
                             squeeze=False)
    for ax, (d, t, rows) in zip(axes[0], panels):
        architecture_heatmap(d, value=value, rows=rows, title=t, ax=ax,
                             cmap="RdYlGn" if value == "safety_score" else "viridis_r")
    return fig


# ---------------------------------------------------------------- chapter 05

def model_bars(df: pd.DataFrame, *, category: str, value: str, hue: str = "model",
               title: str | None = None, ylabel: str | None = None) -> matplotlib.figure.Figure:
    """One bar per (``category``, ``hue``), categories on the x axis in their order (seed 003
    Figures 1, 2 and 4: toxicity of identity terms, FPR and FNR per identity, teacher beside
    student)."""
    cats = list(dict.fromkeys(df[category]))
    hues = list(dict.fromkeys(df[hue]))
    width = 0.8 / max(len(hues), 1)
    fig, ax = plt.subplots(figsize=(max(8.0, 0.22 * len(cats) * len(hues)), 4.5))
    fig.subplots_adjust(bottom=0.3)
    x = np.arange(len(cats))
    for k, h in enumerate(hues):
        part = df[df[hue] == h].set_index(category).reindex(cats)
        ax.bar(x + (k - (len(hues) - 1) / 2) * width, part[value], width=width, label=str(h))
    ax.set_xticks(x, cats, rotation=90)
    ax.set_ylabel(ylabel or value)
    ax.legend(frameon=False)
    ax.set_title(title or f"{value} per {category}")
    return fig


def pairwise_heatmaps(tests: dict[str, pd.DataFrame], *, value: str = "p_adjusted",
                      title: str | None = None) -> matplotlib.figure.Figure:
    """Seed 003 Figures 3 and 5: one panel per model, a cell per pair of identities coloured by
    ``-log10`` of the (corrected) p-value of the difference of their rates (darker = more
    significant; 1.3 is p = 0.05). Drawn with ``imshow``: fifty identities make 2,500 cells."""
    fig, axes = plt.subplots(1, len(tests), figsize=(7.5 * len(tests), 7), squeeze=False)
    fig.subplots_adjust(left=0.12, right=0.95, bottom=0.18, top=0.9, wspace=0.35)
    for ax, (name, t) in zip(axes[0], tests.items()):
        names = list(dict.fromkeys(list(t["identity_a"]) + list(t["identity_b"])))
        pos = {n: i for i, n in enumerate(names)}
        m = np.full((len(names), len(names)), np.nan)
        p = -np.log10(np.clip(t[value].to_numpy(dtype=float), 1e-300, None))
        for a, b, v in zip(t["identity_a"], t["identity_b"], p):
            m[pos[a], pos[b]] = m[pos[b], pos[a]] = v
        im = ax.imshow(m, cmap="Reds", vmin=0, interpolation="nearest")
        ax.set_xticks(range(len(names)), names, rotation=90, fontsize=6)
        ax.set_yticks(range(len(names)), names, fontsize=6)
        ax.set_title(str(name))
        fig.colorbar(im, ax=ax, shrink=0.7, label=f"-log10 {value}")
    fig.suptitle(title or "Pairwise differences of rates between identities")
    return fig


def effect_sizes(df: pd.DataFrame, *, test: str = "test", value: str = "effect_size", hue: str = "model",
                 facet: str | None = "task", title: str | None = None) -> matplotlib.figure.Figure:
    """Seed 003 Figure 10: SEAT effect size per test, teacher beside student, one panel per task."""
    facets = list(dict.fromkeys(df[facet])) if facet else [None]
    fig, axes = plt.subplots(len(facets), 1, figsize=(12, 3.8 * len(facets)), squeeze=False)
    fig.subplots_adjust(bottom=0.2, hspace=0.9)
    for ax, f in zip(axes[:, 0], facets):
        part = df if f is None else df[df[facet] == f]
        tests_ = list(dict.fromkeys(part[test]))
        hues = list(dict.fromkeys(part[hue]))
        x, width = np.arange(len(tests_)), 0.8 / max(len(hues), 1)
        for k, h in enumerate(hues):
            vals = part[part[hue] == h].set_index(test).reindex(tests_)[value]
            ax.bar(x + (k - (len(hues) - 1) / 2) * width, vals, width=width, label=str(h))
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(x, tests_, rotation=90)
        ax.set_ylabel(value)
        ax.set_title(f"{f}" if f is not None else "")
        ax.legend(frameon=False)
    fig.suptitle(title or "SEAT effect sizes")
    return fig


def forest(df: pd.DataFrame, *, value: str = "value", low: str = "ci_low", high: str = "ci_high",
           label: str = "group", hue: str = "model", ideal: float | None = None,
           title: str | None = None) -> matplotlib.figure.Figure:
    """Per-group values with their 95 % intervals, one row per ``label`` and a marker per
    ``hue`` (the report card's per-group plot); a dashed line at ``ideal``."""
    fig, ax = _figure(7.0, 0.35 * df[label].nunique() + 1.2)
    labels = list(dict.fromkeys(df[label]))
    hues = list(dict.fromkeys(df[hue]))
    for k, (name, part) in enumerate(df.groupby(hue, sort=False)):
        y = np.array([labels.index(v) for v in part[label]]) + (k - (len(hues) - 1) / 2) * 0.25
        err = np.vstack([part[value] - part[low], part[high] - part[value]]).clip(min=0)
        ax.errorbar(part[value], y, xerr=err, fmt="o", capsize=2, label=name)
    if ideal is not None:
        ax.axvline(ideal, ls="--", color="grey", lw=1)
    ax.set_yticks(range(len(labels)), [group_label(v) for v in labels])
    ax.invert_yaxis()
    ax.set_xlabel(value.replace("_", " "))
    if len(hues) > 1:
        ax.legend(loc="best", fontsize="small")
    if title:
        ax.set_title(title)
    return fig


def standing_strip(published_values: pd.Series, marks: pd.DataFrame, *, value: str = "value",
                   title: str | None = None) -> matplotlib.figure.Figure:
    """The published models' values as a strip, each of ``marks`` (model, value, ci_low, ci_high)
    drawn on it with its interval (the report card's "where it stands")."""
    fig, ax = _figure(7.0, 1.2 + 0.3 * len(marks))
    ax.scatter(published_values.to_numpy(), np.zeros(len(published_values)), color="grey", alpha=0.6,
               label="published models")
    for k, r in enumerate(marks.itertuples(), start=1):
        v = getattr(r, value)
        err = np.nan_to_num(np.clip([[v - r.ci_low], [r.ci_high - v]], 0, None))     # no interval: a point
        ax.errorbar([v], [k], xerr=err, fmt="D", capsize=3, label=r.model)
    ax.set_yticks([])
    ax.set_xlabel(value.replace("_", " "))
    ax.legend(loc="best", fontsize="small")
    if title:
        ax.set_title(title)
    return fig


# ---------------------------------------------------------------- chapter 08 (the report card's page)

#: The width of the report card's headline figure (inches): at the card's 110 dpi it fits a 400-px
#: screen nearly unscaled, so its 9-10 pt labels stay above 10 px there.
HEADLINE_WIDTH_IN = 3.9


def headline_differences(rows: pd.DataFrame, *, title: str | None = None) -> matplotlib.figure.Figure:
    """The report card's headline comparisons (one row per metric: ``metric``, ``difference`` B - A,
    ``ci_low``, ``ci_high`` at ``ci_level`` and, when known, ``detectable_difference`` and ``kind``):
    one strip per metric, each on its own scale (the metrics' units differ), a line at 0 and a grey
    band of the differences the test could not detect. ``kind`` (:func:`helpers.card.page.verdict_class`)
    colours the verdict: ``better`` green (B less harmful), ``worse`` red, ``direction`` amber, else grey."""
    colours = {"better": "#2ca02c", "worse": "#d62728", "direction": "#b8860b", "none": "0.45"}
    n = max(1, len(rows))
    # narrow, with large type: shown at 400 px (a phone) its labels stay at least 10 px high
    fig, axes = plt.subplots(n, 1, figsize=(HEADLINE_WIDTH_IN, 0.72 * n + 1.1), squeeze=False, layout="constrained")
    for ax, (_, r) in zip(axes[:, 0], rows.iterrows()):
        d, lo, hi = (float(r[k]) for k in ("difference", "ci_low", "ci_high"))
        det = float(r["detectable_difference"]) if "detectable_difference" in r and pd.notna(
            r["detectable_difference"]) else np.nan
        reach = np.nanmax(np.abs([d, lo, hi, det, 1e-12]))
        if np.isfinite(det):
            ax.axvspan(-det, det, color="0.9", lw=0)
        ax.axvline(0, color="black", lw=0.8)
        colour = colours.get(str(r.get("kind", "none")), colours["none"])
        if np.isfinite(lo) and np.isfinite(hi):
            ax.errorbar([d], [0], xerr=[[max(d - lo, 0)], [max(hi - d, 0)]], fmt="o", color=colour, capsize=3)
        else:
            ax.plot([d], [0], "o", color=colour, mfc="white")
        ax.set_xlim(-1.15 * reach, 1.15 * reach)
        ax.set_title(str(r["metric"]), loc="left", fontsize=10, pad=2)
        ax.set_yticks([])
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(4))
        ax.tick_params(axis="x", labelsize=9)
        ax.set_ylim(-0.6, 0.6)
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
    level = pd.to_numeric(rows["ci_level"], errors="coerce").dropna() if "ci_level" in rows else pd.Series(dtype=float)
    low, high = (f"{float(level.min()) * 100:.3g}", f"{float(level.max()) * 100:.3g}") if len(level) else ("95", "95")
    sub = f"intervals at {low if low == high else f'{low} to {high}'} % (family-adjusted)"
    fig.suptitle(textwrap.fill(title or "B - A, headline comparisons", 40) + f"\n{sub}, each metric on its own\nscale; "
                 "grey band: smaller than the test can detect", fontsize=10)
    return fig
