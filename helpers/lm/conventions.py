"""How a model reads text, decided in one place for every path of the package.

Sentence scores (:mod:`helpers.lm.scoring`), packed held-out blocks (the quality gate,
:mod:`helpers.metrics.quality`, and the zoo's training text), cloze scores and fill-ins
(:mod:`helpers.lm.cloze`, :mod:`helpers.lm.fill`), embeddings (:mod:`helpers.lm.embeddings`) and
generation all ask this module, so a model is never scored one way on one path and another way
on the next:

- :func:`special_ids`: the token ids the model's own tokenizer puts before and after a text
  (``add_special_tokens=True``): ``<bos>`` before for Gemma and Llama, nothing for GPT-2,
  SmolLM2 and Qwen, ``[CLS]`` / ``[SEP]`` around for BERT, ``<sep> <cls>`` after for XLNet;
- :func:`max_length`: the longest input the model takes (its position embeddings, less the
  RoBERTa family's padding offset; lowered by the tokenizer's ``model_max_length``; none for
  XLNet's relative positions);
- :func:`pack_blocks`: running text cut into blocks that start the way the model's scoring
  starts (Gemma's blocks begin with ``<bos>``: on a 56-token English paragraph Gemma-3-270M
  gives perplexity about 10 with it and about 173 without);
- :func:`start_ids`: what a causal LM conditions a whole sentence on when its first token must be
  predicted (StereoSet, CMA, fill-ins after an empty prefix);
- :func:`needs_leading_space`: whether a word inside a sentence is encoded with its space.
"""

from __future__ import annotations

from helpers.errors import InputError
from helpers.models.loading import config_max_length, valid_limit

__all__ = ["special_ids", "max_length", "pack_blocks", "start_ids", "needs_leading_space", "PROBE_TEXT"]

PROBE_TEXT = "The cat sat on the mat."
_CAUSAL, _MASKED = ("causal", "gpt2"), ("masked", "bert")


def _find(haystack: list[int], needle: list[int]) -> int:
    for i in range(len(haystack) - len(needle) + 1):
        if haystack[i:i + len(needle)] == needle:
            return i
    return -1


def special_ids(tokenizer) -> tuple[list[int], list[int]]:
    """``(prefix, suffix)``: the ids ``tokenizer`` adds before and after a text with its default
    special tokens, read off a probe text encoded with and without them (computed once per
    tokenizer object)."""
    cached = getattr(tokenizer, "_harms_special_ids", None)
    if cached is not None:
        return cached
    full = list(tokenizer(PROBE_TEXT, add_special_tokens=True)["input_ids"])
    bare = list(tokenizer(PROBE_TEXT, add_special_tokens=False)["input_ids"])
    at = _find(full, bare) if bare else -1
    if at >= 0:
        out = (full[:at], full[at + len(bare):])
    else:                                   # the body itself differs: take the special ids at either end
        special = set(tokenizer.all_special_ids)
        k = next((i for i, t in enumerate(full) if t not in special), len(full))
        j = next((i for i, t in enumerate(reversed(full)) if t not in special), 0)
        out = (full[:k], full[len(full) - j:] if j else [])
    try:
        tokenizer._harms_special_ids = out
    except AttributeError:
        pass
    return out


def max_length(loaded) -> int | None:
    """Longest input ``loaded.model`` takes, in tokens (None: no limit, XLNet).

    The model's configuration decides (:func:`helpers.models.loading.config_max_length`:
    ``max_position_embeddings`` less ``pad_token_id + 1`` in the RoBERTa family, or
    ``n_positions`` / ``n_ctx``); the tokenizer's ``model_max_length`` only lowers it (a
    tokenizer may claim 512 for a model with 128 positions, and the model would then fail on a
    long text)."""
    config = loaded.model.config
    limit = config_max_length(config.to_dict() if hasattr(config, "to_dict") else dict(vars(config)))
    tok_limit = valid_limit(getattr(loaded.tokenizer, "model_max_length", None))
    if tok_limit is not None and (limit is None or tok_limit < limit):
        limit = tok_limit
    return limit


def start_ids(tokenizer) -> list[int]:
    """The ids a causal LM conditions a whole sentence on, so that its first word is predicted
    too: the tokenizer's own prefix when it has one (``<bos>``), else BOS, else EOS (GPT-2's
    ``<|endoftext|>``, as bias-bench's StereoSet runner does)."""
    prefix, _ = special_ids(tokenizer)
    if prefix:
        return list(prefix)
    for t in (tokenizer.bos_token_id, tokenizer.eos_token_id):
        if t is not None:
            return [int(t)]
    raise InputError("the tokenizer has neither a BOS nor an EOS token to start a sentence with")


def needs_leading_space(tokenizer) -> bool:
    """True for tokenizers whose word tokens carry the preceding space (byte-level BPE:
    GPT-2, RoBERTa, Llama-3/SmolLM2 ...): a word inside a sentence must be encoded as " word"."""
    return tokenizer.encode("a", add_special_tokens=False) != tokenizer.encode(" a", add_special_tokens=False)


def pack_blocks(texts: list[str], tokenizer, *, block_size: int, objective: str):
    """Tokenise ``texts``, concatenate them and cut the stream into blocks of ``block_size``
    tokens that start (and end) the way the model's own scoring does (:func:`special_ids`).

    ``objective``: ``"causal"`` (alias ``"gpt2"``): documents separated by the EOS token; each
    block is ``prefix + body`` (``<bos>`` first for Gemma and Llama; no prefix, so plain
    ``block_size``-token slices of the stream, for GPT-2, SmolLM2 and Qwen). ``"masked"`` (alias
    ``"bert"``): documents separated by ``[SEP]``; each block is ``prefix + body + suffix``
    (``[CLS] ... [SEP]``). The incomplete last block is dropped. Returns a LongTensor
    ``[n_blocks, block_size]``.
    """
    import torch

    if objective not in _CAUSAL + _MASKED:
        raise InputError(f"pack_blocks: objective must be 'causal' or 'masked', got {objective!r}")
    causal = objective in _CAUSAL
    if causal and tokenizer.eos_token_id is None:
        raise InputError("pack_blocks: the tokenizer has no end-of-sequence token to separate documents")
    if not causal and (tokenizer.cls_token_id is None or tokenizer.sep_token_id is None):
        raise InputError("pack_blocks: a masked-LM tokenizer needs [CLS] and [SEP] tokens")
    prefix, suffix = special_ids(tokenizer)
    if causal:
        suffix = []
    else:
        prefix, suffix = prefix or [tokenizer.cls_token_id], suffix or [tokenizer.sep_token_id]
    body = block_size - len(prefix) - len(suffix)
    if body < 1:
        raise InputError(f"pack_blocks: block_size {block_size} leaves no room beside the model's "
                         f"{len(prefix) + len(suffix)} special tokens")
    sep = tokenizer.eos_token_id if causal else tokenizer.sep_token_id
    ids: list[int] = []
    for enc in tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]:
        ids.extend(enc)
        ids.append(sep)
    n = len(ids) // body
    t = torch.tensor(ids[: n * body], dtype=torch.long).view(n, body)
    parts = [torch.tensor(prefix, dtype=torch.long).expand(n, -1), t,
             torch.tensor(suffix, dtype=torch.long).expand(n, -1)]
    return torch.cat([p for p in parts if p.shape[1]], dim=1)
