"""Where the package reads data and writes caches and results.

Every location can be overridden by an environment variable, so CI, the book
and a user's own runs share one convention:

- ``HARMS_DATA_DIR``: evaluation data (one folder per data set, named as in ``data/README.md``);
  falls back to ``data/raw/`` of the repository (where ``harms fetch-data`` downloads).
- ``HARMS_CACHE_DIR``: per-sentence score cache and trained model zoo
  (default ``~/.cache/harms``).
- ``HARMS_RESULTS_DIR``: tidy CSV result tables (default ``results/`` of the repository).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dirs() -> list[Path]:
    """Directories searched for data sets, in lookup order."""
    dirs = []
    if os.environ.get("HARMS_DATA_DIR"):
        dirs.append(Path(os.environ["HARMS_DATA_DIR"]).expanduser())
    dirs.append(download_dir())
    return dirs


def download_dir() -> Path:
    """Where ``harms fetch-data`` stores downloaded data sets."""
    return REPO_ROOT / "data" / "raw"


def cache_dir() -> Path:
    return Path(os.environ.get("HARMS_CACHE_DIR", Path.home() / ".cache" / "harms")).expanduser()


def zoo_dir() -> Path:
    """Trained student / teacher checkpoints of the book's own model zoo."""
    return Path(os.environ.get("HARMS_ZOO_DIR", cache_dir() / "zoo")).expanduser()


def results_dir(chapter: str | None = None) -> Path:
    root = Path(os.environ.get("HARMS_RESULTS_DIR", REPO_ROOT / "results")).expanduser()
    return root / chapter if chapter else root


@contextlib.contextmanager
def environment(**values: str | None):
    """Environment variables set (a ``None`` value: unset) for the block, each restored after it,
    whether it was set before or not (the book's kernels, the CLI reference's fixed terminal)."""
    saved = {k: os.environ.get(k) for k in values}

    def put(items):
        for k, v in items:
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        put(values.items())
        yield
    finally:
        put(saved.items())
