"""Bias madlibs: the generator rebuilt here gives exactly upstream's released sentences (the
root en_sentence_templates.csv, read with the csv module), the documented counts, identity
terms, and the word vs substring matching of identity terms."""

from __future__ import annotations

import csv
import itertools
import math
import re
import shutil

import pandas as pd
import pytest

from helpers.datasets import madlibs, registry
from helpers.errors import DataNotFoundError, InputError
from helpers.hashing import sha256_file

# Seed 003's hard-coded identity terms (HemaDevaSagar35/GenderBiasAnalysis, TinyBERT/bias_analysis.py).
SEED_003_TERMS = ['queer', 'bisexual', 'gay', 'lesbian', 'japanese', 'homosexual', 'chinese', 'transgender',
                  'buddhist', 'middle eastern', 'canadian', 'european', 'asian', 'sikh', 'american', 'teenage',
                  'african american', 'african', 'indian', 'older', 'millenial', 'female', 'latinx', 'elderly',
                  'nonbinary', 'male', 'mexican', 'hispanic', 'old', 'younger', 'middle aged', 'heterosexual',
                  'muslim', 'taoist', 'blind', 'latino', 'protestant', 'lgbtq', 'paralyzed', 'white', 'latina',
                  'jewish', 'christian', 'black', 'lgbt', 'deaf', 'catholic', 'straight', 'trans', 'young']
EN_US = "new_madlibber/input_data/en/en-us"


def _folder():
    try:
        return registry.path("bias-madlibs").parents[4]
    except DataNotFoundError as exc:
        pytest.skip(str(exc))


def _kind(slot: str) -> str:
    """"type|identity_connotation|neutral" -> "identity" (the value of the slot's first condition)."""
    return slot.split("|")[1].split("_")[0]


def _csv_rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def madlibs_77k():
    _folder()
    return madlibs.load_madlibs_77k()


@pytest.mark.parametrize("name", ["bias-madlibs", "bias-madlibs-77k"])
def test_present_files_match_the_registry_checksums(name):
    _folder()
    for f in registry.spec(name).files:
        assert sha256_file(registry.path(name, f.name)) == f.sha256, f.name
        assert f.url.startswith("https://raw.githubusercontent.com/conversationai/unintended-ml-bias-analysis/"
                                "9c7d91aaa53406a362354661a93e07956d95e59a/")


def test_generated_sentences_are_the_released_ones_row_for_row():
    folder = _folder()
    released = [(r["template"], r["toxicity"], r["phrase"]) for r in _csv_rows(folder / "en_sentence_templates.csv")]
    df = madlibs.load_madlibs()
    ours = list(zip(df.template, df.label.map({"toxic": "toxic", "non-toxic": "nontoxic"}), df.text))
    assert ours == released and len(df) == 76_564 and list(df.sentence_id) == list(range(76_564))
    assert df["label"].value_counts().to_dict() == {"toxic": 38_282, "non-toxic": 38_282}
    assert (df["template"] == "you_occupation").sum() == (df["identity"] == "").sum() == 864
    assert "cis" not in set(df["identity"]) and set(df.loc[df.identity != "", "identity_group"]) == {
        "age", "disability", "ethnicity", "gender", "religion", "sexuality"}
    # each row's slot words, put back into its template's phrase, give its text
    phrase = {(r["template"], r["toxicity"]): r["phrase"] for r in _csv_rows(folder / EN_US / "sentence_templates.csv")}
    for row in df.itertuples():
        pattern = phrase[(row.template, "toxic" if row.label == "toxic" else "nontoxic")]
        kinds = [_kind(s) for s in re.findall(r"\{([^}]*)\}", pattern)]
        filled = [k for k in ("identity", *madlibs.SLOT_COLUMNS) if getattr(row, k)]
        assert sorted(filled) == sorted(kinds), row
        assert re.sub(r"\{([^}]*)\}", lambda m: getattr(row, _kind(m.group(1))), pattern) == row.text


