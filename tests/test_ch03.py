"""Chapter 03 (helpers.chapters.ch03_architecture) on tiny models: the shape read from the
configuration, the average safety score against the per-group scores computed
independently, the shared "safety_per_group" cache entry (keyed by the pll and mask
settings), Table 13 / Table 5 against the published tables and scipy."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest
from scipy import stats as sps

from helpers import cache, datasets, models, published, report, runner
from helpers.chapters import ch03_architecture as ch, common
from helpers.lm import scoring
from helpers.metrics import safety

from chapter_contract import check_section
from conftest import SENTENCES


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """Results and caches in temporary directories, and a ToxiGen-format file of short
    sentences (3 harmful and 3 benign for each of two groups)."""
    tmp = tmp_path_factory.mktemp("ch03")
    rows = [{"id": i, "text": t, "toxicity": 1.0 + (i % 5) * 0.75, "label": "hate" if i % 2 else "neutral",
             "target_groups": ["asian"] if i < 6 else ["women"]} for i, t in enumerate(SENTENCES + SENTENCES[:2])]
    data = tmp / "toxigen.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HARMS_RESULTS_DIR", str(tmp / "results"))
        mp.setenv("HARMS_CACHE_DIR", str(tmp / "cache"))
        yield {"results": tmp / "results" / ch.CHAPTER, "data": str(data), "cache": tmp / "cache"}


def _params(*names, **over):
    return {**ch.DEFAULTS, "models": [str(n) for n in names], "sample_per_group": 3, **over}


@pytest.fixture(scope="module")
def measured(env, tiny_gpt2, tiny_bert):
    params = _params(tiny_gpt2, tiny_bert, "no-such-model-x")
    return params, ch.measure(params, dataset=env["data"])


def test_start_resolves_models_and_lists_pll(env):
    params, _ = ch.start({"models": "smollm2-135m", "pll": "word-l2r"})
    assert params["models"] == ["smollm2-135m"]
    assert list(params) == list(ch.PARAMETERS)
    written = pd.read_csv(env["results"] / "parameters.csv").set_index("parameter")["value"]
    assert written["pll"] == "'word-l2r'" and written["upstream_mask_id"] == "False"
    assert ch.start({})[0]["models"] == models.offline_models()


def test_measured_rows_against_independent_computation(env, measured, tiny_gpt2, tiny_bert, loaded_factory):
    params, m = measured
    assert list(m.unavailable) == ["no-such-model-x"]
    t = m.table.set_index("model")
    assert list(m.table.columns) == [*ch.MEASURED_COLUMNS, "params_source"]
    for path, objective, layers in ((tiny_gpt2, "causal", 2), (tiny_bert, "masked", 2)):
        row = t.loc[str(path)]
        lm = loaded_factory(path, objective)
        assert (row["layers"], row["heads"], row["hidden"]) == (layers, 2, 32)
        assert row["params"] == sum({id(p): p.numel() for p in lm.model.parameters()}.values())
        assert row["family"] == str(path) and row["source"] == "measured"
        # the average safety score: eqs. 1-3 on freshly scored sentences, averaged by hand
        data = datasets.sample_per_group(datasets.load(env["data"]), 3, seed=0).reset_index(drop=True)
        scored = data.join(scoring.score(lm, data["text"].tolist(), cache=False, progress=False)
                           [["perplexity"]].reset_index(drop=True))
        groups = safety.safety_scores(scored, ci=False)["safety_score"]
        assert row["n_groups"] == 2
        assert row["avg_safety_score"] == pytest.approx(groups.sum() / 2, abs=1e-12)


def test_safety_per_group_is_one_cached_result_keyed_by_settings(env, tiny_bert, monkeypatch):
    """Chapters 02-04 share metric "safety_per_group"; the pll and mask settings reach the
    scorer and are part of the key, the chapter is not."""
    calls = []
    real = runner.safety_results
    monkeypatch.setattr(runner, "safety_results", lambda h, **kw: calls.append(kw) or real(h, **kw))
    handle = models.lazy(str(tiny_bert))
    base = common.safety_settings(_params(sample_per_group=2), dataset=env["data"])     # not measured before
    first = runner.safety_per_group(handle, base)
    assert len(calls) == 1 and calls[0]["ci"] is False and calls[0]["pll"] == "original"
    again = runner.safety_per_group(models.lazy(str(tiny_bert)), dict(base))
    assert len(calls) == 1                                                   # cached
    pd.testing.assert_frame_equal(first, again)
    for change in ({"pll": "word-l2r"}, {"upstream_mask_id": True}):
        other = runner.safety_per_group(handle, {**base, **change})
        assert {k: calls[-1][k] for k in change} == change                   # reached the scorer
        assert other[list(change)].drop_duplicates().to_dict("records") == [change]
    assert len(calls) == 3
    # the cache file is the one runner.cached_result names: metric + model + settings only
    key = {"metric": "safety_per_group", "version": runner.SAFETY_VERSION, "model": handle.identity, "settings": base}
    assert cache.memoize(key, lambda: pytest.fail("not cached")).equals(first)
    assert set(base) == {"dataset", "sample_per_group", "seed", "pll", "upstream_mask_id"}


def test_measure_passes_pll_from_params(env, tiny_bert, monkeypatch):
    seen = []
    monkeypatch.setattr(runner, "safety_per_group", lambda h, s: seen.append(s) or pd.DataFrame({"safety_score": [0.4]}))
    monkeypatch.setattr(ch, "shape", lambda h: {"layers": 1, "heads": 1, "hidden": 1, "params": 1})
    ch.measure(_params(tiny_bert, pll="word-l2r", upstream_mask_id=True), dataset=env["data"])
    assert seen == [{"dataset": env["data"], "sample_per_group": 3, "seed": 0, "pll": "word-l2r", "upstream_mask_id": True}]


def test_table13_adds_published_rows_of_unmeasured_models(env, measured):
    _, m = measured
    section = check_section(ch.table13(m))
    text, t13 = section.markdown, section.tables["table13_architecture"]
    assert section.facts["published_rows"] == 19
    pub = published.table("000", "table13")
    assert (t13["source"] == "published").sum() == len(pub) == 19
    assert "2 models measured here; 1 not available (listed with the reason in `unavailable`); 19 published" in text
    assert section.tables["unavailable"]["model"].tolist() == ["no-such-model-x"]
    written = pd.read_csv(env["results"] / "table13_architecture.csv")
    assert list(written.columns[:8]) == ["model", "family", "layers", "heads", "hidden", "params",
                                        "avg_safety_score", "source"]
    gpt2 = written.set_index("model").loc["GPT2-small"]
    assert gpt2["params"] == models.spec("gpt2").params and gpt2["params_source"] == "registry"
    fig = check_section(ch.figure3(m)).figures["figure3_safety_vs_params"]
    assert (env["results"] / "figure3_safety_vs_params.png").stat().st_size > 5000
    assert fig.axes[0].get_xscale() == "log"
    # a measured paper model replaces its published row
    renamed = ch.Measured(m.table.assign(model=["gpt2", "bert-base-uncased"]))
    t13b = ch.table13(renamed).tables["table13_architecture"]
    assert (t13b["source"] == "published").sum() == 17


def test_table5_measured_against_scipy(env, measured):
    params, m = measured
    section = check_section(ch.table5_measured(params, m))
    text, t5 = section.markdown, section.tables["table5_measured"]
    # the tiny random test models are no language models: the gate excludes them, and says so
    assert t5.empty and "No family at hand has 3 or more usable models" in text
    assert "Both measured models fail the language-model quality gate" in text
    fam = pd.DataFrame({"model": list("abcde"), "family": "F", "heads": [2, 4, 4, 8, 8], "layers": [1, 2, 3, 5, 9],
                        "hidden": [8, 16, 16, 32, 32], "avg_safety_score": [0.41, 0.37, 0.36, 0.30, 0.99],
                        "n_groups": 13, "heldout_perplexity": [50, 60, 70, 80, 1700.0],
                        "unigram_perplexity": 1650.0, "perplexity_ratio": [33, 27.5, 23.6, 20.6, 0.97],
                        "usable": [True] * 4 + [False], "source": "measured"})
    section = ch.table5_measured(params, ch.Measured(fam))
    text, t5 = section.markdown, section.tables["table5_measured"]
    assert section.facts["usable"] == list("abcd")
    assert "1 of the 5 measured models fails the language-model quality gate" in text and "`e`" in text  # named
    fam = fam.iloc[:4]
    row = t5.set_index("x").loc["layers"]
    ref = sps.pearsonr(fam["layers"], fam["avg_safety_score"])
    assert row["r"] == pytest.approx(ref.statistic) and row["p_value"] == pytest.approx(ref.pvalue)
    # issue 46: the correlations are table rows; the text counts them and names the strongest with its interval
    refs = {x: sps.pearsonr(fam[x], fam["avg_safety_score"]) for x in ("heads", "layers", "hidden")}
    x = max(refs, key=lambda k: abs(refs[k].statistic))
    ci = refs[x].confidence_interval(0.95)
    assert f"The strongest is r = {refs[x].statistic:.2f} [{ci.low:.2f}, {ci.high:.2f}] (F, with {x}, n = 4)" in text
    assert f"The measured Table 5 holds {len(t5)} correlations over 1 family of 4 usable models each" in text
    assert "n = 4 models from 4 independent families" in text and section.facts["families"] == 4   # unknown: own
    assert all(report.word_count(p) <= report.READING["max_paragraph_words"] for p in report.paragraphs(text))
    assert pd.read_csv(env["results"] / "table5_measured.csv")["source"].eq("measured").all()
    section = ch.table5_measured({**params, "min_variants": 2}, ch.Measured(fam.iloc[:2]))
    text, two = section.markdown, section.tables["table5_measured"]
    assert two["r"].isna().all() and "3 cannot be computed (a correlation needs at least 3 models)" in text  # ex. 2


def test_table5_published_recomputed_by_hand(env):
    section = check_section(ch.table5_published())
    text, t5 = section.markdown, section.tables["table5_published_recomputed"]
    assert section.facts["table1_averages_match"] is True
    names = published.registry_names("000")
    t13 = published.table("000", "table13")
    t1 = published.table("000", "table1")
    avg1 = t1.groupby(t1["model"].map(names))["safety_score"].mean()
    for _, row in t5.iterrows():
        part = t13[t13["family"] == row["family"]]
        r13 = sps.pearsonr(part[row["x"]], part["avg_safety_score"]).statistic
        r1 = sps.pearsonr(part[row["x"]], part["model"].map(names).map(avg1)).statistic
        assert row["r_from_table13"] == round(r13, 3) and row["r_from_table1_averages"] == round(r1, 3)
    assert (t5["r_from_table1_averages"].round(2) == t5["r_published"]).all()
    assert "every value matches the printed Table 5" in text
    assert pd.read_csv(env["results"] / "table5_published_recomputed.csv").shape == t5.shape


def test_findings_link_to_shown_tables_and_the_page_reads(env, measured):
    """Issue 46: 3 to 6 findings, each linked to a table the chapter's sections show, with those tables'
    numbers; every generated paragraph and sentence shape within report.READING, on the tiny models and on a
    family of five whose last member fails the gate."""
    params, m = measured
    fam = pd.DataFrame({"model": ["smollm2-135m", "zoo-a", "zoo-b", "zoo-c", "zoo-d"], "family": "F",
                        "heads": 9, "layers": [30, 27, 24, 21, 12], "hidden": 576, "intermediate": 1536,
                        "params": [135e6, 124e6, 113e6, 102e6, 70e6], "avg_safety_score": [0.41, 0.37, 0.36, 0.30, 0.9],
                        "n_groups": 13, "heldout_perplexity": [20, 30, 40, 50, 1700.0], "unigram_perplexity": 1650.0,
                        "perplexity_ratio": [80, 55, 41, 33, 0.97], "usable": [True] * 4 + [False],
                        "source": "measured"})
    for case in (m, ch.Measured(fam)):
        page = [ch.findings(params, case), ch.table13(case), ch.figure3(case), ch.table5_measured(params, case),
                ch.table5_published()]
        box = check_section(page[0], computes=False)
        items = box.items[0][2].items
        low, high = report.READING["findings"]
        assert low <= len(items) <= high
        shown = {name for section in page[1:] for name in section.tables}
        assert {f.table for f in items} <= shown
        markdown = "\n\n".join(section.markdown for section in page)
        assert report.reading_problems(markdown) == [], report.reading_problems(markdown)
        assert pd.read_csv(env["results"] / "findings.csv")["finding"].tolist() == box.facts["findings"]
    texts = box.facts["findings"]
    t5 = page[3].tables["table5_measured"].dropna(subset=["r"])
    top = t5.loc[t5["r"].abs().idxmax()]
    ref = sps.pearsonr(fam["layers"][:4], fam["avg_safety_score"][:4])
    assert top["x"] == "layers" and top["r"] == pytest.approx(ref.statistic)
    assert any(f"with layers in F: r = {ref.statistic:.2f}" in t for t in texts)
    assert "1 of the 5 measured models fails the language-model quality gate" in texts[0]
    assert any("run from 0.300 (zoo-c, 102 M parameters) to 0.410 (smollm2-135m, 135 M parameters)" in t
               for t in texts)
    rec = page[4].tables["table5_published_recomputed"]
    match1 = int((rec["r_from_table1_averages"].round(2) == rec["r_published"]).sum())
    cases = f"all {len(rec)} cases" if match1 == len(rec) else f"{match1} of the {len(rec)} cases"
    assert any(f"the paper's Table 5 correlations match the printed value in {cases}" in t for t in texts)
