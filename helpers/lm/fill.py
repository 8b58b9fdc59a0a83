"""Top-k fill-ins of a template's blank over the whole vocabulary (seed 002's cloze probing).

- **masked LMs**: raw pieces (``whole_words=False``, or ``max_pieces=1``) are the softmax over
  the vocabulary at the blank's one mask token (what ``transformers.pipeline("fill-mask")``
  returns, and all the upstream seed-002 code used: one mask). Whole words are multi-token
  aware: the blank is filled by n = 1 .. ``max_pieces`` mask tokens; a word of n pieces starts
  with a word-starting piece at the first mask and is continued left to right, each later mask
  taking its most likely continuation piece given the pieces before it (greedy, the "order"
  decoding of Jiang et al. 2020, X-FACTR); its probability is the product of its pieces'
  conditional probabilities (the sequential left-to-right variant of :mod:`helpers.lm.cloze`).
  Words of every length are ranked together, so longer words pay for each piece.
- **causal LMs**: the next token after the text before the blank; the text after it is not
  seen (as the upstream seed-002 code did for GPT-2). With ``whole_words`` a piece that starts a
  word is continued to a word boundary greedily (beam width 1): the next piece is appended while
  the most likely next token continues the word (it neither starts a new word nor is
  punctuation, a special token or end of text), at most ``max_pieces`` pieces; the word's
  probability is the product of its pieces' probabilities (docs/UPSTREAM.md: raw next-token
  top-k of small causal LMs are mostly function words and, in Arabic, word pieces).

In both cases candidate first pieces are continued in descending order of their own
probability until it falls below the k-th best word found (a continuation can only lower it),
so the result equals continuing every piece (tested against brute force).
``lowercase`` lower-cases the template around the blank before tokenizing
(:func:`helpers.lm.cloze.lowered`; the upstream code loaded RoBERTa's cased tokenizer with
``do_lower_case=True``: docs/UPSTREAM.md).

``whole_words`` keeps only tokens that can begin a word (:func:`word_starts`: no ``##``
continuation for WordPiece; the leading-space marker ``Ġ`` / ``▁`` for byte-level BPE and
SentencePiece; every token of a vocabulary of whole words, whose words are then one piece) and
drops special tokens; ``skip`` drops given words (a collection, or ``"en"`` / ``"fr"`` / ``"ar"`` for the
stopwords-iso list of that language and punctuation, :func:`stop_words`, and then also words
without a letter and clitics such as ``'s``) before ranking, so k words are still returned.
Probabilities are the model's, not renormalised over what is kept. A template left with no
fill-in at all (every candidate skipped, or no token that can begin a word) is an
:class:`~helpers.errors.InputError` naming it, never an empty result.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from helpers.errors import InputError
from helpers.lm import batching, cloze, conventions

__all__ = ["top_k", "word_starts", "continuations", "stop_words", "COLUMNS", "STOP_WORD_LANGUAGES"]

COLUMNS = ["template_id", "template", "rank", "token", "word", "probability", "log_prob"]
_MARKERS = ("\u0120", "\u2581")          # byte-level BPE "Ġ", SentencePiece "▁"


def word_starts(tokenizer) -> np.ndarray:
    """Boolean per vocabulary id: the token can begin a word (:func:`_begins_word`: no
    continuation prefix such as WordPiece's ``##``, the word-start marker ``Ġ`` / ``▁``, or any
    token of a vocabulary of whole words) and is not a special token."""
    cached = getattr(tokenizer, "_harms_word_starts", None)
    if cached is not None and len(cached) == len(tokenizer):
        return cached
    vocab = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    begins = _begins_word(tokenizer, vocab)
    special = set(tokenizer.all_special_ids)
    out = np.array([isinstance(t, str) and i not in special and begins(t) for i, t in enumerate(vocab)], dtype=bool)
    try:
        tokenizer._harms_word_starts = out        # computed once per tokenizer object (262k tokens: 0.5 s)
    except AttributeError:
        pass
    return out


def _begins_word(tokenizer, vocab: list):
    """``token -> bool``: the vocabulary's own rule for a token that can begin a word.

    - a continuation prefix (WordPiece's ``##``; BPE may set one): every token without it;
    - a word-start marker (byte-level BPE ``Ġ``, SentencePiece ``▁``): the tokens with it;
    - neither (a word-level vocabulary, or BPE with an end-of-word suffix such as ``</w>``):
      every token, since nothing continues a word.

    A fast tokenizer's backend model says which (WordLevel; WordPiece's or BPE's
    ``continuing_subword_prefix``); for BPE or Unigram without a prefix, and for a tokenizer
    without a backend, the vocabulary: any marked token means the marker rule, except that
    without a backend ``##`` pieces outnumbering marked tokens mean WordPiece (SentencePiece
    vocabularies such as Gemma's hold Markdown tokens ``##``, ``###x`` too)."""
    model = getattr(getattr(tokenizer, "backend_tokenizer", None), "model", None)
    prefix = getattr(model, "continuing_subword_prefix", None)
    marked = sum(isinstance(t, str) and t.startswith(_MARKERS) for t in vocab)
    if model is None and sum(isinstance(t, str) and t.startswith("##") and len(t) > 2 for t in vocab) > marked:
        prefix = "##"
    if prefix:
        return lambda t: not t.startswith(prefix)
    if marked and type(model).__name__ != "WordLevel":
        return lambda t: t.startswith(_MARKERS)
    return lambda t: True


