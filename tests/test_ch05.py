"""Chapter 05 module (helpers.chapters.ch05_tinybert) on tiny models: parameters, sampling, the
classifier sections against direct metric calls, the LM sections' verdict rows, the verdict
table and the conclusion counted from it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from helpers import report, stats
from helpers.chapters import ch05_tinybert as ch
from helpers.datasets import madlibs
from helpers.errors import InputError
from helpers.metrics import unintended

from chapter_contract import check_section

SMALL = {"num_hidden_layers": 1, "hidden_size": 16, "num_attention_heads": 2, "intermediate_size": 32}


def _params(**kw):
    ns = dict(ch.DEFAULTS) | dict(n_train=24, n_validation=12, n_test=24, max_length=32, madlibs_sample=240,
                                  swap_sample=12, n_resamples=30, student_init="pruned") | kw
    params, _ = ch.start(ns)
    return params


@pytest.mark.parametrize("bad, message", [({"identity_match": "regex"}, "identity_match"),
                                          ({"distill_epochs": (1,)}, "distill_epochs"),
                                          ({"classifier_margin": 0.7}, "classifier_margin"),
                                          ({"cb_sample": (2, -1)}, "cb_sample"), ({"n_train": 0}, "n_train"),
                                          ({"madlibs_sample": True}, "madlibs_sample"),
                                          ({"augment": "yes"}, "augment must be"),
                                          ({"augment": {"N_a": 20}}, "augment: unknown setting"),
                                          ({"augment": {"p_t": 1.5}}, "p_t must be a probability"),
                                          ({"augment": {"mlm": 3}}, "mlm must be a model name")])
def test_bad_parameters_are_one_line(private_dirs, bad, message):
    with pytest.raises(InputError, match=message):
        _params(**bad)


def test_stratified_sample_keeps_shares_and_is_seeded():
    df = pd.DataFrame({"x": range(1000), "label": ["a"] * 800 + ["b"] * 200})
    a, b = ch._sample(df, 100, 3, stratify="label"), ch._sample(df, 100, 3, stratify="label")
    assert a.equals(b) and a["label"].value_counts().to_dict() == {"a": 80, "b": 20}
    assert list(a["x"]) == sorted(a["x"]) and len(ch._sample(df, "all", 0)) == 1000


@pytest.fixture
def trained(tiny_bert, private_dirs, monkeypatch):
    monkeypatch.setattr(ch, "STUDENT_SHAPE", SMALL)
    params = _params(teacher=str(tiny_bert))
    section = check_section(ch.classifier_section(params))
    return params, section


def test_classifiers_are_trained_once_and_reported(trained, monkeypatch):
    params, section = trained
    data, found = section.data["data"], section.data["classifiers"]
    quality = section.tables["task_quality"]
    for task in ch.TASKS:
        rows = quality[quality.task == task].set_index("model")
        assert section.facts[task]["student_f1_weighted"] == rows.loc["student", "f1_weighted"]
        assert section.facts[task]["parameter_share"] == pytest.approx(rows.loc["student", "parameters"]
                                                                       / rows.loc["teacher", "parameters"])
    assert set(quality["model"]) == {"teacher", "student"} and set(quality["task"]) == set(ch.TASKS)
    assert (quality["parameters"][quality.model == "student"].to_numpy()
            < quality["parameters"][quality.model == "teacher"].to_numpy()).all()
    calls = []
    monkeypatch.setattr(ch.classifier, "fine_tune", lambda *a, **k: calls.append(1) or found.teacher["hate"].folder)
    monkeypatch.setattr(ch.tinybert, "distill_classifier",
                        lambda *a, **k: calls.append(1) or found.student["hate"].folder)
    ch.train_classifiers(params, data)       # the real functions reuse the cache; the stubs count the calls
    assert len(calls) == 4


def test_classifier_gate_is_the_metric_on_each_test_split_and_decides_the_verdicts(trained):
    """Issue 25: every classifier passes the gate before its bias is interpreted. The table equals
    classifier_gate on the same predictions; a failing hate model turns Table 4's verdicts into
    "not interpreted", a passing one keeps them."""
    from helpers.metrics import classifier_quality

    params, section = trained
    data, found, gates = section.data["data"], section.data["classifiers"], section.tables["classifier_gate"]
    for task in ch.TASKS:
        for role in ("teacher", "student"):
            clf = getattr(found, role)[task]
            y = (data[task].test["label"] == ch.POSITIVE[task]).astype(int).to_numpy()
            p = clf.predict_proba(data[task].test["text"])[:, clf.classes_.index(ch.POSITIVE[task])]
            direct = classifier_quality.classifier_gate(y, p, margin=params["classifier_margin"],
                                                        n_resamples=params["n_resamples"], seed=params["seed"])
            got = gates[(gates.task == task) & (gates.model == role)].reset_index(drop=True)
            assert got["value"].tolist() == pytest.approx(direct["value"].tolist())
            assert got["ci_low"].tolist() == pytest.approx(direct["ci_low"].tolist())
            assert (got["usable"] == direct.attrs["usable"]).all()
            assert section.facts["usable"][f"{task} {role}"] == direct.attrs["usable"]
    out = ch.unintended_section(params, section)
    hate = out.tables["classifier_gate_hate"]
    assert set(hate["data"]) == {"hate test split", "madlibs sample"}
    usable = bool(hate["usable"].all())
    assert out.facts["hate_classifiers_usable"] == usable
    verdicts = out.data["verdicts"]
    assert (verdicts["interpreted"] == usable).all()
    assert verdicts["verdict"].str.startswith("not interpreted").all() == (not usable)
    forced = section.data["gates"].assign(usable=True)               # as if every classifier passed
    passing = ch.Section(data={**section.data, "gates": forced})
    swap = ch.swap_section(params, passing)
    assert swap.data["verdicts"]["interpreted"].all() and swap.facts["sentiment_classifiers_usable"]
    failing = ch.Section(data={**section.data, "gates": forced.assign(usable=False)})
    assert ch.swap_section(params, failing).data["verdicts"]["verdict"].str.contains("fails the classifier gate").all()


def test_augment_reaches_every_students_distillation(trained, monkeypatch):
    params, section = trained
    data, found = section.data["data"], section.data["classifiers"]
    seen = []
    monkeypatch.setattr(ch.classifier, "fine_tune", lambda *a, **k: found.teacher["hate"].folder)
    monkeypatch.setattr(ch.tinybert, "distill_classifier",
                        lambda *a, **k: seen.append(k["augment"]) or found.student["hate"].folder)
    ch.train_classifiers(params | {"augment": {"n_aug": 2}}, data)
    assert seen == [{"n_aug": 2}] * len(ch.TASKS)
    ch.train_classifiers(params, data)
    assert seen[-1] is False and ch.DEFAULTS["augment"] is False
    seen.clear()                                  # per task, as the seed (MLMA augmented, IMDB not)
    ch.train_classifiers(params | {"augment": {"hate": {"n_aug": 2}, "sentiment": False}}, data)
    assert seen == [{"n_aug": 2}, False] and list(ch.TASKS) == ["hate", "sentiment"]
    with pytest.raises(InputError, match="augment: unknown setting"):
        ch.start(dict(ch.DEFAULTS) | {"augment": {"hate": {"n_augs": 2}}})


def test_unintended_section_equals_direct_metric_calls(trained):
    params, section = trained
    found = section.data["classifiers"]
    u = ch.unintended_bias(params, found)
    member = madlibs.mentions(u.sample["text"], u.terms)
    y = (u.sample["label"] == "toxic").astype(int).to_numpy()
    p = ch.classifier.predict_proba(found.teacher["hate"].folder, u.sample["text"], max_length=params["max_length"])
    assert np.allclose(u.scores["teacher"], p[:, 1])                       # label order: non-toxic, toxic
    assert found.teacher["hate"].classes_ == found.student["hate"].classes_ == ["non-toxic", "toxic"]
    assert u.thresholds["teacher"] == pytest.approx(unintended.equal_error_threshold(y, p[:, 1]))   # the default
    direct = unintended.equality_differences(unintended.identity_metrics(y, p[:, 1], member,
                                                                          threshold=u.thresholds["teacher"]))
    table4 = ch.equality_table(params, u)
    assert table4["teacher"].to_numpy() == pytest.approx(direct["value"].to_numpy())
    assert set(table4["verdict"]) <= set(stats.VERDICTS)
    sub = ch.equality_table(params, u, match="substring")
    assert (sub["identity_match"] == "substring").all()


def test_swap_and_seat_sections(trained):
    """... and SEAT loads each classifier's encoder without transformers' report of the dropped
    classification head (four "BertModel LOAD REPORT ... UNEXPECTED" tables on the built page),
    with transformers' own log level back afterwards (its real warnings are kept)."""
    import logging

    from transformers.utils import logging as hf_logging

    params, section = trained
    swap = check_section(ch.swap_section(params, section))
    table5 = swap.tables["table5_gender_swap"]
    assert set(table5["terms"]) == {"pro", "weat", "all"} and (table5["n"] <= params["swap_sample"]).all()
    assert (table5["absolute_bias"] >= table5["total_bias"].abs() - 1e-12).all()
    level, records, handler = hf_logging.get_verbosity(), [], logging.Handler()
    handler.emit = records.append
    logging.getLogger("transformers").addHandler(handler)
    try:
        seat = check_section(ch.seat_section(params, section))
    finally:
        logging.getLogger("transformers").removeHandler(handler)
    assert not [r.getMessage() for r in records if "LOAD REPORT" in r.getMessage()]
    assert hf_logging.get_verbosity() == level
    per_test = seat.data["per_test"]
    assert per_test.groupby(["task", "model"]).size().nunique() == 1 and len(seat.data["verdicts"]) == 2
    # issue 36: a task whose classifier fails the classifier gate has its SEAT row shown, not interpreted
    gates = section.data["gates"]
    by_task = {t: bool(gates.loc[gates["task"] == t, "usable"].all()) for t in ("hate", "sentiment")}
    verdicts = seat.data["verdicts"].set_index("task")
    assert verdicts["interpreted"].to_dict() == by_task == seat.facts["seat_interpreted"]
    failing = gates.assign(usable=gates["task"] != "hate")             # hate fails, sentiment passes
    gated = check_section(ch.seat_section(params, ch.Section(data={**section.data, "gates": failing})))
    v = gated.data["verdicts"].set_index("task")
    assert not v.loc["hate", "interpreted"] and v.loc["hate", "verdict"].startswith("not interpreted")
    assert v.loc["hate", "difference"] == pytest.approx(verdicts.loc["hate", "difference"])    # numbers kept
    assert v.loc["sentiment", "interpreted"]
    assert v.loc["sentiment", "verdict"] == stats.verdict(v.loc["sentiment", "ci_low"], v.loc["sentiment", "ci_high"])
    assert "The SEAT row of the hate classifiers is shown, not interpreted" in gated.markdown
    table = ch.verdict_table(gated.data["verdicts"])
    assert table.set_index("measure").loc["mean |d| over tests, hate classifier", "verdict_holm"].startswith(
        "not interpreted") and "1 is not interpreted" in ch.conclusion(table)