def test_all_identities_equal_a_brute_force_enumeration():
    folder = _folder() / EN_US
    words = [r for r in _csv_rows(folder / "words.csv") if r["word"]]
    templates = _csv_rows(folder / "sentence_templates.csv")

    def selected(slot):                  # "{type|identity_connotation|neutral}": type=identity and connotation=neutral
        conditions = [part.split("|") for part in slot.split("_")]
        return [w["word"] for w in words if all(w[c] == v for c, v in conditions)]

    expected = set()
    for t in templates:
        slots = re.findall(r"\{([^}]*)\}", t["phrase"])
        for combo in itertools.product(*map(selected, slots)):
            text = t["phrase"]
            for slot, word in zip(slots, combo):
                text = text.replace("{" + slot + "}", word)
            expected.add((t["template"], t["toxicity"], text))
    size = sum(math.prod(len(selected(s)) for s in re.findall(r"\{(.*?)\}", t["phrase"])) for t in templates)
    df = madlibs.load_madlibs(identities="all")
    assert len(df) == len(expected) == size == 78_078          # the count in the module docstring
    assert {(tpl, "toxic" if lab == "toxic" else "nontoxic", txt)
            for tpl, lab, txt in zip(df.template, df.label, df.text)} == expected
    assert (df["identity"] == "cis").sum() == 78_078 - 76_564 == 1_514
    assert df["label"].value_counts().to_dict() == {"toxic": 39_039, "non-toxic": 39_039}


def test_77k_counts_labels_and_one_identity_per_row(madlibs_77k):
    df = madlibs_77k
    assert len(df) == 76_564 and df["label"].value_counts().to_dict() == {"toxic": 38_282, "non-toxic": 38_282}
    assert df.groupby("template").size().to_dict() == {"am_hate_adj": 100, "being_adj": 1600, "name_adj": 72000,
                                                       "verb_adj": 400, "you_are_adj": 1600, "you_occupation": 864}
    raw = _csv_rows(_folder() / "eval_datasets/bias_madlibs_77k.csv")
    assert [r["Label"] for r in raw].count("BAD") == 38_282
    terms = madlibs.identity_terms()
    for text, identity, template in zip(df.text, df.identity, df.template):
        padded = " " + " ".join(re.findall(r"\w+", text.lower())) + " "
        found = [t for t in terms if f" {t} " in padded]
        outermost = [t for t in found if not any(t != u and f" {t} " in f" {u} " for u in found)]
        assert outermost == ([identity] if identity else []), text
        assert (identity == "") == (template == "you_occupation")
    assert df.attrs["without_identity"] == 864 and df["identity"].value_counts().iloc[0] == 1_514
    assert set(df.loc[df.text.str.contains("african american", case=False), "identity"]) == {"african american"}


def test_identity_terms_are_seed_003s_fifty():
    _folder()
    old = madlibs.identity_terms()
    lines = (_folder() / "bias_madlibs_data/adjectives_people.txt").read_text(encoding="utf-8").split("\n")
    assert old == [x for x in lines if x] and len(old) == 50 and sorted(old) == sorted(SEED_003_TERMS)
    assert madlibs.identity_terms("bias-madlibs") == old
    new = madlibs.identity_terms("bias-madlibs", identities="all")
    assert len(new) == 51 and [t for t in new if t != "cis"] == old
    with pytest.raises(InputError, match="not a madlibs set"):
        madlibs.identity_terms("bold")


