"""Two models compared item by item: per metric the paired test (DeLong for the safety score, exact
McNemar for preferences, the paired permutation test and t interval for the others), Holm over
the headline family, each interval at its Holm level, the detectable difference (Card et al.
2020), and the verdict (:func:`verdict`) that never contradicts the interval."""

from __future__ import annotations

import numpy as np
import pandas as pd

from helpers.card.catalogue import BUDGETS, CATALOGUE, ITEMS_PARAMETER, PAIRED_ON

#: The family-wise error rate of the card's verdicts (Holm over a family) and the power its
#: detectable differences assume (Card et al. 2020).
ALPHA = 0.05


def _direction_words(metric: str, difference: float) -> str:
    """What a difference of B - A of ``difference``'s sign means for ``metric``."""
    if metric.startswith("safety_score"):
        return "B safer than A" if difference > 0 else "B less safe than A"
    if metric == "crows_pairs":
        return ("B prefers the stereotypical sentence more often than A" if difference > 0
                else "B prefers the stereotypical sentence less often than A")
    if metric.startswith("stereoset_ss"):
        return ("B prefers the stereotype more often than A" if difference > 0
                else "B prefers the stereotype less often than A")
    worded = {"bold_sentiment": ("B's continuations more positive than A's", "B's continuations more negative than A's"),
              "bold_toxicity": ("B's continuations more toxic than A's", "B's continuations less toxic than A's"),
              "toxd_fpr": ("B's probe calls more non-toxic texts toxic", "B's probe calls fewer non-toxic texts toxic"),
              "atomic_probing": ("B's completions flagged toxic more often", "B's completions flagged toxic less often")}
    more, less = worded.get(metric.split(":")[0], ("B more biased than A (larger magnitude)",
                                                   "B less biased than A (smaller magnitude)"))
    return more if difference > 0 else less


def verdict(metric: str, difference: float, p_adjusted: float, ci_low: float = np.nan, ci_high: float = np.nan, *,
            detectable: float = np.nan, p_floor: float = 0.0, family_size: int = 1, interpretable: bool = True,
            why_not: str | None = None, alpha: float = ALPHA) -> str:
    """The verdict on B - A, from the family's adjusted p and never against the row's
    family-adjusted interval: a direction only when the adjusted p is below ``alpha`` and the
    interval excludes 0 on the difference's side; "no difference larger than X detected" (X the
    smallest difference the test detects with 80 % power at the family's level) when the p is not
    and the interval covers 0; "not called" when the two disagree (an exact p beside a Wald
    interval can, at the edge); "not tested" with why when there is no p; "cannot be decided" when
    the test's floor times the family is above ``alpha`` (an exact test over too few items)."""
    if not interpretable:
        return f"not interpreted ({why_not or 'a model fails the quality gate'})"
    if not np.isfinite(p_adjusted):
        return f"not tested: {why_not or 'the test gave no p-value (a constant sample or too few items)'}"
    covers = not (np.isfinite(ci_low) and np.isfinite(ci_high)) or ci_low <= 0 <= ci_high
    if p_adjusted < alpha and not covers and (ci_low > 0) == (difference > 0):
        return _direction_words(metric, difference)
    if p_adjusted >= alpha and covers:
        if p_floor * family_size >= alpha:
            return (f"cannot be decided at this budget: the smallest p its test can give over these items "
                    f"({p_floor:.2g}) times the family ({family_size}) is not below {alpha:g}")
        return (f"no difference larger than {detectable:.3g} detected" if np.isfinite(detectable)
                else "no difference detected (no detectable difference could be computed)")
    return (f"not called: the adjusted p ({p_adjusted:.3g}) and the family-adjusted interval "
            f"[{ci_low:+.3g}, {ci_high:+.3g}] disagree")


#: The metrics whose paired comparison differences the mean magnitude (signed effects: the
#: further from 0 either way, the more biased); the others difference the mean value.
MAGNITUDES = ("ceat", "ceattox", "ilps", "seat", "kurita_bec_pro")


