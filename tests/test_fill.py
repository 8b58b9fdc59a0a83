"""Top-k fill-ins (helpers.lm.fill) against transformers' fill-mask pipeline and brute force."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from conftest import BERT_SPECIALS, SENTENCES
from helpers.errors import InputError
from helpers.lm import fill

TEMPLATES = ["women are just as [MASK] as men .", "the [MASK] of some people is not a reason to hate them .",
             "i think that [MASK] should be treated with respect"]


def _softmax_at(model, ids, pos):
    with torch.no_grad():
        return torch.softmax(model(torch.as_tensor([ids])).logits[0, pos].double(), -1).numpy()


def test_masked_top_k_equals_the_fill_mask_pipeline(tiny_bert, loaded_factory):
    from transformers import pipeline

    lm = loaded_factory(tiny_bert, "masked")
    got = fill.top_k(lm, TEMPLATES, k=5, whole_words=False)
    pipe = pipeline("fill-mask", model=lm.model, tokenizer=lm.tokenizer, top_k=40, device="cpu")
    special = set(lm.tokenizer.all_special_ids)
    for n, t in enumerate(TEMPLATES):
        ref = [r for r in pipe(t) if r["token"] not in special][:5]
        mine = got[got["template_id"] == n]
        assert list(mine["rank"]) == [1, 2, 3, 4, 5]
        assert list(mine["token"]) == [lm.tokenizer.convert_ids_to_tokens(r["token"]) for r in ref]
        np.testing.assert_allclose(mine["probability"], [r["score"] for r in ref], atol=1e-5)


def test_masked_whole_words_and_skip_against_brute_force(tiny_bert, loaded_factory):
    lm = loaded_factory(tiny_bert, "masked")
    tok = lm.tokenizer
    skip = {"women", "the", "."}
    got = fill.top_k(lm, TEMPLATES, k=6, skip=skip, max_pieces=1)
    vocab = tok.convert_ids_to_tokens(list(range(len(tok))))
    for n, t in enumerate(TEMPLATES):
        ids = tok(t.replace("[MASK]", tok.mask_token))["input_ids"]
        p = _softmax_at(lm.model, ids, ids.index(tok.mask_token_id))
        keep = [i for i in np.argsort(-p, kind="stable") if not vocab[i].startswith("##")
                and i not in tok.all_special_ids and vocab[i] not in skip][:6]
        mine = got[got["template_id"] == n]
        assert list(mine["word"]) == [vocab[i] for i in keep]
        np.testing.assert_allclose(mine["probability"], p[keep], atol=1e-6)
        assert not set(mine["word"]) & skip


def test_causal_next_token_and_greedy_whole_words(tiny_gpt2_bos, loaded_factory):
    lm = loaded_factory(tiny_gpt2_bos, "causal")
    tok, model = lm.tokenizer, lm.model
    raw = fill.top_k(lm, TEMPLATES, k=40, whole_words=False)
    words = fill.top_k(lm, TEMPLATES, k=4, max_pieces=3)
    starts = fill.word_starts(tok)
    for n, t in enumerate(TEMPLATES):
        prefix = tok(t.split("[MASK]")[0].rstrip())["input_ids"]
        p = _softmax_at(model, prefix, len(prefix) - 1)
        best = [i for i in np.argsort(-p, kind="stable") if i not in tok.all_special_ids][:40]
        mine = raw[raw["template_id"] == n]                      # raw pieces: a lone space piece included
        np.testing.assert_allclose(mine["probability"], p[best], atol=1e-6)
        assert list(mine["token"]) == tok.convert_ids_to_tokens(best)
        mine = words[words["template_id"] == n]
        assert list(mine["probability"]) == sorted(mine["probability"], reverse=True) and len(mine) == 4
        assert mine["word"].is_unique
        for r in mine.itertuples():
            pieces = tok.convert_tokens_to_ids(r.token.split(" "))
            assert starts[pieces[0]] and 1 <= len(pieces) <= 3
            prob, ctx = 1.0, list(prefix)
            for piece in pieces:                                  # the product of the pieces' probabilities
                q = _softmax_at(model, ctx, len(ctx) - 1)
                prob *= q[piece]
                ctx.append(piece)
            assert r.probability == pytest.approx(prob, rel=1e-5)
            if len(pieces) < 3:                                   # stopped because the next piece starts a word
                nxt = int(np.argmax(_softmax_at(model, ctx, len(ctx) - 1)))
                assert starts[nxt] or nxt in tok.all_special_ids or not tok.decode([nxt]).strip().isalnum()


def test_batching_does_not_change_fill_ins(tiny_bert, tiny_gpt2, loaded_factory):
    for path, objective in ((tiny_bert, "masked"), (tiny_gpt2, "causal")):
        lm = loaded_factory(path, objective)
        a = fill.top_k(lm, TEMPLATES, k=5, batch_tokens=8)
        b = fill.top_k(lm, TEMPLATES, k=5, batch_tokens=100_000)
        assert list(a["word"]) == list(b["word"])
        np.testing.assert_allclose(a["probability"], b["probability"], atol=1e-6)


@pytest.mark.parametrize("templates,k,message", [
    (["no blank"], 3, "exactly one blank"), (["[MASK] [MASK]"], 3, "exactly one blank"),
    ("women are [MASK]", 3, "not one string"), (["women are [MASK]"], 0, "positive integer"), ([], 3, "no templates"),
])
def test_bad_input_is_one_line(tiny_bert, loaded_factory, templates, k, message):
    lm = loaded_factory(tiny_bert, "masked")
    with pytest.raises(InputError, match=message) as e:
        fill.top_k(lm, templates, k=k)
    assert "\n" not in str(e.value)


def test_a_model_without_fill_ins_is_one_line(tiny_xlnet, loaded_factory):
    with pytest.raises(InputError, match="masked or causal LM"):
        fill.top_k(loaded_factory(tiny_xlnet, "permutation"), ["the [MASK] ."], k=2)


def test_skip_by_language_uses_stopwords_iso_and_punctuation(tiny_bert, loaded_factory):
    import string

    import stopwordsiso

    lm = loaded_factory(tiny_bert, "masked")
    tok = lm.tokenizer
    listed = {w.lower() for w in stopwordsiso.stopwords("en")} | set(string.punctuation)
    assert fill.stop_words("en") == listed
    got = fill.top_k(lm, TEMPLATES, k=8, skip="en")
    vocab = tok.convert_ids_to_tokens(list(range(len(tok))))
    for n, t in enumerate(TEMPLATES):                         # brute force: full softmax, filter, sort
        ids = tok(t.replace("[MASK]", tok.mask_token))["input_ids"]
        p = _softmax_at(lm.model, ids, ids.index(tok.mask_token_id))
        keep = [i for i in np.argsort(-p, kind="stable") if not vocab[i].startswith("##")
                and i not in tok.all_special_ids and vocab[i] not in listed
                and any(c.isalpha() for c in vocab[i]) and vocab[i][0] not in "'\u2019"][:8]
        assert list(got[got["template_id"] == n]["word"]) == [vocab[i] for i in keep]
    with pytest.raises(InputError, match="one of en, fr, ar"):
        fill.top_k(lm, TEMPLATES, k=3, skip="de")


def _causal_brute_force(lm, template: str, k: int, max_pieces: int) -> list[tuple[str, float]]:
    """Every word-starting piece continued greedily one forward pass at a time, the best path
    per word kept, sorted: the k best words."""
    tok, model = lm.tokenizer, lm.model
    starts = fill.word_starts(tok)
    prefix = tok(template.split("[MASK]")[0].rstrip())["input_ids"]
    first = _softmax_at(model, prefix, len(prefix) - 1)
    best: dict[str, float] = {}
    for i in np.flatnonzero(starts):
        pieces, prob = [int(i)], float(first[i])
        while len(pieces) < max_pieces:
            q = _softmax_at(model, prefix + pieces, len(prefix) + len(pieces) - 1)
            j = int(np.argmax(q))
            if starts[j] or j in tok.all_special_ids or not any(c.isalnum() for c in tok.decode([j])):
                break
            pieces.append(j)
            prob *= float(q[j])
        word = tok.decode(pieces).strip()
        if word and prob > best.get(word, -1.0):
            best[word] = prob
    return sorted(best.items(), key=lambda kv: -kv[1])[:k]


def test_causal_whole_words_in_rounds_equal_brute_force_over_every_piece(tiny_gpt2, loaded_factory, monkeypatch):
    """The batched rounds with their stopping rule give the brute force's k words."""
    lm = loaded_factory(tiny_gpt2, "causal")
    monkeypatch.setattr(fill, "_ROUND", 1)                       # rounds of k + 4 = 9 pieces
    got = fill.top_k(lm, TEMPLATES, k=5, max_pieces=3, cache=False)
    for n, t in enumerate(TEMPLATES):
        ref = _causal_brute_force(lm, t, 5, 3)
        mine = got[got["template_id"] == n]
        assert list(mine["word"]) == [w for w, _ in ref]
        np.testing.assert_allclose(mine["probability"], [p for _, p in ref], rtol=1e-6)


