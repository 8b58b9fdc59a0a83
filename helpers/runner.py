"""Models × data → cached results: the one loop every chapter and the command line share.

    >>> from helpers import runner
    >>> names = runner.resolve_models("offline")              # or "paper", a name, a list
    >>> results, unavailable = runner.for_each_model(
    ...     names, lambda m: runner.safety_results(m, dataset="toxigen", sample_per_group=25))

- :func:`resolve_models` turns a notebook's ``models`` parameter into registry names.
- :func:`for_each_model` gives each model a lazy handle (weights read only when a result is
  not cached), calls ``measure(handle)``, frees the weights before the next model and lists
  the models that cannot be obtained here (with the one-line reason) instead of failing.
- :func:`cached_result` caches one metric of one model on disk under
  ``{metric, version, model identity, settings}`` — never under a chapter name, so a result
  computed for one chapter is reused by every other chapter that asks for the same thing.
- :func:`score_frame` and :func:`safety_results` are the data side: per-sentence scores of a
  table's text column (cached per sentence), and the safety score of seed 000 per group.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from helpers import cache, models
from helpers.errors import InputError, ModelUnavailableError

T = TypeVar("T")

__all__ = ["resolve_models", "for_each_model", "cached_result", "unavailable_table", "score_frame",
           "safety_results", "safety_from_scores", "safety_per_group", "SAFETY_SETTINGS", "SCORE_COLUMNS"]

SCORE_COLUMNS = ["n_tokens", "log_likelihood", "perplexity"]


def resolve_models(spec) -> list[str]:
    """Registry names from a ``models`` parameter.

    ``"offline"``: every model usable without the hub (package models, then the zoo);
    ``"packages"``: the pretrained models installed from packages only (no zoo);
    ``"core"``: SmolLM2-135M, Gemma-3-270M, Qwen2.5-Coder-0.5B and two of the zoo's students
    (:func:`helpers.models.core_models`);
    ``"core-packages"``: those two package models (:func:`helpers.models.core_packages`);
    ``"zoo"``: the zoo's models (:func:`helpers.models.zoo_models`);
    ``"encoders"``: the sentence encoders installed from packages (MiniLM-L6, MPNet-base);
    ``"paper"``: seed 000's 24 hub models; ``"miniature"``: Google's 24 miniature BERTs;
    keywords joined by ``+`` (``"offline+encoders"``): their models in that order;
    any other string: that one model (a registry name, hub id, directory or ``.gguf`` path —
    never split into characters); a list or tuple: those models, in order, duplicates removed.
    """
    if isinstance(spec, str):
        key = spec.strip()
        groups = {"offline": models.offline_models, "packages": models.package_models, "core": models.core_models,
                  "core-packages": models.core_packages, "zoo": models.zoo_models,
                  "encoders": models.encoder_models, "paper": models.paper_models,
                  "miniature": models.miniature_berts}
        if key in groups:
            return groups[key]()
        if "+" in key and all(k.strip() in groups for k in key.split("+")):
            return list(dict.fromkeys(m for k in key.split("+") for m in groups[k.strip()]()))
        if not key:
            raise InputError("models: empty model name")
        return [key]
    if isinstance(spec, (list, tuple)):
        names = [str(m).strip() for m in spec]
        if not names or not all(names):
            raise InputError(f"models: expected model names, got {spec!r}")
        return list(dict.fromkeys(names))
    raise InputError(f"models: expected 'offline', 'core', 'packages', 'paper', a model name or a list of names, "
                     f"got {spec!r}")


def for_each_model(names: Iterable[str], measure: Callable[[models.LazyModel], T], *, device: str = "cpu",
                   dtype: Any = None) -> tuple[dict[str, T], dict[str, str]]:
    """``({name: measure(handle)}, {name: reason it is unavailable})`` over ``names``, in order.

    Each model gets a :class:`helpers.models.LazyModel` handle; its weights are loaded only
    when ``measure`` needs them (a warm rebuild loads none) and released after its turn. A
    model that cannot be obtained here (no hub, unknown name, damaged weights) is recorded
    with its one-line :class:`ModelUnavailableError` message, and the loop goes on.
    """
    results: dict[str, T] = {}
    unavailable: dict[str, str] = {}
    for name in names:
        handle = None
        try:
            handle = models.lazy(name, device=device, dtype=dtype)
            results[name] = measure(handle)
        except ModelUnavailableError as exc:
            unavailable[name] = str(exc)
        finally:
            if handle is not None:
                handle.release()
    return results, unavailable


def unavailable_table(unavailable: dict[str, str]) -> pd.DataFrame:
    """The models that could not be measured, with the reason (shown, never silently dropped)."""
    return pd.DataFrame({"model": list(unavailable), "reason": list(unavailable.values())})


def cached_result(handle, metric: str, settings: dict, compute: Callable[[Any], T], *, version: int = 1,
                  enabled: bool = True, load: bool = True) -> T:
    """``compute(model)`` cached on disk under ``{metric, version, model identity, settings}``.

    ``metric`` names the quantity (e.g. ``"stereoset"``), ``version`` changes when its code
    changes what it returns, ``settings`` holds every parameter that changes the result. On a
    cache miss ``compute`` gets the loaded model (``handle.load()``), or with ``load=False`` the
    lazy handle itself — for computations that load the weights only if they need them (e.g.
    scores that are in the per-sentence cache).
    """
    key = {"metric": metric, "version": version, "model": handle.identity, "settings": settings}
    return cache.memoize(key, lambda: compute(handle.load() if load and hasattr(handle, "load") else handle),
                         enabled=enabled)


#: Rows per stored chunk of :func:`cached_per_row` at most (a chunk also closes after
#: ``cache.SAVE_EVERY_SECONDS``): a row is a sentence's score, cheap next to a PLL sentence.
ROWS_PER_CHUNK = 128


def cached_per_row(handle, metric: str, settings: dict, frame: pd.DataFrame, columns: Sequence[str],
                   compute: Callable[[Any, pd.DataFrame], Sequence[float]], *, version: int = 1,
                   enabled: bool = True) -> np.ndarray:
    """``compute(model, rows)``, one number per row of ``frame``, through the per-text cache
    (:func:`helpers.cache.cached_rows`): a row is keyed by the JSON of its ``columns`` under
    ``{metric, version, model identity, settings}``, so rows are stored chunk by chunk (an
    interrupted run loses at most one chunk), split between the processes of a distributed run,
    and the model is loaded only if some row is missing. ``compute`` gets a frame of ``columns``
    and must score each row on its own (not relative to the other rows)."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"{metric}: the rows lack the column(s) {', '.join(missing)}")
    items = [json.dumps(list(row), default=_plain) for row in frame[list(columns)].itertuples(index=False)]

    def rows(chunk: list[str]) -> list[list]:
        model = handle.load() if hasattr(handle, "load") else handle
        values = list(compute(model, pd.DataFrame([json.loads(i) for i in chunk], columns=list(columns))))
        if len(values) != len(chunk):
            raise RuntimeError(f"{metric}: {len(values)} values for {len(chunk)} rows")
        return [[float(v)] for v in values]
    key = {"metric": metric, "version": version, "model": handle.identity, "settings": settings}
    got = cache.cached_rows(key, items, rows, enabled=enabled, progress=False, desc=metric,
                            default_chunk_size=ROWS_PER_CHUNK, longest_first=True,
                            prepare=handle.load if hasattr(handle, "load") else None)
    return np.array([r[0] for r in got], dtype=float)


