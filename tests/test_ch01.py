"""Chapter 01 (helpers.chapters.ch01_safety) on tiny models and a tiny data set, against
independent computations: eqs. 1-3 by brute force, per-model means by hand, the
correlations against scipy.stats.pearsonr and the "within the published range" counts
from the published table. The notebook itself is checked to be a story of a few calls."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from helpers import book, datasets, models, published, report, runner
from helpers.chapters import ch01_safety as ch
from helpers.chapters.common import Section
from helpers.errors import ModelUnavailableError

from chapter_contract import check_section
from conftest import SENTENCES

NOTEBOOK = book.NOTEBOOKS_DIR / "01_safety_scores.ipynb"


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """Results and score cache in temporary directories; a ToxiGen-format file with two
    groups (4 harmful, 4 benign short sentences each) and an ImplicitHate-format file."""
    tmp = tmp_path_factory.mktemp("ch01")
    texts = SENTENCES + [s.replace(" .", " !") for s in SENTENCES[:6]]
    rows = [{"id": i, "text": t, "toxicity": 1.0 + (i % 4) if i % 2 else 1.0 + (i % 3) / 2,
             "label": "hate" if i % 2 else "neutral", "target_groups": ["asian"] if i < 8 else ["women"]}
            for i, t in enumerate(texts)]
    implicit = [{"id": i, "text": t, "toxicity": 2.25 if i % 2 else 1.0, "label": "hate" if i % 2 else "neutral",
                 "target_groups": ["all_groups"]} for i, t in enumerate(texts[:10])]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HARMS_RESULTS_DIR", str(tmp / "results"))
        mp.setenv("HARMS_CACHE_DIR", str(tmp / "cache"))
        yield {"tmp": tmp, "results": tmp / "results" / ch.CHAPTER,
               "toxigen_file": _write_jsonl(tmp / "toxigen.jsonl", rows),
               "implicit_file": _write_jsonl(tmp / "implicit.jsonl", implicit)}


@pytest.fixture(scope="module")
def run(env, tiny_gpt2, tiny_gpt2_bos, tiny_bert):
    """The chapter on three tiny models (two causal, one masked) and a missing one."""
    params, shown = ch.start({"models": [str(tiny_gpt2), str(tiny_gpt2_bos), str(tiny_bert), "no-such-model-x"],
                              "sample_per_group": 3, "implicit_sample_per_label": 4, "n_resamples": 60,
                              "toxigen": env["toxigen_file"], "implicit_hate": env["implicit_file"]})
    table = check_section(shown, computes=False).tables["parameters"]
    toxigen = ch.measure_toxigen(params)
    implicit = ch.measure_implicit_hate(params)
    return {"params": params, "table": table, "toxigen": toxigen, "implicit": implicit, **env}


def test_models_parameter_takes_one_name_or_a_list(env):
    params, shown = ch.start({"models": "smollm2-135m"})
    table = shown.tables["parameters"]
    assert params["models"] == ["smollm2-135m"]                          # not a list of characters
    written = pd.read_csv(env["results"] / "parameters.csv")
    assert list(written.columns) == ["parameter", "value"]
    assert written.set_index("parameter").loc["models", "value"] == "['smollm2-135m']"
    assert ch.start({"models": ["smollm2-135m", "gemma3-270m"]})[0]["models"] == ["smollm2-135m", "gemma3-270m"]
    assert ch.start({})[0]["models"] == models.offline_models()          # the notebook's default
    assert list(params) == [p for p in ch.PARAMETERS if p in params]      # the notebook's order
    assert table.loc["sample_per_group", "value"] == "25"


def test_safety_scores_equal_brute_force_and_per_model_means(run):
    """Every per-group score is U / (n m) of eqs. 1-3 counted over all pairs; the chapter's
    per-model ToxiGen mean is the plain mean of that model's group scores."""
    per_sentence, per_group = run["toxigen"].per_sentence, run["toxigen"].per_group
    assert set(per_group["model"]) == set(run["params"]["models"][:3])
    for _, row in per_group.iterrows():
        part = per_sentence[(per_sentence["model"] == row["model"])
                            & per_sentence["target_groups"].map(lambda g: row["group"] in g)]
        scaled = part["perplexity"] / part["toxicity"]
        x = scaled[part["label"] == "hate"].to_numpy()[:, None]
        y = scaled[part["label"] == "neutral"].to_numpy()[None, :]
        assert (row["n_harmful"], row["n_benign"]) == (x.size, y.size) == (3, 3)
        assert row["safety_score"] == pytest.approx(((x > y) + 0.5 * (x == y)).mean(), abs=1e-12)
        assert row["ci_low"] <= row["ci_high"]
    pairs = ch.toxigen_vs_implicit_hate(run["toxigen"], run["implicit"]).set_index("model")
    for model, part in per_group.groupby("model"):
        assert pairs.loc[model, "toxigen_mean_safety"] == pytest.approx(part["safety_score"].sum() / len(part))
    # the written Table 1 is the measured one, with display labels where it is shown
    t1 = pd.read_csv(run["results"] / "table1_safety_scores.csv")
    assert list(t1.columns[:3]) == ["model", "group", "group_label"]
    assert set(t1["group_label"]) == {"Asian", "Women"}
    view = check_section(ch.table1(run["toxigen"])).tables["table1_view"]
    assert view.shape == (2, 3) and view.index.name == "group"
    assert str(ch.table1(run["toxigen"]).call) == "metrics.safety.safety_scores(per_sentence, n_resamples=60, seed=0)"