COMPARISON_COLUMNS = ["metric", "model_a", "model_b", "group", "headline", "paired_on", "n", "value_a", "value_b",
                      "difference", "ci_low", "ci_high", "ci_level", "test", "p_value", "p_floor", "family",
                      "family_size", "p_adjusted", "detectable_difference", "verdict", "bootstrap_ci_low",
                      "bootstrap_ci_high"]


#: The name of the family of the card's headline comparisons (one per metric).
HEADLINE = "headline"


#: How each kind of test turns a standard error into an interval and a detectable difference.
SAFETY_TEST = "DeLong's test for two correlated AUCs (Sun & Xu's fast form)"


MCNEMAR_TEST = "exact McNemar (p and the interval that inverts it)"


PAIRED_TEST = "paired permutation test (p); paired t interval"


def _safety_tests(ia: pd.DataFrame, ib: pd.DataFrame, n_resamples: int, seed: int) -> pd.DataFrame:
    """Per group and for the mean over groups: DeLong's difference and variance, the z test, and
    the stratified paired bootstrap's 95 % interval as a cross-check."""
    from helpers import stats
    from helpers.metrics import safety

    d = safety.paired_group_delong(ia, ib)
    boot = safety.paired_group_differences(ia, ib, n_resamples=n_resamples, seed=seed)[["group", "ci_low", "ci_high"]]
    d = d.merge(boot.rename(columns={"ci_low": "bootstrap_ci_low", "ci_high": "bootstrap_ci_high"}), on="group",
                how="left")
    p = [stats.wald(r.difference, r.variance)["p_value"] for r in d.itertuples()]
    return pd.DataFrame({"group": d["group"], "headline": d["group"] == "mean", "n": d["n_harmful"] + d["n_benign"],
                         "value_a": d["score_a"], "value_b": d["score_b"], "difference": d["difference"],
                         "se": np.sqrt(d["variance"]), "se_unpaired": np.sqrt(d["variance_unpaired"]),
                         "df": np.nan, "discordant": np.nan, "kind": "wald", "test": SAFETY_TEST, "p_value": p,
                         "p_floor": 0.0, "bootstrap_ci_low": d["bootstrap_ci_low"],
                         "bootstrap_ci_high": d["bootstrap_ci_high"]})


def _preference_tests(d: pd.DataFrame, scale: float) -> pd.DataFrame:
    """The card's rows of a paired-preference table (CrowS-Pairs' or StereoSet's
    ``paired_preferences``, in units of ``scale``: 1 for shares, 100 for points), the overall row
    the headline."""
    return pd.DataFrame({"group": d["group"], "headline": d["group"] == "overall", "n": d["n"], "value_a": d["value_a"],
                         "value_b": d["value_b"], "difference": d["difference"], "se": d["se"], "se_unpaired": np.nan,
                         "df": np.nan, "discordant": d["discordant"], "only_a": d["only_a_pro"],
                         "only_b": d["only_b_pro"], "kind": "mcnemar", "scale": scale, "test": MCNEMAR_TEST,
                         "p_value": d["p_value"], "p_floor": d["p_floor"]})


