"""BEC-Pro log-probability bias against one hand-built forward pass per sentence (the person
and, for the prior, the profession replaced by one mask per word piece), and the pairing /
Wilcoxon layer against plain scipy."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from helpers.errors import InputError
from helpers.metrics import logprob_bias as lpb

PATTERNS = ["[MASK] is a {}.", "[MASK] works as a {}."]
PROFESSIONS = [("taper", "male"), ("steel worker", "male"), ("nurse", "female")]
PERSONS = [("He", "male"), ("She", "female"), ("man", "male"), ("woman", "female")]


def _bec() -> pd.DataFrame:
    rows = [{"template": p.format(prof), "person": person, "gender": g, "profession": prof,
             "profession_gender": pg, "pattern": p}
            for (prof, pg), p, (person, g) in itertools.product(PROFESSIONS, PATTERNS, PERSONS)]
    return pd.DataFrame(rows)


def _brute(model, tok, template: str, person: str, profession: str, prior: bool) -> float:
    person_ids = tok(person, add_special_tokens=False)["input_ids"]
    text = template.replace("[MASK]", " ".join([tok.mask_token] * len(person_ids)))
    if prior:
        n = len(tok(profession, add_special_tokens=False)["input_ids"])
        text = text.replace(profession, " ".join([tok.mask_token] * n))
    ids = tok(text, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids).logits[0].double(), -1)
    first = ids[0].tolist().index(tok.mask_token_id)               # the person's masks come first
    return float(sum(logp[first + k, t] for k, t in enumerate(person_ids)))


def test_associations_equal_one_forward_pass_per_sentence(tiny_bert, loaded_factory):
    loaded = loaded_factory(tiny_bert, "masked")
    bec = _bec()
    got = lpb.bec_pro_associations(loaded, bec, cache=False, progress=False)
    for row in got.itertuples():
        lp = _brute(loaded.model, loaded.tokenizer, row.template, row.person, row.profession, prior=False)
        prior = _brute(loaded.model, loaded.tokenizer, row.template, row.person, row.profession, prior=True)
        assert row.log_prob == pytest.approx(lp, abs=1e-5)
        assert row.prior_log_prob == pytest.approx(prior, abs=1e-5)
        assert row.association == pytest.approx(lp - prior, abs=1e-5)


def test_pairs_and_wilcoxon_per_group():
    rng = np.random.default_rng(1)
    bec = _bec()
    bec["association"] = rng.normal(size=len(bec)) + np.where(bec["gender"] == "female", 0.5, 0.0)
    pairs = lpb.gender_pairs(bec)
    assert len(pairs) == len(bec) // 2 and set(zip(pairs.male_person, pairs.female_person)) == {("He", "She"), ("man", "woman")}
    table = lpb.paired_gender_test(bec).set_index("group")
    for group, part in [("female", pairs[pairs.profession_gender == "female"]), ("all", pairs)]:
        res = stats.wilcoxon(part["female"], part["male"])
        assert table.loc[group, "statistic"] == pytest.approx(res.statistic)
        assert table.loc[group, "n_pairs"] == len(part)
        assert table.loc[group, "mean_difference"] == pytest.approx((part["female"] - part["male"]).mean())
    assert list(table.index) == ["female", "male", "all"]


def test_unpaired_or_unknown_person_is_one_line():
    bec = _bec().assign(association=0.0)
    with pytest.raises(InputError, match="male and female version"):
        lpb.gender_pairs(bec[bec["person"] != "She"])
    with pytest.raises(InputError, match="not a BEC-Pro person word"):
        lpb.gender_pairs(bec.assign(person="cousin"))
    with pytest.raises(InputError, match="missing column"):
        lpb.bec_pro_associations(None, bec.drop(columns="pattern"))


def test_profession_missing_from_its_sentence_is_one_line(tiny_bert, loaded_factory):
    loaded = loaded_factory(tiny_bert, "masked")
    bad = _bec().head(2).assign(profession="pilot")
    with pytest.raises(InputError, match="'pilot' does not occur"):
        lpb.bec_pro_associations(loaded, bad, cache=False, progress=False)


ILPS_PHRASES = {"women": "women", "muslims": "muslims", "black": "black people"}
ILPS_ATTRIBUTES = ["capable", "unhappiness", "hateful"]                  # multi-token pieces included


def _brute_ilps_masked(model, tok, phrase: str, attribute: str, prior: bool) -> float:
    attr_ids = tok(attribute, add_special_tokens=False)["input_ids"]
    group = " ".join([tok.mask_token] * len(tok(phrase, add_special_tokens=False)["input_ids"])) if prior else phrase
    ids = tok(f"The {group} is {' '.join([tok.mask_token] * len(attr_ids))}.", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids).logits[0].double(), -1)
    last = [i for i, t in enumerate(ids[0].tolist()) if t == tok.mask_token_id][-len(attr_ids):]
    return float(sum(logp[p, t] for p, t in zip(last, attr_ids)))


def _brute_ilps_causal(model, tok, phrase: str, attribute: str) -> float:
    ctx = tok(f"The {phrase} is")["input_ids"]
    cand = tok(" " + attribute, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.as_tensor([ctx + cand])).logits[0].double(), -1)
    return float(sum(logp[len(ctx) - 1 + k, t] for k, t in enumerate(cand)))


def test_ilps_of_a_masked_lm_is_kuritas_ratio_with_the_group_masked(tiny_bert, loaded_factory):
    lm = loaded_factory(tiny_bert, "masked")
    got = lpb.ilps(lm, ILPS_PHRASES, ILPS_ATTRIBUTES, cache=False, progress=False)
    assert len(got) == 9 and list(got["group"].unique()) == list(ILPS_PHRASES)
    for r in got.itertuples():
        lp = _brute_ilps_masked(lm.model, lm.tokenizer, r.phrase, r.attribute, prior=False)
        prior = _brute_ilps_masked(lm.model, lm.tokenizer, r.phrase, r.attribute, prior=True)
        assert (r.log_prob, r.prior_log_prob, r.ilps) == (pytest.approx(lp, abs=1e-5), pytest.approx(prior, abs=1e-5),
                                                          pytest.approx(lp - prior, abs=1e-5))


def test_ilps_of_a_causal_lm_is_the_next_word_ratio_against_a_person(tiny_gpt2, loaded_factory):
    lm = loaded_factory(tiny_gpt2, "causal")
    got = lpb.ilps(lm, ILPS_PHRASES, ILPS_ATTRIBUTES, cache=False, progress=False)
    assert set(got["method"]) == {"next-token"}
    for r in got.itertuples():
        lp = _brute_ilps_causal(lm.model, lm.tokenizer, r.phrase, r.attribute)
        prior = _brute_ilps_causal(lm.model, lm.tokenizer, "person", r.attribute)
        assert (r.log_prob, r.ilps) == (pytest.approx(lp, abs=1e-5), pytest.approx(lp - prior, abs=1e-5))
    means = lpb.ilps_groups(got, {"neg": ["unhappiness"], "all": ILPS_ATTRIBUTES})
    women = got[got.group == "women"]
    assert means.set_index(["group", "attribute_set"]).loc[("women", "all"), "ilps"] == pytest.approx(women.ilps.mean())
    assert means.set_index(["group", "attribute_set"]).loc[("black", "neg"), "n"] == 1


def test_ilps_bad_input_is_one_line(tiny_gpt2, loaded_factory):
    lm = loaded_factory(tiny_gpt2, "causal")
    with pytest.raises(InputError, match="phrases must map"):
        lpb.ilps(lm, {"women": " "}, ["capable"])
    with pytest.raises(InputError, match="one \\{\\} \\(the group\\)"):
        lpb.ilps(lm, ILPS_PHRASES, ["capable"], template="The group is [MASK].")
    with pytest.raises(InputError, match="no scored attribute"):
        lpb.ilps_groups(lpb.ilps(lm, ILPS_PHRASES, ["capable"], cache=False, progress=False), {"toxic": ["stupid"]})
