"""The book reads as a report (issue 46), checked on the "ci" book's executed notebooks
(conftest.ci_book, built once per session): every chapter opens with its Findings box, whose
links reach tables on its page; no generated paragraph is longer, and no sentence shape more
frequent, than :data:`helpers.report.READING` allows; no exception or warning text is printed;
chapter 08's first output of its first section is the summary table."""

from __future__ import annotations

import re

import nbformat
import pandas as pd
import pytest

from helpers import book, report

from chapter_contract import CODE_BLOCK

pytestmark = pytest.mark.book


#: Every chapter of the book, each checked on its own.
CHAPTERS = [nb.stem for nb in book.notebooks(book.NOTEBOOKS_DIR)]
#: Chapters whose pages do not read as a report yet, and why (each an expected failure until it does).
NOT_YET: dict[str, str] = {}


def _chapters(strict: bool = True):
    """The chapters, those of :data:`NOT_YET` marked as expected failures (``strict``: one that
    passes fails the test, so the mark cannot outlive the fix)."""
    return [pytest.param(stem, marks=pytest.mark.xfail(reason=NOT_YET[stem], strict=strict)) if stem in NOT_YET
            else stem for stem in CHAPTERS]


def _notebook(ci_book, stem: str):
    return nbformat.read(ci_book.src / book.EXECUTED / f"{stem}.ipynb", as_version=4)


def _executed(ci_book):
    return [(stem, _notebook(ci_book, stem)) for stem in CHAPTERS]


def _outputs(cell):
    return [out for out in cell.get("outputs", [])]


def generated_markdown(nb) -> str:
    """Every Markdown output of the chapter's code cells (the prose it generates), the shown call
    lines left out."""
    texts = [out.get("data", {}).get("text/markdown", "") for c in nb.cells if c.cell_type == "code"
             for out in _outputs(c)]
    return "\n\n".join(CODE_BLOCK.sub("", t) for t in texts if t)


@pytest.mark.parametrize("stem", _chapters())
def test_the_chapter_opens_with_its_findings(ci_book, stem):
    low, high = report.READING["findings"]
    nb = _notebook(ci_book, stem)
    first_section = next(i for i, c in enumerate(nb.cells)
                         if c.cell_type == "markdown" and c.source.lstrip().startswith("## "))
    boxes = [(i, out["data"]["text/html"]) for i, c in enumerate(nb.cells) if c.cell_type == "code"
             for out in _outputs(c) if 'class="admonition tip findings"' in out.get("data", {}).get("text/html", "")]
    assert len(boxes) == 1, f"{stem}: {len(boxes)} Findings boxes"
    at, box = boxes[0]
    assert at < first_section, f"{stem}: the Findings box comes after the chapter's first section"
    bullets = re.findall(r"<li>", box)
    assert low <= len(bullets) <= high, f"{stem}: {len(bullets)} findings"
    page = (ci_book.html / book.EXECUTED / f"{stem}.html").read_text(encoding="utf-8")
    # the page opens with its Findings: what comes before them (the parameters cell, papermill's cell, the
    # table of values the page ran with) is folded behind a toggle, not shown
    opening = page[page.index("<h1"):page.index('class="admonition tip findings"')]
    shown = re.sub(r"<details.*?</details>", "", opening, flags=re.S)
    assert "<table" not in shown and 'class="highlight' not in shown, f"{stem}: code or a table before the Findings"
    assert "Show the values this page ran with" in opening
    for anchor in re.findall(r'href="#([^"]+)"', box):
        assert f'id="{anchor}"' in page, f"{stem}: a finding links to #{anchor}, which is not on its page"
    findings = ci_book.results / stem / f"{report.FINDINGS_TABLE}.csv"
    assert findings.is_file(), f"{stem}: no {findings.name}"
    problems = report.reading_problems("\n\n".join(pd.read_csv(findings)["finding"]))
    assert not problems, "\n".join(f"{stem}, Findings: {p}" for p in problems)


@pytest.mark.parametrize("stem", _chapters(strict=False))       # the ci profile's small sample may read well
def test_the_chapters_generated_prose_reads_as_a_report(ci_book, stem):
    problems = report.reading_problems(generated_markdown(_notebook(ci_book, stem)))
    assert not problems, "\n".join(f"{stem}: {p}" for p in problems)


@pytest.mark.parametrize("stem", _chapters(strict=False))
def test_no_exception_or_warning_text_on_the_page(ci_book, stem):
    for cell in _notebook(ci_book, stem).cells:
        if cell.cell_type != "code":
            continue
        for out in _outputs(cell):
            assert not (out["output_type"] == "stream" and out["name"] == "stderr"), \
                f"{stem}: standard error on the page: {out['text'][:200]}"
            text = out.get("text", "") + "".join(str(v) for v in out.get("data", {}).values())
            noise = [w for w in report.NOISE if w in text]
            assert not noise, f"{stem}: {noise[0]!r} printed by {cell.source[:80]!r}"


def test_chapter_08_opens_its_first_section_with_the_summary_table(ci_book):
    nb = dict(_executed(ci_book))["08_report_cards"]
    first_section = next(i for i, c in enumerate(nb.cells)
                         if c.cell_type == "markdown" and c.source.lstrip().startswith("## "))
    cell = next(c for c in nb.cells[first_section:] if c.cell_type == "code")
    first = next(out for out in _outputs(cell) if out["output_type"] in ("display_data", "execute_result"))
    assert "<table" in first.get("data", {}).get("text/html", ""), "§8.1 does not open with a table"
