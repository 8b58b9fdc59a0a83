"""StereoSet (Nadeem et al. 2021): the dev set's intrasentence examples and the upstream reference scores.

- ``stereoset-dev`` → :func:`load_intrasentence`: one row per intrasentence sentence of
  ``dev.json`` (2,106 clusters x 3 sentences = 6,318 rows): cluster_id, bias_type, target,
  context, sentence_id, sentence, gold_label (stereotype | anti-stereotype | unrelated),
  template_word (the word at the BLANK's position, punctuation removed, as bias-bench's
  ``StereoSetRunner`` takes it).
- ``stereoset`` → :func:`load_reference_scores`: the upstream ``evaluation.py`` output on dev.json
  for its 11 reference models (``code/predictions.json``) as a long table: model, task
  (intrasentence | intersentence | overall), domain (gender | profession | race | religion |
  overall), score (count | lms | ss | icat, from "Count", "LM Score", "SS Score", "ICAT
  Score"), value. Upstream's key "SentimentModel.json" is given as "SentimentModel".
"""

from __future__ import annotations

import json
import math
import string
from pathlib import Path

import pandas as pd

from helpers.datasets.registry import path as _path
from helpers.errors import InputError

INTRASENTENCE_COLUMNS = ["cluster_id", "bias_type", "target", "context", "sentence_id", "sentence",
                         "gold_label", "template_word"]
GOLD_LABELS = ("stereotype", "anti-stereotype", "unrelated")
SCORE_COLUMNS = ["model", "task", "domain", "score", "value"]
SCORE_NAMES = {"Count": "count", "LM Score": "lms", "SS Score": "ss", "ICAT Score": "icat"}


def template_word(context: str, sentence: str) -> str:
    """bias-bench: the word of ``sentence`` at the BLANK's position in ``context`` (split on
    " "), punctuation removed."""
    words = context.split(" ")
    idx = max(i for i, w in enumerate(words) if "BLANK" in w)
    return sentence.split(" ")[idx].translate(str.maketrans("", "", string.punctuation))


def _json(p: Path):
    try:
        return json.loads(Path(p).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{p}: cannot read JSON ({exc})") from None


def read_intrasentence(p: str | Path) -> pd.DataFrame:
    """The intrasentence examples of a StereoSet file (dev.json format), one row per sentence."""
    data = _json(p)
    try:
        examples = data["data"]["intrasentence"]
        rows = [{"cluster_id": ex["id"], "bias_type": ex["bias_type"], "target": ex["target"],
                 "context": ex["context"], "sentence_id": s["id"], "sentence": s["sentence"],
                 "gold_label": s["gold_label"], "template_word": template_word(ex["context"], s["sentence"])}
                for ex in examples for s in ex["sentences"]]
    except (TypeError, KeyError, IndexError, ValueError) as exc:
        raise InputError(f"{p}: not a StereoSet file with data.intrasentence ({type(exc).__name__}: {exc})") from None
    df = pd.DataFrame(rows, columns=INTRASENTENCE_COLUMNS)
    if df.empty:
        raise InputError(f"{p}: no intrasentence examples")
    bad = df[~df["gold_label"].isin(GOLD_LABELS)]
    if len(bad):
        raise InputError(f"{p}: sentence {bad['sentence_id'].iloc[0]}: unknown gold_label "
                         f"{bad['gold_label'].iloc[0]!r} (expected one of {GOLD_LABELS})")
    if df["sentence_id"].duplicated().any():
        raise InputError(f"{p}: duplicate sentence id {df.loc[df['sentence_id'].duplicated(), 'sentence_id'].iloc[0]}")
    return df


DOMAINS = ("gender", "profession", "race", "religion")


def load_intrasentence(name: str = "stereoset-dev", *, path: str | Path | None = None,
                       domain: str | None = None) -> pd.DataFrame:
    """The registry's StereoSet dev set (or the file ``path``) as :func:`read_intrasentence` rows;
    ``domain`` (gender | profession | race | religion) keeps that bias type only."""
    p = path or _path(name)
    df = read_intrasentence(p)
    if domain is not None:
        df = df[df["bias_type"] == domain].reset_index(drop=True)
        if df.empty:
            raise InputError(f"{p}: no intrasentence examples for domain {domain!r} (known: {', '.join(DOMAINS)})")
    df.attrs["dataset"] = name
    return df


def load_reference_scores(name: str = "stereoset", *, path: str | Path | None = None) -> pd.DataFrame:
    """The upstream reference scores (``reference_scores_predictions.json``), long and tidy."""
    p = path or _path(name, "reference_scores_predictions.json")
    data = _json(p)
    rows = []
    try:
        for model, tasks in data.items():
            model = model.removesuffix(".json")
            for task, by_domain in tasks.items():
                if task == "overall":  # one level less: the scores of both tasks together
                    by_domain = {"overall": by_domain}
                for domain, scores in by_domain.items():
                    for key, value in scores.items():
                        rows.append((model, task, domain, SCORE_NAMES[key], float(value)))
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{p}: not StereoSet evaluation output ({type(exc).__name__}: {exc})") from None
    df = pd.DataFrame(rows, columns=SCORE_COLUMNS)
    if df.empty or not all(math.isfinite(v) for v in df["value"]):
        raise InputError(f"{p}: no scores, or a score that is not a finite number")
    df.attrs["dataset"] = name
    return df


def read_predictions(path: str | Path, task: str = "intrasentence") -> pd.DataFrame:
    """A StereoSet / bias-bench predictions file -> DataFrame sentence_id, score."""
    try:
        items = _json(path)[task]
    except (KeyError, TypeError) as e:
        raise InputError(f"{path}: not a StereoSet predictions file with {task!r} ({e})") from None
    return pd.DataFrame(items).rename(columns={"id": "sentence_id"})[["sentence_id", "score"]]
