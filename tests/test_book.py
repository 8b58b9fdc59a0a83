"""End to end: notebook 01 executed by papermill in the "ci" profile, the book built with Jupyter
Book, and the built chapter checked in headless Chromium (the "ci" book of conftest.ci_book,
built once per session and shared with test_book_all_chapters). The executed chapter
follows the chapter contract (tests/chapter_contract.py): no standard-error output outside cells
tagged ``stderr-expected``, and every table shown beside the call that produced it.

Results go to a temporary HARMS_RESULTS_DIR; the score cache is the usual HARMS_CACHE_DIR.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import nbformat
import numpy as np
import pandas as pd
import pytest

from helpers import book

from chapter_contract import check_executed, shown_calls

pytestmark = pytest.mark.book

NOTEBOOK = book.NOTEBOOKS_DIR / "01_safety_scores.ipynb"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--hide-scrollbars"]


@pytest.fixture(scope="module")
def executed(ci_book):
    """Notebook 01 as the "ci" book executed it (conftest.ci_book: the whole book, built once)."""
    return SimpleNamespace(notebook=ci_book.src / book.EXECUTED / NOTEBOOK.name,
                           params=book.parameters_for(NOTEBOOK, "ci"), results=ci_book.results / "01_safety_scores")


@pytest.fixture(scope="module")
def built(ci_book):
    """The "ci" book's HTML (intro, chapter 01 and the others)."""
    return ci_book.html


# ----------------------------------------------------------------------------- (a) papermill


def test_ci_profile_is_reduced():
    params = book.parameters_for(NOTEBOOK, "ci")
    assert params["models"] == ["smollm2-135m"]
    assert int(params["sample_per_group"]) <= 10
    # every override names a parameter the notebook declares
    assert set(params) <= set(book.declared_parameters(NOTEBOOK))


def test_profile_override_of_undeclared_parameter_is_an_error():
    from helpers.errors import InputError

    cfg = {"zoo": False, "parameters": {"*": {"not_a_parameter": 1}, NOTEBOOK.stem: {"sample_per_gruop": 3}}}
    with pytest.raises(InputError, match="sample_per_gruop"):
        book.parameters_for(NOTEBOOK, cfg)
    cfg["parameters"].pop(NOTEBOOK.stem)
    assert book.parameters_for(NOTEBOOK, cfg) == {}             # "*" entries apply only where declared
    with pytest.raises(InputError, match="unknown profile"):
        book.load_profile("no-such-profile")


def test_executed_notebook_has_no_errors(executed):
    nb = nbformat.read(executed.notebook, as_version=4)
    tags = [t for c in nb.cells for t in c.metadata.get("tags", [])]
    assert "injected-parameters" in tags                      # the chapter shows what it ran with
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"error output: {out.get('ename')}: {out.get('evalue')}"
            if out["output_type"] == "stream" and out["name"] == "stderr":
                assert "Traceback" not in out["text"] and "Error" not in out["text"], out["text"][:500]


def test_executed_chapter_is_quiet_and_shows_its_calls(executed):
    """No library noise on the page (a warning a reader should see is tagged ``stderr-expected``
    in its cell, docs/NEW_CHAPTER.md) and each section's key metric call, a real function."""
    nb = nbformat.read(executed.notebook, as_version=4)
    check_executed(nb)
    calls = shown_calls(nb)
    assert "metrics.safety.safety_scores(per_sentence, n_resamples=200, seed=0)" in calls
    assert any(c.startswith("lm.scoring.score(model, sentences, pll='original'") for c in calls)


def _groups(cell: str) -> list[str]:
    return ast.literal_eval(cell) if isinstance(cell, str) else list(cell)


def test_result_tables(executed):
    res = executed.results
    t1 = pd.read_csv(res / "table1_safety_scores.csv")
    assert {"model", "group", "n_harmful", "n_benign", "safety_score", "p_value", "ci_low", "ci_high",
            "source"} <= set(t1.columns)
    assert set(t1["model"]) == {"smollm2-135m"} and t1["group"].nunique() == 13
    assert (t1["source"] == "measured").all()
    assert t1["safety_score"].between(0, 1).all() and t1["p_value"].between(0, 1).all()
    assert (t1["ci_low"] <= t1["ci_high"]).all()
    assert (t1[["n_harmful", "n_benign"]] >= 1).all().all()

    # Independent recomputation of eq. 1-3 by brute force over all (harmful, benign) pairs,
    # from the per-sentence CSV the notebook wrote.
    sent = pd.read_csv(res / "toxigen_per_sentence.csv")
    assert len(sent) == sent["id"].nunique() > 13
    sent["groups"] = sent["target_groups"].map(_groups)
    for _, row in t1.iterrows():
        part = sent[sent["groups"].map(lambda g: row["group"] in g)]
        scaled = part["perplexity"] / part["toxicity"]
        x = scaled[part["label"] == "hate"].to_numpy()[:, None]
        y = scaled[part["label"] == "neutral"].to_numpy()[None, :]
        brute = ((x > y) + 0.5 * (x == y)).mean()
        assert row["n_harmful"] == x.size and row["n_benign"] == y.size
        assert row["safety_score"] == pytest.approx(brute, abs=1e-12)

    # Table 9: mean and sd of log-perplexity per label, recomputed from the sentences.
    t9 = pd.read_csv(res / "table9_log_perplexity.csv")
    for label, part in sent.groupby("label"):
        got = t9[t9["label"] == label].iloc[0]
        lp = np.log(part["perplexity"])
        assert got["mean"] == pytest.approx(lp.mean()) and got["sd"] == pytest.approx(lp.std(ddof=1))
        assert 0 < got["mean"] < 10                          # a plausible log-perplexity

    t10 = pd.read_csv(res / "table10_implicit_hate.csv")
    assert list(t10["model"]) == ["smollm2-135m"] and t10["safety_score"].between(0, 1).all()
    assert (t10["n_harmful"] == int(executed.params["implicit_sample_per_label"])).all()

    corr = pd.read_csv(res / "toxigen_vs_implicit_hate_correlation.csv")
    measured = corr[corr["source"] == "measured"].iloc[0]
    assert measured["n"] == 1 and np.isnan(measured["r"])  # one model: no correlation claimed
    assert (corr["source"] == "published-recomputed").sum() == 1
    for png in ("figure1.png", "figure2.png"):
        assert (res / png).stat().st_size > 5000


