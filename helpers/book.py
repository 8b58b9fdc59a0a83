"""Build the book: execute ``notebooks/NN_*.ipynb`` with papermill, then Jupyter Book.

    python -m helpers book --profile default      # or: make book [PROFILE=ci|paper]

1. If the profile uses the zoo, ``helpers.training.zoo.ensure_default_zoo`` trains (or
   reuses) the book's own models.
2. Every notebook is executed in order by papermill (kernel ``python3``, working directory
   ``notebooks/``) with its own defaults overridden by ``book/profiles.yml``; executed copies
   go to ``book/notebooks/`` (generated), so the page ``notebooks/NN_name`` of the book is the
   file ``notebooks/NN_name.ipynb`` of the repository: launch buttons (Binder, Colab) open the
   repository's notebook. A failing notebook stops the build with one error naming the
   notebook and the cell.
3. ``jupyter-book build`` renders ``book/`` with execution off. Its table of contents and
   configuration are generated into ``book/notebooks/``: the toc (intro, "Teaching with this
   book", then the chapters present, so a notebook added later appears without editing
   anything) and ``_config.yml`` with launch buttons only when ``repository.url`` is set
   (:func:`write_config`). MathJax is served from the build (``_static/mathjax``, from the
   PyPI package sphinx-mathjax-offline), not from a CDN.

Progress: papermill's cell bar only when standard error is a terminal; in a log, one line
per step (:mod:`helpers.progress`). Wall time per step is printed and appended to
``results/book_timings.csv``.
"""

from __future__ import annotations

import csv
import datetime as dt
import importlib
import importlib.util
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

from helpers import published
from helpers.errors import HarmsError, InputError
from helpers.paths import REPO_ROOT, cache_dir, environment, results_dir
from helpers.progress import mode as progress_mode
from helpers.tables import atomic_write

BOOK_DIR = REPO_ROOT / "book"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
EXECUTED = "notebooks"            # book/notebooks/NN_*.ipynb: page path == repository path
EXTRA_PAGES = ("teaching",)       # pages listed after the intro, when present in the book
LAUNCH_KEYS = ("binderhub_url", "jupyterhub_url", "colab_url", "deepnote_url", "jupyterlite_url")
KERNEL = "python3"
_NOTEBOOK = re.compile(r"^\d\d_[\w-]+\.ipynb$")


class NotebookFailed(HarmsError):
    """A notebook raised while papermill executed it."""


def notebooks(directory: Path = NOTEBOOKS_DIR) -> list[Path]:
    """The chapter notebooks ``NN_name.ipynb`` of ``directory``, in order."""
    return sorted(p for p in Path(directory).glob("*.ipynb") if _NOTEBOOK.match(p.name))


def load_profile(profile: str, path: Path = BOOK_DIR / "profiles.yml") -> dict:
    """``{"zoo": bool, "zoo_dir": str | None, "parameters": {notebook stem or "*": {name: value}}}``.

    A profile with ``settings: papers`` takes every chapter's parameters from
    :func:`helpers.published.paper_settings` (each paper's own setting, with the section that
    states it); its own ``parameters`` add only what no paper fixes (e.g. ``device``).

    ``zoo_dir`` (relative to the cache directory) keeps a profile's zoo apart from the
    default one, so a CI run never overwrites the models of a full build.
    """
    import yaml

    if not Path(path).is_file():
        raise InputError(f"{path}: no such profiles file (a book directory holds profiles.yml)")
    profiles = (yaml.safe_load(Path(path).read_text()) or {}).get("profiles", {})
    if profile not in profiles:
        raise InputError(f"{path}: unknown profile {profile!r}; known: {', '.join(profiles)}")
    cfg = profiles[profile] or {}
    parameters = {k: dict(v or {}) for k, v in (cfg.get("parameters") or {}).items()}
    if cfg.get("settings") == "papers":              # each paper's own setting, stored as data
        for row in published.paper_settings().itertuples():
            parameters.setdefault(row.chapter, {})[row.parameter] = row.value
    elif cfg.get("settings") is not None:
        raise InputError(f"{path}: profile {profile!r} has settings: {cfg['settings']!r}; the only "
                         "value is 'papers' (helpers/published/paper_settings.csv)")
    return {"zoo": bool(cfg.get("zoo", False)), "zoo_dir": cfg.get("zoo_dir"), "parameters": parameters,
            "needs_hub": cfg.get("settings") == "papers"}


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


