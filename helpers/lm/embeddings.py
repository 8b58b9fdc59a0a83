"""Contextual embeddings of words in sentences, and sentence embeddings, for any encoder or LM.

- :func:`word_embeddings`: the vector of a target word inside its sentence = the mean of its
  sub-tokens' hidden states at ``layer`` (May et al. 2019's SEAT takes the sentence vector;
  Guo & Caliskan 2021's CEAT and Kurita et al. take the word's own contextual vector, as here).
  The word is found by whole-word, case-insensitive match on the text and the tokenizer's
  character offsets.
- :func:`sentence_embeddings`: ``mean`` of all tokens with attention (special tokens included, as
  sentence-transformers' mean pooling), ``cls`` (the first token), ``last`` (the last real token:
  causal LMs), ``max``, or ``model``: the pooling of a sentence-transformers folder
  (``1_Pooling/config.json`` and a ``Normalize`` module in ``modules.json``, see
  :func:`folder_pooling`).

``layer``: index into ``output_hidden_states`` (0 = the embedding layer's output, -1 = the last
layer). Texts are batched by length under a token budget; padding does not change a vector.
Texts longer than the model takes are truncated to its length (as sentence-transformers does).

With ``cache=True`` the vectors go through the per-text score cache
(:func:`helpers.cache.cached_rows`, keyed by the model's identity, the kind of vector, ``layer``
and the pooling or word occurrence; float32 bytes, exact): stored chunk by chunk, so an
interrupted run loses at most one chunk, a rerun loads no weights when everything is cached, and
in a run of several processes (:mod:`helpers.distributed`) each computes a share. ``loaded`` may
then be a :class:`helpers.models.LazyModel`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from helpers.errors import InputError
from helpers.lm import batching, cloze, conventions

__all__ = ["word_embeddings", "sentence_embeddings", "folder_pooling", "POOLINGS"]

POOLINGS = ("mean", "cls", "last", "max", "model")
EMBEDDING_VERSION = 1          # of the cached vectors: changes when the code changes what a vector is
EMBEDDING_CHUNK = 256          # texts per stored chunk at most (one forward pass each: cheap next to a PLL
                               # score; a chunk still closes after cache.SAVE_EVERY_SECONDS)


def _cached_vectors(loaded, kind: str, settings: dict, items: list[str],
                    compute: Callable[[object, list[str]], np.ndarray], cache: bool, progress: bool) -> np.ndarray:
    """``compute(model, items)`` (one vector per item) through the per-text cache when ``cache``."""
    from helpers.models import LazyModel

    def run(chunk: list[str]) -> np.ndarray:
        return compute(loaded.load() if isinstance(loaded, LazyModel) else loaded, chunk)
    if not cache:
        return run(items)
    from helpers.cache import cached_rows

    key = {"model": dict(loaded.identity), "embedding": {"kind": kind, "version": EMBEDDING_VERSION, **settings}}
    rows = cached_rows(key, items, lambda chunk: [[_pack(v)] for v in run(chunk)], default_chunk_size=EMBEDDING_CHUNK,
                       longest_first=True, progress=progress, desc=f"{kind} embeddings",
                       prepare=loaded.load if isinstance(loaded, LazyModel) else None)
    return np.stack([_unpack(r[0]) for r in rows])


def _pack(vector: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _unpack(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f4").copy()


def _parts(loaded):
    model, tok = getattr(loaded, "model", None), getattr(loaded, "tokenizer", None)
    if model is None or tok is None:
        raise InputError("embeddings need a loaded model with its tokenizer (helpers.models.load)")
    return model, tok


def _encode(loaded, texts: list[str], layer: int):
    """The fast tokenizer's encoding of ``texts`` (offsets, special-token masks), cut to the
    positions the model has; ``layer`` checked against the model."""
    model, tok = _parts(loaded)
    if not getattr(tok, "is_fast", False):
        raise InputError("embeddings need a fast tokenizer (character offsets)")
    limit = conventions.max_length(loaded)        # RoBERTa's offset positions and GPT-2's n_positions included
    n_layers = (getattr(model.config, "num_hidden_layers", None) or getattr(model.config, "n_layer", None))
    if isinstance(n_layers, int) and not -(n_layers + 1) <= layer <= n_layers:
        raise InputError(f"layer {layer}: the model has {n_layers} layers (0 = embeddings, -1 = last)")
    return tok(texts, add_special_tokens=True, return_offsets_mapping=True, return_special_tokens_mask=True,
               truncation=limit is not None, max_length=limit)


def _hidden(loaded, ids_all: list[list[int]], layer: int, batch_tokens: int | None):
    """Yield ``(index, hidden [n_tokens, H] as numpy)`` per row of token ids, batched by length."""
    import torch

    model, tok = _parts(loaded)
    pad_id = batching.pad_id(tok)
    dev = batching.device(model)
    base = getattr(model, "base_model", model)
    with torch.inference_mode():
        for batch in batching.batches([len(i) for i in ids_all], batch_tokens or batching.default_budget(model)):
            ids, mask = batching.pad([ids_all[i] for i in batch], pad_id)
            # the base model only: a language model's head (hidden -> vocabulary) is not needed here
            out = base(input_ids=ids.to(dev), attention_mask=None if mask is None else mask.to(dev),
                       output_hidden_states=layer != -1)
            h = (out.last_hidden_state if layer == -1 else out.hidden_states[layer]).float().cpu().numpy()
            for k, i in enumerate(batch):
                yield i, h[k, :len(ids_all[i])]


def _word_tokens(text: str, word: str, offsets, special, occurrence: int, row: int) -> list[int]:
    spans = cloze.word_spans(text, word.strip())
    if len(spans) <= occurrence:
        raise InputError(f"sentence row {row}: the word {word!r} occurs {len(spans)} time(s) in {text[:80]!r}, "
                         f"occurrence {occurrence} asked for")
    a, b = spans[occurrence]
    found = cloze.tokens_in_span(offsets, special, (a, b))
    if not found:
        raise InputError(f"sentence row {row}: the tokenizer gives no token for {word!r}")
    return found


def word_embeddings(loaded, sentences: Sequence[str], words, *, layer: int = -1, occurrence: int = 0,
                    batch_tokens: int | None = None, cache: bool = False, progress: bool = False) -> np.ndarray:
    """``[n, hidden]`` float32: the mean hidden state of ``words[i]``'s sub-tokens in ``sentences[i]``
    (``words`` one word for all sentences, or one per sentence; ``occurrence``: which match).
    A causal LM's states at the word do not depend on what follows it, so its sentences are run
    only up to the word's last token (the same vectors for less work). ``cache``: see the module."""
    sentences = batching.check_texts(sentences, "sentence")
    words = [words] * len(sentences) if isinstance(words, str) else list(words)
    if len(words) != len(sentences):
        raise InputError(f"{len(words)} words for {len(sentences)} sentences")
    pairs = [json.dumps([s, w]) for s, w in zip(sentences, words)]

    def compute(model, chunk: list[str]) -> np.ndarray:
        texts, targets = zip(*(json.loads(p) for p in chunk))
        return _word_vectors(model, list(texts), list(targets), layer, occurrence, batch_tokens)
    return _cached_vectors(loaded, "word", {"layer": layer, "occurrence": occurrence}, pairs, compute, cache, progress)