def _plain(value):
    """A numpy scalar as its Python value (for the JSON of a row)."""
    return value.item() if hasattr(value, "item") else str(value)


#: The settings of :func:`safety_per_group`, its cache key with the model (a chapter builds them
#: from its parameters with :func:`helpers.chapters.common.safety_settings`).
SAFETY_SETTINGS = ("dataset", "sample_per_group", "seed", "pll", "upstream_mask_id")


#: Version of the cached per-group table: 2 = with the Mann-Whitney z, r and rank-biserial columns;
#: 3 = with ``unscaled_score``.
SAFETY_VERSION = 3


def safety_per_group(handle, settings: dict, *, cache: bool = True) -> pd.DataFrame:
    """Seed 000's safety score per group of one model, without intervals (the per-group table of
    :func:`safety_results` with ``ci=False``), cached as metric ``"safety_per_group"`` under
    ``settings`` (exactly the keys of :data:`SAFETY_SETTINGS`): the one result every chapter that
    needs a model's safety scores shares, whichever chapter asks first."""
    if set(settings) != set(SAFETY_SETTINGS):
        raise InputError(f"safety_per_group: settings need exactly {', '.join(SAFETY_SETTINGS)}; "
                         f"got {', '.join(settings) or 'none'}")
    return cached_result(handle, "safety_per_group", settings,
                         lambda h: safety_results(h, **settings, ci=False, cache=cache, progress=False)[1],
                         enabled=cache, load=False, version=SAFETY_VERSION)


