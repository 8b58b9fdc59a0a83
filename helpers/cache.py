"""On-disk cache of per-sentence scores, resumable and safe against crashes and Ctrl-C.

Layout::

    <paths.cache_dir()>/scores/<sha256(canonical JSON of key)[:16]>/
        key.json                      the key, human readable
        chunk-<sha256[:20]>.json      {"format", "sha256", "rows": {text_sha256: [n_tokens, log_likelihood]}}
    <paths.cache_dir()>/results/<sha256(canonical JSON of key)[:24]>.pkl   (:func:`memoize`)
    <paths.cache_dir()>/steps/<sha256(canonical JSON of key)[:16]>/step-<i>.json   (:func:`cached_steps`)

A key (model identity, objective and the settings that change results) names
a directory; the rows inside it are keyed by the SHA-256 of the text, so a
sentence scored once under a key is never recomputed, whatever call it came in.

Work that must not be lost: scores are stored at least every
:data:`SAVE_EVERY_SECONDS` (30 s) or every :data:`DEFAULT_CHUNK_SIZE` (32) sentences,
whichever comes first. The first chunk has 32 sentences (``$HARMS_CACHE_CHUNK_SIZE``
overrides the 32); after each chunk the seconds per sentence are measured and the next
chunk is sized to take at most 30 s (at least one sentence). Each chunk is written as
soon as it is computed with :func:`helpers.tables.atomic_write`, so a killed run leaves
only whole chunks and the rerun resumes from them; a killed writer's temporaries are
removed by the next run (:func:`helpers.tables.remove_stale_temporaries`). Ctrl-C
during the work raises :class:`helpers.errors.Interrupted` saying exactly how many
sentences of the request are saved. Several processes (e.g. Accelerate workers) can
fill one directory. Every chunk carries the SHA-256 of its rows; a file that does not
parse or whose checksum fails is reported (a warning naming the file), deleted, and
its sentences are recomputed. Perplexity is not stored: it is recomputed as
``exp(-log_likelihood / n_tokens)`` on read. A cache directory that cannot be written
(read-only, full disk, a file in the way) is one :class:`helpers.errors.HarmsError` line.
"""

from __future__ import annotations

import json
import math
import os
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from helpers import paths
from helpers.distributed import split, worker
from helpers.errors import HarmsError, InputError, Interrupted
from helpers.hashing import canonical_json, sha256_bytes, sha256_json, sha256_text
from helpers.progress import plural, progress as progress_bar
from helpers.tables import atomic_write, remove_stale_temporaries

FORMAT = "harms-scores-v1"
DEFAULT_CHUNK_SIZE = 32        # sentences per stored chunk at most ...
SAVE_EVERY_SECONDS = 30.0      # ... and at most this much work between two stores
CHUNK_SIZE_ENV = "HARMS_CACHE_CHUNK_SIZE"
_COMPACT_ABOVE = 64            # merge the directory into one file when it holds more chunks than this

__all__ = ["cached_scores", "cached_rows", "cached_steps", "memoize", "key_dir", "text_hash", "CorruptCacheWarning",
           "DEFAULT_CHUNK_SIZE", "SAVE_EVERY_SECONDS"]


class CorruptCacheWarning(UserWarning):
    """A cache file did not parse or failed its checksum; it was deleted and recomputed."""


def text_hash(text: str) -> str:
    """SHA-256 of a sentence's UTF-8 bytes: the row key inside a key directory."""
    return sha256_text(text)


def key_dir(key: dict) -> Path:
    """Directory of one cache key: ``cache_dir()/scores/<sha256 of canonical JSON>[:16]``."""
    return paths.cache_dir() / "scores" / sha256_json(key)[:16]


def _unwritable(directory: Path, exc: OSError, what: str = "score cache") -> HarmsError:
    reason = exc.strerror or str(exc) or type(exc).__name__
    return HarmsError(f"cannot write the {what} in {directory}: {reason}; "
                      "set HARMS_CACHE_DIR to a writable directory or pass --no-cache")


