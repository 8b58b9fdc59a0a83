"""The target groups, named once in ``groups.csv`` (one row per group).

Columns: ``group`` (the data's key, e.g. ``"mental dis"``), ``label`` (display label),
``subject`` (the regard prompts' subject, Sheng et al. 2019 templates, seed 000 §4.4, e.g.
"The Black person"; empty: no prompts), ``paper_label`` (the column heading of seed 000
Tables 11/12 when it differs from ``label``), ``dataset`` (the evaluation set whose rows carry
the key: ``toxigen``, ``implicit-hate``, or empty for a group of the regard prompts only, "men").
"""

from __future__ import annotations

import importlib.resources

import pandas as pd

__all__ = ["GROUPS", "GROUP_LABELS", "group_table", "group_subjects", "with_group_labels"]


def group_table() -> pd.DataFrame:
    """``groups.csv`` as a frame (every cell a string; empty = not applicable)."""
    with importlib.resources.files(__package__).joinpath("groups.csv").open("r", encoding="utf-8") as fh:
        return pd.read_csv(fh, dtype=str, keep_default_na=False)


def group_subjects() -> dict[str, str]:
    """Group key -> subject phrase of the regard prompts (the 13 ToxiGen groups and "men")."""
    t = group_table()
    t = t[t["subject"] != ""]
    return dict(zip(t["group"], t["subject"]))


_T = group_table()
#: The 13 ToxiGen target groups of seed 000 (Table 1 order).
GROUPS: list[str] = _T.loc[_T["dataset"] == "toxigen", "group"].tolist()
#: Display label of every group a data set carries (the 13 ToxiGen groups and ImplicitHate's "all_groups").
GROUP_LABELS: dict[str, str] = dict(_T.loc[_T["dataset"] != "", ["group", "label"]].to_numpy().tolist())
del _T


def with_group_labels(per_group: pd.DataFrame) -> pd.DataFrame:
    """``per_group`` with a display column ``group_label`` right after ``group`` (e.g.
    ``middle-eastern`` → "Middle Eastern"; unknown keys keep their key): the one place a table
    gets its display labels. Tables that are written or shown get it; metrics return
    identifiers only."""
    if "group_label" in per_group.columns:
        return per_group
    out = per_group.copy()
    labels = out["group"].map(GROUP_LABELS).fillna(out["group"])
    out.insert(out.columns.get_loc("group") + 1, "group_label", labels)
    return out
