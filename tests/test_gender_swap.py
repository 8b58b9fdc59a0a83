"""Gender swap of reviews (Jentzsch & Turan 2022) against a token-by-token brute force, the
upstream quirks on hand examples, and the bias summary against plain numpy."""

from __future__ import annotations

import csv
import re
from importlib import resources

import numpy as np
import pytest

from helpers.errors import InputError
from helpers.metrics import gender_swap as gs

REVIEWS = ["He said his wife was great, and she agreed with him.",
           "HE is the best man; his brother-in-law is an actor (a good one).",
           "The actress and her mother loved it. Her father didn't.",
           "Nobody here: chemistry, theme, shepherd's pie, mr. Mom",
           "the boys and girls, men and women - all of them.",
           "she gave herself the hero's welcome"]


def _brute(text: str, mapping: dict[str, str]) -> str:
    """Split into word and non-word runs and map each single word (keeps its case)."""
    lower = {k.lower(): v for k, v in mapping.items()}
    out = []
    for tok in re.split(r"(\W+)", text):
        new = lower.get(tok.lower())
        if new is None:
            out.append(tok)
        elif tok.isupper() and len(tok) > 1:
            out.append(new.upper())
        else:
            out.append(new[:1].upper() + new[1:] if tok[:1].isupper() else new)
    return "".join(out)


def _csv_pairs(lst: str, direction: str) -> dict[str, str]:
    with resources.files("helpers.datasets").joinpath("gender_terms.csv").open(encoding="utf-8") as fh:
        return {r["source"]: r["target"] for r in csv.DictReader(fh) if r["list"] == lst and r["direction"] == direction}


@pytest.mark.parametrize("terms", ["pro", "weat"])
@pytest.mark.parametrize("to", ["male", "female"])
def test_word_swap_equals_token_brute_force(terms, to):
    mapping = _csv_pairs(terms, "f2m" if to == "male" else "m2f")
    assert all(" " not in k and "-" not in k for k in mapping)            # single words: brute force applies
    assert gs.swap_gender(REVIEWS, terms=terms, to=to) == [_brute(t, mapping) for t in REVIEWS]


def test_all_list_phrases_and_case():
    out = gs.swap_gender(REVIEWS[:2], terms="all", to="female")
    assert out[0] == "She said her wife was great, and she agreed with her."
    assert out[1].startswith("SHE is the bridesmaid; her sister-in-law is an actress")
    assert gs.swap_gender(["The actress and her mother"], terms="all", to="male") == ["The actor and his father"]


def test_upstream_method_keeps_its_quirks():
    text = "He said his wife was great , and she agreed with him ."
    out = gs.swap_gender([text], terms="pro", to="female", method="upstream")[0]
    assert out == "He said her wife was great , and she agreed with her ."    # the first "He" is not padded
    assert gs.swap_gender(["his."], terms="pro", to="female", method="upstream") == ["his."]


def test_term_lists_follow_python_dict_semantics():
    pro = gs.term_pairs("pro", "female")
    assert pro == {"he": "she", "him": "her", "his": "her", "himself": "herself"}       # "his": "hers" overridden
    assert gs.term_pairs("pro", "male") == {"she": "he", "her": "his", "herself": "himself"}
    assert len(gs.term_pairs("weat", "female")) == 17 and len(gs.term_pairs("all", "female")) > 300


def test_count_terms_equals_token_count():
    words = set(_csv_pairs("weat", "m2f")) | set(_csv_pairs("weat", "f2m"))
    expected = [sum(tok.lower() in words for tok in re.findall(r"\w+", t)) for t in REVIEWS]
    assert gs.count_terms(REVIEWS, terms="weat").tolist() == expected


def test_sentiment_bias_summary():
    rng = np.random.default_rng(0)
    f = rng.uniform(size=50)
    m = np.clip(f + rng.normal(0.02, 0.05, size=50), 0, 1)
    got = gs.sentiment_bias(m, f)
    assert got["total_bias"] == pytest.approx(np.mean(m - f)) and got["absolute_bias"] == pytest.approx(np.mean(abs(m - f)))
    assert got["n"] == 50 and 0 <= got["p_value"] <= 1 and got["r"] > 0


@pytest.mark.parametrize("kwargs, fragment", [({"terms": "names"}, "terms must be"), ({"to": "neutral"}, "to must be"),
                                              ({"method": "regex"}, "method must be")])
def test_bad_options(kwargs, fragment):
    with pytest.raises(InputError, match=fragment):
        gs.swap_gender(REVIEWS, **kwargs)
    with pytest.raises(InputError, match="one length"):
        gs.sentiment_bias([0.1, 0.2], [0.3])