def test_unavailable_models_are_listed_not_dropped(run):
    assert list(run["toxigen"].unavailable) == ["no-such-model-x"]
    report = check_section(ch.scoring_report(run["toxigen"]))
    text, table = report.markdown, report.tables["unavailable"]
    assert "Not available here: 1 model" in text and "Measured 3 models from 3 independent families" in text
    assert report.facts["unavailable"] == ["no-such-model-x"] and report.facts["sentences"] == 12
    shown = report.tables["measured_models"]              # the models listed in a table, not a sentence
    assert list(shown["model"]) == run["toxigen"].models and not shown["in_paper"].any()
    assert list(shown["independent_family"]) == [models.lineage(n) for n in run["toxigen"].models]
    assert set(shown["origin"]) == {"local"} and report.facts["families"] == shown["independent_family"].nunique()
    assert list(table["model"]) == ["no-such-model-x"] and table["reason"].str.len().min() > 0
    with pytest.raises(ModelUnavailableError, match="none of the models"):
        ch.measure(dict(run["params"], models=["no-such-model-x"]), run["toxigen"], 3)


def test_within_published_range_counted_by_hand(run):
    outputs = check_section(ch.compare_table1(run["toxigen"]))
    assert "None of the measured models is among the paper's 24" in outputs.markdown
    ranged = pd.read_csv(run["results"] / "table1_vs_published_range.csv")
    pub = published.table("000", "table1")
    inside = 0
    for _, row in ranged.iterrows():
        ref = pub.loc[pub["group"] == row["group"], "safety_score"]
        within = bool(ref.min() <= row["safety_score"] <= ref.max())
        assert row["within_published_range"] == within
        assert row["difference_to_median"] == pytest.approx(row["safety_score"] - ref.median())
        inside += within
    assert len(ranged) == 6
    summary = check_section(ch.figure2(run["toxigen"]))
    assert summary.facts["within_published_range"] == inside
    # issue 46: the counts are per model, in a table; the paragraph names the fewest and the most
    per_model = summary.tables["figure2_per_model"].set_index("model")
    for model, part in ranged.groupby("model"):
        assert per_model.loc[model, "within_published_range"] == part["within_published_range"].sum()
        assert per_model.loc[model, "groups"] == 2 and per_model.loc[model, "usable"]
    fewest, most = per_model["within_published_range"].min(), per_model["within_published_range"].max()
    assert (f"per model, {fewest} (`{per_model['within_published_range'].idxmin()}`) to {most} " if fewest < most
            else f"same group: {({0: 'neither group', 1: '1 of the 2 groups', 2: 'both groups'})[fewest]} for each "
                 "model") in summary.markdown
    # issue 25: the unscaled score beside S, and the reason they differ, from the per-sentence data
    per_sentence = run["toxigen"].per_sentence.drop_duplicates("id")
    per_group = run["toxigen"].per_group
    up = int((per_group["unscaled_score"] > 0.5).sum())
    low = [(s, u) for s, u in zip(per_group["safety_score"], per_group["unscaled_score"]) if s < 0.5]
    flipped = sum(u > 0.5 for _, u in low)
    assert summary.facts["unscaled_above_half"] == up and summary.facts["below_half"] == len(low)
    assert summary.facts["below_half_unscaled_above_half"] == flipped
    assert per_model["below_half_unscaled_above_half"].sum() == flipped and per_model["below_half"].sum() == len(low)
    # issue 36: "not the same as preferring the harmful statements" only where a cell with S < 0.5
    # has an unscaled score above 0.5
    assert ("A score below 0.5 is not the same as preferring" in summary.markdown) == (flipped > 0)
    assert "That is not the same" not in summary.markdown
    mean_harmful = per_sentence.loc[per_sentence["label"] == "hate", "toxicity"].mean()
    mean_benign = per_sentence.loc[per_sentence["label"] == "neutral", "toxicity"].mean()
    assert summary.facts["toxicity_mean_harmful"] == pytest.approx(mean_harmful)
    if flipped:
        models_flipped = int((per_model["below_half_unscaled_above_half"] > 0).sum())
        models_low = int((per_model["below_half"] > 0).sum())
        assert f"for {report.count_of(models_flipped, models_low, 'model')} with a score below 0.5" in summary.markdown
        assert (f"mean {mean_harmful:.2f} against" in summary.markdown) == (mean_harmful > mean_benign)
    elif low:
        assert "For every group scoring below 0.5" in summary.markdown
    top = summary.tables["figure2_top_groups"]
    paper_top = pub.groupby("group")["safety_score"].median().sort_values(ascending=False).head(4)
    assert top["paper_group"].tolist() == [datasets.GROUP_LABELS.get(g, g) for g in paper_top.index]
    assert top["paper_median"].tolist() == pytest.approx(paper_top.tolist())
    shared = len(set(top["paper_group"]) & set(top["measured_group"].dropna()))
    assert f"Of the paper's 4 highest-scoring groups, {shared} " in summary.markdown
    # issue 36: a model failing the quality gate is in the figure but not in the paragraph's counts
    kept = sorted(per_group["model"].unique())[:2]
    left = sorted(set(per_group["model"]) - set(kept))
    gated = check_section(ch.figure2(run["toxigen"], Section(facts={"usable": kept})))
    usable_rows = per_group[per_group["model"].isin(kept)]
    inside_kept = 0
    for _, row in usable_rows.iterrows():
        ref = pub.loc[pub["group"] == row["group"], "safety_score"]
        inside_kept += bool(ref.min() <= row["safety_score"] <= ref.max())
    assert gated.facts["excluded"] == left and gated.facts["scores"] == len(usable_rows) == 4
    assert gated.facts["within_published_range"] == inside_kept
    assert gated.tables["figure2_per_model"].set_index("model").loc[kept, "within_published_range"].sum() == inside_kept
    assert "The median safety score of the 2 models that pass the quality gate" in gated.markdown
    assert f"Left out of these paragraphs: `{left[0]}`, which fails the language-model quality gate" in gated.markdown
    assert f"`{left[0]}`" not in gated.markdown.split("Left out")[0]                 # never interpreted
    assert gated.facts["median"] == pytest.approx(usable_rows["safety_score"].median())
    assert f"{usable_rows['safety_score'].median():.3f}" in gated.markdown
    assert (pd.read_csv(run["results"] / "figure2_scores.csv")["source"] == "measured").sum() == 6   # all shown
    both = pd.read_csv(run["results"] / "figure2_scores.csv")
    assert (both["source"] == "measured").sum() == 6 and (both["source"] == "published").sum() == len(pub)
    assert not (run["results"] / "table1_vs_published.csv").exists()   # no paper model measured


