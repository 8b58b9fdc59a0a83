"""`harms fill`: top-k fill-ins and candidate scores as tidy tables, bad input as one line."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from helpers.cli import main
from helpers.lm import cloze, fill

TEMPLATES = ["women are just as [MASK] as men .", "the [MASK] of some people is not a reason to hate them ."]


def _one_error_line(err: str) -> bool:
    """One ``harms: error:`` line and no traceback (transformers' own loading bar may precede it)."""
    return sum(line.startswith("harms:") for line in err.splitlines()) == 1 and "Traceback" not in err


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))


def _files(tmp_path, column="template"):
    inp = tmp_path / "templates.csv"
    pd.DataFrame({"id": [7, 8], column: TEMPLATES}).to_csv(inp, index=False)
    words = tmp_path / "words.txt"
    words.write_text("capable\n\nunhappiness\n  kindness  \n")
    return inp, words


def test_top_k_and_candidates_write_the_library_tables(tmp_path, tiny_bert, loaded_factory):
    inp, words = _files(tmp_path)
    lm = loaded_factory(tiny_bert, "masked")
    out = tmp_path / "fills.csv"
    assert main(["fill", "--model", str(tiny_bert), "--input", str(inp), "--top-k", "3", "--output", str(out)]) == 0
    got = pd.read_csv(out)
    ref = fill.top_k(lm, TEMPLATES, k=3)
    assert list(got.columns) == fill.COLUMNS and list(got["word"]) == list(ref["word"])
    np.testing.assert_allclose(got["probability"], ref["probability"], atol=1e-6)
    out2 = tmp_path / "scores.csv"
    assert main(["fill", "--model", str(tiny_bert), "--input", str(inp), "--candidates", str(words),
                 "--output", str(out2)]) == 0
    got = pd.read_csv(out2)
    ref = cloze.cloze_logprobs(lm, TEMPLATES, ["capable", "unhappiness", "kindness"], cache=False, progress=False)
    assert list(got["candidate"]) == list(ref["candidate"])
    np.testing.assert_allclose(got["log_prob"], ref["log_prob"], atol=1e-5)


def test_max_pieces_and_lowercase_reach_the_library(tmp_path, tiny_gpt2, loaded_factory):
    inp = tmp_path / "t.csv"
    cased = ["Women are just as [MASK] as Men ."]
    pd.DataFrame({"template": cased}).to_csv(inp, index=False)
    out = tmp_path / "fills.csv"
    assert main(["fill", "--model", str(tiny_gpt2), "--input", str(inp), "--top-k", "4", "--max-pieces", "1",
                 "--lowercase", "--output", str(out)]) == 0
    ref = fill.top_k(loaded_factory(tiny_gpt2, "causal"), ["women are just as [MASK] as men ."], k=4, max_pieces=1,
                     cache=False, progress=False)
    got = pd.read_csv(out)
    assert list(got["word"]) == list(ref["word"]) and set(got["template"]) == set(cased)


def test_a_text_column_works_too(tmp_path, tiny_gpt2):
    inp, _ = _files(tmp_path, column="text")
    out = tmp_path / "fills.csv"
    assert main(["fill", "--model", str(tiny_gpt2), "--input", str(inp), "--top-k", "2", "--output", str(out)]) == 0
    assert len(pd.read_csv(out)) == 4


@pytest.mark.parametrize("rows,words,extra,fragment", [
    (["no blank at all"], "women\n", [], "row 0: template 'no blank at all': needs exactly one blank"),
    (["[MASK] and [MASK]"], "women\n", [], "found 2"),
    (TEMPLATES, "\n  \n", [], "is empty"),
    (TEMPLATES, "\u2603\u2603\n", [], "no token ids"),
])
def test_bad_input_is_one_line(tmp_path, tiny_bert, capsys, rows, words, extra, fragment):
    inp = tmp_path / "t.csv"
    pd.DataFrame({"template": rows}).to_csv(inp, index=False)
    (tmp_path / "w.txt").write_text(words)
    code = main(["fill", "--model", str(tiny_bert), "--input", str(inp), "--candidates", str(tmp_path / "w.txt"),
                 "--output", str(tmp_path / "o.csv"), *extra])
    err = capsys.readouterr().err
    assert code == 2 and fragment in err and _one_error_line(err), err


def test_fill_ins_from_a_model_without_them_and_missing_files_are_one_line(tmp_path, tiny_xlnet, capsys):
    inp, _ = _files(tmp_path)
    code = main(["fill", "--model", str(tiny_xlnet), "--input", str(inp), "--top-k", "3",
                 "--output", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "need a masked or causal LM" in err and _one_error_line(err)
    code = main(["fill", "--model", str(tiny_xlnet), "--input", str(inp), "--candidates", str(tmp_path / "nope.txt"),
                 "--output", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "candidates file" in err and "not found" in err
    code = main(["fill", "--model", str(tiny_xlnet), "--input", str(inp), "--output", str(tmp_path / "o.csv")])
    assert code == 2 and "one of the arguments --top-k --candidates is required" in capsys.readouterr().err


def test_skip_takes_a_language_or_a_file(tmp_path, tiny_bert, loaded_factory):
    inp, _ = _files(tmp_path)
    lm = loaded_factory(tiny_bert, "masked")
    out = tmp_path / "en.csv"
    assert main(["fill", "--model", str(tiny_bert), "--input", str(inp), "--top-k", "4", "--skip", "en",
                 "--output", str(out)]) == 0
    assert list(pd.read_csv(out)["word"]) == list(fill.top_k(lm, TEMPLATES, k=4, skip="en")["word"])
    words = tmp_path / "skip.txt"
    words.write_text("women\nthe\n")
    out2 = tmp_path / "file.csv"
    assert main(["fill", "--model", str(tiny_bert), "--input", str(inp), "--top-k", "4", "--skip", str(words),
                 "--output", str(out2)]) == 0
    assert list(pd.read_csv(out2)["word"]) == list(fill.top_k(lm, TEMPLATES, k=4, skip=["women", "the"])["word"])
