"""helpers.lm.generation: text from a causal LM (ancestral sampling, greedy) or a masked LM (Wang &
Cho's sampler), reproducible with its seed, with its settings reported and bad prompts one line."""

from __future__ import annotations

import pytest

from helpers.errors import InputError
from helpers.lm.generation import generate
from helpers.metrics import regard


def test_generate_reproducible_and_reported(tiny_gpt2, loaded_factory):
    lm = loaded_factory(tiny_gpt2, "causal")
    p = regard.prompts(["women", "men"], regard.TEMPLATES[:2])
    assert p["prompt"].tolist()[0] == "The woman was known for"
    a = generate(lm, p, samples_per_prompt=2, max_new_tokens=5, seed=3, progress=False)
    b = generate(lm, p, samples_per_prompt=2, max_new_tokens=5, seed=3, progress=False)
    assert len(a) == 8 and a["continuation"].tolist() == b["continuation"].tolist()
    assert all(t.startswith(pr) for t, pr in zip(a["text"], a["prompt"]))
    assert (a[["samples_per_prompt", "max_new_tokens", "seed", "top_k"]].iloc[0].tolist() == [2, 5, 3, 40])
    assert a["sample"].tolist() == [0, 1] * 4 and a["prompt"].tolist() == [x for x in p["prompt"] for _ in (0, 1)]
    c = generate(lm, p, samples_per_prompt=2, max_new_tokens=5, seed=4, progress=False)
    assert c["continuation"].tolist() != a["continuation"].tolist()   # the seed matters


@pytest.mark.parametrize("change, message", [
    (lambda p: p.drop(columns="prompt"), "lack the column 'prompt' .have: group, template"),
    (lambda p: p.assign(prompt=[""] + p["prompt"].tolist()[1:]), "prompt row 0: empty prompt"),
])
def test_prompts_without_a_prompt_or_with_an_empty_one_are_one_line(tiny_gpt2, loaded_factory, change, message):
    lm = loaded_factory(tiny_gpt2, "causal")
    with pytest.raises(InputError, match=message):
        generate(lm, change(regard.prompts(["women", "men"], regard.TEMPLATES[:2])), progress=False)


def test_a_masked_lm_generates_with_the_gibbs_sampler(tiny_bert, loaded_factory):
    from helpers.lm.gibbs import gibbs_generate

    lm = loaded_factory(tiny_bert, "masked")
    p = regard.prompts(["women"], regard.TEMPLATES[:2])
    got = generate(lm, p, samples_per_prompt=2, max_new_tokens=4, top_k=5, seed=2, progress=False)
    want = gibbs_generate(lm, got["prompt"].tolist(), max_new_tokens=4, top_k=5, seed=2)
    assert got["continuation"].tolist() == want and set(got["sampler"]) == {"gibbs"}
    assert got["text"].tolist() == [f"{a} {b}" for a, b in zip(got["prompt"], want)]


# ----------------------------------------------------------------------------- the public module


def test_public_lm_module_names_the_functions_of_its_modules():
    import helpers.lm as lm
    from helpers.lm import cloze, embeddings, fill, generation, logprobs, scoring

    assert lm.score is scoring.score and lm.loglikelihood is logprobs.loglikelihood
    assert lm.generate is generation.generate and lm.top_k is fill.top_k and lm.cloze_logprobs is cloze.cloze_logprobs
    assert lm.word_embeddings is embeddings.word_embeddings
    with pytest.raises(AttributeError, match="no attribute 'rolling'"):
        lm.rolling  # noqa: B018


def test_loglikelihood_equals_a_brute_force_forward_pass_and_the_rolling_score(tiny_gpt2_bos, tiny_gpt2, loaded_factory):
    """lm-eval's ``loglikelihood``: the continuation's tokens after the context's, each predicted
    from everything before it. With an empty context a BOS model's result is the sentence score."""
    import torch

    import helpers.lm as lm

    bos = loaded_factory(tiny_gpt2_bos, "causal")
    tok = bos.tokenizer
    out = lm.loglikelihood(bos, ["the cat ", "people"], ["sat on the mat", " and so on"])
    for row, (c, x) in enumerate([("the cat", " sat on the mat"), ("people", " and so on")]):
        ctx = tok(c)["input_ids"]
        whole = tok(c + x)["input_ids"]
        with torch.no_grad():
            logp = torch.log_softmax(bos.model(torch.tensor([whole])).logits[0].double(), -1)
        brute = sum(float(logp[t - 1, whole[t]]) for t in range(len(ctx), len(whole)))
        assert out["n_tokens"][row] == len(whole) - len(ctx)
        assert out["log_likelihood"][row] == pytest.approx(brute, abs=1e-5)
    rolling = lm.score(bos, ["the cat sat on the mat"], cache=False, progress=False)
    empty = lm.loglikelihood(bos, [""], ["the cat sat on the mat"])
    assert empty["log_likelihood"][0] == pytest.approx(rolling["log_likelihood"][0], abs=1e-5)
    # GPT-2 has no BOS: an empty context starts from <|endoftext|>, so the first token is scored too
    gpt2 = loaded_factory(tiny_gpt2, "causal")
    first = lm.loglikelihood(gpt2, [""], ["the cat sat"])
    assert first["n_tokens"][0] == len(gpt2.tokenizer("the cat sat")["input_ids"])


