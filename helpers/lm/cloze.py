"""Cloze scores: how likely is word *w* in the blank of a template, for any language model.

A template holds exactly one blank written ``[MASK]`` (:data:`BLANK`), whatever the model's own
mask token. :func:`cloze_logprobs` returns, per (template, candidate), the natural-log
probability of the candidate's sub-tokens in the blank, with the conventions of the bias
literature:

- **masked LMs**: the blank is filled by the candidate and its sub-tokens are replaced by as
  many mask tokens (the sub-tokens the tokenizer produces *in context*, found by character
  offsets). ``masked="joint"``: one pass with every sub-token masked, the sum of their
  log-probabilities (Kurita et al. 2019; bias-bench, Meade et al. 2022). ``masked="l2r"``:
  left to right, the i-th pass unmasks the sub-tokens before i (Salazar et al. 2020's order;
  Kauf & Ivanova 2023's within-word reading). ``mask_words`` masks other words of the
  template whole (every sub-token): Kurita et al.'s prior p(target | attribute masked too),
  see :func:`kurita_log_ratio` (Bartl et al. 2020's association score).
- **causal LMs**: when nothing but punctuation follows the blank, the exact next-token
  probability log p(candidate | prefix) (method ``next-token``; the punctuation is not
  scored); otherwise the log-likelihood of the whole filled sentence (method ``sentence``),
  the causal analogue bias-bench uses for GPT-2 on StereoSet and CrowS-Pairs, equal to
  :func:`helpers.lm.scoring.score` of the filled text.
- **permutation LMs** (XLNet): the candidate's positions are hidden from every token
  (``perm_mask``) and predicted through ``target_mapping``, jointly or left to right.

All copies of all (template, candidate) pairs run batched under a token budget (as
:mod:`helpers.lm.scoring`); results are cached per pair like sentence scores
(:func:`helpers.cache.cached_scores`), so a rerun with everything cached loads no weights.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from helpers.errors import InputError
from helpers.lm import batching, conventions

__all__ = ["BLANK", "split_template", "check_templates", "check_template_rows", "word_spans", "tokens_in_span",
           "fill", "lowered", "cloze_logprobs", "kurita_log_ratio", "CLOZE_VERSION", "MASKED_VARIANTS"]

BLANK = "[MASK]"
CLOZE_VERSION = 1
MASKED_VARIANTS = ("joint", "l2r")
COLUMNS = ["template_id", "template", "candidate", "n_tokens", "log_prob", "method"]
_TAIL_ONLY_PUNCTUATION = re.compile(r"^[\s\W]*$")


def split_template(template: str) -> tuple[str, str]:
    """``(prefix, suffix)`` around the template's one blank; none or several -> InputError."""
    if not isinstance(template, str) or not template.strip():
        raise InputError(f"template {template!r}: empty")
    n = template.count(BLANK)
    if n != 1:
        raise InputError(f"template {template!r}: needs exactly one blank {BLANK}, found {n}")
    prefix, suffix = template.split(BLANK)
    return prefix, suffix


def fill(template: str, candidate: str) -> tuple[str, int, int]:
    """The filled text and the candidate's character span ``[start, end)`` in it."""
    prefix, suffix = split_template(template)
    return prefix + candidate + suffix, len(prefix), len(prefix) + len(candidate)


def lowered(text: str) -> str:
    """``text`` lower-cased (``str.lower``) except its blank: what a tokenizer loaded with
    ``do_lower_case=True`` reads (it lower-cases everything but its special tokens, as the
    upstream seed-002 code's RoBERTa: docs/UPSTREAM.md). For templates, candidates and words alike."""
    return BLANK.join(part.lower() for part in text.split(BLANK))


def check_templates(templates) -> list[str]:
    """``templates`` as a list, each with exactly one blank; otherwise one InputError."""
    if isinstance(templates, str):
        raise InputError("templates must be a list of strings, not one string")
    templates = list(templates)
    if not templates:
        raise InputError("no templates")
    for t in templates:
        split_template(t)
    return templates


