"""helpers.lm.conventions: how a model reads text, one place for every path (issue 24, wrong
number 1: the quality gate scored Gemma's blocks without the ``<bos>`` its sentence scores use).

Checked against the tokenizers' own encodings, a hand-built token stream, and a brute-force
per-block loop over the model's logits."""

from __future__ import annotations

import math
from collections import Counter
from types import SimpleNamespace

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from helpers.errors import InputError
from helpers.lm import conventions, scoring
from helpers.metrics import quality

from conftest import SENTENCES, tiny_loaded

TRAIN = [" ".join(SENTENCES[i:] + SENTENCES[:i]) for i in range(len(SENTENCES))] * 3
HELD = [s + " and so on" for s in SENTENCES] * 2


@pytest.fixture(scope="module")
def bos_gpt2(tiny_gpt2_bos):
    return AutoModelForCausalLM.from_pretrained(tiny_gpt2_bos).eval(), AutoTokenizer.from_pretrained(tiny_gpt2_bos)


@pytest.mark.parametrize("fixture, prefix, suffix", [
    ("tiny_gpt2", [], []), ("tiny_gpt2_bos", ["bos"], []), ("tiny_bert", ["cls"], ["sep"]),
    ("tiny_roberta", ["cls"], ["sep"]), ("tiny_xlnet", [], ["sep", "cls"])])
def test_special_ids_are_what_the_tokenizer_adds_around_a_text(request, fixture, prefix, suffix):
    tok = AutoTokenizer.from_pretrained(request.getfixturevalue(fixture))
    named = lambda names: [getattr(tok, f"{n}_token_id") for n in names]  # noqa: E731
    assert conventions.special_ids(tok) == (named(prefix), named(suffix))
    text = "the cat sat"
    full = tok(text)["input_ids"]
    assert full == named(prefix) + tok(text, add_special_tokens=False)["input_ids"] + named(suffix)


def _stream(tok, texts, sep):
    ids = []
    for t in texts:
        ids += tok(t, add_special_tokens=False)["input_ids"] + [sep]
    return ids


def test_causal_blocks_start_like_the_models_scoring(bos_gpt2, tiny_gpt2):
    _, tok = bos_gpt2
    blocks = conventions.pack_blocks(HELD, tok, block_size=16, objective="causal")
    assert (blocks[:, 0] == tok.bos_token_id).all()               # before the fix: never the BOS
    stream = _stream(tok, HELD, tok.eos_token_id)
    assert blocks[:, 1:].reshape(-1).tolist() == stream[: blocks.shape[0] * 15]
    # a tokenizer without a start token: plain slices of the stream, exactly as before
    plain_tok = AutoTokenizer.from_pretrained(tiny_gpt2)
    plain = conventions.pack_blocks(HELD, plain_tok, block_size=16, objective="causal")
    stream = _stream(plain_tok, HELD, plain_tok.eos_token_id)
    assert plain.reshape(-1).tolist() == stream[: plain.shape[0] * 16]


def test_masked_blocks_are_cls_body_sep(tiny_bert):
    tok = AutoTokenizer.from_pretrained(tiny_bert)
    blocks = conventions.pack_blocks(HELD, tok, block_size=12, objective="masked")
    assert (blocks[:, 0] == tok.cls_token_id).all() and (blocks[:, -1] == tok.sep_token_id).all()
    assert blocks[:, 1:-1].reshape(-1).tolist() == _stream(tok, HELD, tok.sep_token_id)[: blocks.shape[0] * 10]
    with pytest.raises(InputError, match="leaves no room"):
        conventions.pack_blocks(HELD, tok, block_size=2, objective="masked")
    with pytest.raises(InputError, match="objective must be"):
        conventions.pack_blocks(HELD, tok, block_size=12, objective="encoder")


def test_gate_of_a_bos_model_scores_every_body_token_after_its_bos(bos_gpt2):
    """The gate's perplexity equals a brute-force loop over the blocks' logits that predicts
    every token after the BOS (never the BOS itself), and its unigram baseline is fitted on the
    training tokens without the BOS and evaluated at those same targets."""
    model, tok = bos_gpt2
    q = quality.language_model_quality(model, tok, TRAIN, HELD, objective="causal", blocks=4, block_size=16)
    stream = _stream(tok, HELD, tok.eos_token_id)                  # by hand: <bos> + 15 tokens of the stream
    held = [[tok.bos_token_id] + stream[15 * i:15 * (i + 1)] for i in range(4)]
    nll, targets = 0.0, []
    with torch.no_grad():
        for row in held:
            logp = torch.log_softmax(model(input_ids=torch.tensor([row])).logits[0].double(), -1)
            for t in range(1, len(row)):
                nll -= float(logp[t - 1, row[t]])
                targets.append(int(row[t]))
    assert q["heldout_tokens"] == len(targets) == 4 * 15 and tok.bos_token_id not in targets[:1]
    assert q["heldout_perplexity"] == pytest.approx(math.exp(nll / len(targets)), rel=1e-5)
    train = _stream(tok, TRAIN, tok.eos_token_id)
    train = train[: len(train) // 15 * 15]                          # every complete block's body, no BOS
    counts, V = Counter(train), len(tok)
    brute = math.exp(-sum(math.log((counts[t] + 1) / (len(train) + V)) for t in targets) / len(targets))
    assert q["unigram_perplexity"] == pytest.approx(brute, rel=1e-9) and q["train_tokens"] == len(train)


def test_gate_blocks_and_sentence_scores_agree_on_the_start(tiny_gpt2_bos):
    """A block holding one sentence is scored like that sentence: BOS first, then every token."""
    loaded = tiny_loaded(tiny_gpt2_bos, "causal")
    tok = loaded.tokenizer
    sentence = "the cat sat on the mat"
    ids = tok(sentence)["input_ids"]                    # <bos> + the sentence, as scoring reads it
    block = torch.tensor([ids])
    nll, count, _ = quality.heldout_nll(loaded.model, block, objective="causal", tokenizer=tok)
    ll = scoring.causal_scores(loaded, [sentence], progress=False)["log_likelihood"].iloc[0]
    assert count == len(ids) - 1 and -nll == pytest.approx(ll, abs=1e-5)


def test_max_length_is_the_models_lowered_by_its_tokenizer():
    cfg = lambda **kw: SimpleNamespace(to_dict=lambda: kw)  # noqa: E731
    one = lambda config, tok_limit: conventions.max_length(  # noqa: E731
        SimpleNamespace(model=SimpleNamespace(config=config), tokenizer=SimpleNamespace(model_max_length=tok_limit)))
    assert one(cfg(model_type="gpt2", n_positions=1024), int(1e30)) == 1024       # a huge tokenizer limit is none
    assert one(cfg(model_type="bert", max_position_embeddings=512), 128) == 128    # the tokenizer lowers it
    assert one(cfg(model_type="roberta", max_position_embeddings=514, pad_token_id=1), 512) == 512
    assert one(cfg(model_type="mpnet", max_position_embeddings=514, pad_token_id=1), 10**6) == 512
    assert one(cfg(model_type="xlnet"), None) is None