def score_frame(handle, data: pd.DataFrame, *, text_column: str = "text", progress: bool = True,
                **score_options) -> pd.DataFrame:
    """``data`` with ``n_tokens``, ``log_likelihood`` and ``perplexity`` of its text column
    (:func:`helpers.lm.scoring.score`, cached per sentence), plus ``model`` (the registry name)
    and ``source="measured"``. Columns of ``data`` with those names are replaced."""
    from helpers.lm import scoring

    scores = scoring.score(handle, data[text_column].tolist(), progress=progress, **score_options)
    out = data.drop(columns=[c for c in SCORE_COLUMNS if c in data.columns]).reset_index(drop=True)
    for col in SCORE_COLUMNS:
        out[col] = scores[col].to_numpy()
    out["model"] = handle.name
    out["source"] = "measured"
    return out


def safety_results(handle, *, dataset: str = "toxigen", sample_per_group=None, seed: int = 0,
                   pll: str = "original", upstream_mask_id: bool = False, batch_tokens: int | None = None,
                   ci: bool = True, n_resamples: int = 1000, fix_x000d: bool = True, cache: bool = True,
                   upstream_compat: bool = False, progress: bool = True, p_method: str = "auto",
                   use_continuity: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seed 000's safety score of one model on one data set: ``(per_sentence, per_group)``.

    Loads and samples the data (:mod:`helpers.datasets`), scores each sentence (cached per
    sentence), and computes :func:`helpers.metrics.safety.safety_scores` (``upstream_compat``:
    the upstream code's denominator and group filter; ``p_method``, ``use_continuity``: the
    Mann-Whitney p-value, see there). Both tables carry
    ``model``, ``dataset`` and ``source="measured"``; ``per_group`` also the PLL settings.
    """
    from helpers import datasets
    from helpers.metrics import safety

    data = datasets.load(dataset, fix_x000d=fix_x000d)
    data = datasets.sample_per_group(data, sample_per_group, seed=seed)
    per_sentence = score_frame(handle, data, pll=pll, upstream_mask_id=upstream_mask_id,
                               batch_tokens=batch_tokens, cache=cache, progress=progress)
    per_sentence["dataset"] = data.attrs.get("dataset", str(dataset))
    per_group = datasets.with_group_labels(safety.safety_scores(
        per_sentence, ci=ci, n_resamples=n_resamples, seed=seed, upstream_compat=upstream_compat, p_method=p_method,
        use_continuity=use_continuity))
    per_group.insert(0, "model", handle.name)
    per_group["dataset"] = per_sentence["dataset"].iloc[0]
    per_group["pll"] = pll if handle.objective == "masked" else None
    per_group["upstream_mask_id"] = bool(upstream_mask_id)
    per_group["source"] = "measured"
    return per_sentence, per_group


def safety_from_scores(per_sentence: pd.DataFrame, *, sample_per_group=None, seed: int = 0, n_resamples: int = 1000,
                       upstream_compat: bool = False, p_method: str = "auto",
                       use_continuity: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seed 000's safety score of per-sentence scores computed elsewhere
    (:func:`helpers.datasets.scores_from_file`): ``(per_sentence, per_group)`` as
    :func:`safety_results` gives them (``model`` is "mixed" when the rows come from several)."""
    from helpers import datasets
    from helpers.metrics import safety

    per_sentence = datasets.sample_per_group(per_sentence, sample_per_group, seed=seed)
    per_group = datasets.with_group_labels(safety.safety_scores(per_sentence, n_resamples=n_resamples, seed=seed,
                                                                upstream_compat=upstream_compat, p_method=p_method,
                                                                use_continuity=use_continuity))
    names = per_sentence["model"].unique()
    per_group.insert(0, "model", names[0] if len(names) == 1 else "mixed")
    per_group["dataset"], per_group["source"] = per_sentence["dataset"].iloc[0], "measured"
    return per_sentence, per_group


# --------------------------------------------------------------------------- language-model quality gate
QUALITY_COLUMNS = ["model", "objective", "heldout_perplexity", "unigram_perplexity", "ratio", "usable",
                   "min_ratio", "corpus", "heldout_tokens", "reason"]


_CORPORA: dict[str, tuple[list[str], list[str]]] = {}


def _corpus(name: str) -> tuple[list[str], list[str]]:
    """(train, held-out) lines of a corpus, read once per process (every model of a table
    shares them)."""
    from helpers.datasets.corpus import load_corpus

    if name not in _CORPORA:
        _CORPORA.clear()                      # keep one corpus in memory
        _CORPORA[name] = load_corpus(name)
    return _CORPORA[name]


def language_model_quality(handle, *, corpus: str = "gensim", blocks: int = 16, block_size: int = 128,
                           min_ratio: float = 2.0) -> dict:
    """The language-model quality gate of one model (:func:`helpers.metrics.quality.language_model_quality`):
    held-out perplexity on ``blocks`` × ``block_size`` tokens of ``corpus``'s held-out split
    (blocks of the model's context when it is shorter; masked-token perplexity for masked LMs), the add-one unigram baseline of its tokenizer
    fitted on the training split, their ratio and ``usable = ratio >= min_ratio``.

    The measurement is cached as metric ``"language_model_quality"`` under the model's identity
    and the settings that change it (corpus, blocks, block size, smoothing, batch size, seed);
    ``min_ratio`` is applied to the cached numbers, so another threshold loads no weights.
    """
    from helpers.datasets.corpus import CORPORA
    from helpers.lm import conventions
    from helpers.metrics import quality

    if corpus not in CORPORA:
        raise InputError(f"unknown corpus {corpus!r}; known: {', '.join(CORPORA)}")
    if handle.objective not in ("causal", "masked"):
        raise InputError(f"{handle.name}: the quality gate measures causal or masked language models, "
                         f"not objective {handle.objective!r}")
    settings = quality_settings(corpus=corpus, blocks=blocks, block_size=block_size)

    def compute(loaded) -> dict:
        train, held = _corpus(corpus)
        options = {k: v for k, v in settings.items() if k != "corpus"}
        limit = conventions.max_length(loaded)
        if limit is not None and limit < block_size:          # a short-context model: blocks of its length
            options["block_size"] = limit
        q = quality.language_model_quality(loaded.model, loaded.tokenizer, train, held, objective=loaded.objective,
                                           **options)
        return {k: q[k] for k in QUALITY_MEASURED}

    measured = cached_result(handle, "language_model_quality", settings, compute, version=QUALITY_VERSION)
    g = quality.gate(measured["heldout_perplexity"], measured["unigram_perplexity"], min_ratio=min_ratio)
    return {**measured, "ratio": g["ratio"], "usable": g["usable"], "min_ratio": g["min_ratio"], "corpus": corpus}


#: The gate's columns in the chapters' model tables (chapters 02-04).
GATE_COLUMNS = ["heldout_perplexity", "unigram_perplexity", "perplexity_ratio", "usable", "min_ratio"]


def gate_columns(gate: dict) -> dict:
    """A :func:`language_model_quality` result as the chapters' model-table columns
    (:data:`GATE_COLUMNS`: ``ratio`` is spelt ``perplexity_ratio`` beside other ratios)."""
    return {"heldout_perplexity": gate["heldout_perplexity"], "unigram_perplexity": gate["unigram_perplexity"],
            "perplexity_ratio": gate["ratio"], "usable": bool(gate["usable"]), "min_ratio": gate["min_ratio"]}


#: Version of the cached gate measurement: 2 = blocks start with the model's own start tokens
#: (:func:`helpers.lm.conventions.pack_blocks`; Gemma's ``<bos>``), so version-1 values are not reused.
QUALITY_VERSION = 2
#: What :func:`language_model_quality` measures and caches (the gate is derived from it).
QUALITY_MEASURED = ("objective", "heldout_perplexity", "unigram_perplexity", "heldout_tokens", "train_tokens",
                    "block_size")


def quality_settings(*, corpus: str = "gensim", blocks: int = 16, block_size: int = 128, seed: int = 0) -> dict:
    """The settings under which :func:`language_model_quality` caches its measurement."""
    return {"corpus": corpus, "blocks": blocks, "block_size": block_size, "smoothing": 1.0, "batch_size": 8,
            "seed": seed}


def remember_language_model_quality(handle, measured: dict, **settings) -> None:
    """Cache a gate measurement made elsewhere on exactly the blocks, tokens and seed of
    :func:`language_model_quality` with ``settings`` (:func:`quality_settings`), so that the
    chapters reuse it: the zoo measures every student after healing (``measured`` holds
    ``objective, heldout_perplexity, unigram_perplexity, heldout_tokens, train_tokens,
    block_size``). A value already cached is kept."""
    missing = set(QUALITY_MEASURED) - set(measured)
    if missing:
        raise InputError(f"remember_language_model_quality: missing {', '.join(sorted(missing))}")
    cached_result(handle, "language_model_quality", quality_settings(**settings), lambda _: dict(measured),
                  load=False, version=QUALITY_VERSION)


def quality_table(names, *, device: str = "cpu", **settings) -> pd.DataFrame:
    """One row per model: :data:`QUALITY_COLUMNS` (``settings`` go to :func:`language_model_quality`).

    A model that cannot be obtained here, or whose objective the gate does not measure
    (permutation LMs, encoders: their ``objective`` is given), keeps its row with ``usable`` NaN
    and the one-line ``reason``.
    """
    def measure(handle):
        try:
            return language_model_quality(handle, **settings)
        except InputError as exc:
            if handle.objective in ("causal", "masked"):
                raise                       # bad settings: one clear line, not a table of failures
            return {"objective": handle.objective, "reason": str(exc)}

    names = resolve_models(names)
    results, unavailable = for_each_model(names, measure, device=device)
    rows = []
    for m in names:
        r = results.get(m, {"reason": unavailable.get(m)})
        rows.append({"model": m, "usable": float("nan"), "corpus": settings.get("corpus", "gensim"), **r}
                    if "reason" in r else {"model": m, **r, "reason": None})
    return pd.DataFrame(rows, columns=QUALITY_COLUMNS).astype({"heldout_tokens": "Int64"})


def usable_models(table: pd.DataFrame) -> list[str]:
    """The models of a :func:`quality_table` that pass the gate (``usable`` is True), in order."""
    return [m for m, u in zip(table["model"], table["usable"]) if bool(u == True)]  # noqa: E712 (NaN, np.bool_)
