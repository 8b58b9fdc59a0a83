"""One job (the texts a cached computation still needs) split between the processes of a run.

:func:`helpers.cache.cached_rows` calls :func:`shard`: process 0 broadcasts the job (the cache key,
the digest of the request's texts, each machine's launch settings, and the texts still missing from
the shared score cache); a process started with different settings stops every copy with one line
naming the setting; each process computes a contiguous share of the missing texts (equal in
characters, :func:`share_bounds`) and stores its chunks in the (shared) score cache as it goes; the
rows are then gathered and checked to be computed exactly once. Outside a run (or inside
:func:`helpers.distributed.worker.alone`) :func:`shard` computes every text in this process.

The exchanges go through this worker's run (:func:`helpers.distributed.worker.world`); this module
imports :mod:`helpers.distributed.worker`, never the launcher.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import asdict

from helpers.distributed import worker
from helpers.errors import HarmsError, InputError
from helpers.hashing import sha256_json

__all__ = ["shard", "share_bounds", "PER_TEXT_CHARACTERS"]


def shard(key: dict, hashes: Sequence[str], todo: list[tuple[str, str]],
          compute: Callable[[list[tuple[str, str]]], dict[str, list]]) -> dict[str, list]:
    """The rows of ``todo`` (text hash, text) computed across the run's processes.

    Process 0's ``todo`` is the job (another process's view of a shared cache may lag); a process
    whose ``key``, request (``hashes``) or launch settings differ from process 0's stops the run with
    one line naming the difference. Each process computes ``compute(its contiguous share)`` (equal
    in characters: :func:`share_bounds`; which stores its chunks in the score cache); the gathered
    rows must cover the job exactly once."""
    w = worker.world()
    if w is None:
        return compute(todo)
    mine = {"key": key, "request": sha256_json(list(hashes)), "launch": asdict(w.cluster)}
    job = w.broadcast({**mine, "todo": todo}, "job")
    verdicts = w.gather(_difference(job, mine), "check")
    for rank, diff in enumerate(verdicts):
        if diff:
            raise InputError(f"{w.describe(rank)} was started with different settings than machine rank 0: "
                             f"{diff}; start every machine with the same command")
    todo = job["todo"]
    w.exchange["texts"] += len(todo)
    start, stop = share_bounds([len(text) + PER_TEXT_CHARACTERS for _, text in todo], w.size)[w.rank]
    rows = compute(todo[start:stop])
    parts = w.gather(rows, "rows")
    merged: dict[str, list] = {}
    twice = 0
    for part in parts:
        twice += sum(1 for h in part if h in merged)
        merged.update(part)
    missing = len({h for h, _ in todo} - set(merged))
    if twice or missing or len(merged) != len(todo):
        raise HarmsError(f"the processes' shares do not cover the job exactly once ({missing} texts missing, "
                         f"{twice} computed twice); rerun the same command")
    return merged


#: What one text costs beyond its characters, in characters: about two special tokens (BOS / EOS,
#: [CLS] / [SEP]) of ~4.5 characters each. Without it a job of many one-word texts (SEAT's, sorted
#: longest first) gave the share of the long texts 1.18x the mean number of tokens on 2 processes
#: and 1.29x on 8; with it 1.01x and 1.05x (benchmarks/bench_shares.py).
PER_TEXT_CHARACTERS = 10


def share_bounds(costs: Sequence[float], parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous ``(start, stop)`` ranges covering ``costs`` in order, each as close to
    an equal share of the total cost as a contiguous split allows: range ``k`` ends at the first
    item whose running total reaches ``(k + 1) / parts`` of the total, or just before it when that
    is nearer. The shares' costs then differ from an equal split by at most one item's cost.

    :func:`shard` passes the texts' lengths in characters (plus :data:`PER_TEXT_CHARACTERS`): a job sorted longest first
    (``cached_rows(longest_first=True)``) split into equal counts gave process 0 the longest half.
    Contiguous ranges keep the chunks of similar lengths that the sort was for."""
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}")
    if any(c < 0 for c in costs):
        raise ValueError("costs must be >= 0")
    running = list(itertools.accumulate(costs, initial=0.0))[1:]       # nondecreasing: costs >= 0
    total = running[-1] if running else 0.0
    bounds, start = [], 0
    for k in range(1, parts):
        target = total * k / parts
        stop = bisect.bisect_left(running, target, start)
        # running[stop] is the first total >= target: end after it, or before it when nearer
        if stop < len(running):
            before = running[stop - 1] if stop > 0 else 0.0
            stop += 1 if running[stop] - target <= target - before else 0
        bounds.append((start, stop))
        start = stop
    bounds.append((start, len(running)))
    return bounds


def _difference(job: dict, mine: dict) -> str:
    """'' when ``mine`` matches process 0's ``job``, else what differs, in words."""
    a, b = job["launch"], mine["launch"]
    field = next((k for k in a if k != "machine_rank" and a[k] != b[k]), None)   # each machine has its own rank
    if field:
        return f"--{field.replace('_', '-')} {b[field]} instead of {a[field]}"
    if job["key"] != mine["key"]:
        a, b = _flat(job["key"]), _flat(mine["key"])
        fields = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        return "; ".join(f"{k} {b.get(k)!r} instead of {a.get(k)!r}" for k in fields[:3])
    if job["request"] != mine["request"]:
        return "a different list of texts (input file, sample, seed or data set)"
    return ""


def _flat(d: dict, prefix: str = "") -> dict:
    """A nested cache key as {"model.sha256": ..., "pll": ...}, to name the setting that differs."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out
