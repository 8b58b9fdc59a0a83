"""Chapter 07 (seed 002): parameters, the first step and the sample, bad input as one line."""

from __future__ import annotations

import pandas as pd
import pytest

from helpers.chapters import ch07_probing as ch
from helpers.errors import InputError
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
    (dict(k=[0, 5]), "positive integers"), (dict(test_fraction=1.5), "test_fraction"),
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
    from helpers.datasets import probing as data

    patterns = pd.DataFrame({"language": ["en"], "head_id": [0], "pattern_id": [1], "pattern": ["PersonX sleeps ."]})
    sentences = probing.build_sentences(patterns, data.load_groups(language="en"))
    from helpers.lm import cloze

    with pytest.raises(InputError, match="exactly one blank"):
        cloze.check_templates(sentences["template"].tolist())
    with pytest.raises(InputError, match="no rows"):
        probing.build_sentences(patterns, pd.DataFrame(columns=["gender", "group"]))