def kernel_env() -> dict:
    """:data:`KERNEL_ENV` plus ``JUPYTER_PATH`` led by this environment's ``share/jupyter``, so
    the kernel ``python3`` is the one installed in it (``make venv``: ``ipykernel install
    --sys-prefix``), not a ``python3`` kernel of the user's own (``~/.local/share/jupyter``)."""
    ours = str(Path(sys.prefix) / "share" / "jupyter")
    rest = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p and p != ours]
    return {**KERNEL_ENV, "JUPYTER_PATH": os.pathsep.join([ours, *rest])}


def _kernel_env():
    """Environment the kernel inherits while papermill runs a chapter."""
    return environment(**kernel_env())


def execute(notebook: Path, output: Path, parameters: dict | None = None, *,
            kernel: str = KERNEL, progress: bool | None = None) -> float:
    """Execute ``notebook`` into ``output`` with papermill; returns the wall time in seconds.

    ``progress`` (papermill's bar over cells): default only when standard error is a
    terminal; in a log it would be hundreds of carriage-return updates.
    Raises :class:`NotebookFailed` naming the notebook, the failing cell and the error;
    the executed copy (with the traceback) is left at ``output``.
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    notebook, output = Path(notebook), Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    if progress is None:
        progress = progress_mode() == "bar"
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
    fold_injected_parameters(output)
    return time.perf_counter() - start


#: How the page offers the cell papermill inserts with a build's parameters (folded, like the
#: notebook's own parameters cell, so that a chapter's page opens with its Findings).
INJECTED_PROMPT = "Show the parameters this build set"


def fold_injected_parameters(executed: Path) -> None:
    """Fold the cell papermill inserted into ``executed`` (tag ``injected-parameters``) behind a
    toggle on the page (Jupyter Book's ``hide-cell``, labelled :data:`INJECTED_PROMPT`)."""
    nb = json.loads(Path(executed).read_text(encoding="utf-8"))
    injected = [c for c in nb["cells"] if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
    for cell in injected:
        cell["metadata"]["tags"].append("hide-cell")
        cell["metadata"]["mystnb"] = {"code_prompt_show": INJECTED_PROMPT}
    if injected:
        atomic_write(executed, json.dumps(nb, indent=1, ensure_ascii=False) + "\n", durable=False)


def _generated(book_dir: Path, name: str, data: dict, what: str) -> Path:
    import yaml

    path = Path(book_dir) / EXECUTED / name
    atomic_write(path, f"# Generated by helpers/book.py from {what}: do not edit.\n"
                       + yaml.safe_dump(data, sort_keys=False), durable=False)
    return path


def lab_command(display: str | None = None) -> tuple[list[str], dict]:
    """``(argv, env)`` of JupyterLab on ``notebooks/`` in the environment the book's kernels get
    (:func:`kernel_env`: kernel ``python3`` of this environment, inline figures; data, cache
    and results directories inherited as in ``make book``; working directory of a kernel:
    ``notebooks/``, as papermill's), progress shown as lines rather than disabled, served on
    127.0.0.1 only, ``--no-browser`` when there is no display (``display``: $DISPLAY),
    ``--allow-root`` when run as root."""
    argv = [str(Path(sys.executable).with_name("jupyter-lab")), f"--ServerApp.root_dir={NOTEBOOKS_DIR}",
            "--ServerApp.ip=127.0.0.1", f"--MappingKernelManager.default_kernel_name={KERNEL}"]
    if not display:
        argv.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")         # containers and CI machines run as root; Jupyter refuses else
    # TQDM_DISABLE is left out: a reader at the notebook sees progress (as lines)
    env = {**os.environ, **{k: v for k, v in kernel_env().items() if k != "TQDM_DISABLE"}}
    return argv, env


def lab() -> None:
    """``make lab``: replace this process by :func:`lab_command` (Ctrl-C stops JupyterLab)."""
    argv, env = lab_command(os.environ.get("DISPLAY"))
    if not Path(argv[0]).exists():
        raise HarmsError(f"{argv[0]} not found: install JupyterLab with pip install -e '.[book]' (or make lab)")
    print("+", " ".join(argv), flush=True)
    os.execve(argv[0], argv, env)


SETTINGS_PAGE = "paper_settings"     # the appendix page (generated into book/notebooks/)


def settings_table(notebooks_dir: Path = NOTEBOOKS_DIR, profile: str = "paper") -> list[dict]:
    """Per chapter parameter that a paper fixes: the chapter, the parameter, this build's default
    (the notebook's parameters cell), what ``profile`` passes, and the paper's own words with the
    section that states them and the estimated time where large (:func:`helpers.published.paper_settings`)."""
    cfg = load_profile(profile)
    settings = published.paper_settings()
    notebook = {c: Path(notebooks_dir) / f"{c}.ipynb" for c in settings["chapter"].unique()}
    declared = {c: declared_parameters(nb) if nb.is_file() else {} for c, nb in notebook.items()}
    passed = {c: parameters_for(nb, cfg) if nb.is_file() else {} for c, nb in notebook.items()}
    rows = []
    for row in settings.itertuples():
        resolved = passed[row.chapter]
        rows.append({"chapter": row.chapter, "parameter": row.parameter,
                     "default": declared[row.chapter].get(row.parameter, "(not declared)"),
                     "profile": repr(resolved[row.parameter]) if row.parameter in resolved else "(not passed)",
                     "seed": row.seed, "where": row.where, "text": row.text, "estimate": row.estimate})
    return rows


def write_settings_page(book_dir: Path, notebooks_dir: Path = NOTEBOOKS_DIR) -> Path:
    """The appendix page: per chapter, this build's default vs the ``paper`` profile vs the
    paper's text (:func:`settings_table`), so a reader sees what the offline build reduces."""
    def cell(text) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = ["# Appendix: each paper's setting", "",
             "The offline build reduces the papers' settings to fit two CPU cores. Per chapter, each "
             "parameter a paper fixes: the value this build uses (the notebook's default), what "
             "`make book PROFILE=paper` passes (generated from `helpers/published/paper_settings.csv`, "
             "so the two cannot drift), and the paper's own words. Where a setting is too large for one "
             "GPU in reasonable time, the estimate says how long it would take.", ""]
    rows = settings_table(notebooks_dir)
    for chapter in dict.fromkeys(r["chapter"] for r in rows):
        lines += [f"## {chapter}", "", "| parameter | this build | `paper` profile | the paper | estimate |",
                  "|---|---|---|---|---|"]
        lines += [f"| `{r['parameter']}` | `{cell(r['default'])}` | `{cell(r['profile'])}` | "
                  f"seed {r['seed']}, {cell(r['where'])}: \"{cell(r['text'])}\" | {cell(r['estimate']) or '—'} |"
                  for r in rows if r["chapter"] == chapter]
        lines.append("")
    path = Path(book_dir) / EXECUTED / f"{SETTINGS_PAGE}.md"
    atomic_write(path, "\n".join(lines), durable=False)
    return path


def write_toc(book_dir: Path, chapters: list[Path]) -> Path:
    """Write ``notebooks/_toc.yml``: the intro page, the pages of :data:`EXTRA_PAGES` present
    in ``book_dir`` (e.g. "Teaching with this book"), one entry per executed chapter, then the
    appendix (:func:`write_settings_page`) when it was written."""
    book_dir = Path(book_dir)
    entries = [{"file": Path(c).resolve().relative_to(book_dir.resolve()).with_suffix("").as_posix()}
               for c in chapters]
    extra = [{"file": p} for p in EXTRA_PAGES if (book_dir / f"{p}.md").is_file()]
    appendix = [{"file": f"{EXECUTED}/{SETTINGS_PAGE}"}] if (book_dir / EXECUTED / f"{SETTINGS_PAGE}.md").is_file() else []
    toc = {"format": "jb-book", "root": "intro"}
    parts = ([{"caption": "Using this book", "chapters": extra}] if extra else []) + (
        [{"caption": "Chapters", "numbered": True, "chapters": entries}] if entries else []) + (
        [{"caption": "Appendix", "chapters": appendix}] if appendix else [])
    if parts:
        toc["parts"] = parts
    return _generated(book_dir, "_toc.yml", toc, "the executed chapters")


def write_config(book_dir: Path) -> Path:
    """Write ``notebooks/_config.yml``: ``book_dir/_config.yml`` with launch buttons (Binder,
    Colab, ...) only when ``repository.url`` is set; without it no button would have a
    repository to open, so the launch URLs are emptied and none is shown. With it, the
    repository button is shown too. ``repository.url`` must look like
    ``https://github.com/OWNER/REPO`` (:class:`InputError` otherwise)."""
    import yaml

    source = Path(book_dir) / "_config.yml"
    cfg = yaml.safe_load(source.read_text()) or {}
    repo = cfg.setdefault("repository", {})
    url = str(repo.get("url") or "").strip().rstrip("/")
    if url and not re.fullmatch(r"https?://[^/\s]+/[^/\s]+/[^/\s]+", url):
        raise InputError(f"{source}: repository.url must be https://HOST/OWNER/REPO, got {url!r}")
    repo["url"] = url
    if not url:
        cfg["launch_buttons"] = {**(cfg.get("launch_buttons") or {}), **{k: "" for k in LAUNCH_KEYS},
                                 "thebe": False}
    cfg.setdefault("html", {})["use_repository_button"] = bool(url)
    return _generated(book_dir, "_config.yml", cfg, f"{source.name} (launch buttons need repository.url)")


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
    (default: every executed ``notebooks/NN_*.ipynb`` of ``book_dir``). Warnings are shown; returns the
    html directory. Raises :class:`HarmsError` if the build fails or MathJax is missing."""
    book_dir = Path(book_dir)
    if chapters is None:
        chapters = notebooks(book_dir / EXECUTED)
    write_settings_page(book_dir)
    toc, config = write_toc(book_dir, chapters), write_config(book_dir)
    cmd = [*_jupyter_book(), "build", str(book_dir), "--toc", str(toc), "--config", str(config),
           "--builder", "html", "--all"]
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


def chapter_namespace(cfg: dict, chapter: str, defaults: dict, notebooks_dir: Path = NOTEBOOKS_DIR) -> dict:
    """A chapter's parameters under a profile as its notebook sees them, before the chapter checks
    them: its defaults, the notebook's parameters cell, the profile's overrides."""
    import ast

    nb = Path(notebooks_dir) / f"{chapter}.ipynb"
    declared = {}
    for k, v in declared_parameters(nb).items():
        try:
            declared[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            pass
    return {**defaults, **{k: v for k, v in declared.items() if k in defaults}, **parameters_for(nb, cfg)}


#: The chapters whose per-model work :func:`prefill` computes (modules of helpers.chapters).
PREFILLED = ("ch01_safety", "ch06_intrinsic_extrinsic", "ch07_probing")


def _chapter_module(name: str):
    return importlib.import_module(f"helpers.chapters.{name}")


def chapter_parameters(cfg: dict, module: str, notebooks_dir: Path = NOTEBOOKS_DIR) -> dict:
    """The checked parameters (its ``parameters`` of :func:`chapter_namespace`) of the chapter of
    ``module`` (a module of helpers.chapters) under a profile."""
    chapter = _chapter_module(module)
    return chapter.parameters(chapter_namespace(cfg, chapter.CHAPTER, chapter.DEFAULTS, notebooks_dir))


def chapter01_parameters(cfg: dict, notebooks_dir: Path = NOTEBOOKS_DIR) -> dict:
    """Chapter 01's parameters under a profile, as its notebook sees them: the chapter's defaults,
    the notebook's parameters cell, the profile's overrides; models resolved to registry names."""
    return chapter_parameters(cfg, "ch01_safety", notebooks_dir)


def chapter_modules(notebooks_dir: Path = NOTEBOOKS_DIR) -> list:
    """The modules of :mod:`helpers.chapters` behind the book's notebooks (each with ``CHAPTER``
    and ``DEFAULTS``), in the notebooks' order."""
    from helpers import chapters

    found = [_chapter_module(m.name) for m in pkgutil.iter_modules(chapters.__path__)]
    by_chapter = {m.CHAPTER: m for m in found if hasattr(m, "CHAPTER") and hasattr(m, "DEFAULTS")}
    return [by_chapter[nb.stem] for nb in notebooks(notebooks_dir) if nb.stem in by_chapter]


def _strings(value):
    """Every string inside a parameter value (lists, tuples and dict values, nested)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _hub_id(name: str) -> str | None:
    """The hub id a model name means (a registry name with a hub id, or a hub id), else None."""
    from helpers.models import registry
    from helpers.models.loading import HUB_ID

    spec = registry.REGISTRY.get(name)
    if spec is not None:
        return spec.hub_id
    if name in registry.BY_HUB_ID or (HUB_ID.fullmatch(name) and not Path(name).exists()):
        return name
    return None


#: The chapters that load :mod:`helpers.models.text_classifiers`' hub classifiers.
CLASSIFIER_CHAPTERS = ("02", "06")


def profile_hub_ids(profile: str | dict = "paper", notebooks_dir: Path = NOTEBOOKS_DIR):
    """Every hub checkpoint a profile (its name, or :func:`load_profile`'s dict) loads: ``hub_id``,
    ``chapters`` and ``parameters`` naming it (``;``-joined), and ``role`` (model, classifier,
    tokenizer). Read from the profile's resolved parameters (a ``models`` keyword such as
    ``"paper"`` expanded by the chapter's own ``paper_models`` or by
    :func:`helpers.runner.resolve_models`) and from the hub classifiers of
    :mod:`helpers.models.text_classifiers`, so a model added to the profile is listed here."""
    import pandas as pd

    from helpers import runner
    from helpers.models import text_classifiers

    cfg = load_profile(profile) if isinstance(profile, str) else profile
    found: dict[str, dict] = {}

    def add(hub_id, chapter, parameter, role):
        row = found.setdefault(hub_id, {"hub_id": hub_id, "chapters": [], "parameters": [], "role": role})
        for key, value in (("chapters", chapter), ("parameters", parameter)):
            if value not in row[key]:
                row[key].append(value)

    for module in chapter_modules(notebooks_dir):
        params = chapter_namespace(cfg, module.CHAPTER, module.DEFAULTS, notebooks_dir)
        for key, value in params.items():
            for text in _strings(value):
                if key == "models" and text == "paper" and hasattr(module, "paper_models"):
                    names = module.paper_models()
                elif key == "models":                 # a keyword's models, else the one name
                    names = runner.resolve_models(text)
                else:
                    names = [text]
                for name in names:
                    hub_id = _hub_id(name)
                    if hub_id:
                        add(hub_id, module.CHAPTER[:2], key, "model")
    for which, (model_id, tokenizer_id) in text_classifiers.HUB_IDS.items():
        for chapter in CLASSIFIER_CHAPTERS:
            add(model_id, chapter, f"classifier {which}", "classifier")
            if tokenizer_id:
                add(tokenizer_id, chapter, f"classifier {which}", "tokenizer")
    rows = [{**r, "chapters": ";".join(sorted(r["chapters"])), "parameters": ";".join(r["parameters"])}
            for r in found.values()]
    return pd.DataFrame(rows, columns=["hub_id", "role", "chapters", "parameters"])


def prefilled_models(cfg: dict, notebooks_dir: Path = NOTEBOOKS_DIR) -> list[str]:
    """Every model :func:`prefill` measures under a profile (registry names)."""
    names = []
    for module in PREFILLED:
        models = chapter_parameters(cfg, module, notebooks_dir)["models"]
        names += [m for ms in models.values() for m in ms] if isinstance(models, dict) else models
    return list(dict.fromkeys(names))


def prefill(cfg: dict, notebooks_dir: Path = NOTEBOOKS_DIR) -> dict[str, list[str]]:
    """The per-model work of the profile's chapters (:data:`PREFILLED`) into the score cache,
    where the notebooks then read it, by each chapter's ``prefill`` with its parameters under the
    profile: chapter 01's scores (every model on ToxiGen and ImplicitHate; chapters 02-04 ask for
    the same), chapter 06's intrinsic metrics (CEAT's word vectors, StereoSet), classifiers and
    generations, and chapter 07's cloze fill-ins. Run by every process of a run split across
    processes or machines (:mod:`helpers.distributed`): each model's texts are shared between
    them, and chapter 06's classifiers and generations are dealt by model. The rest (chapter 05's
    training, chapter 02's generations and CMA, the statistics) stays with the notebooks
    (docs/SCALING.md, Limits). Returns the models measured per chapter."""
    from helpers.distributed import worker

    done = {}
    for module in PREFILLED:
        params = chapter_parameters(cfg, module, notebooks_dir)
        params["device"] = worker.worker_device(params["device"])     # cuda: this process's own GPU
        chapter = _chapter_module(module)
        done[chapter.CHAPTER] = chapter.prefill(params)
    return done


def profile_device(profile: str, book_dir: Path = BOOK_DIR) -> str:
    """The device a profile's chapters run on (its ``"*"`` parameters' ``device``, else cpu)."""
    return str((load_profile(profile, Path(book_dir) / "profiles.yml")["parameters"].get("*") or {})
               .get("device", "cpu"))


#: Beside each executed chapter: what it was executed from and what it wrote (:func:`chapter_inputs`).
RECORD_SUFFIX = ".inputs.json"
_UNCHANGED = object()         # a chapter not executed again (its log line says so)
#: The package's own files (code, published numbers, schemas): any change executes every chapter again.
PACKAGE_DIR = REPO_ROOT / "helpers"


def _folder_digest(root: Path, leave_out=lambda relative: False) -> str:
    """SHA-256 over the files under ``root``: each relative path with its content's SHA-256
    (:func:`helpers.hashing.sha256_file`, remembered by size, times and inode, so a warm build
    reads no file twice); Python's caches, atomic-write temporaries and the relative paths
    ``leave_out`` names left out (a missing folder has no files)."""
    from helpers import hashing

    root = Path(root)
    found = root.rglob("*") if root.is_dir() else []
    files = sorted(f for f in found if f.is_file() and "__pycache__" not in f.parts and ".harms-tmp-" not in f.name
                   and not leave_out(f.relative_to(root).as_posix()))
    return hashing.sha256_json([[f.relative_to(root).as_posix(), hashing.sha256_file(f)] for f in files])


def _data_digests() -> list:
    """The data directories' digests: each of HARMS_DATA_DIR's whole; of the download directory
    (``data/raw``) only the files no registry entry pins, since :func:`helpers.datasets.registry.fetch`
    writes a pinned file only once its sha256 is the registry's (so the package's files fix its
    content, and a chapter that fetches one, e.g. chapter 06 the insults archive, changes no other
    chapter's inputs); the repository's own ``data/`` (its README and bundled tables)."""
    from helpers import paths
    from helpers.datasets import registry

    pinned = {f"{s.folder}/{f.name}" for s in registry.REGISTRY.values() for f in s.files if f.url and f.sha256}
    downloads = paths.download_dir()
    out = [[str(d), _folder_digest(d)] for d in paths.data_dirs() if d != downloads]
    return out + [[str(downloads), _folder_digest(downloads, lambda rel: rel in pinned)],
                  [str(REPO_ROOT / "data"), _folder_digest(REPO_ROOT / "data", lambda rel: rel.startswith("raw/"))]]


def _hub_caches() -> list[Path]:
    """The Hugging Face hub cache's ``refs`` files (the revision of every cached model and data
    set): a model the hub updated and a later offline build reads changes one."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return []
    root = Path(constants.HF_HUB_CACHE)
    return sorted(root.glob("*/refs/*")) if root.is_dir() else []


