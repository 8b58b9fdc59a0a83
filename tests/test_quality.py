"""helpers.metrics.quality (the language-model quality gate of issue 11), its runner and report
functions: checked against brute-force counts and loops, transformers' own loss, a model that is
unigram by construction (fails) and SmolLM2-135M (passes)."""

from __future__ import annotations

import math
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

from helpers import models, report, runner
from helpers.lm.conventions import pack_blocks
from helpers.errors import InputError
from helpers.metrics import quality
from helpers.training import distill

from conftest import SENTENCES

TRAIN = [" ".join(SENTENCES[i:] + SENTENCES[:i]) for i in range(len(SENTENCES))] * 3
HELD = [s + " and so on" for s in SENTENCES] * 2


class FixedDistribution(torch.nn.Module):
    """A "language model" predicting the same distribution ``log_probs`` at every position."""

    def __init__(self, log_probs: torch.Tensor):
        super().__init__()
        self.log_probs = log_probs.float()

    def forward(self, input_ids, attention_mask=None):
        return SimpleNamespace(logits=self.log_probs.expand(*input_ids.shape, -1))


@pytest.fixture(scope="module")
def gpt2(tiny_gpt2):
    return AutoModelForCausalLM.from_pretrained(tiny_gpt2).eval(), AutoTokenizer.from_pretrained(tiny_gpt2)


@pytest.fixture(scope="module")
def bert(tiny_bert):
    return AutoModelForMaskedLM.from_pretrained(tiny_bert).eval(), AutoTokenizer.from_pretrained(tiny_bert)


# ----------------------------------------------------------------------------- unigram baseline
@pytest.mark.parametrize("s", [1.0, 0.5])
def test_unigram_log_probs_and_perplexity_equal_a_brute_force_count(s):
    train, V = [3, 1, 3, 0, 3, 5, 1, 3], 7
    counts, N = Counter(train), len(train)
    lp = quality.unigram_log_probs(torch.tensor(train), V, smoothing=s)
    for w in range(V):
        assert float(lp[w]) == pytest.approx(math.log((counts[w] + s) / (N + s * V)), abs=1e-12)
    assert float(torch.logsumexp(lp, 0)) == pytest.approx(0.0, abs=1e-12)         # a distribution
    targets = [3, 6, 1, 1, 0]                                                      # 6: never seen
    brute = math.exp(-sum(math.log((counts[t] + s) / (N + s * V)) for t in targets) / len(targets))
    assert quality.unigram_perplexity(lp, targets) == pytest.approx(brute, rel=1e-12)
    assert quality.unigram_perplexity(lp.numpy(), np.array(targets)) == pytest.approx(brute, rel=1e-12)


def test_unigram_bad_input_is_one_clear_error():
    with pytest.raises(InputError, match="smoothing must be positive"):
        quality.unigram_log_probs([1, 2], 5, smoothing=0)
    with pytest.raises(InputError, match="outside the vocabulary"):
        quality.unigram_log_probs([1, 5], 5)
    lp = quality.unigram_log_probs([1, 2], 5)
    with pytest.raises(InputError, match="no scored tokens"):
        quality.unigram_perplexity(lp, [])
    with pytest.raises(InputError, match="outside the unigram vocabulary"):
        quality.unigram_perplexity(lp, [7])


def test_gate_ratio_and_threshold():
    g = quality.gate(40.0, 1650.0)
    assert g == {"perplexity": 40.0, "unigram_perplexity": 1650.0, "ratio": 41.25, "usable": True, "min_ratio": 2.0}
    assert quality.gate(1000.0, 2000.0)["usable"] is True                          # exactly 2x: usable
    assert quality.gate(1001.0, 2000.0)["usable"] is False
    assert quality.gate(100.0, 300.0, min_ratio=4)["usable"] is False
    assert quality.gate(float("nan"), 300.0)["usable"] is False
    assert quality.gate(100.0, 300.0, min_ratio=np.int64(3))["usable"] is True
    for bad in (0, -1, float("nan"), "2", True):
        with pytest.raises(InputError, match="min_ratio"):
            quality.gate(1.0, 2.0, min_ratio=bad)


