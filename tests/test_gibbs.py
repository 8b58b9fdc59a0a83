"""Wang & Cho's Gibbs-style sampler for masked LMs (helpers.lm.gibbs) on a tiny BERT: one greedy
step against a hand-made forward pass, seeds, batch independence, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers.errors import InputError
from helpers.lm.gibbs import gibbs_generate

PROMPTS = ["women are just as capable as", "i think that muslims", "the colour of their skin"]


def test_one_greedy_step_fills_the_drawn_position_with_the_models_best_token(tiny_bert, loaded_factory):
    lm = loaded_factory(tiny_bert, "masked")
    tok, n = lm.tokenizer, 4
    got = gibbs_generate(lm, PROMPTS[:1], max_new_tokens=n, max_iter=1, burnin=0, top_k=1, seed=3)
    ids = tok(PROMPTS[0])["input_ids"]
    row = ids[:-1] + [tok.mask_token_id] * n + ids[-1:]
    at = len(ids) - 1 + int(np.random.default_rng([3, 0]).integers(n))
    with torch.no_grad():
        logits = lm.model(torch.as_tensor([row])).logits[0, at]
    logits[tok.all_special_ids] = -float("inf")
    assert got == [tok.decode([int(logits.argmax())])]


def test_seeded_batch_independent_and_prompt_kept(tiny_bert, loaded_factory):
    lm = loaded_factory(tiny_bert, "masked")
    a = gibbs_generate(lm, PROMPTS, max_new_tokens=5, max_iter=30, top_k=1, burnin=0, seed=1)
    alone = gibbs_generate(lm, PROMPTS[:1], max_new_tokens=5, max_iter=30, top_k=1, burnin=0, seed=1)
    assert a[0] == alone[0]                                 # the first prompt: alone or in a padded batch
    s1 = gibbs_generate(lm, PROMPTS, max_new_tokens=5, max_iter=30, seed=7)
    assert s1 == gibbs_generate(lm, PROMPTS, max_new_tokens=5, max_iter=30, seed=7)
    assert s1 != gibbs_generate(lm, PROMPTS, max_new_tokens=5, max_iter=30, seed=8)
    assert all(len(tok_ids) <= 5 for tok_ids in (lm.tokenizer(t, add_special_tokens=False)["input_ids"] for t in s1))


@pytest.mark.parametrize("kw, message", [({"max_new_tokens": 0}, "max_new_tokens"), ({"temperature": 0}, "temperature"),
                                         ({"max_iter": -1}, "max_iter")])
def test_bad_input_is_one_line(tiny_bert, tiny_gpt2, loaded_factory, kw, message):
    lm = loaded_factory(tiny_bert, "masked")
    with pytest.raises(InputError, match=message):
        gibbs_generate(lm, PROMPTS, **kw)
    with pytest.raises(InputError, match="none of them empty"):
        gibbs_generate(lm, ["ok", " "])
    with pytest.raises(InputError, match="needs a masked LM"):
        gibbs_generate(loaded_factory(tiny_gpt2, "causal"), PROMPTS)
