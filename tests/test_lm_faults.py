"""Faults of helpers.lm.scoring (issue #10): the cache key holds the model's whole identity,
the maximum length is the model's, a text without token ids is an error, and batch
composition changes a score by no more than the documented tolerance."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
import torch

from conftest import SENTENCES, tiny_loaded
from helpers.errors import InputError
from helpers.lm import conventions, scoring
from helpers.models import LoadedModel
from test_scoring import one_thread  # noqa: F401  (autouse: one torch thread in this module too)

BATCH_TOLERANCE = 1e-5          # the module docstring's promise (absolute, on log_likelihood)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))


def brute_pll_ids(model, ids, mask_id, scored):
    """PLL of a fixed id sequence: one masked copy per scored position, full-model logits."""
    total = 0.0
    for p in scored:
        row = list(ids)
        row[p] = mask_id
        with torch.no_grad():
            logits = model(torch.tensor([row])).logits[0, p].double()
        total += torch.log_softmax(logits, -1)[ids[p]].item()
    return total


# ----------------------------------------------------------------------------- 6. the cache key

class Retokenized(LoadedModel):
    """Same weights fingerprint, another identity (as a changed tokenizer or dtype gives)."""

    @property
    def identity(self) -> dict:
        return {**super().identity, "tokenizer": "another-tokenizer-sha256"}


def test_cache_key_holds_the_whole_identity_and_models_with_other_identities_do_not_share(
        tiny_gpt2, monkeypatch):
    a = tiny_loaded(tiny_gpt2, "causal")
    b = Retokenized(**{f.name: getattr(a, f.name) for f in dataclasses.fields(a)})
    assert a.fingerprint == b.fingerprint and a.identity != b.identity
    ka, kb = scoring.cache_key(a), scoring.cache_key(b)
    assert ka["model"] == a.identity and kb["model"] == b.identity and ka != kb
    assert ka["scorer"] == {"version": scoring.SCORER_VERSION, "objective": "causal",
                            "stride": scoring.DEFAULT_STRIDE}
    assert scoring.cache_key(a, stride=5) != ka

    computed = []
    real = scoring.sentence_scores

    def counting(loaded, texts, **kw):
        computed.append((loaded.identity.get("tokenizer"), list(texts)))
        return real(loaded, texts, **kw)

    monkeypatch.setattr(scoring, "sentence_scores", counting)
    texts = SENTENCES[:3]
    first = scoring.score(a, texts, progress=False)
    scoring.score(a, texts, progress=False)
    assert computed == [(None, texts)]                                  # a's second call: cache hit
    second = scoring.score(b, texts, progress=False)
    assert computed == [(None, texts), ("another-tokenizer-sha256", texts)]   # b never reads a's rows
    np.testing.assert_allclose(second.log_likelihood, first.log_likelihood, rtol=1e-6)


def test_masked_cache_key_holds_the_pll_settings(tiny_bert):
    loaded = tiny_loaded(tiny_bert, "masked")
    plain = scoring.cache_key(loaded)
    assert plain["model"] == loaded.identity
    assert plain["scorer"] == {"version": scoring.SCORER_VERSION, "objective": "masked",
                               "pll": "original", "upstream_mask_id": False}
    assert scoring.cache_key(loaded, pll="word-l2r") != plain
    assert scoring.cache_key(loaded, upstream_mask_id=True) != plain
    assert scoring.cache_key(loaded, stride=5) == plain          # no window in PLL: no new key


# ----------------------------------------------------------------------------- 7. maximum length

@pytest.fixture(scope="module")
def short_bert(tiny_bert, tmp_path_factory):
    """A BERT with 16 positions whose tokenizer claims 512 (as the zoo BERT: 128 vs 512)."""
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tok = AutoTokenizer.from_pretrained(tiny_bert, model_max_length=512)
    cfg = BertConfig.from_pretrained(tiny_bert)
    cfg.max_position_embeddings = 16
    torch.manual_seed(3)
    model = BertForMaskedLM(cfg).eval()
    return LoadedModel(name="short-bert", model=model, tokenizer=tok, objective="masked",
                       fingerprint="short-bert@test")


def test_max_length_is_the_models_not_the_tokenizers(short_bert, tiny_roberta, tiny_xlnet, tiny_gpt2):
    assert short_bert.tokenizer.model_max_length == 512
    assert conventions.max_length(short_bert) == 16
    roberta = tiny_loaded(tiny_roberta, "masked")              # 80 positions, padding_idx 1 -> 78 tokens
    assert conventions.max_length(roberta) == 80 - (roberta.model.config.pad_token_id + 1)
    assert conventions.max_length(tiny_loaded(tiny_xlnet, "permutation")) is None
    gpt2 = tiny_loaded(tiny_gpt2, "causal")
    assert conventions.max_length(gpt2) == 64
    smaller = dataclasses.replace(short_bert, tokenizer=_with_limit(short_bert.tokenizer, 10))
    assert conventions.max_length(smaller) == 10                   # a smaller tokenizer limit wins


def _with_limit(tok, limit):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tok.name_or_path, model_max_length=limit)


def test_long_text_is_truncated_to_the_models_limit_and_scored_exactly(short_bert):
    long_text = " ".join(SENTENCES[:3])
    short = "the people is a reason"
    tok = short_bert.tokenizer
    full = tok(long_text)["input_ids"]
    assert len(full) > 16
    with pytest.warns(UserWarning, match=r"1 sentence\(s\) truncated to the model's 16 tokens \(first: row 1\)"):
        df = scoring.sentence_scores(short_bert, [short, long_text], progress=False)   # old code: IndexError
    cut = full[:15] + [tok.sep_token_id]                       # [CLS] + 14 word pieces + [SEP]
    assert df.n_tokens.tolist() == [len(tok(short)["input_ids"]) - 2, 14]
    ref = brute_pll_ids(short_bert.model, cut, tok.mask_token_id, range(1, 15))
    assert abs(df.log_likelihood[1] - ref) <= 1e-5 * abs(ref)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                          # a text that fits is not reported
        exact = tok.decode(full[1:15])
        assert len(tok(exact)["input_ids"]) == 16
        scoring.sentence_scores(short_bert, [exact], progress=False)


def test_long_text_under_roberta_position_offset(tiny_roberta):
    loaded = tiny_loaded(tiny_roberta, "masked")
    text = " ".join(SENTENCES * 2)
    tok = loaded.tokenizer
    full = tok(text)["input_ids"]
    limit = conventions.max_length(loaded)
    assert len(full) > limit
    with pytest.warns(UserWarning, match="truncated"):
        df = scoring.sentence_scores(loaded, [text], progress=False)
    cut = full[:limit - 1] + [tok.eos_token_id]
    ref = brute_pll_ids(loaded.model, cut, tok.mask_token_id, range(1, limit - 1))
    assert df.n_tokens[0] == limit - 2
    assert abs(df.log_likelihood[0] - ref) <= 1e-5 * abs(ref)


# ----------------------------------------------------------------------------- no token ids

def _dropping_tokenizer(mask: bool):
    """A fast tokenizer (BPE without an unknown token) that silently drops unknown characters."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"a": 0, "b": 1, "[MASK]": 2, "[PAD]": 3}
    raw = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=raw, pad_token="[PAD]",
                                   **({"mask_token": "[MASK]"} if mask else {}))


