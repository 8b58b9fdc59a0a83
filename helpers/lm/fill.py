"""Top-k fill-ins of a template's blank over the whole vocabulary (seed 002's cloze probing).

- **masked LMs**: the softmax over the vocabulary at the blank's one mask token (what
  ``transformers.pipeline("fill-mask")`` returns).
- **causal LMs**: the next token after the text before the blank; the text after it is not
  seen (as the upstream seed-002 code did for GPT-2). With ``whole_words`` a piece that starts a
  word is continued to a word boundary greedily (beam width 1): the next piece is appended while
  the most likely next token continues the word (it neither starts a new word nor is
  punctuation, a special token or end of text), at most ``max_pieces`` pieces; the word's
  probability is the product of its pieces' probabilities (REFERENCE_NOTES: raw next-token
  top-k of small causal LMs are mostly function words and, in Arabic, word pieces).

``whole_words`` keeps only tokens that start a word (no ``##`` continuation for WordPiece; the
leading-space marker ``Ġ`` / ``▁`` for byte-level BPE and SentencePiece) and drops special
tokens; ``skip`` drops given words (e.g. stop words) before ranking, so k words are still
returned. Probabilities are the model's, not renormalised over what is kept.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from helpers.errors import InputError
from helpers.lm import cloze, scoring

__all__ = ["top_k", "word_starts", "COLUMNS"]

COLUMNS = ["template_id", "template", "rank", "token", "word", "probability", "log_prob"]
_MARKERS = ("\u0120", "\u2581")          # byte-level BPE "Ġ", SentencePiece "▁"


def word_starts(tokenizer) -> np.ndarray:
    """Boolean per vocabulary id: the token starts a word and is not a special token."""
    vocab = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    wordpiece = any(isinstance(t, str) and t.startswith("##") for t in vocab)
    special = set(tokenizer.all_special_ids)
    out = np.zeros(len(vocab), dtype=bool)
    for i, t in enumerate(vocab):
        if not isinstance(t, str) or i in special:
            continue
        out[i] = not t.startswith("##") if wordpiece else t.startswith(_MARKERS)
    return out


def _is_punctuation(word: str) -> bool:
    return bool(word) and all(c in string.punctuation or not c.isalnum() for c in word)


def _word(tokenizer, ids: list[int]) -> str:
    return tokenizer.decode(ids).strip()


def _ranked(tokenizer, probs: np.ndarray, allowed: np.ndarray, skip: set[str], k: int, extend=None):
    """The k most probable words (ids, word, p) among ``allowed`` ids, words in ``skip`` left out.

    ``extend(id, p)`` continues a piece to a word (p can only fall: a product of
    probabilities), so pieces are examined in descending probability until the next piece's
    own probability is below the k-th best word found; a word reached twice keeps its best.
    """
    best: dict[str, tuple[list[int], str, float]] = {}
    for i in np.argsort(-probs, kind="stable"):
        if not allowed[i]:
            continue
        if len(best) >= k and probs[i] < sorted(v[2] for v in best.values())[-k]:
            break
        ids, p = ([int(i)], float(probs[i])) if extend is None else extend(int(i), float(probs[i]))
        word = _word(tokenizer, ids)
        if not word or word.lower() in skip or (word in best and best[word][2] >= p):
            continue
        best[word] = (ids, word, p)
        if extend is None and len(best) == k:
            break
    return sorted(best.values(), key=lambda v: -v[2])[:k]


def _skip_set(skip: Iterable[str] | None) -> set[str]:
    if skip is None:
        return set()
    if isinstance(skip, str):
        raise InputError("skip must be a collection of words, not one string")
    return {w.strip().lower() for w in skip}


def _probs_at(loaded, rows: list[list[int]], positions: list[int], batch_tokens: int | None) -> np.ndarray:
    """The model's distribution over the vocabulary at ``positions[i]`` of each row of ids
    (causal LMs: the next token after that position), batched under the token budget."""
    import torch

    model, tok = loaded.model, loaded.tokenizer
    out = np.zeros((len(rows), scoring._config_get(model, "vocab_size") or len(tok)), dtype=np.float64)
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
    dev = scoring._device(model)
    with torch.inference_mode():
        for batch in scoring._batches([len(r) for r in rows], batch_tokens or scoring._default_budget(model)):
            ids, mask = scoring._pad([rows[i] for i in batch], pad_id)
            logits = model(input_ids=ids.to(dev), attention_mask=None if mask is None else mask.to(dev)).logits
            pos = torch.as_tensor([positions[i] for i in batch], device=dev)
            out[batch] = torch.softmax(logits[torch.arange(len(batch), device=dev), pos].double(), -1).cpu().numpy()
    return out


def _next_token_probs(loaded, rows: list[list[int]], batch_tokens: int | None) -> np.ndarray:
    return _probs_at(loaded, rows, [len(r) - 1 for r in rows], batch_tokens)


def _masked_probs(loaded, templates: list[str], batch_tokens: int | None) -> np.ndarray:
    tok = loaded.tokenizer
    if tok.mask_token_id is None:
        raise InputError(f"{loaded.name}: the tokenizer has no mask token; not a masked LM")
    rows = []
    for t in templates:
        prefix, suffix = cloze.split_template(t)
        rows.append(tok(prefix + tok.mask_token + suffix)["input_ids"])
    return _probs_at(loaded, rows, [r.index(tok.mask_token_id) for r in rows], batch_tokens)


def top_k(loaded, templates: Sequence[str], k: int = 10, *, whole_words: bool = True, skip=None,
          max_pieces: int = 4, batch_tokens: int | None = None) -> pd.DataFrame:
    """The ``k`` most probable fill-ins of each template's blank (see the module): one row per
    (template, rank) with ``template_id, template, rank, token`` (the tokens, space-joined),
    ``word``, ``probability``, ``log_prob``."""
    if isinstance(templates, str):
        raise InputError("templates must be a list of strings, not one string")
    templates = list(templates)
    if not templates:
        raise InputError("no templates")
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k must be a positive integer, got {k!r}")
    for t in templates:
        cloze.split_template(t)
    if loaded.objective not in ("masked", "causal"):
        raise InputError(f"{loaded.name}: top-k fill-ins need a masked or causal LM, not objective "
                         f"{loaded.objective!r}")
    tok, skipped = loaded.tokenizer, _skip_set(skip)
    allowed = word_starts(tok) if whole_words else ~np.isin(np.arange(len(tok)), tok.all_special_ids)
    if loaded.objective == "masked":
        probs = _masked_probs(loaded, templates, batch_tokens)
        found = [_ranked(tok, p[:len(tok)], allowed, skipped, k) for p in probs]
    else:
        prefixes = []
        for t in templates:
            before = cloze.split_template(t)[0].rstrip()
            ids = tok(before)["input_ids"] if before else _start(tok)
            if not ids:
                raise InputError(f"template {t!r}: nothing precedes the blank and the tokenizer adds no start token")
            prefixes.append(ids)
        probs = _next_token_probs(loaded, prefixes, batch_tokens)
        found = []
        for ids, p in zip(prefixes, probs):
            extend = (lambda i, q, ids=ids: _complete(loaded, ids, i, q, allowed, max_pieces, batch_tokens)) \
                if whole_words else None
            found.append(_ranked(tok, p[:len(tok)], allowed, skipped, k, extend))
    rows = [{"template_id": n, "template": t, "rank": r + 1, "token": " ".join(tok.convert_ids_to_tokens(ids)),
             "word": w, "probability": p, "log_prob": float(np.log(p)) if p > 0 else -np.inf}
            for n, (t, f) in enumerate(zip(templates, found)) for r, (ids, w, p) in enumerate(f)]
    return pd.DataFrame(rows, columns=COLUMNS)


def _start(tok) -> list[int]:
    from helpers.lm.logprobs import start_ids

    try:
        return start_ids(tok)
    except ValueError:
        return []


def _complete(loaded, prefix: list[int], first: int, p: float, starts: np.ndarray, max_pieces: int,
              batch_tokens) -> tuple[list[int], float]:
    """Greedy continuation of a word-starting piece to the word's end (module docstring);
    ``starts``: :func:`word_starts` of the tokenizer."""
    tok = loaded.tokenizer
    special = set(tok.all_special_ids)
    pieces = [first]
    while len(pieces) < max_pieces:
        nxt = _next_token_probs(loaded, [prefix + pieces], batch_tokens)[0][:len(tok)]
        j = int(np.argmax(nxt))
        if starts[j] or j in special or _is_punctuation(tok.convert_tokens_to_string([tok.convert_ids_to_tokens(j)])):
            break
        pieces.append(j)
        p *= float(nxt[j])
    return pieces, p