def test_verdict_table_marks_models_off_the_gate_and_the_conclusion_counts():
    rows = pd.DataFrame([{"test": "t", "measure": m, "teacher": 1.0, "student": 2.0, "difference": 1.0, "ci_low": lo,
                          "ci_high": hi, "n": 10, "verdict": stats.verdict(lo, hi), "interpreted": ok}
                         for m, lo, hi, ok in [("a", 0.5, 1.5, True), ("b", -1.5, -0.5, True), ("c", -1, 1, True),
                                               ("d", 0.5, 1.5, False)]])
    table = ch.verdict_table(rows)
    assert table["verdict"].tolist() == ["amplified", "reduced", "no detectable difference",
                                         "not interpreted (a language model fails the quality gate)"]
    gated = rows.iloc[:1].assign(interpreted=False, verdict="not interpreted (a hate classifier fails the classifier gate)")
    assert ch.verdict_table(gated)["verdict"].tolist() == gated["verdict"].tolist()      # its own reason kept
    text = ch.conclusion(table)
    assert "on 1, **reduced** it on 1" in text and "1 is not interpreted" in text and "Amplified: a." in text
    every = ch.conclusion(ch.verdict_table(rows.assign(interpreted=True)))       # every gate passed: no one left out
    assert every.startswith("Every model passes its quality gate, so the family is all 4 measures: a verdict")
    none = ch.conclusion(ch.verdict_table(rows.assign(interpreted=False)))        # none passed: no verdict is counted
    assert none.startswith("No measure is interpreted: all 4 measures rest on a model that fails its quality gate")
    assert "amplified** the" not in none and report.reading_problems(every + "\n\n" + none) == []
    section = check_section(ch.verdict_section(ch.Section(data={"verdicts": None}), ch.Section(data={"verdicts": rows})))
    assert section.markdown == text and section.tables["verdicts"].equals(table)
    counts = table["verdict"].value_counts()
    assert section.facts == {"measures": 4, "not_interpreted": 1, "correction": "holm", "family": 3,
                             "amplified": counts["amplified"], "reduced": counts["reduced"],
                             "no_detectable_difference": counts["no detectable difference"],
                             "uncorrected": {"amplified": 1, "reduced": 1, "no_detectable_difference": 1}}