@pytest.mark.parametrize("which,objective", [("tiny_gpt2", "causal"), ("tiny_bert", "masked")])
def test_text_without_token_ids_is_an_input_error_naming_the_row(which, objective, request):
    loaded = tiny_loaded(request.getfixturevalue(which), objective)
    loaded = dataclasses.replace(loaded, tokenizer=_dropping_tokenizer(objective == "masked"))
    assert loaded.tokenizer("a b")["input_ids"] == [0, 1]
    assert loaded.tokenizer("zzz")["input_ids"] == []
    with pytest.raises(InputError, match=r"text row 1: the tokenizer of .* gives no token ids for 'zzz'"):
        scoring.sentence_scores(loaded, ["a b a", "zzz", "b"], progress=False)   # old code: 0 tokens, exit 0


# ----------------------------------------------------------------------------- 8. batch composition

PARTNERS = [
    ["the people"],                                      # shorter partner: target is the longest row
    [SENTENCES[4] + " " + SENTENCES[6]],                 # much longer partner: target is padded
    SENTENCES,                                           # ten longer partners of various lengths
]


@pytest.mark.parametrize("which,objective", [("tiny_gpt2", "causal"), ("tiny_bert", "masked"),
                                             ("tiny_roberta", "masked"), ("tiny_xlnet", "permutation")])