def test_causal_prefixes_of_one_length_run_together_and_equal_brute_force(tiny_gpt2, loaded_factory, monkeypatch):
    """Templates whose text before the blank has the same number of tokens share their batches
    (prefix pass and every continuation step, several at a time); each still gets the brute
    force's words, and the same as when it runs alone."""
    lm = loaded_factory(tiny_gpt2, "causal")
    words = sorted({w for s in SENTENCES for w in s.split() if w.isalpha()})
    length = {w: len(lm.tokenizer(f"{w} are")["input_ids"]) for w in words}
    common = max(set(length.values()), key=list(length.values()).count)
    templates = [f"{w} are [MASK] ." for w in [w for w in words if length[w] == common][:5]
                 + [w for w in words if length[w] != common][:1]]
    assert len(templates) == 6                  # five prefixes of one length, one of another
    groups = []
    real = fill._causal_group
    monkeypatch.setattr(fill, "_causal_group", lambda lm_, prefixes, *a: groups.append(len(prefixes))
                        or real(lm_, prefixes, *a))
    monkeypatch.setattr(fill, "_PREFIXES_TOGETHER", 2)               # and a group split in two
    together = fill.top_k(lm, templates, k=5, max_pieces=3, cache=False)
    assert sorted(groups) == [1, 1, 2, 2]
    monkeypatch.setattr(fill, "_PREFIXES_TOGETHER", 1)
    alone = fill.top_k(lm, templates, k=5, max_pieces=3, cache=False)
    assert list(together["word"]) == list(alone["word"])
    np.testing.assert_allclose(together["probability"], alone["probability"], rtol=1e-5)
    for n, t in enumerate(templates):
        ref = _causal_brute_force(lm, t, 5, 3)
        mine = together[together["template_id"] == n]
        assert list(mine["word"]) == [w for w, _ in ref]
        np.testing.assert_allclose(mine["probability"], [p for _, p in ref], rtol=1e-5)