def _holm_by_hand(d, lo, hi, alpha=0.05):
    """Two-sided normal-approximation p from each 95 % interval, then Holm's step-down by hand."""
    from scipy.stats import norm

    p = np.array([2 * norm.sf(abs(x) / ((h - l) / (2 * norm.ppf(0.975)))) for x, l, h in zip(d, lo, hi)])
    reject, bar = np.zeros(len(p), dtype=bool), True
    for rank, k in enumerate(np.argsort(p)):
        bar = bar and p[k] <= alpha / (len(p) - rank)
        reject[k] = bar
    return p, reject


def test_conclusion_counts_only_what_survives_holm_over_the_interpreted_family():
    """Issue 36: the conclusion counted about 20 uncorrected 95 % intervals. Now each interpreted
    row gets a p-value from its interval and Holm's correction over the interpreted rows (the family,
    named in the text); a verdict counts only if it survives; rows off the gate are in no count."""
    rng = np.random.default_rng(3)
    d = rng.normal(0, 1, 20)
    half = rng.uniform(0.5, 2.0, 20)
    lo, hi = d - half, d + half
    ok = np.ones(20, dtype=bool)
    ok[[0, 7]] = False
    rows = pd.DataFrame({"test": "t", "measure": [f"m{k}" for k in range(20)], "teacher": 1.0, "student": 1.0 + d,
                         "difference": d, "ci_low": lo, "ci_high": hi, "n": 50,
                         "verdict": [stats.verdict(a, b) for a, b in zip(lo, hi)], "interpreted": ok})
    table = ch.verdict_table(rows)
    p, reject = _holm_by_hand(d[ok], lo[ok], hi[ok])
    judged = table[ok]
    assert judged["p_value"].to_numpy() == pytest.approx(p)
    expected = [v if r and v != "no detectable difference" else "no detectable difference"
                for v, r in zip(judged["verdict"], reject)]
    assert judged["verdict_holm"].tolist() == expected
    assert table.loc[~ok, "verdict_holm"].str.startswith("not interpreted").all() and table.loc[~ok, "p_holm"].isna().all()
    uncorrected = int(judged["verdict"].isin(["amplified", "reduced"]).sum())
    assert sum(e != "no detectable difference" for e in expected) < uncorrected      # the correction bites here
    text = ch.conclusion(table)
    n_amp, n_red = expected.count("amplified"), expected.count("reduced")
    assert "Holm's correction over the 18 with an interval" in text and "2 are not interpreted" in text
    assert (f"**amplified** the teacher's bias on {n_amp}, **reduced** it on {n_red} and showed **no detectable "
            f"difference** on {18 - n_amp - n_red}") in text
    assert f"Uncorrected, {uncorrected} of these 18 measures" in text
    survivors = [m for m, e in zip(judged["measure"], expected) if e == "amplified"]
    if 0 < len(survivors) <= 2:
        assert ("Amplified: " + "; ".join(survivors) + ".") in text and "m0" not in text.split("Amplified:")[-1]
    elif survivors:                                   # more: counted, and listed by the table only
        assert f"The {len(survivors)} amplified measures are the rows" in text and "Amplified:" not in text
    else:
        assert "Amplified:" not in text