def _word_vectors(loaded, sentences: list[str], words: list[str], layer: int, occurrence: int,
                  batch_tokens: int | None) -> np.ndarray:
    enc = _encode(loaded, sentences, layer)
    positions = [_word_tokens(sentences[i], words[i], enc["offset_mapping"][i], enc["special_tokens_mask"][i],
                              occurrence, i) for i in range(len(sentences))]
    ids = enc["input_ids"]
    if getattr(loaded, "objective", None) == "causal":   # nothing after the word changes its states: not run
        ids = [row[:max(pos) + 1] for row, pos in zip(ids, positions)]
    out: list = [None] * len(sentences)
    for i, h in _hidden(loaded, ids, layer, batch_tokens):
        out[i] = h[positions[i]].mean(axis=0)
    return np.stack(out).astype(np.float32, copy=False)


def folder_pooling(path) -> tuple[str, bool]:
    """``(mode, normalize)`` of a sentence-transformers folder: mode ``mean``, ``cls`` or
    ``max`` from ``1_Pooling/config.json``; normalize when ``modules.json`` lists Normalize."""
    path = Path(path)
    try:
        modules = json.loads((path / "modules.json").read_text())
        config = json.loads((path / "1_Pooling" / "config.json").read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a sentence-transformers folder with a pooling module ({exc.__class__.__name__})") from None
    modes = [m for m, key in (("cls", "pooling_mode_cls_token"), ("mean", "pooling_mode_mean_tokens"),
                              ("max", "pooling_mode_max_tokens")) if config.get(key)]
    if len(modes) != 1:
        raise InputError(f"{path}: pooling {config} is not one of cls, mean or max")
    return modes[0], any(str(m.get("type", "")).endswith("Normalize") for m in modules)


def _model_folder(loaded) -> Path:
    """The folder a model was loaded from (``model.name_or_path``), for ``pooling="model"``."""
    model, _ = _parts(loaded)
    where = str(getattr(model, "name_or_path", "") or "")
    if not where or not Path(where).is_dir():
        raise InputError("pooling='model' needs model_dir, the sentence-transformers folder (the model was "
                         "not loaded from a local folder)")
    return Path(where)


def sentence_embeddings(loaded, texts: Sequence[str], *, pooling: str = "mean", layer: int = -1,
                        normalize: bool = False, model_dir=None, batch_tokens: int | None = None,
                        cache: bool = False, progress: bool = False) -> np.ndarray:
    """``[n, hidden]`` float32 sentence vectors (see the module); ``pooling="model"`` reads the
    pooling of the sentence-transformers folder ``model_dir`` (by default the folder the model was
    loaded from, e.g. a package encoder's); ``normalize``: unit length. ``cache``: see the module
    (the pooled vectors are cached, normalised after)."""
    if pooling not in POOLINGS:
        raise InputError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
    if pooling == "model":
        pooling, from_folder = folder_pooling(_model_folder(loaded) if model_dir is None else model_dir)
        normalize = normalize or from_folder
    texts = batching.check_texts(texts)

    def compute(model, chunk: list[str]) -> np.ndarray:
        out: list = [None] * len(chunk)
        for i, h in _hidden(model, _encode(model, chunk, layer)["input_ids"], layer, batch_tokens):
            out[i] = {"mean": lambda: h.mean(axis=0), "cls": lambda: h[0], "last": lambda: h[-1],
                      "max": lambda: h.max(axis=0)}[pooling]()
        return np.stack(out).astype(np.float32, copy=False)
    vectors = _cached_vectors(loaded, "sentence", {"layer": layer, "pooling": pooling}, texts, compute, cache, progress)
    if normalize:
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return vectors