def test_loglikelihood_bad_input_is_one_line(tiny_gpt2, tiny_bert, loaded_factory):
    import helpers.lm as lm

    with pytest.raises(InputError, match="not a causal LM"):
        lm.loglikelihood(loaded_factory(tiny_bert, "masked"), ["a"], ["b"])
    gpt2 = loaded_factory(tiny_gpt2, "causal")
    with pytest.raises(InputError, match="1 contexts for 2 continuations"):
        lm.loglikelihood(gpt2, ["a"], ["b", "c"])
    with pytest.raises(InputError, match="continuation row 0: empty continuation"):
        lm.loglikelihood(gpt2, ["a"], [" "])


def test_xlnet_generates_left_to_right_after_the_text_not_after_its_cls(tiny_xlnet, loaded_factory, caplog):
    """Seed 000 generates regard statements with XLNet too (Tables 11-12). Greedy decoding's first
    token is the argmax of XLNet's prediction for one new position that nothing may see (perm_mask)
    after the prompt's own tokens, without the <sep> <cls> its tokenizer appends; sampling is
    reproducible; transformers' length note for a model without a limit is not printed."""
    import logging

    import torch

    lm = loaded_factory(tiny_xlnet, "permutation")
    tok, model = lm.tokenizer, lm.model
    p = regard.prompts(["women", "men"], regard.TEMPLATES[:2])
    with caplog.at_level(logging.WARNING):
        greedy = generate(lm, p, max_new_tokens=3, sample=False, progress=False)
    assert not [r for r in caplog.records if "maximum length" in r.getMessage()]
    checked = 0
    for prompt, cont in zip(p["prompt"], greedy["continuation"]):
        ids = tok(prompt, add_special_tokens=False)["input_ids"]
        x = torch.tensor([ids + [tok.mask_token_id]])
        n = x.shape[1]
        perm = torch.zeros(1, n, n)
        perm[0, :, -1] = 1.0                                  # no position sees the new one
        target = torch.zeros(1, 1, n)
        target[0, 0, -1] = 1.0
        with torch.no_grad():
            logits = model(input_ids=x, perm_mask=perm, target_mapping=target).logits[0, 0]
        first = tok.decode([int(logits.argmax())], skip_special_tokens=True).strip()
        assert cont.strip().startswith(first)
        checked += bool(first)
    assert checked                                            # a real word was compared, not only blanks
    a = generate(lm, p, samples_per_prompt=2, max_new_tokens=4, seed=1, progress=False)
    b = generate(lm, p, samples_per_prompt=2, max_new_tokens=4, seed=1, progress=False)
    assert a["continuation"].tolist() == b["continuation"].tolist() and (a["sampler"] == "ancestral").all()


# ----------------------------------------------------------------------------- resumable, batch by batch

def _by_hand(lm, prompts: list[str], *, seed: int, batch_size: int, max_new_tokens: int) -> list[str]:
    """One seeded stream, batch after batch, left-padded: model.generate as a reader would call it,
    drawing from the 40 best tokens (TopKSampler, checked against transformers' warpers above)."""
    import torch
    from transformers import LogitsProcessorList

    from helpers.lm.generation import TopKSampler

    tok = lm.tokenizer
    tok.pad_token = tok.pad_token or tok.eos_token
    side, tok.padding_side = tok.padding_side, "left"
    torch.manual_seed(seed)
    out = []
    try:
        for k in range(0, len(prompts), batch_size):
            enc = tok(prompts[k:k + batch_size], return_tensors="pt", padding=True)
            new = lm.model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False,
                                    logits_processor=LogitsProcessorList([TopKSampler(40)]),
                                    pad_token_id=tok.pad_token_id)[:, enc["input_ids"].shape[1]:]
            out += tok.batch_decode(new, skip_special_tokens=True)
    finally:
        tok.padding_side = side
    return out


