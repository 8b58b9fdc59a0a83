"""Bias madlibs: the generator rebuilt here gives exactly upstream's released sentences (the
root en_sentence_templates.csv, read with the csv module), the documented counts, identity
terms, and the word vs substring matching of identity terms."""

from __future__ import annotations

import csv
import math
import re

import pandas as pd
import pytest

from helpers.datasets import madlibs, registry
from helpers.errors import DataNotFoundError, InputError


def _folder():
    try:
        return registry.path("bias-madlibs").parents[4]
    except DataNotFoundError as exc:
        pytest.skip(str(exc))


def test_generated_sentences_are_the_released_ones():
    folder = _folder()
    with open(folder / "en_sentence_templates.csv", newline="", encoding="utf-8") as fh:
        released = {(r["phrase"], r["toxicity"], r["template"]) for r in csv.DictReader(fh)}
    df = madlibs.load_madlibs()
    ours = {(t, "toxic" if label == "toxic" else "nontoxic", tpl) for t, label, tpl in zip(df.text, df.label, df.template)}
    assert ours == released and len(df) == len(released) == 76_564
    assert df["label"].value_counts().to_dict() == {"toxic": 38_282, "non-toxic": 38_282}
    named = df[df["identity"] != ""]
    assert all(re.search(rf"(?<!\w){re.escape(i)}(?!\w)", t) for t, i in zip(named.text, named.identity))
    assert (df["template"] == "you_occupation").sum() == (df["identity"] == "").sum() == 864
    assert "cis" not in set(df["identity"]) and set(named["identity_group"]) == {
        "age", "disability", "ethnicity", "gender", "religion", "sexuality"}


def test_all_identities_count_equals_the_product_of_the_slot_sizes():
    folder = _folder() / "new_madlibber/input_data/en/en-us"
    with open(folder / "words.csv", newline="", encoding="utf-8") as fh:
        words = [r for r in csv.DictReader(fh) if r["word"]]
    with open(folder / "sentence_templates.csv", newline="", encoding="utf-8") as fh:
        templates = list(csv.DictReader(fh))

    def size(slot):                       # "{type|identity_connotation|neutral}" -> type=identity and connotation=neutral
        conditions = [part.split("|") for part in slot.split("_")]
        return sum(all(w[c] == v for c, v in conditions) for w in words)

    expected = sum(math.prod(size(s) for s in re.findall(r"\{(.*?)\}", t["phrase"])) for t in templates)
    assert len(madlibs.load_madlibs(identities="all")) == expected == 78_078


def test_77k_set_counts_and_identities():
    _folder()
    df = madlibs.load_madlibs_77k()
    assert len(df) == 76_564 and df["label"].value_counts().to_dict() == {"toxic": 38_282, "non-toxic": 38_282}
    assert df.groupby("template").size().to_dict() == {"am_hate_adj": 100, "being_adj": 1600, "name_adj": 72000,
                                                       "verb_adj": 400, "you_are_adj": 1600, "you_occupation": 864}
    assert (df.loc[df.template != "you_occupation", "identity"] != "").all()
    assert set(df.loc[df.text.str.contains("african american", case=False), "identity"]) == {"african american"}


def test_word_and_substring_matching_differ_exactly_where_a_term_hides_in_a_word():
    texts = ["a female doctor", "a male nurse", "Being GAY is fine", "gayness", "an african american man", "old", "older"]
    terms = ["male", "gay", "american", "old"]
    word = madlibs.mentions(texts, terms)
    sub = madlibs.mentions(texts, terms, match="substring")
    for i, t in enumerate(texts):
        for term in terms:
            assert sub.loc[i, term] == (term in t.lower())
            assert word.loc[i, term] == bool(re.search(rf"\b{term}\b", t.lower()))
    assert sub.loc[0, "male"] and not word.loc[0, "male"] and word.loc[4, "american"]
    with pytest.raises(InputError, match="match must be"):
        madlibs.mentions(texts, terms, match="regex")


def test_bad_template_files_are_one_line(tmp_path, monkeypatch):
    words = pd.DataFrame({"type": ["identity", "adjective"], "subtype": ["age", ""], "connotation": ["neutral", "toxic"],
                          "word": ["old", "dumb"]})
    with pytest.raises(InputError, match="no slot to fill"):
        madlibs.generate(words, pd.DataFrame({"template": ["t"], "toxicity": ["toxic"], "phrase": ["nothing here"]}))
    with pytest.raises(InputError, match="not a valid slot"):
        madlibs.generate(words, pd.DataFrame({"template": ["t"], "toxicity": ["toxic"], "phrase": ["{type|verb}"]}))
    words.to_csv(tmp_path / "words.csv", index=False)
    pd.DataFrame({"template": ["t"], "phrase": ["{type|identity}"]}).to_csv(tmp_path / "templates.csv", index=False)
    monkeypatch.setattr(registry, "path", lambda name, file=None: tmp_path / (
        "words.csv" if file and file.endswith("words.csv") else "templates.csv"))
    with pytest.raises(InputError, match="missing column\\(s\\) toxicity"):
        madlibs.load_madlibs()