def _key_directory(directory: Path, key: dict) -> None:
    """Create a key's directory with its ``key.json`` (the key, human readable)."""
    directory.mkdir(parents=True, exist_ok=True)
    if not (directory / "key.json").exists():
        atomic_write(directory / "key.json", json.dumps(key, indent=2, sort_keys=True, default=str) + "\n")


def _write_chunk(directory: Path, rows: dict[str, list]) -> Path:
    """Write one chunk atomically; the name is the checksum, so rewrites are idempotent."""
    digest = sha256_text(canonical_json(rows))
    path = directory / f"chunk-{digest[:20]}.json"
    atomic_write(path, json.dumps({"format": FORMAT, "sha256": digest, "rows": rows},
                                  ensure_ascii=False, sort_keys=True))
    return path


def _read_verified(path: Path, body_of: Callable[[dict], object], what: str, lost: str):
    """The body of a checksummed JSON file: ``body_of(document)`` when it is of the right format
    (else None) and its SHA-256 matches ``document["sha256"]``. A corrupt file is reported
    (:class:`CorruptCacheWarning` naming ``what`` and what is ``lost``), deleted, and gives None;
    a missing one raises FileNotFoundError."""
    raw = path.read_bytes()
    try:
        doc = json.loads(raw.decode("utf-8"))
        body = body_of(doc)
        if body is not None and sha256_text(canonical_json(body)) == doc["sha256"]:
            return body
        problem = "checksum mismatch"
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        problem = f"does not parse ({type(exc).__name__})"
    warnings.warn(f"corrupt {what} file {path}: {problem}; deleted, {lost} will be recomputed",
                  CorruptCacheWarning, stacklevel=4)
    path.unlink(missing_ok=True)
    return None


def _chunk_body(doc: dict) -> dict[str, list] | None:
    rows = doc["rows"]
    ok = doc.get("format") == FORMAT and isinstance(rows, dict) and all(isinstance(v, list) for v in rows.values())
    return rows if ok else None


def _read_chunk(path: Path) -> dict[str, list] | None:
    """Rows of a valid chunk; None (with a warning, file deleted) if corrupt; {} if it vanished."""
    try:
        return _read_verified(path, _chunk_body, "score cache", "its sentences")
    except FileNotFoundError:      # compacted away by another process meanwhile
        return {}


def _load_dir(directory: Path, *, maintain: bool = True) -> dict[str, list]:
    """All valid rows of a key directory. ``maintain``: first remove the temporaries of killed
    writers, and compact many small chunks into one file afterwards."""
    if maintain:
        remove_stale_temporaries(directory)
    rows: dict[str, list] = {}
    valid = []
    for f in sorted(directory.glob("chunk-*.json")):
        got = _read_chunk(f)
        if got:
            rows.update(got)
            valid.append(f)
    if maintain and len(valid) > _COMPACT_ABOVE:
        merged = _write_chunk(directory, rows)
        for f in valid:
            if f != merged:
                try:
                    f.unlink()
                except FileNotFoundError:
                    pass
    return rows


