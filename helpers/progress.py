"""Progress of long work: a bar in a terminal, one line per step in a log.

``progress(total=..., desc=...)`` returns a tqdm bar when standard error is a terminal and
``HARMS_PROGRESS`` is not ``lines``/``off``; otherwise an object with the same ``update`` /
``close`` / context-manager interface that prints **one line when the step ends** (``desc:
N items in 12.3 s``) and, in a step longer than a minute, one line a minute with the time left
(``desc: 300 of 6514 sentences in 60 s, about 21 min left``), so a book build, CI or cluster log
holds a few lines per step instead of thousands of carriage-return updates. ``HARMS_PROGRESS=off`` (or ``TQDM_DISABLE=1``) silences both.
``enabled=False`` silences it for one call (e.g. ``progress=False`` arguments).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time

__all__ = ["progress", "mode", "duration", "plural", "progress_bars_of_libraries", "transformers_errors_only"]


def mode() -> str:
    """``bar`` (a terminal), ``lines`` (a log: one line per step) or ``off``."""
    env = os.environ.get("HARMS_PROGRESS", "").strip().lower()
    if env in ("off", "0", "no", "false") or os.environ.get("TQDM_DISABLE", "") not in ("", "0"):
        return "off"
    if env in ("lines", "bar"):
        return env
    try:
        return "bar" if sys.stderr.isatty() else "lines"
    except (AttributeError, ValueError):
        return "lines"


def plural(unit: str, n: int) -> str:
    """``step`` → ``steps``, ``batch`` → ``batches``, ``family`` → ``families`` (n ≠ 1)."""
    if n == 1:
        return unit
    if unit.endswith("y") and unit[-2:-1] not in ("a", "e", "i", "o", "u", ""):
        return unit[:-1] + "ies"
    return unit + ("es" if unit.endswith(("s", "x", "ch", "sh")) else "s")


class _Lines:
    """tqdm's ``update``/``close``/``set_postfix`` for logs: one summary line at the end and, for a
    long step, one line every ``every`` seconds (default ``$HARMS_PROGRESS_EVERY`` or 60) with the
    count, the time so far and, when the total is known, the time left at the speed so far."""

    def __init__(self, total=None, desc: str = "", unit: str = "it", file=None, every: float | None = None,
                 clock=time.perf_counter, **_):
        self.total, self.desc, self.unit, self.n = total, desc or "step", unit, 0
        self._file = file or sys.stderr
        self._clock = clock
        self._start = self._last = clock()
        self._every = _every() if every is None else every
        self._closed = False

    def update(self, n: int = 1) -> None:
        self.n += n
        now = self._clock()
        if now - self._last >= self._every and not (self.total and self.n >= self.total):   # close() says the end
            self._last = now
            secs = now - self._start
            left = ""
            if self.total and 0 < self.n < self.total:
                left = f", about {duration(secs * (self.total - self.n) / self.n)} left"
            of = f" of {self.total}" if self.total else ""
            print(f"{self.desc}: {self.n}{of} {plural(self.unit, self.total or self.n)} in {secs:.0f} s{left}",
                  file=self._file, flush=True)

    def set_postfix(self, *args, **kwargs) -> None:
        self._postfix = kwargs or (args[0] if args else None)

    def set_description(self, desc: str, refresh: bool = True) -> None:
        self.desc = desc

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.n:
            secs = self._clock() - self._start
            print(f"{self.desc}: {self.n} {plural(self.unit, self.n)} in {secs:.1f} s",
                  file=self._file, flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __iter__(self):  # only when wrapping an iterable
        for item in self._iterable:
            yield item
            self.update()
        self.close()


def _every() -> float:
    """Seconds between two lines of a long step in a log (``$HARMS_PROGRESS_EVERY``, default 60)."""
    try:
        value = float(os.environ.get("HARMS_PROGRESS_EVERY", "60"))
    except ValueError:
        value = 60.0
    return value if value > 0 else 60.0


def duration(seconds: float) -> str:
    """A time span for people: ``45 s``, ``12 min``, ``3.4 h``, ``2.1 days``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


class _Off(_Lines):
    def update(self, n: int = 1) -> None:
        self.n += n

    def close(self) -> None:
        self._closed = True


def progress(iterable=None, *, total=None, desc: str = "", unit: str = "it", enabled: bool = True,
             **tqdm_kwargs):
    """A progress bar (terminal) or a one-line-per-step reporter (log); see the module doc."""
    how = mode() if enabled else "off"
    if how == "bar":
        from tqdm.auto import tqdm

        return tqdm(iterable, total=total, desc=desc, unit=unit, **tqdm_kwargs)
    bar = (_Lines if how == "lines" else _Off)(total=total if total is not None else
                                                (len(iterable) if hasattr(iterable, "__len__") else None),
                                                desc=desc, unit=unit)
    bar._iterable = iterable
    return bar


@contextlib.contextmanager
def progress_bars_of_libraries(enabled: bool = True):
    """transformers' and huggingface_hub's own bars ("Loading weights", "Writing model shards")
    only where :mod:`helpers.progress` draws bars (a terminal): in a log each would write
    hundreds of carriage-return updates. The previous setting is restored on exit."""
    import huggingface_hub.utils as hub
    from transformers.utils import logging as tlog

    try:                                      # the GGUF converter draws a plain tqdm bar of its own
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:
        gguf_utils = None
    was_on, hub_was_on = tlog.is_progress_bar_enabled(), not hub.are_progress_bars_disabled()
    gguf_tqdm = getattr(gguf_utils, "tqdm", None)
    if not (enabled and mode() == "bar"):
        tlog.disable_progress_bar()           # also huggingface_hub's
        hub.disable_progress_bars()
        if gguf_tqdm is not None:
            gguf_utils.tqdm = functools.partial(gguf_tqdm, disable=True)
    try:
        yield
    finally:
        (tlog.enable_progress_bar if was_on else tlog.disable_progress_bar)()
        (hub.enable_progress_bars if hub_was_on else hub.disable_progress_bars)()
        if gguf_tqdm is not None:
            gguf_utils.tqdm = gguf_tqdm


@contextlib.contextmanager
def transformers_errors_only():
    """transformers logs errors only inside the block (e.g. its report of the newly initialised
    head of a model we are about to train, which is intended); its level is restored on exit."""
    from transformers.utils import logging as tlog

    verbosity = tlog.get_verbosity()
    tlog.set_verbosity_error()
    try:
        yield
    finally:
        tlog.set_verbosity(verbosity)