def test_continuing_pieces_of_several_prefixes_in_one_batch_equals_each_prefix_alone(tiny_gpt2, loaded_factory,
                                                                                   monkeypatch):
    """:func:`fill._continue` with ``rows``: each item continues from its own prefix's row of a
    cache of several prefixes. With no token ending a word (none starts one, none counts as
    punctuation) every piece is continued to ``max_pieces``, so every step depends on the prefix."""
    monkeypatch.setattr(fill, "_is_punctuation", lambda word: False)
    lm = loaded_factory(tiny_gpt2, "causal")
    tok, model = lm.tokenizer, lm.model
    prefixes = [tok(f"{w} are")["input_ids"] for w in ("women", "men")]
    prefixes = [p[:min(map(len, prefixes))] for p in prefixes]
    assert prefixes[0] != prefixes[1]
    starts = np.zeros(len(tok), dtype=bool)
    items = [(5, 0.5), (7, 0.25), (9, 0.125)]

    def cache_of(rows):
        with torch.inference_mode():
            return model(input_ids=torch.as_tensor(rows), use_cache=True).past_key_values

    both = fill._continue(lm, cache_of(prefixes), items + items, starts, 4, rows=[0, 0, 0, 1, 1, 1])
    for n, prefix in enumerate(prefixes):
        alone = fill._continue(lm, cache_of([prefix]), items, starts, 4, rows=[0, 0, 0])
        mine = both[3 * n:3 * n + 3]
        assert [pieces for pieces, _ in mine] == [pieces for pieces, _ in alone]
        np.testing.assert_allclose([p for _, p in mine], [p for _, p in alone], rtol=1e-6)
    assert [pieces for pieces, _ in both[:3]] != [pieces for pieces, _ in both[3:]]    # the prefix matters


