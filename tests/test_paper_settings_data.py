"""helpers/published/paper_settings.csv (each paper's own setting of each chapter parameter it fixes)
checked as data: every row names a chapter notebook and a parameter its parameters cell declares, its
value is a JSON literal, and its quote is the paper's own words, found in the seed's text."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from helpers import book, paths

SETTINGS = Path(paths.REPO_ROOT) / "helpers" / "published" / "paper_settings.csv"
NOTEBOOKS = Path(paths.REPO_ROOT) / "notebooks"
COLUMNS = ["chapter", "parameter", "value", "seed", "where", "text", "estimate"]
#: The paper behind each chapter (book/intro.md, "The four papers").
SEED_OF = {"01": "000", "02": "000", "03": "000", "04": "000", "05": "003", "06": "001", "07": "002",
           "08": "000"}   # chapter 08's cards: seed 000's models, its distillation question and its full data


def _rows() -> list[dict]:
    with SETTINGS.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == COLUMNS, f"{SETTINGS.name}: columns {reader.fieldnames}, expected {COLUMNS}"
        return list(reader)


def _seeds_dir() -> Path | None:
    """The papers' texts: a seeds/ folder beside the data directory (HARMS_DATA_DIR), where a machine has one."""
    candidates = [d.parent / "seeds" for d in paths.data_dirs()]
    return next((d for d in candidates if d.is_dir()), None)


def _normal(text: str) -> str:
    return " ".join(text.split())


def test_every_row_names_a_declared_parameter_of_a_chapter_notebook():
    rows, declared, problems = _rows(), {}, []
    for r in rows:
        nb = NOTEBOOKS / f"{r['chapter']}.ipynb"
        if not nb.is_file():
            problems.append(f"{r['chapter']}: no notebook {nb.name}")
            continue
        if r["chapter"] not in declared:
            declared[r["chapter"]] = book.declared_parameters(nb)
        if r["parameter"] not in declared[r["chapter"]]:
            problems.append(f"{r['chapter']}.{r['parameter']}: not declared in the notebook's parameters cell")
    assert not problems, "\n".join(problems)


def test_values_are_json_and_fields_are_filled():
    problems = []
    for r in _rows():
        key = f"{r['chapter']}.{r['parameter']}"
        try:
            json.loads(r["value"])
        except ValueError:
            problems.append(f"{key}: value {r['value']!r} is not a JSON literal")
        if r["seed"] not in SEED_OF.values():
            problems.append(f"{key}: seed {r['seed']!r} is not 000-003")
        elif r["seed"] != SEED_OF.get(r["chapter"][:2]):
            problems.append(f"{key}: seed {r['seed']} is not the paper of chapter {r['chapter'][:2]}")
        for field in ("where", "text"):
            if not r[field].strip():
                problems.append(f"{key}: empty {field}")
        if len(r["text"]) > 200:
            problems.append(f"{key}: the quote has {len(r['text'])} characters (at most 200)")
    assert not problems, "\n".join(problems)


def test_one_row_per_chapter_parameter_and_every_chapter_covered():
    rows = _rows()
    keys = [(r["chapter"], r["parameter"]) for r in rows]
    assert len(keys) == len(set(keys)), f"duplicate rows: {sorted({k for k in keys if keys.count(k) > 1})}"
    chapters, covered = {p.stem for p in NOTEBOOKS.glob("0[1-7]_*.ipynb")}, {r["chapter"] for r in rows}
    assert len(chapters) == 7 and chapters <= covered, f"chapters without a row: {sorted(chapters - covered)}"


def test_each_quote_is_the_papers_own_words():
    seeds = _seeds_dir()
    if seeds is None:
        pytest.skip("the papers' texts are not beside the data directory: quotes not checked")
    texts = {}
    for seed in SEED_OF.values():
        found = sorted(seeds.glob(f"{seed}_*.txt"))
        assert len(found) == 1, f"{seeds}: expected one text of seed {seed}, found {[f.name for f in found]}"
        texts[seed] = _normal(found[0].read_text(encoding="utf-8"))
    missing = [f"{r['chapter']}.{r['parameter']} (seed {r['seed']}): {r['text']!r}" for r in _rows()
               if _normal(r["text"]) not in texts.get(r["seed"], "")]
    assert not missing, "quotes not found verbatim in the seed's text:\n" + "\n".join(missing)
