"""Classifiers (helpers.training.classifier) against scikit-learn and an uninterrupted run."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from helpers.errors import InputError
from helpers.training import classifier

POS = ["women are just as capable as men in every profession !", "i think that muslims should be treated with respect",
       "jewish families celebrated the holidays together", "immigrants from mexico work hard and pay their taxes"]
NEG = ["the unhappiness of some people is not a reason to hate them .",
       "a reasonable person would never say something so hateful",
       "nobody should be judged by the colour of their skin , ever .", "the rethinking of asian history is fascinating"]


def _data(n=24, seed=0):
    rng = np.random.default_rng(seed)
    rows = [(t, "good") for t in POS] + [(t, "bad") for t in NEG]
    picks = [rows[i] for i in rng.integers(0, len(rows), n)]
    return pd.DataFrame(picks, columns=["text", "label"])


def _weights(path):
    from transformers import AutoModelForSequenceClassification

    return {k: v.clone() for k, v in AutoModelForSequenceClassification.from_pretrained(path).state_dict().items()}


def test_fine_tuning_is_deterministic_resumable_and_keeps_the_best_epoch(tiny_bert, tmp_path, monkeypatch):
    train, val = _data(24, 0), _data(8, 1)
    kw = dict(epochs=3, lr=5e-3, batch_size=4, seed=0, patience=2, checkpoint_every=1000)
    a = classifier.fine_tune(tiny_bert, train, val, out_dir=tmp_path / "a", **kw)
    b = classifier.fine_tune(tiny_bert, train, val, out_dir=tmp_path / "b", **kw)
    assert classifier.fine_tune(tiny_bert, train, val, out_dir=tmp_path / "c", stop_after_steps=4, **kw) is None
    assert not (tmp_path / "c").exists()                                   # killed: nothing final yet
    saved = torch.load(next(tmp_path.glob(".c.training-*/" + classifier.CHECKPOINT)), weights_only=False)
    assert (saved["state"]["epoch"], saved["state"]["step"]) == (0, 4)
    steps = []
    real_step = torch.optim.AdamW.step
    monkeypatch.setattr(torch.optim.AdamW, "step", lambda self, *x, **y: steps.append(1) or real_step(self, *x, **y))
    c = classifier.fine_tune(tiny_bert, train, val, out_dir=tmp_path / "c", **kw)  # resumes from step 4
    monkeypatch.undo()
    epochs_run = len(json.loads((a / "manifest.json").read_text())["history"])
    assert len(steps) == epochs_run * 6 - 4                                 # 24 rows / batch 4 = 6 steps an epoch
    wa, wb, wc = _weights(a), _weights(b), _weights(c)
    assert all(torch.equal(wa[k], wb[k]) and torch.equal(wa[k], wc[k]) for k in wa)
    man = json.loads((a / "manifest.json").read_text())
    f1 = [h["f1_weighted"] for h in man["history"]]
    assert man["best_f1_weighted"] == max(f1) and 1 <= len(f1) <= 3
    stamp = (a / "manifest.json").stat().st_mtime_ns                       # same inputs: reused
    classifier.fine_tune(tiny_bert, train, val, out_dir=a, **kw)
    assert (a / "manifest.json").stat().st_mtime_ns == stamp
    assert json.loads((a / "manifest.json").read_text())["optimizer"] == "adamw-fused"
    monkeypatch.setattr(classifier, "adamw_name", lambda: "adamw")         # another optimizer: trained again
    classifier.fine_tune(tiny_bert, train, val, out_dir=tmp_path / "d", epochs=1, lr=5e-3, batch_size=4, seed=0)
    d_key = json.loads((tmp_path / "d" / "manifest.json").read_text())["key"]
    monkeypatch.undo()
    classifier.fine_tune(tiny_bert, train, val, out_dir=tmp_path / "d", epochs=1, lr=5e-3, batch_size=4, seed=0)
    assert json.loads((tmp_path / "d" / "manifest.json").read_text())["key"] != d_key
    p = classifier.predict_proba(a, val["text"], batch_size=3)
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-9)
    np.testing.assert_allclose(p, classifier.predict_proba(a, val["text"], batch_size=1), atol=1e-6)   # padding


def test_metrics_equal_scikit_learn():
    from sklearn import metrics

    y, p = ["a", "b", "b", "a", "b", "a"], ["a", "b", "a", "a", "b", "b"]
    got = classifier.classification_metrics(y, p).set_index("metric")["value"]
    assert got["accuracy"] == metrics.accuracy_score(y, p)
    assert got["f1"] == metrics.f1_score(y, p, pos_label="b")
    assert got["f1_weighted"] == metrics.f1_score(y, p, average="weighted")
    assert got["precision"] == metrics.precision_score(y, p, pos_label="b")
    three = classifier.classification_metrics([0, 1, 2, 2], [0, 2, 2, 1]).set_index("metric")["value"]
    assert three["f1"] == metrics.f1_score([0, 1, 2, 2], [0, 2, 2, 1], average="macro")


def test_tfidf_logistic_equals_a_direct_scikit_learn_pipeline(tmp_path):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    train, test = _data(40, 2), _data(10, 3)
    ours = classifier.TfidfLogistic(seed=0).fit(train["text"], train["label"])
    ref = make_pipeline(TfidfVectorizer(ngram_range=(1, 2)), LogisticRegression(max_iter=1000, random_state=0))
    ref.fit(train["text"], train["label"])
    np.testing.assert_allclose(ours.predict_proba(test["text"]), ref.predict_proba(test["text"]), atol=1e-12)
    again = classifier.TfidfLogistic.load(ours.save(tmp_path / "lr"))
    np.testing.assert_array_equal(again.predict_proba(test["text"]), ours.predict_proba(test["text"]))


@pytest.mark.parametrize("change,message", [
    (lambda d: d.drop(columns="label"), "no column 'label'"),
    (lambda d: d.assign(label="good"), "one class only"),
    (lambda d: d.assign(text=[""] + d["text"].tolist()[1:]), "row 0 has an empty text"),
])
def test_bad_training_data_is_one_line(tiny_bert, tmp_path, change, message):
    with pytest.raises(InputError, match=message):
        classifier.fine_tune(tiny_bert, change(_data()), _data(4, 1), out_dir=tmp_path / "x")
    bad = change(_data())
    if "label" in bad.columns:
        for clf in (classifier.TfidfLogistic(), classifier.FineTuned(tiny_bert, tmp_path / "y"),
                    classifier.EmbeddingProbe(lambda t: np.ones((len(t), 2)))):
            with pytest.raises(InputError, match=message):
                clf.fit(bad["text"], bad["label"])


# ----------------------------------------------------------------------------- one contract


def _contract(clf, texts, *, empty_is_a_text: bool = True):
    """What every classifier of the package promises (helpers.classifiers.TextClassifier)."""
    from helpers.classifiers import TextClassifier

    p = clf.predict_proba(texts)
    assert isinstance(clf, TextClassifier) and p.shape == (len(texts), len(clf.classes_))
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-9)
    assert clf.predict(texts).tolist() == [clf.classes_[i] for i in p.argmax(axis=1)]
    # fit needs texts; predict takes any string, an empty one too (a generated continuation may
    # be empty), and refuses only what is no text
    if empty_is_a_text:
        assert clf.predict_proba([texts[0], ""]).shape == (2, len(clf.classes_))
    with pytest.raises(InputError, match="row 1 has no text" if empty_is_a_text else "empty text"):
        clf.predict_proba([texts[0], None if empty_is_a_text else ""])
    return p


def test_fine_tuned_follows_the_contract_and_equals_the_folder_s_own_predictions(tiny_bert, tmp_path):
    train, valid, test = _data(24), _data(8, 1), _data(6, 4)["text"].tolist()
    settings = dict(epochs=1, batch_size=8, max_length=32, seed=0)
    clf = classifier.FineTuned(tiny_bert, tmp_path / "ft", **settings).fit(
        train["text"], train["label"], validation=(valid["text"], valid["label"]))
    folder = classifier.fine_tune(tiny_bert, train, valid, out_dir=tmp_path / "ft", **settings)   # reused: same key
    assert clf.folder == folder and clf.classes_ == ["bad", "good"]                                  # sorted labels
    p = _contract(clf, test)
    np.testing.assert_allclose(p, classifier.predict_proba(folder, test, max_length=32), atol=1e-12)
    loaded = classifier.FineTuned.load(folder, max_length=32)
    np.testing.assert_allclose(loaded.predict_proba(test), p, atol=1e-12)
    with pytest.raises(InputError, match="not fitted yet"):
        classifier.FineTuned(tiny_bert, tmp_path / "other").predict_proba(test)


def test_cached_probabilities_are_the_folders_and_keyed_by_what_trained_it(tiny_bert, tmp_path, monkeypatch):
    """A rebuild reads a fine-tuned classifier's probabilities from the cache (no forward pass);
    other texts, another max_length or another training run are computed afresh."""
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    train, valid, test = _data(24), _data(8, 1), _data(6, 4)["text"].tolist()
    clf = classifier.FineTuned(tiny_bert, tmp_path / "ft", epochs=1, batch_size=8, max_length=32, seed=0).fit(
        train["text"], train["label"], validation=(valid["text"], valid["label"]))
    first = clf.cached_predict_proba(test)
    np.testing.assert_array_equal(first, classifier.predict_proba(clf.folder, test, max_length=32))
    calls = []
    real = classifier.predict_proba
    monkeypatch.setattr(classifier, "predict_proba", lambda *a, **k: calls.append(1) or real(*a, **k))
    np.testing.assert_array_equal(clf.cached_predict_proba(test), first)
    assert calls == []                                                     # read, not computed
    clf.cached_predict_proba(test[:3])
    classifier.FineTuned.load(clf.folder, max_length=16).cached_predict_proba(test)
    assert len(calls) == 2
    other = classifier.FineTuned(tiny_bert, tmp_path / "ft2", epochs=1, batch_size=8, max_length=32, seed=1).fit(
        train["text"], train["label"], validation=(valid["text"], valid["label"]))
    calls.clear()                                                          # training predicts its validation split
    other.cached_predict_proba(test)
    assert len(calls) == 1
    with pytest.raises(InputError, match="not fitted yet"):
        classifier.FineTuned(tiny_bert, tmp_path / "none").cached_predict_proba(test)


def test_embedding_probe_equals_a_scaled_balanced_logistic_regression(tiny_gpt2, loaded_factory):
    """Chapter 06's probe: StandardScaler + LogisticRegression(class_weight="balanced") on the
    model's mean-pooled sentence embeddings, fitted by hand with scikit-learn."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from helpers.lm import embeddings

    lm = loaded_factory(tiny_gpt2, "causal")
    embed = lambda t: embeddings.sentence_embeddings(lm, list(t), pooling="mean")  # noqa: E731
    train, test = _data(30, 5), _data(8, 6)["text"].tolist()
    probe = classifier.EmbeddingProbe(embed).fit(train["text"], train["label"])
    ref = make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=2000))
    ref.fit(embed(train["text"]), train["label"])
    np.testing.assert_allclose(_contract(probe, test, empty_is_a_text=False), ref.predict_proba(embed(test)), atol=1e-10)