def _masked_brute_force(lm, template: str, k: int, max_pieces: int, skip: set[str]):
    """Every mask count n and every word-starting first piece, the later masks filled left to
    right by their best continuation piece one forward pass at a time; best path per word."""
    tok, model = lm.tokenizer, lm.model
    vocab = tok.convert_ids_to_tokens(list(range(len(tok))))
    special = set(tok.all_special_ids)
    starts = [i for i, t in enumerate(vocab) if not t.startswith("##") and i not in special]
    cont = np.array([t.startswith("##") and any(c.isalnum() for c in t[2:]) for t in vocab])
    ids = tok(template.replace("[MASK]", tok.mask_token))["input_ids"]
    pos = ids.index(tok.mask_token_id)
    best: dict[str, float] = {}
    for n in range(1, max_pieces + 1):
        row = ids[:pos] + [tok.mask_token_id] * n + ids[pos + 1:]
        first = _softmax_at(model, row, pos)
        for i in starts:
            filled, prob = list(row), float(first[i])
            filled[pos] = i
            for j in range(1, n):
                q = np.where(cont, _softmax_at(model, filled, pos + j), -1.0)
                filled[pos + j] = int(np.argmax(q))
                prob *= float(q.max())
            word = tok.decode(filled[pos:pos + n]).strip()
            if word and word.lower() not in skip and prob > best.get(word, -1.0):
                best[word] = prob
    return sorted(best.items(), key=lambda kv: -kv[1])[:k]


@pytest.mark.parametrize("case", ["most one-piece words skipped", "filler skipped"])
def test_masked_multi_piece_words_equal_brute_force_over_every_mask_count(tiny_bert, loaded_factory,
                                                                          monkeypatch, case):
    """The blank as 1, 2 or 3 masks. With every one-piece word but three skipped, the k words
    must come from several pieces: the per-template rounds and their stopping rule are
    exercised. With the filler words and single characters skipped and k = 30, a few
    multi-piece words reach the top k through the batched path alone."""
    lm = loaded_factory(tiny_bert, "masked")
    vocab = lm.tokenizer.convert_ids_to_tokens(list(range(len(lm.tokenizer))))
    if case == "filler skipped":
        skip, k = {t for t in vocab if re.fullmatch(r"word\d+|.", t)}, 30

        def no_fallback(*args, **kwargs):
            raise AssertionError("the batched path fell back to rounds")
        monkeypatch.setattr(fill, "_masked_words", no_fallback)
    else:
        skip, k = {t.lower() for t in vocab if not t.startswith("##")} - {"car", "play", "cat"}, 4
        monkeypatch.setattr(fill, "_ROUND", 1)                   # rounds of k + 4 = 8 pieces
    got = fill.top_k(lm, TEMPLATES[:2], k=k, max_pieces=3, skip=skip, cache=False, progress=False)
    for n, t in enumerate(TEMPLATES[:2]):
        ref = _masked_brute_force(lm, t, k, 3, skip)
        mine = got[got["template_id"] == n]
        assert list(mine["word"]) == [w for w, _ in ref]
        np.testing.assert_allclose(mine["probability"], [p for _, p in ref], rtol=2e-5)   # padded batches
        assert any(len(tok.split()) > 1 for tok in mine["token"])       # multi-piece words are found
    one = fill.top_k(lm, TEMPLATES[:1], k=4, max_pieces=1, cache=False, progress=False)
    assert all(len(tok.split()) == 1 for tok in one["token"])


