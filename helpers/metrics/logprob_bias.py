"""Log-probability bias on BEC-Pro (Kurita et al. 2019; Bartl et al. 2020; seed 003 section 3.3).

Each BEC-Pro sentence has a person word (he, woman, uncle, ...) and a profession. The person is
the target, the profession the attribute:

    association = log p(person | sentence with the person masked)
                - log p(person | sentence with the person and the profession masked)

(Kurita et al.'s log-ratio with the attribute-masked prior; the profession is masked by as many
masks as its tokens, :func:`helpers.lm.cloze.kurita_log_ratio`; a causal LM gets that function's
documented analogue: sentence log-likelihoods with the profession vs the word "person"). Bartl
et al. compare each female
sentence with its male counterpart (same profession and pattern, the person word's pair:
she/he, woman/man, ..., :data:`PERSON_PAIRS`) by a Wilcoxon signed-rank test, per profession
group (professions with mostly female, mostly male or balanced participation) and overall; the
effect size is ``r = Z / sqrt(N)`` (:func:`helpers.stats.wilcoxon_signed_rank`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from helpers.errors import InputError
from helpers.lm.cloze import BLANK, cloze_logprobs, kurita_log_ratio
from helpers.stats import wilcoxon_signed_rank

__all__ = ["PERSON_PAIRS", "ILPS_TEMPLATE", "bec_pro_associations", "gender_pairs", "paired_gender_test", "ilps",
           "ilps_groups"]

#: BEC-Pro's person words, male -> female (Bartl et al. 2020, Table 1).
PERSON_PAIRS = {"He": "She", "man": "woman", "brother": "sister", "son": "daughter", "husband": "wife",
                "boyfriend": "girlfriend", "father": "mother", "uncle": "aunt", "dad": "mom"}
_ID = ["profession", "profession_gender", "pattern"]


def bec_pro_associations(loaded, bec: pd.DataFrame, **options) -> pd.DataFrame:
    """One row per BEC-Pro sentence: its columns and ``log_prob``, ``prior_log_prob``,
    ``association`` (module docstring). ``options`` go to :func:`helpers.lm.cloze.cloze_logprobs`
    (``masked="joint"`` or ``"l2r"``, ``batch_tokens``, ``cache``)."""
    need = {"template", "person", "profession", "gender", "profession_gender", "pattern"}
    if missing := need - set(bec.columns):
        raise InputError(f"BEC-Pro table: missing column(s) {', '.join(sorted(missing))}")
    if bec.empty:
        raise InputError("BEC-Pro table: no rows")
    scores = kurita_log_ratio(loaded, bec["template"].tolist(), [[p] for p in bec["person"]],
                              bec["profession"].tolist(), **options)
    return bec.reset_index(drop=True).assign(log_prob=scores["log_prob"].to_numpy(),
                                             prior_log_prob=scores["prior_log_prob"].to_numpy(),
                                             association=scores["log_ratio"].to_numpy())


def gender_pairs(associations: pd.DataFrame, value: str = "association") -> pd.DataFrame:
    """Male and female versions of each sentence side by side: ``profession, profession_gender,
    pattern, male_person, female_person, male, female``. A sentence without its counterpart is
    one InputError."""
    male_of = {f: m for m, f in PERSON_PAIRS.items()}
    df = associations.assign(pair=associations["person"].map(lambda p: p if p in PERSON_PAIRS else male_of.get(p)))
    if df["pair"].isna().any():
        raise InputError(f"person word {df.loc[df['pair'].isna(), 'person'].iloc[0]!r} is not a BEC-Pro person word")
    wide = df.pivot_table(index=[*_ID, "pair"], columns="gender", values=value, aggfunc="first")
    if {"male", "female"} - set(wide.columns) or wide[["male", "female"]].isna().any().any():
        raise InputError("every BEC-Pro sentence needs its male and female version (same profession and pattern)")
    wide = wide.reset_index().rename(columns={"pair": "male_person"})
    wide.insert(len(_ID) + 1, "female_person", wide["male_person"].map(PERSON_PAIRS))
    return wide[[*_ID, "male_person", "female_person", "male", "female"]]


def paired_gender_test(associations: pd.DataFrame, *, by: str = "profession_gender", **wilcoxon) -> pd.DataFrame:
    """Female vs male associations per ``by`` group and ``"all"``: ``group, n_pairs,
    mean_female, mean_male, mean_difference`` (female - male) and the Wilcoxon fields (x = female,
    y = male: ``r`` > 0 when female associations are higher)."""
    pairs = gender_pairs(associations)
    parts = [(g, p) for g, p in pairs.groupby(by, sort=True)] + [("all", pairs)]
    rows = []
    for group, p in parts:
        f, m = p["female"].to_numpy(float), p["male"].to_numpy(float)
        rows.append({"group": group, "n_pairs": len(p), "mean_female": float(np.mean(f)),
                     "mean_male": float(np.mean(m)), "mean_difference": float(np.mean(f - m)),
                     **wilcoxon_signed_rank(f, m, **wilcoxon)})
    return pd.DataFrame(rows)


#: Seed 001's ILPS template (section 2: "The [group] is <mask>."); ``{}`` is the group phrase.
ILPS_TEMPLATE = "The {} is " + BLANK + "."


def ilps(loaded, phrases: dict, attributes, *, template: str = ILPS_TEMPLATE, neutral: str = "person",
         **options) -> pd.DataFrame:
    """Increased log probability (Kurita et al. 2019; seed 001's ILPS) of every attribute word in
    ``template`` filled with every group phrase: one row per (group, attribute) with ``log_prob``,
    ``prior_log_prob`` and ``ilps = log_prob - prior_log_prob``.

    ``phrases``: group -> phrase put in the template ("woman", "Muslim person"). Masked and
    permutation LMs: Kurita's prior, the phrase masked too (:func:`helpers.lm.cloze.kurita_log_ratio`).
    Causal LMs: the text after the blank is dropped, so the blank is last and both terms are exact
    next-word log-probabilities, ``log p(attribute | "The woman is") - log p(attribute | "The
    person is")`` (the phrase replaced by ``neutral``): the sentence log-likelihood analogue that
    :func:`~helpers.lm.cloze.kurita_log_ratio` uses would add the phrase's own log-probability,
    which differs between groups and would swamp the attribute's. ``options`` go to
    :func:`helpers.lm.cloze.cloze_logprobs`."""
    if not isinstance(phrases, dict) or not phrases or not all(isinstance(v, str) and v.strip()
                                                                for v in phrases.values()):
        raise InputError("ILPS: phrases must map each group to a non-empty phrase")
    attributes = [attributes] if isinstance(attributes, str) else list(attributes)
    if not attributes:
        raise InputError("ILPS: no attribute words")
    if template.count("{}") != 1 or template.count(BLANK) != 1:
        raise InputError(f"ILPS: the template must hold one {{}} (the group) and one {BLANK} (the attribute): "
                         f"{template!r}")
    groups = list(phrases)
    if loaded.objective == "causal":
        head = template[:template.index(BLANK) + len(BLANK)]
        filled = [head.format(phrases[g]) for g in groups]
        target = cloze_logprobs(loaded, filled, attributes, **options)
        prior = cloze_logprobs(loaded, [head.format(neutral)], attributes, **options)
        prior_by_word = dict(zip(prior["candidate"], prior["log_prob"]))
        target["prior_log_prob"] = target["candidate"].map(prior_by_word).to_numpy()
    else:
        filled = [template.format(phrases[g]) for g in groups]
        target = kurita_log_ratio(loaded, filled, attributes, [phrases[g] for g in groups], **options)
    out = pd.DataFrame({"group": [groups[i] for i in target["template_id"]], "phrase": [phrases[groups[i]]
                        for i in target["template_id"]], "attribute": target["candidate"].to_numpy(),
                        "template": target["template"].to_numpy(), "log_prob": target["log_prob"].to_numpy(),
                        "prior_log_prob": target["prior_log_prob"].to_numpy()})
    out["ilps"] = out["log_prob"] - out["prior_log_prob"]
    out["method"] = target["method"].to_numpy()
    return out


def ilps_groups(scores: pd.DataFrame, attribute_sets: dict) -> pd.DataFrame:
    """Mean ILPS per group over each attribute set (``{"unpleasant": [...], ...}``): one row per
    (group, attribute set) with ``ilps`` and ``n`` (attribute words scored)."""
    rows = []
    for name, words in attribute_sets.items():
        part = scores[scores["attribute"].isin(list(words))]
        if part.empty:
            raise InputError(f"ILPS: no scored attribute of the set {name!r}")
        g = part.groupby("group", sort=False)["ilps"].agg(["mean", "size"]).reset_index()
        rows.append(g.rename(columns={"mean": "ilps", "size": "n"}).assign(attribute_set=name))
    return pd.concat(rows, ignore_index=True)[["group", "attribute_set", "ilps", "n"]]