def build_inputs() -> dict[str, str]:
    """The digests of what every chapter of a build depends on, one per kind: the package's files
    (:data:`PACKAGE_DIR`), every data directory (:func:`_data_digests`), every installed
    distribution and its version (the libraries and the packaged models) with Python's, the
    HARMS_* settings and the revisions in the hub cache. Complete only offline: while the Hugging
    Face hub can be reached its models and data can change under the same names, so :func:`build`
    then executes every chapter. Computed once per build (none of it changes while it runs)."""
    from importlib import metadata

    from helpers import hashing

    dists = sorted({f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions() if d.metadata["Name"]})
    parts = {"package files": _folder_digest(PACKAGE_DIR), "data": _data_digests(),
             "installed distributions": [dists, sys.version],
             "HARMS_* settings": {k: v for k, v in sorted(os.environ.items()) if k.startswith("HARMS_")},
             "hub cache": [[str(f), f.read_text(errors="replace")] for f in _hub_caches()]}
    return {k: hashing.sha256_json(v) for k, v in parts.items()}


def chapter_inputs(notebook: Path, params: dict, earlier: list[str], shared: dict[str, str]) -> dict[str, str]:
    """The digests of everything an executed chapter and its tables depend on, one per kind (the
    build says which changed): ``shared`` (:func:`build_inputs`), the notebook, its parameters
    under the profile, the zoo (which chapter 04 may train during the build; its training
    checkpoints left out: a killed training's state, not a model), and the tables of the chapters
    before it (``earlier``: they may read them)."""
    from helpers import hashing, paths

    parts = {"notebook": hashing.sha256_file(notebook), "parameters": params,
             "zoo": _folder_digest(paths.zoo_dir(), lambda rel: rel.startswith("_checkpoints/")),
             "earlier chapters' tables": [[c, _folder_digest(results_dir(c))] for c in earlier]}
    return {**shared, **{k: hashing.sha256_json(v) for k, v in parts.items()}}


