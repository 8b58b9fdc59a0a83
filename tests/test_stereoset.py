"""StereoSet SS / LMS / ICAT (helpers.metrics.stereoset) against independent computations."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from helpers.errors import InputError
from helpers.datasets import stereoset as stereoset_data
from helpers.metrics import stereoset as st

REF = Path("/work/shared/data/stereoset")


def _cluster(cid, target, s, a, u, domain="gender"):
    return [{"cluster_id": cid, "target": target, "bias_type": domain, "gold_label": g, "score": v}
            for g, v in (("stereotype", s), ("anti-stereotype", a), ("unrelated", u))]


def test_aggregate_hand_example():
    # term "mother": 2 clusters, term "he": 1 cluster
    rows = (_cluster("c1", "mother", 0.9, 0.5, 0.1)      # pro; both beat unrelated
            + _cluster("c2", "mother", 0.2, 0.6, 0.4)    # anti; stereo loses to unrelated, anti wins
            + _cluster("c3", "he", 0.3, 0.2, 0.25))      # pro; stereo wins, anti loses
    out = st.aggregate(pd.DataFrame(rows)).set_index("domain")
    # by hand: SS per term: mother 50, he 100 -> 75; LMS per term: mother (2+1)/4 = 75, he 1/2 = 50 -> 62.5
    assert out.loc["overall", "ss"] == pytest.approx(75.0)
    assert out.loc["overall", "lms"] == pytest.approx(62.5)
    assert out.loc["overall", "icat"] == pytest.approx(62.5 * 25 / 50)
    assert out.loc["gender", "n_clusters"] == 3 and out.loc["gender", "n_terms"] == 2


def test_aggregate_rejects_incomplete_cluster():
    rows = _cluster("c1", "mother", 0.9, 0.5, 0.1)[:2]
    with pytest.raises(InputError):
        st.aggregate(pd.DataFrame(rows))


@pytest.mark.skipif(not REF.is_dir(), reason="StereoSet reference predictions not available")
@pytest.mark.parametrize("model,fname", [("gpt2", "predictions_gpt2_ModelNSP_GPT2LM.json"),
                                         ("roberta-base", "predictions_roberta-base_ModelNSP_RoBERTaLM.json")])
def test_aggregate_reproduces_official_scores(model, fname):
    """Our aggregation of the upstream per-sentence predictions gives the upstream reported scores."""
    df = stereoset_data.load_intrasentence().merge(stereoset_data.read_predictions(REF / "predictions" / fname), on="sentence_id")
    ours = st.aggregate(df).set_index("domain")
    ref = json.loads((REF / "reference_scores_predictions.json").read_text())[model]["intrasentence"]
    for dom, v in ref.items():
        assert ours.loc[dom, "lms"] == pytest.approx(v["LM Score"], abs=1e-9)
        assert ours.loc[dom, "ss"] == pytest.approx(v["SS Score"], abs=1e-9)
        assert ours.loc[dom, "icat"] == pytest.approx(v["ICAT Score"], abs=1e-9)


def test_gender_dev_set_shape():
    df = stereoset_data.load_intrasentence(domain="gender")
    assert df["cluster_id"].nunique() == 255 and len(df) == 765
    assert set(df["gold_label"]) == {"stereotype", "anti-stereotype", "unrelated"}


def _frame(context, words):
    return pd.DataFrame({"context": [context] * len(words), "template_word": words,
                         "sentence": [context.replace("BLANK", w) for w in words]})


def test_masked_scores_equal_brute_force(tiny_bert, loaded_factory):
    lm = loaded_factory(tiny_bert, "masked")
    tok, model = lm.tokenizer, lm.model
    words = ["women", "unhappiness", "hateful"]          # 1, 3 and 2 WordPiece tokens
    ctx = "i think that BLANK should be treated with respect ."
    df = _frame(ctx, words)
    got = st.score_masked(lm, df, progress=False)
    got_log = st.score_masked(lm, df, aggregate="mean_log_prob", progress=False)
    for w, g, gl in zip(words, got, got_log):
        ids = tok.encode(w, add_special_tokens=False)
        probs = []
        for i in range(len(ids)):                         # reveal first i pieces, mask piece i
            prefix = tok.convert_tokens_to_string(tok.convert_ids_to_tokens(ids[:i]))
            text = ctx.replace("BLANK", prefix + tok.mask_token)
            enc = tok(text, return_tensors="pt")
            pos = (enc["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0]
            with torch.no_grad():
                p = model(**enc).logits[0, pos].softmax(-1)[ids[i]].item()
            probs.append(p)
        assert len(ids) >= 1
        assert g == pytest.approx(np.mean(probs), rel=1e-4)
        assert gl == pytest.approx(np.mean(np.log(probs)), rel=1e-4)


def test_causal_scores_equal_brute_force(tiny_gpt2, loaded_factory):
    lm = loaded_factory(tiny_gpt2, "causal")
    tok, model = lm.tokenizer, lm.model
    df = _frame("the BLANK of some people is not a reason to hate them .", ["unhappiness", "history", "x"])
    got = st.score_causal(lm, df, progress=False)
    for s, g in zip(df["sentence"], got):
        ids = [tok.eos_token_id] + tok.encode(s)
        with torch.no_grad():
            logp = model(torch.tensor([ids])).logits[0].log_softmax(-1)
        lp = [logp[t - 1, ids[t]].item() for t in range(1, len(ids))]
        assert g == pytest.approx(float(np.exp(np.mean(lp))), rel=1e-4)


def test_leading_space_rule_byte_level_bpe(tiny_roberta, tiny_bert, loaded_factory):
    rob = loaded_factory(tiny_roberta, "masked").tokenizer
    ctx = "i think that BLANK should be treated with respect ."
    ids = st.candidate_ids(rob, ctx, "women")
    assert ids == rob.encode(" women", add_special_tokens=False)
    assert ids != rob.encode("women", add_special_tokens=False)
    assert rob.convert_ids_to_tokens(ids)[0].startswith("\u0120")          # the "Ġ" space marker
    # a blank at the very start of the sentence takes the no-space form
    assert st.candidate_ids(rob, "BLANK are just as capable", "women") == rob.encode("women", add_special_tokens=False)
    # the masked inputs hold exactly one space before the candidate (no "that  wo<mask>")
    texts = [t for t, _ in st.masked_inputs(rob, ctx, "unhappiness")]
    assert len(texts) >= 2 and all("  " not in t for t in texts)
    # the second input's tokens = context tokens + first candidate piece + mask + rest
    piece = st.candidate_ids(rob, ctx, "unhappiness")
    enc = rob.encode(texts[1], add_special_tokens=False)
    assert enc == (rob.encode("i think that", add_special_tokens=False) + piece[:1] + [rob.mask_token_id]
                   + rob.encode(" should be treated with respect .", add_special_tokens=False))
    # WordPiece: no space marker, both forms identical
    bert = loaded_factory(tiny_bert, "masked").tokenizer
    assert st.candidate_ids(bert, ctx, "women") == bert.encode("women", add_special_tokens=False)