def test_tfidf_logistic_follows_the_contract():
    train = _data(40, 2)
    _contract(classifier.TfidfLogistic(seed=0).fit(train["text"], train["label"]), _data(6, 3)["text"].tolist())


def test_bad_settings_and_unseen_validation_labels_are_one_line(tiny_bert, tmp_path):
    with pytest.raises(InputError, match="epochs = 0"):
        classifier.fine_tune(tiny_bert, _data(), _data(4, 1), out_dir=tmp_path / "x", epochs=0)
    with pytest.raises(InputError, match="lr = -1"):
        classifier.fine_tune(tiny_bert, _data(), _data(4, 1), out_dir=tmp_path / "x", lr=-1)
    with pytest.raises(InputError, match=r"label\(s\) \['ugly'\]"):
        classifier.fine_tune(tiny_bert, _data(), _data(4, 1).assign(label="ugly"), out_dir=tmp_path / "x")


def test_balanced_class_weights_equal_scikit_learns_and_change_training(tiny_bert, tmp_path):
    from sklearn.utils.class_weight import compute_class_weight

    y = np.array([0] * 18 + [1] * 6)
    expected = compute_class_weight("balanced", classes=np.array([0, 1]), y=y)
    np.testing.assert_allclose(classifier.balanced_weights(y, 2).numpy(), expected, rtol=1e-6)
    train = pd.DataFrame({"text": (POS * 5)[:18] + (NEG * 2)[:6], "label": ["good"] * 18 + ["bad"] * 6})
    kw = dict(epochs=1, lr=5e-3, batch_size=4, seed=0)
    plain = classifier.fine_tune(tiny_bert, train, _data(8, 1), out_dir=tmp_path / "plain", **kw)
    weighted = classifier.fine_tune(tiny_bert, train, _data(8, 1), out_dir=tmp_path / "w", class_weight="balanced", **kw)
    assert json.loads((weighted / "manifest.json").read_text())["class_weight"] == "balanced"
    assert not all(torch.equal(a, b) for a, b in zip(_weights(plain).values(), _weights(weighted).values()))
    with pytest.raises(InputError, match="class_weight"):
        classifier.fine_tune(tiny_bert, train, _data(8, 1), out_dir=tmp_path / "x", class_weight="auto")