_APOSTROPHES = ("'", "\u2019")
#: A member of a skip set that also drops words without a letter and clitics (``'s``, ``’re``).
NON_WORDS = "\x00non-words"


def _skipped(word: str, skip: set[str]) -> bool:
    """``word`` is in ``skip``, or ``skip`` holds :data:`NON_WORDS` and the word has no letter or is a clitic."""
    if word.lower() in skip:
        return True
    return NON_WORDS in skip and (not any(c.isalpha() for c in word) or word.startswith(_APOSTROPHES))


def _is_punctuation(word: str) -> bool:
    return bool(word) and all(c in string.punctuation or not c.isalnum() for c in word)


def _word(tokenizer, ids: list[int]) -> str:
    return tokenizer.decode(ids).strip()


def _ranked(tokenizer, order: np.ndarray, probs: np.ndarray, skip: set[str], k: int, extend=None, *,
            words_only: bool = True):
    """The k most probable words (ids, word, p) from pieces ``order`` (descending ``probs``),
    words in ``skip`` (and, with ``words_only``, pieces that are no word, e.g. a lone space) left out.

    ``extend(id, p)`` continues a piece to a word (p can only fall: a product of
    probabilities), so pieces are examined until the next piece's own probability is below the
    k-th best word found; a word reached by two paths keeps its best.
    """
    best: dict = {}
    for i, q in zip(order.tolist(), probs.tolist()):
        if len(best) >= k and q < sorted(v[2] for v in best.values())[-k]:
            break
        ids, p = ([i], q) if extend is None else extend(i, q)
        word = _word(tokenizer, ids)
        key = word if extend is not None else tuple(ids)
        if (words_only and not word) or _skipped(word, skip) or (key in best and best[key][2] >= p):
            continue
        best[key] = (ids, word, p)
        if extend is None and len(best) == k:
            break
    return sorted(best.values(), key=lambda v: -v[2])[:k]


#: ``skip`` given as a language code: the stopwords-iso list of that language (MIT; package
#: ``stopwordsiso``; broad lists: English has 1,298 entries) plus punctuation.
STOP_WORD_LANGUAGES = ("en", "fr", "ar")