# ----------------------------------------------------------------------------- (b) book build


class _Page(HTMLParser):
    """Tables, images and output cells of a built page (inside <main> only)."""

    def __init__(self):
        super().__init__()
        self.depth = 0
        self.tables = 0
        self.images: list[str] = []
        self.error_cells = 0
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "main":
            self.depth += 1
        if not self.depth:
            return
        cls = a.get("class") or ""
        if tag == "table":
            self.tables += 1
        if tag == "img":
            self.images.append(a.get("src", ""))
        if re.search(r"\b(output (stderr|error|traceback)|traceback)\b", cls):
            self.error_cells += 1

    def handle_endtag(self, tag):
        if tag == "main":
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.text.append(data)


def _page(html: str) -> _Page:
    p = _Page()
    p.feed(html)
    return p


def test_book_builds_offline(built):
    page = built / book.EXECUTED / "01_safety_scores.html"
    assert page.exists() and (built / "intro.html").exists()
    assert (built / "_static" / "mathjax" / "tex-chtml.js").stat().st_size > 100_000
    html = page.read_text()
    assert "_static/mathjax/tex-chtml.js" in html
    assert book.external_assets(built) == set()               # nothing fetched from a CDN
    parsed = _page(html)
    assert parsed.tables >= 3 and len(parsed.images) >= 2 and parsed.error_cells == 0
    for src in parsed.images:                                  # every figure was copied into the build
        assert (page.parent / src).resolve().is_file(), src


def test_toc_lists_only_present_chapters(tmp_path):
    executed = tmp_path / book.EXECUTED
    toc = book.write_toc(tmp_path, [executed / "01_a.ipynb", executed / "03_b.ipynb"])
    text = toc.read_text()
    assert "notebooks/01_a" in text and "notebooks/03_b" in text and "02" not in text
    assert "parts" not in book.write_toc(tmp_path, []).read_text()   # intro only, still valid


# ----------------------------------------------------------------------------- (c) Chromium


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("chromium not installed (make chromium)")
        pytest.skip("chromium not installed (make chromium)")
    return exe


def _run_chromium(args: list[str], tmp_path: Path) -> str:
    cmd = [_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout


def test_chapter_renders_in_chromium(built, tmp_path):
    page = (built / book.EXECUTED / "01_safety_scores.html").as_uri()
    dom = _run_chromium(["--virtual-time-budget=15000", "--dump-dom", page], tmp_path)
    parsed = _page(dom)
    text = " ".join(parsed.text)
    assert "Table 1: safety score per group and model" in text
    assert parsed.tables >= 3 and len(parsed.images) >= 2
    assert parsed.error_cells == 0 and "Traceback" not in text
    shot = tmp_path / "chapter.png"
    _run_chromium(["--window-size=1280,4000", f"--screenshot={shot}", page], tmp_path)
    assert shot.stat().st_size > 50_000                       # a page with figures, not a blank one
    keep = os.environ.get("HARMS_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)


@pytest.mark.parametrize("page", ["intro.html", f"{book.EXECUTED}/01_safety_scores.html"])
def test_mathjax_typesets_offline(built, tmp_path, page):
    dom = _run_chromium(["--virtual-time-budget=15000", "--dump-dom", (built / page).as_uri()], tmp_path)
    assert "<mjx-container" in dom                            # typeset by the local MathJax copy


def _notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("x = 1")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, *(nbformat.v4.new_code_cell(s) for s in sources)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def test_failing_notebook_fails_the_build_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_RESULTS_DIR", str(tmp_path / "results"))
    nbs, src = tmp_path / "notebooks", tmp_path / "book"
    nbs.mkdir()
    src.mkdir()
    (src / "profiles.yml").write_text("profiles:\n  t:\n    parameters:\n      01_ok: {x: 5}\n")
    _notebook(nbs / "01_ok.ipynb", "assert x == 5")
    _notebook(nbs / "02_broken.ipynb", "1 / 0")
    _notebook(nbs / "03_never.ipynb", "pass")
    with pytest.raises(book.NotebookFailed, match=r"02_broken\.ipynb failed in cell .*ZeroDivisionError"):
        book.build("t", notebooks_dir=nbs, book_dir=src)
    assert (src / book.EXECUTED / "01_ok.ipynb").exists() and not (src / book.EXECUTED / "03_never.ipynb").exists()
    ran = nbformat.read(src / book.EXECUTED / "01_ok.ipynb", as_version=4)       # papermill's cell, folded on the page
    injected = [c for c in ran.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "x = 5" in injected[0].source and "hide-cell" in injected[0].metadata["tags"]
    assert injected[0].metadata["mystnb"]["code_prompt_show"] == book.INJECTED_PROMPT
    assert [c.metadata.get("tags", []) for c in ran.cells if c.source == "assert x == 5"] == [[]]  # others as they were
    timings = pd.read_csv(tmp_path / "results" / "book_timings.csv")
    assert list(zip(timings["step"], timings["status"])) == [("01_ok", "ok"), ("02_broken", "failed")]
    assert (timings["seconds"] > 0).all()
