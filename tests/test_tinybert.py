"""TinyBERT distillation: captured attention scores against transformers' own attention
probabilities, the losses against independent formulas, and a tiny end-to-end run that is
deterministic, resumable bit for bit and reused when nothing changed."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from scipy import special, stats

from helpers.errors import InputError
from helpers.training import classifier, tinybert

from test_classifier import _data, _weights

SMALL = {"num_hidden_layers": 2, "hidden_size": 16, "num_attention_heads": 2, "intermediate_size": 32}


def test_layer_map_is_uniform():
    assert tinybert.layer_map(12, 4) == [3, 6, 9, 12]          # TinyBERT-4 from BERT-base
    assert tinybert.layer_map(6, 4) == [2, 3, 5, 6]            # from MiniLM-L6
    assert tinybert.layer_map(4, 4) == [1, 2, 3, 4]
    with pytest.raises(InputError, match="cannot map"):
        tinybert.layer_map(4, 6)


def test_captured_scores_are_the_logits_of_transformers_attention(tiny_bert):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_bert, num_labels=2, attn_implementation="eager")
    model.eval()
    enc = tok(["women are capable", "the reasonable person would never say that"], padding=True, return_tensors="pt")
    with torch.no_grad():
        _, _, scores = tinybert._forward(model, enc, "scores")
        probs = model(**enc, output_attentions=True).attentions
    assert len(scores) == len(probs) == model.config.num_hidden_layers
    keep = enc["attention_mask"][:, None, None, :].bool()
    for s, p in zip(scores, probs):
        assert (s.masked_select(~keep.expand_as(s)) == 0).all()           # masked keys are 0, as TinyBERT's code
        soft = torch.softmax(s.masked_fill(~keep, float("-inf")), dim=-1)
        torch.testing.assert_close(soft, p, atol=1e-6, rtol=1e-5)


def test_prediction_loss_is_cross_entropy_of_softened_distributions():
    rng = np.random.default_rng(0)
    s, t = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    for temperature in (1.0, 2.5):
        p = special.softmax(t / temperature, axis=1)
        q = special.softmax(s / temperature, axis=1)
        expected = np.mean([stats.entropy(p[i]) + stats.entropy(p[i], q[i]) for i in range(5)])   # H(p) + KL(p||q)
        got = tinybert.prediction_loss(torch.tensor(s), torch.tensor(t), temperature)
        assert float(got) == pytest.approx(expected, rel=1e-10)


def test_intermediate_loss_vanishes_for_a_copy_and_counts_each_part():
    torch.manual_seed(0)
    hidden = [torch.randn(2, 5, 8) for _ in range(5)]
    attn = [torch.randn(2, 2, 5, 5) for _ in range(4)]
    identity = torch.nn.Linear(8, 8)
    with torch.no_grad():
        identity.weight.copy_(torch.eye(8))
        identity.bias.zero_()
    loss, parts = tinybert.intermediate_loss(hidden, hidden, attn, attn, identity, [1, 2, 3, 4])
    assert loss.item() == 0.0
    shifted = [h + 1 for h in hidden]                        # every element off by 1: each MSE is exactly 1
    student_hidden, student_attn = [hidden[0], hidden[2], hidden[4]], [attn[1], attn[3]]   # teacher layers 2 and 4
    loss, parts = tinybert.intermediate_loss(student_hidden, shifted, student_attn, [a + 2 for a in attn], identity,
                                             [2, 4])
    assert parts == pytest.approx({"embedding": 1.0, "hidden": 2.0, "attention": 8.0})
    assert float(loss) == pytest.approx(11.0)


@pytest.fixture(scope="module")
def teacher(tiny_bert, tmp_path_factory):
    out = tmp_path_factory.mktemp("teacher") / "clf"
    return classifier.fine_tune(tiny_bert, _data(24, 0), _data(8, 1), out_dir=out, epochs=2, lr=5e-3,
                                batch_size=4, seed=0, patience=2)


def test_distillation_is_deterministic_resumable_and_reused(teacher, tmp_path, monkeypatch):
    train, val = _data(24, 0), _data(8, 1)
    kw = dict(shape=SMALL, intermediate_epochs=1, prediction_epochs=2, general_texts=train["text"].tolist()[:8],
              lr=5e-3, batch_size=4, seed=0, checkpoint_every=1000)
    a = tinybert.distill_classifier(teacher, train, val, out_dir=tmp_path / "a", **kw)
    assert tinybert.distill_classifier(teacher, train, val, out_dir=tmp_path / "c", stop_after_steps=9, **kw) is None
    saved = torch.load(next(tmp_path.glob(".c.distilling-*/" + classifier.CHECKPOINT)), weights_only=False)
    assert (saved["state"]["stage"], saved["state"]["step"]) == (2, 1)   # 2 general + 6 intermediate steps, 1 more
    c = tinybert.distill_classifier(teacher, train, val, out_dir=tmp_path / "c", **kw)
    wa, wc = _weights(a), _weights(c)
    assert all(torch.equal(wa[k], wc[k]) for k in wa)
    man = json.loads((a / "manifest.json").read_text())
    assert man["mapping"] == [1, 2] and man["shape"]["hidden_size"] == 16
    assert man["parameters"]["student"] < man["parameters"]["teacher"]
    assert man["best_f1_weighted"] == max(h["f1_weighted"] for h in man["history"])
    stamp = (a / "manifest.json").stat().st_mtime_ns
    tinybert.distill_classifier(teacher, train, val, out_dir=a, **kw)
    assert (a / "manifest.json").stat().st_mtime_ns == stamp
    changed = tinybert.distill_classifier(teacher, train, val, out_dir=tmp_path / "d", **{**kw, "temperature": 2.0})
    assert json.loads((changed / "manifest.json").read_text())["key"] != man["key"]


def test_the_best_epoch_follows_the_selection_metric_and_keys_the_student(teacher, tmp_path):
    """metric="f1_macro" (chapter 05 on MLMA) keeps the epoch with the highest macro F1 of its own
    history, computed again here with scikit-learn; a student chosen by another metric is not reused."""
    from sklearn.metrics import f1_score

    train, val = _data(24, 0), _data(8, 1)
    kw = dict(shape=SMALL, intermediate_epochs=0, prediction_epochs=3, lr=5e-3, batch_size=4, seed=0)
    weighted = tinybert.distill_classifier(teacher, train, val, out_dir=tmp_path / "w", **kw)
    macro = tinybert.distill_classifier(teacher, train, val, out_dir=tmp_path / "m", metric="f1_macro", **kw)
    mw, mm = (json.loads((d / "manifest.json").read_text()) for d in (weighted, macro))
    assert mm["key"] != mw["key"] and mm["metric"] == "f1_macro" and "metric" not in mw
    assert mm["best_f1_macro"] == max(h["f1_macro"] for h in mm["history"]) and "best_f1_weighted" not in mm
    student = classifier.FineTuned.load(macro, max_length=128)
    pred = np.asarray(student.classes_)[student.predict_proba(val["text"]).argmax(1)]
    assert f1_score(val["label"].astype(str), pred, average="macro") == pytest.approx(mm["best_f1_macro"])
    with pytest.raises(InputError, match="unknown metric 'auc'"):
        tinybert.distill_classifier(teacher, train, val, out_dir=tmp_path / "x", metric="auc", **kw)


def test_student_moves_towards_the_teacher(teacher, tmp_path):
    train, val = _data(24, 0), _data(8, 1)
    kw = dict(shape=SMALL, intermediate_epochs=0, lr=5e-3, batch_size=4, seed=0)
    p_teacher = classifier.predict_proba(teacher, train["text"])

    def loss(epochs):
        out = tinybert.distill_classifier(teacher, train, val, out_dir=tmp_path / f"e{epochs}",
                                          prediction_epochs=epochs, **kw)
        q = classifier.predict_proba(out, train["text"])
        return float(np.mean(-(p_teacher * np.log(q)).sum(1)))

    assert loss(6) < loss(0) - 1e-3


@pytest.mark.parametrize("change, message", [
    ({"attention": "softmax"}, "attention must be"), ({"temperature": 0}, "temperature must be positive"),
    ({"prediction_epochs": -1}, "prediction_epochs"), ({"shape": {**SMALL, "hidden_size": 15}}, "not a multiple")])
def test_bad_settings_are_one_line(teacher, tmp_path, change, message):
    with pytest.raises(InputError, match=message):
        tinybert.distill_classifier(teacher, _data(8), _data(4, 1), out_dir=tmp_path / "x", **change)


def test_bad_teacher_or_labels_are_one_line(teacher, tmp_path):
    with pytest.raises(InputError, match="no fine-tuned classifier"):
        tinybert.distill_classifier(tmp_path, _data(8), _data(4, 1), out_dir=tmp_path / "x")
    bad = _data(8).assign(label="ugly")
    with pytest.raises(InputError, match="not among the teacher's labels"):
        tinybert.distill_classifier(teacher, bad, _data(4, 1), out_dir=tmp_path / "x")


def test_pruned_init_of_the_teachers_own_shape_is_the_teacher(teacher):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    t_model = AutoModelForSequenceClassification.from_pretrained(teacher).eval()
    tok = AutoTokenizer.from_pretrained(teacher)
    c = t_model.config
    cfg = tinybert.student_config(c, num_hidden_layers=c.num_hidden_layers, hidden_size=c.hidden_size,
                                  num_attention_heads=c.num_attention_heads, intermediate_size=c.intermediate_size)
    same = tinybert.pruned_student(t_model, cfg, tok, _data(24)["text"].tolist(), [1, 2], max_length=16).eval()
    enc = tok(_data(6, 2)["text"].tolist(), padding=True, return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(same(**enc).logits, t_model(**enc).logits, atol=1e-6, rtol=1e-6)
    with pytest.raises(InputError, match="keeps the teacher's 2 heads"):
        tinybert.pruned_student(t_model, tinybert.student_config(c, **{**SMALL, "num_attention_heads": 4}), tok,
                                _data(24)["text"].tolist(), [1, 2])


def test_general_student_init_from_a_folder_and_its_checks(teacher, tmp_path):
    from transformers import AutoModelForSequenceClassification, BertForSequenceClassification

    t_model = AutoModelForSequenceClassification.from_pretrained(teacher)
    general = tmp_path / "general"
    torch.manual_seed(3)
    BertForSequenceClassification(tinybert.student_config(t_model.config, **SMALL)).save_pretrained(general)
    out = tinybert.distill_classifier(teacher, _data(8), _data(4, 1), out_dir=tmp_path / "s", shape=SMALL,
                                      init=str(general), intermediate_epochs=0, prediction_epochs=0)
    start = _weights(general)
    got = _weights(out)
    assert torch.equal(got["bert.encoder.layer.0.attention.self.query.weight"],
                       start["bert.encoder.layer.0.attention.self.query.weight"])    # no step taken: the init
    with pytest.raises(InputError, match="has shape"):
        tinybert.distill_classifier(teacher, _data(8), _data(4, 1), out_dir=tmp_path / "t",
                                    shape={**SMALL, "intermediate_size": 48}, init=str(general))
