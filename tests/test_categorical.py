"""Categorical bias score (Ahn & Oh 2021) against one forward pass per (sentence, target) and
plain statistics.variance; the ethnic-bias templates and their plurals."""

from __future__ import annotations

import statistics

import pandas as pd
import pytest
import torch

from helpers.datasets import ethnic, registry
from helpers.errors import DataNotFoundError, InputError
from helpers.metrics import categorical

TABLE = pd.DataFrame([(0, "respect", "respect", "people from [MASK] deserve respect ."),
                      (0, "kindness", "kindness", "people from [MASK] deserve kindness ."),
                      (1, "history", "history", "the history of [MASK] is fascinating"),
                      (1, "debate", "debate", "the debate of [MASK] is fascinating")],
                     columns=["template_id", "attribute", "attribute_form", "sentence"])
TARGETS = ["mexico", "immigrants", "asian", "women"]            # "immigrants": two word pieces


def _log_prob(model, tok, sentence, target, masked_word=None):
    """Joint log-probability of the target's pieces at their masks, one forward pass; the
    attribute (``masked_word``) replaced by one mask per piece for the prior."""
    pieces = tok(target, add_special_tokens=False)["input_ids"]
    prefix, suffix = sentence.split("[MASK]")
    if masked_word:
        masks = " ".join([tok.mask_token] * len(tok(masked_word, add_special_tokens=False)["input_ids"]))
        prefix, suffix = prefix.replace(masked_word, masks), suffix.replace(masked_word, masks)
    ids = tok(prefix + " ".join([tok.mask_token] * len(pieces)) + suffix, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids).logits[0].double(), -1)
    first = 1 + len(tok(prefix, add_special_tokens=False)["input_ids"])        # after [CLS]
    return float(sum(logp[first + k, p] for k, p in enumerate(pieces)))


def test_cb_score_equals_brute_force(tiny_bert, loaded_factory):
    lm = loaded_factory(tiny_bert, "masked")
    scores = categorical.normalized_log_probs(lm, TABLE, TARGETS, cache=False, progress=False)
    assert len(scores) == len(TABLE) * len(TARGETS)
    variances = {}
    for row in TABLE.itertuples():
        values = [_log_prob(lm.model, lm.tokenizer, row.sentence, t)
                  - _log_prob(lm.model, lm.tokenizer, row.sentence, t, row.attribute_form) for t in TARGETS]
        got = scores[scores.sentence == row.sentence]["normalized_log_prob"].tolist()
        assert got == pytest.approx(values, abs=1e-5)
        variances.setdefault(row.template_id, []).append(statistics.variance(values))
    cb = categorical.categorical_bias_score(scores).set_index("template_id")["cb"]
    per_template = {k: statistics.fmean(v) for k, v in variances.items()}
    assert cb[0] == pytest.approx(per_template[0], abs=1e-5) and cb[1] == pytest.approx(per_template[1], abs=1e-5)
    assert cb["all"] == pytest.approx(statistics.fmean(per_template.values()), abs=1e-5)
    pop = categorical.categorical_bias_score(scores, ddof=0).set_index("template_id")["cb"]
    assert pop["all"] == pytest.approx(cb["all"] * (len(TARGETS) - 1) / len(TARGETS), rel=1e-9)


def test_bad_input_is_one_line(tiny_bert, loaded_factory):
    lm = loaded_factory(tiny_bert, "masked")
    with pytest.raises(InputError, match="at least two targets"):
        categorical.normalized_log_probs(lm, TABLE, ["mexico"], cache=False)
    with pytest.raises(InputError, match="missing column"):
        categorical.normalized_log_probs(lm, TABLE.drop(columns="attribute_form"), TARGETS, cache=False)
    with pytest.raises(InputError, match="ddof"):
        categorical.categorical_bias_score(pd.DataFrame(), ddof=2)


def test_english_templates_attributes_and_plurals():
    try:
        registry.path("ethnic-bias")
    except DataNotFoundError as exc:
        pytest.skip(str(exc))
    df = ethnic.load_ethnic_bias()
    assert len(df) == 10 * 70 and df["template_id"].nunique() == 10
    plural = df[df.template.str.contains(r"\[AAAs\]", regex=True)]
    forms = dict(zip(plural.attribute, plural.attribute_form))
    assert forms["bank teller"] == "bank tellers" and forms["secretary"] == "secretaries" and forms["spy"] == "spies"
    assert (df["sentence"].str.count(r"\[MASK\]") == 1).all()
    assert "People from [MASK] are refugees." in set(df["sentence"])
    assert len(ethnic.targets("en")) == 35 and "north korea" in ethnic.targets()
    with pytest.raises(InputError, match="transcribed for en only"):
        ethnic.load_ethnic_bias(language="fr")