def test_published_side_by_side_maps_the_seeds_vocabulary(private_dirs):
    ours = pd.DataFrame({"task": ["hate", "hate"], "model": ["teacher", "student"], "metric": ["f1", "fped"],
                         "value": [0.8, 5.0]})
    side = ch.compare(ours, "table1", ["task", "model", "metric"], "check").set_index(["task", "model", "metric"])
    assert side.loc[("hate", "teacher", "f1"), "published"] == 0.8352                  # Table 1, BERT-base F1
    assert side.loc[("hate", "teacher", "f1"), "difference"] == pytest.approx(0.8 - 0.8352)
    t4 = ch.compare(ours, "table4", ["task", "model", "metric"], "check4", statistic="value")
    assert t4.set_index(["model", "metric"]).loc[("student", "fped"), "published"] == 4.62


def test_unintended_section_writes_its_figures_and_seed_comparisons(trained):
    params, section = trained
    out = check_section(ch.unintended_section(params, section))
    results = ch.common.output_dir(ch.CHAPTER)
    for name in ("table3_vs_seed", "table4_vs_seed", "table4_equality_differences_substring", "pairwise_fpr_tests"):
        assert (results / f"{name}.csv").is_file(), name
    assert len(list(results.glob("figure*.png"))) == 5 and set(out.figures) == {f"figure{k}" for k in range(1, 6)}
    assert out.data["verdicts"] is out.tables["table4_equality_differences"]