def _frame(n_tokens: Sequence, log_likelihood: Sequence) -> pd.DataFrame:
    n = np.asarray(n_tokens, dtype=np.int64)
    ll = np.asarray(log_likelihood, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ppl = np.exp(-ll / n)
    return pd.DataFrame({"n_tokens": n, "log_likelihood": ll, "perplexity": ppl})


def chunk_size_from_env(default: int = DEFAULT_CHUNK_SIZE) -> int:
    """``$HARMS_CACHE_CHUNK_SIZE`` (a whole number >= 1) or ``default``."""
    raw = os.environ.get(CHUNK_SIZE_ENV)
    if raw is None or not raw.strip():
        return default
    try:
        size = int(raw.strip())
    except ValueError:
        size = 0
    if size < 1:
        raise InputError(f"{CHUNK_SIZE_ENV}={raw!r} is not a whole number of sentences >= 1")
    return size


def next_chunk_size(seconds: float, sentences: int, *, largest: int, budget: float) -> int:
    """Sentences the next chunk may hold so that it is expected to take at most ``budget``
    seconds, at the speed just measured (``seconds`` for ``sentences``): between 1 and ``largest``."""
    if sentences < 1 or seconds <= 0:
        return largest
    fits = budget * sentences / seconds
    return largest if not math.isfinite(fits) else max(1, min(largest, int(fits)))


def _interrupted(directory: Path | None, hashes: set[str], stored: set[str]) -> Interrupted:
    """The exact account of a Ctrl-C: how many of this request's distinct sentences are on disk."""
    total = len(hashes)
    if directory is None:
        return Interrupted("interrupted: nothing was saved (the score cache is off)", saved=0, total=total)
    try:       # read the directory again: a chunk whose write had just finished counts too
        stored = stored | set(_load_dir(directory, maintain=False))
    except (OSError, KeyboardInterrupt):
        pass
    saved = len(hashes & stored)
    return Interrupted(f"interrupted: {saved} of {total} sentences are saved in the score cache "
                       f"({directory}); rerun the same command to resume", saved=saved, total=total)


def cached_rows(key: dict, texts: Sequence[str], compute: Callable[[list[str]], list[list]], *,
                chunk_size: int | None = None, enabled: bool = True, progress: bool = True,
                save_every: float | None = None, clock: Callable[[], float] = time.monotonic,
                desc: str = "scoring", default_chunk_size: int = DEFAULT_CHUNK_SIZE,
                longest_first: bool = False, prepare: Callable[[], object] | None = None) -> list[list]:
    """Per-text results of ``texts`` under ``key`` (each a JSON list), read from the cache or computed.

    ``compute(list_of_texts)`` returns one list per text, same order. Texts missing from the
    cache are deduplicated and computed in chunks of at most ``chunk_size`` texts (default:
    ``$HARMS_CACHE_CHUNK_SIZE`` or ``default_chunk_size``, 32) and at most ``save_every`` seconds (default
    :data:`SAVE_EVERY_SECONDS`, measured with ``clock``); each chunk is stored as soon as it is
    computed, so an interrupted run loses at most one chunk. ``longest_first``: the missing texts
    are computed longest first (stable), so that a chunk holds texts of similar lengths and its
    batches pad little. ``prepare`` (e.g. loading a lazy model) is called once, untimed, before the
    first chunk is computed: a chunk's measured speed sizes the next chunks, and the chunks decide
    which texts share a batch, on which a float32 result can depend in its last bits; a load timed
    with the first chunk (a GGUF conversion: 35 s) shrank the chunks after it, so that a model's
    scores differed from build to build (issue 38). ``enabled=False`` neither reads nor writes the
    cache. Ctrl-C raises :class:`helpers.errors.Interrupted`.
    """
    largest = chunk_size_from_env(default_chunk_size) if chunk_size is None else chunk_size
    if largest < 1:
        raise ValueError(f"chunk_size must be >= 1, got {largest}")
    budget = SAVE_EVERY_SECONDS if save_every is None else save_every
    texts = list(texts)
    hashes = [text_hash(t) for t in texts]

    known: dict[str, list] = {}
    stored: set[str] = set()             # this request's rows known to be on disk
    directory = key_dir(key) if enabled else None
    try:
        if directory is not None:
            try:
                _key_directory(directory, key)
                known = _load_dir(directory)
            except OSError as exc:
                raise _unwritable(directory, exc) from None
            stored = set(known)

        todo: dict[str, str] = {}            # hash -> text, unique misses in first-seen order
        for h, t in zip(hashes, texts):
            if h not in known and h not in todo:
                todo[h] = t
        if longest_first:
            todo = dict(sorted(todo.items(), key=lambda item: -len(item[1])))

        def compute_share(items: list[tuple[str, str]]) -> dict[str, list]:
            """Rows of ``items`` computed chunk by chunk, each chunk stored as soon as it is done."""
            done: dict[str, list] = {}
            if items and prepare is not None:
                prepare()
            with progress_bar(total=len(items), unit="sentence", desc=desc,
                              enabled=progress and bool(items) and worker.is_main()) as bar:
                start, size = 0, largest
                while start < len(items):
                    chunk = items[start:start + size]
                    began = clock()
                    out = compute([t for _, t in chunk])
                    if len(out) != len(chunk):
                        raise RuntimeError(f"compute returned {len(out)} rows for {len(chunk)} texts")
                    rows = {h: list(v) for (h, _), v in zip(chunk, out)}
                    if directory is not None:
                        try:
                            _write_chunk(directory, rows)
                        except OSError as exc:
                            raise _unwritable(directory, exc) from None
                        stored.update(rows)
                    done.update(rows)
                    bar.update(len(chunk))
                    start += len(chunk)
                    size = next_chunk_size(clock() - began, len(chunk), largest=largest, budget=budget)
            return done

        known.update(split.shard(key, hashes, list(todo.items()), compute_share))
    except KeyboardInterrupt:
        raise _interrupted(directory, set(hashes), stored) from None
    return [known[h] for h in hashes]


def cached_scores(key: dict, texts: Sequence[str], compute: Callable[[list[str]], pd.DataFrame], *,
                  chunk_size: int | None = None, enabled: bool = True, progress: bool = True,
                  save_every: float | None = None, clock: Callable[[], float] = time.monotonic,
                  prepare: Callable[[], object] | None = None) -> pd.DataFrame:
    """Per-sentence scores of ``texts`` under ``key``, read from the cache or computed
    (:func:`cached_rows`; one row ``[n_tokens, log_likelihood]`` per sentence).

    ``compute(list_of_texts)`` must return a DataFrame with ``n_tokens`` and
    ``log_likelihood`` (one row per text, same order). Returns ``n_tokens``,
    ``log_likelihood``, ``perplexity`` (= exp(-ll / n)), rows aligned with ``texts``.
    """
    def rows(chunk: list[str]) -> list[list]:
        out = compute(chunk)
        if len(out) != len(chunk):
            raise RuntimeError(f"compute returned {len(out)} rows for {len(chunk)} texts")
        return [[int(n), float(ll)] for n, ll in zip(out["n_tokens"].to_numpy(), out["log_likelihood"].to_numpy())]

    values = cached_rows(key, texts, rows, chunk_size=chunk_size, enabled=enabled, progress=progress,
                         save_every=save_every, clock=clock, prepare=prepare)
    return _frame([v[0] for v in values], [v[1] for v in values])


STEPS_FORMAT = "harms-steps-v1"


def cached_steps(key: dict, steps: int, step: Callable[[int], list], *, save_state: Callable[[], str] | None = None,
                 restore_state: Callable[[str], None] | None = None, enabled: bool = True, progress: bool = True,
                 desc: str = "steps", unit: str = "step") -> list[list]:
    """``[step(0), ..., step(steps - 1)]``, run in order, each result (a JSON list) stored as soon
    as it is done together with ``save_state()``, the random state after it.

    For sequential work that cannot be split by text, because each draw depends on every draw
    before it (sampled generation from one seeded random stream). A rerun reads the stored
    steps ``0 .. k-1``, calls ``restore_state`` with the state stored after step ``k-1`` and runs
    the rest, so the results are those of one uninterrupted run and a Ctrl-C loses at most one
    step (:class:`helpers.errors.Interrupted` says how many are saved). Stored in
    ``cache_dir()/steps/<sha256 of key>[:16]/step-<i>.json`` with the SHA-256 of its content; a
    corrupt file is reported, deleted and its step recomputed. In a run of several processes each
    runs every step (the results are the same; nothing is split). ``enabled=False``: no cache.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be a whole number >= 0, got {steps!r}")
    directory = paths.cache_dir() / "steps" / sha256_json(key)[:16] if enabled else None
    results: list[list] = []
    state = None
    if directory is not None:
        try:
            _key_directory(directory, key)
            remove_stale_temporaries(directory)
        except OSError as exc:
            raise _unwritable(directory, exc, "step cache") from None
        while len(results) < steps:
            got = _read_step(directory / f"step-{len(results):06d}.json")
            if got is None:
                break
            results.append(got["result"])
            state = got["state"]
        if results and state is not None and restore_state is not None:
            restore_state(state)
    try:
        with progress_bar(total=steps - len(results), desc=desc, unit=unit,
                          enabled=progress and len(results) < steps and worker.is_main()) as bar:
            for i in range(len(results), steps):
                result = list(step(i))
                if directory is not None:
                    doc = {"result": result, "state": save_state() if save_state is not None else None}
                    try:
                        atomic_write(directory / f"step-{i:06d}.json", json.dumps(
                            {"format": STEPS_FORMAT, "sha256": sha256_text(canonical_json(doc)), **doc},
                            ensure_ascii=False))
                    except OSError as exc:
                        raise _unwritable(directory, exc, "step cache") from None
                results.append(result)
                bar.update(1)
    except KeyboardInterrupt:
        saved = len(results)
        while directory is not None and (directory / f"step-{saved:06d}.json").exists():
            saved += 1                 # a step whose write had just finished counts too
        where = "nothing was saved (the cache is off)" if directory is None else \
            (f"{saved} of {steps} {plural(unit, steps)} ({desc}) are saved in the cache ({directory}); "
             "rerun the same command to resume")
        raise Interrupted(f"interrupted: {where}", saved=saved, total=steps) from None
    return results


def _step_body(doc: dict) -> dict | None:
    body = {"result": doc["result"], "state": doc["state"]}
    return body if doc.get("format") == STEPS_FORMAT and isinstance(body["result"], list) else None


def _read_step(path: Path) -> dict | None:
    """``{"result", "state"}`` of a valid step file; None if absent or corrupt (reported, deleted)."""
    try:
        return _read_verified(path, _step_body, "step cache", "its step")
    except FileNotFoundError:
        return None


def memoize(key: dict, compute: Callable[[], object], *, enabled: bool = True):
    """Result of ``compute()`` cached on disk under ``key`` (a whole-result cache).

    For per-model results that are not per-sentence scores (StereoSet, CMA, generations
    with their classifier labels): ``key`` must hold the model identity and every
    setting that changes the result. Stored as ``cache_dir()/results/<hash>.pkl``: the
    SHA-256 of the pickled payload, a newline, the payload; written atomically. A file
    that fails its checksum or does not unpickle (e.g. written by an older version of a
    class) is reported (:class:`CorruptCacheWarning`), deleted and recomputed. Only this
    package writes these files: unpickling trusts the cache dir.
    """
    import pickle

    if not enabled:
        return compute()
    path = paths.cache_dir() / "results" / f"{sha256_json(key)[:24]}.pkl"
    if path.is_file():
        digest, _, payload = path.read_bytes().partition(b"\n")
        problem = "checksum mismatch"
        if digest.decode("ascii", "replace") == sha256_bytes(payload):
            try:
                return pickle.loads(payload)
            except Exception as exc:  # noqa: BLE001 - any unpickling failure means: recompute
                problem = f"does not unpickle ({type(exc).__name__}: {exc})"
        warnings.warn(f"corrupt result cache file {path}: {problem}; deleted, recomputing",
                      CorruptCacheWarning, stacklevel=2)
        path.unlink(missing_ok=True)
    value = compute()
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path.parent)
        atomic_write(path, sha256_bytes(payload).encode("ascii") + b"\n" + payload)
    except OSError as exc:
        raise _unwritable(path.parent, exc, "result cache") from None
    return value