def test_paper_model_is_compared_model_by_model(run, monkeypatch):
    """A measured model with a paper name is paired with its published row (difference)."""
    m = run["toxigen"]
    renamed = ch.Measured(m.per_sentence, m.per_group.replace({"model": {m.models[0]: "gpt2"}}))
    shown = ch.compare_table1(renamed)
    paired = shown.tables["table1_vs_published"]
    assert "1 measured model is in the paper" in shown.markdown and shown.facts["paper_models_measured"] == 1
    pub = published.table("000", "table1").set_index(["model", "group"])
    for _, row in paired.iterrows():
        assert row["published"] == pub.loc[("GPT-2", row["group"]), "safety_score"]
        assert row["difference"] == pytest.approx(row["measured"] - row["published"])
    # issue 25: the difference carries the measurement's interval, shifted by the published value
    ours = renamed.per_group[renamed.per_group["model"] == "gpt2"].set_index("group")
    for _, row in paired.iterrows():
        assert row["difference_ci_low"] == pytest.approx(ours.loc[row["group"], "ci_low"] - row["published"])
        assert row["difference_ci_high"] == pytest.approx(ours.loc[row["group"], "ci_high"] - row["published"])
    off = int(((paired["difference_ci_low"] > 0) | (paired["difference_ci_high"] < 0)).sum())
    assert f"for {report.count_of(off, len(paired), 'cell')} the 95 % interval of the difference" in shown.markdown


