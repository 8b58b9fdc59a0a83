"""The whole book, every chapter, in the reduced "ci" profile: zoo (its own tiny one),
papermill execution of every notebook, Jupyter Book build. A chapter that fails, that shows an
error cell, library noise on stderr (outside a cell tagged ``stderr-expected``) or a table without
its metric call, fails this test; each chapter must write its tidy result tables."""

from __future__ import annotations

import re

import nbformat
import pandas as pd
import pytest

from chapter_contract import check_executed
from helpers import book, paths

pytestmark = pytest.mark.book


def test_every_chapter_executes_and_the_book_builds(ci_book):
    src, html, results = ci_book.src, ci_book.html, ci_book.results     # built once (conftest.ci_book)
    chapters = book.notebooks(book.NOTEBOOKS_DIR)
    assert len(chapters) >= 4
    assert (html / "teaching.html").is_file()                            # "Teaching with this book"
    for nb_path in chapters:
        nb = nbformat.read(src / book.EXECUTED / nb_path.name, as_version=4)
        errors = [o for c in nb.cells for o in c.get("outputs", []) if o["output_type"] == "error"]
        assert not errors, f"{nb_path.name}: {errors[0]['ename']}: {errors[0]['evalue']}"
        check_executed(nb)              # no stderr noise; every table beside its key metric call
        page = (html / book.EXECUTED / f"{nb_path.stem}.html").read_text(encoding="utf-8")
        cells = [c.strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", page, flags=re.S)]
        # a missing value shows "—" (report.table_view); "None" stays legal: it is the Python literal
        # of a parameter whose value is None in the parameters table
        shown_nan = [c for c in cells if c in ("nan", "NaN", "<NA>", "NaT")]
        assert not shown_nan, f"{nb_path.name}: {len(shown_nan)} table cells print {shown_nan[0]!r}, not '—'"
        tables = list((results / nb_path.stem).glob("*.csv"))
        assert tables, f"{nb_path.name} wrote no result table"
        assert any(len(pd.read_csv(t)) for t in tables), f"{nb_path.name}: every result table is empty"
        for t in tables:
            df = pd.read_csv(t)
            assert len(df.columns) >= 2, f"{t}: not a tidy table (a column per variable)"
    # the ci profile trained its own zoo, apart from the default build's
    assert any((paths.cache_dir() / "zoo-ci").glob("*/manifest.json"))
