"""Chapter 06 module (helpers.chapters.ch06_intrinsic_extrinsic) on tiny models: parameters, the
one-pass measurement against direct metric calls, the variances and correlations against
numpy / scipy, the ablations, and a warm rerun that loads no model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import models
from helpers.chapters import ch06_intrinsic_extrinsic as ch
from helpers.chapters.common import Section
from helpers.measures import classifier_bias, embedding_tests
from helpers.errors import InputError
from helpers.metrics import logprob_bias
from helpers.models import text_classifiers

from chapter_contract import check_section

SMALL = dict(contexts_per_word=2, ceat_samples=20, stereoset_clusters_per_target=1, prompts_per_group=2,
             max_new_tokens=4, classifier_train=40, toxd_per_identity=6, stereotype_train=60,
             temperature_generations=2, noise_texts=12)


@pytest.mark.parametrize("bad, message", [({"contexts_per_word": 0}, "contexts_per_word"),
                                          ({"ddof": 2}, "ddof"), ({"prompts_per_group": "some"}, "prompts_per_group"),
                                          ({"ceat_samples": 1}, "ceat_samples"), ({"noise_texts": True}, "noise_texts"),
                                          ({"classifier": "svm"}, "classifier"),
                                          ({"classifier_train": "most"}, "classifier_train"),
                                          ({"classifier_margin": 0.5}, "classifier_margin = 0.5: a number"),
                                          ({"classifier_margin": "wide"}, "classifier_margin = 'wide'"),
                                          ({"bold_exclude": "gpt2"}, "bold_exclude = 'gpt2': a list of model names"),
                                          ({"bold_exclude": ["no-such-model"]},
                                           "bold_exclude: no-such-model not among the chapter's models"),
                                          ({"toxd_fine_tuning": {"epochs": 0, "lr": 2e-5}},
                                           r"toxd_fine_tuning = .*: a dict of epochs, lr \(whole numbers"),
                                          ({"hatex_fine_tuning": {"epochs": 2}}, "hatex_fine_tuning = .*: a dict of"),
                                          ({"stereotype_fine_tuning": {"epochs": 1, "lr": 1.5, "batch_size": 8}},
                                           "stereotype_fine_tuning = .*: a dict of epochs, lr, batch_size"),
                                          ({"stereotype_fine_tuning": {"epochs": 1, "lr": 1e-4, "batch_size": True}},
                                           "stereotype_fine_tuning = .*: a dict of")])
def test_bad_parameters_are_one_line(private_dirs, bad, message):
    with pytest.raises(InputError, match=message) as err:
        ch.start(dict(ch.DEFAULTS) | SMALL | bad)
    assert "\n" not in str(err.value)


def _with_gates(extrinsic: Section, gates: pd.DataFrame) -> Section:
    """``extrinsic`` (scores and generations unchanged) with other classifier gates."""
    return Section(data=(*extrinsic.data[:2], gates))


def _all_pass(extrinsic: Section) -> Section:
    """Every classifier passing the gate: the correlation arithmetic alone (the tiny models' probes
    fail it; the gate's own tests below use the real gates)."""
    return _with_gates(extrinsic, extrinsic.data[2].assign(usable=True))


def _usable_gate(names, encoders=()) -> Section:
    enc = [m in encoders for m in names]
    table = pd.DataFrame({"model": names, "objective": ["encoder" if e else "causal" for e in enc],
                          "usable": [np.nan if e else True for e in enc], "heldout_perplexity": 10.0,
                          "unigram_perplexity": 100.0, "ratio": 10.0, "min_ratio": 2.0})
    return Section(data=table)


def _encoder_copy(path, out):
    """The encoder of a tiny BERT saved without its LM head (objective 'encoder', like MiniLM-L6)."""
    from transformers import AutoTokenizer, BertModel

    BertModel.from_pretrained(path).save_pretrained(out)
    AutoTokenizer.from_pretrained(path).save_pretrained(out)
    return out


def _perturbed_copy(path, out, seed: int):
    """A copy of a tiny causal LM with noise on its weights: another model of the same shape."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(path)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(path).save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def chapter(tiny_gpt2, tiny_gpt2_bos, tiny_roberta, tiny_bert, tmp_path_factory, data_dir_with_hatexplain):
    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("ch06")
    tiny_gpt2_ctx16 = _perturbed_copy(tiny_gpt2, tmp / "tiny_gpt2_noisy", 1)
    mp.setenv("HARMS_DATA_DIR", str(data_dir_with_hatexplain))        # HateXplain: synthetic posts
    mp.setenv("HF_HUB_OFFLINE", "1")                                   # ToxD: the substitute, never a download
    for var, sub in (("HARMS_CACHE_DIR", "cache"), ("HARMS_RESULTS_DIR", "results"), ("HARMS_ZOO_DIR", "zoo")):
        mp.setenv(var, str(tmp / sub))
    encoder = str(_encoder_copy(tiny_bert, tmp / "tiny_encoder"))
    names = [str(tiny_gpt2), str(tiny_gpt2_bos), str(tiny_gpt2_ctx16), str(tiny_roberta), encoder]
    params, _ = ch.start(dict(ch.DEFAULTS) | SMALL | {"models": names, "stereotype_encoder": str(tiny_bert)})
    gate = _usable_gate(names, encoders=[encoder])
    measured = ch.measure(params, gate)
    intrinsic = check_section(ch.intrinsic_section(params, measured))
    extrinsic = check_section(ch.extrinsic_section(params, measured))
    yield params, gate, measured, intrinsic, extrinsic
    mp.undo()


def test_every_model_gets_every_intrinsic_metric_for_the_papers_groups(chapter):
    params, gate, measured, intrinsic, _ = chapter
    got = measured.intrinsic
    assert set(got["model"]) == set(params["models"]) and set(got["metric"]) == {"CEAT", "CEATtox", "ILPS", "StereoSet"}
    encoder = params["models"][4]                             # no LM head: its vectors' metrics only
    assert set(got.loc[got.model == encoder, "metric"]) == {"CEAT", "CEATtox"}
    assert set(measured.classifier.loc[measured.classifier.model == encoder, "metric"]) == {"ToxD", "HateX"}
    assert ch.correlated_models(gate.data) == params["models"]
    ilps = got[(got.metric == "ILPS") & (got.model == params["models"][0])]
    assert ilps.groupby("domain").size().to_dict() == {d: len(p) for d, p in embedding_tests.ILPS_PHRASES.items()}
    ss = got[(got.metric == "StereoSet") & (got.model == params["models"][0])]
    assert ss.groupby("domain").size().to_dict() == {"gender": 10, "race": 36, "religion": 3}     # Table 4's targets
    assert ss["score"].isin([0.0, 100.0]).all()                                                   # one cluster each


def test_ilps_rows_equal_a_direct_call(chapter, loaded_factory):
    params, *_ = chapter
    got = chapter[2].intrinsic
    lm = loaded_factory(params["models"][0], "causal")
    unpleasant = embedding_tests.ceat_attributes()["CEAT"][1]
    direct = logprob_bias.ilps_groups(logprob_bias.ilps(lm, embedding_tests.ILPS_PHRASES["race"], unpleasant, cache=False,
                                                         progress=False), {"u": unpleasant})
    ours = got[(got.metric == "ILPS") & (got.domain == "race") & (got.model == params["models"][0])]
    np.testing.assert_allclose(ours.set_index("group").loc[direct["group"], "score"], direct["ilps"], atol=1e-6)


def test_bold_scores_are_group_means_of_vader_labels_for_causal_models_only(chapter):
    params, _, measured, _, extrinsic = chapter
    scores, gens, _ = extrinsic.data
    assert set(scores["model"]) == set(params["models"])                        # tiny_roberta by Gibbs sampling
    assert set(gens.loc[gens.model == params["models"][3], "sampler"]) == {"gibbs"}
    assert gens.groupby(["model", "group"]).size().eq(params["prompts_per_group"]).all()
    vader = text_classifiers.vader_sentiment(0.5).label_scores(gens["continuation"].tolist())["label"]
    value = vader.map({"positive": 1.0, "neutral": 0.0, "negative": -1.0})
    empty = gens["continuation"].str.strip() == ""
    want = value[~empty].groupby([gens["model"][~empty], gens["group"][~empty]]).mean()
    sent = scores[scores.metric == "B-Sent"].set_index(["model", "group"])["score"]
    np.testing.assert_allclose(sent.loc[want.index], want.to_numpy())


def test_toxd_substitute_is_the_probes_fpr_per_madlibs_identity(chapter):
    params, _, measured, _, extrinsic = chapter
    train, test = classifier_bias.classifier_data(params)
    n_sets = len(ch.TOXD_SETS)                                      # classifier_train texts of each English set
    assert len(train) == pytest.approx(n_sets * params["classifier_train"], abs=2 * n_sets)
    assert set(train["label"]) == {"toxic", "non-toxic"}
    assert test.groupby("identity").size().eq(params["toxd_per_identity"]).all()
    toxd = measured.classifier[(measured.classifier.model == params["models"][0])
                               & (measured.classifier.metric == "ToxD")].set_index("group")
    want_groups = {g for dom in classifier_bias.TOXD_IDENTITIES.values() for g in dom}
    assert set(toxd.index) == want_groups and toxd["score"].between(0, 1).all()
    assert "HF_HUB_OFFLINE" in test.attrs["substitute_because"]
    negatives = test[test.label == "non-toxic"].groupby("identity").size()
    assert toxd.loc["woman", "n"] == negatives["female"] and toxd.loc["Muslim", "n"] == negatives["muslim"]
    scores = extrinsic.data[0]
    assert set(scores.loc[scores.metric == "ToxD", "model"]) == set(params["models"])


def test_variances_and_correlations_follow_numpy_and_scipy(chapter):
    params, gate, measured, intrinsic, extrinsic = chapter
    extrinsic = _all_pass(extrinsic)
    corr = check_section(ch.correlation_section(params, gate, intrinsic, extrinsic))
    variances, table = corr.data
    scores = pd.concat([intrinsic.data, extrinsic.data[0]])
    one = scores[(scores.metric == "ILPS") & (scores.domain == "race") & (scores.model == params["models"][1])]
    v = variances[(variances.metric == "ILPS") & (variances.domain == "race") & (variances.model == params["models"][1])]
    assert v["variance"].iloc[0] == pytest.approx(np.var(one["score"].to_numpy()))
    row = table[(table.intrinsic == "ILPS") & (table.extrinsic == "B-Tox") & (table.domain == "race")
                & (table.method == "pearson")].iloc[0]
    wide = variances[variances.domain == "race"].pivot(index="model", columns="metric", values="variance").dropna(
        subset=["B-Tox"])
    assert row["n"] == 4 == len(wide)
    toxd = table[(table.intrinsic == "CEAT") & (table.extrinsic == "ToxD") & (table.method == "pearson")]
    assert (toxd["n"] == 5).all()                                # the encoder too
    assert np.isfinite(row["r"]) and row["r"] == pytest.approx(stats.pearsonr(wide["ILPS"], wide["B-Tox"]).statistic)
    shown = pd.concat(corr.tables.values())
    assert "paper_r" in shown.columns and shown["paper_r"].notna().any()
    # the paper's n per correlation, from its model list (issue 25: "over 19 models" for BOLD's 12)
    paper_n = corr.tables["correlations_vs_paper"].dropna(subset=["paper_r"]).set_index("extrinsic")["paper_n"]
    assert (paper_n[paper_n.index.str.startswith("B-")] == 12).all() and (paper_n.loc[["ToxD", "HateX"]] == 19).all()
    assert "over 12 or 19 models" in corr.markdown and "over 19 models (`paper_r`)" not in corr.markdown
    from statsmodels.stats.multitest import multipletests

    pearson = corr.tables["correlations_vs_paper"]
    tested = pearson[pearson["p_value"].notna()]
    reject, adjusted, _, _ = multipletests(tested["p_value"], method="holm")
    np.testing.assert_allclose(tested["p_adjusted"], adjusted)
    verdict = corr.markdown
    assert corr.facts["tested"] == len(tested) and corr.facts["p_below_05"] == int((tested["p_value"] < 0.05).sum())
    assert [(f["intrinsic"], f["extrinsic"], f["domain"]) for f in corr.facts["survive_holm"]] == \
        list(zip(tested["intrinsic"][reject], tested["extrinsic"][reject], tested["domain"][reject]))
    verb = "survives" if reject.sum() == 1 else "survive"
    assert f"{int(reject.sum())} {verb} Holm's correction for {len(tested)} tests" in verdict
    for r in tested[reject].itertuples():
        assert f"{r.intrinsic} with {r.extrinsic} ({r.domain}): r = {r.r:.2f}" in verdict


def test_ablations_and_a_warm_rerun_that_loads_nothing(chapter, monkeypatch):
    params, gate, measured, _, extrinsic = chapter
    temp = check_section(ch.temperature_section(params, measured))
    assert temp.data["temperature"].tolist() == [0.5, 1.0]
    assert (temp.data["n"] == len(ch.TEMPERATURE_PROMPTS) * params["temperature_generations"]).all()
    assert set(measured.temperature["model"]) == {params["models"][0]}
    noisy = check_section(ch.noise_section(params, extrinsic))
    sentiment = noisy.data[noisy.data.classifier == "sentiment"]
    assert sentiment["repeats"].tolist() == [1] + [ch.NOISE_REPEATS] * 8
    assert noisy.data["paper_percent"].notna().all()

    def no_load(*a, **k):
        raise AssertionError("a warm rerun loaded a model")

    monkeypatch.setattr(models.LazyModel, "load", no_load)
    again = ch.measure(params, gate)
    pd.testing.assert_frame_equal(again.intrinsic, measured.intrinsic)
    pd.testing.assert_frame_equal(again.generations, measured.generations)


def test_group_alignment_restricts_stereoset_to_the_four_shared_race_groups(chapter):
    params, gate, measured, intrinsic, extrinsic = chapter
    extrinsic = _all_pass(extrinsic)
    got = check_section(ch.alignment_section(params, gate, intrinsic, extrinsic)).data
    assert set(got["intrinsic"]) == {"StereoSet", "StereoSet (aligned)"} and (got["n"] == 4).all()
    ss = intrinsic.data[(intrinsic.data.metric == "StereoSet") & (intrinsic.data.domain == "race")]
    four = ss[ss.group.isin(ch.ALIGNED_RACE)].groupby("model")["score"].apply(lambda v: np.var(v.to_numpy()))
    tox = extrinsic.data[0]
    tox = tox[(tox.metric == "B-Tox") & (tox.domain == "race")].groupby("model")["score"].apply(
        lambda v: np.var(v.to_numpy()))
    row = got[(got.intrinsic == "StereoSet (aligned)") & (got.extrinsic == "B-Tox")].iloc[0]
    if np.ptp(four.to_numpy()) > 0:
        assert row["r"] == pytest.approx(stats.pearsonr(four.loc[tox.index], tox).statistic)


def test_polar_religion_prompts_are_dropped_before_rescoring(chapter):
    params, gate, measured, intrinsic, extrinsic = chapter
    extrinsic = _all_pass(extrinsic)
    got = check_section(ch.polarity_section(params, gate, intrinsic, extrinsic))
    table = got.data
    assert set(table["setting"]) <= {"all prompts", "polar prompts dropped"} and "all prompts" in set(table["setting"])
    full = table[table.setting == "all prompts"]
    ref = ch.correlation_section(params, gate, intrinsic, extrinsic).data[1]
    ref = ref[(ref.domain == "religion") & (ref.method == "pearson") & ref.extrinsic.isin(["B-Sent", "B-Tox"])]
    merged = full.merge(ref, on=["domain", "intrinsic", "extrinsic"], suffixes=("", "_ref"))
    np.testing.assert_allclose(merged["r"], merged["r_ref"], equal_nan=True)     # unfiltered = the main table


def test_b_stereo_is_the_stereotype_classifiers_mean_probability(chapter):
    from helpers.training.classifier import predict_proba

    params, _, measured, _, extrinsic = chapter
    train, valid = ch.stereotype_data(params)
    assert set(train["label"]) == {"stereotype", "non-stereotype"} and not set(train["text"]) & set(valid["text"])
    assert len(train) + len(valid) == pytest.approx(params["stereotype_train"], abs=2)
    every = ch.stereotype_data(params | {"stereotype_train": "all"})      # the paper: the full data
    assert len(every[0]) + len(every[1]) > 10 * params["stereotype_train"]
    assert not set(every[0]["text"]) & set(every[1]["text"])
    scores, gens, _ = extrinsic.data
    clf, metrics = ch.stereotype_classifier(params)
    assert {"accuracy", "f1_weighted"} <= set(metrics["metric"]) and clf.classes_ == ["non-stereotype", "stereotype"]
    one = gens[gens.model == params["models"][0]]
    p = predict_proba(clf.folder, one["continuation"].where(one["continuation"].str.strip() != "", "."),
                      max_length=64)[:, 1]                       # the folder's own predictions, label sorted second
    want = pd.Series(p, index=one.index).where(one["continuation"].str.strip() != "").groupby(one["group"]).mean()
    got = scores[(scores.metric == "B-Stereo") & (scores.model == params["models"][0])].set_index("group")["score"]
    np.testing.assert_allclose(got.loc[want.index], want.to_numpy(), rtol=1e-6)


def test_source_alignment_generates_from_stereoset_contexts_per_race_target(chapter):
    params, gate, measured, intrinsic, extrinsic = chapter
    extrinsic = _all_pass(extrinsic)
    src = measured.source_generations
    assert set(src["domain"]) == {"race"} and src.groupby(["model", "group"]).size().le(params["prompts_per_group"]).all()
    got = check_section(ch.source_section(params, gate, intrinsic, extrinsic, measured)).data
    assert set(got["extrinsic"]) == {"B-Stereo", "B-Stereo (StereoSet contexts)"} and (got["n"] == 4).all()


GATE_COLUMNS = ["metric", "value", "ci_low", "ci_high", "baseline", "margin", "passes", "n", "n_positive",
                "majority_share"]


def _same_gate(params, got: pd.DataFrame, positive, p) -> None:
    """``got`` (the chapter's gate rows of one classifier) is classifier_gate on ``p``, called here."""
    from helpers.metrics import classifier_quality

    want = classifier_quality.classifier_gate(np.asarray(positive).astype(int), p, threshold=0.5,
                                              margin=params["classifier_margin"], seed=params["seed"])
    pd.testing.assert_frame_equal(got[GATE_COLUMNS].reset_index(drop=True), want[GATE_COLUMNS], check_dtype=False)
    assert got["usable"].eq(want.attrs["usable"]).all()


def test_every_classifier_is_gated_on_its_own_held_out_predictions(chapter, loaded_factory):
    """Issue 25: ToxD's and HateX's classifier of each model, B-Stereo's and B-Tox's each get the
    classifier gate on their held-out labelled texts; each gate equals classifier_gate on the
    classifier's predictions recomputed here (uncached), and the table shown puts the macro F1 and
    its interval beside the paper's F1 (appendices B-C)."""
    from sklearn.metrics import f1_score

    from helpers import published

    params, _, _, _, extrinsic = chapter
    gates = extrinsic.data[2]
    per = gates.drop_duplicates(["extrinsic", "model"])
    for metric in ("ToxD", "HateX"):
        assert sorted(per.loc[per.extrinsic == metric, "model"]) == sorted(params["models"])
    assert per.loc[per.extrinsic.isin(["B-Stereo", "B-Tox"]), "model"].tolist() == [classifier_bias.EVERY_MODEL] * 2
    model = params["models"][0]
    lm = loaded_factory(model, "causal")
    train, test = classifier_bias.classifier_data(params)
    toxd = classifier_bias._toxic_probabilities(lm, train, test, "probe", params["seed"])
    _same_gate(params, gates[(gates.extrinsic == "ToxD") & (gates.model == model)], test["label"] == "toxic", toxd)
    hx_train, hx_test = ch.hatex_data(params)
    p = classifier_bias._toxic_probabilities(lm, hx_train, hx_test, "probe", params["seed"])
    _same_gate(params, gates[(gates.extrinsic == "HateX") & (gates.model == model)], hx_test["label"] == "toxic", p)
    clf, _ = ch.stereotype_classifier(params)
    _, valid = ch.stereotype_data(params)
    p = clf.predict_proba(valid["text"].tolist())[:, clf.classes_.index("stereotype")]
    _same_gate(params, gates[gates.extrinsic == "B-Stereo"], valid["label"] == "stereotype", p)
    tox = text_classifiers.classifier("roberta-toxigen", verbose=False)
    p = tox.predict_proba(test["text"].tolist())[:, tox.classes_.index("toxic")]
    _same_gate(params, gates[gates.extrinsic == "B-Tox"], test["label"] == "toxic", p)

    shown = extrinsic.tables["classifier_gate_vs_paper"]
    assert len(shown) == len(per)
    row = shown[(shown.extrinsic == "ToxD") & (shown.model == model)].iloc[0]
    assert row["macro_f1"] == pytest.approx(f1_score(test["label"] == "toxic", toxd >= 0.5, average="macro"))
    assert row["macro_f1_low"] <= row["macro_f1"] <= row["macro_f1_high"]
    paper = published.table("001", "classifiers")
    f1 = paper[paper["parameter"].str.startswith("F1")].set_index("classifier")["value"]
    want = {"ToxD": f1["toxicity detection"], "HateX": f1["hate speech"], "B-Stereo": f1["stereotype"]}
    for r in shown.itertuples():
        assert r.paper_f1 == want[r.extrinsic] if r.extrinsic in want else np.isnan(r.paper_f1)
    assert sorted(want.values()) == [0.79, 0.80, 0.95]                   # seed 001 appendices B-C
    assert "without naming its average" in extrinsic.markdown
    assert "Not gated: B-Sent (VADER" in extrinsic.markdown           # no labelled sentiment data here
    usable = per.set_index(["extrinsic", "model"])["usable"]
    for r in extrinsic.data[0].drop_duplicates(["metric", "model"]).itertuples():
        key = (r.metric, r.model if r.metric in ("ToxD", "HateX") else classifier_bias.EVERY_MODEL)
        assert (r.classifier_usable == usable[key]) if key in usable.index else pd.isna(r.classifier_usable)


def test_a_majority_class_classifier_is_flagged_and_left_out_of_the_correlations(chapter):
    """Issue 25: a model whose ToxD classifier predicts the majority class for every text fails the
    gate; its ToxD variance becomes NaN with the reason, the correlation runs over the other models
    (as scipy computes it on their variances), and a classifier that separates the classes is kept."""
    params, gate, _, intrinsic, extrinsic = chapter
    _, test = classifier_bias.classifier_data(params)
    y = (test["label"] == "toxic").to_numpy()
    majority = np.full(len(y), 0.9 if y.mean() >= 0.5 else 0.1)
    bad, good = params["models"][0], params["models"][1]
    forced = classifier_bias.gate_classifier(params, y, majority, extrinsic="ToxD", model=bad, classifier="majority", data="madlibs")
    kept = classifier_bias.gate_classifier(params, y, np.where(y, 0.8, 0.2), extrinsic="ToxD", model=good, classifier="perfect",
                              data="madlibs")
    assert not forced["usable"].any() and kept["usable"].all()
    gates = extrinsic.data[2].assign(usable=True)
    gates = pd.concat([gates[~((gates.extrinsic == "ToxD") & gates.model.isin([bad, good]))], forced, kept])
    corr = check_section(ch.correlation_section(params, gate, intrinsic, _with_gates(extrinsic, gates)))
    variances, table = corr.data
    toxd = variances[variances.metric == "ToxD"]
    assert toxd.loc[toxd.model == bad, "variance"].isna().all()
    assert toxd.loc[toxd.model == bad, "excluded"].str.contains("majority.*fails the classifier gate").all()
    assert toxd.loc[toxd.model != bad, "variance"].notna().all() and toxd.loc[toxd.model != bad, "excluded"].isna().all()
    scores = pd.concat([intrinsic.data, extrinsic.data[0]])
    race = scores[scores.domain == "race"].groupby(["model", "metric"])["score"].apply(
        lambda v: np.var(v.dropna().to_numpy()))                        # group_variance: scored groups only
    race = race.unstack().drop(index=bad).dropna(subset=["CEAT", "ToxD"])
    row = table[(table.intrinsic == "CEAT") & (table.extrinsic == "ToxD") & (table.domain == "race")
                & (table.method == "pearson")].iloc[0]
    assert row["n"] == len(params["models"]) - 1 == len(race)
    assert row["r"] == pytest.approx(stats.pearsonr(race["CEAT"], race["ToxD"]).statistic)
    assert corr.facts["excluded_by_classifier_gate"] == [f"ToxD of {bad}"]
    left = corr.tables["left_out_by_classifier_gate"].set_index("metric")
    assert left.loc["ToxD", "models"] == bad and "majority" in left.loc["ToxD", "reason"]
    assert "Left out of these correlations and of the ablations below: 1 (model, metric) score " in corr.markdown


def test_a_failing_shared_classifier_leaves_its_metric_out_for_every_model(chapter):
    """B-Stereo's and B-Tox's classifiers serve every model: when they fail, no model's B-Stereo or
    B-Tox enters a correlation, the source ablation has nothing to correlate, and the polarity
    ablation says its toxicity filter rests on the failing classifier."""
    params, gate, measured, intrinsic, extrinsic = chapter
    gates = extrinsic.data[2].assign(usable=True)
    gates.loc[gates.extrinsic.isin(["B-Stereo", "B-Tox"]), "usable"] = False
    failing = _with_gates(extrinsic, gates)
    variances, table = ch.correlation_section(params, gate, intrinsic, failing).data
    shared = variances[variances.metric.isin(["B-Stereo", "B-Tox"])]
    assert len(shared) and shared["variance"].isna().all() and shared["excluded"].notna().all()
    assert {"B-Stereo", "B-Tox"}.isdisjoint(table["extrinsic"]) and "B-Sent" in set(table["extrinsic"])
    assert {"B-Stereo", "B-Tox"}.isdisjoint(ch.alignment_section(params, gate, intrinsic, failing).data["extrinsic"])
    source = check_section(ch.source_section(params, gate, intrinsic, failing, measured))
    assert not source.tables and "nothing to correlate" in source.markdown
    polar = check_section(ch.polarity_section(params, gate, intrinsic, failing))
    assert set(polar.data["extrinsic"]) == {"B-Sent"} and "toxicity half of the prompt filter" in polar.markdown


def test_hatex_is_the_fpr_of_non_toxic_test_posts_per_target_community(chapter, loaded_factory):
    params, _, measured, _, extrinsic = chapter
    train, test = ch.hatex_data(params)
    assert set(train["label"]) == {"toxic", "non-toxic"} and len(test) > 0
    model = params["models"][0]
    got = measured.classifier[(measured.classifier.model == model) & (measured.classifier.metric == "HateX")]
    p = classifier_bias._toxic_probabilities(loaded_factory(model, "causal"), train, test, "probe", params["seed"])
    named = test["identity"].str.split(";")
    want = {}
    for dom, groups in ch.HATEX_IDENTITIES.items():
        for group, community in groups.items():
            negative = ((test["label"] == "non-toxic") & named.map(lambda ids: community in ids)).to_numpy()
            if negative.any():
                want[group] = (float(np.mean(p[negative] >= 0.5)), int(negative.sum()))
    have = got.set_index("group")
    unscored = have[have["n"] == 0]                    # the group's test posts are all toxic: no FPR
    assert unscored["score"].isna().all()
    have = have[have["n"] > 0]
    assert len(want) >= 4 and set(have.index) == set(want)
    assert {g: int(have.loc[g, "n"]) for g in want} == {g: n for g, (_, n) in want.items()}
    np.testing.assert_allclose([have.loc[g, "score"] for g in want], [f for f, _ in want.values()])
    scores = extrinsic.data[0]
    assert set(scores.loc[scores.metric == "HateX", "model"]) == set(params["models"])


def test_hatex_without_its_posts_is_one_line_and_the_chapter_goes_on(chapter, tmp_path, monkeypatch):
    import requests

    from helpers import paths
    from helpers.errors import DataNotFoundError

    params, gate, *_ = chapter
    monkeypatch.setenv("HARMS_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.setattr(paths, "download_dir", lambda: tmp_path / "raw")

    def offline(*a, **k):
        raise requests.ConnectionError("no network")

    monkeypatch.setattr(requests, "get", offline)
    with pytest.raises(DataNotFoundError, match="cannot download 'hatexplain'.*offline"):
        ch.hatex_data(params)
    assert "\n" not in str(pytest.raises(DataNotFoundError, ch.hatex_data, params).value)


def test_fine_tuned_classifiers_give_the_fpr_of_their_own_predictions(tiny_gpt2, tiny_roberta, loaded_factory,
                                                                      private_dirs):
    from helpers.training import classifier

    params = dict(ch.DEFAULTS) | SMALL | {"classifier": "fine-tune"}
    train, test = classifier_bias.classifier_data(params)
    for path, objective in ((tiny_gpt2, "causal"), (tiny_roberta, "masked")):
        loaded = loaded_factory(path, objective)
        handle = type("Handle", (), {"name": loaded.name, "identity": loaded.identity, "load": lambda self: loaded})()
        got = classifier_bias.classifier_results(handle, params, train, test)[0].set_index("group")
        folder = classifier_bias.classifier_folder(loaded, train)
        assert folder.parent == private_dirs / "cache" / "toxicity-classifiers" and (folder / "manifest.json").is_file()
        assert classifier_bias.classifier_folder(loaded, train.head(10)) != folder        # HateX's data: another folder
        p = classifier.predict_proba(folder, test["text"].tolist(), max_length=64)[:, 1]
        for group, term in classifier_bias.TOXD_IDENTITIES["religion"].items():
            negative = ((test["identity"] == term) & (test["label"] == "non-toxic")).to_numpy()
            assert got.loc[group, "score"] == pytest.approx(np.mean(p[negative] >= 0.5))
        probe = classifier_bias.classifier_results(handle, params | {"classifier": "probe"}, train, test)[0]
        assert len(probe) == len(got)          # another cache entry, not the fine-tuned one's rows


def test_toxd_on_civil_comments_trains_on_its_train_split_and_tests_per_mentioned_identity(tmp_path, monkeypatch):
    """CivilComments' layout (the hub's Parquet files) in the data directory: ToxD uses it instead
    of the substitute; identities are found by whole words ("whitewash" is not "white")."""
    rng = np.random.default_rng(0)
    words = ["men", "women", "asians", "black", "latino", "white", "buddhists", "christian", "jews", "muslims",
             "whitewash", "blackboard"]

    def split(n, start):
        picks = rng.choice(words, n)
        return pd.DataFrame({"text": [f"the {w} people said {start + i}" for i, w in enumerate(picks)],
                             "toxicity": rng.random(n).astype("float32"), "severe_toxicity": 0.0})

    folder = tmp_path / "civil_comments" / "data"
    folder.mkdir(parents=True)
    train = pd.concat([split(150, 0), split(150, 150)], ignore_index=True)
    train.iloc[:150].to_parquet(folder / "train-00000-of-00002.parquet")
    train.iloc[150:].to_parquet(folder / "train-00001-of-00002.parquet")
    test = split(400, 300)
    test.to_parquet(folder / "test-00000-of-00001.parquet")
    monkeypatch.setenv("HARMS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")                           # read from the data directory only
    params = dict(ch.DEFAULTS) | SMALL | {"classifier_train": 100, "toxd_per_identity": 8}
    got_train, got_test = classifier_bias.classifier_data(params)
    assert "substitute_because" not in got_test.attrs
    assert len(got_train) == pytest.approx(100, abs=2) and set(got_train["text"]) <= set(train["text"])
    toxic = dict(zip(train["text"], train["toxicity"] >= 0.5))
    assert all((lab == "toxic") == toxic[t] for t, lab in zip(got_train["text"], got_train["label"]))
    spoken = dict(zip(test["text"], [t.split()[1] for t in test["text"]]))
    by_word = {w: ident for ident, ws in classifier_bias.TOXD_WORDS.items() for w in ws}
    for text, identity in zip(got_test["text"], got_test["identity"]):
        assert identity == by_word[spoken[text]]                    # whitewash / blackboard never picked
    available = pd.Series([by_word.get(w) for w in spoken.values()]).value_counts()
    counts = got_test["identity"].value_counts()
    assert all(counts[i] == min(8, available[i]) for i in available.index)


def test_the_verdict_counts_and_names_what_survives_holm():
    from helpers import stats as hstats

    rows = pd.DataFrame({"domain": ["gender", "race", "religion"], "intrinsic": ["ILPS", "CEAT", "CEAT"],
                         "extrinsic": ["ToxD", "B-Sent", "B-Tox"], "n": [10, 10, 10], "r": [0.95, 0.5, 0.1],
                         "p_value": [0.0001, 0.04, 0.2], "ci_low": [0.81, -0.2, -0.5], "ci_high": [0.99, 0.86, 0.6]})
    text = ch._verdict(hstats.adjust_p_values(rows, method="holm"))     # 0.04 x 2 = 0.08: not after Holm
    assert text.startswith("Of the 3 Pearson correlations with a p-value, 2 have p < 0.05 and 1 survives Holm's")
    assert "ILPS with ToxD (gender): r = 0.95 [0.81, 0.99], n = 10" in text and "B-Sent" not in text
    none = ch._verdict(hstats.adjust_p_values(rows.assign(p_value=[0.3, 0.5, np.nan]), method="holm"))
    assert none.startswith("Of the 2 Pearson correlations with a p-value, 0 have p < 0.05")
    assert "0 survive Holm's" in none and "no intrinsic disparity is shown" in none


# ----------------------------------------------------------------------------- issue 25: the paper's settings

def _paper_value(parameter: str):
    from helpers import published

    s = published.paper_settings()
    return s.loc[(s.chapter == ch.CHAPTER) & (s.parameter == parameter)].iloc[0]


def test_the_paper_profile_leaves_footnote_8s_models_out_of_bold():
    """Seed 001's footnote 8 excludes ALBERT, DistilRoBERTa and XLNet from the BOLD metrics: the
    paper profile's ``bold_exclude`` is exactly the models of its ``models`` whose published row
    (helpers/published/seed001/models.csv) has no BOLD metric, 19 - 12 = 7."""
    from helpers import book, published
    from helpers.errors import ModelUnavailableError

    table = published.table("001", "models")
    no_bold = {f"{r.family}-{r.variant}" if isinstance(r.variant, str) and r.variant else r.family
               for r in table[~table["bold_metrics"].astype(bool)].itertuples()}

    def paper_name(m):
        try:
            return models.spec(m).paper_name
        except ModelUnavailableError:                  # GPT-Neo: not in the registry, not excluded either
            return None

    nb = next(n for n in book.notebooks() if n.stem == ch.CHAPTER)
    resolved = book.parameters_for(nb, "paper")
    want = [m for m in resolved["models"] if paper_name(m) in no_bold]
    assert resolved["bold_exclude"] == want and len(want) == len(table) - int(table["bold_metrics"].sum()) == 7
    assert "footnote 8" in _paper_value("bold_exclude")["where"]
    ch.start(dict(ch.DEFAULTS) | {"models": resolved["models"], "bold_exclude": want})      # accepted


@pytest.mark.parametrize("parameter", ["toxd_fine_tuning", "hatex_fine_tuning", "stereotype_fine_tuning"])
def test_the_paper_profile_fine_tunes_as_appendices_b_and_c_say(parameter):
    """Each fine-tuning setting of the paper profile is the one its quote of appendix B or C states
    (the seed's text renders 5e-06 as ``5e065superscript...`` and 16 as ``161616``)."""
    import re

    row = _paper_value(parameter)
    text, value = row["text"], row["value"]
    assert value["epochs"] == int(re.search(r"for (\d+) epochs?", text).group(1))
    mantissa, exponent = re.search(r"(\d)e(0\d)\1superscript", text).groups()
    assert value["lr"] == float(f"{mantissa}e-{exponent}")
    if "batch_size" in value:
        assert value["batch_size"] == int(re.search(r"batch size (\d+?)\1\1\.", text).group(1))
    assert sorted(value) == sorted(ch.FINE_TUNING[parameter]) and ch.DEFAULTS[parameter] != value


def test_bold_exclude_keeps_a_model_from_generating_and_says_why(chapter):
    """A model named in ``bold_exclude`` gets no BOLD generation, hence no B-* score, and is listed
    with the footnote's reason; the other models' scores are those of the full run."""
    params, gate, measured, intrinsic, extrinsic = chapter
    masked = params["models"][3]                               # tiny RoBERTa: Gibbs sampling otherwise
    again = ch.measure(params | {"bold_exclude": [masked]}, gate)           # cached: loads nothing new
    assert masked not in set(again.generations["model"]) | set(again.source_generations["model"])
    assert masked in set(measured.generations["model"])
    assert again.not_generating[masked] == ch.BOLD_EXCLUDED
    assert again.not_generating[params["models"][4]].startswith("an encoder")    # said, not silently missing
    got = check_section(ch.extrinsic_section(params | {"bold_exclude": [masked]}, again))
    scores = got.data[0]
    assert set(scores.loc[scores.model == masked, "metric"]) == {"ToxD", "HateX"}
    listed = got.tables["bold_not_generating"].set_index("model")["reason"]
    assert "footnote 8" in listed[masked] and "did not generate for BOLD" in got.markdown
    keep = ["model", "metric", "domain", "group", "score"]
    before = extrinsic.data[0]
    before = before[(before.model != masked)][keep].reset_index(drop=True)
    pd.testing.assert_frame_equal(scores[scores.model != masked][keep].reset_index(drop=True), before)


def test_fine_tuning_settings_reach_each_classifier_and_the_prose(tiny_gpt2, tiny_bert, loaded_factory, private_dirs):
    """``toxd_fine_tuning`` and ``stereotype_fine_tuning`` are what the classifiers are trained with
    (the manifest fine_tune writes), and the chapter's words state them beside the paper's appendix
    values, never "as the paper" when they differ."""
    import json

    params, _ = ch.start(dict(ch.DEFAULTS) | SMALL | {
        "models": [str(tiny_gpt2)], "classifier": "fine-tune", "stereotype_encoder": str(tiny_bert),
        "toxd_fine_tuning": {"epochs": 1, "lr": 1e-4}, "stereotype_fine_tuning": {"epochs": 1, "lr": 3e-4,
                                                                                   "batch_size": 8}})
    train, test = classifier_bias.classifier_data(params)
    loaded = loaded_factory(tiny_gpt2, "causal")
    handle = type("Handle", (), {"name": loaded.name, "identity": loaded.identity, "load": lambda self: loaded})()
    classifier_bias.classifier_results(handle, params, train, test)
    manifest = json.loads((classifier_bias.classifier_folder(loaded, train) / "manifest.json").read_text())
    assert (manifest["epochs"], manifest["lr"], manifest["batch_size"]) == (1, 1e-4, 16)
    clf, _ = ch.stereotype_classifier(params)
    manifest = json.loads((clf.folder / "manifest.json").read_text())
    assert (manifest["epochs"], manifest["lr"], manifest["batch_size"]) == (1, 3e-4, 8)

    paper = _paper_value("toxd_fine_tuning")["value"]
    note = ch._classifier_note(params, ch.Measured(*[pd.DataFrame()] * 6))
    assert (f"ToxD: 1 epoch at learning rate 0.0001 against the paper's {paper['epochs']} epoch at learning rate "
            f"{paper['lr']:g};") in note and "as the paper" not in note.split("HateX:")[0]
    assert ch.fine_tuning_text(params | {"toxd_fine_tuning": dict(paper)}, "toxd").endswith(", as the paper")
    assert "HateX: 2 epochs at learning rate 2e-05 against the paper's 3 epochs at learning rate 3e-05" in note
    assert ch.fine_tuning_text(params, "stereotype") == ("1 epoch at learning rate 0.0003, batch size 8 against the "
                                                         "paper's 1 epoch at learning rate 5e-06, batch size 16")


def _scipy_interval(values, seed: int):
    """The percentile bootstrap of the mean, called here: scipy, 9,999 resamples, the seed."""
    v = np.asarray(values, dtype=float)
    ci = stats.bootstrap((v,), np.mean, method="percentile", confidence_level=0.95, n_resamples=9999, batch=1000,
                         rng=np.random.default_rng(seed)).confidence_interval
    return ci.low, ci.high


def test_every_group_score_has_its_interval(chapter, loaded_factory):
    """Issue 25: every per-group score of the chapter carries a 95 % interval: ILPS, B-Sent and ToxD
    a percentile bootstrap over the words, continuations and non-toxic test texts behind it (equal
    to scipy's called here on those items), CEAT the random-effects interval behind its own p-value
    (z = effect / se, p = P(Z > z)), and none where a single item leaves nothing to resample."""
    from scipy.stats import norm

    params, _, measured, intrinsic, extrinsic = chapter
    seed, model = params["seed"], params["models"][0]
    scores = pd.concat([intrinsic.data, extrinsic.data[0]], ignore_index=True)
    assert {"ci_low", "ci_high"} <= set(intrinsic.tables["intrinsic_group_scores"].columns)
    assert {"ci_low", "ci_high"} <= set(extrinsic.tables["extrinsic_group_scores"].columns)
    bounded = scores.dropna(subset=["ci_low"])
    assert (bounded["ci_low"] <= bounded["score"] + 1e-9).all()
    assert (bounded["score"] <= bounded["ci_high"] + 1e-9).all()

    def ours(metric, group):
        row = scores[(scores.model == model) & (scores.metric == metric) & (scores.group == group)].iloc[0]
        return row["ci_low"], row["ci_high"]

    lm = loaded_factory(model, "causal")
    unpleasant = embedding_tests.ceat_attributes()["CEAT"][1]
    direct = logprob_bias.ilps(lm, embedding_tests.ILPS_PHRASES["race"], unpleasant, cache=False, progress=False)
    for group, part in direct.groupby("group"):
        np.testing.assert_allclose(ours("ILPS", group), _scipy_interval(part["ilps"], seed), atol=1e-6)

    gens = extrinsic.data[1]
    one = gens[(gens.model == model) & gens["sentiment"].notna()]
    for group, part in one.groupby("group"):
        want = _scipy_interval(part["sentiment"], seed) if part["sentiment"].nunique() > 1 else (np.nan, np.nan)
        np.testing.assert_allclose(ours("B-Sent", group), want)

    train, test = classifier_bias.classifier_data(params)
    p = classifier_bias._toxic_probabilities(lm, train, test, "probe", seed)
    for group, term in classifier_bias.TOXD_IDENTITIES["religion"].items():
        flags = p[((test["identity"] == term) & (test["label"] == "non-toxic")).to_numpy()] >= 0.5
        want = _scipy_interval(flags, seed) if len(set(flags)) > 1 else (np.nan, np.nan)
        np.testing.assert_allclose(ours("ToxD", group), want)

    ceat = scores[scores.metric.isin(["CEAT", "CEATtox"])].dropna(subset=["score"])
    se = (ceat["ci_high"] - ceat["ci_low"]) / (2 * norm.ppf(0.975))
    np.testing.assert_allclose(ceat["score"], (ceat["ci_low"] + ceat["ci_high"]) / 2)
    np.testing.assert_allclose(norm.sf(ceat["score"] / se), ceat["p_value"], rtol=1e-6, atol=1e-12)
    ss = scores[scores.metric == "StereoSet"]
    assert (ss["n"] == 1).all() and ss["ci_low"].isna().all()              # one cluster per target
    assert "percentile bootstrap" in extrinsic.markdown and "random-effects interval" in intrinsic.markdown


def test_stereoset_intervals_resample_a_targets_clusters():
    """StereoSet's SS per target with the bootstrap over its clusters (each 100 or 0), against
    scipy on those cluster values; a target whose clusters all agree has no interval."""
    rows = []
    for target, pro in (("A", [1, 0, 1, 1]), ("B", [0, 0, 0])):
        for i, p in enumerate(pro):
            rows += [{"cluster_id": f"{target}{i}", "bias_type": "race", "target": target, "gold_label": label,
                      "score": s} for label, s in (("stereotype", 0.5 if p else 0.1), ("anti-stereotype", 0.3),
                                                   ("unrelated", 0.01))]
    got = ch.stereoset_group_scores(pd.DataFrame(rows), 3).set_index("group")
    assert got.loc["A", "score"] == 75.0 and got.loc["A", "n"] == 4 and got.loc["B", "score"] == 0.0
    np.testing.assert_allclose((got.loc["A", "ci_low"], got.loc["A", "ci_high"]),
                               _scipy_interval([100, 0, 100, 100], 3))
    assert np.isnan(got.loc["B", "ci_low"]) and np.isnan(got.loc["B", "ci_high"])


def _table7_regard(monkeypatch, make):
    """``text_classifiers.classifier`` for the regard column replaced by ``make()`` (a classifier or a raise)."""
    real = text_classifiers.classifier
    monkeypatch.setattr(text_classifiers, "classifier", lambda which, **kw: make() if which == "regard" else real(which, **kw))


def test_table7_shows_the_regard_column_beside_the_papers(chapter, monkeypatch):
    """Table 7 beyond its sentiment column: with a regard classifier its column is measured on the
    same noisy copies (noise_table on that classifier's negative label, called here) beside the
    paper's regard column; without one the paper's regard values are still shown, ours empty, and
    the section says why."""
    from helpers import published
    from helpers.errors import ModelUnavailableError
    from helpers.metrics import noise

    params, _, _, _, extrinsic = chapter
    texts = ch.noise_inputs(params, extrinsic.data[1])
    paper = published.table("001", "table7")
    stand_in = text_classifiers.vader_regard()                            # a regard-kind classifier (VADER at 0.05)
    _table7_regard(monkeypatch, lambda: stand_in)
    got = check_section(ch.noise_section(params, extrinsic))
    table = got.tables["table7_vs_paper"]
    assert table["classifier"].tolist() == ["sentiment"] * 9 + ["regard"] * 9
    want = noise.summarise(noise.noise_table(texts, lambda b: stand_in.predict(b) == "negative",
                                             copies=ch.NOISE_COPIES, repeats=ch.NOISE_REPEATS, seed=params["seed"]))
    reg = table[table.classifier == "regard"]
    np.testing.assert_allclose(reg["negative_percent"], want["negative_percent"])
    np.testing.assert_allclose(reg["paper_percent"], paper.loc[paper.classifier == "regard", "negative_percent_mean"])
    assert got.facts["classifiers"] == ["sentiment", "regard"] and not got.facts["not_measured"]

    def offline():
        raise ModelUnavailableError("classifier sasha/regardv3 cannot be loaded: the hub is unreachable")

    _table7_regard(monkeypatch, offline)
    got = check_section(ch.noise_section(params, extrinsic))
    table = got.tables["table7_vs_paper"]
    reg = table[table.classifier == "regard"]
    assert len(reg) == 9 and reg["negative_percent"].isna().all() and reg["paper_percent"].notna().all()
    assert f"Table 7's regard column cannot be measured here: {ch.REGARD_OFFLINE}." in got.markdown
    assert "regard column is not measured here" in table.attrs["why"]["negative_percent"]
    assert "the hub is unreachable" in got.facts["not_measured"]["regard"]           # the error itself: facts only
    sent = table[table.classifier == "sentiment"]
    np.testing.assert_allclose(sent["paper_percent"],
                               paper.loc[paper.classifier == "sentiment", "negative_percent_mean"])


# ----------------------------------------------------------------------------- the chapter reads as a report

def _sections(chapter, monkeypatch):
    """Every section of the chapter on the tiny models (classifiers passing), the first three models made one
    family (a teacher and two students of 3, 2 and 1 million parameters), and its Findings."""
    params, gate, measured, intrinsic, extrinsic = chapter
    family = dict.fromkeys(params["models"][:3], params["models"][0])
    monkeypatch.setattr(ch, "lineage", lambda m: family.get(m, m))
    monkeypatch.setattr(ch, "_parameters", lambda m: {n: 3e6 - i * 1e6 for i, n in enumerate(params["models"][:3])}
                        .get(m, np.nan))
    extrinsic = _all_pass(extrinsic)
    correlations = check_section(ch.correlation_section(params, gate, intrinsic, extrinsic))
    shown = [intrinsic, extrinsic, correlations, ch.alignment_section(params, gate, intrinsic, extrinsic),
             ch.source_section(params, gate, intrinsic, extrinsic, measured),
             ch.polarity_section(params, gate, intrinsic, extrinsic), ch.temperature_section(params, measured),
             ch.noise_section(params, extrinsic)]
    return correlations, shown, ch.findings(gate, extrinsic, correlations)


def test_findings_are_computed_from_the_tables_they_link(chapter, monkeypatch):
    """The Findings box: 3 to 6 bullets, each linked to a table a section of the chapter shows, with the
    numbers of that table (n, families, the largest r with its interval, Holm's count)."""
    from helpers import report, stats as hstats

    correlations, shown, box = _sections(chapter, monkeypatch)
    items = box.items[0][2].items
    low, high = report.READING["findings"]
    assert low <= len(items) <= high and box.facts["findings"] == [report.plain(f.text) for f in items]
    tables = {name: t for s in shown for name, t in s.tables.items()} | {"quality_gate": None}
    assert all(f.table in tables for f in items)
    pearson = correlations.tables["correlations_vs_paper"]
    facts = correlations.facts
    power = items[0].text
    assert f"each of the {len(pearson)} rests on n = {pearson['n'].min()}" in power
    assert facts["families_needed"] == hstats.pairs_for_correlation(0.8) == 9 and "takes 9 families" in power
    top = pearson.loc[pearson["r"].abs().idxmax()]
    assert f"{top['intrinsic']} with {top['extrinsic']} on {top['domain']}, is r = {top['r']:.2f}" in items[1].text
    held = int(pearson["significant"].sum())
    assert f"{held} correlation" in items[2].text and f"the {int(pearson['p_value'].notna().sum())} tests" in items[2].text
    family = next(f for f in items if f.table.startswith("within_family_"))
    assert family.table in correlations.tables and "3 models" in family.text
    within = correlations.tables[family.table]                # 2 of the 3! = 6 orders have |rho| = 1
    assert f"1 row in 3 would by chance alone, about {len(within) / 3:.0f} of these {len(within)}" in family.text


def test_the_chapters_prose_reads_as_a_report(chapter, monkeypatch):
    """No generated paragraph over the word limit, no sentence shape more than twice, no exception text,
    on the tiny models' chapter."""
    from helpers import report

    _, shown, box = _sections(chapter, monkeypatch)
    markdown = "\n\n".join([box.markdown, *[s.markdown for s in shown]])
    assert report.reading_problems(markdown) == []


def test_correlations_say_their_families_and_the_dose_response_within_one(chapter, monkeypatch):
    """Each correlation row counts the independent families among its models; the within-family table has
    each member's variance, largest model first, and Spearman's rho of the variance with the size."""
    params, *_ = chapter
    correlations, _, _ = _sections(chapter, monkeypatch)
    variances, corr = correlations.data
    family = set(params["models"][:3])
    for row in corr.itertuples():
        both = variances[(variances.domain == row.domain) & variances.metric.isin([row.intrinsic, row.extrinsic])
                         & variances.variance.notna()].groupby("model").size()
        models = set(both.index[both == 2])
        assert row.n == len(models) and row.families == len(models - family) + bool(models & family)
    assert "families" in correlations.tables["correlations_spearman"] and "paper_r" in correlations.tables[
        "correlations_spearman"]
    within = correlations.tables[f"within_family_{params['models'][0]}"]
    assert list(within.columns[3:6]) == params["models"][:3]
    for r in within.dropna(subset=params["models"][:3]).itertuples():
        values = [getattr(r, f"_{i}") for i in (4, 5, 6)]
        want = stats.spearmanr([3, 2, 1], values).statistic if np.ptp(values) else np.nan
        np.testing.assert_allclose(r.rho_size, want, equal_nan=True)
    assert correlations.facts["families"] == 3 and "takes 9 independent families, so none of them can" in \
        correlations.markdown


def test_a_perfect_rank_agreement_and_a_near_constant_metric_are_said_not_warned():
    """|rho| = 1 gives no Fisher-z interval and the caption says so (not "too few values"); a metric whose
    variances agree to 12 digits raises no warning (scipy's NearConstantInputWarning) and its row says it."""
    import warnings

    from helpers import report

    names = ["m1", "m2", "m3", "m4", "m5"]
    rows = [{"model": m, "metric": metric, "domain": "race", "variance": v}
            for i, m in enumerate(names) for metric, v in (("CEAT", float(i)), ("ToxD", i**3 + 1.0),
                                                           ("B-Sent", 0.1 + i * 1e-17))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        corr = ch._correlate(pd.DataFrame(rows), ["CEAT"], ["ToxD", "B-Sent"])
    perfect = corr[(corr.extrinsic == "ToxD") & (corr.method == "spearman")].iloc[0]
    assert perfect["r"] == pytest.approx(1) and np.isnan(perfect["ci_low"])
    assert perfect["note"] == "ρ = +1: every model in the same order, no Fisher-z interval"
    near = corr[corr.extrinsic == "B-Sent"]
    assert near["note"].str.startswith("B-Sent nearly constant across the models").all()
    spearman = ch._rows(corr, "spearman")
    caption = report.table_view(spearman, "correlations_spearman").caption
    assert "|r| = 1" in caption and "too few values" not in caption and "ci_low and ci_high" in caption
    assert perfect["families"] == 5


def test_hatex_offline_is_one_plain_sentence_saying_where_to_get_it(chapter, tmp_path, monkeypatch):
    import requests

    from helpers import paths, report

    params, *_ = chapter
    monkeypatch.setenv("HARMS_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.setattr(paths, "download_dir", lambda: tmp_path / "raw")
    monkeypatch.setattr(requests, "get", lambda *a, **k: (_ for _ in ()).throw(requests.ConnectionError("down")))
    data, why = ch._hatex_or_none(params)
    assert data is None and why == ch.HATEX_OFFLINE and "`harms fetch-data hatexplain`" in why
    note = ch._classifier_note(params, ch.Measured(*[pd.DataFrame()] * 6, not_measured={"HateX": why}))
    assert f"HateX is not measured: {why}" in note and report.reading_problems(note) == []