def _paired_mean_rows(metric: str, ia: pd.DataFrame, ib: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The mean over shared items (mean magnitude for :data:`MAGNITUDES`) with the paired
    permutation p and the paired t interval; empty for fewer than two shared items."""
    from helpers import stats

    keys = [c for c in ia.columns if c != "item_value"]
    m = ia.merge(ib, on=keys, suffixes=("_a", "_b"), validate="one_to_one")
    va, vb = m["item_value_a"].to_numpy(float), m["item_value_b"].to_numpy(float)
    if metric in MAGNITUDES:
        va, vb = np.abs(va), np.abs(vb)
    if (~(np.isnan(va) | np.isnan(vb))).sum() < 2:
        return pd.DataFrame()
    r = stats.paired_mean_test(va, vb, seed=seed)
    return pd.DataFrame([{"group": "overall: mean |value|" if metric in MAGNITUDES else "overall: mean",
                          "headline": True, "n": r["n"], "value_a": r["value_a"], "value_b": r["value_b"],
                          "difference": r["difference"], "se": r["se"], "se_unpaired": r["se_unpaired"],
                          "df": r["df"], "discordant": np.nan, "kind": "t", "test": PAIRED_TEST,
                          "p_value": r["p_value"], "p_floor": r["p_floor"]}])


def _interval_and_power(rows: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """Each row's interval at its ``ci_level`` and its detectable difference at the family's
    Bonferroni level ``alpha / family_size`` (the level Holm's first step tests at; 80 % power). A
    row whose paired standard error is 0 (the models agree on every item) takes the detectable
    difference of independent samples, or for McNemar that of a discordant share equal to it."""
    from scipy import stats as st

    from helpers import stats

    out = rows.copy()
    low, high, detect = [], [], []
    for r in out.itertuples():
        level_alpha = alpha / max(int(r.family_size), 1)
        if r.kind == "t":
            q = st.t.ppf(0.5 + r.ci_level / 2, r.df)
            se = r.se if r.se > 0 else r.se_unpaired
            detect.append(stats.detectable_difference(se, alpha=level_alpha, df=r.df))
        elif r.kind == "mcnemar":                 # the interval that inverts the exact test
            lo, hi = stats.mcnemar_interval(int(r.only_a), int(r.only_b), int(r.n), confidence_level=r.ci_level)
            low.append(r.scale * lo)
            high.append(r.scale * hi)
            detect.append(r.scale * stats.mcnemar_detectable_difference(int(r.n), r.discordant, alpha=level_alpha))
            continue
        else:
            q = st.norm.ppf(0.5 + r.ci_level / 2)
            detect.append(stats.detectable_difference(r.se if r.se > 0 else r.se_unpaired, alpha=level_alpha))
        low.append(r.difference - q * r.se)
        high.append(r.difference + q * r.se)
    return out.assign(ci_low=low, ci_high=high, detectable_difference=detect)


def compare(items: dict, a: str, b: str, *, n_resamples: int, seed: int, interpretable: bool,
            flags: dict | None = None, alpha: float = ALPHA, why_not: str = "") -> pd.DataFrame:
    """Item-by-item comparison of ``b`` against ``a`` (``items[model][metric]``: what each metric
    pairs on), Holm-adjusted over stated families (:func:`helpers.stats.holm_levels`):

    - the **headline family**: one comparison per metric (its overall or mean-over-groups row), the
      card's verdicts; per-group rows are exploratory, each metric's groups a family of their own;
    - the safety score per group and for the mean over groups: S is an AUC, so two models on the
      same sentences give two correlated AUCs, tested by **DeLong's test** (DeLong et al. 1988; Sun
      & Xu 2014; :func:`helpers.metrics.safety.paired_group_delong`), with the stratified paired
      bootstrap's 95 % interval beside it as the cross-check (``bootstrap_ci_*``);
    - StereoSet's and CrowS-Pairs' preferences on the same clusters and pairs: the share of items
      preferring the stereotype (one statistic for the difference and the test), exact McNemar p
      and the interval that inverts it (the metrics' ``paired_preferences``);
    - the other metrics: the mean (for :data:`MAGNITUDES` the mean magnitude) over shared items,
      paired permutation p (exact over few items) and paired t interval
      (:func:`helpers.stats.paired_mean_test`).

    Each row's interval is at the level that agrees with its Holm decision (``ci_level``), its
    ``detectable_difference`` the smallest difference its test detects with 80 % power at the
    family's Bonferroni level (Card et al. 2020), ``p_floor`` the smallest p its test can give;
    the verdict (:func:`verdict`) never contradicts the interval. Pairs are made on items
    (sentence ids, clusters, words), not token ids, so models with different tokenizers compare.
    ``flags[(model, metric)]``: why a model's metric is shown but not read (its classifier fails
    its gate): that metric gets no verdict, whichever model it is; ``why_not``: why the models
    are not interpretable when ``interpretable`` is False (:meth:`Card.why_not_interpreted`)."""
    from helpers import stats
    from helpers.metrics import crows_pairs, stereoset

    frames = []
    for metric in CATALOGUE["metric"]:
        if metric not in items.get(a, {}) or metric not in items.get(b, {}):
            continue
        ia, ib = items[a][metric], items[b][metric]
        if ia is None or ib is None:                  # not a mean over items (FPED): no paired comparison
            continue
        if metric.startswith("safety_score"):
            d = _safety_tests(ia, ib, n_resamples, seed)
        elif metric == "crows_pairs":
            d = _preference_tests(crows_pairs.paired_preferences(ia, ib).rename(
                columns={"score_a": "value_a", "score_b": "value_b"}), 1.0)
        elif metric.startswith("stereoset_ss"):
            d = _preference_tests(stereoset.paired_preferences(ia, ib).rename(
                columns={"domain": "group", "n_clusters": "n", "share_a": "value_a", "share_b": "value_b"}), 100.0)
        else:
            d = _paired_mean_rows(metric, ia, ib, seed)
        if len(d):
            frames.append(d.assign(metric=metric, model_a=a, model_b=b, paired_on=PAIRED_ON[metric.split(":")[0]]))
    if not frames:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    out = pd.concat(frames, ignore_index=True)
    for col in ("scale", "only_a", "only_b", "bootstrap_ci_low", "bootstrap_ci_high"):
        out[col] = out[col] if col in out else np.nan
    out["family"] = np.where(out["headline"], HEADLINE, out["metric"] + " groups")
    out["p_adjusted"], out["ci_level"], out["family_size"] = np.nan, np.nan, 0
    for _, idx in out.groupby("family", sort=False).groups.items():
        adjusted, levels = stats.holm_levels(out.loc[idx, "p_value"], alpha=alpha)
        out.loc[idx, "p_adjusted"], out.loc[idx, "ci_level"] = adjusted, levels
        out.loc[idx, "family_size"] = int(np.isfinite(out.loc[idx, "p_value"].astype(float)).sum())
    out = _interval_and_power(out, alpha)
    flags = flags or {}
    verdicts = []
    for r in out.itertuples():
        why = "; ".join(f"{model}: {flags[(model, r.metric)]}" for model in (a, b) if (model, r.metric) in flags)
        ok = interpretable and not why
        verdicts.append(verdict(r.metric, r.difference, r.p_adjusted, r.ci_low, r.ci_high,
                                detectable=r.detectable_difference, p_floor=r.p_floor, family_size=r.family_size,
                                interpretable=ok, alpha=alpha,
                                why_not=(why if interpretable else
                                         (why_not or "a model fails the quality gate") + (f"; {why}" if why else ""))
                                if not ok else None))
    out["verdict"] = verdicts
    out = out[COMPARISON_COLUMNS]
    out.attrs["why"] = {c: "only the safety score has the stratified paired bootstrap cross-check"
                        for c in ("bootstrap_ci_low", "bootstrap_ci_high")}
    out.attrs["family"] = (f"Holm over the {int(out['headline'].sum())} headline comparisons (one per metric) at "
                           f"{alpha:g}; per-group rows are exploratory, Holm-adjusted within their metric")
    return out


def next_budget_words(comparison: pd.DataFrame, budget: str) -> pd.Series:
    """The verdicts, with "no difference larger than X detected" followed by what the next budget
    would detect where it sets a number of items (X times sqrt(items now / items then))."""
    names = list(BUDGETS)
    if budget not in names[:-1]:
        return comparison["verdict"]
    nxt = names[names.index(budget) + 1]
    out = []
    for r in comparison.itertuples():
        parameter, unit = ITEMS_PARAMETER.get(r.metric, (None, ""))
        now, then = BUDGETS[budget].get(parameter), BUDGETS[nxt].get(parameter)
        if (r.verdict.startswith("no difference larger than") and isinstance(now, int) and isinstance(then, int)
                and np.isfinite(r.detectable_difference)):
            out.append(f"{r.verdict} (the {nxt} budget, {then} instead of {now} {unit}, would detect about "
                       f"{r.detectable_difference * np.sqrt(now / then):.3g})")
        else:
            out.append(r.verdict)
    return pd.Series(out, index=comparison.index)
