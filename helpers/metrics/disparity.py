"""Group disparity of a bias metric and its correlation across models (seed 001, Cao et al. 2022).

Seed 001 (section 2) scores every protected group of a domain with each metric and summarises a
model's bias in the domain by the *variance* of its group scores, ``S_M,domain = Var(s_g1, s_g2,
...)`` (a less biased model has a smaller variance); it then correlates, across models, the
variance of an intrinsic metric with that of an extrinsic one (Pearson's r, Table 1).

- :func:`group_scores`: a per-item score averaged per (model, domain, group), with n;
- :func:`group_variance`: the variance over groups per (model, domain, metric);
- :func:`variance_correlations`: Pearson's r (with p, n and the Fisher-z 95 % interval) and
  Spearman's rho between every intrinsic and extrinsic metric per domain, across models.

The variance's divisor is a choice the paper does not state (its code is not public):
``ddof=0`` (population variance, ``numpy.var``'s default, our default) or ``ddof=1`` (sample
variance, ``statistics.variance`` / ``pandas.Series.var``). Pearson's r is unchanged by the choice
when every model has the same number of groups in a domain (the two differ by a constant factor).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from helpers import stats
from helpers.errors import InputError

__all__ = ["group_scores", "group_variance", "variance_correlations"]


def _need(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"{what}: missing column(s) {missing} (columns: {', '.join(map(str, df.columns))})")


def group_scores(items: pd.DataFrame, value: str, *, by: Sequence[str] = ("model", "domain", "group")) -> pd.DataFrame:
    """Mean of ``value`` per ``by`` (seed 001: "the bias score for each protected group is the
    average ... score on the generations from the prompts with that protected group"), with n.
    Rows whose value is missing are left out and counted in ``n_missing``."""
    by = list(by)
    _need(items, [*by, value], "group scores")
    v = pd.to_numeric(items[value], errors="coerce")
    if v.isna().all():
        raise InputError(f"group scores: column {value!r} holds no number")
    t = items[by].assign(_v=v)
    out = t.groupby(by, sort=True).agg(score=("_v", "mean"), n=("_v", "count"),
                                       n_missing=("_v", lambda s: int(s.isna().sum())))
    return out.reset_index()


def group_variance(scores: pd.DataFrame, *, value: str = "score", by: Sequence[str] = ("model", "domain"),
                   group: str = "group", ddof: int = 0, too_few: str = "raise") -> pd.DataFrame:
    """Variance of ``value`` over the groups (column ``group``) per ``by`` (seed 001's
    ``S_M,domain``), with the number of groups; ``ddof`` 0 (default) or 1 (module docstring). A
    domain with fewer than two scored groups has no variance: ``too_few="raise"`` makes it one
    InputError line naming it, ``"skip"`` leaves it out and lists it in ``attrs["skipped"]``."""
    by = list(by)
    _need(scores, [*by, group, value], "group variance")
    if ddof not in (0, 1):
        raise InputError(f"group variance: ddof must be 0 (population) or 1 (sample), got {ddof!r}")
    if too_few not in ("raise", "skip"):
        raise InputError(f"group variance: too_few must be 'raise' or 'skip', got {too_few!r}")
    rows, skipped = [], []
    for key, part in scores.groupby(by, sort=True):
        vals = pd.to_numeric(part[value], errors="coerce").dropna()
        if part[group].nunique() != len(part):
            raise InputError(f"group variance: {dict(zip(by, key))} lists a group twice")
        if len(vals) < 2 and too_few == "skip":
            skipped.append(dict(zip(by, key)))
            continue
        if len(vals) < 2:
            raise InputError(f"group variance: {dict(zip(by, key))} has {len(vals)} scored group(s); "
                             f"a variance over groups needs two or more")
        rows.append(dict(zip(by, key)) | {"variance": float(np.var(vals.to_numpy(), ddof=ddof)),
                                          "n_groups": int(len(vals)), "groups": ", ".join(map(str, part[group]))})
    out = pd.DataFrame(rows, columns=[*by, "variance", "n_groups", "groups"])
    out.attrs["skipped"] = skipped
    return out


def variance_correlations(variances: pd.DataFrame, intrinsic: Sequence[str], extrinsic: Sequence[str], *,
                          metric: str = "metric", model: str = "model", domain: str = "domain",
                          value: str = "variance", confidence_level: float = 0.95) -> pd.DataFrame:
    """Correlation across models of each intrinsic metric's variance with each extrinsic one's,
    per domain (seed 001 Tables 1-2): one row per (domain, intrinsic, extrinsic, method) with n
    (models with both), r, p_value (two-sided) and the interval (:func:`helpers.stats.correlation`:
    Pearson with scipy's Fisher-z interval, Spearman with Bonett-Wright's). ``variances`` is long:
    columns ``metric``, ``model``, ``domain``, ``value``."""
    _need(variances, [metric, model, domain, value], "variance correlations")
    wide = variances.pivot_table(index=[domain, model], columns=metric, values=value, aggfunc="first")
    absent = [m for m in [*intrinsic, *extrinsic] if m not in wide.columns]
    if absent:
        raise InputError(f"variance correlations: no variances of metric(s) {absent} "
                         f"(have: {', '.join(map(str, wide.columns))})")
    rows = []
    for dom, part in wide.groupby(level=0, sort=True):
        for x in intrinsic:
            for y in extrinsic:
                for method in ("pearson", "spearman"):
                    r = stats.correlation(part[x], part[y], method=method, confidence_level=confidence_level)
                    rows.append({domain: dom, "intrinsic": x, "extrinsic": y} | r)
    return pd.DataFrame(rows)