def _outputs(executed: Path) -> dict:
    """What an executed chapter left: its executed notebook and its folder of tables."""
    from helpers import hashing

    return {"notebook": hashing.sha256_file(executed) if executed.is_file() else "absent",
            "tables": _folder_digest(results_dir(executed.stem))}


def _record(executed: Path) -> Path:
    return executed.with_name(executed.stem + RECORD_SUFFIX)


def changed(executed: Path, inputs: dict | None) -> list[str]:
    """What changed since ``executed`` was executed: the kinds of :func:`chapter_inputs` whose
    digests differ from its record's, ``"its executed notebook or tables"`` when they are no
    longer as that execution left them; empty when nothing did (it need not be executed again)."""
    if inputs is None:
        return ["the Hugging Face hub can be reached: its models and data may have changed"]
    try:
        record = json.loads(_record(executed).read_text())
    except (OSError, ValueError):
        return ["no record of its last execution"]
    before = record.get("inputs") if isinstance(record.get("inputs"), dict) else {}
    out = [k for k in inputs if before.get(k) != inputs[k]]
    return out + (["its executed notebook or tables"] if record.get("outputs") != _outputs(executed) else [])


def log_findings(chapter: str) -> list[str]:
    """Print a chapter's findings (``results/<chapter>/findings.csv``, its Findings box) as the log's
    lines about it; returns them (none when the chapter wrote no findings table)."""
    from helpers import tables
    from helpers.report import FINDINGS_TABLE

    path = results_dir(chapter) / f"{FINDINGS_TABLE}.csv"
    if not path.is_file():
        return []
    lines = [f"  - {f}" for f in tables.read_csv_checked(path, ["finding"], "findings table")["finding"]]
    print("\n".join([f"[book] {chapter} findings:", *lines]), flush=True)
    return lines