def test_log_perplexity_and_table10(run):
    section = check_section(ch.table9(run["toxigen"]))
    shown, text = section.tables["table9_vs_published"], section.markdown
    t9 = pd.read_csv(run["results"] / "table9_log_perplexity.csv")
    sent = run["toxigen"].per_sentence
    for _, row in t9.iterrows():
        lp = np.log(sent.loc[(sent["model"] == row["model"]) & (sent["label"] == row["label"]), "perplexity"])
        assert row["mean"] == pytest.approx(lp.mean()) and row["sd"] == pytest.approx(lp.std(ddof=1))
    assert set(shown["source"]) == {"measured", "published"} and "log-perplexities run" in text
    # issue 46: where each model stands against the paper's range is a table row, counted in the text
    ranged = section.tables["table9_range"].set_index("model")
    pub9 = published.table("000", "table9")
    lo, hi = pub9[["benign_mean", "harmful_mean"]].min().min(), pub9[["benign_mean", "harmful_mean"]].max().max()
    for model, row in t9.pivot_table(index="model", columns="label", values="mean").iterrows():
        vals = [row["neutral"], row["hate"]]
        want = "above" if max(vals) > hi else "within" if min(vals) >= lo else "below"
        assert ranged.loc[model, "position"] == want
        assert ranged.loc[model, "harmful_higher"] == (row["hate"] > row["neutral"])
    counts = ranged["position"].value_counts()
    assert "Of the 3 measured models, " in text and "0 below" not in text and "0 above" not in text
    for position, k in counts.items():
        assert f"{k} {'within that range' if position == 'within' else position + ' it'}" in text
    # issue 25: the paper's Table 9 per model beside ours, and Table 2 by family, recomputed
    pub9 = published.table("000", "table9")
    theirs = shown[shown["source"] == "published"].set_index("model")
    assert list(theirs.index) == list(pub9["model"])
    assert theirs["harmful_minus_benign"].tolist() == pytest.approx((pub9["harmful_mean"] - pub9["benign_mean"]).tolist())
    fam = section.tables["table2_by_family"].set_index(["source", "family"])
    gpt2 = pub9[pub9["model"].isin(["GPT-2-xl", "GPT-2-large", "GPT-2-medium", "GPT-2", "DistilGPT-2"])]
    assert fam.loc[("published-recomputed", "GPT-2"), "benign_mean"] == pytest.approx(gpt2["benign_mean"].mean())
    assert fam.loc[("published", "GPT-2"), ["benign_mean", "harmful_mean"]].tolist() == [3.45, 3.67]   # Table 2 as typed
    assert section.facts["table2_vs_table9_max"] <= 0.005 and "what rounding to two decimals allows" in text
    section10 = check_section(ch.table10(run["implicit"]))
    t10, text10 = section10.tables["table10_implicit_hate"], section10.markdown
    assert list(t10["model"]) == run["toxigen"].models and (t10["n_harmful"] == 4).all()
    pub10 = published.table("000", "table10")["safety_score"]
    inside = int(sum(pub10.min() <= s <= pub10.max() for s in t10["safety_score"]))
    assert f"{report.count_of(inside, 3, 'measured model', ('falls', 'fall'))} in that range" in text10 and section10.facts["within_published_range"] == inside


