"""Concurrent ``harms`` runs on one machine share its CPU cores.

Each run that scores registers itself (:func:`registered_run`: a ``<pid>.pid`` file in
:func:`runs_dir` holding the process's start time) and takes :func:`thread_count` threads: the
CPU count divided by the number of live runs. Two runs that each use every core are 8-11x
slower than one (measured), so concurrent runs split the cores instead.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from helpers import paths, tables
from helpers.errors import InputError

THREADS_ENV = "HARMS_NUM_THREADS"

__all__ = ["THREADS_ENV", "runs_dir", "running_harms", "registered_run", "thread_count", "set_threads"]


def runs_dir() -> Path:
    """Where running ``harms`` processes of this machine register (one ``<pid>.pid`` file each):
    a folder per host (:func:`helpers.tables.host_id`), so machines sharing one cache neither
    count each other's runs against their own cores nor remove each other's pid files."""
    return paths.cache_dir() / "runs" / tables.host_id()


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), "" where unknown: a pid file
    whose recorded start time differs belongs to a dead run whose pid was reused."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def running_harms(runs: Path | None = None) -> int:
    """How many harms processes are registered and alive; pid files of dead ones are removed."""
    runs = Path(runs) if runs is not None else runs_dir()
    alive = 0
    for f in runs.glob("*.pid"):
        if not f.stem.isdigit():
            continue
        pid = int(f.stem)
        try:
            recorded = f.read_text().strip()
        except OSError:
            continue
        now = _start_time(pid)
        if tables.pid_alive(pid) and (not recorded or not now or recorded == now):
            alive += 1
        else:
            f.unlink(missing_ok=True)
    return alive


@contextlib.contextmanager
def registered_run(runs: Path | None = None):
    """Register this process in :func:`runs_dir` for the duration of the block (best effort)."""
    runs = Path(runs) if runs is not None else runs_dir()
    me = runs / f"{os.getpid()}.pid"
    try:
        runs.mkdir(parents=True, exist_ok=True)
        tables.atomic_write(me, _start_time(os.getpid()), durable=False)
    except OSError:
        me = None           # an unwritable cache directory is reported where the cache is used
    try:
        yield
    finally:
        if me is not None:
            me.unlink(missing_ok=True)


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise InputError(f"{name}={raw!r} is not a whole number >= 1")
    return int(raw)


def thread_count(requested: int | None = None, *, cpu_count: int | None = None, runs: Path | None = None) -> int:
    """Threads for this run: ``requested`` (``--threads``), else ``$HARMS_NUM_THREADS``, else the
    CPU count divided by the number of live harms runs (this one included), capped by
    ``$OMP_NUM_THREADS`` when set, at least 1."""
    if requested is not None:
        return requested
    env = _env_int(THREADS_ENV)
    if env is not None:
        return env
    share = (cpu_count or os.cpu_count() or 1) // max(1, running_harms(runs))
    try:
        cap = _env_int("OMP_NUM_THREADS")
    except InputError:
        cap = None
    return max(1, min(share, cap) if cap else share)


def set_threads(requested: int | None = None) -> int:
    """``torch.set_num_threads(thread_count(requested))``; returns the number set."""
    import torch

    n = thread_count(requested)
    torch.set_num_threads(n)
    return n