def build(profile: str = "default", execute_only: bool = False, *, prefill_only: bool = False, rerun: bool = False,
          notebooks_dir: Path = NOTEBOOKS_DIR, book_dir: Path = BOOK_DIR) -> Path | None:
    """Ensure the zoo, execute every notebook with papermill, build the book.

    Returns the html directory (or the chapters directory with ``execute_only``). As one process
    of a run split across processes or machines (``harms book --processes / --machines``,
    :mod:`helpers.distributed`), or with ``prefill_only``, the per-model work of chapters 01, 06
    and 07 is first computed into the shared score cache (:func:`prefill`, split between the
    processes); then process 0
    alone executes the notebooks and builds the book (the others return None), reading the
    scores from the cache. ``prefill_only`` stops after the prefill (None).
    """
    from helpers.distributed import worker

    cfg = load_profile(profile, Path(book_dir) / "profiles.yml")
    if cfg["needs_hub"]:                 # every hub checkpoint there, of its class, before any chapter runs
        from helpers import rehearsal

        rehearsal.check_checkpoints(profile_hub_ids(cfg, notebooks_dir)["hub_id"].tolist(), profile)
    started = dt.datetime.now().isoformat(timespec="seconds")
    writer = worker.is_main()

    def timed(step: str, fn):
        t0 = time.perf_counter()
        status = "failed"
        try:
            out = fn()
            status = "unchanged: not executed again" if out is _UNCHANGED else "ok"
            return out
        finally:
            secs = time.perf_counter() - t0
            if writer:
                path = _log_timings([{"started": started, "profile": profile, "step": step,
                                      "seconds": round(secs, 2), "status": status}])  # at once: survives a kill
                print(f"[book] {step}: {secs:.1f} s ({status}; {path})", flush=True)

    chapters_dir = Path(book_dir) / EXECUTED
    chapters_dir.mkdir(parents=True, exist_ok=True)
    # the profile's own zoo (zoo_dir) for this build and the kernels it starts, unless the caller set one
    own_zoo = ({"HARMS_ZOO_DIR": str(cache_dir() / cfg["zoo_dir"])}
               if cfg["zoo_dir"] and "HARMS_ZOO_DIR" not in os.environ else {})
    with environment(**own_zoo):
        return _build(cfg, profile, timed, chapters_dir, execute_only, prefill_only, rerun, notebooks_dir, book_dir)


