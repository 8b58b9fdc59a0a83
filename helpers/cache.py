"""On-disk cache of per-sentence scores, resumable and safe against crashes.

Layout::

    <paths.cache_dir()>/scores/<sha256(canonical JSON of key)[:16]>/
        key.json                      the key, human readable
        chunk-<sha256[:20]>.json      {"format", "sha256", "rows": {text_sha256: [n_tokens, log_likelihood]}}

A key (model fingerprint, objective and the settings that change results) names
a directory; the rows inside it are keyed by the SHA-256 of the text, so a
sentence scored once under a key is never recomputed, whatever call it came in.
Each chunk is written as soon as it is computed, atomically (temporary file in
the same directory, fsync, ``os.replace``), so a killed run leaves only whole
chunks and the rerun resumes from them. Temporary names carry the pid and a
uuid, so several processes (e.g. Accelerate workers) can fill one directory.
Every chunk carries the SHA-256 of its rows; a file that does not parse or
whose checksum fails is reported (a warning naming the file), deleted, and its
sentences are recomputed. Perplexity is not stored: it is recomputed as
``exp(-log_likelihood / n_tokens)`` on read.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from helpers import paths

FORMAT = "harms-scores-v1"
DEFAULT_CHUNK_SIZE = 256
_STALE_TMP_SECONDS = 24 * 3600
_COMPACT_ABOVE = 64        # merge the directory into one file when it holds more chunks than this

__all__ = ["cached_scores", "memoize", "key_dir", "text_hash", "CorruptCacheWarning"]


class CorruptCacheWarning(UserWarning):
    """A cache file did not parse or failed its checksum; it was deleted and recomputed."""


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _sha256(s: str) -> str:
    return hashlib.sha256(s.encode("utf-8")).hexdigest()


def text_hash(text: str) -> str:
    """SHA-256 of a sentence's UTF-8 bytes: the row key inside a key directory."""
    return _sha256(text)


def key_dir(key: dict) -> Path:
    """Directory of one cache key: ``cache_dir()/scores/<sha256 of canonical JSON>[:16]``."""
    return paths.cache_dir() / "scores" / _sha256(_canonical(key))[:16]


def _atomic_write(path: Path, data: str | bytes) -> None:
    tmp = path.parent / f".tmp-{os.getpid()}-{uuid.uuid4().hex}{path.suffix}"
    try:
        with open(tmp, "wb" if isinstance(data, bytes) else "w",
                  **({} if isinstance(data, bytes) else {"encoding": "utf-8"})) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    try:  # make the rename itself durable
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def _write_chunk(directory: Path, rows: dict[str, list]) -> Path:
    """Write one chunk atomically; the name is the checksum, so rewrites are idempotent."""
    payload = _canonical(rows)
    digest = _sha256(payload)
    path = directory / f"chunk-{digest[:20]}.json"
    _atomic_write(path, json.dumps({"format": FORMAT, "sha256": digest, "rows": rows},
                                   ensure_ascii=False, sort_keys=True))
    return path