def test_a_folder_whose_weights_change_is_trained_again_and_a_causal_lm_gets_a_pad_token(tiny_gpt2, tmp_path):
    """The cache key holds the encoder's weights, not its path; GPT-2 (no pad token) fine-tunes."""
    import shutil

    from transformers import AutoModelForCausalLM

    enc = tmp_path / "enc"
    shutil.copytree(tiny_gpt2, enc)
    train, val = _data(16, 0), _data(8, 1)
    kw = dict(epochs=1, lr=5e-3, batch_size=4, seed=0)
    out = classifier.fine_tune(enc, train, val, out_dir=tmp_path / "clf", **kw)
    first = json.loads((out / "manifest.json").read_text())
    p = classifier.predict_proba(out, val["text"], batch_size=3)
    np.testing.assert_allclose(p, classifier.predict_proba(out, val["text"], batch_size=1), atol=1e-5)
    model = AutoModelForCausalLM.from_pretrained(enc)
    with torch.no_grad():
        for w in model.parameters():
            w.mul_(1.5)
    model.save_pretrained(enc)
    classifier.fine_tune(enc, train, val, out_dir=tmp_path / "clf", **kw)
    second = json.loads((out / "manifest.json").read_text())
    assert first["encoder"]["tokenizer"] == second["encoder"]["tokenizer"]
    assert first["encoder"]["weights"] != second["encoder"]["weights"] and first["key"] != second["key"]


def test_adamw_is_the_per_tensor_update_with_the_fused_kernel():
    """helpers.training.adamw: the fused kernel where torch has one (torch 2.13 on CPU does), the same
    parameters after 5 steps as torch's per-tensor AdamW loop up to float32 rounding; the name in the
    cache keys of what it trains says which."""
    from helpers import training

    assert training.fused_adamw_available() and training.adamw_name() == "adamw-fused"
    torch.manual_seed(0)
    start = [torch.randn(7, 5), torch.randn(5)]
    grads = [[torch.randn_like(p) for p in start] for _ in range(5)]
    after = {}
    for kind in ("loop", "ours"):
        params = [p.clone().requires_grad_() for p in start]
        opt = torch.optim.AdamW(params, lr=1e-2, foreach=False) if kind == "loop" else training.adamw(params, lr=1e-2)
        assert bool(opt.defaults["fused"]) is (kind == "ours")
        for step in grads:
            for p, g in zip(params, step):
                p.grad = g.clone()
            opt.step()
        after[kind] = [p.detach() for p in params]
    for a, b, s in zip(after["loop"], after["ours"], start):
        assert not torch.equal(a, s)
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