# ----------------------------------------------------------------------------- models that must fail
@pytest.mark.parametrize("objective", ["causal", "masked"])
def test_a_unigram_model_by_construction_fails_the_gate(objective, gpt2, bert):
    """The model predicts the smoothed unigram distribution of the training text everywhere, so
    its perplexity IS the unigram baseline at the scored tokens (masked: at the masked positions)."""
    _, tok = gpt2 if objective == "causal" else bert
    train_ids = pack_blocks(TRAIN, tok, block_size=16, objective=objective).reshape(-1)
    unigram = FixedDistribution(quality.unigram_log_probs(train_ids, len(tok)))
    q = quality.language_model_quality(unigram, tok, TRAIN, HELD, objective=objective, blocks=4, block_size=16)
    assert q["ratio"] == pytest.approx(1.0, abs=1e-6) and q["usable"] is False
    assert q["heldout_perplexity"] == pytest.approx(q["unigram_perplexity"], rel=1e-6)
    assert q["train_tokens"] == train_ids.numel() and q["blocks"] == 4
    if objective == "causal":
        assert q["heldout_tokens"] == 4 * 15


def test_a_uniform_model_fails_the_gate(gpt2):
    _, tok = gpt2
    uniform = FixedDistribution(torch.zeros(len(tok)))
    q = quality.language_model_quality(uniform, tok, TRAIN, HELD, objective="causal", blocks=4, block_size=16)
    assert q["heldout_perplexity"] == pytest.approx(len(tok), rel=1e-5)           # uniform over V
    assert q["ratio"] < 1 and q["usable"] is False


# ----------------------------------------------------------------------------- held-out perplexity
def test_causal_perplexity_equals_transformers_loss_and_scores_every_next_token(gpt2):
    model, tok = gpt2
    blocks = pack_blocks(HELD, tok, block_size=32, objective="causal")[:5]
    with torch.no_grad():
        ref = math.exp(float(model(input_ids=blocks, labels=blocks).loss))
    nll, count, targets = quality.heldout_nll(model, blocks, objective="causal", batch_size=2)
    assert count == 5 * 31 and torch.equal(targets, blocks[:, 1:].reshape(-1))
    assert math.exp(nll / count) == pytest.approx(ref, rel=1e-5)
    ppl = quality.heldout_perplexity(model, blocks, batch_size=2)
    assert ppl == pytest.approx(ref, rel=1e-5) and ppl == math.exp(nll / count)
    # the old keyword of the training code still works, and distill re-exports the same function
    assert distill.heldout_perplexity(model, blocks, arch="gpt2", batch_size=2) == ppl
    assert distill.heldout_perplexity is quality.heldout_perplexity and distill.mask_tokens is quality.mask_tokens


def test_masked_perplexity_equals_a_brute_force_loop(bert):
    model, tok = bert
    blocks = pack_blocks(HELD, tok, block_size=24, objective="masked")[:5]
    nll, count, targets = quality.heldout_nll(model, blocks, objective="masked", tokenizer=tok, batch_size=2, seed=3)
    # brute force: the same masks (one generator, batch after batch), one sequence and one position at a time
    g, total, want = torch.Generator().manual_seed(3), 0.0, []
    for i in range(0, len(blocks), 2):
        inputs, labels = quality.mask_tokens(blocks[i:i + 2], mask_id=tok.mask_token_id, vocab_size=len(tok),
                                             special_ids=tok.all_special_ids, generator=g)
        for row_in, row_lab in zip(inputs, labels):
            with torch.no_grad():
                logits = model(input_ids=row_in[None]).logits[0]
            for pos in range(len(row_lab)):
                if row_lab[pos] != -100:
                    total -= float(torch.log_softmax(logits[pos].double(), -1)[row_lab[pos]])
                    want.append(int(row_lab[pos]))
    assert count == len(want) > 0 and targets.tolist() == want
    assert nll == pytest.approx(total, rel=1e-5)
    assert quality.heldout_perplexity(model, blocks, arch="bert", tokenizer=tok, batch_size=2, seed=3) \
        == pytest.approx(math.exp(total / count), rel=1e-5)