def test_lowercase_fills_the_lower_cased_template(tiny_gpt2, loaded_factory):
    lm = loaded_factory(tiny_gpt2, "causal")
    cased = ["Women are just as [MASK] as Men ."]
    low = fill.top_k(lm, cased, k=3, lowercase=True, cache=False, progress=False)
    ref = fill.top_k(lm, [cased[0].replace("Women", "women").replace("Men", "men")], k=3, cache=False,
                     progress=False)
    assert list(low["word"]) == list(ref["word"]) and set(low["template"]) == set(cased)
    np.testing.assert_allclose(low["probability"], ref["probability"], rtol=1e-9)


def test_fill_ins_are_cached_per_template_and_settings(tiny_gpt2, loaded_factory, private_dirs, monkeypatch):
    from helpers.models import LazyModel

    lm = loaded_factory(tiny_gpt2, "causal")
    first = fill.top_k(lm, TEMPLATES, k=4)
    calls = []
    monkeypatch.setattr(fill, "_fill_ins", lambda *a, **kw: calls.append(a[1]) or [[([0], "x", 0.5)]] * len(a[1]))
    lazy = LazyModel(name=lm.name, objective="causal", fingerprint=lm.fingerprint, spec=None, load_kwargs={},
                     tokenizer_fingerprint=lm.identity.get("tokenizer"), dtype=lm.identity.get("dtype"),
                     max_length=lm.identity.get("max_length"))
    assert lazy.identity == lm.identity
    again = fill.top_k(lazy, TEMPLATES[::-1], k=4)                # all cached: no weights, no computation
    assert calls == [] and lazy.loaded is None
    for n, t in enumerate(TEMPLATES[::-1]):
        a, b = again[again["template"] == t], first[first["template"] == t]
        assert list(a["word"]) == list(b["word"]) and list(a["probability"]) == list(b["probability"])
    fill.top_k(lm, TEMPLATES, k=3)                                # another k: computed again
    fill.top_k(lm, TEMPLATES, k=4, skip={"the"})                 # another skip list: computed again
    assert calls == [TEMPLATES, TEMPLATES]


class _Vocab:
    """A tokenizer stand-in: ``convert_ids_to_tokens`` over a fixed vocabulary."""
    __slots__ = ("vocab", "all_special_ids")

    def __init__(self, vocab, special=()):
        self.vocab, self.all_special_ids = vocab, list(special)

    def __len__(self):
        return len(self.vocab)

    def convert_ids_to_tokens(self, ids):
        return [self.vocab[i] for i in ids]


def test_word_starts_follow_the_vocabulary_s_own_convention():
    # SentencePiece (Gemma) vocabularies also hold Markdown tokens such as "##" and "###x":
    # they must not turn the marker convention into WordPiece's
    sp = _Vocab(["<bos>", "\u2581the", "\u2581\u062d", "\u0642\u064a\u0642\u0629", "##", "###Title", "ing",
                 "\u2581walk"], special=[0])
    assert fill.word_starts(sp).tolist() == [False, True, True, False, False, False, False, True]
    wp = _Vocab(["[CLS]", "the", "##ing", "walk", "##s", "\u2581odd"], special=[0])
    assert fill.word_starts(wp).tolist() == [False, True, False, True, False, True]
    bpe = _Vocab(["<|endoftext|>", "\u0120the", "ing", "\u0120walk"], special=[0])
    assert fill.word_starts(bpe).tolist() == [False, True, False, True]
    words = _Vocab(["[CLS]", "the", "walk", ".", "[SEP]"], special=[0, 4])       # whole words, no convention
    assert fill.word_starts(words).tolist() == [False, True, True, True, False]


# ----------------------------------------------------------------- vocabularies of whole words

WORDS = sorted({w for s in SENTENCES for w in s.split()})


