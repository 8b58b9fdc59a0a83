"""Each paper's published tables as DataFrames, named by table.

    >>> from helpers import published
    >>> published.table("000", "table1")        # seed 000, Table 1 (safety scores)
    >>> published.names()                        # every available (paper, table) key

Tables are registered by the per-paper modules (``seed000.py``, ...) with
:func:`register`; every returned frame carries ``source="published"``.
Values are typed from the paper text in ../shared/seeds/ (or read from the
upstream CSVs that the data directory holds) and are never measured here.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Callable

import pandas as pd

from helpers.errors import HarmsError

_TABLES: dict[tuple[str, str], Callable[[], pd.DataFrame]] = {}
_CAPTIONS: dict[tuple[str, str], str] = {}


def register(paper: str, name: str, caption: str):
    """Decorator: register a zero-argument function returning a published table."""

    def deco(fn: Callable[[], pd.DataFrame]):
        _TABLES[(paper, name)] = fn
        _CAPTIONS[(paper, name)] = caption
        return fn

    return deco


def _load_all() -> None:
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")


def names() -> list[tuple[str, str]]:
    _load_all()
    return sorted(_TABLES)


def caption(paper: str, name: str) -> str:
    _load_all()
    return _CAPTIONS[(paper, name)]


def table(paper: str, name: str) -> pd.DataFrame:
    """The published table ``name`` of seed ``paper`` (e.g. ``("000", "table1")``)."""
    _load_all()
    key = (str(paper).zfill(3), name.lower().replace(" ", ""))
    if key not in _TABLES:
        known = ", ".join(f"{p}/{n}" for p, n in sorted(_TABLES))
        raise HarmsError(f"no published table {key[0]}/{key[1]}; known: {known}")
    df = _TABLES[key]().copy()
    df["source"] = "published"
    df.attrs["caption"] = _CAPTIONS[key]
    df.attrs["table"] = f"seed {key[0]} {key[1]}"
    return df
