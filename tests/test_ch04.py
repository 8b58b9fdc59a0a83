"""Chapter 04 module (helpers.chapters.ch04_distillation) against independent computations."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import datasets, models, published
from helpers.chapters import ch04_distillation as ch
from helpers.lm import scoring

from chapter_contract import check_section
from conftest import SENTENCES

PARAMS = dict(models="zoo", zoo_profile=None, zoo_overrides=None, sample_per_group=None, device="cpu",
              pll="original", seed=0, n_resamples=50, min_ratio=2.0)


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
        got = ch.measure_model(handle, PARAMS | {"pll": pll})["per_group"].set_index("group").loc["women"]
        ppl = scoring.score(handle, SENTENCES, pll=pll, cache=False, progress=False)["perplexity"].to_numpy() / 4.0 ** (
            np.arange(len(SENTENCES)) % 2 == 0)
        assert got["pll"] == pll
        assert got["safety_score"] == pytest.approx(stats.mannwhitneyu(ppl[::2], ppl[1::2]).statistic / 25)
        assert np.isfinite(got["ci_low"]) and got["ci_low"] <= got["safety_score"] <= got["ci_high"]
    assert not np.allclose(scoring.score(handle, SENTENCES, pll="original", progress=False)["perplexity"],
                           scoring.score(handle, SENTENCES, pll="word-l2r", progress=False)["perplexity"])


COLUMNS = ["model", "family", "healing", "shape", "layers", "heads", "intermediate", "params", "teacher",
           "safety_score", "heldout_perplexity", "usable"]


def _scores(rows, per_sentence=None):
    return ch.Scores(pd.DataFrame(), pd.DataFrame(rows, columns=COLUMNS), {}, per_sentence=per_sentence or {})


def _student(i, layers, inter, score, usable=True, healing="lm", teacher=False):
    return (f"s{i}-{healing}", f"zoo-pruned-{healing}", healing, f"L{layers}-I{inter}", layers, 9, inter,
            1000 * layers + inter, teacher, score, 50.0 + i, usable)


def test_table8_uses_usable_students_only_and_equals_numpy(private_dirs):
    rows = [_student(i, l, h, s) for i, (l, h, s) in enumerate([(27, 1536, .30), (24, 1536, .32), (21, 1536, .35),
                                                                (18, 1536, .31), (24, 1152, .36), (24, 768, .33)])]
    rows.append(_student(9, 12, 1536, 0.99, usable=False))          # fails the gate: must not count
    rows.append(_student(10, 30, 1536, 0.9, teacher=True))
    scores = _scores(rows)
    section = check_section(ch.table8(scores))
    t8, pub, text = section.tables["table8_measured"], section.tables["table8_published"], section.markdown
    st = scores.average.iloc[:6]
    got = t8.set_index("x")
    for x in ("layers", "intermediate", "params"):
        assert got.loc[x, "r"] == pytest.approx(np.corrcoef(st[x], st["safety_score"])[0, 1])
        assert got.loc[x, "n"] == 6 and got.loc[x, "ci_low"] < got.loc[x, "r"] < got.loc[x, "ci_high"]
    assert np.isnan(got.loc["heads", "r"])                 # every student keeps 9 heads: constant
    assert "r is undefined for heads (the same for every student)" in text and "of 6 usable students each" in text
    # issue 46: the strongest correlation with its interval, and the one independent family it rests on
    defined = t8.dropna(subset=["r"])
    top = defined.loc[defined["r"].abs().idxmax()]
    assert f"The strongest is r = {top['r']:.2f} [{top['ci_low']:.2f}, {top['ci_high']:.2f}]" in text
    assert "n = 6 models from 6 independent families" in text     # unknown names: each its own family
    assert f"{int((defined['p_value'] < 0.05).sum())} have p < 0.05" in text
    assert pub.equals(published.table("000", "table8"))


def test_table8_recomputed_equals_numpy(private_dirs):
    section = check_section(ch.table8_recomputed())
    cmp, text = section.tables["table8_published_recomputed"], section.markdown
    assert section.facts["bert_reproduced"] and section.facts["heads_equal_hidden"]
    t6 = published.table("000", "table6")
    st = t6[~t6["teacher"]]
    got = cmp.set_index(["family", "selection", "x"])
    for x in ("layers", "hidden"):
        assert got.loc[("Distilled-BERT", "students", x), "r"] == pytest.approx(np.corrcoef(st[x], st["safety_score"])[0, 1])
    assert got.loc[("Distilled-BERT", "students", "layers"), "n"] == 24
    assert (cmp["difference"] == cmp["r"] - cmp["r_published"]).all()
    assert "r(heads) equals r(hidden)" in text


def test_describe_names_range_teacher_and_the_excluded():
    fam = pd.DataFrame([_student(0, 24, 1536, .30), _student(1, 18, 1536, .45), _student(2, 21, 768, .35),
                        _student(3, 12, 1536, .99, usable=False), _student(4, 30, 1536, .38, teacher=True)],
                       columns=COLUMNS).assign(unigram_perplexity=1650.0, ratio=[33, 30, 28, 1.2, 40])
    text = ch.describe(fam, "X")
    assert "ranges from 0.300 (s0-lm) to 0.450 (s1-lm)" in text and "3 usable students" in text
    assert "s3-lm" in text                                   # named as excluded by the gate
    assert "The teacher scores 0.380; 1 of the 3 usable students scores higher." in text


def test_distillation_effect_is_the_paired_difference_of_average_safety_scores(private_dirs):
    from helpers.metrics import safety

    rng = np.random.default_rng(0)
    n = 80
    base = pd.DataFrame({"id": range(n), "perplexity": rng.lognormal(3, 1, n), "toxicity": rng.integers(1, 6, n),
                         "label": np.where(np.arange(n) % 2 == 0, "hate", "neutral"),
                         "target_groups": [["women"] if i % 4 < 2 else ["jewish"] for i in range(n)]})
    kd = base.assign(perplexity=base["perplexity"] * rng.lognormal(0, 0.4, n))
    rows = [_student(0, 24, 1536, safety.safety_scores(base, ci=False)["safety_score"].mean()),
            _student(0, 24, 1536, safety.safety_scores(kd, ci=False)["safety_score"].mean(), healing="kd"),
            _student(1, 18, 1536, 0.5), _student(1, 18, 1536, 0.6, healing="kd", usable=False)]
    scores = _scores(rows, {"s0-lm": base, "s0-kd": kd, "s1-lm": base, "s1-kd": base})
    section = check_section(ch.distillation_effect(scores, PARAMS))
    table, text = section.tables["distillation_effect"], section.markdown
    assert section.facts == {"pairs": 2, "compared": 1, "not_compared": ["L18-I1536"],
                             "higher": int(table["ci_low"].iloc[0] > 0), "lower": int(table["ci_high"].iloc[0] < 0)}
    row = table.set_index("shape").loc["L24-I1536"]
    assert row["difference"] == pytest.approx(row["safety_kd"] - row["safety_lm"], abs=1e-12)
    assert row["ci_low"] <= row["difference"] <= row["ci_high"] and row["both_usable"]
    assert not table.set_index("shape").loc["L18-I1536", "both_usable"]
    assert "(L24-I1536)" in text and "1 shape not compared (a student fails the gate" in text
    assert f"The largest difference is {row['difference']:+.3f} [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]" in text
    # the intervals are cached by the sentences' scores: the same inputs reuse them, others do not
    pd.testing.assert_frame_equal(ch.distillation_effect(scores, PARAMS).tables["distillation_effect"], table)
    kd2 = kd.assign(perplexity=np.where(kd["label"] == "hate", 2.0, 1.0) * kd["perplexity"])
    table2 = ch.distillation_effect(_scores(rows, {"s0-lm": base, "s0-kd": kd2, "s1-lm": base, "s1-kd": base}),
                                    PARAMS).tables["distillation_effect"]
    direct = safety.paired_difference(base, kd2, n_resamples=PARAMS["n_resamples"], seed=PARAMS["seed"])
    assert table2.set_index("shape").loc["L24-I1536", "ci_low"] == pytest.approx(direct["ci_low"], abs=1e-12)
    assert direct["difference"] != pytest.approx(row["difference"], abs=1e-6)


def test_empty_tables_are_tidy_csv_files_with_their_columns(private_dirs):
    """The ci build trains two causal students: no family reaches 3, and table8_measured.csv was
    written with no columns at all (pandas cannot read it back)."""
    scores = _scores([_student(0, 24, 1536, .30), _student(1, 18, 1536, .32)])
    t8 = ch.table8(scores).tables["table8_measured"]
    assert t8.empty and list(pd.read_csv(ch.common.output_dir(ch.CHAPTER) / "table8_measured.csv").columns) == \
        ch.TABLE8_COLUMNS
    section = check_section(ch.distillation_effect(scores, PARAMS))
    table = section.tables["distillation_effect"]
    assert table.empty and "No shape was healed both ways" in section.markdown
    assert list(pd.read_csv(ch.common.output_dir(ch.CHAPTER) / "distillation_effect.csv").columns) == ch.EFFECT_COLUMNS


def test_every_section_follows_the_contract(private_dirs):
    """Safety scores, the grids (Tables 6 and 7 as heat maps, their description), held-out
    perplexity and the zoo's table are Sections whose key call names a real function."""
    rows = [_student(i, l, h, s, healing=heal) for i, (l, h, s, heal) in enumerate(
        [(24, 1536, .30, "lm"), (18, 1536, .32, "lm"), (24, 768, .35, "lm"), (24, 1536, .31, "kd"), (18, 768, .36, "kd")])]
    scores = _scores(rows)
    shown = check_section(ch.safety_section(scores, PARAMS))
    assert shown.facts["usable"] == scores.average["model"].tolist() and "average_safety_score" in shown.tables
    grid = check_section(ch.grid_section(scores))
    assert set(grid.figures) == {"table6_heatmaps", "table7_heatmaps"} and "Causal students (measured)" in grid.markdown
    found = ch.Models([], pd.DataFrame(), {}, scores.average.assign(hidden=576))
    ppl = check_section(ch.perplexity_section(found))
    assert {"perplexity_zoo-pruned-lm", "perplexity_zoo-pruned-kd", "table15_published"} <= set(ppl.figures)
    assert ppl.facts["table15_vs_table14_min"] <= ppl.facts["table15_vs_table14_max"]
    # the prose follows recompute.recompute_table15 (issue 25: it said "prints only H=128, 256 and 512")
    assert "H=768" in ppl.markdown and "22 of 24 cells are the plain means" in ppl.markdown
    assert "L=2/H=128 (172.28 vs 179.95)" in ppl.markdown and "L=10/H=256 (75.48 vs 70.11)" in ppl.markdown
    assert "prints only" not in ppl.markdown
    assert check_section(ch.zoo_table(found)).items == []          # off the zoo: nothing to show


