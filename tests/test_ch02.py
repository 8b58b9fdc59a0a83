"""Chapter 02 module (helpers.chapters.ch02_correlations) on tiny models, against independent
computations: correlations (scipy), safety scores (Mann-Whitney U / n m), per-metric caching."""

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import datasets, models, published, report, runner
from helpers.chapters import ch02_correlations as ch, ch03_architecture as ch03, common
from helpers.errors import InputError
from helpers.lm import scoring
from helpers.datasets import stereoset as stereoset_data
from helpers.metrics import stereoset
from helpers.models import text_classifiers
from chapter_contract import check_section
from conftest import SENTENCES

PARAMS = dict(models=None, sample_per_group=None, stereoset_clusters_per_target=1, cma_limit=2,
              cma_masking_approach=1, cma_filter_quantile=None, regard_groups=["women", "men"],
              samples_per_prompt=1, max_new_tokens=3, temperature=1.0, top_k=40, top_p=None, generation_seed=0,
              allow_substitute=True, device="cpu", seed=0, pll="original", min_ratio=2.0, regard_objectives=["causal"])


@pytest.fixture
def tiny_data(monkeypatch, tmp_path):
    """A ToxiGen-shaped data set of short sentences (women / men, harmful and benign), and
    private cache and results directories."""
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARMS_RESULTS_DIR", str(tmp_path / "results"))
    df = pd.DataFrame({"id": [f"s{i}" for i in range(len(SENTENCES))], "text": SENTENCES,
                       "label": ["hate", "neutral"] * 5, "toxicity": [4.0, 1.0, 3.5, 1.5, 5.0, 2.0, 4.5, 1.0, 3.0, 1.2],
                       "target_groups": [["women"]] * 6 + [["men"]] * 4})
    df.attrs["dataset"] = "toxigen"
    monkeypatch.setattr(datasets, "load", lambda name, **kw: df.copy())
    return df


def _fixed(name, kind, label):
    return text_classifiers.Classifier(name, kind, [label], lambda t: np.ones((len(t), 1)),
                                       scores=lambda t: pd.DataFrame({"label": [label] * len(t), "score": [0.25] * len(t)}))


FOUND = ch.Classifiers({"regard": _fixed("R", "regard", "negative"), "hatebert": _fixed("H", "toxicity", "benign")},
                       pd.DataFrame())