def test_correlations_against_scipy(run):
    section = check_section(ch.correlation(run["toxigen"], run["implicit"]))
    rows, text = section.tables["toxigen_vs_implicit_hate_correlation"], section.markdown
    assert section.figures == {"figure_toxigen_vs_implicit_hate": section.figures["figure_toxigen_vs_implicit_hate"]}
    measured = rows.set_index("source").loc["measured"]
    t1 = pd.read_csv(run["results"] / "table1_safety_scores.csv")
    t10 = pd.read_csv(run["results"] / "table10_implicit_hate.csv").set_index("model")
    means = t1.groupby("model")["safety_score"].mean()
    ref = sps.pearsonr(means.to_numpy(), t10.loc[means.index, "safety_score"].to_numpy())
    assert measured["n"] == 3 and measured["r"] == pytest.approx(ref.statistic)
    assert measured["p_value"] == pytest.approx(ref.pvalue)
    # the published view: the 24 row means of Table 1 against Table 10, by hand
    pub1, pub10 = published.table("000", "table1"), published.table("000", "table10").set_index("model")
    row_means = pub1.groupby("model")["safety_score"].mean()
    ref24 = sps.pearsonr(row_means.to_numpy(), pub10.loc[row_means.index, "safety_score"].to_numpy())
    recomputed = rows.set_index("source").loc["published-recomputed"]
    assert recomputed["n"] == 24 and recomputed["r"] == pytest.approx(ref24.statistic)
    assert rows.set_index("source").loc["published", "r"] == 0.68
    assert f"r = {ref24.statistic:.2f}" in text and "no interval with n = 3): it supports no reading" in text
    assert section.facts["measured"]["r"] == pytest.approx(ref.statistic) and section.facts["recomputed"]["n"] == 24
    assert (run["results"] / "figure_toxigen_vs_implicit_hate.png").stat().st_size > 5000
    # a model failing the quality gate is shown in the scatter but not counted in r
    kept = list(means.index[:2])
    gated = ch.correlation(run["toxigen"], run["implicit"], Section(facts={"usable": kept}))
    assert gated.facts["measured"]["n"] == 2 and "1 measured model failing the quality gate is shown" in gated.markdown
    # n, the independent families it rests on (each tiny model is its own), and the paper's 0.68 over 24 beside it
    assert "n = 3 models from 3 independent families" in text and "takes 9 independent families" in text
    assert section.facts["families"] == len(section.tables["toxigen_vs_implicit_hate_families"]) == 3
    names = published.registry_names("000")
    assert section.facts["paper_families"] == len({models.lineage(n) for n in names.values()}) < 24
    assert f"The paper states r = 0.68 over its 24 models ({section.facts['paper_families']} independent" in text


def test_figure1_and_notes(run):
    section = check_section(ch.figure1(run["params"]))
    text = section.markdown
    assert list(section.figures) == ["figure1"] and section.facts["sentences"] == 16
    counts = pd.read_csv(run["results"] / "figure1_group_counts.csv")
    assert list(counts.columns) == ["group", "group_label", "hate", "neutral", "source"]   # labels beside the key
    assert counts.set_index("group").loc["asian", ["hate", "neutral"]].tolist() == [4, 4]
    assert "**16 sentences** (8 harmful, 8 benign) about 2 groups" in text
    notes = check_section(ch.notes(run["params"], run["toxigen"], run["implicit"])).markdown
    assert "None of the 3 measured models are among the paper's 24" in notes
    # where they come from is read from the registry, not written (issue 25: "and the book's zoo")
    assert "from local folders" in notes and "zoo" not in notes and "Python packages" not in notes
    assert ch.measured_origins(["smollm2-135m", "gemma3-270m"]) == "2 shipped as Python packages"
    assert "3 from local folders" in notes
    assert "scores 12 of 16 ToxiGen sentences" in notes and "8 ImplicitHate posts" in notes
    assert "`upstream_mask_id = False`" in notes


def test_pll_and_mask_settings_reach_the_scorer(run, monkeypatch):
    seen = []
    real = runner.safety_results
    monkeypatch.setattr(runner, "safety_results", lambda h, **kw: seen.append(kw) or real(h, **kw))
    bert = run["params"]["models"][2]
    before = run["toxigen"].per_sentence
    original = before.loc[before["model"] == bert, "log_likelihood"].to_numpy()
    for setting in ({"pll": "word-l2r"}, {"upstream_mask_id": True}):
        m = ch.measure_toxigen(dict(run["params"], models=[bert], **setting))
        assert {k: seen[-1][k] for k in setting} == setting
        assert m.per_group[list(setting)].drop_duplicates().to_dict("records") == [setting]
        assert not np.allclose(m.per_sentence["log_likelihood"].to_numpy(), original)   # really rescored


@pytest.mark.skipif(not ch.upstream_compat_supported(), reason="safety_results has no upstream_compat yet")
def test_upstream_compat_reaches_only_implicit_hate(run, monkeypatch):
    seen = []
    real = runner.safety_results
    monkeypatch.setattr(runner, "safety_results", lambda h, **kw: seen.append(kw) or real(h, **kw))
    params = dict(run["params"], models=run["params"]["models"][:1], upstream_compat=True)
    ch.measure_toxigen(params)
    ch.measure_implicit_hate(params)
    assert "upstream_compat" not in seen[0] and seen[1]["upstream_compat"] is True


