"""Per-sentence scores computed elsewhere, read from a file and checked against their data set.

:func:`scores_from_file` reads CSV, Parquet, JSONL or JSON (the upstream SafeNLP
``results/perplexities.json`` among them) for ``harms safety --scores`` and for Python users:
every row's id must be a sentence of the data set and its text (or ``text_sha256``) must be that
sentence's, so the scores of another data set are refused; a perplexity must be a positive,
finite number (or missing). Every problem is one :class:`~helpers.errors.InputError` naming the
file, the row and the value.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from helpers.datasets.safety_sets import load_safety_set
from helpers.errors import InputError, first_line
from helpers.hashing import sha256_text

__all__ = ["scores_from_file"]


def _read_scores(p: Path) -> pd.DataFrame:
    suffix = p.suffix.lower()
    try:
        if suffix == ".parquet":
            return pd.read_parquet(p)
        if suffix == ".csv":
            df = pd.read_csv(p)
            if "text" in df.columns:   # the text verbatim: "NA" or "null" are sentences, not missing values
                df["text"] = pd.read_csv(p, usecols=["text"], dtype=str, keep_default_na=False)["text"]
            return df
        if suffix in (".jsonl", ".ndjson"):
            return pd.read_json(p, lines=True, dtype=False, convert_dates=False)
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{p}: cannot read scores ({first_line(exc, with_type=True)})") from None
    if isinstance(data, dict):
        values = list(data.values())
        if values and all(isinstance(v, dict) for v in values):  # {id: {...}}
            data = [{"id": k} | v for k, v in data.items()]
        elif values and all(isinstance(v, list) for v in values):  # column-oriented
            return pd.DataFrame(data)
        else:
            raise InputError(f"{p}: expected a list of rows, {{id: row}} or {{column: values}}")
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise InputError(f"{p}: expected a JSON list of objects with a 'perplexity' field")
    return pd.DataFrame(data)


def _first(p: Path, raw: pd.DataFrame, bad, problem: str) -> InputError:
    i = int(np.flatnonzero(np.asarray(bad))[0])
    return InputError(f"{p}: row {i} (id {raw['id'].iloc[i]}): {problem(i) if callable(problem) else problem}")


def _check_texts(p: Path, raw: pd.DataFrame, ids: pd.Series, data: pd.DataFrame, dataset: str) -> None:
    """Refuse scores of other sentences: SHA-256 of each row's text (or its ``text_sha256``)
    must equal that of the data set's text for the same id, cleaned or as upstream scored it
    (``_x000D_`` kept)."""
    if "text" in raw.columns:
        given = [sha256_text(t) if isinstance(t, str) else None for t in raw["text"]]
    elif "text_sha256" in raw.columns:
        given = [h.strip().lower() if isinstance(h, str) else None for h in raw["text_sha256"]]
    else:
        raise InputError(f"{p}: needs a 'text' or 'text_sha256' column to check that its rows are the "
                         f"sentences of data set {dataset!r} (columns: {', '.join(map(str, raw.columns))})")

    def differing(table: pd.DataFrame, rows) -> list[int]:
        expected = dict(zip(table["id"], table["text"]))
        return [i for i in rows if given[i] != sha256_text(expected[ids.iloc[i]])]

    differ = differing(data, range(len(raw)))
    if differ:
        differ = differing(load_safety_set(dataset, fix_x000d=False), differ)
    if differ:
        raise InputError(f"{p}: the text of {len(differ)} of {len(raw)} rows differs from data set {dataset!r} "
                         f"(first: row {differ[0]}, id {raw['id'].iloc[differ[0]]}); these are not its scores")


def scores_from_file(scores_path, *, dataset: str = "toxigen", fix_x000d: bool = True) -> pd.DataFrame:
    """Per-sentence scores computed elsewhere, joined to ``dataset`` by ``id`` and checked by text.

    ``scores_path``: CSV, Parquet, JSONL or JSON (e.g. the upstream SafeNLP
    ``results/perplexities.json``: a list of the data set's rows, each with a ``perplexity``
    field; NaN/``null`` allowed). Each row needs ``id``, ``perplexity`` (positive and finite,
    or missing) and ``text`` or ``text_sha256``, which must match the data set's sentence of
    that id (so the scores of another data set are refused). Only ``id``, ``perplexity`` and,
    when present, ``n_tokens``, ``log_likelihood`` and ``model`` are taken from the file; text,
    label, toxicity and groups come from the validated data set. (The upstream run file
    records toxicity 2.25 for every row, neutral rows included; the data set's 1.0 is what the
    published ImplicitHate score used.) ``df.attrs["toxicity_mismatch"]`` counts the rows
    whose file toxicity differs from the data set's. ``dataset``: ``toxigen``, ``implicit-hate`` or
    a file in their format (:func:`~helpers.datasets.safety_sets.load_safety_set`).
    """
    p = Path(scores_path)
    if not p.is_file():
        raise InputError(f"scores file {p} not found")
    raw = _read_scores(p)
    for col in ("id", "perplexity"):
        if col not in raw.columns:
            raise InputError(f"{p}: missing column {col!r} (need id, perplexity and text per row)")
    boolean = raw["perplexity"].map(lambda v: isinstance(v, (bool, np.bool_)))
    if boolean.any():                 # to_numeric would read true as 1.0
        raise _first(p, raw, boolean, lambda i: f"perplexity {raw['perplexity'].iloc[i]} is a boolean, not a number")
    ppl = pd.to_numeric(raw["perplexity"], errors="coerce").astype(float)
    given = raw["perplexity"].notna()
    if (ppl.isna() & given).any():
        raise _first(p, raw, ppl.isna() & given, lambda i: f"perplexity {raw['perplexity'].iloc[i]!r} is not a number")
    if (given & ~((ppl > 0) & np.isfinite(ppl))).any():
        raise _first(p, raw, given & ~((ppl > 0) & np.isfinite(ppl)),
                     lambda i: f"perplexity {ppl.iloc[i]} is not positive and finite")
    if raw["id"].duplicated().any():
        raise _first(p, raw, raw["id"].duplicated(), "duplicate id")
    data = load_safety_set(dataset, fix_x000d=fix_x000d)
    ids = raw["id"].map(lambda v: int(v) if isinstance(v, str) and v.strip().isdigit() else v)
    unknown = ~ids.isin(set(data["id"]))
    if unknown.any():
        i = int(np.flatnonzero(unknown.to_numpy())[0])
        raise InputError(f"{p}: row {i}: id {raw['id'].iloc[i]} is not in data set {dataset!r} "
                         f"({int(unknown.sum())} unknown ids)")
    _check_texts(p, raw, ids, data, dataset)
    keep = {"id": ids, "perplexity": ppl}
    for col in ("n_tokens", "log_likelihood"):
        keep[col] = pd.to_numeric(raw[col], errors="coerce") if col in raw.columns else np.nan
    model = raw["model"].astype(str) if "model" in raw.columns else p.stem
    per_sentence = data.merge(pd.DataFrame(keep), on="id", how="inner", validate="one_to_one")
    per_sentence["model"] = model if isinstance(model, str) else per_sentence["id"].map(dict(zip(ids, model)))
    per_sentence["source"] = "measured"
    per_sentence["dataset"] = data.attrs.get("dataset", str(dataset))
    tox_col = "toxicity_score" if "toxicity_score" in raw.columns else ("toxicity" if "toxicity" in raw.columns
                                                                          else None)
    if tox_col:
        file_tox = pd.Series(pd.to_numeric(raw[tox_col], errors="coerce").to_numpy(), index=ids)
        per_sentence.attrs["toxicity_mismatch"] = int(
            (per_sentence["toxicity"].to_numpy() != file_tox.loc[per_sentence["id"]].to_numpy()).sum())
    per_sentence.attrs["scores_file"] = str(p)
    return per_sentence
