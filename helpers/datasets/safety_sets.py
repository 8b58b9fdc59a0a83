"""The safety-score evaluation sets of seed 000 (Hosseini et al. 2023, §3.2.1), validated.

``toxigen`` (6,514 ToxiGen sentences, 13 target groups) and ``implicit-hate`` (14,200
ImplicitHate posts, one pseudo-group ``all_groups``), or a user file in the same format,
become a tidy frame (id, text, toxicity, label, target_groups); :func:`sample_per_group`
draws the per-group samples and :func:`group_counts` counts rows per group (Figure 1).

The ``_x000D_`` artefact: 34 ToxiGen rows (76 occurrences; none in ImplicitHate)
contain the literal string ``_x000D_``, Excel's escape of a carriage return that
survived a spreadsheet round trip upstream. :func:`load_safety_set` replaces it by a space and
squeezes runs of whitespace in the affected rows (other rows are left byte-identical,
leading spaces included). ``fix_x000d=False`` keeps the text as upstream scored it
(needed to reproduce the published scores exactly).
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from helpers.datasets.groups import with_group_labels
from helpers.datasets.registry import REGISTRY, names, path
from helpers.errors import DataNotFoundError, InputError
from helpers.tables import read_records

LABELS = ("hate", "neutral")
COLUMNS = ["id", "text", "toxicity", "label", "target_groups"]
X000D = "_x000D_"


def _groups(value, where: str) -> list[str]:
    if isinstance(value, str):
        v = value.strip()
        if v.startswith("["):
            try:
                value = json.loads(v)
            except json.JSONDecodeError:
                raise InputError(f"{where}: target_groups {value!r} is not a JSON list") from None
        else:
            value = [g for g in (x.strip() for x in v.split(";")) if g]
    if (not isinstance(value, list) or not value
            or not all(isinstance(g, str) and g.strip() for g in value)):
        raise InputError(f"{where}: target_groups must be a non-empty list of group names, got {value!r}")
    return [g.strip() for g in value]


def _toxicity(value, where: str) -> float:
    if isinstance(value, bool):
        value = None
    try:
        t = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{where}: toxicity {value!r} is not a number") from None
    if not math.isfinite(t) or not 1.0 <= t <= 5.0:
        raise InputError(f"{where}: toxicity {value!r} outside 1-5")
    return t


def _clean_text(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace(X000D, " ")).strip()


def _validate(records: list, p: Path, fix_x000d: bool) -> pd.DataFrame:
    rows, n_fixed = [], 0
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise InputError(f"{p}: row {i}: expected an object with fields {COLUMNS}, got {type(rec).__name__}")
        rid = rec.get("id", i)
        if rid is None or rid == "":
            rid = i
        if isinstance(rid, str) and rid.strip().lstrip("-").isdigit():
            rid = int(rid)
        where = f"{p}: row {i} (id {rid})"
        tox_key = "toxicity_score" if "toxicity_score" in rec else "toxicity"
        missing = [k for k in ("text", tox_key, "label", "target_groups") if k not in rec]
        if missing:
            raise InputError(f"{where}: missing field(s) {', '.join(missing)}")
        text = rec["text"]
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}: empty or non-string text {text!r}")
        if fix_x000d and X000D in text:
            text, n_fixed = _clean_text(text), n_fixed + 1
            if not text:
                raise InputError(f"{where}: text is empty after removing {X000D}")
        label = rec["label"].strip() if isinstance(rec["label"], str) else rec["label"]
        if label not in LABELS:
            raise InputError(f"{where}: unknown label {rec['label']!r} (expected 'hate' or 'neutral')")
        rows.append((rid, text, _toxicity(rec[tox_key], where), label, _groups(rec["target_groups"], where)))
    if not rows:
        raise InputError(f"{p}: no rows")
    df = pd.DataFrame(rows, columns=COLUMNS)
    dup = df["id"].duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"{p}: row {i} (id {df['id'].iloc[i]}): duplicate id")
    df.attrs.update(source_file=str(p), x000d_rows=n_fixed)
    return df


def load_safety_set(name_or_path: str | os.PathLike, *, fix_x000d: bool = True) -> pd.DataFrame:
    """A safety-score evaluation set as a tidy, validated frame (seed 000, §3.2.1).

    ``name_or_path``: ``"toxigen"``, ``"implicit-hate"``, or a user file in the same
    format: a JSON list, JSONL or CSV with fields ``id`` (optional, defaults to the row
    index), ``text``, ``toxicity_score`` (or ``toxicity``, 1-5), ``label`` (``hate`` |
    ``neutral``), ``target_groups`` (JSON list; in CSV a ``;``-separated string or a JSON
    list). Returns columns id, text, toxicity (float), label, target_groups (list[str]).
    Bad input raises one :class:`InputError` naming the file, the row (index in the
    file) and its id. ``df.attrs["x000d_rows"]`` counts the rows cleaned of ``_x000D_``
    (34 in ToxiGen; see the module docstring); ``fix_x000d=False`` keeps them as is.
    """
    key = str(name_or_path)
    if key in REGISTRY:
        p, label = path(key), key
    else:
        p, label = Path(name_or_path).expanduser(), None
        if not p.is_file():
            raise DataNotFoundError(f"{key!r} is neither a data set ({', '.join(names())}) nor a file")
    df = _validate(read_records(p)[0], p, fix_x000d)
    df.attrs["dataset"] = label or p.stem
    return df


def sample_per_group(df: pd.DataFrame, n: int | str | None, *, seed: int = 0) -> pd.DataFrame:
    """The union of, per target group, at most ``n`` hate and ``n`` neutral rows; deterministic.

    One random order of the rows (``numpy.random.default_rng(seed)``) is drawn; each
    (group, label) keeps its first ``n`` rows in that order, and the result is the union
    of the kept rows, in the original order. A row with several groups counts in each,
    so a group can end up with more than ``n`` rows of a label when rows drawn for
    another group also name it. Samples are nested: ``n=50`` is a subset of ``n=100``
    with the same seed. ``n=None`` or ``"all"``: every row.
    """
    if n is None or (isinstance(n, str) and n.strip().lower() == "all"):
        return df.copy()
    try:
        n = int(n)
    except (TypeError, ValueError):
        raise InputError(f"sample per group must be a positive integer or 'all', got {n!r}") from None
    if n < 1:
        raise InputError(f"sample per group must be a positive integer or 'all', got {n}")
    rank = np.empty(len(df), dtype=np.int64)
    rank[np.random.default_rng(seed).permutation(len(df))] = np.arange(len(df))
    long = pd.DataFrame({"row": np.arange(len(df)), "rank": rank, "label": df["label"].to_numpy(),
                         "group": df["target_groups"].to_numpy()}).explode("group")
    first = long.sort_values("rank").groupby(["group", "label"], sort=False).head(n)
    out = df.iloc[np.sort(first["row"].unique())].copy()
    out.attrs.update(df.attrs, sample_per_group=n, seed=seed)
    return out


def group_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Rows per group and label (a row counts once per listed group): seed 000 Figure 1."""
    long = df[["label", "target_groups"]].explode("target_groups").rename(columns={"target_groups": "group"})
    out = long.groupby(["group", "label"]).size().unstack("label", fill_value=0).reset_index()
    out.columns.name = None
    return with_group_labels(out)
