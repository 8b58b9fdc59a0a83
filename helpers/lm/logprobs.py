"""Batched token log-probabilities shared by the StereoSet, CMA and regard metrics.

Two primitives, both plain functions of a transformers model and token ids:

- :func:`continuation_logprobs` (causal LMs): log p(continuation token_i | context, earlier
  continuation tokens) for each (context, continuation) pair, right-padded batches.
- :func:`masked_logprobs` (masked LMs): log p(target | input) at one masked position per input.
"""

from __future__ import annotations

import numpy as np
import torch

from helpers.progress import progress as progress_bar


def _pad_id(tokenizer) -> int:
    for t in (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id, 0):
        if t is not None:
            return int(t)
    return 0


def _device(model):
    return next(model.parameters()).device


@torch.no_grad()
def continuation_logprobs(model, tokenizer, contexts: list[list[int]], continuations: list[list[int]], *,
                          batch_size: int = 16, progress: bool = False) -> list[np.ndarray]:
    """Causal LM: per-token natural-log probabilities of each continuation given its context.

    ``contexts[i]`` must be non-empty (give a BOS/start token to score a whole sentence).
    Returns one float array of length ``len(continuations[i])`` per pair.
    """
    out: list[np.ndarray | None] = [None] * len(contexts)
    order = sorted(range(len(contexts)), key=lambda i: len(contexts[i]) + len(continuations[i]))
    pad, dev = _pad_id(tokenizer), _device(model)
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
    pad, dev = _pad_id(tokenizer), _device(model)
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


def start_ids(tokenizer) -> list[int]:
    """The start token a causal LM conditions a whole sentence on (BOS, else EOS as GPT-2's
    ``<|endoftext|>``; bias-bench's StereoSet runner uses ``<|endoftext|>`` for GPT-2)."""
    for t in (tokenizer.bos_token_id, tokenizer.eos_token_id):
        if t is not None:
            return [int(t)]
    raise ValueError("tokenizer has neither a BOS nor an EOS token to start a sentence with")


def needs_leading_space(tokenizer) -> bool:
    """True for tokenizers whose word tokens carry the preceding space (byte-level BPE:
    GPT-2, RoBERTa, Llama-3/SmolLM2 ...): a word inside a sentence must be encoded as " word"."""
    a = tokenizer.encode("a", add_special_tokens=False)
    b = tokenizer.encode(" a", add_special_tokens=False)
    return a != b
