"""StereoSet (Nadeem et al. 2021): the dev set's examples, prediction files and the upstream reference scores.

- ``stereoset-dev`` → :func:`load_intrasentence`: one row per intrasentence sentence of
  ``dev.json`` (2,106 clusters x 3 sentences = 6,318 rows): cluster_id, bias_type, target,
  context, sentence_id, sentence, gold_label (stereotype | anti-stereotype | unrelated),
  template_word (the word at the BLANK's position, punctuation removed, as bias-bench's
  ``StereoSetRunner`` takes it). :func:`load_intersentence`: the intersentence task (2,123
  clusters x 3 = 6,369 rows; the same columns but template_word); :func:`load_examples`: both,
  from one read of the file.
- ``stereoset`` → :func:`load_reference_scores`: the upstream ``evaluation.py`` output on dev.json
  for its 11 reference models (``code/predictions.json``) as a long table: model, task
  (intrasentence | intersentence | overall), domain (gender | profession | race | religion |
  overall), score (count | lms | ss | icat, from "Count", "LM Score", "SS Score", "ICAT
  Score"), value. Upstream's key "SentimentModel.json" is given as "SentimentModel".
- :func:`read_prediction_file`: a predictions file (``{"intrasentence": [{"id", "score"}, ...],
  "intersentence": [...]}``, upstream's and bias-bench's format) as task, sentence_id, score, for
  :func:`helpers.metrics.stereoset.evaluate` (metrics never read files).
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
INTERSENTENCE_COLUMNS = INTRASENTENCE_COLUMNS[:-1]       # no BLANK, so no template word
TASKS = ("intrasentence", "intersentence")
COLUMNS = {"intrasentence": INTRASENTENCE_COLUMNS, "intersentence": INTERSENTENCE_COLUMNS}
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


def _examples(data, task: str, p) -> pd.DataFrame:
    """The examples of one task (intrasentence | intersentence) of parsed dev.json-format data,
    one row per sentence (:data:`COLUMNS` of the task)."""
    try:
        rows = []
        for ex in data["data"][task]:
            for s in ex["sentences"]:
                row = {"cluster_id": ex["id"], "bias_type": ex["bias_type"], "target": ex["target"],
                       "context": ex["context"], "sentence_id": s["id"], "sentence": s["sentence"],
                       "gold_label": s["gold_label"]}
                if task == "intrasentence":
                    row["template_word"] = template_word(ex["context"], s["sentence"])
                rows.append(row)
    except (TypeError, KeyError, IndexError, ValueError) as exc:
        raise InputError(f"{p}: not a StereoSet file with data.{task} ({type(exc).__name__}: {exc})") from None
    df = pd.DataFrame(rows, columns=COLUMNS[task])
    if df.empty:
        raise InputError(f"{p}: no {task} examples")
    bad = df[~df["gold_label"].isin(GOLD_LABELS)]
    if len(bad):
        raise InputError(f"{p}: sentence {bad['sentence_id'].iloc[0]}: unknown gold_label "
                         f"{bad['gold_label'].iloc[0]!r} (expected one of {GOLD_LABELS})")
    if df["sentence_id"].duplicated().any():
        raise InputError(f"{p}: duplicate sentence id {df.loc[df['sentence_id'].duplicated(), 'sentence_id'].iloc[0]}")
    return df


def read_examples(p: str | Path, tasks: tuple[str, ...] = TASKS) -> dict[str, pd.DataFrame]:
    """The examples of each of ``tasks`` of a StereoSet file (dev.json format), read once."""
    data = _json(p)
    return {task: _examples(data, task, p) for task in tasks}


def read_intrasentence(p: str | Path) -> pd.DataFrame:
    """The intrasentence examples of a StereoSet file (dev.json format), one row per sentence."""
    return read_examples(p, ("intrasentence",))["intrasentence"]


def read_intersentence(p: str | Path) -> pd.DataFrame:
    """The intersentence examples (a context sentence, then three candidate next sentences) of a
    StereoSet file (dev.json format), one row per candidate sentence."""
    return read_examples(p, ("intersentence",))["intersentence"]


DOMAINS = ("gender", "profession", "race", "religion")


def load_examples(name: str = "stereoset-dev", *, path: str | Path | None = None,
                  tasks: tuple[str, ...] = TASKS, domain: str | None = None) -> dict[str, pd.DataFrame]:
    """The registry's StereoSet dev set (or the file ``path``): {task: rows of that task};
    ``domain`` (gender | profession | race | religion) keeps that bias type only."""
    p = path or _path(name)
    out = read_examples(p, tasks)
    for task, df in out.items():
        if domain is not None:
            df = out[task] = df[df["bias_type"] == domain].reset_index(drop=True)
            if df.empty:
                raise InputError(f"{p}: no {task} examples for domain {domain!r} (known: {', '.join(DOMAINS)})")
        df.attrs["dataset"] = name
    return out


def load_intrasentence(name: str = "stereoset-dev", *, path: str | Path | None = None,
                       domain: str | None = None) -> pd.DataFrame:
    """The registry's StereoSet dev set (or the file ``path``) as :func:`read_intrasentence` rows;
    ``domain`` (gender | profession | race | religion) keeps that bias type only."""
    return load_examples(name, path=path, tasks=("intrasentence",), domain=domain)["intrasentence"]


def load_intersentence(name: str = "stereoset-dev", *, path: str | Path | None = None,
                       domain: str | None = None) -> pd.DataFrame:
    """The registry's StereoSet dev set (or the file ``path``) as :func:`read_intersentence` rows
    (2,123 clusters x 3 sentences = 6,369 rows); ``domain`` keeps that bias type only."""
    return load_examples(name, path=path, tasks=("intersentence",), domain=domain)["intersentence"]


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


PREDICTION_COLUMNS = ["task", "sentence_id", "score"]


def parse_predictions(data, source: str | Path = "predictions") -> pd.DataFrame:
    """Parsed StereoSet / bias-bench predictions (``{"intrasentence": [{"id", "score"}, ...],
    "intersentence": [...]}``, either key or both) -> DataFrame task, sentence_id, score.
    Every entry needs a string id (unique within its task) and a finite number score. Other keys
    are ignored, as upstream ``evaluation.py`` ignores them, and listed in
    ``attrs["unknown_keys"]`` (a misspelled task, e.g. "intersentance", is otherwise silently
    lost); without either task key the file is refused."""
    what = ('a JSON object with "intrasentence" and/or "intersentence": lists of '
            '{"id": sentence id, "score": number}')
    if not isinstance(data, dict):
        raise InputError(f"{source}: not a StereoSet predictions file (expected {what})")
    tasks = [t for t in TASKS if t in data]
    if not tasks:
        keys = ", ".join(map(repr, list(data)[:5])) or "none"
        raise InputError(f"{source}: no 'intrasentence' or 'intersentence' key (keys: {keys}; expected {what})")
    frames = []
    for task in tasks:
        items = data[task]
        if not isinstance(items, list) or not items:
            raise InputError(f"{source}: {task!r} is not a non-empty list (expected {what})")
        for i, it in enumerate(items):
            ok = isinstance(it, dict) and isinstance(it.get("id"), str)
            score = it.get("score") if ok else None
            if not (ok and isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score)):
                raise InputError(f"{source}: {task}[{i}] is {json.dumps(it, default=str)[:80]}; expected "
                                 '{"id": sentence id, "score": finite number}')
        df = pd.DataFrame({"task": task, "sentence_id": [it["id"] for it in items],
                           "score": [float(it["score"]) for it in items]}, columns=PREDICTION_COLUMNS)
        if df["sentence_id"].duplicated().any():
            raise InputError(f"{source}: {task}: sentence id {df.loc[df['sentence_id'].duplicated(), 'sentence_id'].iloc[0]}"
                             " is scored twice")
        frames.append(df)
    out = pd.concat(frames, ignore_index=True)
    out.attrs["unknown_keys"] = [str(k) for k in data if k not in TASKS]
    return out


def read_prediction_file(path: str | Path) -> pd.DataFrame:
    """A StereoSet / bias-bench predictions file -> DataFrame task, sentence_id, score
    (:func:`parse_predictions`), with ``attrs["model"]`` named as upstream names the file
    (:func:`predictions_model_name`) and ``attrs["source"]`` the path, for messages."""
    out = parse_predictions(_json(path), path)
    out.attrs.update(model=predictions_model_name(path), source=str(path))
    return out


def read_predictions(path: str | Path, task: str = "intrasentence") -> pd.DataFrame:
    """The ``task`` predictions of a StereoSet / bias-bench predictions file -> DataFrame sentence_id, score."""
    df = read_prediction_file(path)
    if task not in set(df["task"]):
        raise InputError(f"{path}: not a StereoSet predictions file with {task!r}")
    return df.loc[df["task"] == task, ["sentence_id", "score"]].reset_index(drop=True)


def predictions_model_name(path: str | Path) -> str:
    """The model of a predictions file, named as upstream ``evaluation.py`` names it:
    ``predictions_<model>_<heads>.json`` -> ``<model>`` (without ".json"); any other file: its stem."""
    name = Path(path).name
    if "predictions_" in name:
        return name.split("_")[1].removesuffix(".json")
    return Path(path).stem
