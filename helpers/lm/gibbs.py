"""Text from a masked LM: Wang & Cho's (2019) Gibbs-style sampler ("BERT has a mouth, and it must
speak", the ``parallel-sequential`` mode of their bert-babble code), which BOLD (Dhamala et al.
2021) and seed 001 use to let masked LMs continue a prompt.

The prompt is followed by ``max_new_tokens`` mask tokens. Each of ``max_iter`` steps picks one of
those positions uniformly at random, masks it again, and replaces it with a token drawn from the
model's distribution at that position given all the others: from the ``top_k`` most probable
tokens after ``burnin`` steps, from the whole vocabulary before (temperature ``temperature``
throughout), as bert-babble does. Special tokens are never drawn. All prompts of a batch step
together (one forward pass per step); every prompt has its own ``numpy``-seeded choice of
positions and its own torch generator, so a prompt's text does not depend on its batch. A prompt
too long for the model with its new tokens keeps its last tokens (after ``[CLS]``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from helpers.errors import InputError

__all__ = ["gibbs_generate"]


def gibbs_generate(loaded, prompts: Sequence[str], *, max_new_tokens: int = 20, max_iter: int | None = None,
                   burnin: int | None = None, top_k: int | None = 100, temperature: float = 1.0, seed: int = 0,
                   batch_size: int = 16, offset: int = 0) -> list[str]:
    """The continuation of each prompt by a masked LM (module docstring). ``max_iter`` defaults to
    ``10 * max_new_tokens`` and ``burnin`` to half of it (bert-babble: 500 and 250 for 40 tokens
    with top-k 100). Returns the decoded new tokens of each prompt. Prompt ``i`` draws from its own
    generators seeded with ``seed`` and ``offset + i`` (``offset``: the index of the first prompt in a
    longer list generated part by part, which then draws as the whole list would)."""
    import torch

    if loaded.objective != "masked":
        raise InputError(f"{loaded.name}: the Gibbs sampler needs a masked LM, not objective {loaded.objective!r}")
    tok, model = loaded.tokenizer, loaded.model
    if tok.mask_token_id is None:
        raise InputError(f"{loaded.name}: the tokenizer has no mask token")
    prompts = list(prompts)
    if not prompts or any(not isinstance(p, str) or not p.strip() for p in prompts):
        raise InputError("Gibbs sampling needs one or more prompts, none of them empty")
    for name, v, low in (("max_new_tokens", max_new_tokens, 1), ("batch_size", batch_size, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise InputError(f"{name} must be a whole number >= {low}, got {v!r}")
    max_iter = 10 * max_new_tokens if max_iter is None else max_iter
    burnin = max_iter // 2 if burnin is None else burnin
    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 0 and 0 <= burnin):
        raise InputError(f"max_iter ({max_iter!r}) and burnin ({burnin!r}) must be whole numbers >= 0")
    if not temperature > 0:
        raise InputError(f"temperature must be > 0, got {temperature!r}")
    from helpers.lm.conventions import max_length

    limit = max_length(loaded)
    dev = next(model.parameters()).device
    special = torch.as_tensor(sorted(set(tok.all_special_ids)), device=dev)
    out: list[str] = []
    for start in range(0, len(prompts), batch_size):
        batch = prompts[start:start + batch_size]
        heads = [tok(p, add_special_tokens=True)["input_ids"] for p in batch]
        rows, spans = [], []
        for ids in heads:                            # [CLS] prompt [MASK] x n [SEP]: masks before the last special
            body = ids[:-1] if ids and ids[-1] in tok.all_special_ids else ids
            tail = ids[len(body):]
            if limit and len(body) + max_new_tokens + len(tail) > limit:     # keep the prompt's end (and [CLS])
                keep = limit - max_new_tokens - len(tail)
                if keep < 2:
                    raise InputError(f"{loaded.name} takes {limit} tokens: no room for {max_new_tokens} new ones")
                body = body[:1] + body[len(body) - keep + 1:]
            rows.append(body + [tok.mask_token_id] * max_new_tokens + tail)
            spans.append(len(body))
        width = max(len(r) for r in rows)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        ids = torch.full((len(rows), width), pad, dtype=torch.long, device=dev)
        attention = torch.zeros_like(ids)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = torch.as_tensor(r)
            attention[i, :len(r)] = 1
        rngs = [np.random.default_rng([seed, offset + start + i]) for i in range(len(batch))]
        gens = [torch.Generator(device="cpu").manual_seed(int(seed) * 1_000_003 + offset + start + i) for i in range(len(batch))]
        with torch.inference_mode():
            for step in range(max_iter):
                at = torch.as_tensor([s + int(g.integers(max_new_tokens)) for s, g in zip(spans, rngs)], device=dev)
                rows_ix = torch.arange(len(batch), device=dev)
                ids[rows_ix, at] = tok.mask_token_id
                logits = model(input_ids=ids, attention_mask=attention).logits[rows_ix, at].float() / temperature
                logits[:, special] = -float("inf")
                if top_k is not None and step >= burnin:
                    kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, -float("inf"))
                probs = torch.softmax(logits, dim=-1).cpu()
                drawn = [int(torch.multinomial(probs[i], 1, generator=gens[i])) for i in range(len(batch))]
                ids[rows_ix, at] = torch.as_tensor(drawn, device=dev)
        for i, s in enumerate(spans):
            new = ids[i, s:s + max_new_tokens]
            new = new[new != tok.mask_token_id]      # a position never drawn stays out of the text
            out.append(tok.decode(new.tolist(), skip_special_tokens=True))
    return out
