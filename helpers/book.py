"""Build the book: execute ``notebooks/NN_*.ipynb`` with papermill, then Jupyter Book.

    python -m helpers book --profile default      # or: make book [PROFILE=ci|paper]

1. If the profile uses the zoo and ``helpers/zoo.py`` exists, ``zoo.ensure_default_zoo``
   trains (or reuses) the book's own models.
2. Every notebook is executed in order by papermill (kernel ``python3``) with its own
   defaults overridden by ``book/profiles.yml``; executed copies go to ``book/chapters/``.
   A failing notebook stops the build with one error naming the notebook and the cell.
3. ``jupyter-book build`` renders ``book/`` with execution off; the table of contents
   (``book/chapters/_toc.yml``) is generated from the chapters present, so a notebook
   added later appears without editing anything. MathJax is served from the build
   (``_static/mathjax``, from the PyPI package sphinx-mathjax-offline), not from a CDN.

Wall time per step is printed and appended to ``results/book_timings.csv``.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

from helpers.errors import HarmsError, InputError
from helpers.paths import REPO_ROOT, cache_dir, results_dir

BOOK_DIR = REPO_ROOT / "book"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
KERNEL = "python3"
_NOTEBOOK = re.compile(r"^\d\d_[\w-]+\.ipynb$")


class NotebookFailed(HarmsError):
    """A notebook raised while papermill executed it."""


def notebooks(directory: Path = NOTEBOOKS_DIR) -> list[Path]:
    """The chapter notebooks ``NN_name.ipynb`` of ``directory``, in order."""
    return sorted(p for p in Path(directory).glob("*.ipynb") if _NOTEBOOK.match(p.name))


def load_profile(profile: str, path: Path = BOOK_DIR / "profiles.yml") -> dict:
    """``{"zoo": bool, "zoo_dir": str | None, "parameters": {notebook stem or "*": {name: value}}}``.

    ``zoo_dir`` (relative to the cache directory) keeps a profile's zoo apart from the
    default one, so a CI run never overwrites the models of a full build.
    """
    import yaml

    profiles = (yaml.safe_load(Path(path).read_text()) or {}).get("profiles", {})
    if profile not in profiles:
        raise InputError(f"{path}: unknown profile {profile!r}; known: {', '.join(profiles)}")
    cfg = profiles[profile] or {}
    return {"zoo": bool(cfg.get("zoo", False)), "zoo_dir": cfg.get("zoo_dir"),
            "parameters": cfg.get("parameters") or {}}


def declared_parameters(notebook: Path) -> dict:
    """Name -> default (source text) of the notebook's cell tagged ``parameters``."""
    import papermill

    return {k: v["default"] for k, v in papermill.inspect_notebook(str(notebook)).items()}


def parameters_for(notebook: Path, profile: str | dict) -> dict:
    """The profile's overrides for one notebook ("*" first, then the notebook's own entry).

    "*" entries the notebook does not declare are skipped; an entry for this notebook that
    names a parameter it does not declare is an :class:`InputError` (a typo, or a parameter
    line papermill cannot parse, e.g. one with "=" in its comment)."""
    cfg = load_profile(profile) if isinstance(profile, str) else profile
    own = cfg["parameters"].get(Path(notebook).stem) or {}
    declared = declared_parameters(notebook)
    unknown = sorted(set(own) - set(declared))
    if unknown:
        raise InputError(f"profile sets {', '.join(unknown)} for {Path(notebook).name}, whose parameters "
                         f"cell declares only {', '.join(declared) or 'nothing'}")
    shared = {k: v for k, v in (cfg["parameters"].get("*") or {}).items() if k in declared}
    return {**shared, **own}


KERNEL_ENV = {
    # the inline backend even if the caller exported MPLBACKEND=Agg (ipykernel only
    # installs its inline backend when MPLBACKEND is unset)
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    # the book shows results, not progress bars (tqdm's default for ``disable``), nor
    # tqdm's complaint that ipywidgets is missing
    "TQDM_DISABLE": "1",
    "PYTHONWARNINGS": "ignore:IProgress not found",
    "TOKENIZERS_PARALLELISM": "false",
}