@pytest.mark.parametrize("fixture,objective", [("tiny_gpt2", "causal"), ("tiny_bert", "masked")])
def test_an_interrupted_generation_resumes_to_the_continuations_of_one_run(fixture, objective, request, loaded_factory,
                                                                            tmp_path, monkeypatch):
    import torch

    from helpers import cache
    from helpers.errors import Interrupted

    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    lm = loaded_factory(request.getfixturevalue(fixture), objective)
    p = regard.prompts(["women", "men", "muslim"], regard.TEMPLATES[:3])      # 9 prompts x 2 samples: 5 batches of 4
    options = dict(samples_per_prompt=2, max_new_tokens=4, seed=5, batch_size=4, progress=False)
    whole = generate(lm, p, **options)
    if objective == "causal":        # the same stream as by hand
        assert whole["continuation"].tolist() == _by_hand(lm, whole["prompt"].tolist(), seed=5, batch_size=4,
                                                          max_new_tokens=4)
    calls = []
    real = cache.atomic_write

    def stop_after_two_batches(path, *a, **k):
        real(path, *a, **k)
        if path.name.startswith("step-"):
            calls.append(path.name)
            if len(calls) == 2:
                raise KeyboardInterrupt
    monkeypatch.setattr(cache, "atomic_write", stop_after_two_batches)
    with pytest.raises(Interrupted, match=r"2 of 5 batches \(generate tiny_\w+\) are saved in the cache"):
        generate(lm, p, cache=True, **options)
    torch.manual_seed(123)           # whatever the stream is now, the rerun restores the stored one
    calls.clear()
    monkeypatch.setattr(cache, "atomic_write", lambda path, *a, **k: (calls.append(path.name), real(path, *a, **k)))
    resumed = generate(lm, p, cache=True, **options)
    assert [c for c in calls if c.startswith("step-")] == ["step-000002.json", "step-000003.json", "step-000004.json"]
    assert resumed["continuation"].tolist() == whole["continuation"].tolist()
    calls.clear()
    again = generate(lm, p, cache=True, **options)                  # all stored: nothing generated
    assert not [c for c in calls if c.startswith("step-")] and again.equals(resumed)
    other = generate(lm, p, cache=True, **{**options, "seed": 6})   # another setting, another entry
    assert other["continuation"].tolist() != whole["continuation"].tolist()


def test_the_step_cache_reports_a_corrupt_step_and_recomputes_it(tmp_path, monkeypatch):
    from helpers import cache

    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path))
    state = {"n": 0}

    def step(i):
        state["n"] += 1
        return [i * 10, state["n"]]
    key = {"test": "steps"}
    first = cache.cached_steps(key, 4, step, save_state=lambda: str(state["n"]),
                               restore_state=lambda s: state.update(n=int(s)), progress=False)
    assert first == [[0, 1], [10, 2], [20, 3], [30, 4]]
    folder = next((tmp_path / "steps").iterdir())
    (folder / "step-000002.json").write_text('{"format": "harms-steps-v1", "result": [20, 99], "state": "3", '
                                             '"sha256": "0"}')
    state["n"] = 50
    with pytest.warns(cache.CorruptCacheWarning, match="step-000002.json: checksum mismatch"):
        again = cache.cached_steps(key, 4, step, save_state=lambda: str(state["n"]),
                                   restore_state=lambda s: state.update(n=int(s)), progress=False)
    assert again == first                              # step 2 recomputed from the state after step 1
    assert cache.cached_steps(key, 4, step, enabled=False, progress=False) == [[0, 5], [10, 6], [20, 7], [30, 8]]
    assert len(list(folder.glob("step-*.json"))) == 4
    with pytest.raises(ValueError, match="steps must be a whole number"):
        cache.cached_steps(key, -1, step)


# ----------------------------------------------------------------------------- top-k sampling


@pytest.mark.parametrize("k, temperature, top_p", [(5, 1.0, None), (40, 0.7, None), (8, 1.3, 0.6), (3, 1.0, 1.0)])
def test_the_top_k_sampler_draws_from_the_distribution_of_transformers_warpers(k, temperature, top_p):
    """TopKSampler against transformers' own temperature, top-k and top-p warpers (the
    ``do_sample=True`` path): 40,000 draws of one row of logits fall only on the tokens the warpers
    keep, with the warpers' probabilities (to 0.01)."""
    import torch
    from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    from helpers.lm.generation import TopKSampler

    torch.manual_seed(0)
    scores = torch.randn(1, 300) * 2
    warped = TemperatureLogitsWarper(temperature)(None, scores.clone())
    warped = TopKLogitsWarper(k)(None, warped)
    if top_p is not None:
        warped = TopPLogitsWarper(top_p)(None, warped)
    want = torch.softmax(warped, -1)[0]
    out = TopKSampler(k, temperature, top_p)(None, scores.repeat(40_000, 1))
    assert torch.isfinite(out).sum(-1).eq(1).all()              # one token left per row, at 0
    drawn = torch.bincount(out.argmax(-1), minlength=300) / 40_000
    assert set(drawn.nonzero().flatten().tolist()) <= set(want.nonzero().flatten().tolist())
    assert (drawn - want).abs().max() < 0.01


@pytest.mark.parametrize("args, message", [((0,), "top_k must be a positive"), ((5, 0.0), "temperature must be > 0"),
                                           ((5, 1.0, 1.5), r"top_p must be in \(0, 1\]")])
def test_the_top_k_sampler_refuses_nonsense_settings_in_one_line(args, message):
    from helpers.lm.generation import TopKSampler

    with pytest.raises(InputError, match=message):
        TopKSampler(*args)


def test_generate_samples_only_among_the_k_best_tokens(tiny_gpt2, loaded_factory):
    """With top_k = 1 sampling is greedy decoding: the two paths agree token for token."""
    lm = loaded_factory(tiny_gpt2, "causal")
    p = regard.prompts(["women", "men"], regard.TEMPLATES[:3])
    sampled = generate(lm, p, max_new_tokens=6, top_k=1, seed=5, progress=False)
    greedy = generate(lm, p, max_new_tokens=6, sample=False, progress=False)
    assert sampled["continuation"].tolist() == greedy["continuation"].tolist()
