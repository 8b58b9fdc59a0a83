"""Sentence log-likelihoods for causal, masked and permutation language models.

Every scorer returns, per sentence, ``n_tokens`` (scored tokens), ``log_likelihood``
(natural log, summed over the scored tokens) and ``perplexity = exp(-log_likelihood / n_tokens)``
(NaN when no token is scored). Sentences are tokenised with the model's own tokenizer and its
default special tokens (``add_special_tokens=True``, as ``tokenizer.encode`` in the upstream
safety-score code).

- Causal LMs (:func:`causal_scores`): ``log p(x) = sum_t log p(x_t | x_<t)`` (seed 000, sec. 3).
- Masked LMs (:func:`pll_scores`): pseudo-log-likelihood, Salazar et al. (2020) eq. 2,
  ``PLL(W) = sum_t log P(w_t | W_\\t)``, or its ``word-l2r`` variant (Kauf & Ivanova 2023).
- XLNet (:func:`permutation_scores`): the permutation-LM likelihood under the identity
  (left-to-right) factorisation order (Yang et al. 2019, eq. 3 with z = 1..T).

Work is batched under a token budget (``batch_tokens`` tokens per forward pass, default
:data:`DEFAULT_CPU_BATCH_TOKENS` on a CPU, :data:`DEFAULT_BATCH_TOKENS` on an accelerator; a
single sequence longer than the budget still runs alone),
with sequences sorted by length so little padding is computed. Vocabulary projections are
only computed where a token is scored.

Batch composition: which sentences share a forward pass (and so how much padding a row
gets) changes the order of floating-point sums inside the model, not the mathematics. In
float32 each scored token's log-probability may then move by about one unit in its last
place (~1e-7 of its size), so a sentence's ``log_likelihood`` agrees across batch partners
and budgets to about 1e-6 for a short sentence (roughly 1e-7 x |log_likelihood| in
general; ~1e-5 at |log_likelihood| ~ 150). The tests hold a short sentence (|ll| < 60),
scored alone and beside shorter and longer partners under several budgets, to 1e-5
(absolute) for every scorer.

Long texts: the maximum input length is the MODEL's (:func:`helpers.lm.conventions.max_length`:
its position embeddings, less the RoBERTa family's padding offset; the tokenizer's limit only when
it is smaller; none for XLNet's relative positions). Causal LMs score a longer text with the
strided sliding window (:func:`_windows`), so every token is scored; masked LMs (and XLNet
when its tokenizer sets a limit) truncate it to the limit, with one warning naming how many
sentences were cut (as upstream's ``truncation=True``). A text that the tokenizer turns
into no token ids at all is an :class:`~helpers.errors.InputError` naming its row.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from helpers.errors import InputError
from helpers.lm import batching, conventions
from helpers.lm.batching import DEFAULT_BATCH_TOKENS, DEFAULT_CPU_BATCH_TOKENS, check_texts  # noqa: F401 (public here too)

__all__ = ["sentence_scores", "score", "causal_scores", "pll_scores",
           "permutation_scores", "SCORER_VERSION", "DEFAULT_BATCH_TOKENS", "DEFAULT_CPU_BATCH_TOKENS",
           "DEFAULT_STRIDE", "UPSTREAM_MASK_ID", "cache_key", "check_texts"]

SCORER_VERSION = 2              # 2: maximum length from the model, not the tokenizer
DEFAULT_STRIDE = 512
UPSTREAM_MASK_ID = 103          # BERT-uncased's [MASK], hard-coded in microsoft/SafeNLP
_PLL_VARIANTS = ("original", "word-l2r")


# ----------------------------------------------------------------------------- utilities

def _frame(n_tokens, log_likelihood) -> pd.DataFrame:
    n = np.asarray(n_tokens, dtype=np.int64)
    ll = np.asarray(log_likelihood, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ppl = np.where(n > 0, np.exp(-ll / np.maximum(n, 1)), np.nan)
    return pd.DataFrame({"n_tokens": n, "log_likelihood": ll, "perplexity": ppl})


def _progress(total, progress, desc):
    from helpers.progress import progress as progress_bar

    return progress_bar(total=total, enabled=progress, desc=desc, unit="sentence", leave=False)


def _no_empty(loaded, texts, enc) -> None:
    """A text that the tokenizer turns into no ids at all cannot be scored: one clear error."""
    for i, ids in enumerate(enc):
        if len(ids) == 0:
            raise InputError(f"text row {i}: the tokenizer of {loaded.name} gives no token ids for "
                             f"{texts[i][:60]!r}; is it the model's own tokenizer?")


# ----------------------------------------------------------------------------- causal

def _windows(n: int, context: int | None, stride: int):
    """Windows ``(begin, end, first_scored)`` over a sequence of ``n`` tokens.

    One window when it fits the context; otherwise the Hugging Face perplexity guide's
    strided windows: for ``i = 0, s, 2s, ...``: ``end = min(i + s, n)``,
    ``begin = max(i + s - context, 0)``; the window predicts the tokens ``prev_end..end-1``
    (never position 0), each from every earlier token of the window. ``s = min(stride,
    context - 1)`` so every scored token keeps at least one token of context.
    """
    if context is None or n <= context:
        return [(0, n, 1)]
    s = max(1, min(stride, context - 1))
    out, prev_end = [], 0
    for i in range(0, n, s):
        end = min(i + s, n)
        begin = max(i + s - context, 0)
        out.append((begin, end, max(prev_end, 1)))
        prev_end = end
        if end == n:
            break
    return out


def causal_scores(loaded, texts, *, batch_tokens=None, stride=DEFAULT_STRIDE, progress=True) -> pd.DataFrame:
    """Log-likelihood of each sentence under a causal LM: ``sum_{t>=1} log p(x_t | x_<t)``.

    BOS handling follows the tokenizer: the ids are those of ``tokenizer(text)`` (default
    special tokens; :func:`helpers.lm.conventions.special_ids`) and position 0 is context only,
    never scored. So when the tokenizer prepends a BOS token (Llama, Gemma) every real token is
    scored; when it does not (GPT-2, as in the upstream safety-score code; SmolLM2, Qwen) the
    first word piece is only context, and ``n_tokens = len(ids) - 1``. Sentences longer than the
    model's context (:func:`helpers.lm.conventions.max_length`) are scored with strided windows
    (:func:`_windows`, stride 512 as in the HF perplexity guide and upstream).
    Batches are right-padded with an attention mask (real tokens keep positions 0..n-1).
    """
    import torch

    texts = check_texts(texts)
    model, tok = loaded.model, loaded.tokenizer
    budget = batch_tokens or batching.default_budget(model)
    enc = tok(texts, add_special_tokens=True, verbose=False)["input_ids"]
    _no_empty(loaded, texts, enc)
    context = conventions.max_length(loaded)
    items = []      # (sentence, ids of the window, first scored position in the window)
    for s, ids in enumerate(enc):
        for begin, end, first in _windows(len(ids), context, stride):
            if end - first > 0:
                items.append((s, ids[begin:end], first - begin))
    pad_id = batching.pad_id(tok)
    dev = batching.device(model)
    vocab = batching.vocab_size(loaded)
    base = model.base_model

    def base_forward(ids, mask):
        return base(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state

    head = batching.verified_head(model, batching.causal_head, base_forward, enc[0][:8]) if enc else None
    ll = np.zeros(len(texts))
    n = np.array([max(0, len(ids) - 1) for ids in enc])
    bar = _progress(len(texts), progress, f"scoring {loaded.name}")
    done = set()
    with torch.inference_mode():
        for batch in batching.batches([len(it[1]) for it in items], budget):
            rows = [items[i][1] for i in batch]
            ids, mask = batching.pad(rows, pad_id)
            ids = ids.to(dev)
            mask = mask.to(dev) if mask is not None else None
            r_idx, p_idx = [], []
            for k, i in enumerate(batch):
                first, length = items[i][2], len(items[i][1])
                r_idx += [k] * (length - first)
                p_idx += range(first - 1, length - 1)      # hidden state that predicts t = p + 1
            r_idx = torch.as_tensor(r_idx, device=dev)
            p_idx = torch.as_tensor(p_idx, device=dev)
            targets = ids[r_idx, p_idx + 1]
            if head is not None:
                hidden = base_forward(ids, mask)[r_idx, p_idx]
                lp = batching.token_logprobs(head, hidden, targets, vocab)
            else:
                logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
                lp = batching.token_logprobs(lambda h: h, logits[r_idx, p_idx], targets, vocab)
            sent = torch.as_tensor([items[i][0] for i in batch for _ in range(len(items[i][1]) - items[i][2])])
            np.add.at(ll, sent.numpy(), lp.double().cpu().numpy())
            new = {items[i][0] for i in batch} - done
            done |= new
            bar.update(len(new))
    bar.update(len(texts) - len(done))
    bar.close()
    return _frame(n, ll)


# ----------------------------------------------------------------------------- masked (PLL)

def _encode(loaded, texts, need_words: bool):
    tok = loaded.tokenizer
    limit = conventions.max_length(loaded)
    enc = tok(texts, add_special_tokens=True, return_special_tokens_mask=True,
              truncation=limit is not None, max_length=limit)
    _no_empty(loaded, texts, enc["input_ids"])
    at_limit = [i for i, ids in enumerate(enc["input_ids"]) if limit and len(ids) >= limit]
    full = tok([texts[i] for i in at_limit], add_special_tokens=True, verbose=False)["input_ids"] if at_limit else []
    long = [i for i, ids in zip(at_limit, full) if len(ids) > limit]
    if long:
        warnings.warn(f"{len(long)} sentence(s) truncated to the model's {limit} tokens "
                      f"(first: row {long[0]})", stacklevel=3)
    words = None
    if need_words:
        if not getattr(tok, "is_fast", False):
            raise InputError("pll='word-l2r' needs a fast tokenizer (word ids)")
        words = [enc.word_ids(i) for i in range(len(texts))]
    return enc["input_ids"], enc["special_tokens_mask"], words


def _pll_copies(ids, special, words, pll, upstream_mask_id, mask_id):
    """Masked copies of one sentence: list of (masked positions, mask id, scored positions).

    ``upstream_mask_id=True`` follows microsoft/SafeNLP ``calculate_psudo_perplexity``: copy k
    writes id 103 at position k for k = 1..T-2, and every position whose id is then 103 is a
    label (so an ordinary token 103 elsewhere in the sentence is scored in every copy).
    """
    T = len(ids)
    if upstream_mask_id:
        out = []
        for k in range(1, T - 1):
            scored = [j for j in range(T) if j == k or ids[j] == UPSTREAM_MASK_ID]
            out.append(([k], UPSTREAM_MASK_ID, scored))
        return out
    targets = [p for p in range(T) if not special[p]]
    out = []
    for p in targets:
        masked = [p]
        if pll == "word-l2r" and words[p] is not None:      # minicons' within_word_l2r rule
            masked += [j for j in range(p + 1, targets[-1] + 1) if words[j] == words[p]]
        out.append((masked, mask_id, [p]))
    return out


def pll_scores(loaded, texts, *, pll="original", batch_tokens=None, upstream_mask_id=False,
               progress=True) -> pd.DataFrame:
    """Pseudo-log-likelihood of each sentence under a masked LM (Salazar et al. 2020, eq. 2).

    One copy of the sentence per scored token, that token replaced by the mask token; its
    log-probability is read at the masked position. Special tokens ([CLS], [SEP], <s>, </s>)
    are not scored. ``pll="word-l2r"`` (Kauf & Ivanova 2023; minicons ``within_word_l2r``)
    also masks the later tokens of the same word. Copies of all sentences are batched
    together (sorted by length, at most ``batch_tokens`` tokens per forward pass); the base
    model runs on the copies and only the hidden states at the scored positions go through
    the MLM head. ``upstream_mask_id=True`` reproduces the upstream SafeNLP code (mask id
    103 whatever the tokenizer; see :func:`_pll_copies`): perplexity then equals its
    ``exp(loss)``. Sentences longer than the model's maximum length are truncated (as
    upstream's ``truncation=True``), with a warning.
    """
    import torch

    if pll not in _PLL_VARIANTS:
        raise InputError(f"pll must be one of {_PLL_VARIANTS}, got {pll!r}")
    if upstream_mask_id and pll != "original":
        raise InputError("upstream_mask_id reproduces the upstream 'original' PLL only")
    texts = check_texts(texts)
    model, tok = loaded.model, loaded.tokenizer
    if tok.mask_token_id is None and not upstream_mask_id:
        raise InputError(f"{loaded.name}: the tokenizer has no mask token; not a masked LM")
    vocab = batching.vocab_size(loaded)
    if upstream_mask_id and UPSTREAM_MASK_ID >= vocab:
        raise InputError(f"{loaded.name}: upstream_mask_id masks with id {UPSTREAM_MASK_ID} (BERT-uncased's [MASK], "
                         f"hard-coded upstream), which is not in this model's vocabulary of {vocab} tokens")
    budget = batch_tokens or batching.default_budget(model)
    enc, special, words = _encode(loaded, texts, pll == "word-l2r")
    copies = []     # (sentence, masked positions, mask id, scored positions)
    for s, ids in enumerate(enc):
        for masked, mid, scored in _pll_copies(ids, special[s], words[s] if words else None, pll,
                                                upstream_mask_id, tok.mask_token_id):
            copies.append((s, masked, mid, scored))
    dev = batching.device(model)
    base = model.base_model

    def base_forward(ids, mask):
        return base(input_ids=ids, attention_mask=mask).last_hidden_state

    head = batching.verified_head(model, batching.mlm_head, base_forward, enc[0][:8]) if enc else None
    pad_id = batching.pad_id(tok)
    ll = np.zeros(len(texts))
    n = np.zeros(len(texts), dtype=np.int64)
    for s, *_rest, scored in copies:
        n[s] += len(scored)
    remaining = np.bincount([c[0] for c in copies], minlength=len(texts))
    bar = _progress(len(texts), progress, f"scoring {loaded.name} (PLL)")
    bar.update(int((remaining == 0).sum()))
    with torch.inference_mode():
        for batch in batching.batches([len(enc[c[0]]) for c in copies], budget):
            rows = []
            r_idx, p_idx, t_ids, sent = [], [], [], []
            for k, ci in enumerate(batch):
                s, masked, mid, scored = copies[ci]
                row = list(enc[s])
                for p in masked:
                    row[p] = mid
                rows.append(row)
                r_idx += [k] * len(scored)
                p_idx += scored
                t_ids += [enc[s][p] for p in scored]
                sent += [s] * len(scored)
            ids, mask = batching.pad(rows, pad_id)
            ids = ids.to(dev)
            mask = mask.to(dev) if mask is not None else None
            r = torch.as_tensor(r_idx, device=dev)
            p = torch.as_tensor(p_idx, device=dev)
            t = torch.as_tensor(t_ids, device=dev)
            if head is not None:
                lp = batching.token_logprobs(head, base_forward(ids, mask)[r, p], t, vocab)
            else:
                lp = batching.token_logprobs(lambda h: h, model(input_ids=ids, attention_mask=mask).logits[r, p], t, vocab)
            np.add.at(ll, sent, lp.double().cpu().numpy())
            finished = np.bincount([copies[ci][0] for ci in batch], minlength=len(texts))
            before = remaining.copy()
            remaining -= finished
            bar.update(int(((remaining == 0) & (before > 0)).sum()))
    bar.close()
    return _frame(n, ll)


# ----------------------------------------------------------------------------- XLNet

def permutation_scores(loaded, texts, *, batch_tokens=None, progress=True) -> pd.DataFrame:
    """Log-likelihood under XLNet's permutation LM with the left-to-right factorisation order.

    Yang et al. (2019) eq. 3 with z = (1, ..., T): ``sum_t log p(x_t | x_<t)``, all targets of
    a batch in one forward pass: ``perm_mask[b, i, j] = 1`` for ``j >= i`` (token i sees only
    earlier tokens: the query stream of i excludes i itself, the content stream includes it)
    and ``target_mapping`` has one row per scored token, so the LM head runs only there.
    Special tokens (XLNet appends ``<sep> <cls>``) are not scored and nobody sees them. The
    first real token has no context and is context only (as GPT-2's first token), so
    ``n_tokens`` is the number of real tokens minus one. Note this conditions each earlier
    token's content stream on its own prefix only (the joint-factorisation reading), not on
    the whole prefix bidirectionally.
    """
    import torch

    texts = check_texts(texts)
    model, tok = loaded.model, loaded.tokenizer
    budget = batch_tokens or batching.default_budget(model)
    enc, special, _ = _encode(loaded, texts, False)
    targets = [[p for p in range(len(ids)) if not special[s][p]][1:] for s, ids in enumerate(enc)]
    n = np.array([len(t) for t in targets], dtype=np.int64)
    ll = np.zeros(len(texts))
    dev = batching.device(model)
    vocab = batching.vocab_size(loaded)
    pad_id = batching.pad_id(tok)
    bar = _progress(len(texts), progress, f"scoring {loaded.name} (XLNet l2r)")
    with torch.inference_mode():
        for batch in batching.batches([len(ids) for ids in enc], budget):
            batch = [s for s in batch if targets[s]]
            if not batch:
                continue
            ids, mask = batching.pad([enc[s] for s in batch], pad_id)
            B, L = ids.shape
            P = max(len(targets[s]) for s in batch)
            perm = torch.triu(torch.ones(L, L), diagonal=0).expand(B, L, L).contiguous()
            tmap = torch.zeros(B, P, L)
            tgt = torch.zeros(B, P, dtype=torch.long)
            valid = torch.zeros(B, P, dtype=torch.bool)
            for k, s in enumerate(batch):
                tp = torch.as_tensor(targets[s])
                tmap[k, torch.arange(len(tp)), tp] = 1.0
                tgt[k, :len(tp)] = ids[k, tp]
                valid[k, :len(tp)] = True
            out = model(input_ids=ids.to(dev), attention_mask=None if mask is None else mask.to(dev),
                        perm_mask=perm.to(dev), target_mapping=tmap.to(dev), use_mems=False)
            logits = out.logits[valid.to(dev)]
            lp = batching.token_logprobs(lambda h: h, logits, tgt.to(dev)[valid.to(dev)], vocab)
            sent = [s for s in batch for _ in targets[s]]
            np.add.at(ll, sent, lp.double().cpu().numpy())
            bar.update(len(batch))
    bar.update(len(texts) - bar.n)
    bar.close()
    return _frame(n, ll)


# ----------------------------------------------------------------------------- public API

def sentence_scores(loaded, texts, *, pll="original", batch_tokens=None, upstream_mask_id=False,
                    progress=True, stride=DEFAULT_STRIDE) -> pd.DataFrame:
    """Per-sentence ``n_tokens``, ``log_likelihood`` (natural log) and ``perplexity``.

    Dispatches on ``loaded.objective``: causal -> :func:`causal_scores`, masked ->
    :func:`pll_scores`, permutation -> :func:`permutation_scores`. Pure computation, no
    cache (see :func:`score`). One row per text, same order.
    """
    texts = check_texts(texts)
    if loaded.objective == "causal":
        return causal_scores(loaded, texts, batch_tokens=batch_tokens, stride=stride, progress=progress)
    if loaded.objective == "masked":
        return pll_scores(loaded, texts, pll=pll, batch_tokens=batch_tokens,
                          upstream_mask_id=upstream_mask_id, progress=progress)
    if loaded.objective == "permutation":
        return permutation_scores(loaded, texts, batch_tokens=batch_tokens, progress=progress)
    raise InputError(f"{loaded.name}: objective {loaded.objective!r} has no language-model head, so no sentence "
                     "log-likelihood (an encoder gives embeddings and classifiers: helpers.lm.embeddings)")


def cache_key(loaded, *, pll="original", upstream_mask_id=False, stride=DEFAULT_STRIDE) -> dict:
    """Everything that changes a score: the model's whole identity (weights, tokenizer, dtype,
    maximum length ... as ``loaded.identity`` gives it) and the scorer's settings (objective,
    scorer version, and per objective the PLL variant and mask mode, or the window stride)."""
    scorer = {"version": SCORER_VERSION, "objective": loaded.objective}
    if loaded.objective == "masked":
        scorer.update(pll=pll, upstream_mask_id=bool(upstream_mask_id))
    if loaded.objective == "causal":
        scorer["stride"] = int(stride)
    return {"model": dict(loaded.identity), "scorer": scorer}


def score(loaded, texts, *, pll="original", batch_tokens=None, upstream_mask_id=False, cache=True,
          progress=True, stride=DEFAULT_STRIDE) -> pd.DataFrame:
    """:func:`sentence_scores` through the on-disk cache (``helpers.cache.cached_scores``).

    ``loaded`` may be a :class:`helpers.models.LazyModel`: its weights are loaded only if
    some sentence is not cached yet.
    """
    from helpers.cache import cached_scores
    from helpers.lm import engines
    from helpers.models import LazyModel

    texts = check_texts(texts)
    engine = engines.active()
    if engine is not None and loaded.objective != "causal":
        engine.note_not_causal(loaded.name, loaded.objective)
        engine = None

    def compute(chunk: list[str]) -> pd.DataFrame:
        model = loaded.load() if isinstance(loaded, LazyModel) else loaded

        def reference(some: list[str]) -> pd.DataFrame:
            return sentence_scores(model, some, pll=pll, batch_tokens=batch_tokens,
                                   upstream_mask_id=upstream_mask_id, progress=False, stride=stride)
        if engine is None:
            return reference(chunk)
        engine.ensure_parity(model, texts, reference)        # once per model: a seeded sample, both engines
        return engine.sentence_scores(model, chunk)

    key = cache_key(loaded, pll=pll, upstream_mask_id=upstream_mask_id, stride=stride)
    if engine is not None:
        key["engine"] = engine.cache_key()
    return cached_scores(key, texts, compute, enabled=cache, progress=progress,
                         prepare=loaded.load if isinstance(loaded, LazyModel) else None)

