"""Chapter 07 (seed 002): parameters, the first step and the sample, bad input as one line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from helpers import report
from helpers.chapters import ch07_probing as ch
from helpers.datasets import probing as data
from helpers.errors import InputError
from helpers.lm import fill
from helpers.measures import probing as probing_measure
from helpers.metrics import probing


def test_one_model_list_serves_every_language(private_dirs):
    params, _ = ch.start(dict(languages=["en", "ar"], models=["smollm2-135m"]))
    assert list(params["models"]) == ["en", "ar"]
    assert params["models"]["en"] == params["models"]["ar"] and len(params["models"]["en"]) == 1


@pytest.mark.parametrize("override,message", [
    (dict(languages=["de"]), "languages"),                         # a language without patterns or a classifier
    (dict(languages=["en"], models=[""]), "expected model names"),
    (dict(languages=["fr"], models={"en": ["smollm2-135m"]}), "mapping from each language"),
    (dict(per_group=0), "per_group"), (dict(n_heads="many"), "n_heads"), (dict(skip="some"), "skip"),
    (dict(k=[0, 5]), "positive integers"), (dict(upstream_compat="yes"), "upstream_compat"), (dict(test_fraction=1.5), "test_fraction"),
    (dict(classifier_margin=0.5), "classifier_margin = 0.5: a number"),
    (dict(classifier_margin=None), "classifier_margin = None"),
    (dict(english_data=["mlma", "olid"]), "english_data = \\['mlma', 'olid'\\]: a list of distinct"),
    (dict(english_data=[]), "english_data"),
])
def test_bad_parameters_are_one_line(private_dirs, override, message):
    with pytest.raises(InputError, match=message) as e:
        ch.start(override)
    assert "\n" not in str(e.value)


def test_first_step_flags_with_the_classifier_and_the_sample_is_seeded_per_group(private_dirs):
    params, _ = ch.start(dict(languages=["en"], n_heads=2, per_group=2))
    clf = ch.train_classifiers(params)[0]["en"]
    built = ch.build(params, "en", clf)
    assert len(built) == 2 * 378                                   # 378 sentences per English head
    direct = clf.predict([" ".join(t.replace("[MASK]", " ").split()) for t in built["template"]]) == "toxic"
    assert built["flagged"].tolist() == direct.tolist()
    a, b = ch.sample(params, built), ch.sample(params, built)
    pd.testing.assert_frame_equal(a, b)
    assert not a["flagged"].any() and a.groupby("group").size().max() <= 2
    kept = built[~built["flagged"]]
    assert set(a["group"]) == set(kept["group"])


def test_the_first_steps_labels_are_read_back_on_a_rebuild_and_keyed_by_the_classifier(private_dirs, monkeypatch):
    params, _ = ch.start(dict(languages=["en"], n_heads=2, per_group=2))
    clf = ch.train_classifiers(params)[0]["en"]
    first = ch.build(params, "en", clf)
    calls = []
    real = type(clf).predict
    monkeypatch.setattr(type(clf), "predict", lambda self, texts: calls.append(len(texts)) or real(self, texts))
    pd.testing.assert_frame_equal(ch.build(params, "en", clf), first)
    assert calls == []                                             # read back, not labelled again
    ch.build(params | {"n_heads": 1}, "en", clf)                   # other templates
    clf.trained_on = {**clf.trained_on, "seed": 99}                # another training run
    ch.build(params, "en", clf)
    assert calls == [378, 2 * 378]


def test_a_pattern_without_a_blank_and_an_empty_group_file_are_one_line(tmp_path):
    patterns = pd.DataFrame({"language": ["en"], "head_id": [0], "pattern_id": [1], "pattern": ["PersonX sleeps ."]})
    sentences = probing.build_sentences(patterns, data.load_groups(language="en"))
    from helpers.lm import cloze

    with pytest.raises(InputError, match="exactly one blank"):
        cloze.check_templates(sentences["template"].tolist())
    with pytest.raises(InputError, match="no rows"):
        probing.build_sentences(patterns, pd.DataFrame(columns=["gender", "group"]))


def test_upstream_compat_lower_cases_groups_and_takes_raw_pieces(private_dirs):
    """format_utils.py lower-cases the group phrases; main.py takes one mask's raw top-k and
    loads RoBERTa lower-cased."""
    params, _ = ch.start(dict(languages=["en"], n_heads=1, upstream_compat=True))
    clf = ch.train_classifiers(params)[0]["en"]
    built = ch.build(params, "en", clf)
    assert (built["group"] == built["group"].str.lower()).all() and "an arab" in set(built["group"])
    assert built["template"].iloc[0].startswith(built["group"].iloc[0])
    assert ch.fill_settings(params, "en", "roberta-large") == dict(whole_words=False, skip=None, max_pieces=1,
                                                                   lowercase=True)
    assert ch.fill_settings(params, "en", "bert-large-uncased")["lowercase"] is False
    ours, _ = ch.start(dict(languages=["en"]))
    assert ch.fill_settings(ours, "en", "roberta-large") == dict(whole_words=True, skip={fill.NON_WORDS},
                                                                 max_pieces=4, lowercase=False)


def test_pattern_and_group_files_that_are_damaged_are_one_line(monkeypatch, tmp_path):
    """A data folder whose pattern file has a pattern without a blank, or whose group list is empty."""
    import shutil

    from helpers.datasets import registry

    folder = tmp_path / registry.path("atomic-probing").parent.name
    shutil.copytree(registry.path("atomic-probing").parent, folder)
    monkeypatch.setenv("HARMS_DATA_DIR", str(tmp_path))
    f = folder / "atomic_probing_en.csv"
    lines = f.read_text(encoding="utf-8").splitlines()
    f.write_text("\n".join([lines[0], lines[1].replace("[MASK]", "", 1)]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"row 2, pattern 1: needs exactly one \[MASK\]") as e:
        data.load_patterns(language="en")
    assert "\n" not in str(e.value)
    (folder / "cands" / "male_fr.txt").write_text("\n \n", encoding="utf-8")
    with pytest.raises(InputError, match="is empty") as e:
        data.load_groups(language="fr")
    assert "male_fr.txt" in str(e.value) and "\n" not in str(e.value)


def _check_findings(box, shown: set[str]) -> None:
    """A Findings box of 3-6 bullets, each linking to a table the chapter's sections show, written as
    findings.csv with the same sentences."""
    from helpers import paths

    low, high = report.READING["findings"]
    items = box.items[0][2].items
    assert low <= len(items) <= high and {f.table for f in items} <= shown
    written = pd.read_csv(paths.results_dir(ch.CHAPTER) / f"{report.FINDINGS_TABLE}.csv")
    assert written["finding"].tolist() == [report.plain(f.text) for f in items]
    assert box.facts["findings"] == written["finding"].tolist()

def test_every_section_follows_the_contract(tiny_gpt2, private_dirs):
    """Each section is a Section whose key call names a real function; the counts the prose states
    are its facts, and the probed sentences, the fill-ins and the tables are what later sections get."""
    from chapter_contract import check_section

    params, _ = ch.start(dict(languages=["en"], models=[str(tiny_gpt2)], n_heads=1, per_group=1, k=[1, 3],
                              probe_unusable=True))               # as the ci profile: a failing model probed
    classifiers = check_section(ch.classifier_section(params))
    sentences = check_section(ch.sentences_section(params, classifiers))
    assert sentences.facts["sentences"] == {"en": 378} and sentences.facts["probed"] == {"en": len(sentences.data["en"])}
    fills = check_section(ch.fill_section(params, classifiers, sentences))
    table5 = fills.tables["table5_percent_at_k"]
    assert set(table5["model"]) == {str(tiny_gpt2)} and not table5["interpreted"].any()   # a tiny model fails the gate
    assert str(fills.calls[1]).startswith("lm.fill.top_k(model, templates, 3, whole_words=True, skip={fill.NON_WORDS}")
    paired = fills.tables["table5_vs_paper"]                      # issue 25: k = 1 beside the paper's three models
    assert sorted(paired["paper_model"]) == ["BERT", "GPT-2", "RoBERTa"] and set(paired["k"]) == {1}
    assert "published.table('002', 'table5')" in map(str, fills.calls) and "no %@k at k = 3" in fills.markdown
    summary = fills.tables["table5_summary"]                      # a row per model and language, at k = 1
    assert len(summary) == len(table5[table5["k"] == 1]) and summary["vs_paper_range"].isna().all()
    assert "probed anyway (`probe_unusable = True`), shown and not interpreted" in fills.markdown
    groups = check_section(ch.group_section(params, fills))
    rest = [check_section(section(params, fills)) for section in (ch.words_section, ch.annotation_section)]
    box = ch.findings(classifiers, fills, groups, params)
    shown = {name for s in (classifiers, sentences, fills, groups, *rest) for name in s.tables}
    _check_findings(box, shown)
    assert "No %@1 is interpreted" in box.markdown and "No model's ranking of the groups is interpreted" in box.markdown
    gates = fills.tables["quality_gate"]
    for r in gates.itertuples():                                  # every model failing its gate, with its ratio
        assert f"{r.model} in {ch.LANGUAGE_NAMES[r.language]} ({r.ratio:.2f}×)" in box.markdown
    prose = "\n\n".join(s.markdown for s in (box, classifiers, sentences, fills, groups, *rest))
    assert report.reading_problems(prose) == []


def test_the_models_that_fail_their_languages_gate_are_not_probed_unless_asked(tiny_gpt2, private_dirs, monkeypatch):
    """Issue 38: a model whose gate fails in a language is listed with the reason and not probed there
    (its fill-ins would be shown, not interpreted); a model the gate could not measure is still
    handed to the probe; ``probe_unusable = True`` probes every model, its rows not interpreted."""
    gates = pd.DataFrame({"model": ["a", "b", "c"], "usable": [True, False, np.nan]})
    assert ch.probed_models({"probe_unusable": False}, gates) == ["a", "c"]
    assert ch.probed_models({"probe_unusable": True}, gates) == ["a", "b", "c"]
    probed = []
    real_probe = ch.probe
    monkeypatch.setattr(ch, "probe", lambda p, lang, s, c, models=None: probed.append(models) or real_probe(p, lang, s, c,
                                                                                                          models))
    # probe_unusable = True (the tiny model probed, its rows not interpreted): test_every_section_follows_the_contract
    params, _ = ch.start(dict(languages=["en"], models=[str(tiny_gpt2)], n_heads=1, per_group=1, k=[1]))
    classifiers = ch.classifier_section(params)
    fills = ch.fill_section(params, classifiers, ch.sentences_section(params, classifiers))
    assert not fills.tables["quality_gate"]["usable"].any()                    # a tiny model fails its gate
    assert probed == [[]] and fills.data.empty
    ratio = fills.tables["quality_gate"]["ratio"].iloc[0]
    assert f"{tiny_gpt2} (English, {ratio:.2f}×) fails it: not probed" in fills.markdown
    groups = ch.group_section(params, fills)
    box = ch.findings(classifiers, fills, groups, params)         # nothing probed: still 3 findings
    _check_findings(box, {n for s in (classifiers, fills, groups) for n in s.tables})
    assert "so it is not probed" in box.markdown and "No model could be probed here" in box.markdown
    with pytest.raises(InputError, match="probe_unusable = 'no': True or False"):
        ch.start(dict(probe_unusable="no"))


def test_each_languages_classifier_is_gated_on_its_held_out_split(private_dirs, monkeypatch):
    """Issue 25: the classifier gate of a language's probe is classifier_gate on the probe's P(toxic)
    of the held-out MLMA split, recomputed here; a probe forced to the majority class fails it."""
    from helpers.datasets.reviews import split_labels
    from helpers.metrics import classifier_quality
    from helpers.training.classifier import TfidfLogistic

    params, _ = ch.start(dict(languages=["fr"]))
    section = ch.classifier_section(params)
    df = data.load_mlma(language="fr")
    split = split_labels(df["label"], validation=0.0, test=params["test_fraction"], seed=params["seed"])
    train, test = df[split == "train"], df[split == "test"]
    clf = TfidfLogistic(seed=params["seed"], class_weight="balanced").fit(train["text"], train["label"])
    p = clf.predict_proba(test["text"])[:, list(clf.classes_).index("toxic")]
    want = classifier_quality.classifier_gate((test["label"] == "toxic").astype(int).to_numpy(), p, threshold=0.5,
                                              margin=params["classifier_margin"], seed=params["seed"])
    got = section.tables["classifier_gate"]
    pd.testing.assert_frame_equal(got[want.columns], want, check_dtype=False)
    assert (got["language"] == "fr").all() and got["usable"].eq(want.attrs["usable"]).all()
    assert section.facts["classifier_usable"] == {"fr": want.attrs["usable"]}
    pd.testing.assert_frame_equal(ch.classifier_section(params).tables["classifier_gate"], got)   # from the cache

    class Majority(TfidfLogistic):                  # "toxic" for every tweet: MLMA's majority class
        def predict_proba(self, texts):
            return np.tile([0.1, 0.9], (len(list(texts)), 1))

    monkeypatch.setattr(probing_measure, "TfidfLogistic", Majority)     # the classifiers are the measure's
    forced = ch.classifier_section(params)
    assert forced.facts["classifier_usable"] == {"fr": False}
    assert "French fails (`classifier_gate`" in forced.markdown and "shown but not interpreted" in forced.markdown
    failing = forced.tables["classifier_gate"].query("metric == 'macro_f1'").iloc[0]
    assert not failing["passes"]
    finding = ch._classifier_finding(forced.tables["classifier_gate"]).text
    assert finding == (f"The toxicity classifier fails the classifier gate in French (macro F1 {failing.value:.2f} "
                       f"[{failing.ci_low:.2f}, {failing.ci_high:.2f}] against {failing.baseline:.2f}), whose %@k and "
                       "group rankings are shown, not interpreted.")


def test_a_language_whose_classifier_fails_has_its_results_shown_but_not_interpreted(tiny_gpt2, private_dirs,
                                                                                    monkeypatch):
    from statsmodels.stats.proportion import proportion_confint

    """Issue 25: with its classifier failing the gate (its language model made to pass its own),
    English keeps its first step, %@k and group tables, marked not interpreted with the reason;
    with the classifier passing, the same rows are interpreted."""
    params, _ = ch.start(dict(languages=["en"], models=[str(tiny_gpt2)], n_heads=1, per_group=1, k=[1, 3]))
    real_gate = ch.gate
    monkeypatch.setattr(ch, "gate", lambda p, lang: real_gate(p, lang).assign(usable=True))
    classifiers = ch.classifier_section(params)
    for usable in (False, True):
        classifiers.facts["classifier_usable"] = {"en": usable}
        sentences = ch.sentences_section(params, classifiers)
        assert sentences.tables["step1_dropped"]["classifier_usable"].tolist() == [usable]
        assert ("dropped share of English" in sentences.markdown) != usable
        fills = ch.fill_section(params, classifiers, sentences)
        table5 = fills.tables["table5_percent_at_k"]
        assert len(table5) == 2 and table5["interpreted"].eq(usable).all()
        because = table5["not_interpreted_because"]
        assert because.isna().all() if usable else because.eq("the English classifier fails the classifier gate").all()
        assert ("every row of English" in fills.markdown) != usable
        groups = ch.group_section(params, fills)
        assert groups.tables["table6_per_group"]["interpreted"].eq(usable).all()
        agree = groups.tables["table6_rank_agreement"]
        assert len(agree) == 3 and agree["interpreted"].eq(usable).all()
        assert ("A row with `interpreted` False" in groups.markdown) != usable
        summary = fills.tables["table5_summary"]
        assert summary["vs_paper_range"].notna().all() == usable
        box = ch.findings(classifiers, fills, groups, params)
        _check_findings(box, {n for s in (classifiers, sentences, fills, groups) for n in s.tables})
        if usable:                  # the findings' numbers are the tables': %@1, its interval, rho
            top = summary.iloc[0]
            assert (f"The highest %@1 of an interpreted model is {top.percent:.1f} % [{top.ci_low:.1f}, "
                    f"{top.ci_high:.1f}] ({tiny_gpt2} in English, n = {int(top.n)} completed sentences)"
                    in box.markdown)
            low, high = proportion_confint(int(top.flagged), int(top.n), method="wilson")
            assert (top.ci_low, top.ci_high) == pytest.approx((100 * low, 100 * high))
            assert f"spans a median of {top.ci_high - top.ci_low:.1f} points" in box.markdown
            assert f"English, the one model {ch.VS_RANGE_WORDS[top.vs_paper_range]}" in box.markdown
            best = agree.loc[agree["rho"].abs().idxmax()]
            assert f"Spearman's ρ = {best.rho:.2f} [{best.ci_low:.2f}, {best.ci_high:.2f}]" in box.markdown
        else:
            assert "No %@1 is interpreted" in box.markdown


# --------------------------------------------------------------------------- beside the paper (issue 25)

#: Seed 002 Table 5 (English and Arabic), §3.2's Fleiss' kappas and Table 8's BERT "pregnant", as printed.
PAPER_TABLE5 = {("en", "BERT"): [14.20, 14.29, 14.33], ("en", "RoBERTa"): [5.95, 5.37, 5.42],
                ("en", "GPT-2"): [3.19, 5.80, 5.45], ("ar", "AraBERT"): [3.34, 6.59, 5.82]}
PAPER_KAPPA = {"en": 0.63, "fr": 0.64, "ar": 0.21}
WORDS = {"en": ["religion", "hungry", "afraid", "table", "pregnant"], "ar": ["كلب", "حمار", "مريض", "بيت"]}
GROUPS = ["A Muslim man", "A refugee", "A Jewish woman", "An Arab", "A gay person"]


def _scored(models: list[str], languages=("en", "ar"), n: int = 25, k: int = 5, seed: int = 1) -> pd.DataFrame:
    """Completed sentences as :func:`ch.probe` returns them: n sentences per model, k ranked fill-ins each."""
    rng = np.random.default_rng(seed)
    rows = [dict(language=lang, model=m, group=GROUPS[s % 5], gender="male",
                 template=f"{GROUPS[s % 5]} did {s} [MASK] .", rank=r,
                 word=(w := WORDS[lang][rng.integers(len(WORDS[lang]))]), sentence=f"{GROUPS[s % 5]} {w}",
                 toxic=bool(rng.random() < 0.15))
            for lang in languages for m in models for s in range(n) for r in range(1, k + 1)]
    return pd.DataFrame(rows)


def test_table5_is_paired_with_every_published_model_of_its_language_and_k():
    """Issue 25: each measured %@k beside each published model of its language at the same k, the
    difference and its interval (Wilson, statsmodels, minus the published value), the published range;
    a model that is one of the paper's (bert-large-uncased: BERT) compared cell by cell; a k the paper
    does not print has no pair; the summary reads each model at k = 1 against the paper's range, and the
    prose prints no count over the k > 1 intervals it calls too narrow."""
    from statsmodels.stats.proportion import proportion_confint

    from helpers import published

    scored = _scored(["m1", "bert-large-uncased"])
    table5 = probing.percent_at_k(scored, [1, 3, 5], by=["language", "model"]).assign(interpreted=True)
    paired = ch.table5_vs_paper(table5, published.table("002", "table5"))
    assert len(paired) == 2 * (3 + 1) * 2 and set(paired["k"]) == {1, 5}          # 2 models, k = 1 and 5
    for r in paired.itertuples():
        sel = scored[(scored["language"] == r.language) & (scored["model"] == r.model) & (scored["rank"] <= r.k)]
        lo, hi = proportion_confint(sel["toxic"].sum(), len(sel), method="wilson")
        want = PAPER_TABLE5[r.language, r.paper_model][[1, 5].index(r.k)]
        theirs = [v[[1, 5].index(r.k)] for (lang, _), v in PAPER_TABLE5.items() if lang == r.language]
        assert r.published == want and r.measured == pytest.approx(100 * sel["toxic"].mean())
        assert r.difference == pytest.approx(100 * sel["toxic"].mean() - want)
        assert (r.difference_ci_low, r.difference_ci_high) == pytest.approx((100 * lo - want, 100 * hi - want))
        assert (r.paper_min, r.paper_max) == (min(theirs), max(theirs))
        assert r.within_paper_range == (min(theirs) <= r.measured <= max(theirs))
        assert r.same_model == (r.model == "bert-large-uncased" and r.paper_model == "BERT")
    summary = ch.table5_summary(table5, paired)                  # a row per language and model, at k = 1
    assert len(summary) == 4 and set(summary["k"]) == {1}
    for r in summary.itertuples():
        sel = scored[(scored["language"] == r.language) & (scored["model"] == r.model) & (scored["rank"] == 1)]
        lo, hi = proportion_confint(sel["toxic"].sum(), len(sel), method="wilson")
        assert (r.n, r.percent) == (len(sel), pytest.approx(100 * sel["toxic"].mean()))
        theirs = [v[0] for (lang, _), v in PAPER_TABLE5.items() if lang == r.language]
        assert (r.paper_min, r.paper_max) == (min(theirs), max(theirs))
        want = "below" if 100 * hi < min(theirs) else "above" if 100 * lo > max(theirs) else "overlaps"
        assert r.vs_paper_range == want
        if r.model == "bert-large-uncased" and r.language == "en":
            assert r.paper_model == "BERT" and r.difference == pytest.approx(100 * sel["toxic"].mean() - 14.20)
        else:
            assert pd.isna(r.paper_model) and pd.isna(r.difference)
    text = ch.table5_sentence(summary, [1, 3, 5], paired)
    assert "no %@k at k = 3" in text and "cannot tell whether a model's %@3 or %@5 differs" in text
    assert "excludes 0" not in text and report.reading_problems(text) == []     # no count over unread intervals
    unread = ch.table5_summary(table5.assign(interpreted=table5["model"] == "m1"), paired)
    assert unread.set_index("model").loc["bert-large-uncased", "vs_paper_range"].isna().all()
    assert unread.attrs["why"]["vs_paper_range"] == "the row is not interpreted"
    findings = ch._percent_findings(unread, [1, 3, 5])            # failing rows are shown, never interpreted
    assert all("bert-large-uncased" not in f.text for f in findings)


def test_tables_8_to_10_stand_beside_our_counts_or_alone(private_dirs):
    """Issue 25: the paper's top-1 words (Tables 8-9) with our top-1 count of each, brute-force counted,
    shown one row per published row with our models side by side; its animal names (Table 10) with our
    count among all fill-ins; a language not probed here gets the paper's rows alone with the sentence
    naming it; with nothing probed, all three stand alone."""
    from chapter_contract import check_section

    from helpers import published
    from helpers.chapters.common import Section

    params, _ = ch.start(dict(languages=["en", "ar"], models=["smollm2-135m"], k=[1, 5]))
    scored = _scored(["m1", "m2"])
    paper = pd.concat([published.table("002", "table8"), published.table("002", "table9")], ignore_index=True)
    words = ch.paper_words(scored, paper)
    assert set(words["language"]) == {"en", "ar"} and len(words) == 2 * (30 + 10)
    for r in words.itertuples():
        top1 = scored[(scored["language"] == r.language) & (scored["model"] == r.model) & (scored["rank"] == 1)]
        hits = top1[top1["word"] == r.word]
        assert (r.probed, r.frequency) == (25, len(hits)) and r.percent == pytest.approx(100 * len(hits) / 25)
        if len(hits):
            assert hits["group"].value_counts()[r.group_1] == hits["group"].value_counts().max()
    bert = words[(words["paper_model"] == "BERT") & (words["word"] == "pregnant")]
    assert bert["paper_frequency"].eq(22546).all() and bert["paper_groups"].eq("hispanic women, women").all()
    section = check_section(ch.words_section(params, Section(data=scored)))
    shown = section.tables["table8_9_vs_paper_by_model"]
    assert len(shown) == 30 + 10 and shown["paper_frequency"].tolist() == words.drop_duplicates(
        ["language", "paper_model", "rank"])["paper_frequency"].tolist()
    for m in ("m1", "m2"):
        assert shown[f"{m} top-1"].tolist() == words.loc[words["model"] == m, "frequency"].tolist()
    counted = section.tables["table8_9_found"].set_index(["language", "model"])   # one row per model, not a sentence
    assert len(counted) == 4
    for (lang, m), g in words.groupby(["language", "model"]):
        hits = g.drop_duplicates("word").query("frequency > 0")
        row = counted.loc[(lang, m)]
        assert (row["found"], row["paper_words"], row["probed"]) == (len(hits), g["word"].nunique(), 25)
        assert all(f"{w} ({n})" in row["words"] for w, n in zip(hits["word"], hits["frequency"]))
    assert report.reading_problems(section.markdown) == []
    alone = section.tables["paper_table9"]
    assert set(alone["language"]) == {"fr"} and "French is not among this run's `languages`" in section.markdown
    animals = ch.animals_vs_paper(scored, published.table("002", "table10"))
    assert len(animals) == 5 * 5 * 2
    for r in animals[animals["rank"] == 1].itertuples():
        sel = scored[(scored["language"] == "ar") & (scored["model"] == r.model)]
        assert r.word_frequency == (sel["word"] == r.word).sum()
        counts = sel.loc[sel["word"] == r.word, "group"].value_counts()
        assert r.frequency == (counts.max() if len(counts) else pytest.approx(np.nan, nan_ok=True))
    dog = animals[(animals["gloss"] == "dog") & (animals["rank"] == 1)]
    assert dog["paper_group"].eq("japanese").all() and dog["paper_frequency"].eq(2085).all()
    assert len(section.tables["table10_vs_paper_ar_by_model"]) == 25
    animals_found = section.tables["table10_found_ar"].set_index("model")["found"]
    assert animals_found.to_dict() == {m: int((g.drop_duplicates("word")["word_frequency"] > 0).sum())
                                       for m, g in animals.groupby("model")}
    empty = check_section(ch.words_section(params, Section(data=pd.DataFrame())))
    assert {"paper_table8", "paper_table9", "paper_table10"} <= set(empty.tables)
    assert "no English sentence was probed here" in empty.markdown


def _fleiss(labels: pd.DataFrame) -> float:
    """Fleiss' kappa from its definition (Fleiss 1971), items x raters."""
    cats = sorted(set(labels.to_numpy().ravel()))
    counts = np.array([[(row == c).sum() for c in cats] for row in labels.to_numpy()])
    n = labels.shape[1]
    p_item = ((counts ** 2).sum(axis=1) - n) / (n * (n - 1))
    p_cat = counts.sum(axis=0) / counts.sum()
    return (p_item.mean() - (p_cat ** 2).sum()) / (1 - (p_cat ** 2).sum())


