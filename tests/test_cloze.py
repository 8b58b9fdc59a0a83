"""Cloze scores (helpers.lm.cloze) against brute force: one forward pass per candidate, built
from strings and token ids without the engine's offsets, batching or cache."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers.errors import InputError
from helpers.lm import cloze, scoring

TEMPLATES = ["women are just as [MASK] as men .", "the [MASK] of some people is not a reason to hate them ."]
CANDIDATES = ["capable", "unhappiness", "hateful", "kindness"]        # multi-token pieces included


def _log_softmax(logits, pos, targets):
    return sum(float(torch.log_softmax(logits[p], -1)[t]) for p, t in zip(pos, targets))


def _brute_masked(lm, template, candidate, *, variant="joint", mask_word=None):
    """The bias-bench way, from token ids: prefix, candidate (encoded on its own, with its
    leading space where the tokenizer marks one) and suffix tokens joined, the candidate's k
    tokens (and ``mask_word``'s, after the blank) replaced by the mask id."""
    tok, model = lm.tokenizer, lm.model
    prefix, suffix = cloze.split_template(template)
    space = " " if prefix.endswith(" ") and _leading_space(tok) else ""
    enc = lambda text: tok(text, add_special_tokens=False)["input_ids"]       # noqa: E731
    before, cand_ids, after = enc(prefix.rstrip()) if prefix.strip() else [], enc(space + candidate), enc(suffix)
    hidden = []
    if mask_word:
        word = enc((" " if _leading_space(tok) else "") + mask_word)
        k = next(i for i in range(len(after)) if after[i:i + len(word)] == word)
        hidden = [len(before) + len(cand_ids) + k + j for j in range(len(word))]
    body = before + cand_ids + after
    offset = 1                                                   # [CLS] / <s> body [SEP] / </s>
    ids = torch.as_tensor([tok.cls_token_id] + body + [tok.sep_token_id])
    pos = [offset + len(before) + j for j in range(len(cand_ids))]
    assert ids[pos].tolist() == cand_ids
    ids[pos + [offset + h for h in hidden]] = tok.mask_token_id
    total = 0.0
    with torch.no_grad():
        if variant == "joint":
            return _log_softmax(model(ids[None]).logits[0], pos, cand_ids)
        for i, (p, t) in enumerate(zip(pos, cand_ids)):
            step = ids.clone()
            step[pos[:i]] = torch.as_tensor(cand_ids[:i], dtype=torch.long)
            total += _log_softmax(model(step[None]).logits[0], [p], [t])
    return total


def _leading_space(tok):
    return tok("a", add_special_tokens=False)["input_ids"] != tok(" a", add_special_tokens=False)["input_ids"]


@pytest.mark.parametrize("variant", ["joint", "l2r"])
@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_roberta"])
def test_masked_cloze_equals_one_forward_per_candidate(fixture, variant, request, loaded_factory):
    lm = loaded_factory(request.getfixturevalue(fixture), "masked")
    got = cloze.cloze_logprobs(lm, TEMPLATES, CANDIDATES, masked=variant, cache=False, progress=False)
    assert len(got) == len(TEMPLATES) * len(CANDIDATES) and set(got["method"]) == {f"masked-{variant}"}
    assert (got["n_tokens"] > 1).any()                                 # multi-token candidates are tested
    for r in got.itertuples():
        assert r.log_prob == pytest.approx(_brute_masked(lm, r.template, r.candidate, variant=variant), abs=1e-5)


def test_joint_and_l2r_agree_on_single_tokens_and_differ_on_several(tiny_bert, loaded_factory):
    lm = loaded_factory(tiny_bert, "masked")
    j = cloze.cloze_logprobs(lm, TEMPLATES, CANDIDATES, cache=False, progress=False)
    l = cloze.cloze_logprobs(lm, TEMPLATES, CANDIDATES, masked="l2r", cache=False, progress=False)
    one = j["n_tokens"] == 1
    np.testing.assert_allclose(j.loc[one, "log_prob"], l.loc[one, "log_prob"], atol=1e-6)
    assert not np.allclose(j.loc[~one, "log_prob"], l.loc[~one, "log_prob"], atol=1e-4)


def test_mask_words_is_kuritas_prior(tiny_bert, loaded_factory):
    lm = loaded_factory(tiny_bert, "masked")
    template = "[MASK] are just as capable as men ."
    got = cloze.kurita_log_ratio(lm, [template], ["women", "people"], ["capable"], progress=False, cache=False)
    for r in got.itertuples():
        prior = _brute_masked(lm, template, r.candidate, mask_word="capable")
        assert r.prior_log_prob == pytest.approx(prior, abs=1e-5)
        assert r.log_ratio == pytest.approx(_brute_masked(lm, template, r.candidate) - prior, abs=1e-5)


def test_causal_next_token_and_sentence_methods(tiny_gpt2, tiny_gpt2_bos, loaded_factory):
    for path in (tiny_gpt2, tiny_gpt2_bos):
        lm = loaded_factory(path, "causal")
        tok, model = lm.tokenizer, lm.model
        last = "women are just as capable as [MASK] ."
        got = cloze.cloze_logprobs(lm, [last, TEMPLATES[1]], CANDIDATES, cache=False, progress=False)
        assert list(got["method"].unique()) == ["next-token", "sentence"]
        for r in got[got["method"] == "next-token"].itertuples():
            ctx = tok("women are just as capable as")["input_ids"]
            cand = tok(" " + r.candidate, add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                logits = model(torch.as_tensor([ctx + cand])).logits[0]
            brute = _log_softmax(logits, range(len(ctx) - 1, len(ctx) + len(cand) - 1), cand)
            assert r.log_prob == pytest.approx(brute, abs=1e-5) and r.n_tokens == len(cand)
        sent = got[got["method"] == "sentence"]
        filled = [cloze.fill(t, c)[0] for t, c in zip(sent["template"], sent["candidate"])]
        ref = scoring.sentence_scores(lm, filled, progress=False)
        np.testing.assert_allclose(sent["log_prob"], ref["log_likelihood"], atol=1e-5)
        for text, ll in zip(filled, sent["log_prob"]):                  # and one unbatched forward each
            ids = torch.as_tensor([tok(text)["input_ids"]])
            with torch.no_grad():
                loss = model(ids, labels=ids).loss
            assert ll == pytest.approx(-float(loss) * (ids.shape[1] - 1), abs=1e-4)


@pytest.mark.parametrize("variant", ["joint", "l2r"])
def test_xlnet_cloze_equals_one_forward_per_candidate(tiny_xlnet, variant, loaded_factory):
    lm = loaded_factory(tiny_xlnet, "permutation")
    tok, model = lm.tokenizer, lm.model
    got = cloze.cloze_logprobs(lm, TEMPLATES, CANDIDATES, masked=variant, cache=False, progress=False)
    for r in got.itertuples():
        prefix, suffix = cloze.split_template(r.template)
        n_prefix = len(tok(prefix.rstrip(), add_special_tokens=False)["input_ids"])
        cand = tok(" " + r.candidate, add_special_tokens=False)["input_ids"]
        ids = tok(prefix + r.candidate + suffix)["input_ids"]
        assert ids[n_prefix:n_prefix + len(cand)] == cand
        pos = list(range(n_prefix, n_prefix + len(cand)))
        steps = [(pos, pos)] if variant == "joint" else [(pos[i:], [pos[i]]) for i in range(len(pos))]
        brute = 0.0
        for hidden, scored in steps:
            L = len(ids)
            perm = torch.zeros(1, L, L)
            perm[0, :, hidden] = 1.0
            tmap = torch.zeros(1, len(scored), L)
            tmap[0, range(len(scored)), scored] = 1.0
            with torch.no_grad():
                logits = model(torch.as_tensor([ids]), perm_mask=perm, target_mapping=tmap).logits[0]
            brute += _log_softmax(logits, range(len(scored)), [ids[p] for p in scored])
        assert r.log_prob == pytest.approx(brute, abs=1e-5)


def test_batching_per_template_lists_and_the_cache(tiny_bert, loaded_factory, tmp_path, monkeypatch):
    from helpers import models

    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path))
    lm = loaded_factory(tiny_bert, "masked")
    small = cloze.cloze_logprobs(lm, TEMPLATES, CANDIDATES, batch_tokens=8, cache=False, progress=False)
    big = cloze.cloze_logprobs(lm, TEMPLATES, CANDIDATES, batch_tokens=100_000, cache=False, progress=False)
    np.testing.assert_allclose(small["log_prob"], big["log_prob"], atol=1e-5)
    per = cloze.cloze_logprobs(lm, TEMPLATES, [CANDIDATES[:1], CANDIDATES[2:]], cache=False, progress=False)
    assert list(per["candidate"]) == [CANDIDATES[0], *CANDIDATES[2:]]
    handle = models.lazy(str(tiny_bert))
    first = cloze.cloze_logprobs(handle, TEMPLATES, CANDIDATES, progress=False)
    handle.release()
    again = cloze.cloze_logprobs(handle, TEMPLATES, CANDIDATES, progress=False)
    assert handle.loaded is None                                         # every pair cached: no weights read
    np.testing.assert_allclose(first["log_prob"], big["log_prob"], atol=1e-5)
    np.testing.assert_array_equal(first["log_prob"], again["log_prob"])
    l2r = cloze.cloze_logprobs(handle, TEMPLATES, CANDIDATES, masked="l2r", progress=False)
    assert handle.loaded is not None and not np.allclose(l2r["log_prob"], first["log_prob"])   # other settings


