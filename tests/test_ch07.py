"""Chapter 07 (seed 002): parameters, the first step and the sample, bad input as one line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from helpers.chapters import ch07_probing as ch
from helpers.datasets import probing as data
from helpers.errors import InputError
from helpers.lm import fill
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


def test_every_section_follows_the_contract(tiny_gpt2, private_dirs):
    """Each section is a Section whose key call names a real function; the counts the prose states
    are its facts, and the probed sentences, the fill-ins and the tables are what later sections get."""
    from chapter_contract import check_section

    params, _ = ch.start(dict(languages=["en"], models=[str(tiny_gpt2)], n_heads=1, per_group=1, k=[1, 3]))
    classifiers = check_section(ch.classifier_section(params))
    sentences = check_section(ch.sentences_section(params, classifiers))
    assert sentences.facts["sentences"] == {"en": 378} and sentences.facts["probed"] == {"en": len(sentences.data["en"])}
    fills = check_section(ch.fill_section(params, classifiers, sentences))
    table5 = fills.tables["table5_percent_at_k"]
    assert set(table5["model"]) == {str(tiny_gpt2)} and not table5["interpreted"].any()   # a tiny model fails the gate
    assert str(fills.calls[1]).startswith("lm.fill.top_k(model, templates, 3, whole_words=True, skip={fill.NON_WORDS}")
    for section in (ch.group_section, ch.words_section, ch.annotation_section):
        check_section(section(params, fills))


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

    class Majority(TfidfLogistic):                  # "toxic" for every tweet: MLMA's majority class
        def predict_proba(self, texts):
            return np.tile([0.1, 0.9], (len(list(texts)), 1))

    monkeypatch.setattr(ch, "TfidfLogistic", Majority)
    forced = ch.classifier_section(params)
    assert forced.facts["classifier_usable"] == {"fr": False}
    assert "French fails (" in forced.markdown and "shown but not interpreted" in forced.markdown


def test_a_language_whose_classifier_fails_has_its_results_shown_but_not_interpreted(tiny_gpt2, private_dirs,
                                                                                    monkeypatch):
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
        assert (f"{tiny_gpt2} (English)" in groups.markdown) != usable