def test_heldout_bad_input_is_one_clear_error(gpt2, bert):
    model, tok = gpt2
    empty = torch.zeros((0, 16), dtype=torch.long)
    with pytest.raises(InputError, match="no complete block"):   # the old code returned perplexity 1.0
        quality.heldout_perplexity(model, empty, arch="gpt2")
    blocks = pack_blocks(HELD, tok, block_size=16, objective="causal")[:2]
    with pytest.raises(InputError, match="disagree"):
        quality.heldout_perplexity(model, blocks, objective="causal", arch="bert")
    with pytest.raises(InputError, match="not objective 'permutation'"):
        quality.heldout_perplexity(model, blocks, objective="permutation")
    with pytest.raises(InputError, match="needs the model's tokenizer"):
        quality.heldout_perplexity(bert[0], blocks, objective="masked")
    with pytest.raises(InputError, match="exceeds the model's 64 positions"):
        quality.language_model_quality(model, tok, TRAIN, HELD, objective="causal", block_size=128)
    with pytest.raises(InputError, match="fewer than the 1000 asked for"):
        quality.language_model_quality(model, tok, TRAIN, HELD, objective="causal", blocks=1000, block_size=16)


# ----------------------------------------------------------------------------- a real language model passes
def test_smollm2_passes_the_gate():
    """Measured: held-out perplexity ~41 on 16 x 128 tokens of gensim's held-out text, unigram ~1,770."""
    from helpers.datasets.corpus import load_corpus

    h = models.load("smollm2-135m")
    train, held = load_corpus("gensim")
    q = quality.language_model_quality(h.model, h.tokenizer, train, held, objective=h.objective)
    assert q["objective"] == "causal" and q["blocks"] == 16 and q["heldout_tokens"] == 16 * 127
    assert 20 < q["heldout_perplexity"] < 80 and 1000 < q["unigram_perplexity"] < 3000
    assert q["ratio"] > 10 and q["usable"] is True


# ----------------------------------------------------------------------------- runner and report
@pytest.fixture()
def fake_corpus(tmp_path, monkeypatch):
    """A private cache and two tiny texts in place of the corpora "gensim-lee" and "gensim-enwiki"."""
    from helpers.datasets import corpus

    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(runner, "_CORPORA", {})
    texts = {"gensim-lee": (TRAIN, HELD), "gensim-enwiki": (TRAIN[::-1], [s[::-1] for s in HELD])}
    monkeypatch.setattr(corpus, "load_corpus", lambda name: texts[name])
    return texts


@pytest.fixture()
def load_count(monkeypatch):
    calls = []
    original = models.LazyModel.load

    def counting(self):
        calls.append(self.name)
        return original(self)

    monkeypatch.setattr(models.LazyModel, "load", counting)
    return calls


def test_runner_quality_is_cached_per_model_and_settings(fake_corpus, load_count, tiny_gpt2, gpt2):
    opts = {"blocks": 3, "block_size": 16}
    first = runner.language_model_quality(models.lazy(str(tiny_gpt2)), corpus="gensim-lee", **opts)
    direct = quality.language_model_quality(*gpt2, *fake_corpus["gensim-lee"], objective="causal", **opts)
    for k in ("heldout_perplexity", "unigram_perplexity", "ratio", "usable", "heldout_tokens"):
        assert first[k] == pytest.approx(direct[k], rel=1e-9)
    assert first["corpus"] == "gensim-lee" and len(load_count) == 1
    again = runner.language_model_quality(models.lazy(str(tiny_gpt2)), corpus="gensim-lee", **opts)
    assert again == first and len(load_count) == 1                         # from the cache: no weights read
    lenient = runner.language_model_quality(models.lazy(str(tiny_gpt2)), corpus="gensim-lee", min_ratio=0.01, **opts)
    assert len(load_count) == 1                                             # the threshold changes no measurement
    assert lenient["min_ratio"] == 0.01 and lenient["usable"] is True and first["usable"] is False
    assert lenient["heldout_perplexity"] == first["heldout_perplexity"]
    other = runner.language_model_quality(models.lazy(str(tiny_gpt2)), corpus="gensim-enwiki", **opts)
    assert len(load_count) == 2 and other["unigram_perplexity"] != first["unigram_perplexity"]
    runner.language_model_quality(models.lazy(str(tiny_gpt2)), corpus="gensim-lee", blocks=2, block_size=16)
    assert len(load_count) == 3                                             # other blocks: another key
    with pytest.raises(InputError, match="unknown corpus 'wiki'"):
        runner.language_model_quality(models.lazy(str(tiny_gpt2)), corpus="wiki")
    assert len(load_count) == 3                                             # refused before loading