@pytest.mark.parametrize("templates,candidates,message", [
    (["no blank here"], ["a"], "exactly one blank"),
    (["[MASK] and [MASK]"], ["a"], "exactly one blank"),
    (["the [MASK] ."], [], "candidate list is empty"),
    (["the [MASK] ."], ["  "], "empty candidate"),
    (["the [MASK] ."], "women", "not one string"),
    (["the [MASK] .", "a [MASK] ."], [["women"]], "1 candidate lists for 2 templates"),
])
def test_bad_input_is_one_line(tiny_bert, loaded_factory, templates, candidates, message):
    lm = loaded_factory(tiny_bert, "masked")
    with pytest.raises(InputError, match=message) as e:
        cloze.cloze_logprobs(lm, templates, candidates, cache=False, progress=False)
    assert "\n" not in str(e.value)


def test_unencodable_candidates_unknown_mask_words_and_wrong_models(tiny_bert, tiny_gpt2, loaded_factory):
    bert, gpt2 = loaded_factory(tiny_bert, "masked"), loaded_factory(tiny_gpt2, "causal")
    with pytest.raises(InputError, match="no token ids"):
        cloze.cloze_logprobs(bert, ["the [MASK] ."], ["\u2603\u2603"], cache=False, progress=False)
    with pytest.raises(InputError, match="does not occur"):
        cloze.cloze_logprobs(bert, ["the [MASK] ."], ["women"], mask_words=["men"], cache=False, progress=False)
    with pytest.raises(InputError, match="'able' does not occur"):
        cloze.kurita_log_ratio(gpt2, ["the [MASK] is capable ."], ["women"], ["able"], cache=False, progress=False)
    with pytest.raises(InputError, match="masked must be one of"):
        cloze.cloze_logprobs(bert, ["the [MASK] ."], ["women"], masked="both", cache=False)
    with pytest.raises(InputError, match="nothing precedes the blank"):
        cloze.cloze_logprobs(gpt2, ["[MASK] ."], ["women"], cache=False, progress=False)


