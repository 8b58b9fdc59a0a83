"""helpers.distill and helpers.zoo: loss, training, checkpoints, determinism, the zoo (tiny configs)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers.training import distill, zoo
from helpers.errors import DataNotFoundError, InputError

TEXTS = [
    "the quick brown fox jumps over the lazy dog and runs into the forest .",
    "a small language model learns the statistics of the words it reads .",
    "students are distilled from a teacher with softened probabilities .",
    "the teacher is larger than the student and was trained for longer .",
] * 6


@pytest.fixture(scope="module")
def tok():
    t = zoo.train_subword_tokenizer(TEXTS, vocab_size=300)
    t.eos_token = "[SEP]"            # the causal students separate documents with EOS
    return t


def _blocks(tok, arch, block_size=16):
    return distill.pack_blocks(TEXTS, tok, block_size=block_size, objective=arch)


def _cfg(**kw):
    base = dict(steps=6, batch_size=4, lr=5e-3, warmup=0.0, seed=0, checkpoint_every=2)
    return distill.TrainConfig(**{**base, **kw})


def _student(arch, tok, layers=1, hidden=32, dropout=0.1, seed=0):
    return distill.build_student(arch, distill.student_shape(layers, hidden, heads=2), tok,
                                 block_size=64, dropout=dropout, seed=seed)


# ----------------------------------------------------------------------------- loss
def test_distillation_loss_equals_kl_div_times_t_squared():
    g = torch.Generator().manual_seed(1)
    s, t = torch.randn(7, 11, generator=g) * 3, torch.randn(7, 11, generator=g) * 3
    for T in (1.0, 2.0, 4.5):
        ref = F.kl_div(F.log_softmax(s / T, -1), F.softmax(t / T, -1), reduction="batchmean") * T**2
        ours = distill.distillation_loss(s, t, temperature=T)
        assert torch.allclose(ours, ref, rtol=1e-5, atol=1e-6)
        # = T^2 (soft cross-entropy - teacher entropy), by hand in numpy
        p = np.exp(t.numpy() / T) / np.exp(t.numpy() / T).sum(-1, keepdims=True)
        q = np.exp(s.numpy() / T) / np.exp(s.numpy() / T).sum(-1, keepdims=True)
        ce, h = -(p * np.log(q)).sum(-1).mean(), -(p * np.log(p)).sum(-1).mean()
        assert math.isclose(float(ours), T**2 * (ce - h), rel_tol=1e-4)
    with pytest.raises(InputError, match="temperature"):
        distill.distillation_loss(s, t, temperature=0)


def test_topk_distillation_loss():
    g = torch.Generator().manual_seed(2)
    s, t = torch.randn(5, 9, generator=g), torch.randn(5, 9, generator=g)
    full = distill.distillation_loss(s, t, temperature=2.0)
    v, i = t.topk(9, -1)                                   # k = V: exactly the full KL
    assert torch.allclose(distill.distillation_loss(s, v, temperature=2.0, teacher_indices=i), full, atol=1e-6)
    v, i = t.topk(3, -1)                                   # k < V: brute force, position by position
    ref = 0.0
    for n in range(5):
        p = torch.softmax(v[n] / 2, -1)                    # teacher renormalised over its top 3
        logq = torch.log_softmax(s[n] / 2, -1)[i[n]]       # student normalised over all 9
        ref += float((p * (p.log() - logq)).sum())
    got = distill.distillation_loss(s, v, temperature=2.0, teacher_indices=i)
    assert math.isclose(float(got), 4 * ref / 5, rel_tol=1e-5)


def test_topk_with_tail_bucket_is_the_exact_kl_over_topk_plus_rest():
    g = torch.Generator().manual_seed(3)
    s, t = torch.randn(6, 13, generator=g) * 2, torch.randn(6, 13, generator=g) * 2
    T, k = 1.5, 4
    fn = distill.teacher_targets(_FixedLogits(t), arch="gpt2", top_k=k, temperature=T)
    v, i = fn(0, {"input_ids": torch.zeros(1, 6, dtype=torch.long), "labels": torch.zeros(1, 6, dtype=torch.long)})
    assert v.shape == (6, k + 1) and bool((i[:, -1] == distill.TAIL).all())
    # the k + 1 columns at temperature T are exactly the teacher's probabilities (top k, then the rest)
    p_full = torch.softmax(t / T, -1)
    top = t.topk(k, -1).indices
    assert torch.allclose(torch.softmax(v / T, -1)[:, :k], p_full.gather(-1, top), atol=1e-6)
    assert torch.allclose(torch.softmax(v / T, -1)[:, k], 1 - p_full.gather(-1, top).sum(-1), atol=1e-6)
    # brute force in numpy: KL over the k + 1 outcomes {top tokens, everything else}
    P, Q = p_full.numpy().astype(np.float64), torch.softmax(s / T, -1).numpy().astype(np.float64)
    ref = 0.0
    for n in range(6):
        idx = top[n].numpy()
        rest = np.setdiff1d(np.arange(13), idx)
        pk, qk = np.append(P[n, idx], P[n, rest].sum()), np.append(Q[n, idx], Q[n, rest].sum())
        ref += float((pk * np.log(pk / qk)).sum())
    got = distill.distillation_loss(s, v, temperature=T, teacher_indices=i)
    assert math.isclose(float(got), T * T * ref / 6, rel_tol=1e-4)
    # k = V: the tail is empty and the loss is the full KL
    fn_all = distill.teacher_targets(_FixedLogits(t), arch="gpt2", top_k=13, temperature=T)
    v, i = fn_all(0, {"input_ids": torch.zeros(1, 6, dtype=torch.long), "labels": torch.zeros(1, 6, dtype=torch.long)})
    full = distill.distillation_loss(s, t, temperature=T)
    assert torch.allclose(distill.distillation_loss(s, v, temperature=T, teacher_indices=i), full, atol=1e-5)


class _FixedLogits(torch.nn.Module):
    """A stand-in teacher returning fixed logits [1, N, V] whatever the input."""

    def __init__(self, logits):
        super().__init__()
        self.logits = logits

    def forward(self, input_ids, attention_mask=None):
        from types import SimpleNamespace
        return SimpleNamespace(logits=self.logits[None])


# ----------------------------------------------------------------------------- shapes
def test_grid_rejects_impossible_shapes():
    assert distill.student_shape(2, 128).heads == 2 and distill.student_shape(4, 512).heads == 8
    assert distill.student_shape(1, 64).heads == 2              # at least 2 heads
    assert [s.label for s in distill.grid([1, 2], [64, 128])] == ["L1-H64", "L2-H64", "L1-H128", "L2-H128"]
    with pytest.raises(InputError, match="not divisible by 3 attention heads"):
        distill.grid([2], [200])                                # heads = 200 // 64 = 3
    with pytest.raises(InputError, match="layers must be a positive integer"):
        distill.student_shape(0, 64)
    with pytest.raises(InputError, match="hidden must be a positive integer"):
        distill.student_shape(2, -64)
    with pytest.raises(InputError, match="not divisible"):
        distill.student_shape(2, 128, heads=3)


# ----------------------------------------------------------------------------- data
def test_masking_80_10_10(tok):
    ids = torch.randint(5, len(tok), (400, 64))
    ids[:, 0], ids[:, -1] = tok.cls_token_id, tok.sep_token_id
    g = torch.Generator().manual_seed(0)
    inp, lab = distill.mask_tokens(ids, mask_id=tok.mask_token_id, vocab_size=len(tok),
                                   special_ids=tok.all_special_ids, generator=g)
    sel = lab != -100
    assert not sel[:, 0].any() and not sel[:, -1].any()        # specials never selected
    assert abs(sel[:, 1:-1].float().mean() - 0.15) < 0.01
    assert torch.equal(lab[sel], ids[sel]) and torch.equal(inp[~sel], ids[~sel])
    masked = (inp[sel] == tok.mask_token_id).float().mean()
    kept = (inp[sel] == ids[sel]).float().mean()
    assert abs(masked - 0.8) < 0.02 and 0.08 < kept < 0.13     # kept: 10 % + random hits


def test_batches_are_a_function_of_seed_and_step(tok):
    b = _blocks(tok, "bert")
    one = distill.make_batch(b, 3, batch_size=4, seed=0, phase="pretrain", arch="bert", tokenizer=tok)
    two = distill.make_batch(b, 3, batch_size=4, seed=0, phase="pretrain", arch="bert", tokenizer=tok)
    other = distill.make_batch(b, 3, batch_size=4, seed=1, phase="pretrain", arch="bert", tokenizer=tok)
    assert torch.equal(one["input_ids"], two["input_ids"]) and torch.equal(one["labels"], two["labels"])
    assert not torch.equal(one["labels"], other["labels"])
    # the masking rate is a setting (the zoo's masked family trains at 40 %, Wettig et al. 2023)
    for prob in (0.15, 0.4):
        lab = torch.cat([distill.make_batch(b, s, batch_size=4, seed=0, phase="pretrain", arch="bert", tokenizer=tok,
                                            mask_prob=prob)["labels"] for s in range(20)])
        ids = torch.cat([distill.make_batch(b, s, batch_size=4, seed=0, phase="pretrain", arch="gpt2")["input_ids"]
                         for s in range(20)])
        plain = ~torch.isin(ids, torch.tensor(tok.all_special_ids))     # specials are never selected
        assert abs(float((lab[plain] != -100).float().mean()) - prob) < 0.02
    # one epoch visits every block exactly once
    n = b.shape[0]
    seen = torch.cat([distill.make_batch(b, s, batch_size=1, seed=0, phase="pretrain", arch="gpt2")["input_ids"]
                      for s in range(n)])
    assert sorted(map(tuple, seen.tolist())) == sorted(map(tuple, b.tolist()))


# ----------------------------------------------------------------------------- training
@pytest.mark.parametrize("arch", ["gpt2", "bert"])
def test_training_lowers_loss_on_fixed_batch(tok, arch):
    blocks = _blocks(tok, arch)[:4]                      # one fixed batch
    model = _student(arch, tok, dropout=0.0)
    batch = distill.make_batch(blocks, 0, batch_size=4, seed=0, phase="pretrain", arch=arch, tokenizer=tok)

    def loss():
        with torch.no_grad():
            return float(model(**batch).loss)

    before = loss()
    distill.train(model, blocks, _cfg(steps=8), arch=arch, tokenizer=tok, progress=False)
    assert loss() < before - 0.3


@pytest.mark.parametrize("arch", ["gpt2", "bert"])
def test_distillation_moves_student_towards_teacher(tok, arch):
    blocks = _blocks(tok, arch)[:4]
    teacher = _student(arch, tok, layers=2, hidden=64, dropout=0.0, seed=7).eval()
    student = _student(arch, tok, dropout=0.0)
    fn = distill.teacher_targets(teacher, arch=arch, top_k=None, cache={})
    batch = distill.make_batch(blocks, 0, batch_size=4, seed=0, phase="distill", arch=arch, tokenizer=tok)

    def kd():
        with torch.no_grad():
            pos = distill.scored_positions(batch["labels"], arch)
            return float(distill.distillation_loss(student(input_ids=batch["input_ids"]).logits[pos],
                                                   teacher(input_ids=batch["input_ids"]).logits[pos]))

    before = kd()
    out = distill.train(student, blocks, _cfg(steps=8), arch=arch, tokenizer=tok, phase="distill",
                        teacher=fn, progress=False)
    assert kd() < 0.7 * before
    assert out["steps"] == 8 and len(out["losses"]) == 8


def _weights(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def _same(a, b):
    return all(torch.equal(a[k], b[k]) for k in a)


def test_determinism(tok):
    blocks = _blocks(tok, "bert")
    runs = []
    for seed in (0, 0, 1):
        m = _student("bert", tok, seed=seed)               # dropout 0.1: RNG matters
        distill.train(m, blocks, _cfg(seed=seed), arch="bert", tokenizer=tok, progress=False)
        runs.append(_weights(m))
    assert _same(runs[0], runs[1])
    assert not _same(runs[0], runs[2])


@pytest.mark.parametrize("phase", ["pretrain", "distill"])
def test_resume_after_interruption_equals_uninterrupted(tok, tmp_path, phase):
    blocks = _blocks(tok, "gpt2")
    teacher = _student("gpt2", tok, layers=2, hidden=64, seed=5).eval()
    kw = dict(arch="gpt2", tokenizer=tok, phase=phase, progress=False)

    def tf():
        return distill.teacher_targets(teacher, arch="gpt2", top_k=8) if phase == "distill" else None

    full = _student("gpt2", tok)
    ref = distill.train(full, blocks, _cfg(), teacher=tf(), **kw)

    class Crash(Exception):
        pass

    def crash(step, loss):
        if step == 3:
            raise Crash

    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(Crash):
        distill.train(_student("gpt2", tok), blocks, _cfg(), teacher=tf(), checkpoint=ckpt, callback=crash, **kw)
    assert torch.load(ckpt, weights_only=False)["step"] == 2     # last checkpoint (every 2 steps)
    assert not list(tmp_path.glob(".*tmp*"))                       # no temporary file left behind
    resumed = _student("gpt2", tok, seed=123)                      # different init: all state from ckpt
    out = distill.train(resumed, blocks, _cfg(), teacher=tf(), checkpoint=ckpt, **kw)
    assert out["steps"] == 6 and out["losses"] == ref["losses"]
    assert _same(_weights(full), _weights(resumed))


def test_checkpoints_wait_for_checkpoint_seconds_and_saving_does_not_change_training(tok, tmp_path, monkeypatch):
    """A checkpoint is written once ``checkpoint_seconds`` have passed since the last one (a fake
    clock: 10 s per step, so a 25 s interval saves after steps 3 and 6); training is the same
    whether or not it saved (the losses of a run that never saves)."""
    blocks = _blocks(tok, "gpt2")
    kw = dict(arch="gpt2", tokenizer=tok, phase="pretrain", progress=False)
    saved, clock = [], iter(range(0, 1000, 10))
    monkeypatch.setattr(distill, "checkpoint_clock", lambda: next(clock))
    real_save = distill._atomic_save
    monkeypatch.setattr(distill, "_atomic_save", lambda obj, path: saved.append(obj["step"]) or real_save(obj, path))
    out = distill.train(_student("gpt2", tok), blocks, _cfg(checkpoint_every=1, checkpoint_seconds=25),
                        checkpoint=tmp_path / "ckpt.pt", **kw)
    assert saved == [3, 6]              # clock 0 at the start, 10 s after each step
    never = distill.train(_student("gpt2", tok), blocks, _cfg(checkpoint_every=1, checkpoint_seconds=1e9),
                          checkpoint=tmp_path / "never.pt", **kw)
    assert not (tmp_path / "never.pt").exists() and never["losses"] == out["losses"]


def test_saved_student_reloads_to_identical_scores(tok, tmp_path):
    from helpers import models
    from helpers.lm import scoring

    model = _student("bert", tok, dropout=0.0)
    distill.train(model, _blocks(tok, "bert"), _cfg(steps=3), arch="bert", tokenizer=tok, progress=False)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    loaded = models.load(tmp_path)
    assert loaded.objective == "masked"
    texts = TEXTS[:3]
    direct = models.LoadedModel(name="direct", model=model.eval(), tokenizer=tok, objective="masked",
                                fingerprint="x")
    a = scoring.sentence_scores(direct, texts, progress=False)
    b = scoring.sentence_scores(loaded, texts, progress=False)
    assert (a["n_tokens"] == b["n_tokens"]).all()
    np.testing.assert_allclose(a["log_likelihood"], b["log_likelihood"], rtol=1e-6)


def test_heldout_perplexity_causal_matches_transformers_loss(tok):
    model = _student("gpt2", tok, dropout=0.0).eval()
    blocks = _blocks(tok, "gpt2")[:3]
    with torch.no_grad():
        ref = math.exp(float(model(input_ids=blocks, labels=blocks).loss))
    assert math.isclose(distill.heldout_perplexity(model, blocks, arch="gpt2"), ref, rel_tol=1e-5)


# ----------------------------------------------------------------------------- zoo
def test_corpus_split_and_errors():
    train, held = zoo.load_corpus("gensim-lee")
    assert len(held) == round(0.05 * (len(train) + len(held)))
    assert not set(train) & set(held)
    assert zoo.load_corpus("gensim-lee") == (train, held)          # fixed split
    with pytest.raises(InputError, match="unknown corpus"):
        zoo.load_corpus("toxigen")
    with pytest.raises(DataNotFoundError, match="wikitext-103"):
        zoo.load_corpus("wikitext-103")                            # no `datasets` / no hub here
    with pytest.raises(InputError, match="unknown zoo profile"):
        zoo.zoo_config("huge")


def test_tiny_masked_zoo_trains_saves_and_is_reused(tmp_path, monkeypatch):
    from helpers import models

    monkeypatch.setenv("HARMS_ZOO_DIR", str(tmp_path))
    kw = dict(recipe="scratch", families=("masked",), masked_layers=(1, 2), masked_hidden=(64,), masked_pretrain_steps=2,
              masked_distill_steps=2, teacher_steps=2, block_size=32, batch_size=2, eval_blocks=1,
              masked_vocab=300, corpus="gensim-lee")
    names = zoo.ensure_default_zoo("ci", progress=False, **kw)
    assert names == ["zoo-bert-teacher", "zoo-bert-L1-H64"]     # the teacher (L2-H64) takes its grid cell
    t = json.loads((tmp_path / "zoo-bert-teacher" / "manifest.json").read_text())
    assert (t["layers"], t["hidden"], t["family"], t["steps"]["distill"]) == (2, 64, "zoo-teacher-bert", 0)
    m = json.loads((tmp_path / "zoo-bert-L1-H64" / "manifest.json").read_text())
    assert m["family"] == "zoo-distilled-bert" and m["objective"] == "masked" and m["teacher"] == "zoo-bert-teacher"
    assert (m["layers"], m["heads"], m["hidden"]) == (1, 2, 64) and m["steps"] == {"pretrain": 2, "distill": 2}
    assert m["params"] == sum(p.numel() for p in models.load("zoo-bert-L1-H64").model.parameters())
    assert math.isfinite(m["heldout_perplexity"]) and m["seed"] == 0
    assert not (tmp_path / "_checkpoints" / f"zoo-bert-L1-H64-{m['config_key']}").exists()
    stamp = (tmp_path / "zoo-bert-L1-H64" / "model.safetensors").stat().st_mtime_ns
    assert zoo.ensure_default_zoo("ci", progress=False, **kw) == names      # reused, not retrained
    assert (tmp_path / "zoo-bert-L1-H64" / "model.safetensors").stat().st_mtime_ns == stamp
    df = zoo.manifests()
    assert set(df["name"]) == set(names) and "steps_pretrain" in df