def test_quality_table_lists_every_model_and_usable_models(fake_corpus, tiny_gpt2, tiny_xlnet):
    names = ["no-such-model-xyz", str(tiny_gpt2), str(tiny_xlnet)]
    table = runner.quality_table(names, corpus="gensim-lee", blocks=3, block_size=16, min_ratio=0.01)
    assert table.columns.tolist() == runner.QUALITY_COLUMNS and table["model"].tolist() == names
    rows = table.set_index("model")
    assert rows.loc[str(tiny_gpt2), "usable"] == True  # noqa: E712  (an object column: True or NaN)
    assert pd.isna(rows.loc[str(tiny_gpt2), "reason"]) and rows.loc[str(tiny_gpt2), "objective"] == "causal"
    assert "unknown model" in rows.loc["no-such-model-xyz", "reason"]
    assert "not objective 'permutation'" in rows.loc[str(tiny_xlnet), "reason"]
    assert rows.loc[str(tiny_xlnet), "objective"] == "permutation" and pd.isna(rows.loc["no-such-model-xyz", "objective"])
    assert rows.loc[["no-such-model-xyz", str(tiny_xlnet)], "usable"].isna().all()
    assert runner.usable_models(table) == [str(tiny_gpt2)]
    strict = runner.quality_table([str(tiny_gpt2)], corpus="gensim-lee", blocks=3, block_size=16)   # random weights
    assert runner.usable_models(strict) == [] and strict["ratio"].iloc[0] < 2


def _table(rows):
    return pd.DataFrame(rows, columns=["model", "objective", "heldout_perplexity", "unigram_perplexity", "ratio",
                                       "usable", "min_ratio"])


def test_gate_sentence_names_the_excluded_models_and_why():
    good = ("smollm2-135m", "causal", 40.8, 1766.5, 1766.5 / 40.8, True, 2.0)
    assert report.gate_sentence(_table([good])) == (
        "The one measured model passes the language-model quality gate: its held-out perplexity is at least "
        "2× better than the unigram baseline of its tokenizer.")
    assert report.gate_sentence(_table([good, good])).startswith(
        "Both measured models pass the language-model quality gate: each has a held-out perplexity at least 2× better")
    bad = ("zoo-gpt2-L2-H128", "causal", 1529.0, 1650.0, 1650 / 1529, False, 2.0)
    worse = ("zoo-bert-L2-H128", "masked", 2038.0, 1650.0, 1650 / 2038, False, 2.0)
    missing = ("gone", None, np.nan, np.nan, np.nan, np.nan, np.nan)
    assert report.gate_sentence(_table([good, bad, missing])) == (
        "1 of the 2 measured models is not a usable language model and is excluded from correlations and verdicts: "
        "zoo-gpt2-L2-H128 (perplexity 1,529 is only 1.08× better than the unigram baseline 1,650; needs 2×).")
    assert report.gate_sentence(_table([good, bad, worse])).startswith(
        "2 of the 3 measured models are not usable language models and are excluded")
    assert "zoo-bert-L2-H128 (perplexity 2,038 is worse than the unigram baseline 1,650: ratio 0.81, needs 2×)" \
        in report.gate_sentence(_table([bad, worse]))
    assert report.gate_sentence(_table([missing])) == "No model could be measured for the language-model quality gate."


@pytest.mark.parametrize("language", ["en", "fr", "ar"])
def test_mlma_corpora_split_each_language_s_tweets_without_overlap(language):
    """Chapter 07's per-language gate text: MLMA tweets of that language without placeholders,
    five words or more, deduplicated, the last 5 % held out (the same rule as the gensim corpora)."""
    from helpers.datasets.corpus import load_corpus
    from helpers.datasets.probing import load_mlma

    train, held = load_corpus(f"mlma-{language}")
    tweets = [" ".join(w.lstrip("#") for w in t.split() if w.lower() not in ("url", "rt") and not
                       w.lower().startswith(("@user", "@url")))
              for t in load_mlma(language=language)["text"]]
    tweets = list(dict.fromkeys(t for t in tweets if len(t.split()) >= 5))
    assert not set(train) & set(held) and len(train) + len(held) == len(set(train + held))
    assert len(set(train + held) ^ set(tweets)) < 0.02 * len(tweets)   # "x@user" inside a word: rare
    assert len(held) == round(0.05 * len(tweets)) and not any("@user" in t for t in held)
