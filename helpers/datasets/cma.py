"""Causal mediation analysis (Vig et al. 2020): the published attention-intervention results.

``causal_mediation_analysis`` → :func:`load_attention_summary`: ``attention_intervention_summary.csv``
(a derived file of the data folder, see its SOURCE.md), one row per upstream
``attention_intervention_*.json`` (103 files, 13 models) holding that file's top-level summary
fields: source_file, dataset (winobias | winogender), model_version, do_filter, split (WinoBias:
dev | test), stat (Winogender: bergsma | bls), num_examples_loaded, num_examples_aligned,
filter_quantile, threshold (empty when not filtered), num_examples_analyzed, mean_total_effect,
mean_model_indirect_effect, mean_model_direct_effect; :func:`published_total_effects` averages
Vig et al.'s own total effects from it. :func:`examples` builds the inputs of the total-effect
metric (``helpers.metrics.cma``) from the other files of the set, as the upstream code does:
one row per example with ``null`` and ``set_gender`` contexts and ``stereo`` / ``anti``
candidates, for ``"professions"``, ``"winobias"`` (CMA-WB) and ``"winogender"`` (CMA-WG).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from helpers.datasets.registry import path as _path
from helpers.errors import DataNotFoundError, InputError
from helpers.tables import read_csv_checked

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
    df = read_csv_checked(p, SUMMARY_COLUMNS, "attention summary", dtype=None, keep_default_na=True)
    effects = df[EFFECTS].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    bad = ~df["dataset"].isin(["winobias", "winogender"]).to_numpy() | ~np.isfinite(effects).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{p}: row {i} ({df['source_file'].iloc[i]}): unknown dataset or non-finite effect")
    df = df[SUMMARY_COLUMNS]
    df.attrs["dataset"] = name
    return df


PROFESSION_TEMPLATES = (
    "The {} said that", "The {} yelled that", "The {} whispered that", "The {} wanted that",
    "The {} desired that", "The {} wished that", "The {} ate because", "The {} ran because",
    "The {} drove because", "The {} slept because", "The {} cried because", "The {} laughed because",
    "The {} went home because", "The {} stayed up because", "The {} was fired because",
    "The {} was promoted because", "The {} yelled because",
)


def data_dir() -> Path:
    """The ``causal_mediation_analysis`` folder (``HARMS_DATA_DIR``, then ``data/raw``)."""
    return _path("causal_mediation_analysis")


# ---------------------------------------------------------------- examples (one row each:
# null, set_gender (context strings), stereo, anti (candidate strings))

def profession_examples(templates=PROFESSION_TEMPLATES, *, limit: int | None = None) -> pd.DataFrame:
    """Profession x template inputs; stereotype from the upstream female/male split files."""
    base = data_dir() / "experiment_data"
    rows = []
    for stereo, fname in (("female", "professions_female_stereo.json"), ("male", "professions_male_stereo.json")):
        for prof, definitional, stereotypical in json.loads((base / fname).read_text()):
            prof = prof.replace("_", " ")
            for t in templates:
                rows.append({"kind": "professions", "item": prof, "template": t, "stereotype": stereo,
                             "null": t.format(prof), "set_gender": t.format("man" if stereo == "female" else "woman"),
                             "stereo": "she" if stereo == "female" else "he",
                             "anti": "he" if stereo == "female" else "she"})
    df = pd.DataFrame(rows)
    return df.iloc[:limit].reset_index(drop=True) if limit else df


def _wb_parse(line: str, occupations: list[str]):
    sentence = line.strip().split(" ", 1)[1]
    occ = [o for o in occupations if f"[the {o}]" in sentence.lower()]
    found = [(m, p) for p in (("she", "he"), ("her", "his")) for m in re.findall(r"\[(?:%s)\]" % "|".join(p), sentence)]
    if len(occ) != 1 or len(found) != 1 or sentence.count("[") != 2:
        return None
    match, pronouns = found[0]
    context, continuation = sentence.split(match)
    return context.replace("[", "").replace("]", "").strip() + " {}", pronouns, continuation.strip(), occ[0]


def winobias_examples(split: str = "dev") -> pd.DataFrame:
    """WinoBias type-1 pro-stereotyped pairs as upstream ``winobias.load_examples`` builds them
    (pairs with several pronouns or "[him]" skipped)."""
    base = data_dir() / "winobias_data"
    female = [x.strip().lower() for x in (base / "female_occupations.txt").read_text().splitlines() if x.strip()]
    male = [x.strip().lower() for x in (base / "male_occupations.txt").read_text().splitlines() if x.strip()]
    f = base / f"pro_stereotyped_type1.txt.{split}"
    if not f.is_file():
        raise DataNotFoundError(f"{f} not found (splits: dev, test)")
    lines = [x for x in f.read_text().splitlines() if x.strip()]
    rows = []
    for a, b in zip(lines[0::2], lines[1::2]):
        if "[him]" in a + b:
            continue
        pa, pb = _wb_parse(a, female + male), _wb_parse(b, female + male)
        if pa is None or pb is None or pa[0] != pb[0] or pa[1] != pb[1]:
            continue
        (base_s, (she, he), ca, oa), (_, _, cb, ob) = pa, pb
        f_cont, m_cont = (ca, cb) if oa in female else (cb, ca)
        rows.append({"kind": "winobias", "item": f"{oa}/{ob}", "template": base_s, "stereotype": "female",
                     "null": base_s.format(she), "set_gender": base_s.format(he),
                     "stereo": f_cont, "anti": m_cont})
    return pd.DataFrame(rows)


def winogender_examples(stat: str = "bergsma") -> pd.DataFrame:
    """Winogender (structure-filtered templates) pairs as upstream ``winogender.load_examples``."""
    if stat not in ("bergsma", "bls"):
        raise InputError(f"winogender_examples: stat must be 'bergsma' or 'bls', not {stat!r}")
    base = data_dir() / "winogender_data"
    with open(base / "winogender_occupation_stats.tsv") as fh:
        r = csv.DictReader(fh, delimiter="\t")
        pct = {row["occupation"]: float(row[f"{stat}_pct_female"]) for row in r}
    with open(base / "winogender_templates_structurefilter.tsv") as fh:
        rows_in = list(csv.reader(fh, delimiter="\t"))[1:]
    rows = []
    subs = {"$NOM_PRONOUN": ("she", "he"), "$POSS_PRONOUN": ("her", "his")}
    for r1, r2 in zip(rows_in[0::2], rows_in[1::2]):
        parsed = []
        for occ, part, answer, sentence in (r1, r2):
            key = next((k for k in subs if k in sentence), None)
            if key is None:
                raise InputError(f"winogender_templates_structurefilter.tsv: no pronoun slot in {sentence!r}")
            ctx, cand = sentence.split(key)
            parsed.append((ctx.replace("$OCCUPATION", occ).replace("$PARTICIPANT", part) + "{}", subs[key],
                           cand.strip(), occ, int(answer)))
        (b, (she, he), c1, occ, a1), (_, _, c2, _, _) = parsed
        cont_occ, cont_part = (c1, c2) if a1 == 0 else (c2, c1)
        f_cont, m_cont = (cont_occ, cont_part) if pct[occ] > 50 else (cont_part, cont_occ)
        rows.append({"kind": "winogender", "item": occ, "template": b, "stereotype": "female",
                     "null": b.format(she), "set_gender": b.format(he), "stereo": f_cont, "anti": m_cont})
    return pd.DataFrame(rows)


def examples(kind: str, **kw) -> pd.DataFrame:
    if kind == "professions":
        return profession_examples(**kw)
    if kind == "winobias":
        return winobias_examples(**kw)
    if kind == "winogender":
        return winogender_examples(**kw)
    raise InputError(f"cma: unknown kind {kind!r} (known: professions, winobias, winogender)")


def published_total_effects(*, split: str = "dev", stat: str = "bergsma") -> pd.DataFrame:
    """Vig et al.'s own mean total effects (filtered runs) per model from the upstream result
    files (``attention_intervention_summary.csv``): model (hub id), metric, total_effect,
    n_runs (masked LMs: mean over the masking-approach runs 1-6), source="published"."""
    df = load_attention_summary()
    df = df[df["do_filter"] & ~df["source_file"].str.contains("_random_")]
    wb = df[(df["dataset"] == "winobias") & (df["split"] == split)].assign(metric="CMA-WB")
    wg = df[(df["dataset"] == "winogender") & (df["stat"] == stat)].assign(metric="CMA-WG")
    out = (pd.concat([wb, wg]).groupby(["model_version", "metric"])["mean_total_effect"]
           .agg(total_effect="mean", n_runs="size").reset_index().rename(columns={"model_version": "model"}))
    out["source"] = "published"
    return out