def check_template_rows(templates, source) -> None:
    """Each of ``templates``, read from the file ``source``, has exactly one blank; otherwise one
    InputError naming the file and the first bad row (0-based): ``<source>, row <i>: <problem>``."""
    for i, t in enumerate(templates):
        try:
            split_template(t)
        except InputError as exc:
            raise InputError(f"{source}, row {i}: {exc}") from None


def word_spans(text: str, word: str, avoid: tuple[int, int] | None = None) -> list[tuple[int, int]]:
    """Character spans of the whole-word, case-insensitive occurrences of ``word`` in ``text``
    (those overlapping ``avoid`` left out)."""
    spans = [(m.start(), m.end()) for m in re.finditer(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.IGNORECASE)]
    return [(a, b) for a, b in spans if avoid is None or b <= avoid[0] or a >= avoid[1]]


def tokens_in_span(offsets, special, span: tuple[int, int]) -> list[int]:
    """Indices of the (non-special, non-empty) tokens whose character offsets overlap ``span``."""
    a, b = span
    return [i for i, (s, e) in enumerate(offsets) if not special[i] and e > s and s < b and e > a]


@dataclass
class _Pair:
    row: int
    ids: list[int]
    candidate_positions: list[int]
    hidden_positions: list[int]     # other words masked (masked / permutation LMs)
    method: str


def _check_candidates(templates: list[str], candidates) -> list[list[str]]:
    if isinstance(candidates, str):
        raise InputError("candidates must be a list of words, not one string")
    candidates = list(candidates)
    if not candidates:
        raise InputError("the candidate list is empty")
    per_template = all(not isinstance(c, str) for c in candidates)
    lists = [list(c) for c in candidates] if per_template else [list(candidates)] * len(templates)
    if len(lists) != len(templates):
        raise InputError(f"{len(lists)} candidate lists for {len(templates)} templates")
    for t, words in zip(templates, lists):
        if not words:
            raise InputError(f"template {t!r}: its candidate list is empty")
        for w in words:
            if not isinstance(w, str) or not w.strip():
                raise InputError(f"template {t!r}: empty candidate {w!r}")
    return lists


def _mask_word_lists(templates: list[str], mask_words) -> list[list[str]]:
    if mask_words is None:
        return [[] for _ in templates]
    if isinstance(mask_words, str):
        return [[mask_words] for _ in templates]
    mask_words = list(mask_words)
    if mask_words and all(isinstance(w, str) for w in mask_words):
        return [mask_words for _ in templates]
    if len(mask_words) != len(templates):
        raise InputError(f"{len(mask_words)} mask_words lists for {len(templates)} templates")
    return [[w] if isinstance(w, str) else list(w or []) for w in mask_words]


def _pair(loaded, row: int, template: str, candidate: str, words: list[str]) -> _Pair:
    """Token ids of the filled text, the candidate's positions and the other masked words'."""
    tok = loaded.tokenizer
    if not getattr(tok, "is_fast", False):
        raise InputError(f"{loaded.name}: cloze scores need a fast tokenizer (character offsets)")
    prefix, suffix = split_template(template)
    causal_next = loaded.objective == "causal" and bool(_TAIL_ONLY_PUNCTUATION.match(suffix))
    text, a, b = fill(prefix + BLANK + ("" if causal_next else suffix), candidate)
    enc = tok(text, add_special_tokens=True, return_offsets_mapping=True, return_special_tokens_mask=True)
    ids, offsets, special = enc["input_ids"], enc["offset_mapping"], enc["special_tokens_mask"]
    cand = tokens_in_span(offsets, special, (a, b))
    # a tokenizer that marks leading spaces gives the space before the candidate a token of its
    # own when it cannot merge it (its offsets trimmed to an empty span): it belongs to the candidate
    ws = a - (len(prefix) - len(prefix.rstrip()))
    while cand and cand[0] > 0 and not special[cand[0] - 1] and offsets[cand[0] - 1][0] == offsets[cand[0] - 1][1] \
            and ws <= offsets[cand[0] - 1][0] <= a and ws < a:
        cand.insert(0, cand[0] - 1)
    if not cand or all(ids[i] == tok.unk_token_id for i in cand):
        raise InputError(f"candidate {candidate!r} in template {template!r}: the tokenizer of {loaded.name} "
                         "gives it no token ids (or only unknown tokens)")
    hidden: list[int] = []
    for w in words:
        spans = word_spans(text, w, (a, b))
        if not spans:
            raise InputError(f"mask word {w!r} does not occur in template {template!r}")
        for span in spans:
            hidden += [i for i in tokens_in_span(offsets, special, span) if i not in cand]
    if loaded.objective == "causal":
        if hidden:
            raise InputError(f"{loaded.name}: mask_words needs a masked or permutation LM, not a causal one")
        if not causal_next:
            scored = list(range(1, len(ids)))              # the sentence log-likelihood (scoring.causal_scores)
            return _Pair(row, ids, scored, [], "sentence")
        if cand[0] == 0:
            raise InputError(f"template {template!r}: nothing precedes the blank and {loaded.name}'s tokenizer "
                             "adds no start token, so the candidate's first token cannot be predicted")
        return _Pair(row, ids[:cand[-1] + 1], cand, [], "next-token")
    return _Pair(row, ids, cand, sorted(set(hidden)), f"{loaded.objective}")


