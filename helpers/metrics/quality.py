"""The book-wide language-model quality gate (issue 11, section 1).

A model's held-out perplexity is compared with a unigram model of the same tokenizer:

- **Model**: causal LMs, ``exp`` of the mean next-token negative log-likelihood over every
  predicted token of packed held-out blocks, each block starting the way the model's own
  scoring starts (:func:`helpers.lm.conventions.pack_blocks`: ``<bos>`` first for Gemma and
  Llama, nothing for GPT-2, SmolLM2 and Qwen; the prefix is context only, never a target);
  masked LMs, the *masked-token* perplexity, ``exp``
  of the mean NLL at 15 % of the non-special tokens, masked 80/10/10 (Devlin et al. 2019) with a
  fixed seed (not the pseudo-perplexity, which masks every token in turn).
- **Unigram baseline**: ``p(w) = (c(w) + s) / (N + s V)`` with ``c(w)`` the count of token
  ``w`` in the training text (tokenised and packed like the held-out text; a causal model's
  start tokens are not counted), ``N`` the number of training tokens, ``V`` the tokenizer's vocabulary and ``s = 1`` (add-one / Laplace smoothing).
  Its perplexity is evaluated at exactly the tokens the model is scored on: every predicted
  token (causal), the masked positions drawn with the same seed (masked).
- **Gate**: ``ratio = unigram perplexity / perplexity``. "A model whose perplexity is not at
  least 2× better than its unigram baseline is marked **not a usable language model**" (issue
  11): ``usable = ratio >= min_ratio`` with ``min_ratio = 2``.

Defaults: 16 blocks × 128 tokens of the corpus's held-out split
(:func:`helpers.datasets.corpus.load_corpus`), add-one smoothing, seed 0, batches of 8.
Measured on gensim's held-out text (defaults): SmolLM2-135M 40.8 against its unigram baseline
1,766 (ratio 43, usable); Gemma-3-270M 27.7 against 2,339 (ratio 84) with its ``<bos>`` (274 without it, as the gate
measured before the blocks followed the model's conventions); the old offline zoo's causal
students 1,529-2,038 against about 1,650 (ratio ≤ 1.1, not usable).

    >>> q = language_model_quality(model, tokenizer, train, heldout, objective="causal")
    >>> q["heldout_perplexity"], q["unigram_perplexity"], q["ratio"], q["usable"]
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch
import torch.nn.functional as F

from helpers.errors import InputError
from helpers.lm import conventions

__all__ = ["mask_tokens", "heldout_nll", "start_tokens", "heldout_perplexity", "unigram_log_probs", "unigram_perplexity",
           "gate", "language_model_quality", "MIN_RATIO"]

MIN_RATIO = 2.0
_ALIASES = {"causal": "causal", "gpt2": "causal", "masked": "masked", "bert": "masked"}


def mask_tokens(input_ids: torch.Tensor, *, mask_id: int, vocab_size: int, special_ids: list[int],
                generator: torch.Generator, prob: float = 0.15):
    """BERT masking (Devlin et al. 2019): select ``prob`` of the non-special tokens; of those
    80 % become [MASK], 10 % a random token, 10 % stay. Returns (inputs, labels) with
    labels = -100 at unselected positions (the DataCollatorForLanguageModeling recipe,
    with an explicit generator)."""
    labels = input_ids.clone()
    special = torch.isin(input_ids, torch.tensor(special_ids))
    p = torch.full(input_ids.shape, prob)
    p[special] = 0.0
    selected = torch.bernoulli(p, generator=generator).bool()
    labels[~selected] = -100
    inputs = input_ids.clone()
    to_mask = torch.bernoulli(torch.full(input_ids.shape, 0.8), generator=generator).bool() & selected
    inputs[to_mask] = mask_id
    to_rand = (torch.bernoulli(torch.full(input_ids.shape, 0.5), generator=generator).bool()
               & selected & ~to_mask)
    inputs[to_rand] = torch.randint(vocab_size, input_ids.shape, generator=generator)[to_rand]
    return inputs, labels


def _objective(objective: str | None, arch: str | None) -> str:
    """``"causal"`` or ``"masked"`` from ``objective`` or the old ``arch`` ("gpt2" / "bert")."""
    names = [_ALIASES.get(v, v) for v in (objective, arch) if v is not None]
    if len(set(names)) > 1:
        raise InputError(f"objective {objective!r} and arch {arch!r} disagree")
    name = names[0] if names else "causal"
    if name not in ("causal", "masked"):
        raise InputError(f"the quality gate measures causal or masked language models, not objective {name!r}")
    return name


def _device(model) -> torch.device:
    try:
        return next(model.parameters()).device
    except (AttributeError, StopIteration, TypeError):
        return torch.device("cpu")


@torch.no_grad()
def heldout_nll(model, blocks: torch.Tensor, *, objective: str | None = None, tokenizer=None,
                batch_size: int = 8, seed: int = 0, arch: str | None = None,
                first_target: int | None = None) -> tuple[float, int, torch.Tensor]:
    """``(nll_sum, count, targets)`` of ``model`` on packed ``blocks`` [n, L].

    ``targets``: the token ids scored, flattened in order (causal: ``blocks[:, first_target:]``,
    ``first_target`` by default the number of start tokens of ``tokenizer``, at least 1
    (:func:`start_tokens`); masked: the original ids at the masked positions). Causal models get ``(input_ids, attention_mask)``,
    masked models ``input_ids`` with 15 % of the non-special tokens masked 80/10/10 by
    :func:`mask_tokens` with one generator seeded with ``seed`` and drawn batch after batch (the
    masks depend on ``seed`` and ``batch_size``). ``arch`` ("gpt2" / "bert") is the old name of
    ``objective``. NLLs are computed in float32 and summed in double precision.
    """
    objective = _objective(objective, arch)
    if objective == "masked" and (tokenizer is None or tokenizer.mask_token_id is None):
        raise InputError("masked-token perplexity needs the model's tokenizer with a [MASK] token")
    if blocks.ndim != 2 or blocks.shape[0] == 0:
        raise InputError(f"held-out text gives no complete block (blocks of shape {tuple(blocks.shape)})")
    if batch_size < 1:
        raise InputError(f"batch_size must be a positive integer, got {batch_size}")
    if first_target is None:
        first_target = max(1, start_tokens(tokenizer, objective)) if tokenizer is not None else 1
    if not 1 <= first_target < blocks.shape[1]:
        raise InputError(f"first_target must be in [1, {blocks.shape[1]}), got {first_target}")
    model.eval()
    device = _device(model)
    total, count, targets = 0.0, 0, []
    g = torch.Generator().manual_seed(seed)
    for i in range(0, blocks.shape[0], batch_size):
        ids = blocks[i:i + batch_size]
        if objective == "causal":
            logits = model(input_ids=ids.to(device),
                           attention_mask=torch.ones_like(ids).to(device)).logits[:, first_target - 1:-1]
            tgt = ids[:, first_target:]
        else:
            ids, tgt = mask_tokens(ids, mask_id=tokenizer.mask_token_id, vocab_size=len(tokenizer),
                                   special_ids=tokenizer.all_special_ids, generator=g)
            logits = model(input_ids=ids.to(device)).logits
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), tgt.reshape(-1).to(device),
                              ignore_index=-100, reduction="sum")
        total += float(nll)
        count += int((tgt != -100).sum())
        targets.append(tgt[tgt != -100])
    return total, count, torch.cat(targets)


def start_tokens(tokenizer, objective: str) -> int:
    """How many start tokens open each causal block of ``tokenizer``'s model (``<bos>``: 1; none
    for GPT-2, SmolLM2, Qwen): context only, never a target nor counted by the unigram model.
    0 for masked LMs (their special tokens are never masked)."""
    return len(conventions.special_ids(tokenizer)[0]) if _objective(objective, None) == "causal" else 0


def heldout_perplexity(model, blocks: torch.Tensor, *, objective: str | None = None, tokenizer=None,
                       batch_size: int = 8, seed: int = 0, arch: str | None = None) -> float:
    """Held-out perplexity ``exp(nll_sum / count)`` of :func:`heldout_nll`: next-token
    perplexity (causal) or masked-token perplexity (masked)."""
    total, count, _ = heldout_nll(model, blocks, objective=objective, tokenizer=tokenizer,
                                  batch_size=batch_size, seed=seed, arch=arch)
    return math.exp(total / max(count, 1))


def unigram_log_probs(train_ids, vocab_size: int, *, smoothing: float = 1.0) -> torch.Tensor:
    """Log-probabilities [V] (float64) of the add-``s`` unigram model of ``train_ids``:
    ``log((c(w) + s) / (N + s V))`` (Laplace smoothing for ``s = 1``)."""
    ids = torch.as_tensor(np.asarray(train_ids, dtype=np.int64)).reshape(-1)
    if vocab_size < 1:
        raise InputError(f"vocab_size must be positive, got {vocab_size}")
    if not smoothing > 0:
        raise InputError(f"unigram smoothing must be positive (add-s), got {smoothing}")
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise InputError(f"training token ids outside the vocabulary [0, {vocab_size})")
    counts = torch.bincount(ids, minlength=vocab_size).double()
    return torch.log(counts + smoothing) - math.log(ids.numel() + smoothing * vocab_size)


def unigram_perplexity(log_probs, targets) -> float:
    """``exp(-mean log p(t))`` of the unigram model over the scored tokens ``targets``."""
    lp = torch.as_tensor(log_probs, dtype=torch.float64)
    t = torch.as_tensor(np.asarray(targets, dtype=np.int64)).reshape(-1)
    if t.numel() == 0:
        raise InputError("unigram perplexity: no scored tokens")
    if int(t.min()) < 0 or int(t.max()) >= lp.numel():
        raise InputError(f"scored token ids outside the unigram vocabulary [0, {lp.numel()})")
    return math.exp(-float(lp[t].mean()))


def gate(perplexity: float, unigram_perplexity: float, *, min_ratio: float = MIN_RATIO) -> dict:
    """The quality gate: ``ratio = unigram_perplexity / perplexity``, ``usable = ratio >= min_ratio``.

    Issue 11: "a model whose perplexity is not at least 2x better than its unigram baseline is
    marked not a usable language model". A NaN perplexity is not usable.
    """
    if not (isinstance(min_ratio, numbers.Real) and not isinstance(min_ratio, bool)
            and math.isfinite(min_ratio) and min_ratio > 0):
        raise InputError(f"min_ratio must be a positive number, got {min_ratio!r}")
    perplexity, unigram_perplexity = float(perplexity), float(unigram_perplexity)
    ratio = unigram_perplexity / perplexity if perplexity > 0 else math.nan
    return {"perplexity": perplexity, "unigram_perplexity": unigram_perplexity, "ratio": ratio,
            "usable": bool(ratio >= min_ratio), "min_ratio": float(min_ratio)}


def language_model_quality(model, tokenizer, train_texts: list[str], heldout_texts: list[str], *,
                           objective: str, blocks: int | None = 16, block_size: int = 128, batch_size: int = 8,
                           min_ratio: float = MIN_RATIO, smoothing: float = 1.0, seed: int = 0) -> dict:
    """Held-out perplexity of ``model``, its unigram baseline and the gate (see the module).

    Both texts are tokenised with ``tokenizer`` (the model's own) and packed by
    :func:`helpers.lm.conventions.pack_blocks` (causal: documents separated by EOS, each block
    opened by the tokenizer's start tokens when it has any; masked: ``[CLS] chunk [SEP]``
    blocks). The first ``blocks`` held-out blocks of ``block_size`` tokens are scored (None:
    all); the unigram model is fitted on every packed training token but a causal model's start
    tokens (add-``smoothing``) and evaluated at the same tokens as the model — for masked LMs
    that is at the masked positions drawn with ``seed``.

    Returns ``objective, heldout_perplexity, unigram_perplexity, ratio, usable, min_ratio,
    heldout_tokens`` (tokens scored), ``train_tokens``, ``blocks``, ``block_size``.
    """
    objective = _objective(objective, None)
    if tokenizer is None:
        raise InputError("the quality gate needs the model's tokenizer")
    if blocks is not None and blocks < 1:
        raise InputError(f"blocks must be a positive integer or None, got {blocks}")
    limit = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if isinstance(limit, int) and block_size > limit:
        raise InputError(f"block_size {block_size} exceeds the model's {limit} positions")
    held = conventions.pack_blocks(heldout_texts, tokenizer, block_size=block_size, objective=objective)
    if blocks is not None and held.shape[0] < blocks:
        raise InputError(f"the held-out text gives {held.shape[0]} blocks of {block_size} tokens, "
                         f"fewer than the {blocks} asked for")
    held = held if blocks is None else held[:blocks]
    start = start_tokens(tokenizer, objective)
    train = conventions.pack_blocks(train_texts, tokenizer, block_size=block_size, objective=objective)
    train = train[:, start:].reshape(-1)
    if train.numel() == 0:
        raise InputError(f"the training text gives no complete block of {block_size} tokens")
    vocab = max(len(tokenizer), int(train.max()) + 1, int(held.max()) + 1)
    nll, count, targets = heldout_nll(model, held, objective=objective, tokenizer=tokenizer,
                                      batch_size=batch_size, seed=seed)
    uni = unigram_perplexity(unigram_log_probs(train, vocab, smoothing=smoothing), targets)
    g = gate(math.exp(nll / max(count, 1)), uni, min_ratio=min_ratio)
    return {"objective": objective, "heldout_perplexity": g["perplexity"], "unigram_perplexity": g["unigram_perplexity"],
            "ratio": g["ratio"], "usable": g["usable"], "min_ratio": g["min_ratio"], "heldout_tokens": count,
            "train_tokens": int(train.numel()), "blocks": int(held.shape[0]), "block_size": block_size}