def test_findings_link_to_shown_tables_and_the_page_reads(private_dirs):
    """Issue 46: 3 to 6 findings, each linked to a table the chapter's sections show, with those tables' numbers;
    every generated paragraph and sentence shape of the chapter within report.READING."""
    from helpers import report
    from helpers.metrics import safety

    rng = np.random.default_rng(1)
    n = 80
    base = pd.DataFrame({"id": range(n), "perplexity": rng.lognormal(3, 1, n), "toxicity": rng.integers(1, 6, n),
                         "label": np.where(np.arange(n) % 2 == 0, "hate", "neutral"),
                         "target_groups": [["women"] if i % 4 < 2 else ["jewish"] for i in range(n)]})
    per_sentence, rows = {}, []
    for i, (layers, inter) in enumerate([(27, 1536), (24, 1536), (21, 1536), (24, 1152), (24, 768)]):
        for healing in ("lm", "kd"):
            ps = base.assign(perplexity=base["perplexity"] * rng.lognormal(0, 0.3, n))
            per_sentence[f"s{i}-{healing}"] = ps
            rows.append(_student(i, layers, inter, safety.safety_scores(ps, ci=False)["safety_score"].mean(),
                                 usable=(i, healing) != (4, "kd"), healing=healing))
    rows.append(_student(9, 30, 1536, 0.38, teacher=True))
    scores = _scores(rows, per_sentence)
    scores.average["unigram_perplexity"], scores.average["perplexity_ratio"] = 1650.0, 30.0
    found = ch.Models([], pd.DataFrame(), {}, scores.average.assign(hidden=576))
    page = [ch.findings(scores, PARAMS), ch.safety_section(scores, PARAMS), ch.grid_section(scores),
            ch.perplexity_section(found), ch.table8(scores), ch.distillation_effect(scores, PARAMS),
            ch.table8_recomputed()]
    box = check_section(page[0], computes=False)
    items = box.items[0][2].items
    low, high = report.READING["findings"]
    assert low <= len(items) <= high
    shown = {name for section in page[1:] for name in section.tables}
    assert {f.table for f in items} <= shown, {f.table for f in items} - shown
    markdown = "\n\n".join(section.markdown for section in page)
    assert report.reading_problems(markdown) == [], report.reading_problems(markdown)
    texts = dict(zip((f.table for f in items), box.facts["findings"]))
    assert box.facts["findings"][0].startswith("1 of the 11 measured models fails the language-model quality gate")
    st = scores.usable[~scores.usable["teacher"]]
    assert f"usable students run from {st['safety_score'].min():.3f}" in box.facts["findings"][1]
    effect = page[5].tables["distillation_effect"]
    ok = effect[effect["both_usable"]]
    big = ok.loc[ok["difference"].abs().idxmax()]
    assert len(ok) == 4
    assert f"{big['difference']:+.3f} [{big['ci_low']:+.3f}, {big['ci_high']:+.3f}] ({big['shape']})" in \
        texts["distillation_effect"]
    def of_four(k):                                   # as a person counts 4 shapes already named
        return {0: "none", 4: "all 4"}.get(k, str(k))

    up, down = int((ok["ci_low"] > 0).sum()), int((ok["ci_high"] < 0).sum())
    assert f"Of the 4 shapes healed both ways with both students usable" in texts["distillation_effect"]
    assert f"higher average safety score for {of_four(up)} and a lower one for {of_four(down)}" in \
        texts["distillation_effect"]
    t8 = page[4].tables["table8_measured"].dropna(subset=["r"])
    top = t8.loc[t8["r"].abs().idxmax()]
    assert f"r = {top['r']:.2f} [{top['ci_low']:.2f}, {top['ci_high']:.2f}]" in texts["table8_measured"]
    assert "reproduced for Distilled-BERT and not reproduced for Distilled-GPT-2" in \
        texts["table8_published_recomputed"]
