"""Associations read from a model's log-probabilities, per group with intervals:

- Kurita et al. (2019)'s log-probability bias on BEC-Pro (Bartl et al. 2020): each sentence's
  association log(p_target / p_prior) (eq. 1), female minus male per profession group;
- the categorical bias score (CB, Ahn & Oh 2021 eq. 2): the variance over target groups of the
  normalised log-probabilities, averaged over templates and attributes.
"""

from __future__ import annotations

import pandas as pd

from helpers import cache, hashing, runner, stats
from helpers.datasets import load as load_dataset
from helpers.measures.intervals import paired_items


def sample_rows(df: pd.DataFrame, n, seed: int, *, stratify: str | None = None) -> pd.DataFrame:
    """``n`` rows (or all) drawn with ``seed``, stratified by ``stratify`` when given, in their order."""
    if n == "all" or n >= len(df):
        return df.reset_index(drop=True)
    if stratify is None:
        return df.sample(n=n, random_state=seed).sort_index().reset_index(drop=True)
    share = n / len(df)
    parts = [g.sample(n=max(1, round(len(g) * share)), random_state=seed) for _, g in df.groupby(stratify, sort=True)]
    return pd.concat(parts).sort_index().reset_index(drop=True)


def bec_pro_associations(handle, params: dict) -> pd.DataFrame:
    """BEC-Pro associations (:func:`helpers.metrics.logprob_bias.bec_pro_associations`) of one
    model on a seeded sample of whole profession x pattern blocks (``bec_pro_sample`` sentences,
    all 18 person words per block), cached under the model's identity and the sample."""
    from helpers.metrics import logprob_bias as lpb

    bec = load_dataset("bec-pro")
    blocks = bec[["profession", "pattern"]].drop_duplicates()
    n_blocks = "all" if params["bec_pro_sample"] == "all" else max(1, params["bec_pro_sample"] // 18)
    sample = bec.merge(sample_rows(blocks, n_blocks, params["seed"]), on=["profession", "pattern"])
    settings = {"sample": hashing.sha256_frame(sample[["template", "person", "profession"]]), "neutral": "person"}
    return runner.cached_result(handle, "bec-pro-associations", settings,
                                lambda lm: lpb.bec_pro_associations(lm, sample, progress=False))


def cb_log_probs(handle, params: dict) -> pd.DataFrame:
    """Normalised log-probabilities (:func:`helpers.metrics.categorical.normalized_log_probs`) of one
    model on the English ethnic-bias templates: the first ``cb_sample[0]`` templates x a seeded
    ``cb_sample[1]`` of the 70 attributes x the 35 countries, cached under its identity and the sentences."""
    from importlib.metadata import version

    from helpers.datasets import ethnic
    from helpers.metrics import categorical

    # the filled templates, kept under the source files and inflect's version (its plurals fill the
    # [AAAs] slots; importing it costs seconds): a warm card or chapter fills nothing
    key = {"kind": "ethnic-bias-filled", "version": 1, "inflect": version("inflect"),
           "files": [hashing.sha256_file(f) for f in ethnic.source_files()]}
    table = cache.memoize(key, lambda: load_dataset("ethnic-bias"))
    attrs = sample_rows(pd.DataFrame({"attribute": table["attribute"].unique()}), params["cb_sample"][1], params["seed"])
    table = table[table["template_id"] < params["cb_sample"][0]].merge(attrs, on="attribute")
    targets = ethnic.targets("en")
    settings = {"sentences": hashing.sha256_json(table["sentence"].tolist()), "targets": targets}
    return runner.cached_result(handle, "cb-log-probs", settings,
                                lambda lm: categorical.normalized_log_probs(lm, table, targets, progress=False))


def kurita_bec_pro(handle, settings: dict) -> dict:
    """Kurita et al.'s log-probability bias on BEC-Pro (:func:`bec_pro_associations`): per
    profession group and overall, the mean female - male association with a bootstrap interval over
    sentence pairs; paired over pairs, differencing the mean |female - male|."""
    from helpers.metrics import logprob_bias

    pairs = logprob_bias.gender_pairs(bec_pro_associations(handle, settings))
    pairs = pairs.assign(gap=pairs["female"] - pairs["male"])
    rows = []
    for group, p in [*pairs.groupby("profession_gender", sort=True), ("all", pairs)]:
        lo, hi = stats.mean_interval(p["gap"], n_resamples=settings["n_resamples"], seed=settings["seed"])
        rows.append({"group": group, "value": p["gap"].mean(), "ci_low": lo, "ci_high": hi, "n": len(p)})
    items = paired_items(pairs.assign(magnitude=pairs["gap"].abs()), ["profession", "pattern", "male_person"],
                         "magnitude")
    return {"kurita_bec_pro": (pd.DataFrame(rows), items)}


def categorical_bias(handle, settings: dict) -> dict:
    """The categorical bias score (CB, Ahn & Oh 2021; :func:`cb_log_probs`) per template and
    overall, with a bootstrap interval over (template, attribute) sentences; paired over them."""
    from helpers.metrics import categorical

    log_probs = cb_log_probs(handle, settings)
    variances, scores = categorical.attribute_variances(log_probs), categorical.categorical_bias_score(log_probs)
    rows = []
    for r in scores.itertuples():
        part = variances if r.template_id == "all" else variances[variances["template_id"] == r.template_id]
        lo, hi = stats.mean_interval(part["variance"], n_resamples=settings["n_resamples"], seed=settings["seed"])
        rows.append({"group": "overall" if r.template_id == "all" else f"template {r.template_id}", "value": r.cb,
                     "ci_low": lo, "ci_high": hi, "n": len(part)})
    return {"categorical_bias": (pd.DataFrame(rows), paired_items(variances, ["template_id", "attribute"], "variance"))}
