"""Batched token log-probabilities shared by the StereoSet, CMA and regard metrics.

Two primitives, both plain functions of a transformers model and token ids:

- :func:`continuation_logprobs` (causal LMs): log p(continuation token_i | context, earlier
  continuation tokens) for each (context, continuation) pair, right-padded batches.
- :func:`masked_logprobs` (masked LMs): log p(target | input) at one masked position per input.
"""

from __future__ import annotations

import numpy as np
import torch

from helpers.lm.batching import device, pad_id
from helpers.progress import progress as progress_bar


@torch.no_grad()
def continuation_logprobs(model, tokenizer, contexts: list[list[int]], continuations: list[list[int]], *,
                          batch_size: int = 16, progress: bool = False) -> list[np.ndarray]:
    """Causal LM: per-token natural-log probabilities of each continuation given its context.

    ``contexts[i]`` must be non-empty (give :func:`helpers.lm.conventions.start_ids` to score a whole
    sentence).
    Returns one float array of length ``len(continuations[i])`` per pair.
    """
    out: list[np.ndarray | None] = [None] * len(contexts)
    order = sorted(range(len(contexts)), key=lambda i: len(contexts[i]) + len(continuations[i]))
    pad, dev = pad_id(tokenizer), device(model)
    batches = [order[k:k + batch_size] for k in range(0, len(order), batch_size)]
    for idx in progress_bar(batches, enabled=progress, desc="causal log-probs", unit="batch"):
        seqs = [list(contexts[i]) + list(continuations[i]) for i in idx]
        width = max(map(len, seqs))
        ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        att = torch.zeros((len(seqs), width), dtype=torch.long)
        for r, s in enumerate(seqs):
            ids[r, :len(s)] = torch.tensor(s)
            att[r, :len(s)] = 1
        logits = model(input_ids=ids.to(dev), attention_mask=att.to(dev)).logits.float()
        logp = torch.log_softmax(logits, dim=-1)
        for r, i in enumerate(idx):
            c, n = len(contexts[i]), len(continuations[i])
            pos = torch.arange(c - 1, c - 1 + n, device=logp.device)
            tgt = torch.tensor(continuations[i], device=logp.device)
            out[i] = logp[r, pos, tgt].cpu().numpy().astype(float)
    return out  # type: ignore[return-value]


@torch.no_grad()
def masked_logprobs(model, tokenizer, inputs: list[list[int]], positions: list[int], targets: list[int], *,
                    batch_size: int = 32, progress: bool = False) -> np.ndarray:
    """Masked LM: log p(targets[i] at positions[i] | inputs[i]) (natural log), one value per input."""
    out = np.empty(len(inputs))
    order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))
    pad, dev = pad_id(tokenizer), device(model)
    batches = [order[k:k + batch_size] for k in range(0, len(order), batch_size)]
    for idx in progress_bar(batches, enabled=progress, desc="masked log-probs", unit="batch"):
        width = max(len(inputs[i]) for i in idx)
        ids = torch.full((len(idx), width), pad, dtype=torch.long)
        att = torch.zeros((len(idx), width), dtype=torch.long)
        for r, i in enumerate(idx):
            ids[r, :len(inputs[i])] = torch.tensor(inputs[i])
            att[r, :len(inputs[i])] = 1
        logits = model(input_ids=ids.to(dev), attention_mask=att.to(dev)).logits.float()
        rows = torch.arange(len(idx), device=logits.device)
        pos = torch.tensor([positions[i] for i in idx], device=logits.device)
        tgt = torch.tensor([targets[i] for i in idx], device=logits.device)
        logp = torch.log_softmax(logits[rows, pos], dim=-1)[rows, tgt]
        out[idx] = logp.cpu().numpy()
    return out


def loglikelihood(loaded, contexts, continuations, *, batch_size: int = 16, progress: bool = False):
    """``log p(continuation | context)`` of each pair under a causal LM: lm-evaluation-harness's
    ``loglikelihood`` request. Returns a DataFrame ``n_tokens, log_likelihood`` (natural log,
    summed over the continuation's tokens).

    As lm-evaluation-harness does, a context's trailing spaces move to the continuation, the pair
    is tokenised whole (with the model's own special tokens, :mod:`helpers.lm.conventions`) and
    the continuation is the tokens after as many as the context alone has, so the text is scored
    as the model reads it. An
    empty context conditions on :func:`helpers.lm.conventions.start_ids` (``<bos>``, else GPT-2's
    ``<|endoftext|>``): then, unlike :func:`helpers.lm.scoring.score`, the first token is scored too.
    """
    import pandas as pd

    from helpers.errors import InputError
    from helpers.lm import conventions
    from helpers.lm.batching import check_texts

    if loaded.objective != "causal":
        raise InputError(f"loglikelihood: {loaded.name} is not a causal LM (objective {loaded.objective!r})")
    contexts, continuations = list(contexts), check_texts(continuations, "continuation")
    if len(contexts) != len(continuations):
        raise InputError(f"loglikelihood: {len(contexts)} contexts for {len(continuations)} continuations")
    tok = loaded.tokenizer
    ctx_ids, cont_ids = [], []
    for i, (c, x) in enumerate(zip(contexts, continuations)):
        if not isinstance(c, str):
            raise InputError(f"context row {i}: not a string ({type(c).__name__})")
        spaces = len(c) - len(c.rstrip())
        c, x = (c[:-spaces], c[-spaces:] + x) if spaces else (c, x)
        start = tok(c)["input_ids"] if c else conventions.start_ids(tok)
        whole = tok(c + x)["input_ids"] if c else start + tok(x, add_special_tokens=False)["input_ids"]
        cut = len(start)
        if not cut or cut >= len(whole):
            raise InputError(f"row {i}: continuation {x[:40]!r} gives no token after its context")
        ctx_ids.append(whole[:cut])
        cont_ids.append(whole[cut:])
    lps = continuation_logprobs(loaded.model, tok, ctx_ids, cont_ids, batch_size=batch_size, progress=progress)
    return pd.DataFrame({"n_tokens": [len(c) for c in cont_ids], "log_likelihood": [float(lp.sum()) for lp in lps]})
