"""Hidden-width (residual channel and head dimension) pruning of BERT: keeping everything is the
teacher, the kept weights are the hand-picked slices, the student reloads, and the importance
equals a brute-force pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, BertConfig, BertForSequenceClassification

from helpers.errors import InputError
from helpers.training import prune


def _bert(seed=0):
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=60, hidden_size=24, num_hidden_layers=2, num_attention_heads=3, intermediate_size=40,
                     max_position_embeddings=32, num_labels=2, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return BertForSequenceClassification(cfg).eval()


def _calibration(n=6, length=10):
    return torch.randint(5, 60, (n, length), generator=torch.Generator().manual_seed(1))


def _logits(model, ids):
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits


def test_keeping_every_channel_is_the_teacher():
    model, ids = _bert(), _calibration()
    imp = prune.hidden_importance(model, ids)
    same = prune.prune_hidden(model, imp, 24)
    torch.testing.assert_close(_logits(same, ids), _logits(model, ids), atol=1e-6, rtol=1e-6)


def test_kept_weights_are_the_chosen_slices_and_the_student_reloads(tmp_path):
    model = _bert()
    heads, hd = 3, 8
    imp = {"hidden": torch.arange(24, 0, -1).double(),                    # channels 0..17 most important
           "qk": [torch.arange(hd, 0, -1).double().repeat(heads, 1)] * 2,  # each head: its first dims
           "v": [torch.arange(1, hd + 1).double().repeat(heads, 1)] * 2}   # each head: its last dims
    student = prune.prune_hidden(model, imp, 18)
    keep, per = torch.arange(18), 6
    qk = torch.cat([h * hd + torch.arange(per) for h in range(heads)])
    v = torch.cat([h * hd + torch.arange(hd - per, hd) for h in range(heads)])
    t, s = model.bert, student.bert
    assert torch.equal(s.embeddings.word_embeddings.weight, t.embeddings.word_embeddings.weight[:, keep])
    assert torch.equal(s.encoder.layer[1].attention.self.query.weight, t.encoder.layer[1].attention.self.query.weight[qk][:, keep])
    assert torch.equal(s.encoder.layer[0].attention.self.value.bias, t.encoder.layer[0].attention.self.value.bias[v])
    assert torch.equal(s.encoder.layer[0].attention.output.dense.weight,
                       t.encoder.layer[0].attention.output.dense.weight[keep][:, v])
    assert torch.equal(s.encoder.layer[1].output.LayerNorm.weight, t.encoder.layer[1].output.LayerNorm.weight[keep])
    assert torch.equal(student.classifier.weight, model.classifier.weight[:, keep])
    assert student.config.hidden_size == 18 and s.encoder.layer[0].attention.self.attention_head_size == 6
    student.save_pretrained(tmp_path)
    again = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    ids = _calibration()
    torch.testing.assert_close(_logits(again, ids), _logits(student, ids))


def test_hidden_importance_equals_brute_force():
    model, ids = _bert(3), _calibration()
    imp = prune.hidden_importance(model, ids, batch_size=4)
    with torch.no_grad():
        out = model.bert(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
    # every LayerNorm output of the residual stream: the embeddings' and each layer's final one are
    # hidden_states; the attention block's LayerNorm is recomputed from the layer's input
    expected = sum(h.abs().double().mean(dim=(0, 1)) for h in out.hidden_states)
    for i, layer in enumerate(model.bert.encoder.layer):
        with torch.no_grad():
            a = layer.attention(out.hidden_states[i])[0]
        expected = expected + a.abs().double().mean(dim=(0, 1))
        q = layer.attention.self.query(out.hidden_states[i]).abs().double().mean(dim=(0, 1)).reshape(3, -1)
        k = layer.attention.self.key(out.hidden_states[i]).abs().double().mean(dim=(0, 1)).reshape(3, -1)
        torch.testing.assert_close(imp["qk"][i], q * k)
    torch.testing.assert_close(imp["hidden"], expected)


def test_bad_widths_are_one_line():
    model = _bert()
    imp = prune.hidden_importance(model, _calibration())
    for bad in (25, 20, 0, True):
        with pytest.raises(InputError, match="multiple of the 3 heads"):
            prune.prune_hidden(model, imp, bad)
    assert np.isfinite(imp["hidden"].numpy()).all()
