"""helpers.scoring against brute-force computations, transformers' own loss and the upstream formula."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from conftest import SENTENCES, tiny_loaded
from helpers.lm import scoring
from helpers.errors import InputError


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models gain nothing from threads; one thread avoids oversubscribing a shared CPU."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def rel_close(a, b, rtol=1e-5):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert np.all(np.abs(a - b) <= rtol * np.maximum(np.abs(b), 1e-12)), (a, b)


# ----------------------------------------------------------------------------- causal

def brute_causal(loaded, text):
    """Per sentence, unbatched: sum_{t>=1} log p(x_t | x_<t) from full logits."""
    ids = torch.tensor([loaded.tokenizer(text)["input_ids"]])
    with torch.no_grad():
        logp = torch.log_softmax(loaded.model(ids).logits[0].double(), -1)
    return sum(logp[t - 1, ids[0, t]].item() for t in range(1, ids.shape[1])), ids.shape[1] - 1


def hf_loss_causal(loaded, text):
    """transformers' own mean loss times the number of predicted tokens."""
    ids = torch.tensor([loaded.tokenizer(text)["input_ids"]])
    with torch.no_grad():
        loss = loaded.model(ids, labels=ids).loss.item()
    return -loss * (ids.shape[1] - 1)


@pytest.fixture(scope="module")
def tiny_llama(tiny_gpt2_bos, tmp_path_factory):
    """LlamaForCausalLM (rotary positions) sharing the BOS-adding byte-level tokenizer."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tiny_gpt2_bos)
    torch.manual_seed(1)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                         max_position_embeddings=128, bos_token_id=tok.bos_token_id))
    path = tmp_path_factory.mktemp("tiny_llama")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.mark.parametrize("which", ["tiny_gpt2", "tiny_gpt2_bos", "tiny_llama"])
def test_causal_equals_brute_force_and_hf_loss(which, request):
    loaded = tiny_loaded(request.getfixturevalue(which), "causal")
    df = scoring.sentence_scores(loaded, SENTENCES, progress=False, batch_tokens=64)
    brute = [brute_causal(loaded, t) for t in SENTENCES]
    rel_close(df.log_likelihood, [b[0] for b in brute])
    rel_close(df.log_likelihood, [hf_loss_causal(loaded, t) for t in SENTENCES])
    assert df.n_tokens.tolist() == [b[1] for b in brute]
    rel_close(df.perplexity, np.exp(-df.log_likelihood / df.n_tokens))
    assert loaded.model._harms_head_ok          # the hidden-state + head path was used


def test_bos_handling(tiny_gpt2, tiny_gpt2_bos):
    plain, bos = tiny_loaded(tiny_gpt2, "causal"), tiny_loaded(tiny_gpt2_bos, "causal")
    words = [len(plain.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in SENTENCES]
    assert plain.tokenizer(SENTENCES[0])["input_ids"][0] != plain.tokenizer.bos_token_id
    assert bos.tokenizer(SENTENCES[0])["input_ids"][0] == bos.tokenizer.bos_token_id
    # no BOS: the first token is context only; with BOS: every real token is scored
    assert scoring.sentence_scores(plain, SENTENCES, progress=False).n_tokens.tolist() == [w - 1 for w in words]
    assert scoring.sentence_scores(bos, SENTENCES, progress=False).n_tokens.tolist() == words


def hf_guide_windows(loaded, text, stride):
    """The HF perplexity guide's strided loop with transformers' loss (independent of _windows)."""
    model = loaded.model
    ids = torch.tensor([loaded.tokenizer(text)["input_ids"]])
    ctx, n = model.config.n_positions, ids.shape[1]
    stride = min(stride, ctx - 1)
    total, count, prev_end = 0.0, 0, 0
    for i in range(0, n, stride):
        begin, end = max(i + stride - ctx, 0), min(i + stride, n)
        window = ids[:, begin:end]
        labels = window.clone()
        labels[:, :-(end - prev_end)] = -100
        valid = int((labels[:, 1:] != -100).sum())
        with torch.no_grad():
            total -= model(window, labels=labels).loss.item() * valid
        count += valid
        prev_end = end
        if end == n:
            break
    return total, count


@pytest.mark.parametrize("stride", [5, 512])
def test_sliding_window(tiny_gpt2_ctx16, stride):
    loaded = tiny_loaded(tiny_gpt2_ctx16, "causal")
    texts = [" ".join(SENTENCES[:3]), "the people is a reason", " ".join(SENTENCES[5:9])]
    lengths = [len(loaded.tokenizer(t)["input_ids"]) for t in texts]
    assert max(lengths) > 3 * 16 and min(lengths) <= 16
    df = scoring.sentence_scores(loaded, texts, stride=stride, progress=False, batch_tokens=40)
    ref = [hf_guide_windows(loaded, t, stride) for t in texts]
    rel_close(df.log_likelihood, [r[0] for r in ref])
    assert df.n_tokens.tolist() == [r[1] for r in ref] == [n - 1 for n in lengths]


# ----------------------------------------------------------------------------- masked (PLL)

def brute_pll(loaded, text, word_l2r=False):
    """One masked copy at a time, full-vocabulary logits of the full model."""
    tok = loaded.tokenizer
    enc = tok(text, return_special_tokens_mask=True)
    ids, special, words = enc["input_ids"], enc["special_tokens_mask"], enc.word_ids()
    scored = [p for p in range(len(ids)) if not special[p]]
    total = 0.0
    for p in scored:
        row = list(ids)
        row[p] = tok.mask_token_id
        if word_l2r:
            for j in range(p + 1, len(ids)):
                if words[j] is not None and words[j] == words[p]:
                    row[j] = tok.mask_token_id
        with torch.no_grad():
            logits = loaded.model(torch.tensor([row])).logits[0, p].double()
        total += torch.log_softmax(logits, -1)[ids[p]].item()
    return total, len(scored)


@pytest.mark.parametrize("which", ["tiny_bert", "tiny_roberta"])
@pytest.mark.parametrize("pll", ["original", "word-l2r"])
def test_pll_equals_brute_force(which, pll, request):
    loaded = tiny_loaded(request.getfixturevalue(which), "masked")
    df = scoring.sentence_scores(loaded, SENTENCES, pll=pll, progress=False, batch_tokens=200)
    ref = [brute_pll(loaded, t, word_l2r=pll == "word-l2r") for t in SENTENCES]
    rel_close(df.log_likelihood, [r[0] for r in ref])
    assert df.n_tokens.tolist() == [r[1] for r in ref]
    assert loaded.model._harms_head_ok


def test_word_l2r_differs_only_for_split_words(tiny_bert):
    loaded = tiny_loaded(tiny_bert, "masked")
    one_piece = "the people is a reason"       # every word a single WordPiece token
    split = SENTENCES[0]                       # "unhappiness" -> un ##happi ##ness
    a = scoring.sentence_scores(loaded, [one_piece, split], pll="original", progress=False)
    b = scoring.sentence_scores(loaded, [one_piece, split], pll="word-l2r", progress=False)
    assert a.log_likelihood[0] == pytest.approx(b.log_likelihood[0], rel=1e-6)
    assert abs(a.log_likelihood[1] - b.log_likelihood[1]) > 1e-2


@pytest.mark.parametrize("arch", ["distilbert", "albert", "electra", "mobilebert"])
def test_mlm_heads_of_other_architectures(arch, tiny_bert):
    """The per-architecture MLM head at masked positions equals full-logit brute force."""
    import transformers as tf

    tok = tf.AutoTokenizer.from_pretrained(tiny_bert)
    v = len(tok)
    cfg = {"distilbert": tf.DistilBertConfig(vocab_size=v, dim=32, n_layers=2, n_heads=2, hidden_dim=64),
           "albert": tf.AlbertConfig(vocab_size=v, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64),
           "electra": tf.ElectraConfig(vocab_size=v, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                                       num_attention_heads=2, intermediate_size=64),
           "mobilebert": tf.MobileBertConfig(vocab_size=v, hidden_size=32, embedding_size=16,
                                             intra_bottleneck_size=16, num_hidden_layers=2,
                                             num_attention_heads=2, intermediate_size=32,
                                             true_hidden_size=16)}[arch]
    torch.manual_seed(0)
    model = tf.AutoModelForMaskedLM.from_config(cfg).eval()
    from helpers.models import LoadedModel

    loaded = LoadedModel(name=arch, model=model, tokenizer=tok, objective="masked", fingerprint=arch)
    df = scoring.sentence_scores(loaded, SENTENCES[:3], progress=False)
    rel_close(df.log_likelihood, [brute_pll(loaded, t)[0] for t in SENTENCES[:3]])
    assert model._harms_head_ok


def upstream_pseudo_perplexity(model, input_ids):
    """microsoft/SafeNLP calculate_psudo_perplexity, written the same way (one sentence)."""
    repeat_input = input_ids.repeat(input_ids.size(-1) - 2, 1)
    mask = torch.ones(input_ids.size(-1) - 1).diag(1)[:-2]
    masked_input = repeat_input.masked_fill(mask == 1, 103)
    labels = repeat_input.masked_fill(masked_input != 103, -100)
    with torch.no_grad():
        loss = model(masked_input, labels=labels).loss
    return float(np.exp(loss.item()))


@pytest.mark.parametrize("which", ["tiny_bert", "tiny_roberta"])
def test_upstream_mask_id_equals_upstream_formula(which, request):
    loaded = tiny_loaded(request.getfixturevalue(which), "masked")
    tok = loaded.tokenizer
    assert tok.mask_token_id != 103                 # 103 is an ordinary token in both tiny vocabularies
    # a sentence that contains token 103 itself: upstream then also scores it in every copy
    piece = tok.convert_ids_to_tokens(103).lstrip("\u0120")      # a word (BERT) or a byte (RoBERTa)
    candidates = [f"{a} {piece} {b}" for a, b in [("people", "is real"), ("the", "of them"), ("a", "")]]
    with_103 = next(t for t in candidates + [piece] if 103 in tok(t)["input_ids"])
    texts = SENTENCES[:4] + [with_103]
    df = scoring.sentence_scores(loaded, texts, upstream_mask_id=True, progress=False, batch_tokens=100)
    ref = [upstream_pseudo_perplexity(loaded.model, torch.tensor([tok(t)["input_ids"]])) for t in texts]
    rel_close(df.perplexity, ref)
    n = len(tok(with_103)["input_ids"])
    assert df.n_tokens.iloc[-1] == (n - 2) * 2 - 1   # the masked token + the other 103 in each copy
    default = scoring.sentence_scores(loaded, texts, progress=False)
    assert not np.allclose(default.perplexity, df.perplexity)


# ----------------------------------------------------------------------------- XLNet

def brute_xlnet(model, ids, positions):
    """Per scored position i: the prefix x_<=i, token i hidden, one target; l2r perm_mask."""
    total = 0.0
    for i in positions:
        x = torch.tensor([ids[:i + 1]])
        perm = torch.triu(torch.ones(i + 1, i + 1)).unsqueeze(0)       # k may not see j >= k
        tmap = torch.zeros(1, 1, i + 1)
        tmap[0, 0, i] = 1.0
        with torch.no_grad():
            logits = model(x, perm_mask=perm, target_mapping=tmap, use_mems=False).logits[0, 0].double()
        total += torch.log_softmax(logits, -1)[ids[i]].item()
    return total


def test_xlnet_equals_brute_force(tiny_xlnet):
    loaded = tiny_loaded(tiny_xlnet, "permutation")
    tok = loaded.tokenizer
    df = scoring.sentence_scores(loaded, SENTENCES, progress=False, batch_tokens=50)
    for k, text in enumerate(SENTENCES):
        enc = tok(text, return_special_tokens_mask=True)
        ids = enc["input_ids"]
        assert tok.convert_ids_to_tokens(ids[-2:]) == ["<sep>", "<cls>"]
        real = [p for p in range(len(ids)) if not enc["special_tokens_mask"][p]]
        assert df.n_tokens[k] == len(real) - 1
        assert df.log_likelihood[k] == pytest.approx(brute_xlnet(loaded.model, ids, real[1:]), rel=1e-4)


# ----------------------------------------------------------------------------- batching, errors, cache

@pytest.mark.parametrize("which,objective", [("tiny_gpt2", "causal"), ("tiny_bert", "masked"),
                                             ("tiny_roberta", "masked"), ("tiny_xlnet", "permutation")])
def test_batch_budget_does_not_change_scores(which, objective, request):
    loaded = tiny_loaded(request.getfixturevalue(which), objective)
    small = scoring.sentence_scores(loaded, SENTENCES, batch_tokens=1, progress=False)
    large = scoring.sentence_scores(loaded, SENTENCES, batch_tokens=100_000, progress=False)
    assert small.n_tokens.tolist() == large.n_tokens.tolist()
    rel_close(small.log_likelihood, large.log_likelihood, rtol=1e-5)


def test_empty_text_names_row(tiny_gpt2):
    loaded = tiny_loaded(tiny_gpt2, "causal")
    with pytest.raises(InputError, match="row 2"):
        scoring.sentence_scores(loaded, ["a reason", "people", "  "], progress=False)
    with pytest.raises(InputError, match="row 1"):
        scoring.sentence_scores(loaded, ["a reason", None], progress=False)


def test_single_token_sentence_has_nan_perplexity(tiny_gpt2):
    loaded = tiny_loaded(tiny_gpt2, "causal")
    df = scoring.sentence_scores(loaded, ["the"], progress=False)
    assert df.n_tokens[0] == 0 and df.log_likelihood[0] == 0 and math.isnan(df.perplexity[0])


def test_score_uses_cache(tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path))
    loaded = tiny_loaded(tiny_bert, "masked")
    first = scoring.score(loaded, SENTENCES[:3], progress=False)
    rel_close(first.log_likelihood, scoring.sentence_scores(loaded, SENTENCES[:3], progress=False).log_likelihood)

    def boom(*a, **k):
        raise AssertionError("recomputed although cached")

    monkeypatch.setattr(scoring, "sentence_scores", boom)
    again = scoring.score(loaded, SENTENCES[:3], progress=False)
    rel_close(again.log_likelihood, first.log_likelihood, rtol=1e-12)
    with pytest.raises(AssertionError, match="recomputed"):     # another setting is another key
        scoring.score(loaded, SENTENCES[:3], pll="word-l2r", progress=False)