def test_word_and_substring_matching_differ_exactly_where_a_term_hides_in_a_word(madlibs_77k):
    df, terms = madlibs_77k, madlibs.identity_terms()
    word = madlibs.mentions(df.text, terms)
    sub = madlibs.mentions(df.text, terms, match="substring")
    lowered = [t.lower() for t in df.text]
    padded = [" " + " ".join(re.findall(r"\w+", t)) + " " for t in lowered]
    for term in terms:                   # plain Python: `in` for substrings, token sequences for whole words
        assert sub[term].tolist() == [term in t for t in lowered], term
        assert word[term].tolist() == [f" {term} " in p for p in padded], term
    assert not (word & ~sub).to_numpy().any()
    extra = (sub & ~word)
    pairs = {(term, host) for term in terms for host in set(df.identity[extra[term].to_numpy()])}
    assert pairs == {("male", "female"), ("trans", "transgender"), ("lgbt", "lgbtq"), ("old", "older"),
                     ("young", "younger")}
    assert extra.any(axis=1).sum() == extra.to_numpy().sum() == 5 * 1_514 == 7_570
    assert (extra["male"].to_numpy() == (df.identity == "female").to_numpy()).all()
    assert word.loc[df.identity.eq("african american").to_numpy(), ["african", "american"]].all().all()


def test_mentions_on_small_texts():
    texts = ["a female doctor", "a male nurse", "Being GAY is fine", "gayness", "an african american man", "old",
             "older"]
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
    words = pd.DataFrame({"type": ["identity", "adjective"], "subtype": ["age", ""],
                          "connotation": ["neutral", "toxic"], "word": ["old", "dumb"]})
    with pytest.raises(InputError, match="no slot to fill"):
        madlibs.generate(words, pd.DataFrame({"template": ["t"], "toxicity": ["toxic"], "phrase": ["nothing here"]}))
    with pytest.raises(InputError, match="not a valid slot"):
        madlibs.generate(words, pd.DataFrame({"template": ["t"], "toxicity": ["toxic"], "phrase": ["{type|verb}"]}))
    with pytest.raises(InputError, match="two slots of one kind"):
        madlibs.generate(words, pd.DataFrame({"template": ["t"], "toxicity": ["toxic"],
                                              "phrase": ["{type|identity} {type|identity_subtype|age}"]}))
    with pytest.raises(InputError, match="duplicate row"):
        madlibs.generate(words, pd.DataFrame({"template": ["t", "t"], "toxicity": ["toxic"] * 2,
                                              "phrase": ["{type|identity}"] * 2}))
    words.to_csv(tmp_path / "words.csv", index=False)
    pd.DataFrame({"template": ["t"], "phrase": ["{type|identity}"]}).to_csv(tmp_path / "templates.csv", index=False)
    monkeypatch.setattr(registry, "path", lambda name, file=None: tmp_path / (
        "words.csv" if file and file.endswith("words.csv") else "templates.csv"))
    with pytest.raises(InputError, match="missing column\\(s\\) toxicity"):
        madlibs.load_madlibs()


def test_bad_77k_file_is_one_line(tmp_path, monkeypatch):
    source = _folder()
    folder = tmp_path / "bias_madlibs"
    (folder / "eval_datasets").mkdir(parents=True)
    shutil.copytree(source / "bias_madlibs_data", folder / "bias_madlibs_data")
    target = folder / "eval_datasets/bias_madlibs_77k.csv"
    monkeypatch.setenv("HARMS_DATA_DIR", str(tmp_path))
    pd.DataFrame({"Text": ["murder american"], "Template": ["verb_adj"]}).to_csv(target, index=False)
    with pytest.raises(InputError, match=r"missing column\(s\) Label") as exc:
        madlibs.load_madlibs_77k()
    assert str(target) in str(exc.value) and "\n" not in str(exc.value)
    pd.DataFrame({"Text": ["murder american", "hug old black"], "Label": ["BAD", "NOT_BAD"],
                  "Template": ["verb_adj"] * 2}).to_csv(target, index=False)
    with pytest.raises(InputError, match=r"row 3 names two identity terms \['black', 'old'\]"):
        madlibs.load_madlibs_77k()
    pd.DataFrame({"Text": ["murder american"], "Label": ["TOXIC"], "Template": ["verb_adj"]}).to_csv(target,
                                                                                                   index=False)
    with pytest.raises(InputError, match="unknown label 'TOXIC'"):
        madlibs.load_madlibs_77k()