def test_parameters_resolve_one_name_and_keep_every_parameter(tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_RESULTS_DIR", str(tmp_path))
    with pytest.raises(InputError, match="unknown parameter 'extra'"):     # was silently ignored
        ch.start(PARAMS | {"models": "smollm2-135m", "extra": 1})
    p, shown = ch.start(PARAMS | {"models": "smollm2-135m"})
    assert p["models"] == ["smollm2-135m"] and list(p) == list(ch.PARAMETERS)
    assert shown.tables["parameters"].index.tolist() == list(ch.PARAMETERS)
    assert (tmp_path / ch.CHAPTER / "parameters.csv").is_file()
    p, _ = ch.start({k: v for k, v in PARAMS.items() if k != "pll"} | {"models": "m"})   # missing: the default
    assert p["pll"] == ch.DEFAULTS["pll"] == "original"


def test_safety_settings_are_shared_and_carry_pll(tiny_bert, tiny_data, monkeypatch):
    """The ``safety_per_group`` result: settings exactly the five shared keys; pll reaches the
    scorer (the old chapter ignored it) and each value equals U / (n m) of its own scores."""
    seen = []
    real = runner.cached_result
    monkeypatch.setattr(runner, "cached_result", lambda h, metric, s, f, **kw: seen.append((metric, s)) or real(h, metric, s, f, **kw))
    handle = models.lazy(str(tiny_bert))
    got, ppls = {}, {}
    for pll in ("original", "word-l2r"):
        p = PARAMS | {"pll": pll}
        got[pll] = runner.safety_per_group(handle, common.safety_settings(p)).set_index("group")
        ppls[pll] = ppl = scoring.score(handle, tiny_data["text"].tolist(), pll=pll, cache=False, progress=False)["perplexity"]
        scaled = ppl.to_numpy() / tiny_data["toxicity"].to_numpy()
        for g in ("women", "men"):
            rows = np.array([g in t for t in tiny_data["target_groups"]])
            h, b = scaled[rows & (tiny_data["label"] == "hate").to_numpy()], scaled[rows & (tiny_data["label"] == "neutral").to_numpy()]
            assert got[pll].loc[g, "safety_score"] == pytest.approx(stats.mannwhitneyu(h, b).statistic / (len(h) * len(b)))
    assert [m for m, _ in seen] == ["safety_per_group"] * 2
    assert set(seen[0][1]) == {"dataset", "sample_per_group", "seed", "pll", "upstream_mask_id"}
    assert seen[0][1]["pll"] == "original" and seen[1][1]["pll"] == "word-l2r"
    assert not np.allclose(ppls["original"], ppls["word-l2r"])      # the variant reached the scorer
    with pytest.raises(InputError, match="settings need exactly"):
        runner.safety_per_group(handle, {"dataset": "toxigen"})


def test_chapters_02_and_03_ask_for_one_cached_safety_result(tiny_bert, tiny_data, monkeypatch):
    """The same model, sample, seed and scorer give chapters 02 and 03 the same cache key (and so
    the same cached result), whichever asks first; the chapter is no part of it."""
    keys = {}
    real = runner.cached_result

    def spy(handle, metric, settings, compute, **kw):
        if metric == "safety_per_group":
            keys.setdefault(spy.chapter, []).append({"metric": metric, "model": handle.identity, "settings": settings})
        return real(handle, metric, settings, compute, **kw)

    monkeypatch.setattr(runner, "cached_result", spy)
    for chapter, measure in (("02", lambda p: ch.measure_model(models.lazy(str(tiny_bert)), p, FOUND)),
                             ("03", lambda p: ch03.measure(p))):
        spy.chapter = chapter
        measure(PARAMS | {"models": [str(tiny_bert)], "min_variants": 3, "upstream_mask_id": False})
    assert keys["02"] == keys["03"] and len(keys["02"]) == 1
    assert set(keys["02"][0]["settings"]) == set(runner.SAFETY_SETTINGS)


def test_measure_caches_each_metric_on_its_own(tiny_gpt2, tiny_bert, tiny_data, monkeypatch):
    params = PARAMS | {"models": [str(tiny_gpt2), str(tiny_bert)]}
    m = ch.measure(params, FOUND)
    shown = check_section(ch.measured_section(m, params))
    assert shown.tables["metrics_per_model"] is m.metrics and len(shown.calls) == 4
    rows = m.metrics.set_index("model")
    assert list(rows.index) == [str(tiny_gpt2), str(tiny_bert)] and not m.unavailable
    assert rows["objective"].tolist() == ["causal", "masked"]
    assert np.isnan(rows.loc[str(tiny_bert), "Regard"]) and rows.loc[str(tiny_gpt2), "Regard"] == 0.0   # all negative
    women = m.tables["safety_per_group"].query("group == 'women'").set_index("model")["safety_score"]
    assert rows["Safety score"].to_dict() == women.to_dict()
    ss = m.tables["stereoset_scores"].query("domain == 'gender'").set_index("model")
    assert rows["SS"].to_dict() == ss["ss"].to_dict()
    # stereoset by hand for the masked model: SS = 100 * mean over terms of share(stereotype > anti)
    lm = models.lazy(str(tiny_bert)).load()
    data = stereoset.select_clusters(stereoset_data.load_intrasentence(domain="gender"), 1)
    wide = stereoset.score(lm, data, progress=False).pivot_table(index=["target", "cluster_id"], columns="gold_label",
                                                                 values="score")
    assert rows.loc[str(tiny_bert), "SS"] == pytest.approx(
        100 * (wide["stereotype"] > wide["anti-stereotype"]).groupby(level="target").mean().mean())
    assert m.tables["cma_total_effects"]["n_examples"].tolist() == [2, 2, 2, 2]
    assert set(m.tables["generations"]["perplexity"].notna()) == {True}
    assert list(m.tables["table12"].columns[:3]) == ["model", "group", "group_label"]    # as the book wrote it
    # a new cma_limit recomputes CMA only: every other metric comes from its own cache entry
    for mod, fn in ((stereoset, "score"), (ch, "generate"), (runner, "safety_results")):
        monkeypatch.setattr(mod, fn, lambda *a, **k: pytest.fail("recomputed a cached metric"))
    again = ch.measure(params | {"cma_limit": 3}, FOUND)
    assert again.tables["cma_total_effects"]["n_examples"].tolist() == [3, 3, 3, 3]
    pd.testing.assert_frame_equal(again.tables["stereoset_scores"], m.tables["stereoset_scores"])
    assert (ch.common.output_dir(ch.CHAPTER) / "generations_labels.csv").is_file()


def test_correlation_block_equals_scipy(tiny_data):
    rng = np.random.default_rng(1)
    metrics = pd.DataFrame({"model": list("abcdef"), "objective": ["masked"] * 4 + ["causal", "masked"],
                            **{c: rng.normal(size=6) for c in ch.TABLE3_COLUMNS},
                            "heldout_perplexity": [40.0] * 5 + [1700.0], "unigram_perplexity": 1650.0,
                            "perplexity_ratio": [41.25] * 5 + [0.97], "usable": [True] * 5 + [False]})
    both, text, fig = ch.correlation_block(metrics, "masked", ch.TABLE3_COLUMNS, published.table("000", "table3"),
                                           "Table 3: test")
    section = check_section(ch._correlation_section("table3_correlations", both, text, fig, ch.TABLE3_COLUMNS))
    assert list(section.figures) == ["table3_heatmap"] and section.facts["n"] == 4
    assert "f (perplexity 1,700 is worse than the unigram baseline" in text      # excluded, and named
    part = metrics[(metrics["objective"] == "masked") & metrics["usable"]]
    for r in both.dropna(subset=["r"]).to_dict("records"):
        assert r["r"] == pytest.approx(stats.pearsonr(part[r["x"]], part[r["y"]]).statistic) and r["n"] == 4
    pub = published.table("000", "table3").set_index(["x", "y"])["r"]
    assert both.set_index(["x", "y"])["r_published"].dropna().to_dict() == pub.to_dict()
    assert fig is not None and (ch.common.output_dir(ch.CHAPTER) / "table3_heatmap.png").is_file()
    few, text, fig = ch.correlation_block(metrics, "causal", ch.TABLE3_COLUMNS, published.table("000", "table3"), "x")
    assert fig is None and "at least 3 models" in text and few["r"].isna().all()


def test_table4_counts_every_model_that_generates_and_regard_objectives_is_checked(tiny_data):
    """Seed 000's Table 4 (auto-regressive models) includes XLNet: a permutation model that
    generated enters the block; the parameter takes causal and permutation only."""
    rng = np.random.default_rng(2)
    metrics = pd.DataFrame({"model": list("abcd"), "objective": ["causal", "causal", "permutation", "masked"],
                            **{c: rng.normal(size=4) for c in ch.TABLE4_COLUMNS}, "usable": True})
    both, text, _ = ch.correlation_block(metrics, ch.GENERATING, ch.TABLE4_COLUMNS, published.table("000", "table4"), "t")
    row = both.dropna(subset=["r"]).iloc[0]
    part = metrics[metrics["objective"] != "masked"]
    assert row["n"] == 3 and row["r"] == pytest.approx(stats.pearsonr(part[row["x"]], part[row["y"]]).statistic)
    assert "3 usable causal or permutation models" in text
    for bad in ("causal", ["masked"], []):
        with pytest.raises(InputError, match="regard_objectives"):
            ch.start({"models": "smollm2-135m", "regard_objectives": bad})


def test_published_table12_vs_table1_equals_scipy(tiny_data):
    section = check_section(ch.published_table12_vs_table1())
    out = section.tables["published_table12_vs_table1"]
    names = published.registry_names("000")
    t1 = published.table("000", "table1").assign(reg=lambda d: d["model"].map(names))
    t12 = published.table("000", "table12").assign(reg=lambda d: d["model"].map(names))
    both = t12[t12["group"] == "women"].merge(t1[t1["group"] == "women"], on="reg")
    want = stats.pearsonr(both["safety_score_x"], both["safety_score_y"])
    got = out.set_index("group").loc["women"]
    assert got["r"] == pytest.approx(want.statistic) and got["n"] == len(both) == 7
    assert got["families"] == 6                      # distilgpt2 is of GPT-2's family (Sanh et al. 2019)
    assert "n = 7 models from 6 independent families" in section.markdown
    assert (out["source"] == "published-recomputed").all()


# ---------------------------------------------------------------- families, findings, reading

#: Five causal models of three families: a teacher with two students (as the zoo's), and two others.
FAMILY = {"teacher": "teacher", "student-big": "teacher", "student-small": "teacher", "other-a": "other-a",
          "other-b": "other-b"}
SIZE = {"teacher": 135e6, "student-big": 120e6, "student-small": 100e6, "other-a": 270e6, "other-b": 500e6}


@pytest.fixture
def families(monkeypatch, tmp_path):
    """Chapter 02's lineages and sizes for the five synthetic models of :data:`FAMILY` (the real
    ones come from the registry and the zoo's manifests), and a private results directory."""
    monkeypatch.setenv("HARMS_RESULTS_DIR", str(tmp_path / "results"))
    real = ch.lineages
    monkeypatch.setattr(ch, "lineages", lambda names: {m: FAMILY.get(m) or real([m])[m] for m in names})
    monkeypatch.setattr(ch, "_parameters", lambda m: SIZE.get(m, np.nan))


def _synthetic_measured() -> ch.Measured:
    """Five causal models (:data:`FAMILY`) with random metrics, the Women safety score's interval,
    and Tables 11 and 12 with a group where some models wrote no negative statement."""
    rng = np.random.default_rng(3)
    names = list(FAMILY)
    metrics = pd.DataFrame({"model": names, "objective": "causal", **{c: rng.normal(size=5) for c in ch.TABLE4_COLUMNS},
                            "heldout_perplexity": 30.0, "unigram_perplexity": 900.0, "perplexity_ratio": 30.0,
                            "usable": True, "min_ratio": 2.0, "source": "measured"})
    safety = pd.DataFrame({"model": names, "group": "women", "safety_score": metrics["Safety score"],
                           "ci_low": metrics["Safety score"] - [0.1, 0.5, 0.01, 0.1, 0.1],
                           "ci_high": metrics["Safety score"] + 0.1})
    rows = [{"model": m, "group": g, "group_label": g.title(), "n_harmful": h, "n_benign": 10 - h,
             "safety_score": np.nan if h in (0, 10) else 0.5, "source": "measured"}
            for m, hs in zip(names, ([0, 3], [2, 10], [0, 0], [1, 1], [4, 4])) for g, h in zip(("asian", "women"), hs)]
    t11 = pd.DataFrame([{"model": r["model"], "group": r["group"], "n": 10, "regard_score": 0.5, "source": "measured"}
                        for r in rows])
    return ch.Measured(metrics, {"safety_per_group": safety, "table11": t11, "table12": pd.DataFrame(rows)})


def _chapter_sections(measured, found, params) -> list:
    """Every section the notebook shows, in its order, the Findings box first."""
    return [ch.findings(measured, found), ch.classifier_section(found), ch.measured_section(measured, params),
            ch.table3(measured), ch.table4(measured, found), ch.within_family_section(measured, found),
            ch.regard_section(measured, found, params), ch.published_table12_vs_table1(),
            ch.published_women_correlations()]


def _check_reads_as_a_report(sections) -> list[str]:
    """The chapter's Findings (3 to 6, each linked to a table a section shows) and its generated
    prose without a reading problem; returns the findings' anchors."""
    for s in sections[1:]:
        check_section(s)
    box = sections[0]
    low, high = report.READING["findings"]
    assert low <= len(box.facts["findings"]) <= high
    shown = {report.table_anchor(name) for s in sections for name in s.tables}
    anchors = re.findall(r"\(#(T_[^)]+)\)", box.markdown)
    assert len(anchors) == len(box.facts["findings"]) and set(anchors) <= shown
    markdown = "\n\n".join(s.markdown for s in sections)
    assert report.reading_problems(markdown) == []
    written = pd.read_csv(ch.common.output_dir(ch.CHAPTER) / f"{report.FINDINGS_TABLE}.csv")
    assert written["finding"].tolist() == box.facts["findings"]
    return anchors


def test_correlations_count_independent_families(families):
    """Each correlation's ``families``: the lineages among the models with both values (a student
    counts with its teacher); the heat map and the paragraph say how many, and that 3 cannot tell
    r = 0.8 from none (stats.pairs_for_correlation)."""
    measured = _synthetic_measured()
    measured.metrics.loc[measured.metrics["model"] == "other-b", "Regard"] = np.nan
    section = check_section(ch.table4(measured, ch.Classifiers({}, pd.DataFrame())))
    t = section.tables["table4_correlations"].set_index(["x", "y"])
    assert t.loc[("HateBERT", "Safety score"), ["n", "families"]].tolist() == [5, 3]
    assert t.loc[("Regard", "Safety score"), ["n", "families"]].tolist() == [4, 2]
    part = measured.metrics.dropna(subset=["Regard"])
    assert t.loc[("Regard", "Safety score"), "r"] == pytest.approx(
        stats.pearsonr(part["Regard"], part["Safety score"]).statistic)
    assert section.facts["families"] == 3
    assert "n = 5 models from 3 independent families" in section.markdown
    assert f"takes {ch.stats.pairs_for_correlation(0.8)} independent families" in section.markdown
    assert "n = 5 models from 3 independent families" in section.figures["table4_heatmap"].axes[0].get_title()
    assert t["r_published"].notna().all()                                # the paper's r beside each of ours


def test_within_family_is_the_teacher_and_its_students_by_size(families):
    """The dose-response table: the teacher first, then its students by size; the sign-agreement
    counts equal a brute force over the changes from the teacher."""
    measured = _synthetic_measured()
    section = check_section(ch.within_family_section(measured, ch.Classifiers({}, pd.DataFrame())))
    levels, agree = section.tables["table4_within_family"], section.tables["table4_sign_agreement"]
    assert levels["model"].tolist() == ["teacher", "student-big", "student-small"]
    assert levels["role"].tolist() == ["teacher", "student", "student"]
    assert levels["parameters_millions"].tolist() == [135.0, 120.0, 100.0]
    m = measured.metrics.set_index("model")
    for r in agree.to_dict("records"):
        d_safety = m.loc[["student-big", "student-small"], "Safety score"] - m.loc["teacher", "Safety score"]
        d = m.loc[["student-big", "student-small"], r["metric"]] - m.loc["teacher", r["metric"]]
        assert r["students"] == 2 and r["students_same_sign"] == int((d * d_safety > 0).sum())
        assert r["students_opposite_sign"] == int((d * d_safety < 0).sum())
        assert r["higher_means"] == ch.HIGHER_MEANS[r["metric"]]
    # the safety interval of the teacher is [s - 0.1, s + 0.1]: which students lie inside it, by hand
    s = m["Safety score"]
    inside = sum(abs(s[x] - s["teacher"]) <= 0.1 for x in ("student-big", "student-small"))
    change = s[["student-big", "student-small"]] - s["teacher"]
    lie = {0: "neither score lies", 1: "1 of the 2 scores lies", 2: "both scores lie"}[inside]
    assert (f"differ from their teacher's by {change.min():+.3f} to {change.max():+.3f}; {lie} inside"
            in section.markdown)
    assert section.facts["families"] == ["teacher"]
    # the default build: the shared safety result has no interval (runner.safety_per_group), so the table
    # shows none and the text says that no change can be told from noise, over the sentences it counts
    measured.tables["safety_per_group"] = measured.tables["safety_per_group"].assign(
        ci_low=np.nan, ci_high=np.nan, n_harmful=26, n_benign=26)
    bare = ch.within_family_section(measured, ch.Classifiers({}, pd.DataFrame()))
    assert "safety_ci_low" not in bare.tables["table4_within_family"]
    counts = bare.tables["table4_within_family"][["n_harmful", "n_benign", "n_statements"]]
    assert counts.eq([26, 26, 10]).all(axis=None)
    assert "carry no interval here" in bare.markdown and "over 26 harmful and 26 benign sentences" in bare.markdown
    alone = measured.metrics[~measured.metrics["model"].str.startswith("student")]
    empty = ch.within_family_section(ch.Measured(alone, measured.tables), ch.Classifiers({}, pd.DataFrame()))
    assert not empty.tables and "no within-family comparison" in empty.markdown


def test_table12_names_why_a_score_is_missing(families):
    """Table 12's empty cells: no negative statement (n_harmful = 0) or only negative ones
    (n_benign = 0), each named in the caption of its group's column, counted per model."""
    measured = _synthetic_measured()
    t12 = measured.tables["table12"]
    why = ch.table12_why(t12)
    assert why["Asian"].startswith("the model wrote no statement about the group that was classified negative")
    assert "every statement about the group was classified negative" in why["Women"]
    assert "no statement" in why["Women"] and set(why) == {"Asian", "Women"}
    section = ch.regard_section(measured, ch.Classifiers({}, pd.DataFrame()), PARAMS)
    view = section.tables["table12_view"]
    assert view.attrs["why"] == why and view.isna().sum().sum() == t12["safety_score"].isna().sum()
    assert "classified negative" in report.table_view(view, "table12_view").caption
    per_model = t12.groupby("model")["safety_score"].apply(lambda x: int(x.isna().sum()))
    assert section.facts["undefined_per_model"] == per_model.to_dict()
    assert per_model.min() < per_model.max() and f"for {per_model.min()} to {per_model.max()} of the 2 groups" in \
        section.markdown


def test_findings_are_computed_linked_and_read_well(families):
    measured = _synthetic_measured()
    found = ch.Classifiers({}, pd.DataFrame({"metric": ["Regard"], "classifier": ["VADER"], "substitute_for": ["r"]}),
                           " (offline substitutes: Regard = VADER)")
    sections = _chapter_sections(measured, found, PARAMS)
    anchors = _check_reads_as_a_report(sections)
    assert "T_table4_correlations" in anchors and "T_table4_sign_agreement" in anchors
    text = sections[0].facts["findings"]
    t4 = sections[4].tables["table4_correlations"]
    with_safety = t4[(t4["y"] == "Safety score") & (t4["source"] == "measured")].sort_values("r")
    lo, hi = with_safety.iloc[0], with_safety.iloc[-1]
    assert (f"Across 5 usable auto-regressive models from 3 independent families" in text[0]
            and f"r = {lo['r']:.2f} ({lo['x']}, 95 % CI [{lo['ci_low']:.2f}, {lo['ci_high']:.2f}]; "
                f"the paper's: {lo['r_published']:.2f})" in text[0] and f"to {hi['r']:.2f} ({hi['x']}" in text[0])
    assert "fewer than the 9 needed" in text[0]
    agree = sections[5].tables["table4_sign_agreement"]["students_same_sign"]
    count = ({0: "neither student", 1: "1 of the 2 students", 2: "both students"}[agree.min()]
             if agree.min() == agree.max() else f"{agree.min()} to {agree.max()} of the 2 students")
    assert f"that change for {count}" in text[1] and "Within the teacher family" in text[1]
    pub = sections[-1].tables["published_women_correlations"].set_index("x")
    assert f"r = {pub.loc['SS', 'r']:.2f}" in text[-2] and f"prints {pub.loc['SS', 'r_published']:.2f}" in text[-2]
    assert text[-1].startswith("Offline, the one regard and toxicity classifier is a stand-in, so its numbers")


def test_chapter_on_tiny_models_has_findings_and_reads_well(tiny_gpt2, tiny_bert, tiny_data):
    """The whole chapter on two tiny models (one causal, one masked: no correlation can be computed)."""
    params = PARAMS | {"models": [str(tiny_gpt2), str(tiny_bert)]}
    found = ch.Classifiers(FOUND.by_key, pd.DataFrame({"metric": ["Regard", "HateBERT"], "classifier": ["R", "H"],
                                                       "substitute_for": ["—", "—"]}))
    measured = ch.measure(params, found)
    sections = _chapter_sections(measured, found, params)
    _check_reads_as_a_report(sections)
    text = sections[0].facts["findings"]
    usable = int(measured.metrics.query("objective == 'causal'")["usable"].sum())
    assert text[0].startswith("No correlation of the Women safety score across auto-regressive models can be "
                              f"computed here ({'no usable model' if usable == 0 else f'{usable} usable model'}")
    for finding, name in ((text[0], "table4"), (text[1], "table3")):          # the paper's strongest, beside
        paper = published.table("000", name).query("y == 'Safety score'")
        top = paper.loc[paper["r"].abs().idxmax()]
        assert f"the strongest being r = {top['r']:.2f} between {top['x']} and the safety score" in finding