@contextlib.contextmanager
def _kernel_env():
    """Environment the kernel inherits while papermill runs a chapter."""
    old = {k: os.environ.get(k) for k in KERNEL_ENV}
    os.environ.update(KERNEL_ENV)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def execute(notebook: Path, output: Path, parameters: dict | None = None, *,
            kernel: str = KERNEL, progress: bool = True) -> float:
    """Execute ``notebook`` into ``output`` with papermill; returns the wall time in seconds.

    Raises :class:`NotebookFailed` naming the notebook, the failing cell and the error;
    the executed copy (with the traceback) is left at ``output``.
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    notebook, output = Path(notebook), Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        with _kernel_env():
            papermill.execute_notebook(str(notebook), str(output), parameters=parameters or {},
                                       kernel_name=kernel, cwd=str(notebook.parent),
                                       progress_bar=progress, request_save_on_cell_execute=True)
    except PapermillExecutionError as exc:
        raise NotebookFailed(f"notebook {notebook.name} failed in cell {exc.exec_count}: "
                             f"{exc.ename}: {exc.evalue} (executed copy: {output})") from None
    except Exception as exc:  # kernel died, missing kernel, unreadable notebook ...
        raise NotebookFailed(f"notebook {notebook.name} could not be executed: "
                             f"{type(exc).__name__}: {exc}") from None
    return time.perf_counter() - start


def write_toc(book_dir: Path, chapters: list[Path]) -> Path:
    """Write ``chapters/_toc.yml``: the intro page, then one entry per executed chapter."""
    import yaml

    book_dir = Path(book_dir)
    entries = [{"file": Path(c).resolve().relative_to(book_dir.resolve()).with_suffix("").as_posix()}
               for c in chapters]
    toc = {"format": "jb-book", "root": "intro"}
    if entries:
        toc["parts"] = [{"caption": "Chapters", "numbered": True, "chapters": entries}]
    path = book_dir / "chapters" / "_toc.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# Generated by helpers/book.py from the executed chapters: do not edit.\n"
                    + yaml.safe_dump(toc, sort_keys=False))
    return path


def _jupyter_book() -> list[str]:
    exe = Path(sys.executable).with_name("jupyter-book")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("jupyter-book")
    if not found:
        raise HarmsError("jupyter-book is not installed: pip install 'jupyter-book<2' (or make venv)")
    return [found]


def build_html(book_dir: Path = BOOK_DIR, chapters: list[Path] | None = None) -> Path:
    """``jupyter-book build`` of ``book_dir`` (execution off) with a toc of ``chapters``
    (default: every ``chapters/NN_*.ipynb`` present). Warnings are shown; returns the
    html directory. Raises :class:`HarmsError` if the build fails or MathJax is missing."""
    book_dir = Path(book_dir)
    if chapters is None:
        chapters = notebooks(book_dir / "chapters")
    toc = write_toc(book_dir, chapters)
    cmd = [*_jupyter_book(), "build", str(book_dir), "--toc", str(toc), "--builder", "html", "--all"]
    print("+", " ".join(cmd), flush=True)
    if subprocess.run(cmd).returncode != 0:
        raise HarmsError(f"jupyter-book build of {book_dir} failed (see the messages above)")
    html = book_dir / "_build" / "html"
    if not (html / "_static" / "mathjax" / "tex-chtml.js").exists():
        raise HarmsError(f"{html}/_static/mathjax/tex-chtml.js missing: is sphinx-mathjax-offline installed?")
    external = external_assets(html)
    if external:
        print("warning: pages load assets from outside the build:", *sorted(external), sep="\n  ")
    return html


class _Assets(HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        url = a.get("src") if tag in ("script", "img", "iframe") else (
            a.get("href") if tag == "link" and a.get("rel") in ("stylesheet", "preload", "modulepreload") else None)
        if url and re.match(r"^(https?:)?//", url):
            self.urls.add(url)


def external_assets(html_dir: Path) -> set[str]:
    """Scripts, stylesheets and images that the built pages fetch from other hosts."""
    parser = _Assets()
    for page in Path(html_dir).rglob("*.html"):
        if "_static" not in page.parts:
            parser.feed(page.read_text(errors="replace"))
    return parser.urls


def _log_timings(rows: list[dict]) -> Path:
    path = results_dir() / "book_timings.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["started", "profile", "step", "seconds", "status"])
        if new:
            w.writeheader()
        w.writerows(rows)
    return path


def build(profile: str = "default", execute_only: bool = False, *,
          notebooks_dir: Path = NOTEBOOKS_DIR, book_dir: Path = BOOK_DIR) -> Path:
    """Ensure the zoo, execute every notebook with papermill, build the book.

    Returns the html directory (or the chapters directory with ``execute_only``).
    """
    cfg = load_profile(profile, Path(book_dir) / "profiles.yml")
    started = dt.datetime.now().isoformat(timespec="seconds")

    def timed(step: str, fn):
        t0 = time.perf_counter()
        status = "failed"
        try:
            out = fn()
            status = "ok"
            return out
        finally:
            secs = time.perf_counter() - t0
            path = _log_timings([{"started": started, "profile": profile, "step": step,
                                  "seconds": round(secs, 2), "status": status}])  # at once: survives a kill
            print(f"[book] {step}: {secs:.1f} s ({status}; {path})", flush=True)

    chapters_dir = Path(book_dir) / "chapters"
    chapters_dir.mkdir(parents=True, exist_ok=True)
    if cfg["zoo_dir"] and "HARMS_ZOO_DIR" not in os.environ:   # inherited by the notebook kernels
        os.environ["HARMS_ZOO_DIR"] = str(cache_dir() / cfg["zoo_dir"])
    if cfg["zoo"] and importlib.util.find_spec("helpers.training.zoo") is not None:
        from helpers.training import zoo

        timed("zoo", lambda: zoo.ensure_default_zoo(profile))
    for nb in notebooks(notebooks_dir):
        params = parameters_for(nb, cfg)
        print(f"[book] executing {nb.name} with {params or 'its defaults'}", flush=True)
        timed(nb.stem, lambda nb=nb, params=params: execute(nb, chapters_dir / nb.name, params))
    if execute_only:
        return chapters_dir
    executed = [chapters_dir / nb.name for nb in notebooks(notebooks_dir)]
    return timed("jupyter-book build", lambda: build_html(book_dir, executed))