def stop_words(language: str) -> set[str]:
    """The stopwords-iso list of ``language`` (lower-cased) and the ASCII punctuation marks."""
    if language not in STOP_WORD_LANGUAGES:
        raise InputError(f"stop words: language must be one of {', '.join(STOP_WORD_LANGUAGES)}, got {language!r}")
    import stopwordsiso

    return {w.lower() for w in stopwordsiso.stopwords(language)} | set(string.punctuation)


def _skip_set(skip: Iterable[str] | None) -> set[str]:
    if skip is None:
        return set()
    if isinstance(skip, str):
        if skip in STOP_WORD_LANGUAGES:
            return stop_words(skip) | {NON_WORDS}
        raise InputError(f"skip must be a collection of words or one of {', '.join(STOP_WORD_LANGUAGES)}, "
                         f"not {skip!r}")
    return {w.strip().lower() for w in skip}


def _distributions(loaded, rows: list[list[int]], positions: list[int], batch_tokens: int | None):
    """Yield ``(row indices, probabilities [len, vocab])`` of the model's distribution at
    ``positions[i]`` of each row of ids (causal LMs: the next token), batched under the token
    budget; the LM head runs only at those positions (:func:`helpers.lm.batching.verified_head`)."""
    import torch

    model, tok = loaded.model, loaded.tokenizer
    pad_id = batching.pad_id(tok)
    dev = batching.device(model)
    base = model.base_model

    def base_forward(ids, attention):
        return base(input_ids=ids, attention_mask=attention).last_hidden_state

    make = batching.mlm_head if loaded.objective == "masked" else batching.causal_head
    head = batching.verified_head(model, make, base_forward, rows[0][:8])
    with torch.inference_mode():
        for batch in batching.batches([len(r) for r in rows], batch_tokens or batching.default_budget(model)):
            ids, mask = batching.pad([rows[i] for i in batch], pad_id)
            ids, mask = ids.to(dev), None if mask is None else mask.to(dev)
            r = torch.arange(len(batch), device=dev)
            pos = torch.as_tensor([positions[i] for i in batch], device=dev)
            logits = (head(base_forward(ids, mask)[r, pos]) if head is not None
                      else model(input_ids=ids, attention_mask=mask).logits[r, pos])
            yield batch, torch.softmax(logits.double(), -1)