def _read_chunk(path: Path) -> dict[str, list] | None:
    """Rows of a valid chunk; None (with a warning, file deleted) if corrupt; {} if it vanished."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:      # compacted away by another process meanwhile
        return {}
    try:
        doc = json.loads(raw.decode("utf-8"))
        rows = doc["rows"]
        ok = (doc.get("format") == FORMAT and isinstance(rows, dict)
              and _sha256(_canonical(rows)) == doc["sha256"]
              and all(isinstance(v, list) and len(v) == 2 for v in rows.values()))
        problem = "checksum mismatch" if not ok else None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        problem = f"does not parse ({type(exc).__name__})"
    if problem is None:
        return rows
    warnings.warn(f"corrupt score cache file {path}: {problem}; deleted, its sentences will be recomputed",
                  CorruptCacheWarning, stacklevel=3)
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    return None


def _load_dir(directory: Path) -> dict[str, list]:
    """All valid rows of a key directory; removes stale temporaries; compacts many small chunks."""
    rows: dict[str, list] = {}
    files = sorted(directory.glob("chunk-*.json"))
    now = time.time()
    for tmp in directory.glob(".tmp-*"):
        try:
            if now - tmp.stat().st_mtime > _STALE_TMP_SECONDS:
                tmp.unlink()
        except FileNotFoundError:
            pass
    valid = []
    for f in files:
        got = _read_chunk(f)
        if got:
            rows.update(got)
            valid.append(f)
    if len(valid) > _COMPACT_ABOVE:
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


def cached_scores(key: dict, texts: Sequence[str], compute: Callable[[list[str]], pd.DataFrame], *,
                  chunk_size: int | None = None, enabled: bool = True, progress: bool = True) -> pd.DataFrame:
    """Per-sentence scores of ``texts`` under ``key``, read from the cache or computed.

    ``compute(list_of_texts)`` must return a DataFrame with ``n_tokens`` and
    ``log_likelihood`` (one row per text, same order). Texts that are missing
    from the cache are deduplicated and computed in chunks of ``chunk_size``
    (default: ``$HARMS_CACHE_CHUNK_SIZE`` or 256); each chunk is stored as soon
    as it is computed. ``enabled=False`` neither reads nor writes the cache.
    Returns ``n_tokens``, ``log_likelihood``, ``perplexity`` (= exp(-ll / n)),
    rows aligned with ``texts``.
    """
    from tqdm.auto import tqdm

    if chunk_size is None:
        chunk_size = int(os.environ.get("HARMS_CACHE_CHUNK_SIZE", DEFAULT_CHUNK_SIZE))
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    texts = list(texts)
    hashes = [text_hash(t) for t in texts]

    known: dict[str, list] = {}
    directory = None
    if enabled:
        directory = key_dir(key)
        directory.mkdir(parents=True, exist_ok=True)
        key_file = directory / "key.json"
        if not key_file.exists():
            _atomic_write(key_file, json.dumps(key, indent=2, sort_keys=True, default=str) + "\n")
        known = _load_dir(directory)

    todo: dict[str, str] = {}            # hash -> text, unique misses in first-seen order
    for h, t in zip(hashes, texts):
        if h not in known and h not in todo:
            todo[h] = t
    items = list(todo.items())
    with tqdm(total=len(items), unit="sent", desc="scoring", disable=not progress or not items) as bar:
        for start in range(0, len(items), chunk_size):
            chunk = items[start:start + chunk_size]
            out = compute([t for _, t in chunk])
            if len(out) != len(chunk):
                raise RuntimeError(f"compute returned {len(out)} rows for {len(chunk)} texts")
            rows = {h: [int(n), float(ll)] for (h, _), n, ll in
                    zip(chunk, out["n_tokens"].to_numpy(), out["log_likelihood"].to_numpy())}
            if directory is not None:
                _write_chunk(directory, rows)
            known.update(rows)
            bar.update(len(chunk))

    values = [known[h] for h in hashes]
    return _frame([v[0] for v in values], [v[1] for v in values])



def memoize(key: dict, compute: Callable[[], object], *, enabled: bool = True):
    """Result of ``compute()`` cached on disk under ``key`` (a whole-result cache).

    For per-model results that are not per-sentence scores (StereoSet, CMA, generations
    with their classifier labels): ``key`` must hold the model fingerprint and every
    setting that changes the result. Stored as ``cache_dir()/results/<hash>.pkl``: the
    SHA-256 of the pickled payload, a newline, the payload; written atomically. A file
    that fails its checksum is reported (:class:`CorruptCacheWarning`), deleted and
    recomputed. Only this package writes these files: unpickling trusts the cache dir.
    """
    import pickle

    if not enabled:
        return compute()
    path = paths.cache_dir() / "results" / f"{_sha256(_canonical(key))[:24]}.pkl"
    if path.is_file():
        raw = path.read_bytes()
        digest, _, payload = raw.partition(b"\n")
        if digest.decode("ascii", "replace") == hashlib.sha256(payload).hexdigest():
            return pickle.loads(payload)
        warnings.warn(f"corrupt result cache file {path}: checksum mismatch; deleted, recomputing",
                      CorruptCacheWarning, stacklevel=2)
        path.unlink(missing_ok=True)
    value = compute()
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, hashlib.sha256(payload).hexdigest().encode("ascii") + b"\n" + payload)
    return value
