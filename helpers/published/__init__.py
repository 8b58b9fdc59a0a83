"""Each paper's published tables, stored as CSV files, and the one loader that reads them.

    >>> from helpers import published
    >>> published.table("000", "table1")        # seed 000, Table 1 (safety scores)
    >>> published.names()                        # every available (paper, table) key
    >>> published.registry_names("000")          # paper spelling of a model -> registry name

Data, not code: ``tables.csv`` indexes every table (paper, table, file, caption, citation,
notes) and ``seed<paper>/<table>.csv`` holds its values, typed from the papers' text
(the four seeds, ``book/intro.md``; checked against that text and the upstream README tables by
tests/test_published.py). ``seed<paper>/model_names.csv`` maps every spelling of a model in
the paper's tables (and the upstream README) to the model registry name. Computations on
these tables live in :mod:`helpers.published.recompute`.
"""

from __future__ import annotations

import functools
import importlib.resources

import pandas as pd

from helpers.errors import HarmsError

__all__ = ["table", "names", "caption", "citation", "registry_names", "paper_settings"]


def _read(relative: str, **kw) -> pd.DataFrame:
    """A CSV shipped in this package."""
    with importlib.resources.files(__name__).joinpath(relative).open("r", encoding="utf-8") as fh:
        return pd.read_csv(fh, **kw)


@functools.lru_cache(maxsize=1)
def _index() -> pd.DataFrame:
    return _read("tables.csv", dtype=str, keep_default_na=False).set_index(["paper", "table"])


def _key(paper: str, name: str) -> tuple[str, str]:
    key = (str(paper).zfill(3), str(name).lower().replace(" ", ""))
    if key not in _index().index:
        known = ", ".join(f"{p}/{n}" for p, n in names())
        raise HarmsError(f"no published table {key[0]}/{key[1]}; known: {known}")
    return key


def names() -> list[tuple[str, str]]:
    """Every (paper, table) key, sorted."""
    return sorted(_index().index)


def caption(paper: str, name: str) -> str:
    return _index().loc[_key(paper, name), "caption"]


def citation(paper: str, name: str) -> str:
    return _index().loc[_key(paper, name), "citation"]


@functools.lru_cache(maxsize=None)
def _values(key: tuple[str, str]) -> pd.DataFrame:
    return _read(_index().loc[key, "file"])


def table(paper: str, name: str) -> pd.DataFrame:
    """The published table ``name`` of seed ``paper`` (e.g. ``("000", "table1")``) with
    ``source="published"`` and attrs ``caption``, ``table``, ``citation`` and ``notes``."""
    key = _key(paper, name)
    df = _values(key).copy()
    df["source"] = "published"
    row = _index().loc[key]
    df.attrs.update(caption=row["caption"], table=f"seed {key[0]} {key[1]}", citation=row["citation"],
                    notes=row["notes"])
    return df


def registry_names(paper: str = "000") -> dict[str, str]:
    """Every spelling of a model name in the paper's tables (and its upstream README) ->
    the model registry name (``seed<paper>/model_names.csv``)."""
    paper = str(paper).zfill(3)
    try:
        df = _read(f"seed{paper}/model_names.csv", dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise HarmsError(f"no model-name table for paper {paper}") from None
    return dict(zip(df["paper_name"], df["registry_name"]))


def paper_settings() -> pd.DataFrame:
    """Each paper's own setting of each chapter parameter it fixes (``paper_settings.csv``):
    chapter (notebook stem), parameter, value (the parsed JSON literal the ``paper`` profile
    passes), seed, where (section, table or footnote), text (the paper's words), estimate
    (single-GPU wall time, where the setting is large). The ``paper`` profile of
    ``book/profiles.yml`` resolves to exactly these (:func:`helpers.book.load_profile`)."""
    import json

    df = _read("paper_settings.csv", dtype=str, keep_default_na=False)
    values, bad = [], []
    for r in df.itertuples():
        try:
            values.append(json.loads(r.value))
        except ValueError:
            bad.append(f"{r.chapter}.{r.parameter}")
    if bad:
        raise HarmsError(f"paper_settings.csv: value is not a JSON literal for {', '.join(bad)}")
    return df.assign(value=pd.Series(values, index=df.index, dtype=object))
