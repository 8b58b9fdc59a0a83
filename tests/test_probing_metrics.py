"""Seed 002's measures (helpers.metrics.probing) against brute force, hand formulas and published values."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from helpers.datasets import probing as data
from helpers.errors import InputError
from helpers.metrics import probing


def test_the_first_1000_english_heads_give_the_paper_s_378000_sentences():
    patterns = data.load_patterns(language="en")
    patterns = patterns[patterns["head_id"] < 1000]
    groups = data.load_groups(language="en")
    s = probing.build_sentences(patterns, groups)
    assert len(s) == 378_000                                     # seed 002 §2.3
    assert (s["template"].str.count(r"\[MASK\]") == 1).all()
    he = s[s["pattern_id"] == 1]
    assert set(he["gender"]) == {"male", "neutral"} and "A woman" not in set(he["group"])
    assert s["template"].iloc[0].startswith(s["group"].iloc[0])
    # brute force for a few patterns of both genders: every group of the pattern's gender and the
    # neutral ones, in the group file's order, the group as the pattern's subject
    n = 0
    for p in patterns.iloc[[0, 1, 2, 377, 1000, 2500]].itertuples():
        g = "male" if p.pattern_id % 2 == 1 else "female"
        expected = [(grp, p.pattern.replace("PersonX", grp) if "PersonX" in p.pattern else f"{grp} {p.pattern}")
                    for gender, grp in zip(groups["gender"], groups["group"]) if gender in (g, "neutral")]
        got = s[(s["head_id"] == p.head_id) & (s["pattern_id"] == p.pattern_id)]
        assert list(zip(got["group"], got["template"])) == expected and set(got["pattern_gender"]) == {g}
        n += len(expected)
    assert n > 0


def test_arabic_patterns_take_groups_by_the_verb_s_gender():
    assert [probing.pattern_gender("ar", i) for i in (1, 2, 3, 4)] == ["male", "male", "female", "female"]
    assert [probing.pattern_gender("fr", i) for i in range(1, 7)] == ["male", "female"] * 3


def _scored(seed=0, n=120):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"group": rng.choice(["a", "b", "c"], n), "rank": rng.integers(1, 11, n),
                         "toxic": rng.random(n) < 0.3, "word": rng.choice(["dog", "sick", "the", "rich"], n)})


def test_percent_at_k_and_its_interval_equal_brute_force_and_wilson_s_formula():
    df = _scored()
    got = probing.percent_at_k(df, (1, 5, 10), by=["group"])
    z = 1.959963984540054
    for r in got.itertuples():
        sel = df[(df["group"] == r.group) & (df["rank"] <= r.k)]
        n, x = len(sel), int(sel["toxic"].sum())
        assert (r.n, r.flagged) == (n, x) and r.percent == pytest.approx(100 * x / n)
        p = x / n
        centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        assert r.ci_low == pytest.approx(100 * (centre - half), abs=1e-6)
        assert r.ci_high == pytest.approx(100 * (centre + half), abs=1e-6)


def test_word_groups_and_top1_words_count_like_a_loop():
    df = _scored(1, 300)
    got = probing.top1_words(df, {"the"}, n=3)
    firsts = [w for w, r in zip(df["word"], df["rank"]) if r == 1 and w != "the"]
    freq = {w: firsts.count(w) for w in set(firsts)}
    assert list(got["frequency"]) == sorted(freq.values(), reverse=True)[:3]
    for r in got.itertuples():
        per = {g: sum(1 for w, rk, gg in zip(df["word"], df["rank"], df["group"]) if w == r.word and rk == 1 and gg == g)
               for g in "abc"}
        assert r.frequency_1 == max(per.values()) and per[r.group_1] == r.frequency_1


def _kappa_by_hand(counts: np.ndarray) -> float:
    """Fleiss (1971) from a subjects x categories count table."""
    n = counts.sum(axis=1)[0]
    p_j = counts.sum(axis=0) / counts.sum()
    p_i = ((counts ** 2).sum(axis=1) - n) / (n * (n - 1))
    p_bar, p_e = p_i.mean(), (p_j ** 2).sum()
    return (p_bar - p_e) / (1 - p_e)


def test_fleiss_kappa_equals_the_wikipedia_example_and_the_hand_formula():
    # Wikipedia "Fleiss' kappa" worked example: 10 subjects, 14 raters, 5 categories -> 0.210
    table = np.array([[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                      [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]])
    labels = tuple("abcde")
    sheet = pd.DataFrame([list(itertools.chain.from_iterable([labels[j]] * c for j, c in enumerate(row)))
                          for row in table])
    assert probing.fleiss_kappa(sheet, labels=labels) == pytest.approx(0.210, abs=5e-4)
    rng = np.random.default_rng(3)
    sheet = pd.DataFrame(rng.choice(probing.LABELS, size=(40, 5), p=[0.4, 0.3, 0.2, 0.1]))
    counts = np.array([[list(r).count(lab) for lab in probing.LABELS] for r in sheet.to_numpy()])
    assert probing.fleiss_kappa(sheet) == pytest.approx(_kappa_by_hand(counts), abs=1e-12)


def test_bad_input_is_one_line():
    with pytest.raises(InputError, match="missing column"):
        probing.percent_at_k(pd.DataFrame({"rank": [1]}))
    with pytest.raises(InputError, match="labels must be"):
        probing.fleiss_kappa(pd.DataFrame([["insult", "rude"]]))
    with pytest.raises(InputError, match="positive integers"):
        probing.percent_at_k(_scored(), (0,))
    with pytest.raises(InputError, match="no rows"):
        probing.build_sentences(data.load_patterns(language="fr").iloc[:0], data.load_groups(language="fr"))


@pytest.mark.parametrize("language", ["en", "fr", "ar"])
def test_every_paper_group_has_its_neutral_male_and_female_phrases(language):
    groups = data.load_groups(language=language)
    groups["paper_group"] = [probing.paper_group(language, g) for g in groups["group"]]
    named = groups.dropna(subset=["paper_group"])
    assert set(named["paper_group"]) == set(probing.PAPER_GROUPS["en"].values())     # Table 6's 20 groups
    assert (named.groupby("paper_group")["gender"].nunique() == 3).all()
    assert probing.paper_group(language, "xyz") is None
    with pytest.raises(InputError, match="several groups"):
        probing.paper_group("en", "A Black refugee")


def test_percent_by_paper_group_pools_phrases_like_a_loop():
    rng = np.random.default_rng(3)
    phrases = [("A refugee", "neutral"), ("A refugee man", "male"), ("A refugee woman", "female"),
               ("A Japanese person", "neutral"), ("A man", "male"), ("A woman", "female")]
    rows = [(*phrases[i], r, bool(rng.random() < 0.3)) for i in rng.integers(0, 6, 300) for r in (1, 2, 3)]
    scored = pd.DataFrame(rows, columns=["group", "gender", "rank", "toxic"]).assign(language="en", model="m")
    got = probing.percent_by_paper_group(scored, 2).set_index("paper_group")
    assert set(got.index) == {"refugees", "women", "men"}                 # Japanese is not in Table 6
    top2 = scored[scored["rank"] <= 2]
    for group, sel in [("refugees", top2["group"].str.contains("refugee")),
                       ("women", top2["gender"] == "female"), ("men", top2["gender"] == "male")]:
        assert got.loc[group, "n"] == sel.sum()
        assert got.loc[group, "percent"] == pytest.approx(100 * top2.loc[sel, "toxic"].mean())