def test_causal_kurita_analogue_is_a_sentence_log_likelihood_ratio(tiny_gpt2, loaded_factory):
    gpt2 = loaded_factory(tiny_gpt2, "causal")
    got = cloze.kurita_log_ratio(gpt2, ["the [MASK] is capable of respect ."], ["women", "men"], ["capable"],
                                 cache=False, progress=False)

    def sentence(text):                       # every token after the first, one forward pass
        ids = gpt2.tokenizer(text, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            logp = torch.log_softmax(gpt2.model(input_ids=ids).logits[0].double(), -1)
        return float(sum(logp[i - 1, ids[0, i]] for i in range(1, ids.shape[1])))

    for row, word in zip(got.itertuples(), ["women", "men"]):
        assert row.log_prob == pytest.approx(sentence(f"the {word} is capable of respect ."), abs=1e-5)
        assert row.prior_log_prob == pytest.approx(sentence(f"the {word} is person of respect ."), abs=1e-5)
        assert row.method == "sentence"


def test_a_template_longer_than_the_model_takes_is_one_line(tiny_gpt2_ctx16, loaded_factory):
    lm = loaded_factory(tiny_gpt2_ctx16, "causal")
    long = "women are just as capable as men in every profession and " * 3 + "[MASK]"
    with pytest.raises(InputError, match="takes at most 16 tokens; template 0"):
        cloze.cloze_logprobs(lm, [long], ["capable"], cache=False, progress=False)


@pytest.mark.parametrize("fixture,objective", [("tiny_gpt2", "causal"), ("tiny_roberta", "masked")])
def test_lowercase_scores_the_lower_cased_text(fixture, objective, request, loaded_factory, tmp_path, monkeypatch):
    """``lowercase`` scores what a lower-casing tokenizer reads: template and candidate lower-cased
    (the blank kept), the given spellings in the output; cached apart from the cased scores."""
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path))
    lm = loaded_factory(request.getfixturevalue(fixture), objective)
    cased = ["Women are just as [MASK] as Men .", "The [MASK] of some People is not a reason to hate them ."]
    lower = ["women are just as [MASK] as men .", "the [MASK] of some people is not a reason to hate them ."]
    words = ["Capable", "unhappiness", "KINDNESS"]
    low = cloze.cloze_logprobs(lm, cased, words, lowercase=True, progress=False)
    ref = cloze.cloze_logprobs(lm, lower, [w.lower() for w in words], cache=False, progress=False)
    assert list(low["template"]) == [t for t in cased for _ in words] and list(low["candidate"]) == words * 2
    np.testing.assert_allclose(low["log_prob"], ref["log_prob"], atol=1e-6)
    assert (low["n_tokens"] == ref["n_tokens"]).all()
    cased_run = cloze.cloze_logprobs(lm, cased, words, progress=False)              # the cache must not answer
    uncached = cloze.cloze_logprobs(lm, cased, words, cache=False, progress=False)
    np.testing.assert_allclose(cased_run["log_prob"], uncached["log_prob"], atol=1e-6)
    assert np.abs(cased_run["log_prob"] - low["log_prob"]).min() > 1e-3
    if objective == "masked":                                                        # the masked word too
        prior = cloze.cloze_logprobs(lm, ["[MASK] are just as Capable as Men ."], ["Women"], mask_words=["Capable"],
                                     lowercase=True, cache=False, progress=False)
        assert prior["log_prob"][0] == pytest.approx(
            _brute_masked(lm, "[MASK] are just as capable as men .", "women", mask_word="capable"), abs=1e-5)