def _copies(pair: _Pair, objective: str, variant: str) -> list[tuple[list[int], list[int]]]:
    """(hidden positions, scored positions) per forward copy of one pair."""
    if objective == "causal":
        return [([], pair.candidate_positions)]
    cand = pair.candidate_positions
    if variant == "joint":
        return [(pair.hidden_positions + cand, cand)]
    return [(pair.hidden_positions + cand[i:], [cand[i]]) for i in range(len(cand))]


def _head(model, objective: str, base_forward, probe):
    if objective == "permutation":
        return None
    return batching.verified_head(model, batching.causal_head if objective == "causal" else batching.mlm_head,
                                  base_forward, probe)


def pair_logprobs(loaded, pairs: list[_Pair], *, masked: str = "joint", batch_tokens=None) -> np.ndarray:
    """Summed log-probability of each pair's scored positions (no cache)."""
    import torch

    model, tok, objective = loaded.model, loaded.tokenizer, loaded.objective
    mask_id = tok.mask_token_id
    if objective == "masked" and mask_id is None:
        raise InputError(f"{loaded.name}: the tokenizer has no mask token; not a masked LM")
    limit = conventions.max_length(loaded)
    too_long = [p for p in pairs if limit and len(p.ids) > limit]
    if too_long:
        raise InputError(f"{loaded.name} takes at most {limit} tokens; template {too_long[0].row} filled with its "
                         f"candidate has {len(too_long[0].ids)}")
    copies = [(k, hid, sc) for k, p in enumerate(pairs) for hid, sc in _copies(p, objective, masked)]
    budget = batch_tokens or batching.default_budget(model)
    dev = batching.device(model)
    vocab = batching.vocab_size(loaded)
    pad_id = batching.pad_id(tok)
    base = model.base_model

    def base_forward(ids, attention):
        return base(input_ids=ids, attention_mask=attention).last_hidden_state

    head = _head(model, objective, base_forward, pairs[0].ids[:8]) if pairs else None
    out = np.zeros(len(pairs))
    shift = 1 if objective == "causal" else 0            # a causal LM predicts position p from p - 1
    with torch.inference_mode():
        for batch in batching.batches([len(pairs[c[0]].ids) for c in copies], budget):
            rows, r_idx, p_idx, t_ids, owner = [], [], [], [], []
            for k, ci in enumerate(batch):
                pi, hid, sc = copies[ci]
                row = list(pairs[pi].ids)
                if objective == "masked":
                    for p in hid:
                        row[p] = mask_id
                rows.append(row)
                r_idx += [k] * len(sc)
                p_idx += [p - shift for p in sc]
                t_ids += [pairs[pi].ids[p] for p in sc]
                owner += [pi] * len(sc)
            ids, attention = batching.pad(rows, pad_id)
            ids = ids.to(dev)
            attention = attention.to(dev) if attention is not None else None
            r, p = torch.as_tensor(r_idx, device=dev), torch.as_tensor(p_idx, device=dev)
            t = torch.as_tensor(t_ids, device=dev)
            if objective == "permutation":
                logits = _permutation_logits(model, ids, attention, [copies[ci] for ci in batch], r_idx, p_idx)
                lp = batching.token_logprobs(lambda h: h, logits, t, vocab)
            elif head is not None:
                lp = batching.token_logprobs(head, base_forward(ids, attention)[r, p], t, vocab)
            else:
                logits = model(input_ids=ids, attention_mask=attention).logits
                lp = batching.token_logprobs(lambda h: h, logits[r, p], t, vocab)
            np.add.at(out, owner, lp.double().cpu().numpy())
    return out