def test_batch_partners_change_a_score_by_less_than_the_documented_tolerance(which, objective, request):
    loaded = tiny_loaded(request.getfixturevalue(which), objective)
    target = "the people is a reason"                    # short: |log_likelihood| < 60 (see the docstring)
    alone = scoring.sentence_scores(loaded, [target], progress=False, batch_tokens=100_000)
    lengths = {t: len(loaded.tokenizer(t)["input_ids"]) for group in PARTNERS for t in group}
    assert max(lengths.values()) > len(loaded.tokenizer(target)["input_ids"])   # some batches pad the target
    seen = []
    for partners in PARTNERS:
        for budget in (30, 120, 100_000):                # different partitions of the same rows
            for texts in (partners + [target], [target] + partners):
                df = scoring.sentence_scores(loaded, texts, progress=False, batch_tokens=budget)
                row = texts.index(target)
                assert df.n_tokens[row] == alone.n_tokens[0]
                seen.append(df.log_likelihood[row])
    assert abs(alone.log_likelihood[0]) < 60
    diff = np.abs(np.array(seen) - alone.log_likelihood[0])
    print(f"{which}: max |difference| {diff.max():.2e} over {len(seen)} batchings")
    assert diff.max() <= BATCH_TOLERANCE, diff.max()


# ----------------------------------------------------------------------------- the upstream mask id


def _small_vocab_bert(path):
    """A BERT whose WordPiece vocabulary has fewer than 104 entries: id 103 does not exist."""
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    from conftest import _LETTERS, BERT_SPECIALS

    words = ["the", "cat", "sat", "on", "mat", "a", "dog"]
    (path / "vocab.txt").write_text("\n".join(BERT_SPECIALS + words + _LETTERS) + "\n")
    tok = BertTokenizer(vocab=str(path / "vocab.txt"))
    assert 50 < len(tok) < 104
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1,
                                       num_attention_heads=2, intermediate_size=32)).eval()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_upstream_mask_id_on_a_vocabulary_without_id_103_is_one_clear_line(tmp_path):
    """Before: an IndexError from the embedding lookup (issue 24, wrong number 5)."""
    loaded = tiny_loaded(_small_vocab_bert(tmp_path), "masked")
    with pytest.raises(InputError, match=r"id 103 .* not in this model's vocabulary of \d+ tokens"):
        scoring.sentence_scores(loaded, ["the cat sat"], upstream_mask_id=True, progress=False)
    assert len(scoring.sentence_scores(loaded, ["the cat sat"], progress=False)) == 1    # its own mask works


def test_cli_upstream_mask_id_on_a_small_vocabulary_is_one_line(tmp_path, capsys):
    from helpers import cli

    model = _small_vocab_bert(tmp_path)
    (tmp_path / "in.csv").write_text("text\nthe cat sat\n")
    capsys.readouterr()                               # the fixture's own output (save_pretrained's bar)
    code = cli.main(["score", "--model", str(model), "--input", str(tmp_path / "in.csv"),
                     "--output", str(tmp_path / "out.csv"), "--upstream-mask-id"])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("harms")]      # beside the weights' loading bar
    assert code == 2 and "Traceback" not in err and len(lines) == 1
    assert lines[0].startswith("harms: error:") and "id 103" in lines[0]