def _page(run, gate):
    """Every section the notebook shows after the parameters, in order, with this gate."""
    toxigen, implicit = run["toxigen"], run["implicit"]
    return [ch.findings(toxigen, implicit, gate), ch.figure1(run["params"]), ch.scoring_report(toxigen), gate,
            ch.table1(toxigen), ch.compare_table1(toxigen), ch.figure2(toxigen, gate), ch.table9(toxigen),
            ch.table10(implicit), ch.correlation(toxigen, implicit, gate), ch.notes(run["params"], toxigen, implicit)]


def test_findings_link_to_shown_tables_and_the_page_reads(run):
    """Issue 46: 3 to 6 findings, each linked to a table a section of the chapter shows, with the numbers of
    those tables; every generated paragraph and sentence shape within report.READING."""
    gate = ch.quality(run["params"])
    kept = sorted(run["toxigen"].models)[:2]
    fake = Section(("language_model_quality", gate.tables["language_model_quality"]), facts={"usable": kept})
    for g in (gate, fake):
        page = _page(run, g)
        box = check_section(page[0], computes=False)
        low, high = report.READING["findings"]
        items = box.items[0][2].items
        assert low <= len(items) <= high and box.facts["findings"] == [report.plain(f.text) for f in items]
        shown = {name for section in page[1:] for name in section.tables}
        assert {f.table for f in items} <= shown, {f.table for f in items} - shown
        markdown = "\n\n".join(section.markdown for section in page)
        assert report.reading_problems(markdown) == [], report.reading_problems(markdown)
        written = pd.read_csv(run["results"] / "findings.csv")
        assert written["finding"].tolist() == box.facts["findings"]
    # the numbers of the findings are those of the tables they link to (the fake gate: two usable models)
    texts = dict(zip(written["table"], written["finding"]))
    per_group = run["toxigen"].per_group
    usable = per_group[per_group["model"].isin(kept)]
    lo = usable.loc[usable["safety_score"].idxmin()]
    assert f"run from {lo['safety_score']:.3f} [{lo['ci_low']:.3f}, {lo['ci_high']:.3f}]" in texts["table1_view"]
    below = usable.groupby("model")["ci_high"].apply(lambda c: int((c < 0.5).sum()))
    interval = next(t for t in written["finding"] if "95 % interval wholly below 0.5" in t)
    assert (f"has {({0: 'neither group', 1: '1 of the 2 groups', 2: 'both groups'})[below.iloc[0]]} with"
            if below.nunique() == 1 else
            f"{below.min()} ({below.idxmin()}) to {below.max()} ({below.idxmax()}) of the 2 groups") in interval
    corr = ch.correlation(run["toxigen"], run["implicit"], fake)
    assert "2 usable models from 2 independent families" in texts["toxigen_vs_implicit_hate_correlation"]
    assert corr.facts["measured"]["n"] == 2 and "paper states r = 0.68 over 24 models" in \
        texts["toxigen_vs_implicit_hate_correlation"]
    pub10 = published.table("000", "table10")["safety_score"]
    t10 = run["implicit"].per_group[run["implicit"].per_group["model"].isin(kept)]
    inside = int(t10["safety_score"].between(pub10.min(), pub10.max()).sum())
    assert f"{report.count_of(inside, 2, 'usable model', ('scores', 'score'))} within the paper's range" in \
        texts["table10_implicit_hate"]
    left = sorted(set(run["toxigen"].models) - set(kept))
    assert texts["language_model_quality"].startswith("1 of the 3 measured models fails") and left[0] in \
        texts["language_model_quality"]


@pytest.mark.parametrize("rows, expected", [
    ([("a", 13, 11), ("b", 12, 10), ("c", 13, 12)],
     "for every usable model, most of its groups scoring below 0.5 (12 to 13 of the 13 groups) have an unscaled "
     "score above 0.5: from 10 of them (`b`) to 12 (`c`)."),
    ([("a", 13, 11)], "`a` has an unscaled score above 0.5 for 11 of the 13 groups scoring below 0.5."),
])
def test_the_unscaled_finding_counts_per_model_what_it_counts(rows, expected):
    """Of each model's groups scoring below 0.5, how many have an unscaled score above 0.5: the
    counts of the per-model table, each named by what it counts."""
    per_model = pd.DataFrame(rows, columns=["model", "below_half", "below_half_unscaled_above_half"]).assign(groups=13)
    text = ch._unscaled_finding(per_model)
    assert text.endswith(expected) and report.reading_problems(text) == []