def _permutation_logits(model, ids, attention, copies, r_idx, p_idx):
    """XLNet: logits at the scored positions, each copy's hidden positions invisible to every
    token (``perm_mask[b, :, j] = 1``) and predicted through ``target_mapping``."""
    import torch

    B, L = ids.shape
    perm = torch.zeros(B, L, L)
    for k, (_, hid, _) in enumerate(copies):
        if hid:
            perm[k, :, hid] = 1.0
    P = max(sum(1 for r in r_idx if r == k) for k in range(B))
    tmap = torch.zeros(B, P, L)
    slot = [0] * B
    where = []
    for r, p in zip(r_idx, p_idx):
        tmap[r, slot[r], p] = 1.0
        where.append((r, slot[r]))
        slot[r] += 1
    dev = ids.device
    logits = model(input_ids=ids, attention_mask=attention, perm_mask=perm.to(dev), target_mapping=tmap.to(dev),
                   use_mems=False).logits
    rr = torch.as_tensor([w[0] for w in where], device=dev)
    ss = torch.as_tensor([w[1] for w in where], device=dev)
    return logits[rr, ss]


def cache_key(loaded, *, masked: str, lowercase: bool = False) -> dict:
    """Everything that changes a cloze score: the model's identity and the scorer's settings
    (``lowercase`` only when set, so that the scores cached without it stay valid)."""
    scorer = {"kind": "cloze", "version": CLOZE_VERSION, "objective": loaded.objective}
    if loaded.objective != "causal":
        scorer["masked"] = masked
    if lowercase:
        scorer["lowercase"] = True
    return {"model": dict(loaded.identity), "scorer": scorer}