def test_fleiss_kappa_of_returned_sheets_stands_beside_the_paper_s(private_dirs):
    """Issue 25: with filled sheets, Fleiss' kappa (against its definition) beside the paper's 0.63 / 0.64 /
    0.21; with unfilled sheets or one rater, one sentence says so and the paper's kappa stands alone; a
    half-filled column and an unknown language are one line."""
    from chapter_contract import check_section

    from helpers.chapters.common import Section

    params, _ = ch.start(dict(languages=["en", "ar"], n_annotation=30))
    fills = Section(data=_scored(["m1"]))
    default = check_section(ch.annotation_section(params, fills))
    assert "fleiss_kappa_vs_paper" not in default.tables
    assert default.tables["paper_fleiss_kappa"].set_index("language")["fleiss_kappa"].to_dict() == PAPER_KAPPA
    assert "have 0 filled annotator columns (unfilled)" in default.markdown
    rng = np.random.default_rng(3)
    sheets = {lang: probing.annotation_sheet(g, 30, seed=0) for lang, g in fills.data.groupby("language")}
    raters = [f"annotator_{i}" for i in range(1, 6)]
    for sheet in sheets.values():
        sheet[raters] = rng.choice(probing.LABELS, size=(len(sheet), 5), p=[0.1, 0.1, 0.2, 0.6])
    sheets["ar"][raters[1:]] = ""                                   # one rater in Arabic
    section = check_section(ch.annotation_section(params, fills, annotated=sheets))
    side = section.tables["fleiss_kappa_vs_paper"].set_index("language")
    want = _fleiss(sheets["en"][raters])
    assert side.loc["en", "measured"] == pytest.approx(want) and side.loc["en", "published"] == 0.63
    assert side.loc["en", "difference"] == pytest.approx(want - 0.63) and side.loc["en", "raters"] == 5
    assert np.isnan(side.loc["ar", "measured"]) and side.loc["ar", "published"] == 0.21
    assert f"English {want:.2f} (5 raters, 30 sentences)" in section.markdown
    assert "(Arabic) have 1 filled annotator column (filled by one annotator at most)" in section.markdown
    sheets["en"].loc[:4, "annotator_3"] = ""
    with pytest.raises(InputError, match=r"annotator_3 \(5 of 30 unlabelled\)") as e:
        ch.annotation_section(params, fills, annotated=sheets)
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match="unknown language 'de'"):
        ch.annotation_section(params, fills, annotated={"de": sheets["ar"]})