def _best(loaded, rows, positions, allowed: np.ndarray, m: int, batch_tokens, *,
          widths: list[int] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per row, the ``m`` (or ``widths[row]``) most probable ``allowed`` ids and their
    probabilities, descending."""
    import torch

    out: list = [None] * len(rows)
    for batch, probs in _distributions(loaded, rows, positions, batch_tokens):
        banned = torch.as_tensor(~allowed, device=probs.device)
        masked = probs[:, :len(allowed)].masked_fill(banned, -1.0)
        if widths is None:
            top = torch.topk(masked, min(m, int(allowed.sum())), dim=-1)
            for j, i in enumerate(batch):
                out[i] = (top.indices[j].cpu().numpy(), top.values[j].cpu().numpy())
            continue
        for j, i in enumerate(batch):
            top = torch.topk(masked[j], min(widths[i], int(allowed.sum())))
            out[i] = (top.indices.cpu().numpy(), top.values.cpu().numpy())
    return out


def _rows(loaded, templates: list[str]) -> tuple[list[list[int]], list[int]]:
    """Input ids and the scored position per template: masked LMs the mask, causal LMs the
    last token of the text before the blank (its next-token distribution)."""
    tok, rows, positions = loaded.tokenizer, [], []
    if loaded.objective == "masked" and tok.mask_token_id is None:
        raise InputError(f"{loaded.name}: the tokenizer has no mask token; not a masked LM")
    for t in templates:
        prefix, suffix = cloze.split_template(t)
        if loaded.objective == "masked":
            ids = tok(prefix + tok.mask_token + suffix)["input_ids"]
            rows.append(ids)
            positions.append(ids.index(tok.mask_token_id))
            continue
        before = prefix.rstrip()
        ids = tok(before)["input_ids"] if before else _start(tok)
        if not ids:
            raise InputError(f"template {t!r}: nothing precedes the blank and the tokenizer adds no start token")
        rows.append(ids)
        positions.append(len(ids) - 1)
    return rows, positions


#: Version of the fill-in computation, part of the cache key (raise it when results change).
FILL_VERSION = 3                 # 3: every token of a vocabulary of whole words can begin a word
#: Causal whole words: candidate pieces continued per template and round, batched (at least k + 4).
_ROUND = 8


class _NotExtended(Exception):
    """A piece's continuation is needed but not computed yet (see :func:`_fill_ins`)."""


def cache_key(loaded, *, k: int, whole_words: bool, skip: set[str], max_pieces: int,
              lowercase: bool = False) -> dict:
    """Everything that changes the fill-ins: the model's identity and every setting."""
    from helpers.hashing import sha256_json

    scorer = {"kind": "top-k", "version": FILL_VERSION, "objective": loaded.objective, "k": int(k),
              "whole_words": bool(whole_words), "skip": sha256_json(sorted(skip)), "lowercase": bool(lowercase)}
    if whole_words:
        scorer["max_pieces"] = int(max_pieces)
    return {"model": dict(loaded.identity), "scorer": scorer}


def top_k(loaded, templates: Sequence[str], k: int = 10, *, whole_words: bool = True, skip=None,
          max_pieces: int = 4, lowercase: bool = False, batch_tokens: int | None = None, cache: bool = True,
          progress: bool = True) -> pd.DataFrame:
    """The ``k`` most probable fill-ins of each template's blank (see the module): one row per
    (template, rank) with ``template_id, template, rank, token`` (the tokens, space-joined),
    ``word``, ``probability``, ``log_prob``.

    Results are cached per template under the model's identity and the settings
    (:func:`helpers.cache.cached_rows`: an interrupted run resumes, a rerun with everything
    cached loads no weights when ``loaded`` is a :class:`helpers.models.LazyModel`).
    """
    from helpers.cache import cached_rows
    from helpers.models import LazyModel

    templates = cloze.check_templates(templates)
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise InputError(f"k must be a positive integer, got {k!r}")
    if not isinstance(max_pieces, (int, np.integer)) or isinstance(max_pieces, bool) or max_pieces < 1:
        raise InputError(f"max_pieces must be a positive integer, got {max_pieces!r}")
    if loaded.objective not in ("masked", "causal"):
        raise InputError(f"{loaded.name}: top-k fill-ins need a masked or causal LM, not objective "
                         f"{loaded.objective!r}")
    skipped = _skip_set(skip)
    row = {t: n for n, t in reversed(list(enumerate(templates)))}       # a template's first row

    def compute(chunk: list[str]) -> list[list]:
        model = loaded.load() if isinstance(loaded, LazyModel) else loaded
        texts = [cloze.lowered(t) for t in chunk] if lowercase else chunk
        found = _fill_ins(model, texts, k, whole_words, skipped, max_pieces, batch_tokens)
        _check_found(model, chunk, found, row, whole_words, skipped)
        tok = model.tokenizer
        return [[[" ".join(tok.convert_ids_to_tokens(ids)), w, p] for ids, w, p in f] for f in found]

    key = cache_key(loaded, k=k, whole_words=whole_words, skip=skipped, max_pieces=max_pieces, lowercase=lowercase)
    found = cached_rows(key, templates, compute, enabled=cache, progress=progress, desc="top-k",
                        prepare=loaded.load if isinstance(loaded, LazyModel) else None)
    rows = [{"template_id": n, "template": t, "rank": r + 1, "token": token, "word": w, "probability": p,
             "log_prob": float(np.log(p)) if p > 0 else -np.inf}
            for n, (t, f) in enumerate(zip(templates, found)) for r, (token, w, p) in enumerate(f)]
    return pd.DataFrame(rows, columns=COLUMNS)


def _allowed(tok, whole_words: bool) -> np.ndarray:
    """The ids a fill-in may start with: :func:`word_starts`, or every non-special token."""
    return word_starts(tok) if whole_words else ~np.isin(np.arange(len(tok)), tok.all_special_ids)


def _check_found(loaded, templates: list[str], found: list, row: dict, whole_words: bool, skipped: set[str]) -> None:
    """A template without a single fill-in is an error, never an empty success: one line naming
    the first few (with their ``row`` numbers) and why."""
    empty = [t for t, f in zip(templates, found) if not f]
    if not empty:
        return
    if not _allowed(loaded.tokenizer, whole_words).any():
        why = f"no token of its vocabulary {'can begin a word' if whole_words else 'is an ordinary token'}"
    elif skipped:
        why = "every candidate is in the skip list" + (" or is no word" if whole_words else "")
    else:
        why = "no candidate is a word"
    named = ", ".join(f"row {row[t]} {t!r}" for t in empty[:3])
    more = f" and {len(empty) - 3} more" if len(empty) > 3 else ""
    raise InputError(f"{loaded.name}: no fill-in for template {named}{more}: {why}")


def _fill_ins(loaded, templates: list[str], k: int, whole_words: bool, skipped: set[str], max_pieces: int,
              batch_tokens) -> list[list[tuple[list[int], str, float]]]:
    """Per template, the k best ``(ids, word, probability)``: :func:`_ranked` over the
    distribution at the blank (all templates batched), or for causal whole words
    :func:`_causal_words` (prefixes of one length together)."""
    tok = loaded.tokenizer
    allowed = _allowed(tok, whole_words)
    rows, positions = _rows(loaded, templates)
    m = 4 * k + len(skipped) + 64                   # pieces kept per blank; all of them if that is not enough
    if whole_words and loaded.objective == "causal":
        return _causal_words(loaded, rows, allowed, k, skipped, m, max_pieces)
    if whole_words and max_pieces > 1 and continuations(tok).any():      # else every word is one piece
        return _masked_batch(loaded, rows, positions, allowed, k, skipped, m, max_pieces, batch_tokens)
    found = []
    for n, (order, probs) in enumerate(_best(loaded, rows, positions, allowed, m, batch_tokens)):
        words = _ranked(tok, order, probs, skipped, k, words_only=whole_words)
        if len(words) < k and len(order) < allowed.sum():
            order, probs = _best(loaded, [rows[n]], [positions[n]], allowed, len(allowed), batch_tokens)[0]
            words = _ranked(tok, order, probs, skipped, k, words_only=whole_words)
        found.append(words)
    return found


#: Causal whole words: prefixes of one length run together, at most this many at a time (their
#: continuations share a batch per added piece: on 2 CPU cores a batch of 14 rows cost SmolLM2-135M
#: 7.5 ms a row and one of 112 rows 2.5 ms, benchmarks/RESULTS.md).
_PREFIXES_TOGETHER = 16


def _causal_words(loaded, prefixes: list[list[int]], allowed: np.ndarray, k: int, skipped: set[str], m: int,
                  max_pieces: int) -> list[list[tuple[list[int], str, float]]]:
    """Per prefix, the k best whole words after it (module docstring). Prefixes of one length
    (no padding) run together, :data:`_PREFIXES_TOGETHER` at a time (:func:`_causal_group`)."""
    out: list = [None] * len(prefixes)
    by_length: dict[int, list[int]] = {}
    for n, prefix in enumerate(prefixes):
        by_length.setdefault(len(prefix), []).append(n)
    for members in by_length.values():
        for start in range(0, len(members), _PREFIXES_TOGETHER):
            group = members[start:start + _PREFIXES_TOGETHER]
            for n, words in zip(group, _causal_group(loaded, [prefixes[n] for n in group], allowed, k, skipped, m,
                                                     max_pieces)):
                out[n] = words
    return out


def _causal_group(loaded, prefixes: list[list[int]], allowed: np.ndarray, k: int, skipped: set[str], m: int,
                  max_pieces: int) -> list[list[tuple[list[int], str, float]]]:
    """The k best whole words after each of ``prefixes`` (all of one length). The prefixes run
    once, in one batch, and their key/value cache is shared: each round, every prefix whose ranking
    is not settled continues its next k + 4 word-starting pieces, those of all prefixes in one batch
    per added piece (:func:`_continue`), until :func:`_ranked`'s stopping rule holds on the
    continuations computed so far; the result equals continuing one piece at a time."""
    import torch

    model, tok = loaded.model, loaded.tokenizer
    with torch.inference_mode():
        out = model(input_ids=torch.as_tensor(prefixes, device=batching.device(model)), use_cache=True,
                    logits_to_keep=1)
    cache = out.cache if hasattr(out, "cache") else out.past_key_values     # transformers >= 5.2x names it cache
    first = torch.softmax(out.logits[:, -1, :len(allowed)].double(), -1)
    ranked = first.masked_fill(torch.as_tensor(~allowed, device=first.device), -1.0)
    n_allowed = int(allowed.sum())

    def best(g: int, n: int):
        top = torch.topk(ranked[g], min(n, n_allowed))
        return top.indices.cpu().numpy(), top.values.cpu().numpy()

    order, probs = map(list, zip(*(best(g, m) for g in range(len(prefixes)))))
    done: list[dict[int, tuple[list[int], float]]] = [{} for _ in prefixes]
    found: list = [None] * len(prefixes)

    def extender(g: int):
        def extend(i, q):
            if i not in done[g]:
                raise _NotExtended
            return done[g][i]
        return extend

    while any(f is None for f in found):
        wanted: list[tuple[int, int, float]] = []          # (prefix, first piece, its probability)
        for g in (g for g, f in enumerate(found) if f is None):
            try:
                words = _ranked(tok, order[g], probs[g], skipped, k, extender(g))
            except _NotExtended:
                fresh = [(i, q) for i, q in zip(order[g].tolist(), probs[g].tolist()) if i not in done[g]]
                wanted += [(g, i, q) for i, q in fresh[:max(_ROUND, k + 4)]]
                continue
            if len(words) < k and len(order[g]) < n_allowed:        # every allowed piece, ranked
                order[g], probs[g] = best(g, n_allowed)
                continue
            found[g] = words
        if wanted:
            words = _continue(loaded, cache, [(i, q) for _, i, q in wanted], allowed, max_pieces,
                              rows=[g for g, _, _ in wanted])
            for (g, i, _), word in zip(wanted, words):
                done[g][i] = word
    return found


def continuations(tokenizer) -> np.ndarray:
    """Boolean per vocabulary id: the token continues a word (not :func:`word_starts`, not a
    special token, not punctuation)."""
    cached = getattr(tokenizer, "_harms_continuations", None)
    if cached is not None and len(cached) == len(tokenizer):
        return cached
    starts, special = word_starts(tokenizer), set(tokenizer.all_special_ids)
    vocab = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    out = np.array([not starts[i] and i not in special and isinstance(t, str)
                    and not _is_punctuation(tokenizer.convert_tokens_to_string([t]))
                    for i, t in enumerate(vocab)], dtype=bool)
    try:
        tokenizer._harms_continuations = out
    except AttributeError:
        pass
    return out


def _masked_batch(loaded, rows: list[list[int]], positions: list[int], allowed: np.ndarray, k: int,
                  skipped: set[str], m: int, max_pieces: int, batch_tokens) -> list[list[tuple[list[int], str, float]]]:
    """:func:`_masked_words` for many templates at once, batched across templates: the k-th best
    one-piece word of a template bounds every longer word it can lose to, so only first pieces of
    n >= 2 masks at least that probable are continued, all templates' in one pass per later mask.
    A template where that bound cannot be applied within the top ``m`` pieces (a large ``skip``)
    falls back to :func:`_masked_words`; both give the same words (tested against brute force)."""
    tok, mask, n_max = loaded.tokenizer, loaded.tokenizer.mask_token_id, max_pieces
    grown = [r[:p] + [mask] * n + r[p + 1:] for r, p in zip(rows, positions) for n in range(1, n_max + 1)]
    firsts = _best(loaded, grown, [p for p in positions for _ in range(n_max)], allowed, m, batch_tokens)
    singles, pending, fallback = [], [], set()
    for t in range(len(rows)):
        order, probs = firsts[t * n_max]
        one = _ranked(tok, order, probs, skipped, k)
        bound = one[-1][2] if len(one) == k else 0.0
        singles.append([(ids, p) for ids, _, p in one])
        for n in range(2, n_max + 1):
            order, probs = firsts[t * n_max + n - 1]
            if len(order) and probs[-1] >= bound and len(order) < allowed.sum():
                fallback.add(t)                          # the bound reaches beyond the top m pieces
            pending += [(t, n, int(i), float(q)) for i, q in zip(order, probs) if q >= bound]
    pending = [x for x in pending if x[0] not in fallback]
    filled = _fill_masks(loaded, [grown[t * n_max + n - 1] for t, n, _, _ in pending],
                         [positions[t] for t, _, _, _ in pending], [(i, q) for _, _, i, q in pending], batch_tokens)
    longer: list[list] = [[] for _ in rows]
    for (t, _, _, _), found in zip(pending, filled):
        longer[t].append(found)
    out = []
    for t in range(len(rows)):
        if t in fallback:
            out.append(_masked_words(loaded, rows[t], positions[t], allowed, k, skipped, len(allowed), max_pieces,
                                     batch_tokens))
            continue
        best: dict[str, tuple[list[int], str, float]] = {}
        for ids, p in singles[t] + longer[t]:
            word = _word(tok, ids)
            if word and not _skipped(word, skipped) and (word not in best or best[word][2] < p):
                best[word] = (ids, word, p)
        out.append(sorted(best.values(), key=lambda v: -v[2])[:k])
    return out


def _masked_words(loaded, ids: list[int], pos: int, allowed: np.ndarray, k: int, skipped: set[str], m: int,
                  max_pieces: int, batch_tokens) -> list[tuple[list[int], str, float]]:
    """The k best whole words of up to ``max_pieces`` pieces at the mask ``pos`` of ``ids``
    (module docstring): one batched pass gives the first mask's distribution for every mask
    count n; first pieces of n >= 2 are continued k + 4 at a time (:func:`_fill_masks`) until
    :func:`_ranked`'s stopping rule holds."""
    mask = loaded.tokenizer.mask_token_id
    rows = [ids[:pos] + [mask] * n + ids[pos + 1:] for n in range(1, max_pieces + 1)]
    width = [m] * max_pieces

    def items(width):
        found = _best(loaded, rows, [pos] * max_pieces, allowed, 0, batch_tokens, widths=width)
        n = np.concatenate([np.full(len(o), i + 1) for i, (o, _) in enumerate(found)])
        piece = np.concatenate([o for o, _ in found])
        prob = np.concatenate([q for _, q in found])
        order = np.argsort(-prob, kind="stable")
        return n[order], piece[order], prob[order]

    counts, pieces, probs = items(width)
    done: dict[int, tuple[list[int], float]] = {}

    def extend(i, q):
        if counts[i] == 1:
            return [int(pieces[i])], q
        if i not in done:
            raise _NotExtended
        return done[i]

    while True:
        try:
            words = _ranked(loaded.tokenizer, np.arange(len(pieces)), probs, skipped, k, extend)
        except _NotExtended:
            fresh = [i for i in range(len(pieces)) if counts[i] > 1 and i not in done][:max(_ROUND, k + 4)]
            filled = _fill_masks(loaded, [rows[counts[i] - 1] for i in fresh], [pos] * len(fresh),
                                 [(int(pieces[i]), float(probs[i])) for i in fresh], batch_tokens)
            done.update(zip(fresh, filled))
            continue
        if len(words) < k and min(width) < allowed.sum():          # every allowed piece, ranked
            width = [len(allowed)] * max_pieces
            counts, pieces, probs = items(width)
            done.clear()
            continue
        return words


def _fill_masks(loaded, rows: list[list[int]], starts: list[int], items: list[tuple[int, float]],
                batch_tokens) -> list[tuple[list[int], float]]:
    """Each row's masks from ``starts[row]`` on filled left to right: the first by the item's
    piece, each later one by its most likely :func:`continuations` piece given the pieces before
    it (one batched pass over all rows per mask); the pieces and the product of their probabilities."""
    import torch

    cont = torch.as_tensor(continuations(loaded.tokenizer))
    mask = loaded.tokenizer.mask_token_id
    rows = [list(r) for r in rows]
    pieces = [[i] for i, _ in items]
    probs = [q for _, q in items]
    for r, s, (i, _) in zip(rows, starts, items):
        r[s] = i
    while True:
        active = [a for a, r in enumerate(rows)
                  if starts[a] + len(pieces[a]) < len(r) and r[starts[a] + len(pieces[a])] == mask]
        if not active:
            return list(zip(pieces, probs))
        at = [starts[a] + len(pieces[a]) for a in active]
        for batch, dist in _distributions(loaded, [rows[a] for a in active], at, batch_tokens):
            best = dist[:, :len(cont)].masked_fill(~cont.to(dist.device), -1.0).max(dim=-1)
            for b, j, q in zip(batch, best.indices.tolist(), best.values.tolist()):
                a = active[b]
                rows[a][at[b]] = j
                pieces[a].append(j)
                probs[a] *= q


def _start(tok) -> list[int]:
    try:
        return conventions.start_ids(tok)
    except InputError:
        return []


def _cache_argument(model) -> str:
    """The forward argument that takes a key/value cache (``cache`` in recent transformers)."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _continue(loaded, cache, items: list[tuple[int, float]], starts: np.ndarray,
              max_pieces: int, rows: list[int]) -> list[tuple[list[int], float]]:
    """Greedy continuation (module docstring) of each ``(first piece, p)`` to the word's end,
    one batched forward pass per added piece on a copy of the prefixes' key/value ``cache``;
    ``rows``: each item's prefix (its row of the cache);
    ``starts``: :func:`word_starts`."""
    import copy

    import torch

    model, tok = loaded.model, loaded.tokenizer
    special = set(tok.all_special_ids)
    pieces = [[i] for i, _ in items]
    probs = [q for _, q in items]
    active = list(range(len(items)))
    ends: dict[int, bool] = {}

    def ends_word(j: int) -> bool:
        if j not in ends:
            ends[j] = bool(starts[j] or j in special
                           or _is_punctuation(tok.convert_tokens_to_string([tok.convert_ids_to_tokens(j)])))
        return ends[j]

    while active and len(pieces[active[0]]) < max_pieces:
        past = copy.deepcopy(cache)
        past.batch_select_indices(torch.as_tensor([rows[a] for a in active], device=batching.device(model)))
        ids = torch.as_tensor([pieces[a] for a in active], device=batching.device(model))
        with torch.inference_mode():
            logits = model(input_ids=ids, **{_cache_argument(model): past}, use_cache=True,
                           logits_to_keep=1).logits[:, -1]
        best = torch.softmax(logits[:, :len(starts)].double(), -1).max(dim=-1)
        still = []
        for a, j, q in zip(active, best.indices.tolist(), best.values.tolist()):
            if not ends_word(j):
                pieces[a].append(j)
                probs[a] *= q
                still.append(a)
        active = still
    return list(zip(pieces, probs))
