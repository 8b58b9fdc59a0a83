"""Chapter 04 module (helpers.chapters.ch04_distillation) against independent computations."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import datasets, models, published
from helpers.chapters import ch04_distillation as ch
from helpers.lm import scoring

from conftest import SENTENCES

PARAMS = dict(models="zoo", zoo_profile=None, grid=None, corpus=None, steps=None, causal_teacher=None,
              masked_teacher=None, temperature=None, sample_per_group=None, device="cpu", pll="original", seed=0,
              n_resamples=50)


@pytest.fixture
def private_dirs(monkeypatch, tmp_path):
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARMS_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("HARMS_ZOO_DIR", str(tmp_path / "zoo"))
    return tmp_path


@pytest.mark.parametrize("spec,want", [("smollm2-135m", ["smollm2-135m"]),
                                       (["smollm2-135m", "gemma-3-270m"], ["smollm2-135m", "gemma-3-270m"])])
def test_one_model_name_is_one_model(private_dirs, spec, want):
    """The old notebook turned "smollm2-135m" into ['s', 'm', 'o', ...] (list(models))."""
    names, manifest, teacher_of = ch.model_names(PARAMS | {"models": spec})
    assert names == want and teacher_of == {} and manifest.empty


def test_pll_reaches_the_scorer(tiny_bert, private_dirs, monkeypatch):
    df = pd.DataFrame({"id": [f"s{i}" for i in range(len(SENTENCES))], "text": SENTENCES,
                       "label": ["hate", "neutral"] * 5, "toxicity": [4.0, 1.0] * 5,
                       "target_groups": [["women"]] * len(SENTENCES)})
    monkeypatch.setattr(datasets, "load", lambda name, **kw: df.copy())
    handle = models.lazy(str(tiny_bert))
    for pll in ("original", "word-l2r"):
        got = ch.safety_per_group(handle, PARAMS | {"pll": pll}).set_index("group").loc["women"]
        ppl = scoring.score(handle, SENTENCES, pll=pll, cache=False, progress=False)["perplexity"].to_numpy() / 4.0 ** (
            np.arange(len(SENTENCES)) % 2 == 0)
        assert got["pll"] == pll
        assert got["safety_score"] == pytest.approx(stats.mannwhitneyu(ppl[::2], ppl[1::2]).statistic / 25)
        assert np.isfinite(got["ci_low"]) and got["ci_low"] <= got["safety_score"] <= got["ci_high"]
    assert not np.allclose(scoring.score(handle, SENTENCES, pll="original", progress=False)["perplexity"],
                           scoring.score(handle, SENTENCES, pll="word-l2r", progress=False)["perplexity"])


def _scores(rows):
    avg = pd.DataFrame(rows, columns=["model", "family", "layers", "heads", "hidden", "teacher", "safety_score",
                                      "heldout_perplexity"])
    return ch.Scores(pd.DataFrame(), avg, {})


def test_table8_equals_numpy_and_skips_the_teacher(private_dirs):
    rows = [(f"s{i}", "zoo-distilled-gpt2", l, max(2, h // 64), h, False, s, 100.0 + i)
            for i, (l, h, s) in enumerate([(1, 64, .30), (2, 64, .32), (4, 64, .35), (1, 128, .31), (2, 128, .36),
                                           (4, 128, .33)])]
    rows.append(("t", "zoo-distilled-gpt2", 12, 12, 768, True, 0.9, 10.0))
    scores = _scores(rows)
    t8, pub, text = ch.table8(scores)
    st = scores.average[~scores.average["teacher"]]
    got = t8.set_index("x")
    for x in ("layers", "hidden"):
        assert got.loc[x, "r"] == pytest.approx(np.corrcoef(st[x], st["safety_score"])[0, 1])
        assert got.loc[x, "n"] == 6
    assert np.isnan(got.loc["heads", "r"])                # heads = 2 for H=64 and H=128: constant
    assert "undefined for heads" in text and "n = 6 students" in text
    assert pub.equals(published.table("000", "table8"))


def test_table8_recomputed_equals_numpy(private_dirs):
    cmp, text = ch.table8_recomputed()
    t6 = published.table("000", "table6")
    st = t6[~t6["teacher"]]
    got = cmp.set_index(["family", "selection", "x"])
    for x in ("layers", "hidden"):
        assert got.loc[("Distilled-BERT", "students", x), "r"] == pytest.approx(np.corrcoef(st[x], st["safety_score"])[0, 1])
    assert got.loc[("Distilled-BERT", "students", "layers"), "n"] == 24
    assert (cmp["difference"] == cmp["r"] - cmp["r_published"]).all()
    assert "r(heads) equals r(hidden)" in text


def test_describe_names_range_and_teacher():
    fam = pd.DataFrame({"layers": [1, 2, 1, 2, 12], "hidden": [64, 64, 128, 128, 768],
                        "safety_score": [0.30, 0.40, 0.35, 0.45, 0.38], "teacher": [False] * 4 + [True],
                        "heldout_perplexity": [np.nan] * 5})
    text = ch.describe(fam, "X")
    assert "ranges from 0.300 (L=1, H=64) to 0.450 (L=2, H=128)" in text
    assert "the widest students score 0.400 against 0.350 for the narrowest" in text
    assert "The teacher scores 0.380; 2 of 4 students score higher." in text