def _build(cfg, profile, timed, chapters_dir, execute_only, prefill_only, rerun, notebooks_dir, book_dir):
    """:func:`build`'s steps under the profile's zoo directory."""
    from helpers import hub
    from helpers.distributed import worker

    writer = worker.is_main()
    needs_zoo = not prefill_only or any(m.startswith("zoo-") for m in prefilled_models(cfg, notebooks_dir))
    if writer and cfg["zoo"] and needs_zoo and importlib.util.find_spec("helpers.training.zoo") is not None:
        from helpers.training import zoo

        timed("zoo", lambda: zoo.ensure_default_zoo(profile))
    if prefill_only or worker.world() is not None:
        worker.barrier("zoo")                   # the others load zoo models only once process 0 made them
        timed("prefill", lambda: prefill(cfg, notebooks_dir))
    if prefill_only or not writer:
        return None
    earlier: list[str] = []
    offline = hub.hub_offline_reason() is not None                  # one probe of the hub per build
    shared = build_inputs() if offline else None
    for nb in notebooks(notebooks_dir):
        params, executed = parameters_for(nb, cfg), chapters_dir / nb.name
        inputs = chapter_inputs(nb, params, earlier, shared) if offline else None   # recorded after --rerun too
        earlier.append(nb.stem)
        why = ["--rerun"] if rerun else changed(executed, inputs)
        if not why:
            timed(nb.stem, lambda: _UNCHANGED)
            log_findings(nb.stem)
            continue
        _record(executed).unlink(missing_ok=True)         # a failed or killed execution leaves no record
        print(f"[book] executing {nb.name} with {params or 'its defaults'} ({'; '.join(why)})", flush=True)
        timed(nb.stem, lambda nb=nb, params=params, executed=executed: execute(nb, executed, params))
        log_findings(nb.stem)
        if inputs is not None:
            atomic_write(_record(executed), json.dumps({"inputs": inputs, "outputs": _outputs(executed)}, indent=1))
    if execute_only:
        return chapters_dir
    executed = [chapters_dir / nb.name for nb in notebooks(notebooks_dir)]
    return timed("jupyter-book build", lambda: build_html(book_dir, executed))


if __name__ == "__main__":          # make lab:  python -m helpers.book lab
    if sys.argv[1:] != ["lab"]:
        sys.exit("usage: python -m helpers.book lab")
    try:
        lab()
    except HarmsError as exc:
        sys.exit(f"harms: error: {exc}")