def cloze_logprobs(loaded, templates: Sequence[str], candidates, *, masked: str = "joint", mask_words=None,
                   lowercase: bool = False, batch_tokens: int | None = None, cache: bool = True,
                   progress: bool = True) -> pd.DataFrame:
    """Log-probability of each candidate in each template's blank (see the module).

    ``candidates``: one list of words for every template, or one list per template.
    ``mask_words``: None, words masked (whole) in every template, or one list per template
    (masked and permutation LMs). ``lowercase``: score the lower-cased filled text
    (:func:`lowered` of the template, the candidate and the mask words: the whole input, as the
    upstream seed-002 code's lower-casing tokenizer read it; ``template`` and ``candidate`` keep
    the given spelling). ``loaded``: a LoadedModel or a LazyModel (weights read only
    when some pair is not cached). Returns one row per (template, candidate):
    ``template_id, template, candidate, n_tokens`` (sub-tokens scored), ``log_prob`` (natural
    log, summed), ``method`` (``masked-joint``, ``masked-l2r``, ``permutation-joint``,
    ``permutation-l2r``, ``next-token`` or ``sentence``).
    """
    from helpers.cache import cached_scores
    from helpers.models import LazyModel

    if masked not in MASKED_VARIANTS:
        raise InputError(f"masked must be one of {', '.join(MASKED_VARIANTS)}, got {masked!r}")
    if loaded.objective not in ("causal", "masked", "permutation"):
        raise InputError(f"{loaded.name}: cloze scores need a language model (causal, masked or permutation), "
                         f"not objective {loaded.objective!r}")
    templates = check_templates(templates)
    lists = _check_candidates(templates, candidates)
    words = _mask_word_lists(templates, mask_words)
    rows = [(i, t, c, w) for i, (t, cs, w) in enumerate(zip(templates, lists, words)) for c in cs]
    keys = ["\x1f".join([t, c, *w]) for _, t, c, w in rows]

    def compute(chunk: list[str]) -> pd.DataFrame:
        lm = loaded.load() if isinstance(loaded, LazyModel) else loaded
        pairs = []
        for k, key in enumerate(chunk):
            t, c, *w = (lowered(x) for x in key.split("\x1f")) if lowercase else key.split("\x1f")
            pairs.append(_pair(lm, k, t, c, w))
        lp = pair_logprobs(lm, pairs, masked=masked, batch_tokens=batch_tokens)
        return pd.DataFrame({"n_tokens": [len(p.candidate_positions) for p in pairs], "log_likelihood": lp})

    if cache:
        scored = cached_scores(cache_key(loaded, masked=masked, lowercase=lowercase), keys, compute, progress=progress,
                               prepare=loaded.load if isinstance(loaded, LazyModel) else None)
    else:
        scored = compute(keys)
    method = [_method(loaded.objective, masked, t) for _, t, _, _ in rows]
    return pd.DataFrame({"template_id": [r[0] for r in rows], "template": [r[1] for r in rows],
                         "candidate": [r[2] for r in rows], "n_tokens": scored["n_tokens"].to_numpy(),
                         "log_prob": scored["log_likelihood"].to_numpy(), "method": method}, columns=COLUMNS)


def _method(objective: str, masked: str, template: str) -> str:
    if objective == "causal":
        return "next-token" if _TAIL_ONLY_PUNCTUATION.match(split_template(template)[1]) else "sentence"
    return f"{objective}-{masked}"


def kurita_log_ratio(loaded, templates: Sequence[str], targets, attributes, *, neutral: str = "person",
                     **options) -> pd.DataFrame:
    """Kurita et al. (2019) / Bartl et al. (2020) association: log p(target | template) −
    log p(target | template with its attribute word masked too), per (template, target).

    ``attributes``: the attribute word of each template (masked whole for the prior). A causal
    LM cannot mask the attribute: its prior is the filled template with the attribute replaced by
    the word ``neutral`` (default ``"person"``), both scored as sentence log-likelihoods (method
    ``sentence``), a documented analogue rather than Kurita's quantity. Returns the rows of
    :func:`cloze_logprobs` with ``log_prob``, ``prior_log_prob`` and ``log_ratio``.
    """
    templates = check_templates(templates)
    attributes = [attributes] * len(templates) if isinstance(attributes, str) else list(attributes)
    if len(attributes) != len(templates):
        raise InputError(f"{len(attributes)} attributes for {len(templates)} templates")
    target = cloze_logprobs(loaded, templates, targets, **options)
    if loaded.objective == "causal":
        if not isinstance(neutral, str) or not neutral.strip():
            raise InputError("neutral must be a non-empty word")
        neutral_templates = []
        for t, a in zip(templates, attributes):
            prefix, suffix = split_template(t)
            spans = word_spans(suffix, a) or []
            where = "suffix"
            if not spans:
                spans, where = word_spans(prefix, a), "prefix"
            if not spans:
                raise InputError(f"attribute {a!r} does not occur in template {t!r}")
            x, y = spans[0]
            neutral_templates.append(prefix + BLANK + suffix[:x] + neutral + suffix[y:] if where == "suffix"
                                     else prefix[:x] + neutral + prefix[y:] + BLANK + suffix)
        prior = cloze_logprobs(loaded, neutral_templates, targets, **options)
    else:
        prior = cloze_logprobs(loaded, templates, targets, mask_words=[[a] for a in attributes], **options)
    return target.assign(prior_log_prob=prior["log_prob"].to_numpy(),
                         log_ratio=target["log_prob"].to_numpy() - prior["log_prob"].to_numpy())