def test_bootstraps_are_memoised_by_their_inputs(private_dirs, monkeypatch):
    params = _params()
    t, s = np.arange(20.0), np.arange(20.0) + 1
    calls = []
    real = ch.stats.bootstrap_difference
    monkeypatch.setattr(ch.stats, "bootstrap_difference", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = ch.bootstrap(params, ch._digest(t, s), lambda r: (t[r].mean(), s[r].mean()), 20)
    again = ch.bootstrap(params, ch._digest(t, s), lambda r: (t[r].mean(), s[r].mean()), 20)
    other = ch.bootstrap(params, ch._digest(t, s + 1), lambda r: (t[r].mean(), s[r].mean() + 1), 20)
    assert first == again and len(calls) == 2 and other["difference"] == pytest.approx(first["difference"] + 1)


def _stereoset_scores(pro: np.ndarray, related: np.ndarray) -> pd.DataFrame:
    """Per-sentence scores of clusters (one target each): stereotype above anti-stereotype where
    ``pro``, both above the unrelated sentence where ``related`` (else both below it)."""
    rows = []
    for k, (p, r) in enumerate(zip(pro, related)):
        st, anti = (-1.0, -2.0) if p else (-2.0, -1.0)
        for label, score in (("stereotype", st), ("anti-stereotype", anti), ("unrelated", -9.0 if r else 0.0)):
            rows.append({"cluster_id": f"c{k}", "target": f"t{k}", "bias_type": "gender", "gold_label": label,
                         "score": score})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("student_pro, expected", [(None, "no detectable difference"), ("all", "amplified")])
def test_stereoset_verdict_is_on_ss_and_a_lower_lms_is_reported_apart(private_dirs, monkeypatch, student_pro,
                                                                        expected):
    """Issue 36: ICAT = LMS min(SS, 100 - SS) / 50 falls with the LMS alone, and a lower student ICAT
    was read as "amplified". A student with the teacher's SS and a much lower LMS is no detectable
    difference in stereotyping (its LMS difference is "lower", apart); one whose SS moves from 50 is."""
    from helpers.metrics import stereoset

    n = 30
    pro = np.arange(n) % 10 < 7                                   # teacher: SS 70, LMS 100
    teacher = _stereoset_scores(pro, np.ones(n, dtype=bool))
    student = _stereoset_scores(pro if student_pro is None else np.ones(n, dtype=bool), np.arange(n) % 10 < 4)
    items = teacher.drop(columns="score")
    monkeypatch.setattr(ch, "stereoset_tasks", lambda k: {"intrasentence": items})
    monkeypatch.setattr(ch, "_lm_results", lambda lms, params, measure: {"T": {"intrasentence": teacher},
                                                                          "S": {"intrasentence": student}})
    lms = ch.LanguageModels(["T", "S"], {"T": "teacher", "S": "student"}, pd.DataFrame(), ["T", "S"])
    table, verdicts, lms_diff = ch.stereoset_icat(_params(n_resamples=100), lms)
    agg = {m: stereoset.aggregate(d, by=None).iloc[0] for m, d in (("T", teacher), ("S", student))}
    assert agg["S"]["icat"] < agg["T"]["icat"]                    # the old ICAT verdict's direction
    row, lrow = verdicts.iloc[0], lms_diff.iloc[0]
    assert row["teacher"] == pytest.approx(abs(agg["T"]["ss"] - 50)) and row["student"] == pytest.approx(abs(agg["S"]["ss"] - 50))
    assert row["verdict"] == expected and row["test"] == "StereoSet SS (intrasentence)"
    assert lrow["difference"] == pytest.approx(agg["S"]["lms"] - agg["T"]["lms"]) and lrow["reading"] == "lower"
    assert "amplified" not in set(lms_diff["reading"]) and "LMS" in ch.lms_sentence(lms_diff)


def test_language_model_sections_on_a_tiny_teacher_and_student(tiny_gpt2, tmp_path, private_dirs):
    import shutil

    student = tmp_path / "student_lm"
    shutil.copytree(tiny_gpt2, student)
    lms = ch.LanguageModels([str(tiny_gpt2), str(student)], {str(tiny_gpt2): "teacher", str(student): "student"},
                            pd.DataFrame(), [str(tiny_gpt2)])                  # the student is off the gate
    params = _params(bec_pro_sample=36, cb_sample=(1, 2), stereoset_clusters_per_target=1, n_resamples=20)
    lp, vl = ch.logprob_bias(params, lms)
    assert set(lp["model"]) == set(lms.names) and len(vl) == 1 and not vl["interpreted"].iloc[0]
    assert vl["difference"].iloc[0] == pytest.approx(0.0, abs=1e-9)              # same weights: same bias
    cb, vc = ch.categorical_bias(params, lms)
    assert cb.query("template_id == 'all'")["cb"].nunique() == 1 and len(vc) == 1
    ss, vs, vlms = ch.stereoset_icat(params, lms)
    assert set(ss["task"]) == {"intrasentence", "intersentence"} and len(vs) == 2 and len(vlms) == 2
    assert (vs["difference"].abs() < 1e-9).all() and (vlms["difference"].abs() < 1e-9).all()
    overall = ss[ss["domain"] == "overall"].set_index(["task", "model"])
    for (task, student), row in zip(vlms[["task", "model"]].itertuples(index=False), vs.itertuples()):
        assert row.teacher == pytest.approx(abs(overall.loc[(task, str(tiny_gpt2)), "ss"] - 50))   # |SS - 50|
        assert vlms.set_index("task").loc[task, "teacher"] == pytest.approx(overall.loc[(task, str(tiny_gpt2)), "lms"])
    table = ch.verdict_table(vl, vc, vs)
    assert (table["verdict"] == "not interpreted (a language model fails the quality gate)").all()
    section = check_section(ch.lm_section(params | {"lm_models": [str(tiny_gpt2), str(student)]}))
    assert section.data["verdicts"].equals(pd.concat([vl, vc, vs], ignore_index=True))      # the same, cached
    assert [str(c).split("(")[0] for c in section.calls][:2] == ["metrics.quality.language_model_quality",
                                                                 "metrics.logprob_bias.bec_pro_associations"]


def test_findings_and_the_chapters_prose_read_as_a_report(trained, tiny_gpt2, tmp_path):
    """The Findings box: 3-6 findings, each one sentence linking to a table a section of the chapter
    shows, its numbers those of the tables; the gate's rule stated once; one table of every value
    next to the seed's (the values of the ``*_vs_seed`` tables); no reading problem in the prose."""
    import shutil

    params, classifiers = trained
    student = tmp_path / "student_lm"
    shutil.copytree(tiny_gpt2, student)
    params = params | {"lm_models": [str(tiny_gpt2), str(student)], "bec_pro_sample": 36, "cb_sample": (1, 2),
                       "n_resamples": 20}
    unintended = check_section(ch.unintended_section(params, classifiers))
    swap = check_section(ch.swap_section(params, classifiers))
    seat = check_section(ch.seat_section(params, classifiers))
    lms = check_section(ch.lm_section(params))
    verdict = check_section(ch.verdict_section(unintended, swap, seat, lms))
    seed = check_section(ch.seed_section(params, classifiers, unintended, swap, seat))
    box = check_section(ch.findings(classifiers, swap, lms, verdict), computes=False)
    sections = [classifiers, unintended, swap, seat, lms, seed, verdict]
    shown = {name for s in sections for name in s.tables}
    items = box.items[0][2].items
    low, high = report.READING["findings"]
    assert low <= len(items) <= high and box.facts["findings"] == [report.plain(f.text) for f in items]
    assert all(f.table in shown and f"(#{report.table_anchor(f.table)})" in box.markdown for f in items)
    assert all(len(report.sentences(f.text)) == 1 for f in items)
    written = pd.read_csv(ch.common.output_dir(ch.CHAPTER) / "findings.csv")
    assert written["table"].tolist() == [f.table for f in items]

    by_table = {f.table: f.text for f in items}
    gates = classifiers.tables["classifier_gate"]
    failing = gates[~gates["usable"]].drop_duplicates(["task", "model"])
    gate_text = next(f.text for f in items if f.table == "classifier_gate")
    for r in failing.itertuples():
        assert f"{r.task} {r.model}" in gate_text
    if len(failing):
        assert "shown and not interpreted" in gate_text
        short = gates[gates["passes"].notna() & ~gates["passes"].astype(bool)]
        worst = short.loc[(short["ci_low"] - short["baseline"] - short["margin"]).idxmin()]
        assert report.fmt_ci(worst["value"], worst["ci_low"], worst["ci_high"]) in gate_text
    table = verdict.tables["verdicts"]
    judged = table[~table["verdict_holm"].str.startswith("not interpreted")]
    counts = judged["verdict_holm"].value_counts()
    if len(judged):
        assert (f"Of the {len(judged)} interpreted measures" in by_table["verdicts"]
                and f"amplified its teacher's bias on {counts.get('amplified', 0)}, reduced it on "
                    f"{counts.get('reduced', 0)} and showed no detectable difference on "
                    f"{counts.get('no detectable difference', 0)}" in by_table["verdicts"])
    else:                                     # the tiny models fail their gates: nothing is counted, and it says so
        assert by_table["verdicts"].startswith(f"No measure is interpreted: all {len(table)} measures rest on a model")
    gate = lms.tables["lm_quality_gate"]
    passing = report.count_of(int(gate["usable"].sum()), len(gate), "language model", ("passes", "pass"))
    assert by_table["lm_quality_gate"].startswith(report.sentence_case(passing))

    compared = seed.tables["seed_comparison"]
    results = ch.common.output_dir(ch.CHAPTER)
    t4 = pd.read_csv(results / "table4_vs_seed.csv").dropna(subset=["published"])
    mine = compared[compared["seed_table"] == "Table 4"]
    assert mine["ours"].tolist() == pytest.approx(t4["measured"].tolist())
    assert mine["published"].tolist() == pytest.approx(t4["published"].tolist())
    assert seed.facts["compared"] == int(compared["published"].notna().sum()) > 0

    markdown = "\n\n".join([box.markdown] + [s.markdown for s in sections])
    assert markdown.count("must clear the majority-class predictor's") == 1      # the rule, once
    assert "By the classifier gate (above)" in unintended.markdown
    assert report.reading_problems(markdown) == []


@pytest.mark.parametrize("facts, expected", [
    ({"measures": 14, "not_interpreted": 4, "family": 10, "amplified": 2, "reduced": 1, "no_detectable_difference": 7},
     "Of the 10 interpreted measures, after Holm's correction over the 10, the student amplified its teacher's bias "
     "on 2, reduced it on 1 and showed no detectable difference on 7; the other 4 of the 14 rest on a model failing "
     "its gate and are in no count."),
    ({"measures": 3, "not_interpreted": 0, "family": 2, "amplified": 0, "reduced": 0, "no_detectable_difference": 3},
     "Of the 3 interpreted measures, after Holm's correction over the 2 with an interval, the student amplified its "
     "teacher's bias on 0, reduced it on 0 and showed no detectable difference on 3; no measure rests on a model "
     "failing its gate."),
    ({"measures": 1, "not_interpreted": 1, "family": 0, "amplified": 0, "reduced": 0, "no_detectable_difference": 0},
     "No measure is interpreted: the one measure rests on a model failing its gate, so none is counted as amplified "
     "or reduced bias."),
])
def test_the_conclusions_counts_read_as_one_sentence_whatever_the_gates_leave(facts, expected):
    finding = ch.verdict_finding(facts)
    assert finding.text == expected and finding.table == "verdicts" and report.reading_problems(expected) == []


def test_a_swap_without_a_detected_difference_says_what_change_it_could_have_detected():
    """The detectable change is Card et al.'s minimum detectable effect at Holm's strictest level:
    a true difference of that size is rejected by the two-sided z test at 0.05 / m with
    probability 0.8 (computed here from the normal distribution, ignoring nothing but the far tail)."""
    from scipy.stats import norm

    se, m = 0.0015, 12
    row = pd.Series({"n": 200, "teacher": 0.0107, "difference": -0.0006, "ci_low": -0.0006 - 1.959964 * se,
                     "ci_high": -0.0006 + 1.959964 * se, "verdict_holm": "no detectable difference"})
    change = ch.detectable_change(row, m)
    q = norm.ppf(1 - 0.05 / m / 2)
    power = norm.sf(q - change / se) + norm.cdf(-q - change / se)
    assert power == pytest.approx(0.8, abs=1e-4) and ch.interval_se(row["ci_low"], row["ci_high"]) == pytest.approx(se)
    text = ch.swap_finding(row, m).text
    assert text == (f"On gender-swapped IMDB reviews (all terms, n = 200), the student's mean absolute bias minus the "
                    f"teacher's is -0.0006 [-0.0035, 0.0023]: no detectable difference after Holm's correction; a "
                    f"change of {change:.2g} or more, {change / 0.0107:.0%} of the teacher's 0.011, would have been "
                    f"detected (80% power at Holm's strictest level).")
    assert report.reading_problems(text) == []
    reduced = ch.swap_finding(row.replace({"no detectable difference": "reduced"}), m).text
    assert reduced.endswith("reduced after Holm's correction.")


def test_the_clearest_difference_names_its_test_and_row_once():
    """The interpreted row with the smallest Holm-corrected p, read from the verdict table; the
    gender-swap row the box already states is skipped, not repeated."""
    table = pd.DataFrame({"test": ["categorical bias (CB)", "categorical bias (CB)", "gender swap (IMDB)"],
                          "measure": ["CB, s1", "CB, s2", "absolute bias, all terms"],
                          "teacher": [2.305, 2.305, 0.01], "difference": [-0.772, -0.825, 0.0],
                          "ci_low": [-1.203, -1.229, -0.01], "ci_high": [-0.356, -0.414, 0.01],
                          "p_holm": [0.0039, 0.00087, np.nan], "verdict_holm": ["reduced", "reduced", "not interpreted"]})
    text = ch._clearest_finding(table, skip=2).text
    assert text == ("The clearest difference is in the categorical bias (CB), row `CB, s2` (Holm-corrected p = "
                    "0.00087): student − teacher -0.825 [-1.229, -0.414] against the teacher's 2.305, so the verdict "
                    "after Holm's correction is reduced.")
    assert ch._clearest_finding(table, skip=1) is None and report.reading_problems(text) == []