@pytest.fixture(scope="module")
def word_level_bert(tmp_path_factory):
    """BertForMaskedLM whose WordPiece vocabulary holds whole words only: no ``##`` piece."""
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    path = tmp_path_factory.mktemp("word_level_bert")
    (path / "vocab.txt").write_text("\n".join(BERT_SPECIALS + WORDS) + "\n")
    tok = BertTokenizer(vocab=str(path / "vocab.txt"))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, initializer_range=0.3)
    BertForMaskedLM(cfg).eval().save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def word_level_gpt2(tmp_path_factory):
    """GPT2LMHeadModel over a ``tokenizers`` WordLevel vocabulary (whitespace-split words); one
    word carries the SentencePiece marker, which must not turn it into a marker vocabulary."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("word_level_gpt2")
    vocab = {w: i for i, w in enumerate(["<|endoftext|>", "[UNK]", "\u2581odd", *WORDS])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", eos_token="<|endoftext|>")
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2, n_positions=64,
                     bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
    GPT2LMHeadModel(cfg).eval().save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _blank_distribution(lm, template):
    """The model's distribution at the blank: the mask (masked LMs), the next token after the
    text before the blank (causal LMs)."""
    tok = lm.tokenizer
    if lm.objective == "masked":
        ids = tok(template.replace("[MASK]", tok.mask_token))["input_ids"]
        return _softmax_at(lm.model, ids, ids.index(tok.mask_token_id))
    ids = tok(template.split("[MASK]")[0].rstrip())["input_ids"]
    return _softmax_at(lm.model, ids, len(ids) - 1)


@pytest.mark.parametrize("fixture,objective", [("word_level_bert", "masked"), ("word_level_gpt2", "causal")])
def test_a_vocabulary_of_whole_words_fills_every_blank(fixture, objective, request, loaded_factory):
    """Every non-special token is a word: whole-word top-k is the model's own ranking of them at
    the blank, k rows per template; asked for more than the vocabulary holds, every word once
    (with positive probability: no multi-piece "word" of several masks)."""
    lm = loaded_factory(request.getfixturevalue(fixture), objective)
    tok = lm.tokenizer
    special = set(tok.all_special_ids)
    words = [i for i in range(len(tok)) if i not in special]
    for k in (5, len(tok) + 3):
        got = fill.top_k(lm, TEMPLATES, k=k, cache=False, progress=False)
        for n, t in enumerate(TEMPLATES):
            p = _blank_distribution(lm, t)
            best = [i for i in np.argsort(-p, kind="stable") if i not in special][:k]
            mine = got[got["template_id"] == n]
            assert len(mine) == min(k, len(words)) and list(mine["rank"]) == list(range(1, len(mine) + 1))
            assert list(mine["token"]) == tok.convert_ids_to_tokens(best)
            np.testing.assert_allclose(mine["probability"], p[best], atol=1e-6)      # float32, batched


def test_a_template_without_fill_ins_is_one_line_naming_it(word_level_bert, loaded_factory, monkeypatch):
    lm = loaded_factory(word_level_bert, "masked")
    templates = TEMPLATES + ["the [MASK] .", "a [MASK] ."]
    with pytest.raises(InputError) as e:                      # every word skipped
        fill.top_k(lm, templates, k=3, skip=WORDS, cache=False, progress=False)
    message = str(e.value)
    assert "\n" not in message and message.endswith("every candidate is in the skip list or is no word")
    assert f"row 0 {TEMPLATES[0]!r}, row 1 {TEMPLATES[1]!r}, row 2 {TEMPLATES[2]!r} and 2 more" in message
    with pytest.raises(InputError, match=r"row 1 'the \[MASK\] \.': every candidate is in the skip list$"):
        fill.top_k(lm, ["women are [MASK] .", "the [MASK] ."], k=3, whole_words=False, skip=WORDS, cache=False,
                   progress=False)
    monkeypatch.setattr(fill, "word_starts", lambda tok: np.zeros(len(tok), dtype=bool))
    with pytest.raises(InputError, match="no token of its vocabulary can begin a word"):
        fill.top_k(lm, TEMPLATES, k=3, max_pieces=1, cache=False, progress=False)
